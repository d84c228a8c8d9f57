/* test_prove.c - cmocka tests of prove: every axiom instance is proved,
 * no false identity is, planted false candidates are refuted, time-outs
 * end as "timeout" and the run goes on, results do not depend on --jobs,
 * each pruning step drops what it should, --check catches a planted
 * unsound rule, bad inputs are refused. Table rows carry ids (A, W, F, T,
 * P, C ...) that name the test in the TAP output.
 *
 * `test_prove --fixtures DIR` writes the files test/cli_prove.sh uses:
 * cands.tasodb (the T classes), unsound.tasodb (their rules plus one
 * planted false rule, whose id it prints), mixed.tasodb (unsound's rules
 * plus the hard true one, out of budget under --max-instances 2000, and a
 * false one) and other.tasodb (candidates carrying another opspecs
 * digest). OPSPECS_DIR overrides "opspecs". */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decide.h"
#include "emit.h"
#include "kernel1.h"
#include "prove.h"
#include "reduce.h"
#include "trig.h"
#include "z3enc.h"

static ax_set axioms, wrong;
static tg_plan plan;
static char scratch[256];

/* The defaults: deterministic budgets only, no clock (a test never
 * depends on how fast the machine is). */
static const ze_limits test_limits = {0, PV_DEFAULT_MAX_INSTANCES, PV_DEFAULT_RLIMIT};

/* ================= tables ================= */

/* A candidate class: members as text, input shapes "[2,3] [3,4]". */
typedef struct {
    const char *id;
    const char *members[4];
    const char *shapes;
} class_case;

/* True identities (DESIGN.md's properties): every pair must be proved. */
static const class_case true_cases[] = {
    {"T01 matmul associative",
     {"(matmul x0 (matmul x1 x2))", "(matmul (matmul x0 x1) x2)"}, "[2,3] [3,4] [4,2]"},
    {"T02 relu fused into conv",
     {"(relu (conv2d 1 SAME NONE 1 x0 x1))", "(conv2d 1 SAME RELU 1 x0 x1)"},
     "[1,2,4,4] [3,2,3,3]"},
    {"T03 split of concat, symbolic size",
     {"(split0 1 (dim 1 x0) (concat 1 x0 x1))", "x0"}, "[2,2] [2,3]"},
    {"T04 relu of a relu conv (needs conv RELU -> relu(conv NONE))",
     {"(relu (conv2d 2 VALID RELU 1 x0 x1))", "(conv2d 2 VALID RELU 1 x0 x1)"},
     "[1,2,5,5] [3,2,3,3]"},
    {"T05 transposes (needs T(mm) -> mm(T, T))",
     {"(matmul (transpose x0) x1)", "(transpose (matmul (transpose x1) x0))"}, "[3,2] [3,4]"},
    {"T06 identity conv kernel", {"(conv2d 1 SAME NONE 1 x0 (iconv 3x3 x0))", "x0"},
     "[1,2,4,4]"},
    {"T07 three members",
     {"(ewadd x0 (ewadd x1 x2))", "(ewadd (ewadd x0 x1) x2)", "(ewadd (ewadd x1 x0) x2)"},
     "[2,2] [2,2] [2,2]"},
    {"T08 two outputs",
     {"(split0 1 (dim 1 x0) (concat 1 x0 x1)), (split1 1 (dim 1 x0) (concat 1 x0 x1))", "x0, x1"},
     "[2,2] [2,3]"},
    {"T09 sum of matmuls is one matmul",
     {"(ewadd (matmul x0 x1) (matmul x2 x3))", "(matmul (concat 1 x0 x2) (concat 0 x1 x3))"},
     "[2,3] [3,2] [2,1] [1,2]"},
    {"T10 average pool as a conv",
     {"(avgpool 3x3 1 SAME x0)", "(conv2d 1 SAME NONE 1 x0 (poolk 3x3 x0))"}, "[1,2,4,4]"},
    {"T11 enlarged kernel",
     {"(conv2d 1 SAME NONE 1 x0 x1)", "(conv2d 1 SAME NONE 1 x0 (enlarge 3x3 x1))"},
     "[1,2,4,4] [3,2,1,1]"},
    {"T12 identity matrix of another input",
     {"(matmul x0 (imm x1))", "x0"}, "[2,3] [4,3]"},
    {"T13 split of a transposed concat (dims of a term Z3 made)",
     {"(split1 0 (dim 1 x0) (transpose (concat 1 x0 x1)))", "(transpose x1)"},
     "[2,3] [2,2]"},
    {"T14 4 groups, outside synth's domain {1,2}: groups are any count",
     {"(concat 0 (conv2d 1 SAME NONE 4 x0 x2) (conv2d 1 SAME NONE 4 x1 x2))",
      "(conv2d 1 SAME NONE 4 (concat 0 x0 x1) x2)"},
     "[1,8,3,3] [2,8,3,3] [4,2,3,3]"},
    {"T15 depthwise (groups = channels = 8)",
     {"(smul (conv2d 1 SAME NONE 8 x0 x1) x2)", "(conv2d 1 SAME NONE 8 x0 (smul x1 x2))"},
     "[1,8,3,3] [8,1,3,3] []"},
};
#define N_TRUE (sizeof true_cases / sizeof true_cases[0])

/* False candidates: never proved, never a rule. stage: the stage that must
 * refute it (0: refuted or unknown, any stage). */
typedef struct {
    class_case c;
    int stage;
} false_case;

static const false_case false_cases[] = {
    {{"F01 relu is not additive",
      {"(relu (ewadd x0 x1))", "(ewadd (relu x0) (relu x1))"}, "[2,3] [2,3]"}, 1},
    {{"F02 matmul does not commute", {"(matmul x0 x1)", "(matmul x1 x0)"}, "[2,2] [2,2]"}, 1},
    {{"F03 transpose of a product keeps no order",
      {"(transpose (matmul x0 x1))", "(matmul (transpose x0) (transpose x1))"}, "[2,2] [2,2]"},
     1},
    {{"F04 planted: a fingerprint that claims relu(x) = x", {"(relu x0)", "x0"}, "[2,3]"}, 1},
    {{"F05 equal only at the class shapes (literal split point)",
      {"(split0 1 2 (concat 1 x0 x1))", "x0"}, "[2,2] [2,3]"}, 2},
    {{"F06 grouped conv of concats splits in halves",
      {"(conv2d 1 SAME NONE 2 (concat 1 x0 x2) (concat 0 x1 x3))",
       "(concat 1 (conv2d 1 SAME NONE 1 x0 x1) (conv2d 1 SAME NONE 1 x2 x3))"},
      "[1,2,3,3] [1,2,1,1] [1,2,3,3] [3,2,1,1]"}, 1},
    {{"F07 scalar multiply is not commutative in the axioms (true, unprovable)",
      {"(smul (smul x0 x1) x2)", "(smul (smul x0 x2) x1)"}, "[2,2] [] []"}, 0},
};
#define N_FALSE (sizeof false_cases / sizeof false_cases[0])

/* Pruning: rules src => dst; the step that must drop each (0: kept). */
typedef struct {
    const char *id, *src, *dst;
    int dropped_at;
} prune_case;

static const prune_case prune_cases[] = {
    {"P01 commutativity", "(ewadd x0 x1)", "(ewadd x1 x0)", 0},
    {"P02 exact duplicate of P01", "(ewadd x0 x1)", "(ewadd x1 x0)", 1},
    {"P03 src == dst", "(relu x0)", "(relu x0)", 1},
    {"P04 associativity", "(matmul x0 (matmul x1 x2))", "(matmul (matmul x0 x1) x2)", 0},
    {"P05 renaming of P04", "(matmul x2 (matmul x0 x1))", "(matmul (matmul x2 x0) x1)", 2},
    {"P06 P01 with x0 := relu(x0)", "(ewadd (relu x0) x1)", "(ewadd x1 (relu x0))", 3},
    {"P07 P01 under relu", "(relu (ewadd x0 x1))", "(relu (ewadd x1 x0))", 4},
    {"P08 relu(relu x) -> relu x: relu(y) -> y is no rule", "(relu (relu x0))", "(relu x0)", 0},
    {"P09 shared input is not a context", "(ewadd (relu x0) x0)", "(ewadd x0 (relu x0))", 0},
    {"P10 P04 under transpose", "(transpose (matmul x0 (matmul x1 x2)))",
     "(transpose (matmul (matmul x0 x1) x2))", 4},
    {"P11 two operands differ: kept", "(ewadd (relu x0) (transpose x1))",
     "(ewadd (transpose x1) (relu x0))", 3},
};
#define N_PRUNE (sizeof prune_cases / sizeof prune_cases[0])

/* ================= helpers ================= */

static const char *spec_path(const char *file, char *buf, size_t n) {
    const char *dir = getenv("OPSPECS_DIR");
    snprintf(buf, n, "%s/%s", dir && *dir ? dir : "opspecs", file);
    return buf;
}

static void parse_graph(const char *text, rg_graph *g) {
    char err[RG_ERRLEN];
    if (rg_parse(text, g, err, sizeof err) != RG_OK) fail_msg("%s: %s", text, err);
}

/* "[2,3] [] [1,2,4,4]" -> shapes. @return the count. */
static int parse_shapes(const char *s, ten_shape *out) {
    int n = 0;
    while ((s = strchr(s, '['))) {
        ten_shape *t = &out[n++];
        memset(t, 0, sizeof *t);
        s++;
        while (*s != ']') {
            t->dim[t->rank++] = (int32_t)strtol(s, (char **)&s, 10);
            if (*s == ',') s++;
        }
    }
    return n;
}

static int add_class(rdb_file *f, const class_case *cc, uint64_t fp_seed) {
    rdb_class *c;
    uint8_t fp[8];
    memcpy(fp, &fp_seed, 8);
    fp[7] = 0; /* stays below 2^61-1 */
    if (rdb_add_class(f, fp, sizeof fp, 2, &c) != RDB_OK) return -1;
    c->n_shapes = parse_shapes(cc->shapes, c->shapes);
    int n_in = c->n_shapes;
    for (int m = 0; m < 4 && cc->members[m]; m++) {
        rg_graph g;
        parse_graph(cc->members[m], &g);
        g.n_inputs = n_in; /* over the class's variables */
        if (rdb_class_add_member(c, &g) != RDB_OK) return -1;
        c->count++;
    }
    return 0;
}

static rdb_file *make_cands(const class_case *const *cases, size_t n) {
    rdb_file *f = rdb_new(RDB_CANDIDATES);
    assert_non_null(f);
    snprintf(f->gen.tool, sizeof f->gen.tool, "test");
    for (size_t i = 0; i < n; i++) assert_int_equal(add_class(f, cases[i], 1000 + i), 0);
    char err[RDB_ERRLEN];
    if (rdb_validate(f, err, sizeof err) != RDB_OK) fail_msg("%s", err);
    return f;
}

static rdb_file *true_cands(void) {
    const class_case *c[N_TRUE];
    for (size_t i = 0; i < N_TRUE; i++) c[i] = &true_cases[i];
    return make_cands(c, N_TRUE);
}

static void quiet_options(pv_options *o) {
    pv_defaults(o);
    o->quiet = 1;
    o->no_timings = 1;
    o->keep_pairs = 1;
    o->jobs = 2;
    o->timeout_ms = test_limits.timeout_ms;
}

static ze_verdict prove_texts(const char *a, const char *b, const ze_limits *lim) {
    rg_graph ga, gb;
    ze_ctx *z;
    char why[ZE_WHYLEN];
    parse_graph(a, &ga);
    parse_graph(b, &gb);
    ga.n_inputs = gb.n_inputs = ga.n_inputs > gb.n_inputs ? ga.n_inputs : gb.n_inputs;
    if (ze_open(&axioms, &plan, &z, why, sizeof why) != 0) fail_msg("%s", why);
    ze_verdict v = ze_prove_graphs(z, &ga, &gb, lim, why);
    ze_close(z);
    return v;
}

/* ---- axiom instances as graph text ---- */

typedef struct {
    const ax_set *s;
    const ax_axiom *a;
    int last; /* 0: first domain values, 1: last ones */
    char *buf;
    size_t len, cap;
} printer;

static void put(printer *p, const char *t) {
    size_t n = strlen(t);
    if (p->len + n + 1 < p->cap) memcpy(p->buf + p->len, t, n + 1);
    p->len += n;
}

/* The first (last) value of the domain; a second variable of the same
 * sort takes the next one (an axiom over two axes is about distinct ones). */
static int32_t var_value(const printer *p, int v) {
    const ops_pkind_info *d = &ops_pkind_table[p->a->var[v].sort];
    int k = 0;
    for (int i = 0; i < v; i++) k += p->a->var[i].sort == p->a->var[v].sort;
    k %= d->n_values;
    return p->last ? d->values[d->n_values - 1 - k] : d->values[k];
}

static int tensor_index(const ax_axiom *a, int v) {
    int k = 0;
    for (int i = 0; i < v; i++) k += a->var[i].sort == AX_SORT_TENSOR;
    return k;
}

static void print_term(printer *p, int t) {
    const ax_term *x = &p->s->term[t];
    char b[32];
    switch (x->kind) {
    case AX_TVAR:
        if (x->sort == AX_SORT_TENSOR) snprintf(b, sizeof b, "x%d", tensor_index(p->a, x->value));
        else ops_param_str((ops_pkind)x->sort, var_value(p, x->value), b);
        put(p, b);
        return;
    case AX_TLIT: put(p, ops_param_str((ops_pkind)x->sort, x->value, b)); return;
    case AX_TNUM: put(p, ax_term_str(p->s, p->a, t, b, sizeof b)); return; /* no graph writes it */
    case AX_TDIM: put(p, "(dim "); break;
    case AX_TAPP: put(p, "("), put(p, ops_table[x->op].name), put(p, " "); break;
    }
    for (int k = 0; k < x->n_args; k++) {
        if (k) put(p, " ");
        print_term(p, x->arg[k]);
    }
    put(p, ")");
}

static void instance_text(const ax_set *s, int i, int last, int side, char *buf, size_t n) {
    printer p = {s, &s->axiom[i], last, buf, 0, n};
    buf[0] = '\0';
    print_term(&p, side ? s->axiom[i].rhs : s->axiom[i].lhs);
}

/* ================= tests: axioms and wrong identities ================= */

/* State: (axiom index << 1 | last) + 1. */
static void test_axiom_instance(void **state) {
    int code = (int)(intptr_t)*state - 1, i = code >> 1, last = code & 1;
    char l[1024], r[1024];
    instance_text(&axioms, i, last, 0, l, sizeof l);
    instance_text(&axioms, i, last, 1, r, sizeof r);
    ze_verdict v = prove_texts(l, r, &test_limits);
    if (v != ZE_PROVED) fail_msg("%s = %s: %s", l, r, ze_verdict_name(v));
}

static void test_wrong_identity(void **state) {
    int i = (int)(intptr_t)*state - 1;
    ze_ctx *z;
    char why[ZE_WHYLEN], l[1024], r[1024];
    assert_int_equal(ze_open(&axioms, &plan, &z, why, sizeof why), 0);
    ze_verdict v = ze_prove_identity(z, &wrong, i, &test_limits, why);
    ze_close(z);
    if (v == ZE_PROVED || v == ZE_ERROR)
        fail_msg("wrong identity %s: %s %s", wrong.axiom[i].name, ze_verdict_name(v), why);
    for (int last = 0; last < 2; last++) { /* literal instances too */
        instance_text(&wrong, i, last, 0, l, sizeof l);
        instance_text(&wrong, i, last, 1, r, sizeof r);
        if (prove_texts(l, r, &test_limits) == ZE_PROVED) fail_msg("proved %s = %s", l, r);
    }
}

static void test_trigger_plan(void **state) {
    (void)state;
    static const struct {
        const char *axiom;
        int side;
        tg_why why;
    } want[] = {
        {"conv-poolk", 1, TG_LOOP},              /* with avgpool-iconv: a growing cycle */
        {"avgpool-iconv", 1, TG_LOOP},
        {"conv-poolk", 0, TG_SHRINKING},
        {"transpose-matmul", 0, TG_GROWING_OK},  /* only descends into old terms */
        {"relu-conv-fuse", 1, TG_GROWING_OK},
        {"relu-idempotent", 1, TG_GROWING_OK},   /* closes a cycle in one class */
        {"ewadd-comm", 0, TG_SHRINKING},
        {"ewmul-ones", 1, TG_NOT_APP},
        {"conv-enlarge", 0, TG_MISSING_VAR},
        {"ewmul-ewadd-distrib", 0, TG_GROWING_OK},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int i = ax_find(&axioms, want[k].axiom);
        assert_true(i >= 0);
        if (plan.ax[i].why[want[k].side] != want[k].why)
            fail_msg("%s side %d: %s, want %s", want[k].axiom, want[k].side,
                     tg_why_name(plan.ax[i].why[want[k].side]), tg_why_name(want[k].why));
    }
    ze_ctx *z;
    char err[ZE_WHYLEN];
    assert_int_equal(ze_open(&axioms, &plan, &z, err, sizeof err), 0);
    for (int i = 0; i < axioms.n_axioms; i++)
        for (int d = 0; d < 2; d++)
            assert_int_equal(ze_pattern_used(z, i, d), tg_is_trigger(plan.ax[i].why[d]));
    ze_close(z);
}

/* ================= tests: the pipeline ================= */

static void run(const rdb_file *f, const pv_options *o, rdb_file **out, pv_stats *st) {
    char err[PV_ERRLEN];
    if (pv_prove(f, &axioms, o, out, st, err, sizeof err) != PV_OK) fail_msg("%s", err);
}

static void test_true_classes(void **state) {
    (void)state;
    rdb_file *f = true_cands(), *out;
    pv_options o;
    pv_stats st;
    quiet_options(&o);
    run(f, &o, &out, &st);
    for (size_t i = 0; i < st.n_pairs; i++)
        if (st.pair[i].status != RDB_PROVED)
            fail_msg("%s member %zu: %s at stage %d: %s", true_cases[st.pair[i].cls].id,
                     st.pair[i].member, rdb_proof_name(st.pair[i].status), st.pair[i].stage,
                     st.pair[i].why);
    assert_int_equal(st.proved, st.candidates);
    assert_true(out->n_rules > 0);
    for (size_t i = 0; i < out->n_rules; i++) {
        assert_int_equal(out->rules[i].prover.status, RDB_PROVED);
        assert_string_equal(out->rules[i].prover.name, "z3");
        /* egg's rule: the destination reads no input the source lacks */
        assert_int_equal(rg_used_inputs(&out->rules[i].dst) & ~rg_used_inputs(&out->rules[i].src),
                         0);
    }
    pv_stats_free(&st);
    rdb_free(out);
    rdb_free(f);
}

/* Rules for any group count (gsym.h): a sum of convs of one input is
 * proved for any count and shipped with a symbol; a concat of convs on the
 * output channels holds for groups 1 only and stays literal. The symbolic
 * rule is then evaluated at a depthwise shape (count 4 = channels): both
 * sides agree; the concat rule read with a symbol differs there. */
static const class_case gsym_sum = {
    "S01 convs summed", {"(ewadd (conv2d 1 SAME NONE 1 x0 x1) (conv2d 1 SAME NONE 1 x0 x2))",
                         "(conv2d 1 SAME NONE 1 x0 (ewadd x1 x2))"},
    "[1,2,4,4] [2,2,3,3] [2,2,3,3]"};
static const class_case gsym_cat = {
    "S02 convs concatenated", {"(concat 1 (conv2d 1 SAME NONE 1 x0 x1) (conv2d 1 SAME NONE 1 x0 x2))",
                               "(conv2d 1 SAME NONE 1 x0 (concat 0 x1 x2))"},
    "[1,2,4,4] [2,2,3,3] [2,2,3,3]"};

static int sides_agree(const rg_graph *a, const rg_graph *b, const ten_shape *shapes, int n) {
    ten in[RG_MAX_INPUTS], ya, yb;
    uint64_t seed = 7;
    for (int i = 0; i < n; i++) {
        assert_int_equal(ten_alloc(&in[i], &shapes[i]), 0);
        ten_fill_random(&in[i], &seed);
    }
    assert_int_equal(rg_eval(a, in, &ya, NULL, 0), RG_OK);
    assert_int_equal(rg_eval(b, in, &yb, NULL, 0), RG_OK);
    int same = ten_equal(&ya, &yb);
    ten_free(&ya), ten_free(&yb);
    for (int i = 0; i < n; i++) ten_free(&in[i]);
    return same;
}

static void test_any_group_count(void **state) {
    (void)state;
    const class_case *c[2] = {&gsym_sum, &gsym_cat};
    rdb_file *f = make_cands(c, 2), *out;
    pv_options o;
    pv_stats st;
    quiet_options(&o);
    run(f, &o, &out, &st);
    assert_int_equal(st.proved, 2);
    assert_int_equal(st.gsym.tried, 4); /* two rules each way */
    assert_int_equal(st.gsym.generalized, 2);
    ten_shape dw[3] = {{4, {1, 4, 5, 5}}, {4, {4, 1, 3, 3}}, {4, {4, 1, 3, 3}}};
    int symbolic = 0, literal = 0;
    for (size_t i = 0; i < out->n_rules; i++) {
        const rdb_rule *r = &out->rules[i];
        char text[512];
        rg_format(&r->src, text, sizeof text);
        if (strstr(text, "concat")) { /* literal, and false when read for any count */
            assert_false(rg_has_gsym(&r->src) || rg_has_gsym(&r->dst));
            literal++;
            continue;
        }
        assert_true(rg_has_gsym(&r->src) && rg_has_gsym(&r->dst));
        assert_true(sides_agree(&r->src, &r->dst, dw, 3));
        symbolic++;
    }
    assert_int_equal(symbolic, 2);
    assert_int_equal(literal, 2);
    rg_graph a, b;
    parse_graph("(concat 1 (conv2d 1 SAME NONE g0 x0 x1) (conv2d 1 SAME NONE g0 x0 x2))", &a);
    parse_graph("(conv2d 1 SAME NONE g0 x0 (concat 0 x1 x2))", &b);
    ten_shape two[3] = {{4, {1, 4, 5, 5}}, {4, {2, 2, 3, 3}}, {4, {2, 2, 3, 3}}};
    assert_false(sides_agree(&a, &b, two, 3));
    pv_stats_free(&st);
    rdb_free(out);
    rdb_free(f);
}

/* State: false_cases index + 1. Through the pipeline, then Z3 alone. */
static void test_false_class(void **state) {
    const false_case *fc = &false_cases[(intptr_t)*state - 1];
    const class_case *c = &fc->c;
    rdb_file *f = make_cands(&c, 1), *out;
    pv_options o;
    pv_stats st;
    quiet_options(&o);
    run(f, &o, &out, &st);
    assert_int_equal(st.n_pairs, 1);
    pv_pair *p = &st.pair[0];
    if (p->status == RDB_PROVED) fail_msg("%s was proved", c->id);
    if (fc->stage && (p->status != RDB_REFUTED || p->stage != fc->stage))
        fail_msg("%s: %s at stage %d (%s), want refuted at stage %d", c->id,
                 rdb_proof_name(p->status), p->stage, p->why, fc->stage);
    assert_int_equal(out->n_rules, 0);
    ze_verdict v = prove_texts(c->members[0], c->members[1], &test_limits);
    if (v == ZE_PROVED) fail_msg("%s: Z3 alone proves it", c->id);
    pv_stats_free(&st);
    rdb_free(out);
    rdb_free(f);
}

/* 1x1-kernel guards (kernel1.h): a pool commutes with a 1x1 conv only,
 * so the pair is proved as (enlarge 1x1 x1) on both sides; with a 3x3
 * kernel it is refuted; a pair true for any kernel gets no guard. */
static void test_kernel1(void **state) {
    (void)state;
#define POOL_CONV "(avgpool 2x2 2 VALID (conv2d 1 SAME NONE 1 x0 x1))"
#define CONV_POOL "(conv2d 1 SAME NONE 1 (avgpool 2x2 2 VALID x0) x1)"
    static const class_case k1 = {"K1 pool and 1x1 conv", {POOL_CONV, CONV_POOL},
                                  "[1,2,4,4] [3,2,1,1]"};
    static const class_case k3 = {"K3 pool and 3x3 conv", {POOL_CONV, CONV_POOL},
                                  "[1,2,4,4] [3,2,3,3]"};
#undef POOL_CONV
#undef CONV_POOL
    static const class_case kany = {"K4 relu fused, 1x1",
                                    {"(relu (conv2d 1 SAME NONE 1 x0 x1))",
                                     "(conv2d 1 SAME RELU 1 x0 x1)"},
                                    "[1,2,4,4] [3,2,1,1]"};
    const class_case *cases[3] = {&k1, &k3, &kany};
    const size_t want_proved[3] = {1, 0, 1}, want_k1[3] = {1, 0, 0};
    for (int c = 0; c < 3; c++) {
        rdb_file *f = make_cands(&cases[c], 1), *out;
        pv_options o;
        pv_stats st;
        quiet_options(&o);
        run(f, &o, &out, &st);
        if (st.proved != want_proved[c] || st.kernel1_proved != want_k1[c])
            fail_msg("%s: proved %zu (%zu with guards)", cases[c]->id, st.proved,
                     st.kernel1_proved);
        assert_int_equal(out->n_rules, 2 * want_proved[c]);
        for (size_t i = 0; i < out->n_rules; i++) {
            char a[256], b[256];
            rg_format(&out->rules[i].src, a, sizeof a);
            rg_format(&out->rules[i].dst, b, sizeof b);
            int guarded = strstr(a, "(enlarge 1x1 x1)") && strstr(b, "(enlarge 1x1 x1)");
            if (guarded != (int)want_k1[c]) fail_msg("%s: rule %s => %s", cases[c]->id, a, b);
            /* the rule as written is a theorem: Z3 alone proves it */
            assert_int_equal(prove_texts(a, b, &test_limits), ZE_PROVED);
        }
        pv_stats_free(&st);
        rdb_free(out);
        rdb_free(f);
    }
    /* wrapping: one enlarge per input read; none left to grow into */
    rg_graph g, w;
    parse_graph("(ewadd (conv2d 1 SAME NONE 1 x0 x1) (conv2d 1 SAME NONE 1 x0 x1))", &g);
    assert_int_equal(k1_wrap(&g, 1u << 1, &w), 1);
    assert_int_equal(w.n_nodes, g.n_nodes + 1);
    assert_int_equal(k1_wrap(&g, 1u << 2, &w), 0);
    parse_graph("(relu (relu (relu (relu (relu (relu (relu (conv2d 1 SAME NONE 1 x0 x1))))))))", &g);
    assert_int_equal(k1_wrap(&g, 1u << 1, &w), -1);
}

/* A planted candidate with concrete checks off: Z3 decides alone. */
static void test_no_general_stage(void **state) {
    (void)state;
    const class_case *c = &false_cases[4].c; /* F05 */
    rdb_file *f = make_cands(&c, 1), *out;
    pv_options o;
    pv_stats st;
    quiet_options(&o);
    o.general = 0;
    run(f, &o, &out, &st);
    assert_int_equal(st.pair[0].stage, 3);
    assert_int_not_equal(st.pair[0].status, RDB_PROVED);
    pv_stats_free(&st);
    rdb_free(out);
    rdb_free(f);
}

/* A hard candidate: true (scalars commute), but the axioms only yield
 * that inside a product, which Z3 finds after a few thousand instances of
 * distributivity and AC. Under a small instance budget (or a short clock)
 * it ends as "timeout", and the easy ones around it are still proved. */
static const class_case hard = {
    "hard",
    {"(ewmul (ewadd (ewadd x0 x1) (ewadd x2 x3)) (ewadd x4 (smul (smul x5 x6) x7)))",
     "(ewmul (ewadd (ewadd x0 x1) (ewadd x2 x3)) (ewadd x4 (smul (smul x5 x7) x6)))"},
    "[2] [2] [2] [2] [2] [2] [] []"};

static void test_timeout_continues(void **state) {
    (void)state;
    const class_case *c[3] = {&true_cases[0], &hard, &true_cases[1]};
    rdb_file *f = make_cands(c, 3), *out;
    pv_options o;
    pv_stats st;
    quiet_options(&o);
    o.general = 0;
    o.max_instances = 2000;
    run(f, &o, &out, &st);
    assert_int_equal(st.n_pairs, 3);
    assert_int_equal(st.pair[0].status, RDB_PROVED);
    assert_int_equal(st.pair[1].status, RDB_TIMEOUT);
    assert_int_equal(st.pair[2].status, RDB_PROVED);
    assert_int_equal(st.timeout, 1);
    assert_int_equal(st.pair[1].reason, DC_BUDGET);
    assert_non_null(strstr(st.pair[1].why, "instance budget spent"));
    pv_stats_free(&st);
    rdb_free(out);
    /* the deterministic resource limit alone ends it too, and says so */
    o.max_instances = 0;
    o.rlimit = 1000000;
    run(f, &o, &out, &st);
    assert_int_equal(st.pair[0].status, RDB_PROVED);
    assert_int_equal(st.pair[1].status, RDB_TIMEOUT);
    assert_int_equal(st.pair[1].reason, DC_BUDGET);
    assert_non_null(strstr(st.pair[1].why, "resource limit"));
    pv_stats_free(&st);
    rdb_free(out);
    rdb_free(f);
}

/* Z3's reasons for an undecided check, classified without running Z3 (a
 * test of the clock that does not depend on the machine's speed). */
typedef struct {
    const char *id, *reason;
    unsigned instances, units, timeout_ms, max_instances, rlimit;
    ze_verdict want;
    const char *why;
} undecided_case;

static const undecided_case undecided_cases[] = {
    {"U01 clock", "timeout", 13084, 900, 2000, 20000, 5000, ZE_TIMEOUT,
     "wall-clock limit of 2000 ms"},
    {"U02 clock, canceled", "canceled", 5, 900, 2000, 20000, 5000, ZE_TIMEOUT, "wall-clock"},
    {"U03 budget spent", "(incomplete quantifiers)", 13084, 900, 0, 20000, 5000, ZE_BUDGET,
     "instance budget spent (13084 of 20000"},
    {"U04 budget with a clock set", "(incomplete quantifiers)", 13084, 900, 2000, 20000, 5000,
     ZE_BUDGET, "instance budget"},
    {"U05 rlimit", "canceled", 10, 5003, 0, 20000, 5000, ZE_BUDGET, "resource limit of 5000"},
    {"U06 rlimit with a clock set", "canceled", 10, 5003, 2000, 20000, 5000, ZE_BUDGET,
     "resource limit"},
    {"U07 saturated", "(incomplete quantifiers)", 40, 900, 0, 20000, 5000, ZE_UNKNOWN,
     "incomplete quantifiers"},
    {"U08 no budget", "(incomplete quantifiers)", 90000, 900, 0, 0, 0, ZE_UNKNOWN,
     "after 90000"},
};
#define N_UNDECIDED_CASES (sizeof undecided_cases / sizeof undecided_cases[0])

static void test_undecided(void **state) {
    const undecided_case *c = &undecided_cases[(intptr_t)*state - 1];
    ze_limits lim = {c->timeout_ms, c->max_instances, c->rlimit};
    char why[ZE_WHYLEN];
    ze_verdict v = ze_classify_undecided(c->reason, c->instances, c->units, &lim, why);
    if (v != c->want || !strstr(why, c->why))
        fail_msg("%s: %s \"%s\", want %s \"%s\"", c->id, ze_verdict_name(v), why,
                 ze_verdict_name(c->want), c->why);
}

static uint8_t *encode(const rdb_file *f, size_t *len) {
    uint8_t *buf;
    char err[RDB_ERRLEN];
    if (rdb_write_mem(f, &buf, len, err, sizeof err) != RDB_OK) fail_msg("%s", err);
    return buf;
}

static void test_jobs_deterministic(void **state) {
    (void)state;
    rdb_file *f = true_cands(), *a, *b;
    pv_options o;
    pv_stats st;
    size_t la, lb;
    quiet_options(&o);
    o.jobs = 1;
    run(f, &o, &a, &st);
    pv_stats_free(&st);
    o.jobs = 2;
    run(f, &o, &b, &st);
    pv_stats_free(&st);
    uint8_t *ba = encode(a, &la), *bb = encode(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(ba, bb, la);
    free(ba);
    free(bb);
    rdb_free(a);
    rdb_free(b);
    rdb_free(f);
}

/* ================= tests: emission and pruning ================= */

static void test_canon_renaming(void **state) {
    (void)state;
    rg_graph a, b, c, d, ca, cb, cc, cd;
    parse_graph("(ewadd (split0 1 (dim 1 x2) (concat 1 x2 x0)) x1)", &a);
    parse_graph("(ewadd x1 (split0 1 (dim 1 x2) (concat 1 x2 x0)))", &b);
    parse_graph("(ewadd (split0 1 (dim 1 x0) (concat 1 x0 x1)) x2)", &c);
    parse_graph("(ewadd x2 (split0 1 (dim 1 x0) (concat 1 x0 x1)))", &d);
    rg_canon_rule(&a, &b, &ca, &cb);
    rg_canon_rule(&c, &d, &cc, &cd);
    assert_true(rg_equal(&ca, &cc));
    assert_true(rg_equal(&cb, &cd));
    assert_true(rg_equal(&cc, &c)); /* already canonical */
    assert_int_equal(rg_used_inputs(&a), 7u);
}

static void test_emit_directions(void **state) {
    (void)state;
    static const class_case cc = {
        "directions", {"(matmul x0 (imm x1))", "x0", "(ewadd x0 x1)"}, "[2,3] [2,3]"};
    const class_case *c = &cc;
    rdb_file *f = make_cands(&c, 1);
    uint8_t proved[3] = {0, 1, 1};
    rdb_prover pv[3];
    em_rule *r = NULL;
    size_t n = 0, cap = 0;
    memset(pv, 0, sizeof pv);
    assert_int_equal(em_class_rules(&f->classes[0], 0, proved, pv, &r, &n, &cap), 0);
    /* rep -> x0 only (x0 -> rep would need x1); rep <-> ewadd both ways */
    assert_int_equal(n, 3);
    assert_int_equal(r[0].reversed, 0);
    assert_int_equal(r[0].member, 1);
    assert_int_equal(r[1].member, 2);
    assert_int_equal(r[2].reversed, 1);
    free(r);
    rdb_free(f);
}

static void test_prune_steps(void **state) {
    (void)state;
    em_rule r[N_PRUNE];
    size_t n = N_PRUNE;
    rd_counts pc;
    memset(r, 0, sizeof r);
    for (size_t i = 0; i < N_PRUNE; i++) {
        parse_graph(prune_cases[i].src, &r[i].src);
        parse_graph(prune_cases[i].dst, &r[i].dst);
        r[i].dst.n_inputs = r[i].src.n_inputs;
        r[i].cls = i;
    }
    assert_int_equal(rd_prune(r, &n, &pc), 0);
    size_t want[5] = {N_PRUNE, 0, 0, 0, 0};
    for (int step = 1; step <= 4; step++) {
        want[step] = want[step - 1];
        for (size_t i = 0; i < N_PRUNE; i++) want[step] -= prune_cases[i].dropped_at == step;
    }
    assert_int_equal(pc.emitted, want[0]);
    assert_int_equal(pc.after_dup, want[1]);
    assert_int_equal(pc.after_rename, want[2]);
    assert_int_equal(pc.after_input, want[3]);
    assert_int_equal(pc.after_output, want[4]);
    size_t k = 0;
    for (size_t i = 0; i < N_PRUNE; i++) {
        if (prune_cases[i].dropped_at) continue;
        if (k >= n || r[k].cls != i) fail_msg("%s should survive", prune_cases[i].id);
        k++;
    }
}

/* ================= tests: --check and bad input ================= */

static rdb_file *proved_rules(void) {
    rdb_file *f = true_cands(), *out;
    pv_options o;
    pv_stats st;
    quiet_options(&o);
    run(f, &o, &out, &st);
    pv_stats_free(&st);
    rdb_free(f);
    return out;
}

/* Append the rule lhs -> rhs, claimed proved; @return its id. */
static uint64_t append_rule(rdb_file *f, const char *lhs, const char *rhs) {
    rg_graph a, b;
    rdb_prover pv = {"z3", "forged", 0, RDB_PROVED};
    parse_graph(lhs, &a);
    parse_graph(rhs, &b);
    assert_int_equal(rdb_add_rule(f, &a, &b, &pv), RDB_OK);
    return f->rules[f->n_rules - 1].id;
}

/* Append the planted unsound rule relu(x0) -> x0; @return its id. */
static uint64_t plant(rdb_file *f) { return append_rule(f, "(relu x0)", "x0"); }

static void test_check(void **state) {
    (void)state;
    rdb_file *f = proved_rules();
    pv_options o;
    pv_check_result cr;
    char err[PV_ERRLEN];
    quiet_options(&o);
    assert_int_equal(pv_check(f, &axioms, &o, &cr, err, sizeof err), PV_OK);
    assert_int_equal(cr.n_failed, 0);
    assert_int_equal(cr.n_rules, f->n_rules);
    pv_check_free(&cr);
    uint64_t id = plant(f);
    assert_int_equal(pv_check(f, &axioms, &o, &cr, err, sizeof err), PV_OK);
    assert_int_equal(cr.n_failed, 1);
    assert_int_equal(cr.failed[0], id);
    assert_int_equal(cr.pair[f->n_rules - 1].reason, DC_REFUTED);
    assert_non_null(strstr(cr.pair[f->n_rules - 1].why, "differs at x0="));
    pv_check_free(&cr);
    rdb_free(f);
}

static void write_file(const char *path, const rdb_file *f) {
    char err[RDB_ERRLEN];
    if (rdb_write(path, f, err, sizeof err) != RDB_OK) fail_msg("%s", err);
}

/* A rules file from "src => dst" lines separated by '|'. */
static rdb_file *rules_of(const char *text) {
    rdb_file *f = rdb_new(RDB_RULES);
    char *buf = strdup(text), *save = NULL, err[RDB_ERRLEN];
    rdb_prover pv = {"test", "0", 0, RDB_PROVED};
    assert_non_null(f);
    for (char *line = strtok_r(buf, "|", &save); line; line = strtok_r(NULL, "|", &save)) {
        char *arrow = strstr(line, "=>");
        rg_graph src, dst;
        assert_non_null(arrow);
        *arrow = 0;
        if (rg_parse(line, &src, err, sizeof err) != RG_OK || rg_parse(arrow + 2, &dst, err, sizeof err) != RG_OK)
            fail_msg("rule '%s': %s", line, err);
        dst.n_inputs = src.n_inputs > dst.n_inputs ? src.n_inputs : dst.n_inputs;
        assert_int_equal(rdb_add_rule(f, &src, &dst, &pv), RDB_OK);
    }
    free(buf);
    return f;
}

/* prove --prune-derivable drops what the kept rules derive and writes one
 * rule per equation (a rule and its reverse); --derive finds every dropped
 * rule again, counts a shipped rule's reverse as shipped, and flags one
 * nothing derives. */
static void test_prune_derivable_file(void **state) {
    (void)state;
    static const char full_text[] = "(ewadd x0 x1) => (ewadd x1 x0)|"
                                    "(ewadd (ewadd x0 x1) x2) => (ewadd x0 (ewadd x1 x2))|"
                                    "(ewadd (ewadd x0 x1) x2) => (ewadd x1 (ewadd x0 x2))|"
                                    "(ewmul x0 x1) => (ewmul x1 x0)|"
                                    "(ewadd x0 (ewadd x1 x2)) => (ewadd (ewadd x0 x1) x2)";
    char full[300], pruned[300], err[PV_ERRLEN];
    rdb_file *f = rules_of(full_text), *g = NULL;
    pv_derive_options d;
    pv_prune_report pr;
    pv_derive_report dr;
    pv_derive_defaults(&d);
    d.quiet = 1;
    snprintf(full, sizeof full, "%s/full.tasodb", scratch);
    snprintf(pruned, sizeof pruned, "%s/pruned.tasodb", scratch);
    write_file(full, f);
    assert_int_equal(pv_prune_file(full, pruned, &d, &pr, err, sizeof err), PV_OK);
    assert_int_equal(pr.in, 5);
    assert_int_equal(pr.equations, 4); /* rules 1 and 4 are one */
    assert_int_equal(pr.kept, 3);
    assert_int_equal(pr.derived, 1);
    assert_int_equal(pr.passes, 1); /* the file derives the dropped rule: one check */
    assert_int_equal(pr.restored, 0);
    assert_int_equal(pv_read_kind(pruned, RDB_RULES, &g, err, sizeof err), PV_OK);
    assert_int_equal(g->n_rules, 3); /* the two commutations, associativity one way */
    rdb_free(g);
    assert_int_equal(pv_derive_file(pruned, full, &d, &dr, NULL, err, sizeof err), PV_OK);
    assert_int_equal(dr.full, 5);
    assert_int_equal(dr.shipped, 3);
    assert_int_equal(dr.reversed, 1);
    assert_int_equal(dr.checked, 1);
    assert_int_equal(dr.derived, 1);
    assert_int_equal(dr.neither, 0);
    /* the bounds the file says it was pruned with, unless given */
    assert_int_equal(dr.rounds, PV_DERIVE_ROUNDS);
    assert_int_equal(dr.nodes, PV_DERIVE_NODES);
    d.rounds = 7;
    assert_int_equal(pv_derive_file(pruned, full, &d, &dr, NULL, err, sizeof err), PV_OK);
    assert_int_equal(dr.rounds, 7);
    assert_int_equal(dr.nodes, PV_DERIVE_NODES);
    d.rounds = 0;
    /* each way of deriving: the right side reached from the left alone
     * finds it as well */
    d.mode = 0;
    assert_int_equal(pv_derive_file(pruned, full, &d, &dr, NULL, err, sizeof err), PV_OK);
    assert_int_equal(dr.neither, 0);
    d.mode = 2;
    /* a rule the pruned set cannot derive is reported */
    rdb_free(f);
    f = rules_of(full_text);
    rg_graph src, dst;
    rdb_prover pv = {"test", "0", 0, RDB_PROVED};
    assert_int_equal(rg_parse("(relu (relu x0))", &src, err, sizeof err), RG_OK);
    assert_int_equal(rg_parse("(relu x0)", &dst, err, sizeof err), RG_OK);
    assert_int_equal(rdb_add_rule(f, &src, &dst, &pv), RDB_OK);
    write_file(full, f);
    assert_int_equal(pv_derive_file(pruned, full, &d, &dr, NULL, err, sizeof err), PV_OK);
    assert_int_equal(dr.neither, 1);
    assert_int_equal(pv_prune_file("/nonexistent.tasodb", pruned, &d, &pr, err, sizeof err), PV_EINPUT);
    rdb_free(f);
}

/* --derive reads FULL against the shipped file as the engine reads that
 * file: a rule of FULL that one of its rules covers (renamed, a unit
 * enlarge written out, the reverse) counts as shipped and is not checked,
 * so what else FULL holds cannot change the order of the rules a check
 * saturates with; a rule the shipped one covers only for 1x1 kernels
 * (the same, bare) is checked. */
static void test_derive_reads_as_engine(void **state) {
    (void)state;
    static const char bare[] = "(conv2d 1 SAME NONE 1 (conv2d 1 SAME NONE 1 x0 x1) x2) => "
                               "(conv2d 1 SAME NONE 1 x0 (kmul x2 x1))";
    static const char unit[] = "(conv2d 1 SAME NONE 1 (conv2d 1 SAME NONE 1 x1 x0) (enlarge 1x1 x2)) => "
                               "(conv2d 1 SAME NONE 1 x1 (kmul (enlarge 1x1 x2) x0))";
    static const char unit_back[] = "(conv2d 1 SAME NONE 1 x0 (kmul (enlarge 1x1 x1) x2)) => "
                                    "(conv2d 1 SAME NONE 1 (conv2d 1 SAME NONE 1 x0 x2) (enlarge 1x1 x1))";
    char shipped[300], full[300], text[1200], err[PV_ERRLEN];
    pv_derive_options d;
    pv_derive_report dr;
    pv_derive_defaults(&d);
    d.quiet = 1;
    snprintf(shipped, sizeof shipped, "%s/engine-shipped.tasodb", scratch);
    snprintf(full, sizeof full, "%s/engine-full.tasodb", scratch);
    rdb_file *s = rules_of(bare), *f = NULL;
    write_file(shipped, s);
    rdb_free(s);
    snprintf(text, sizeof text, "%s|%s|%s", bare, unit, unit_back);
    write_file(full, f = rules_of(text));
    rdb_free(f);
    assert_int_equal(pv_derive_file(shipped, full, &d, &dr, NULL, err, sizeof err), PV_OK);
    assert_int_equal(dr.full, 3);
    assert_int_equal(dr.shipped, 2); /* itself, and its twin for 1x1 kernels */
    assert_int_equal(dr.reversed, 1);
    assert_int_equal(dr.checked, 0);
    s = rules_of(unit); /* shipped for 1x1 kernels only: the bare rule reaches further */
    write_file(shipped, s);
    rdb_free(s);
    assert_int_equal(pv_derive_file(shipped, full, &d, &dr, NULL, err, sizeof err), PV_OK);
    assert_int_equal(dr.shipped, 1);
    assert_int_equal(dr.reversed, 1);
    assert_int_equal(dr.checked, 1);
}

/* prove --prune-derivable --from prunes a pruned file again, by another
 * mode: a rule that writes a detour around commutation goes, the rules of
 * the first file not kept stay out, every rule of the full set is checked
 * against the result; --derive then reads the mode from the file's note. */
static void test_prune_again_from(void **state) {
    (void)state;
    static const char full_text[] = "(ewadd x0 x1) => (ewadd x1 x0)|"
                                    "(split0 1 (dim 1 x0) (concat 1 x0 x1)) => x0|"
                                    "(split1 1 (dim 1 x0) (concat 1 x0 x1)) => x1|"
                                    "(ewadd x0 x1) => (split0 1 (dim 1 x0) (concat 1 (ewadd x1 x0) x1))";
    char full[300], first[300], again[300], err[PV_ERRLEN];
    snprintf(full, sizeof full, "%s/full2.tasodb", scratch);
    snprintf(first, sizeof first, "%s/first.tasodb", scratch);
    snprintf(again, sizeof again, "%s/again.tasodb", scratch);
    rdb_file *f = rules_of(full_text), *g = NULL;
    write_file(full, f);
    pv_prune_report pr;
    pv_derive_report dr;
    pv_derive_options d;
    pv_derive_defaults(&d);
    d.quiet = 1;
    assert_int_equal(pv_prune_file(full, first, &d, &pr, err, sizeof err), PV_OK);
    assert_int_equal(pr.kept, 4); /* by equation, the detour is not derived */
    d.from = first, d.mode = 3; /* detours */
    assert_int_equal(pv_prune_file(full, again, &d, &pr, err, sizeof err), PV_OK);
    assert_int_equal(pr.kept, 3);
    assert_int_equal(pr.restored, 0);
    assert_int_equal(pv_read_kind(again, RDB_RULES, &g, err, sizeof err), PV_OK);
    assert_int_equal(g->n_rules, 3);
    rdb_free(g);
    d.from = NULL, d.mode = -1; /* the file's own mode: detours */
    assert_int_equal(pv_derive_file(again, full, &d, &dr, NULL, err, sizeof err), PV_OK);
    assert_int_equal(dr.neither, 0);
    d.mode = 2; /* equation */
    assert_int_equal(pv_derive_file(again, full, &d, &dr, NULL, err, sizeof err), PV_OK);
    assert_int_equal(dr.neither, 1);
    d.mode = -1, d.from = "/nonexistent.tasodb";
    assert_int_equal(pv_prune_file(full, again, &d, &pr, err, sizeof err), PV_EINPUT);
    rdb_free(f);
}

/* The checks of a pruned file go on until one keeps none: a rule the
 * file --from does not derive is kept after all; the next check takes the
 * verdict of a rule derived under the adds alone from the check before
 * (the rule kept writes no add), and a last one checks every rule. */
static void test_prune_checks_converge(void **state) {
    (void)state;
    static const char full_text[] = "(ewadd x0 x1) => (ewadd x1 x0)|"
                                    "(ewadd (ewadd x0 x1) x2) => (ewadd x0 (ewadd x1 x2))|"
                                    "(ewadd (ewadd x0 x1) x2) => (ewadd x1 (ewadd x0 x2))|"
                                    "(relu (relu x0)) => (relu x0)";
    static const char from_text[] = "(ewadd x0 x1) => (ewadd x1 x0)|"
                                    "(ewadd (ewadd x0 x1) x2) => (ewadd x0 (ewadd x1 x2))";
    char full[300], from[300], out[300], err[PV_ERRLEN];
    snprintf(full, sizeof full, "%s/full3.tasodb", scratch);
    snprintf(from, sizeof from, "%s/from3.tasodb", scratch);
    snprintf(out, sizeof out, "%s/out3.tasodb", scratch);
    rdb_file *f = rules_of(full_text), *g = rules_of(from_text);
    write_file(full, f);
    write_file(from, g);
    pv_prune_report pr;
    pv_derive_report dr;
    pv_derive_options d;
    pv_derive_defaults(&d);
    d.quiet = 1, d.from = from;
    assert_int_equal(pv_prune_file(full, out, &d, &pr, err, sizeof err), PV_OK);
    assert_int_equal(pr.restored, 1); /* relu's */
    assert_int_equal(pr.kept, 3);
    assert_int_equal(pr.converged, 1);
    assert_int_equal(pr.passes, 3); /* kept one; kept none, one verdict as before; every rule, none */
    assert_int_equal(pr.settled, 1);
    d.from = NULL;
    assert_int_equal(pv_derive_file(out, full, &d, &dr, NULL, err, sizeof err), PV_OK);
    assert_int_equal(dr.neither, 0);
    assert_int_equal(dr.settled, 0); /* --derive decides every rule */
    rdb_free(f), rdb_free(g);
}

/* prove --known: a pair Z3 proves and the known rules derive (commutation
 * and associativity reorder a sum; a split through a relu, reached only
 * with a rule that has no reverse) is counted as derived and makes no
 * rule; a pair they cannot derive (a product commuted) gives its rules as
 * before; a false pair is still refuted. A divided run with --known
 * merges to the undivided run's bytes, and a merge without it refuses the
 * shards. */
static const class_case known_sum = {
    "K01 sum reordered", {"(ewadd x0 (ewadd x1 x2))", "(ewadd (ewadd x2 x1) x0)"}, "[2,3] [2,3] [2,3]"};
static const class_case known_mul = {"K02 product commuted", {"(ewmul x0 x1)", "(ewmul x1 x0)"}, "[2,3] [2,3]"};
static const class_case known_false = {"K03 false", {"(ewadd x0 x1)", "(ewmul x0 x1)"}, "[2,3] [2,3]"};
/* only one way is a rule (the other side reads x1 less), reached with a
 * rule that has no reverse (the split of a concat) */
static const class_case known_reach = {
    "K04 split through relu", {"(split0 1 (dim 1 x0) (relu (concat 1 x0 x1)))", "(relu x0)"}, "[2,3] [2,2]"};

static void test_known_rules(void **state) {
    (void)state;
    const class_case *cases[] = {&known_sum, &known_mul, &known_false, &known_reach};
    rdb_file *f = make_cands(cases, 4), *known = rules_of("(ewadd x0 x1) => (ewadd x1 x0)|"
                                                         "(ewadd (ewadd x0 x1) x2) => (ewadd x0 (ewadd x1 x2))|"
                                                         "(relu (concat 1 x0 x1)) => (concat 1 (relu x0) (relu x1))|"
                                                         "(split0 1 (dim 1 x0) (concat 1 x0 x1)) => x0");
    rdb_file *with = NULL, *without = NULL;
    char kpath[300], cpath[300], whole[300], parts[2][300], merged[300], err[PV_ERRLEN];
    pv_options o;
    pv_stats st;
    snprintf(kpath, sizeof kpath, "%s/known.tasodb", scratch);
    snprintf(cpath, sizeof cpath, "%s/known-cands.tasodb", scratch);
    write_file(kpath, known);
    write_file(cpath, f);
    quiet_options(&o);
    run(f, &o, &without, &st);
    assert_int_equal(st.proved, 3);
    assert_int_equal(st.derived, 0);
    pv_stats_free(&st);
    o.known = kpath;
    run(f, &o, &with, &st);
    assert_int_equal(st.derived, 2);
    assert_int_equal(st.proved, 1);
    assert_int_equal(st.refuted, 1);
    assert_int_equal(st.pair[0].reason, DC_DERIVED);
    assert_int_equal(st.pair[0].status, RDB_PROVED);
    assert_int_equal(st.pair[1].reason, DC_PROVED);
    assert_int_equal(st.pair[3].reason, DC_DERIVED);
    pv_stats_free(&st);
    /* only the product's rules are left; without --known the sum has its own */
    assert_true(with->n_rules > 0 && with->n_rules < without->n_rules);
    for (size_t i = 0; i < with->n_rules; i++) assert_int_equal(with->rules[i].src.node[0].op, OP_EWMUL);
    /* divided: the shards merge to the undivided bytes, with the same --known only */
    snprintf(whole, sizeof whole, "%s/known-whole.tasodb", scratch);
    snprintf(merged, sizeof merged, "%s/known-merged.tasodb", scratch);
    assert_int_equal(pv_prove_file(cpath, whole, &o, &st, err, sizeof err), PV_OK);
    pv_stats_free(&st);
    char *part_list[2] = {parts[0], parts[1]};
    for (unsigned k = 0; k < 2; k++) {
        snprintf(parts[k], sizeof parts[k], "%s/known-part%u.tasodb", scratch, k);
        o.shard_k = k, o.shard_n = 2;
        assert_int_equal(pv_prove_file(cpath, parts[k], &o, &st, err, sizeof err), PV_OK);
        pv_stats_free(&st);
    }
    o.shard_k = 0, o.shard_n = 1;
    assert_int_equal(pv_merge_shards_file(cpath, part_list, 2, merged, &o, &st, err, sizeof err), PV_OK);
    assert_int_equal(st.derived, 2);
    pv_stats_free(&st);
    rdb_file *a = NULL, *b = NULL;
    assert_int_equal(pv_read_kind(whole, RDB_RULES, &a, err, sizeof err), PV_OK);
    assert_int_equal(pv_read_kind(merged, RDB_RULES, &b, err, sizeof err), PV_OK);
    size_t la, lb;
    uint8_t *ba = encode(a, &la), *bb = encode(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(ba, bb, la);
    free(ba), free(bb);
    rdb_free(a), rdb_free(b);
    o.known = NULL;
    assert_int_equal(pv_merge_shards_file(cpath, part_list, 2, merged, &o, &st, err, sizeof err), PV_EINPUT);
    assert_non_null(strstr(err, "--known"));
    /* a file that is not there is an input error */
    o.known = "/nonexistent.tasodb";
    assert_int_equal(pv_prove_file(cpath, whole, &o, &st, err, sizeof err), PV_EINPUT);
    rdb_free(with), rdb_free(without), rdb_free(known), rdb_free(f);
}

static void expect_input_error(const char *cands, const char *axioms_path, const char *what) {
    pv_options o;
    pv_stats st;
    char err[PV_ERRLEN], out[300];
    quiet_options(&o);
    if (axioms_path) o.axioms_path = axioms_path;
    snprintf(out, sizeof out, "%s/out.tasodb", scratch);
    assert_int_equal(pv_prove_file(cands, out, &o, &st, err, sizeof err), PV_EINPUT);
    if (!strstr(err, what)) fail_msg("message \"%s\" lacks \"%s\"", err, what);
    pv_stats_free(&st);
}

static void write_bytes(const char *path, const uint8_t *b, size_t n) {
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, n, fp), n);
    fclose(fp);
}

static void test_bad_inputs(void **state) {
    (void)state;
    char cands[300], other[300], trunc[300], rules[300], bad_ax[300], none[300];
    rdb_file *f = true_cands(), *r = proved_rules();
    size_t len;
    snprintf(cands, sizeof cands, "%s/cands.tasodb", scratch);
    snprintf(other, sizeof other, "%s/other.tasodb", scratch);
    snprintf(trunc, sizeof trunc, "%s/trunc.tasodb", scratch);
    snprintf(rules, sizeof rules, "%s/rules.tasodb", scratch);
    snprintf(bad_ax, sizeof bad_ax, "%s/bad.ax", scratch);
    snprintf(none, sizeof none, "%s/none.tasodb", scratch);
    write_file(cands, f);
    write_file(rules, r);
    uint8_t *b = encode(f, &len);
    write_bytes(trunc, b, len / 2);
    free(b);
    f->digest[0] ^= 1;
    b = encode(f, &len);
    write_bytes(other, b, len);
    free(b);
    static const char bad_text[] = "(axiom a \"c\" ((x tensor))\n  (relu x) (bogus x))\n";
    write_bytes(bad_ax, (const uint8_t *)bad_text, sizeof bad_text - 1);
    expect_input_error(other, NULL, "other opspecs");
    expect_input_error(trunc, NULL, "truncated");
    expect_input_error(rules, NULL, "a rules file");
    expect_input_error(none, NULL, "none.tasodb");
    expect_input_error(cands, bad_ax, "bad.ax:2:");
    rdb_free(f);
    rdb_free(r);
}

static void test_cli_usage(void **state) {
    (void)state;
    char *none[] = {"prove", NULL};
    char *help[] = {"prove", "--help", NULL};
    char *no_out[] = {"prove", "x.tasodb", NULL};
    char *bad_opt[] = {"prove", "--frobnicate", NULL};
    char *bad_jobs[] = {"prove", "x", "-o", "y", "--jobs", "0", NULL};
    char *no_val[] = {"prove", "x", "-o", NULL};
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    int rc_help = pv_cli_main(2, help);
    fclose(stdout);
    stdout = saved;
    assert_int_equal(rc_help, 0);
    FILE *err = freopen("/dev/null", "w", stderr);
    assert_non_null(err);
    assert_int_equal(pv_cli_main(1, none), 2);
    assert_int_equal(pv_cli_main(2, no_out), 2);
    assert_int_equal(pv_cli_main(2, bad_opt), 2);
    assert_int_equal(pv_cli_main(6, bad_jobs), 2);
    assert_int_equal(pv_cli_main(3, no_val), 2);
}

/* ================= fixtures for cli_prove.sh ================= */

static int write_fixtures(const char *dir) {
    char path[512];
    rdb_file *f = true_cands(), *r = proved_rules();
    snprintf(path, sizeof path, "%s/cands.tasodb", dir);
    write_file(path, f);
    uint64_t id = plant(r);
    snprintf(path, sizeof path, "%s/unsound.tasodb", dir);
    write_file(path, r);
    append_rule(r, hard.members[0], hard.members[1]);
    append_rule(r, "(matmul x0 x1)", "(matmul x1 x0)");
    snprintf(path, sizeof path, "%s/mixed.tasodb", dir);
    write_file(path, r);
    f->digest[15] ^= 0x80;
    snprintf(path, sizeof path, "%s/other.tasodb", dir);
    write_file(path, f);
    printf("%llu\n", (unsigned long long)id);
    rdb_free(f);
    rdb_free(r);
    return 0;
}

/* ================= setup ================= */

static int load_all(void) {
    char path[512], err[PV_ERRLEN];
    if (pv_load_axioms(spec_path("axioms.ax", path, sizeof path), &axioms, err, sizeof err) ||
        pv_load_axioms(spec_path("wrong.ax", path, sizeof path), &wrong, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return tg_plan_axioms(&axioms, &plan);
}

static int make_scratch(void **state) {
    (void)state;
    snprintf(scratch, sizeof scratch, "/tmp/test_prove.XXXXXX");
    return mkdtemp(scratch) ? 0 : -1;
}

static int drop_scratch(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    return system(cmd) == 0 ? 0 : -1;
}

#define MAX_TESTS 512

static char names[MAX_TESTS][96];

static void add(struct CMUnitTest *t, size_t *n, const char *name, CMUnitTestFunction f,
                intptr_t st) {
    snprintf(names[*n], sizeof names[*n], "%s", name);
    t[*n] = (struct CMUnitTest){names[*n], f, NULL, NULL, (void *)st};
    ++*n;
}

int main(int argc, char **argv) {
    static struct CMUnitTest tests[MAX_TESTS];
    size_t n = 0;
    char name[96];
    if (load_all() != 0) return 1;
    if (argc == 3 && !strcmp(argv[1], "--fixtures")) return write_fixtures(argv[2]);
    for (int i = 0; i < axioms.n_axioms && n + 2 < MAX_TESTS / 2; i++)
        for (int last = 0; last < 2; last++) {
            snprintf(name, sizeof name, "A%02d%c %s", i + 1, last ? 'b' : 'a',
                     axioms.axiom[i].name);
            add(tests, &n, name, test_axiom_instance, (i << 1 | last) + 1);
        }
    for (int i = 0; i < wrong.n_axioms && n < MAX_TESTS / 2 + 32; i++) {
        snprintf(name, sizeof name, "W%02d %s not provable", i + 1, wrong.axiom[i].name);
        add(tests, &n, name, test_wrong_identity, i + 1);
    }
    for (size_t i = 0; i < N_FALSE; i++)
        add(tests, &n, false_cases[i].c.id, test_false_class, (intptr_t)i + 1);
    for (size_t i = 0; i < N_UNDECIDED_CASES; i++)
        add(tests, &n, undecided_cases[i].id, test_undecided, (intptr_t)i + 1);
#define ADD(id, f) add(tests, &n, id, f, 0)
    ADD("G01 trigger plan", test_trigger_plan);
    ADD("G02 true classes all proved", test_true_classes);
    ADD("G03 no general stage: Z3 alone", test_no_general_stage);
    ADD("G04 a budget ends one candidate, the run goes on", test_timeout_continues);
    ADD("G05 same bytes with --jobs 1 and 2", test_jobs_deterministic);
    ADD("G06 1x1-kernel guards", test_kernel1);
    ADD("G07 rules for any group count", test_any_group_count);
    ADD("E01 canonical renaming", test_canon_renaming);
    ADD("E02 rule directions", test_emit_directions);
    ADD("E03 pruning steps (P table)", test_prune_steps);
    ADD("C01 check passes sound, fails planted", test_check);
    ADD("C02 bad inputs are input errors", test_bad_inputs);
    ADD("C03 cli usage", test_cli_usage);
    ADD("C04 pruning by derivability, and the proof nothing was lost", test_prune_derivable_file);
    ADD("C04d prove --derive reads FULL against the shipped file as the engine reads it", test_derive_reads_as_engine);
    ADD("C04b pruning a pruned file again by another mode (--from)", test_prune_again_from);
    ADD("C04c the checks of a pruned file go on until one keeps none", test_prune_checks_converge);
    ADD("C05 proved pairs the known rules derive make no rule (--known)", test_known_rules);
#undef ADD
    int rc = _cmocka_run_group_tests("prove", tests, n, make_scratch, drop_scratch);
    tg_free(&plan);
    ax_free(&axioms);
    ax_free(&wrong);
    return rc;
}
