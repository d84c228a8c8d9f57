/* test_ruledb.c - cmocka tests of rule graphs (rgraph), the msgpack reader
 * (mpread) and the ruledb file format (ruledb): round trips, every
 * truncation, every byte flip, hostile headers, validation, merge laws,
 * diff, atomic writes. Table rows carry ids (R01, V01, H01...) that name
 * the test in the TAP output. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "modp.h"
#include "mpread.h"
#include "rgraph.h"
#include "ruledb.h"

/* ================= tables ================= */

typedef struct {
    const char *id, *src, *dst;
    rdb_proof status;
    uint64_t millis;
} rule_case;

/* Canonical text (rg_format of rg_parse gives it back unchanged). */
static const rule_case rule_cases[] = {
    {"R01 matmul associativity", "(matmul x0 (matmul x1 x2))", "(matmul (matmul x0 x1) x2)",
     RDB_PROVED, 3},
    {"R02 ewadd commutes", "(ewadd x0 x1)", "(ewadd x1 x0)", RDB_PROVED, 1},
    {"R03 double transpose, empty dst", "(transpose (transpose x0))", "x0", RDB_PROVED, 2},
    {"R04 split of concat, symbolic size, 2 outputs",
     "(split0 1 (dim 1 x0) (concat 1 x0 x1)), (split1 1 (dim 1 x0) (concat 1 x0 x1))",
     "x0, x1", RDB_PROVED, 12},
    {"R05 fuse relu into conv", "(relu (conv2d 1 SAME NONE 1 x0 x1))",
     "(conv2d 1 SAME RELU 1 x0 x1)", RDB_PROVED, 5},
    {"R06 conv bilinear in w",
     "(ewadd (conv2d 2 VALID NONE 2 x0 x1) (conv2d 2 VALID NONE 2 x0 x2))",
     "(conv2d 2 VALID NONE 2 x0 (ewadd x1 x2))", RDB_TIMEOUT, 10000},
    {"R07 pool kernel constant", "(avgpool 3x1 2 VALID x0)",
     "(conv2d 2 VALID NONE 1 x0 (poolk 3x1 x0))", RDB_UNKNOWN, 7},
    {"R08 four outputs",
     "(split0 0 (dim 0 x1) (concat 0 x1 x2)), (split1 0 (dim 0 x1) (concat 0 x1 x2)), "
     "(relu x0), (enlarge 3x3 x3)",
     "x1, x2, (relu x0), (enlarge 3x3 x3)", RDB_UNCHECKED, 0},
    {"R09 eight nodes", "(relu (relu (relu (relu (relu (relu (relu (relu x0))))))))",
     "(relu x0)", RDB_PROVED, 1},
    {"R10 eight inputs",
     "(ewadd (ewadd (ewadd x0 x1) (ewadd x2 x3)) (ewadd (ewadd x4 x5) (ewadd x6 x7)))",
     "(ewadd x0 (ewadd x1 (ewadd x2 (ewadd x3 (ewadd x4 (ewadd x5 (ewadd x6 x7)))))))",
     RDB_PROVED, 30},
    {"R11 shared subterm, symbolic size on axis 3",
     "(ewmul (split0 3 (dim 3 x1) (maxpool 1x3 1 SAME x0)) "
     "(split0 3 (dim 3 x1) (maxpool 1x3 1 SAME x0)))",
     "(smul (split0 3 (dim 3 x1) (maxpool 1x3 1 SAME x0)) (imm x1))", RDB_REFUTED, UINT64_MAX},
    {"R99 two convs of any group count summed",
     "(ewadd (conv2d 1 SAME NONE g0 x0 x1) (conv2d 1 SAME NONE g0 x0 x2))",
     "(conv2d 1 SAME NONE g0 x0 (ewadd x1 x2))", RDB_PROVED, 5},
};
#define N_RULE_CASES (sizeof rule_cases / sizeof rule_cases[0])

/* Classes: fingerprint seed, count, members (NULL-terminated). */
typedef struct {
    uint64_t fp_seed;
    int fp_values;
    uint64_t count;
    const char *members[4];
} class_case;

static const class_case class_cases[] = {
    {1, 1, 2, {"(ewadd x0 x1)", "(ewadd x1 x0)", NULL}},
    {2, 2, 5, {"(relu (split0 0 2 x0)), (relu (split1 0 2 x0))",
               "(split0 0 2 (relu x0)), (split1 0 2 (relu x0))", NULL}},
    {3, 4, 9, {"(matmul x0 (matmul x1 x2))", "(matmul (matmul x0 x1) x2)", "x0", NULL}},
    {4, 1, 1, {"(conv2d 1 SAME RELU 1 x0 x1)", NULL}},
};
#define N_CLASS_CASES (sizeof class_cases / sizeof class_cases[0])

/* ================= helpers ================= */

static rg_graph parse_ok(const char *text) {
    rg_graph g;
    char err[RG_ERRLEN] = "";
    rg_status rc = rg_parse(text, &g, err, sizeof err);
    if (rc != RG_OK) fail_msg("parse '%s': %s", text, err);
    return g;
}

static rdb_file *rules_file(const rule_case *t, size_t n) {
    rdb_file *f = rdb_new(RDB_RULES);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) {
        rg_graph src = parse_ok(t[i].src), dst = parse_ok(t[i].dst);
        rdb_prover pv = {"z3", "4.8.15", t[i].millis, t[i].status};
        if (dst.n_inputs < src.n_inputs) dst.n_inputs = src.n_inputs;
        if (src.n_inputs < dst.n_inputs) src.n_inputs = dst.n_inputs;
        assert_int_equal(rdb_add_rule(f, &src, &dst, &pv), RDB_OK);
    }
    snprintf(f->gen.tool, sizeof f->gen.tool, "prove");
    snprintf(f->gen.version, sizeof f->gen.version, "0.1");
    f->gen.max_ops = 4;
    f->gen.seed = 0xfeedfacecafebeefull;
    f->gen.ops = OPS_SET_BIT(OP_MATMUL) | OPS_SET_BIT(OP_ONES);
    f->gen.shard_count = 4;
    f->gen.shard_have = 1u << 2;
    f->gen.counts.proved = n;
    f->gen.timings.wall_ms = 1234;
    f->gen.n_notes = 2;
    snprintf(f->gen.notes[0], RDB_NOTE_LEN, "timeout_ms=10000");
    snprintf(f->gen.notes[1], RDB_NOTE_LEN, "host=ci");
    return f;
}

static void fill_fp(uint8_t *fp, uint64_t seed, int values) {
    uint64_t s = seed;
    for (int k = 0; k < values; k++) {
        uint64_t v = ten_rand_next(&s) % MP_P;
        for (int b = 0; b < 8; b++) fp[8 * k + b] = (uint8_t)(v >> (8 * b));
    }
}

static rdb_file *candidates_file(const class_case *t, size_t n) {
    rdb_file *f = rdb_new(RDB_CANDIDATES);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) {
        uint8_t fp[64];
        rdb_class *c;
        fill_fp(fp, t[i].fp_seed, t[i].fp_values);
        assert_int_equal(rdb_add_class(f, fp, 8 * (size_t)t[i].fp_values, t[i].count, &c), RDB_OK);
        for (int m = 0; t[i].members[m]; m++) {
            rg_graph g = parse_ok(t[i].members[m]);
            assert_int_equal(rdb_class_add_member(c, &g), RDB_OK);
            while (c->n_shapes < g.n_inputs) /* shapes [3,3], [3,4], ... */
                c->shapes[c->n_shapes] = (ten_shape){2, {3, 3 + c->n_shapes}}, c->n_shapes++;
        }
    }
    snprintf(f->gen.tool, sizeof f->gen.tool, "synth");
    f->gen.max_ops = 3;
    f->gen.counts.graphs = 777;
    return f;
}

static void encode(const rdb_file *f, uint8_t **buf, size_t *len) {
    char err[RDB_ERRLEN] = "";
    rdb_status rc = rdb_write_mem(f, buf, len, err, sizeof err);
    if (rc != RDB_OK) fail_msg("rdb_write_mem: %s", err);
}

static rdb_file *decode(const uint8_t *buf, size_t len) {
    rdb_file *f = NULL;
    char err[RDB_ERRLEN] = "";
    rdb_status rc = rdb_read_mem(buf, len, &f, err, sizeof err);
    if (rc != RDB_OK) fail_msg("rdb_read_mem: %s", err);
    return f;
}

static void assert_same_bytes(const rdb_file *a, const rdb_file *b) {
    uint8_t *ba, *bb;
    size_t na, nb;
    encode(a, &ba, &na);
    encode(b, &bb, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(ba, bb, na);
    free(ba);
    free(bb);
}

static void assert_same_rules(const rdb_file *a, const rdb_file *b) {
    assert_int_equal(a->n_rules, b->n_rules);
    for (size_t i = 0; i < a->n_rules; i++) {
        const rdb_rule *x = &a->rules[i], *y = &b->rules[i];
        assert_int_equal(x->id, y->id);
        assert_true(rg_equal(&x->src, &y->src));
        assert_true(rg_equal(&x->dst, &y->dst));
        assert_int_equal(x->prover.status, y->prover.status);
        assert_int_equal(x->prover.millis, y->prover.millis);
        assert_string_equal(x->prover.name, y->prover.name);
        assert_string_equal(x->prover.version, y->prover.version);
    }
}

static void assert_same_classes(const rdb_file *a, const rdb_file *b) {
    assert_int_equal(a->n_classes, b->n_classes);
    for (size_t i = 0; i < a->n_classes; i++) {
        const rdb_class *x = &a->classes[i], *y = &b->classes[i];
        assert_int_equal(x->fp_len, y->fp_len);
        assert_memory_equal(x->fp, y->fp, x->fp_len);
        assert_int_equal(x->count, y->count);
        assert_int_equal(x->n_members, y->n_members);
        for (size_t m = 0; m < x->n_members; m++)
            assert_true(rg_equal(&x->members[m], &y->members[m]));
    }
}

static void assert_same_generator(const rdb_generator *a, const rdb_generator *b) {
    assert_string_equal(a->tool, b->tool);
    assert_string_equal(a->version, b->version);
    assert_int_equal(a->max_ops, b->max_ops);
    assert_int_equal(a->seed, b->seed);
    assert_int_equal(a->ops, b->ops);
    assert_int_equal(a->shard_count, b->shard_count);
    assert_int_equal(a->shard_have, b->shard_have);
    assert_memory_equal(&a->counts, &b->counts, sizeof a->counts);
    assert_memory_equal(&a->timings, &b->timings, sizeof a->timings);
    assert_int_equal(a->n_notes, b->n_notes);
    for (int k = 0; k < a->n_notes; k++) assert_string_equal(a->notes[k], b->notes[k]);
}

/* ================= rgraph ================= */

/* Every text in the tables parses, validates and formats back unchanged. */
static void test_rg_text_roundtrip(void **state) {
    (void)state;
    for (size_t i = 0; i < N_RULE_CASES; i++) {
        const char *texts[2] = {rule_cases[i].src, rule_cases[i].dst};
        for (int s = 0; s < 2; s++) {
            char buf[1024];
            rg_graph g = parse_ok(texts[s]);
            assert_int_equal(rg_validate(&g, NULL, 0), RG_OK);
            size_t n = rg_format(&g, buf, sizeof buf);
            assert_true(n < sizeof buf);
            if (strcmp(buf, texts[s]) != 0)
                fail_msg("%s: '%s' != '%s'", rule_cases[i].id, buf, texts[s]);
            rg_graph h = parse_ok(buf);
            assert_true(rg_equal(&g, &h));
            assert_int_equal(rg_hash(&g), rg_hash(&h));
        }
    }
}

/* rg_format behaves like snprintf on small buffers. */
static void test_rg_format_truncates(void **state) {
    (void)state;
    rg_graph g = parse_ok(rule_cases[0].src);
    char full[256], small[8];
    size_t n = rg_format(&g, full, sizeof full);
    assert_int_equal(n, strlen(full));
    assert_int_equal(rg_format(&g, small, sizeof small), n);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, full, sizeof small - 1);
    assert_int_equal(rg_format(&g, NULL, 0), n);
}

/* The parser shares identical subterms and node order is topological. */
static void test_rg_parse_shares(void **state) {
    (void)state;
    rg_graph g = parse_ok(rule_cases[10].src);
    assert_int_equal(g.n_nodes, 3); /* maxpool, split0, ewmul */
    assert_int_equal(g.n_inputs, 2);
    assert_int_equal(g.node[1].param[1], RG_SYM_SIZE(1, 3));
    assert_int_equal(RG_SYM_INPUT(g.node[1].param[1]), 1);
    assert_int_equal(RG_SYM_AXIS(g.node[1].param[1]), 3);
}

typedef struct {
    const char *id, *text;
} bad_text;

static const bad_text bad_texts[] = {
    {"P01 unknown op", "(frob x0)"},
    {"P02 missing paren", "(relu x0"},
    {"P03 input x8", "(relu x8)"},
    {"P04 too many params", "(relu 1 x0)"},
    {"P05 bad pad", "(conv2d 1 MAYBE NONE 1 x0 x1)"},
    {"P07 group symbol g4", "(conv2d 1 SAME NONE g4 x0 x1)"},
    {"P08 group symbol on a stride", "(conv2d g0 SAME NONE 1 x0 x1)"},
    {"P06 nine nodes", "(relu (relu (relu (relu (relu (relu (relu (relu (relu x0)))))))))"},
    {"P07 five outputs", "x0, x0, x0, x0, x0"},
    {"P08 dim where no size", "(concat (dim 0 x0) x0 x1)"},
    {"P09 dim axis 4", "(split0 0 (dim 4 x0) x0)"},
    {"P10 trailing junk", "(relu x0) x1"},
    {"P11 empty", ""},
    {"P12 long word", "(reluuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu x0)"},
};

static void test_rg_parse_rejects(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bad_texts / sizeof bad_texts[0]; i++) {
        rg_graph g;
        char err[RG_ERRLEN] = "";
        if (rg_parse(bad_texts[i].text, &g, err, sizeof err) != RG_EINVAL)
            fail_msg("%s: accepted '%s'", bad_texts[i].id, bad_texts[i].text);
        assert_true(err[0] != '\0');
    }
}

/* rg_validate: each row breaks a valid graph in one way. */
typedef struct {
    const char *id, *base, *expect; /* expect: a substring of the message */
    void (*breakit)(rg_graph *g);
} bad_graph;

static void b_missing_input(rg_graph *g) { g->node[0].in[0] = RG_IN(5); }
static void b_forward_ref(rg_graph *g) { g->node[0].in[0] = RG_NODE(1); }
static void b_self_ref(rg_graph *g) { g->node[0].in[0] = RG_NODE(0); }
static void b_cycle(rg_graph *g) { g->node[0].in[0] = RG_NODE(1); } /* node 1 uses node 0 */
static void b_ref_range(rg_graph *g) { g->node[0].in[0] = 200; }
static void b_op_range(rg_graph *g) { g->node[0].op = OP_COUNT; }
static void b_op_huge(rg_graph *g) { g->node[0].op = (ops_op)1000; }
static void b_pad(rg_graph *g) { g->node[0].param[1] = 7; }
static void b_stride0(rg_graph *g) { g->node[0].param[0] = 0; }
static void b_act(rg_graph *g) { g->node[0].param[2] = -1; }
static void b_groups(rg_graph *g) { g->node[0].param[3] = 0; }
static void b_kernel(rg_graph *g) { g->node[0].param[0] = OPS_KERNEL(3, 0); }
static void b_kernel_hi(rg_graph *g) { g->node[0].param[0] = 0x10303; }
static void b_axis(rg_graph *g) { g->node[0].param[0] = TEN_MAX_RANK; }
static void b_size0(rg_graph *g) { g->node[0].param[1] = 0; }
static void b_sym_input(rg_graph *g) { g->node[0].param[1] = RG_SYM_SIZE(3, 0); }
static void b_sym_min(rg_graph *g) { g->node[0].param[1] = INT32_MIN; }
static void b_sym_axis_param(rg_graph *g) { g->node[0].param[0] = RG_SYM_SIZE(0, 0); }
static void b_gsym_range(rg_graph *g) { g->node[0].param[3] = RG_SYM_GROUPS(RG_MAX_GSYMS); }
static void b_gsym_stride(rg_graph *g) { g->node[0].param[0] = RG_SYM_GROUPS(0); }
static void b_dead(rg_graph *g) { /* a second relu(x0) nobody uses */
    g->node[g->n_nodes].op = OP_RELU;
    g->node[g->n_nodes++].in[0] = RG_IN(0);
}
static void b_out_missing(rg_graph *g) { g->out[0] = RG_NODE(5); }
static void b_out_input(rg_graph *g) { g->out[0] = RG_IN(3); }
static void b_no_outputs(rg_graph *g) { g->n_outputs = 0; }
static void b_five_outputs(rg_graph *g) { g->n_outputs = 5; }
static void b_nine_nodes(rg_graph *g) { g->n_nodes = 9; }
static void b_nine_inputs(rg_graph *g) { g->n_inputs = 9; }
static void b_neg_inputs(rg_graph *g) { g->n_inputs = -1; }

static const bad_graph bad_graphs[] = {
    {"V01 ref to a missing input", "(relu x0)", "missing input", b_missing_input},
    {"V02 forward ref", "(relu (relu x0))", "not an earlier node", b_forward_ref},
    {"V03 self ref", "(relu x0)", "not an earlier node", b_self_ref},
    {"V04 two-node cycle", "(ewadd (relu x0) x1)", "not an earlier node", b_cycle},
    {"V05 ref out of range", "(relu x0)", "out of range", b_ref_range},
    {"V06 op OP_COUNT", "(relu x0)", "unknown", b_op_range},
    {"V07 op 1000", "(relu x0)", "unknown", b_op_huge},
    {"V08 pad 7", "(conv2d 1 SAME NONE 1 x0 x1)", "pad 7", b_pad},
    {"V09 stride 0", "(conv2d 1 SAME NONE 1 x0 x1)", "stride 0", b_stride0},
    {"V10 act -1", "(conv2d 1 SAME NONE 1 x0 x1)", "act -1", b_act},
    {"V11 groups 0", "(conv2d 1 SAME NONE 1 x0 x1)", "groups 0", b_groups},
    {"V12 kernel 3x0", "(avgpool 3x3 1 SAME x0)", "kernel", b_kernel},
    {"V13 kernel high bits", "(avgpool 3x3 1 SAME x0)", "kernel", b_kernel_hi},
    {"V14 axis 4", "(concat 0 x0 x1)", "axis 4", b_axis},
    {"V15 size 0", "(split0 0 1 x0)", "size 0", b_size0},
    {"V16 dim of a missing input", "(split0 0 1 x0)", "size", b_sym_input},
    {"V17 size INT32_MIN", "(split0 0 1 x0)", "size", b_sym_min},
    {"V18 symbolic axis", "(split0 0 1 x0)", "axis", b_sym_axis_param},
    {"V18b group symbol out of range", "(conv2d 1 SAME NONE 1 x0 x1)", "groups", b_gsym_range},
    {"V18c group symbol on a stride", "(conv2d 1 SAME NONE 1 x0 x1)", "stride", b_gsym_stride},
    {"V19 dead node", "(relu x0)", "dead", b_dead},
    {"V20 output names a missing node", "(relu x0)", "output 0", b_out_missing},
    {"V21 output names a missing input", "(relu x0)", "output 0", b_out_input},
    {"V22 no outputs", "(relu x0)", "outputs", b_no_outputs},
    {"V23 five outputs", "(relu x0)", "outputs", b_five_outputs},
    {"V24 nine nodes", "(relu x0)", "nodes", b_nine_nodes},
    {"V25 nine inputs", "(relu x0)", "inputs", b_nine_inputs},
    {"V26 negative inputs", "(relu x0)", "inputs", b_neg_inputs},
};

static void test_rg_validate_rejects(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bad_graphs / sizeof bad_graphs[0]; i++) {
        const bad_graph *t = &bad_graphs[i];
        rg_graph g = parse_ok(t->base);
        char err[RG_ERRLEN] = "";
        assert_int_equal(rg_validate(&g, NULL, 0), RG_OK);
        t->breakit(&g);
        if (rg_validate(&g, err, sizeof err) != RG_EINVAL) fail_msg("%s: accepted", t->id);
        if (!strstr(err, t->expect)) fail_msg("%s: message '%s' lacks '%s'", t->id, err, t->expect);
    }
}

/* Unused slots never affect equality or hashing. */
static void test_rg_equal_ignores_unused(void **state) {
    (void)state;
    rg_graph a = parse_ok("(relu (ewadd x0 x1))"), b = a;
    b.node[1].param[3] = 99;  /* relu has no params */
    b.node[1].in[1] = 7;      /* relu has one input */
    b.node[5].op = OP_MATMUL; /* beyond n_nodes */
    b.out[3] = 9;             /* beyond n_outputs */
    assert_true(rg_equal(&a, &b));
    assert_int_equal(rg_hash(&a), rg_hash(&b));
    b.node[0].in[1] = RG_IN(0);
    assert_false(rg_equal(&a, &b));
    assert_true(rg_compare(&a, &b) != 0);
}

/* rg_eval against itself: both sides of true rules agree on random inputs,
 * including a symbolic split; shapes are resolved from the inputs. */
typedef struct {
    const char *id, *src, *dst;
    int n;
    ten_shape in[3];
} eval_case;

static const eval_case eval_cases[] = {
    {"E01 matmul assoc", "(matmul x0 (matmul x1 x2))", "(matmul (matmul x0 x1) x2)", 3,
     {{2, {2, 3}}, {2, {3, 4}}, {2, {4, 2}}}},
    {"E02 split of concat", "(split0 1 (dim 1 x0) (concat 1 x0 x1))", "x0", 2,
     {{2, {2, 3}}, {2, {2, 5}}}},
    {"E03 split1 of concat", "(split1 1 (dim 1 x0) (concat 1 x0 x1))", "x1", 2,
     {{2, {2, 3}}, {2, {2, 5}}}},
    {"E04 transpose of matmul", "(transpose (matmul x0 x1))",
     "(matmul (transpose x1) (transpose x0))", 2, {{2, {2, 3}}, {2, {3, 4}}}},
    {"E05 relu conv fusion", "(relu (conv2d 1 SAME NONE 1 x0 x1))",
     "(conv2d 1 SAME RELU 1 x0 x1)", 2, {{4, {1, 2, 4, 4}}, {4, {3, 2, 3, 3}}}},
    /* the group count from the shapes: 4 (depthwise) and 2 */
    {"E06 depthwise convs summed", "(ewadd (conv2d 1 SAME NONE g0 x0 x1) (conv2d 1 SAME NONE g0 x0 x2))",
     "(conv2d 1 SAME NONE g0 x0 (ewadd x1 x2))", 3, {{4, {1, 4, 5, 5}}, {4, {4, 1, 3, 3}}, {4, {4, 1, 3, 3}}}},
    {"E07 grouped conv, 1x1 enlarged", "(conv2d 1 SAME NONE g0 x0 x1)",
     "(conv2d 1 SAME NONE g0 x0 (enlarge 3x3 x1))", 2, {{4, {1, 4, 5, 5}}, {4, {6, 2, 1, 1}}}},
};

static void eval_both(const eval_case *t, ten *a, ten *b) {
    rg_graph gs = parse_ok(t->src), gd = parse_ok(t->dst);
    ten in[3];
    uint64_t seed = 42;
    char err[RG_ERRLEN] = "";
    for (int i = 0; i < t->n; i++) {
        assert_int_equal(ten_alloc(&in[i], &t->in[i]), 0);
        ten_fill_random(&in[i], &seed);
    }
    if (rg_eval(&gs, in, a, err, sizeof err) != RG_OK) fail_msg("%s src: %s", t->id, err);
    if (rg_eval(&gd, in, b, err, sizeof err) != RG_OK) fail_msg("%s dst: %s", t->id, err);
    for (int i = 0; i < t->n; i++) ten_free(&in[i]);
}

static void test_rg_eval_agrees(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof eval_cases / sizeof eval_cases[0]; i++) {
        ten a, b;
        eval_both(&eval_cases[i], &a, &b);
        if (!ten_equal(&a, &b)) fail_msg("%s: sides differ", eval_cases[i].id);
        ten_free(&a);
        ten_free(&b);
    }
}

/* A false identity is told apart, and bad shapes give RG_ESHAPE. */
static void test_rg_eval_errors(void **state) {
    (void)state;
    eval_case wrong = {"E90 matmul does not commute", "(matmul x0 x1)", "(matmul x1 x0)", 2,
                       {{2, {3, 3}}, {2, {3, 3}}}};
    ten a, b, out[1];
    eval_both(&wrong, &a, &b);
    assert_false(ten_equal(&a, &b));
    ten_free(&a);
    ten_free(&b);

    rg_graph g = parse_ok("(matmul x0 x1)");
    ten_shape s[RG_MAX_REFS], in[2] = {{2, {2, 3}}, {2, {4, 5}}};
    char err[RG_ERRLEN] = "";
    assert_int_equal(rg_infer_shapes(&g, in, s, err, sizeof err), RG_ESHAPE);
    assert_non_null(strstr(err, "node 0 (matmul)"));

    /* one group symbol, two counts: 4 / 1 and 4 / 2 */
    g = parse_ok("(ewadd (conv2d 1 SAME NONE g0 x0 x1) (conv2d 1 SAME NONE g0 x0 x2))");
    ten_shape gin[3] = {{4, {1, 4, 5, 5}}, {4, {4, 1, 3, 3}}, {4, {4, 2, 3, 3}}};
    assert_int_equal(rg_infer_shapes(&g, gin, s, err, sizeof err), RG_ESHAPE);
    assert_non_null(strstr(err, "group count"));
    int32_t p[OPS_MAX_PARAMS];
    assert_int_equal(rg_param_value(&g, 0, 3, gin, &p[0]), RG_ESHAPE); /* needs shapes */

    /* (dim 2 x0) on a rank-2 input cannot resolve */
    g = parse_ok("(split0 0 (dim 2 x0) x0)");
    ten x;
    assert_int_equal(ten_alloc(&x, &in[0]), 0);
    memset(x.data, 0, 6 * sizeof *x.data);
    assert_int_equal(rg_eval(&g, &x, out, err, sizeof err), RG_ESHAPE);
    assert_non_null(strstr(err, "dim 2 x0"));
    ten_free(&x);
}

/* ================= mpread ================= */

static void test_mpr_ints(void **state) {
    (void)state;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    const int64_t ints[] = {0, 1, 127, 128, 255, 256, 65535, 65536, -1, -32, -33, -128,
                            -129, -32768, -32769, INT32_MIN, INT64_MIN, INT64_MAX};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) msgpack_pack_int64(&pk, ints[i]);
    msgpack_pack_uint64(&pk, UINT64_MAX);
    msgpack_pack_double(&pk, 2.5);
    msgpack_pack_float(&pk, -0.5f);
    msgpack_pack_nil(&pk);
    msgpack_pack_true(&pk);
    mpr_cursor c;
    mpr_init(&c, (const uint8_t *)sb.data, sb.size);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int64_t v;
        assert_int_equal(mpr_int(&c, &v), MPR_OK);
        assert_true(v == ints[i]);
    }
    mpr_cursor save = c;
    int64_t v;
    uint64_t u;
    double d;
    int b;
    assert_int_equal(mpr_int(&c, &v), MPR_ERANGE); /* UINT64_MAX */
    c = save;
    assert_int_equal(mpr_uint(&c, &u), MPR_OK);
    assert_true(u == UINT64_MAX);
    assert_int_equal(mpr_double(&c, &d), MPR_OK);
    assert_true(d == 2.5);
    assert_int_equal(mpr_double(&c, &d), MPR_OK);
    assert_true(d == -0.5);
    assert_int_equal(mpr_nil(&c), MPR_OK);
    assert_int_equal(mpr_bool(&c, &b), MPR_OK);
    assert_int_equal(b, 1);
    assert_int_equal(mpr_left(&c), 0);
    assert_int_equal(mpr_nil(&c), MPR_ETRUNC);
    msgpack_sbuffer_destroy(&sb);
}

/* Sticky errors with offsets; counts checked against the bytes left. */
static void test_mpr_hostile(void **state) {
    (void)state;
    const uint8_t neg[] = {0xff};                            /* -1 */
    const uint8_t arr[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0}; /* array32 of 2^32-1 */
    const uint8_t map[] = {0x83, 0xa1, 'a', 1, 0xa1};        /* fixmap 3: 4 bytes left < 6 */
    const uint8_t str[] = {0xdb, 0x7f, 0xff, 0xff, 0xff, 'x'};
    const uint8_t bad[] = {0x01, 0xc1};
    const uint8_t nest[] = {0x92, 0x81, 0xa1, 'k', 0x91, 0xc0, 0xc4, 0x01, 0x00, 0x07};
    mpr_cursor c;
    uint64_t u;
    uint32_t n;
    const char *s;
    mpr_init(&c, neg, sizeof neg);
    assert_int_equal(mpr_uint(&c, &u), MPR_ERANGE);
    mpr_init(&c, arr, sizeof arr);
    assert_int_equal(mpr_array(&c, &n), MPR_ECOUNT);
    assert_int_equal(c.err_pos, 0);
    assert_int_equal(mpr_uint(&c, &u), MPR_ECOUNT); /* sticky */
    mpr_init(&c, map, sizeof map);
    assert_int_equal(mpr_map(&c, &n), MPR_ECOUNT);
    mpr_init(&c, str, sizeof str);
    assert_int_equal(mpr_str(&c, &s, &n), MPR_ECOUNT);
    mpr_init(&c, bad, sizeof bad);
    assert_int_equal(mpr_uint(&c, &u), MPR_OK);
    assert_int_equal(mpr_skip(&c), MPR_EBAD);
    assert_int_equal(c.err_pos, 1);
    mpr_init(&c, nest, sizeof nest);
    assert_int_equal(mpr_skip(&c), MPR_OK); /* [{"k": [nil]}, bin 1] */
    assert_int_equal(mpr_uint(&c, &u), MPR_OK);
    assert_int_equal(u, 7);
    mpr_init(&c, nest, sizeof nest);
    assert_int_equal(mpr_map(&c, &n), MPR_ETYPE);
}

/* ================= ruledb: round trips ================= */

static void test_rdb_roundtrip_rules(void **state) {
    (void)state;
    rdb_file *f = rules_file(rule_cases, N_RULE_CASES), *g;
    uint8_t *buf;
    size_t len;
    encode(f, &buf, &len);
    g = decode(buf, len);
    assert_int_equal(g->kind, RDB_RULES);
    assert_memory_equal(g->digest, f->digest, 16);
    assert_same_rules(f, g);
    assert_same_generator(&f->gen, &g->gen);
    assert_same_bytes(f, g);
    free(buf);
    rdb_free(f);
    rdb_free(g);
}

static void test_rdb_roundtrip_candidates(void **state) {
    (void)state;
    rdb_file *f = candidates_file(class_cases, N_CLASS_CASES), *g;
    uint8_t *buf;
    size_t len;
    encode(f, &buf, &len);
    g = decode(buf, len);
    assert_int_equal(g->kind, RDB_CANDIDATES);
    assert_same_classes(f, g);
    assert_same_generator(&f->gen, &g->gen);
    free(buf);
    rdb_free(f);
    rdb_free(g);
}

/* An empty rules file and a file at the limits are fine too. */
static void test_rdb_roundtrip_edges(void **state) {
    (void)state;
    rdb_file *f = rdb_new(RDB_RULES), *g;
    uint8_t *buf;
    size_t len;
    encode(f, &buf, &len);
    g = decode(buf, len);
    assert_int_equal(g->n_rules, 0);
    free(buf);
    rdb_free(g);
    f->gen.n_notes = RDB_MAX_NOTES;
    for (int k = 0; k < RDB_MAX_NOTES; k++) memset(f->gen.notes[k], 'a' + k, RDB_NOTE_LEN - 1);
    memset(f->gen.tool, 't', RDB_NAME_LEN - 1);
    f->gen.shard_count = 64;
    f->gen.shard_have = UINT64_MAX;
    encode(f, &buf, &len);
    g = decode(buf, len);
    assert_same_generator(&f->gen, &g->gen);
    free(buf);
    rdb_free(f);
    rdb_free(g);
}

/* ================= ruledb: damaged files ================= */

/* Every proper prefix is refused as truncated or corrupt, never accepted. */
static void check_prefixes(const rdb_file *f) {
    uint8_t *buf;
    size_t len;
    encode(f, &buf, &len);
    for (size_t n = 0; n < len; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees any overread */
        rdb_file *g = (rdb_file *)1;
        char err[RDB_ERRLEN] = "";
        memcpy(copy, buf, n);
        rdb_status rc = rdb_read_mem(copy, n, &g, err, sizeof err);
        if (rc != RDB_ETRUNC && rc != RDB_ECORRUPT)
            fail_msg("prefix %zu of %zu: status %d (%s)", n, len, rc, err);
        assert_null(g);
        assert_true(err[0] != '\0');
        free(copy);
    }
    free(buf);
}

static void test_rdb_every_truncation(void **state) {
    (void)state;
    rdb_file *r = rules_file(rule_cases, N_RULE_CASES);
    rdb_file *c = candidates_file(class_cases, N_CLASS_CASES);
    check_prefixes(r);
    check_prefixes(c);
    rdb_free(r);
    rdb_free(c);
}

/* Flip bits of every byte: no crash; an accepted file re-validates and
 * round-trips. */
static int flip_all(const rdb_file *f) {
    static const uint8_t masks[] = {0x01, 0x02, 0x10, 0x80, 0xff};
    uint8_t *buf;
    size_t len;
    int accepted = 0;
    encode(f, &buf, &len);
    for (size_t pos = 0; pos < len; pos++)
        for (size_t m = 0; m < sizeof masks; m++) {
            rdb_file *g = NULL;
            char err[RDB_ERRLEN];
            buf[pos] ^= masks[m];
            if (rdb_read_mem(buf, len, &g, err, sizeof err) == RDB_OK) {
                uint8_t *b2;
                size_t n2;
                accepted++;
                assert_int_equal(rdb_validate(g, err, sizeof err), RDB_OK);
                encode(g, &b2, &n2);
                rdb_free(decode(b2, n2));
                free(b2);
            }
            rdb_free(g);
            buf[pos] ^= masks[m];
        }
    free(buf);
    return accepted;
}

static void test_rdb_every_byte_flip(void **state) {
    (void)state;
    rdb_file *r = rules_file(rule_cases, N_RULE_CASES);
    rdb_file *c = candidates_file(class_cases, N_CLASS_CASES);
    int a = flip_all(r) + flip_all(c);
    print_message("# %d of the flipped files were still valid\n", a);
    rdb_free(r);
    rdb_free(c);
}

static void test_rdb_wrong_digest(void **state) {
    (void)state;
    rdb_file *f = rules_file(rule_cases, 2), *g = NULL;
    uint8_t *buf;
    size_t len;
    char err[RDB_ERRLEN] = "";
    f->digest[5] ^= 0x40;
    encode(f, &buf, &len);
    assert_int_equal(rdb_read_mem(buf, len, &g, err, sizeof err), RDB_EDIGEST);
    assert_null(g);
    assert_non_null(strstr(err, "other opspecs"));
    free(buf);
    rdb_free(f);
}

/* ---- hand-made hostile files ---- */

static void pk_s(msgpack_packer *pk, const char *s) {
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

/* The top level up to the rules/classes key, as the writer makes it but
 * with a chosen version and map size. */
static void pk_head(msgpack_packer *pk, uint64_t version, int rules) {
    uint8_t d[16];
    ops_digest(d);
    msgpack_pack_map(pk, 6);
    pk_s(pk, "magic");
    pk_s(pk, "tasodb");
    pk_s(pk, "version");
    msgpack_pack_uint64(pk, version);
    pk_s(pk, "kind");
    pk_s(pk, rules ? "rules" : "candidates");
    pk_s(pk, "opspecs");
    msgpack_pack_bin(pk, 16);
    msgpack_pack_bin_body(pk, d, 16);
    pk_s(pk, "generator");
    msgpack_pack_map(pk, 0);
    pk_s(pk, rules ? "rules" : "classes");
}

/* A one-node graph: op(params; refs), output = the node. */
static void pk_graph1(msgpack_packer *pk, const char *op, int np, const int64_t *p, int nr,
                      const uint64_t *refs, uint64_t n_inputs) {
    msgpack_pack_map(pk, 3);
    pk_s(pk, "inputs");
    msgpack_pack_uint64(pk, n_inputs);
    pk_s(pk, "nodes");
    msgpack_pack_array(pk, 1);
    msgpack_pack_array(pk, 3);
    pk_s(pk, op);
    msgpack_pack_array(pk, (size_t)np);
    for (int k = 0; k < np; k++) msgpack_pack_int64(pk, p[k]);
    msgpack_pack_array(pk, (size_t)nr);
    for (int k = 0; k < nr; k++) msgpack_pack_uint64(pk, refs[k]);
    pk_s(pk, "outputs");
    msgpack_pack_array(pk, 1);
    msgpack_pack_uint64(pk, n_inputs);
}

static const uint64_t ref0[] = {0}, ref01[] = {0, 1}, ref10[] = {1, 0};

static void pk_relu(msgpack_packer *pk) { pk_graph1(pk, "relu", 0, NULL, 1, ref0, 1); }

static void pk_prover(msgpack_packer *pk, const char *status) {
    pk_s(pk, "prover");
    msgpack_pack_map(pk, 4);
    pk_s(pk, "name");
    pk_s(pk, "z3");
    pk_s(pk, "version");
    pk_s(pk, "4");
    pk_s(pk, "millis");
    msgpack_pack_uint64(pk, 1);
    pk_s(pk, "status");
    pk_s(pk, status);
}

/* One rule {id, src, dst = relu x0, prover}; src written by fn. */
static void pk_rule_with(msgpack_packer *pk, uint64_t id, void (*src)(msgpack_packer *)) {
    msgpack_pack_map(pk, 4);
    pk_s(pk, "id");
    msgpack_pack_uint64(pk, id);
    pk_s(pk, "src");
    src(pk);
    pk_s(pk, "dst");
    pk_relu(pk);
    pk_prover(pk, "proved");
}

static void h_huge_rules(msgpack_packer *pk) {
    pk_head(pk, 1, 1);
    msgpack_pack_array(pk, UINT32_MAX);
    msgpack_pack_nil(pk);
}
static void h_huge_top(msgpack_packer *pk) {
    msgpack_pack_map(pk, UINT32_MAX);
    for (int k = 0; k < 15; k++) msgpack_pack_nil(pk);
}
static void h_huge_top_array(msgpack_packer *pk) {
    msgpack_pack_array(pk, UINT32_MAX);
    for (int k = 0; k < 15; k++) msgpack_pack_nil(pk);
}
static void h_huge_members(msgpack_packer *pk) {
    uint8_t fp[8] = {1};
    pk_head(pk, 1, 0);
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 4);
    pk_s(pk, "fingerprint");
    msgpack_pack_bin(pk, 8);
    msgpack_pack_bin_body(pk, fp, 8);
    pk_s(pk, "shapes");
    msgpack_pack_array(pk, 1);
    msgpack_pack_array(pk, 2);
    msgpack_pack_uint64(pk, 3);
    msgpack_pack_uint64(pk, 3);
    pk_s(pk, "members");
    msgpack_pack_array(pk, UINT32_MAX);
    pk_relu(pk);
}
static void h_huge_string(msgpack_packer *pk) {
    static const uint8_t str32[] = {0xdb, 0xff, 0xff, 0xff, 0xf0};
    pk_head(pk, 1, 1);
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 4);
    pk_s(pk, "id");
    msgpack_pack_uint64(pk, 0);
    pk_s(pk, "src");
    msgpack_pack_map(pk, 3);
    pk_s(pk, "nodes");
    msgpack_pack_array(pk, 1);
    msgpack_pack_array(pk, 3);
    msgpack_sbuffer_write(pk->data, (const char *)str32, sizeof str32);
}
static void s_relu_arity2(msgpack_packer *pk) { pk_graph1(pk, "relu", 0, NULL, 2, ref01, 2); }
static void s_conv_3params(msgpack_packer *pk) {
    static const int64_t p[] = {1, 0, 0};
    pk_graph1(pk, "conv2d", 3, p, 2, ref01, 2);
}
static void s_unknown_op(msgpack_packer *pk) { pk_graph1(pk, "frobnicate", 0, NULL, 1, ref0, 1); }
static void s_bad_pad(msgpack_packer *pk) {
    static const int64_t p[] = {1, 5, 0, 1};
    pk_graph1(pk, "conv2d", 4, p, 2, ref01, 2);
}
static void s_param_64bit(msgpack_packer *pk) {
    static const int64_t p[] = {0, (int64_t)1 << 40};
    pk_graph1(pk, "split0", 2, p, 1, ref0, 1);
}
static void s_forward_ref(msgpack_packer *pk) {
    static const uint64_t self[] = {1}; /* value 1 with 1 input = node 0 itself */
    pk_graph1(pk, "relu", 0, NULL, 1, self, 1);
}
static void s_ref_far(msgpack_packer *pk) {
    static const uint64_t far[] = {9};
    pk_graph1(pk, "relu", 0, NULL, 1, far, 1);
}
static void s_nine_inputs(msgpack_packer *pk) { pk_graph1(pk, "relu", 0, NULL, 1, ref0, 9); }
static void s_two_inputs(msgpack_packer *pk) { pk_graph1(pk, "ewadd", 0, NULL, 2, ref10, 2); }
static void s_extra_key(msgpack_packer *pk) {
    msgpack_pack_map(pk, 4);
    pk_s(pk, "shapes");
    msgpack_pack_nil(pk);
    pk_s(pk, "inputs");
    msgpack_pack_uint64(pk, 1);
    pk_s(pk, "nodes");
    msgpack_pack_array(pk, 0);
    pk_s(pk, "outputs");
    msgpack_pack_array(pk, 1);
    msgpack_pack_uint64(pk, 0);
}
static void s_dup_key(msgpack_packer *pk) {
    msgpack_pack_map(pk, 3);
    pk_s(pk, "inputs");
    msgpack_pack_uint64(pk, 1);
    pk_s(pk, "inputs");
    msgpack_pack_uint64(pk, 1);
    pk_s(pk, "outputs");
    msgpack_pack_array(pk, 1);
    msgpack_pack_uint64(pk, 0);
}
static void s_missing_key(msgpack_packer *pk) {
    msgpack_pack_map(pk, 2);
    pk_s(pk, "inputs");
    msgpack_pack_uint64(pk, 1);
    pk_s(pk, "outputs");
    msgpack_pack_array(pk, 1);
    msgpack_pack_uint64(pk, 0);
}
/* Keys in another order than the writer's: accepted. */
static void s_reordered(msgpack_packer *pk) {
    msgpack_pack_map(pk, 3);
    pk_s(pk, "outputs");
    msgpack_pack_array(pk, 1);
    msgpack_pack_uint64(pk, 1);
    pk_s(pk, "nodes");
    msgpack_pack_array(pk, 1);
    msgpack_pack_array(pk, 3);
    pk_s(pk, "relu");
    msgpack_pack_array(pk, 0);
    msgpack_pack_array(pk, 1);
    msgpack_pack_uint64(pk, 0);
    pk_s(pk, "inputs");
    msgpack_pack_uint64(pk, 1);
}

#define RULE_FILE(name, fn)                                                                   \
    static void name(msgpack_packer *pk) {                                                    \
        pk_head(pk, 1, 1);                                                                    \
        msgpack_pack_array(pk, 1);                                                            \
        pk_rule_with(pk, 0, fn);                                                              \
    }
RULE_FILE(h_arity, s_relu_arity2)
RULE_FILE(h_nparams, s_conv_3params)
RULE_FILE(h_unknown_op, s_unknown_op)
RULE_FILE(h_bad_pad, s_bad_pad)
RULE_FILE(h_param_64bit, s_param_64bit)
RULE_FILE(h_forward_ref, s_forward_ref)
RULE_FILE(h_ref_far, s_ref_far)
RULE_FILE(h_nine_inputs, s_nine_inputs)
RULE_FILE(h_input_mismatch, s_two_inputs)
RULE_FILE(h_extra_key, s_extra_key)
RULE_FILE(h_dup_key, s_dup_key)
RULE_FILE(h_missing_key, s_missing_key)
RULE_FILE(h_reordered, s_reordered)

static void h_version2(msgpack_packer *pk) {
    pk_head(pk, 2, 1);
    msgpack_pack_nil(pk); /* whatever v2 holds: not our business */
}
static void h_version0(msgpack_packer *pk) {
    pk_head(pk, 0, 1);
    msgpack_pack_array(pk, 0);
}
static void h_trailing(msgpack_packer *pk) {
    pk_head(pk, 1, 1);
    msgpack_pack_array(pk, 0);
    msgpack_pack_nil(pk);
}
static void h_magic(msgpack_packer *pk) {
    msgpack_pack_map(pk, 6);
    pk_s(pk, "magic");
    pk_s(pk, "tasodc");
}
static void h_not_map(msgpack_packer *pk) { pk_s(pk, "hello"); }
static void h_ids_order(msgpack_packer *pk) {
    pk_head(pk, 1, 1);
    msgpack_pack_array(pk, 2);
    pk_rule_with(pk, 5, pk_relu);
    pk_rule_with(pk, 5, pk_relu);
}
static void h_status(msgpack_packer *pk) {
    pk_head(pk, 1, 1);
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 4);
    pk_s(pk, "id");
    msgpack_pack_uint64(pk, 0);
    pk_s(pk, "src");
    pk_relu(pk);
    pk_s(pk, "dst");
    pk_relu(pk);
    pk_prover(pk, "probably");
}
static void h_fp_residue(msgpack_packer *pk) {
    uint8_t fp[8];
    memset(fp, 0xff, 8);
    pk_head(pk, 1, 0);
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 4);
    pk_s(pk, "fingerprint");
    msgpack_pack_bin(pk, 8);
    msgpack_pack_bin_body(pk, fp, 8);
    pk_s(pk, "shapes");
    msgpack_pack_array(pk, 1);
    msgpack_pack_array(pk, 2);
    msgpack_pack_uint64(pk, 3);
    msgpack_pack_uint64(pk, 3);
    pk_s(pk, "members");
    msgpack_pack_array(pk, 1);
    pk_relu(pk);
    pk_s(pk, "count");
    msgpack_pack_uint64(pk, 1);
}
/* A one-class candidates file whose relu member has one input and whose
 * shapes list holds n_shapes copies of [dim, 3]. */
static void pk_class_shapes(msgpack_packer *pk, int n_shapes, uint64_t dim) {
    uint8_t fp[8] = {1};
    pk_head(pk, 1, 0);
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 4);
    pk_s(pk, "fingerprint");
    msgpack_pack_bin(pk, 8);
    msgpack_pack_bin_body(pk, fp, 8);
    pk_s(pk, "shapes");
    msgpack_pack_array(pk, (size_t)n_shapes);
    for (int k = 0; k < n_shapes; k++) {
        msgpack_pack_array(pk, 2);
        msgpack_pack_uint64(pk, dim);
        msgpack_pack_uint64(pk, 3);
    }
    pk_s(pk, "members");
    msgpack_pack_array(pk, 1);
    pk_relu(pk);
    pk_s(pk, "count");
    msgpack_pack_uint64(pk, 1);
}
static void h_shape_dim0(msgpack_packer *pk) { pk_class_shapes(pk, 1, 0); }
static void h_shape_missing(msgpack_packer *pk) { pk_class_shapes(pk, 0, 3); }
static void h_shape_huge(msgpack_packer *pk) { pk_class_shapes(pk, 1, 1ull << 40); }
static void h_gen_unknown(msgpack_packer *pk) {
    uint8_t d[16];
    ops_digest(d);
    msgpack_pack_map(pk, 6);
    pk_s(pk, "magic");
    pk_s(pk, "tasodb");
    pk_s(pk, "version");
    msgpack_pack_uint64(pk, 1);
    pk_s(pk, "kind");
    pk_s(pk, "rules");
    pk_s(pk, "opspecs");
    msgpack_pack_bin(pk, 16);
    msgpack_pack_bin_body(pk, d, 16);
    pk_s(pk, "generator");
    msgpack_pack_map(pk, 2);
    pk_s(pk, "future_field");
    msgpack_pack_array(pk, 2);
    msgpack_pack_map(pk, 1);
    pk_s(pk, "x");
    msgpack_pack_double(pk, 1.5);
    msgpack_pack_bin(pk, 0);
    pk_s(pk, "tool");
    pk_s(pk, "someone");
    pk_s(pk, "rules");
    msgpack_pack_array(pk, 0);
}

typedef struct {
    const char *id;
    void (*build)(msgpack_packer *pk);
    rdb_status expect;
    const char *msg; /* substring of the message ("" for RDB_OK) */
} hostile_case;

static const hostile_case hostile_cases[] = {
    {"H01 rules array of 2^32-1", h_huge_rules, RDB_ETRUNC, "rules"},
    {"H02 top-level map of 2^32-1 pairs", h_huge_top, RDB_ETRUNC, "byte 0"},
    {"H03 top-level array of 2^32-1", h_huge_top_array, RDB_ETRUNC, "byte 0"},
    {"H04 members array of 2^32-1", h_huge_members, RDB_ETRUNC, "classes[0].members"},
    {"H05 str32 of 4 GB", h_huge_string, RDB_ETRUNC, "nodes[0]"},
    {"H06 relu with 2 inputs", h_arity, RDB_ECORRUPT, "rules[0].src.nodes[0]"},
    {"H07 conv2d with 3 params", h_nparams, RDB_ECORRUPT, "rules[0].src.nodes[0]"},
    {"H08 unknown operator", h_unknown_op, RDB_ECORRUPT, "unknown operator 'frobnicate'"},
    {"H09 pad 5", h_bad_pad, RDB_ECORRUPT, "pad 5 invalid"},
    {"H10 parameter beyond int32", h_param_64bit, RDB_ECORRUPT, "int32"},
    {"H11 self reference", h_forward_ref, RDB_ECORRUPT, "not an earlier node"},
    {"H12 ref beyond the nodes", h_ref_far, RDB_ECORRUPT, "rules[0].src"},
    {"H13 nine inputs", h_nine_inputs, RDB_ECORRUPT, "rules[0].src.inputs"},
    {"H14 src and dst inputs differ", h_input_mismatch, RDB_ECORRUPT, "rules[0]"},
    {"H15 unknown key in a graph", h_extra_key, RDB_ECORRUPT, "unknown key 'shapes'"},
    {"H16 duplicate key", h_dup_key, RDB_ECORRUPT, "duplicate key 'inputs'"},
    {"H17 missing key", h_missing_key, RDB_ECORRUPT, "missing key 'nodes'"},
    {"H18 keys reordered", h_reordered, RDB_OK, ""},
    {"H19 version 2", h_version2, RDB_EVERSION, "version 2"},
    {"H20 version 0", h_version0, RDB_EVERSION, "version 0"},
    {"H21 trailing bytes", h_trailing, RDB_ECORRUPT, "trailing"},
    {"H22 wrong magic", h_magic, RDB_ECORRUPT, "not a tasodb file"},
    {"H23 not a map", h_not_map, RDB_ECORRUPT, "not a tasodb file"},
    {"H24 ids not increasing", h_ids_order, RDB_ECORRUPT, "id 5"},
    {"H25 unknown proof status", h_status, RDB_ECORRUPT, "unknown status 'probably'"},
    {"H26 fingerprint value >= p", h_fp_residue, RDB_ECORRUPT, "residue"},
    {"H27 unknown generator keys skipped", h_gen_unknown, RDB_OK, ""},
    {"H28 input shape with a zero dim", h_shape_dim0, RDB_ECORRUPT, "invalid shape"},
    {"H29 member inputs beyond the shapes", h_shape_missing, RDB_ECORRUPT, "1 inputs but 0 shapes"},
    {"H30 input dim beyond 65536", h_shape_huge, RDB_ECORRUPT, "out of range"},
};

static void test_rdb_hostile(void **state) {
    const hostile_case *t = *state;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    rdb_file *f = NULL;
    char err[RDB_ERRLEN] = "";
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    t->build(&pk);
    /* an exact-size copy, so ASan catches any read past the end */
    uint8_t *buf = malloc(sb.size);
    memcpy(buf, sb.data, sb.size);
    rdb_status rc = rdb_read_mem(buf, sb.size, &f, err, sizeof err);
    if (rc != t->expect) fail_msg("%s: status %d, expected %d (%s)", t->id, rc, t->expect, err);
    if (!strstr(err, t->msg)) fail_msg("%s: message '%s' lacks '%s'", t->id, err, t->msg);
    if (rc == RDB_OK) assert_int_equal(rdb_validate(f, NULL, 0), RDB_OK);
    else assert_null(f);
    rdb_free(f);
    free(buf);
    msgpack_sbuffer_destroy(&sb);
}

/* ================= merge and diff ================= */

/* Overlapping shards: same fingerprints with different members, a
 * duplicate member, classes only on one side. */
static const class_case shard_a[] = {
    {1, 1, 2, {"(ewadd x0 x1)", "(ewadd x1 x0)", NULL}},
    {3, 4, 3, {"(matmul x0 (matmul x1 x2))", NULL}},
    {9, 2, 1, {"(relu (split0 0 2 x0)), (relu (split1 0 2 x0))", NULL}},
};
static const class_case shard_b[] = {
    {3, 4, 4, {"(matmul (matmul x0 x1) x2)", "(matmul x0 (matmul x1 x2))", NULL}},
    {5, 1, 1, {"(relu x0)", NULL}},
    {1, 1, 7, {"(ewadd x1 x0)", NULL}},
};
static const class_case shard_c[] = {
    {7, 3, 2, {"(transpose (transpose x0))", "x0", NULL}},
    {5, 1, 2, {"(relu (relu x0))", NULL}},
};

static rdb_file *merged(const rdb_file *a, const rdb_file *b) {
    rdb_file *m = NULL;
    char err[RDB_ERRLEN] = "";
    if (rdb_merge(a, b, &m, err, sizeof err) != RDB_OK) fail_msg("merge: %s", err);
    return m;
}

static void test_merge_candidates_laws(void **state) {
    (void)state;
    rdb_file *a = candidates_file(shard_a, 3), *b = candidates_file(shard_b, 3);
    rdb_file *c = candidates_file(shard_c, 2);
    a->gen.shard_count = b->gen.shard_count = c->gen.shard_count = 3;
    a->gen.shard_have = 1, b->gen.shard_have = 2, c->gen.shard_have = 4;
    rdb_file *ab = merged(a, b), *ba = merged(b, a);
    assert_same_bytes(ab, ba); /* commutative */
    rdb_file *ab_c = merged(ab, c), *bc = merged(b, c), *a_bc = merged(a, bc);
    assert_same_bytes(ab_c, a_bc); /* associative: shards in any order */
    assert_int_equal(ab_c->gen.shard_have, 7);
    /* content: fingerprint 1 has both ewadd members once, count 2 + 7 */
    assert_int_equal(ab->n_classes, 4);
    for (size_t i = 1; i < ab->n_classes; i++)
        assert_true(memcmp(ab->classes[i - 1].fp, ab->classes[i].fp, 8) <= 0);
    uint8_t fp1[8];
    fill_fp(fp1, 1, 1);
    int found = 0;
    for (size_t i = 0; i < ab->n_classes; i++)
        if (ab->classes[i].fp_len == 8 && memcmp(ab->classes[i].fp, fp1, 8) == 0) {
            found = 1;
            assert_int_equal(ab->classes[i].count, 9);
            assert_int_equal(ab->classes[i].n_members, 2);
        }
    assert_true(found);
    /* idempotent on content: merging a file with itself keeps its classes
     * and members; only counts (graphs seen) add up */
    rdb_file *abab = merged(ab, ab);
    assert_int_equal(abab->n_classes, ab->n_classes);
    for (size_t i = 0; i < ab->n_classes; i++) {
        assert_int_equal(abab->classes[i].count, 2 * ab->classes[i].count);
        abab->classes[i].count = ab->classes[i].count;
    }
    assert_same_classes(abab, ab);
    rdb_delta d;
    assert_int_equal(rdb_diff(abab, ab, &d), RDB_OK);
    assert_int_equal(d.n_only_a + d.n_only_b, 0);
    rdb_delta_free(&d);
    rdb_file *all[] = {a, b, c, ab, ba, ab_c, bc, a_bc, abab};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) rdb_free(all[i]);
}

static void test_merge_rules_laws(void **state) {
    (void)state;
    rdb_file *a = rules_file(rule_cases, 6), *b = rules_file(rule_cases + 4, N_RULE_CASES - 4);
    b->rules[0].prover.millis = 1; /* R05 faster in b: b's record wins */
    snprintf(b->gen.tool, sizeof b->gen.tool, "prove2");
    rdb_file *ab = merged(a, b), *ba = merged(b, a);
    assert_same_bytes(ab, ba);
    assert_int_equal(ab->n_rules, N_RULE_CASES);
    for (size_t i = 0; i < ab->n_rules; i++) assert_int_equal(ab->rules[i].id, i);
    assert_string_equal(ab->gen.tool, "mixed");
    rg_graph r05 = parse_ok(rule_cases[4].src);
    for (size_t i = 0; i < ab->n_rules; i++)
        if (rg_equal(&ab->rules[i].src, &r05)) assert_int_equal(ab->rules[i].prover.millis, 1);
    rdb_file *abab = merged(ab, ab);
    abab->gen.counts = ab->gen.counts;
    abab->gen.timings = ab->gen.timings;
    assert_same_bytes(abab, ab); /* idempotent */
    rdb_file *cand = candidates_file(class_cases, 1), *m = NULL;
    char err[RDB_ERRLEN];
    assert_int_equal(rdb_merge(a, cand, &m, err, sizeof err), RDB_EINVAL);
    assert_null(m);
    rdb_file *all[] = {a, b, ab, ba, abab, cand};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) rdb_free(all[i]);
}

static void test_diff(void **state) {
    (void)state;
    rdb_file *a = rules_file(rule_cases, 5), *b = rules_file(rule_cases + 2, 5);
    rdb_delta d;
    /* same rules in another order with other ids: no difference */
    rdb_file *rev = rdb_new(RDB_RULES);
    for (size_t i = a->n_rules; i-- > 0;)
        assert_int_equal(
            rdb_add_rule(rev, &a->rules[i].src, &a->rules[i].dst, &a->rules[i].prover), RDB_OK);
    assert_int_equal(rdb_diff(a, rev, &d), RDB_OK);
    assert_int_equal(d.n_only_a + d.n_only_b, 0);
    rdb_delta_free(&d);
    /* a = R01..R05, b = R03..R07 */
    assert_int_equal(rdb_diff(a, b, &d), RDB_OK);
    assert_int_equal(d.n_only_a, 2);
    assert_int_equal(d.only_a[0], 0);
    assert_int_equal(d.only_a[1], 1);
    assert_int_equal(d.n_only_b, 2);
    assert_int_equal(d.only_b[0], 3);
    assert_int_equal(d.only_b[1], 4);
    rdb_delta_free(&d);
    /* classes: a member more makes a class differ */
    rdb_file *c1 = candidates_file(class_cases, 2), *c2 = candidates_file(class_cases, 2);
    rg_graph extra = parse_ok("(ewadd x0 (relu x1))");
    assert_int_equal(rdb_class_add_member(&c2->classes[0], &extra), RDB_OK);
    assert_int_equal(rdb_diff(c1, c2, &d), RDB_OK);
    assert_int_equal(d.n_only_a, 1);
    assert_int_equal(d.n_only_b, 1);
    assert_int_equal(d.only_a[0], 0);
    rdb_delta_free(&d);
    /* different kinds share nothing */
    assert_int_equal(rdb_diff(a, c1, &d), RDB_OK);
    assert_int_equal(d.n_only_a, 5);
    assert_int_equal(d.n_only_b, 2);
    rdb_delta_free(&d);
    rdb_file *all[] = {a, b, rev, c1, c2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) rdb_free(all[i]);
}

/* ================= files and atomic writes ================= */

static char scratch[256];

static int make_scratch(void **state) {
    (void)state;
    snprintf(scratch, sizeof scratch, "/tmp/test_ruledb.XXXXXX");
    return mkdtemp(scratch) ? 0 : -1;
}

static int remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        chmod(path, 0700);
        while (d && (e = readdir(d))) {
            char sub[1024];
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
        }
        if (d) closedir(d);
        return rmdir(path);
    }
    return unlink(path);
}

static int drop_scratch(void **state) {
    (void)state;
    return remove_tree(scratch);
}

/* Number of entries of dir whose name contains ".tmp.". */
static int temp_files(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    if (d) closedir(d);
    return n;
}

static uint8_t *file_bytes(const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    uint8_t *buf = malloc(1 << 16);
    *len = fread(buf, 1, 1 << 16, fp);
    fclose(fp);
    return buf;
}

static void test_file_roundtrip(void **state) {
    (void)state;
    char path[512], err[RDB_ERRLEN] = "";
    rdb_file *f = rules_file(rule_cases, N_RULE_CASES), *g = NULL;
    snprintf(path, sizeof path, "%s/rules.tasodb", scratch);
    assert_int_equal(rdb_write(path, f, err, sizeof err), RDB_OK);
    assert_int_equal(rdb_write(path, f, err, sizeof err), RDB_OK); /* replaces */
    assert_int_equal(temp_files(scratch), 0);
    assert_int_equal(rdb_read(path, &g, err, sizeof err), RDB_OK);
    assert_same_rules(f, g);
    rdb_free(g);
    snprintf(path, sizeof path, "%s/missing.tasodb", scratch);
    assert_int_equal(rdb_read(path, &g, err, sizeof err), RDB_EIO);
    assert_non_null(strstr(err, path));
    assert_int_equal(rdb_read(scratch, &g, err, sizeof err), RDB_EIO); /* a directory */
    rdb_free(f);
}

/* Failed writes leave no temp file and never touch the existing file. */
static void test_atomic_write_failures(void **state) {
    (void)state;
    char path[512], tmp[600], sub[512], err[RDB_ERRLEN] = "";
    rdb_file *f = rules_file(rule_cases, 3), *big = rules_file(rule_cases, N_RULE_CASES);
    size_t n0, n1;
    snprintf(path, sizeof path, "%s/keep.tasodb", scratch);
    assert_int_equal(rdb_write(path, f, err, sizeof err), RDB_OK);
    uint8_t *before = file_bytes(path, &n0);

    /* W1: the directory does not exist */
    snprintf(sub, sizeof sub, "%s/no/such/dir/x.tasodb", scratch);
    assert_int_equal(rdb_write(sub, f, err, sizeof err), RDB_EIO);
    assert_non_null(strstr(err, sub));

    /* W2: the temp file cannot be created (its name is taken by a dir) */
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    assert_int_equal(mkdir(tmp, 0700), 0);
    assert_int_equal(rdb_write(path, big, err, sizeof err), RDB_EIO);
    rmdir(tmp);

    /* W3: rename fails (the target is a non-empty directory): temp removed */
    snprintf(sub, sizeof sub, "%s/adir", scratch);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(tmp, sizeof tmp, "%s/inside", sub);
    assert_int_equal(mkdir(tmp, 0700), 0);
    assert_int_equal(rdb_write(sub, big, err, sizeof err), RDB_EIO);
    assert_int_equal(temp_files(scratch), 0);

    /* W4: an unwritable directory (meaningless as root, who may write) */
    if (geteuid() != 0) {
        assert_int_equal(chmod(scratch, 0500), 0);
        assert_int_equal(rdb_write(path, big, err, sizeof err), RDB_EIO);
        assert_int_equal(chmod(scratch, 0700), 0);
    }

    /* W5: an invalid file is refused before anything is written */
    big->rules[1].dst.n_outputs = 0;
    assert_int_equal(rdb_write(path, big, err, sizeof err), RDB_EINVAL);
    assert_non_null(strstr(err, "rules[1].dst"));

    assert_int_equal(temp_files(scratch), 0);
    uint8_t *after = file_bytes(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
    rdb_free(f);
    rdb_free(big);
}

/* ================= CLI (exit codes only; tests/cli_ruledb.sh does more) */

static void test_cli_usage(void **state) {
    (void)state;
    char *bogus[] = {"ruledb", "frobnicate", NULL};
    char *none[] = {"ruledb", NULL};
    char *merge_no_o[] = {"ruledb", "merge", "a", "b", NULL};
    char *diff_one[] = {"ruledb", "diff", "a", NULL};
    char *missing[] = {"ruledb", "info", "/nonexistent/file.tasodb", NULL};
    assert_int_equal(rdb_cli_main(2, bogus), 2);
    assert_int_equal(rdb_cli_main(1, none), 2);
    assert_int_equal(rdb_cli_main(4, merge_no_o), 2);
    assert_int_equal(rdb_cli_main(3, diff_one), 2);
    assert_int_equal(rdb_cli_main(3, missing), 2);
}

int main(void) {
    struct CMUnitTest tests[64 + sizeof hostile_cases / sizeof hostile_cases[0]];
    size_t n = 0;
#define ADD(f) tests[n++] = (struct CMUnitTest)cmocka_unit_test(f)
    ADD(test_rg_text_roundtrip);
    ADD(test_rg_format_truncates);
    ADD(test_rg_parse_shares);
    ADD(test_rg_parse_rejects);
    ADD(test_rg_validate_rejects);
    ADD(test_rg_equal_ignores_unused);
    ADD(test_rg_eval_agrees);
    ADD(test_rg_eval_errors);
    ADD(test_mpr_ints);
    ADD(test_mpr_hostile);
    ADD(test_rdb_roundtrip_rules);
    ADD(test_rdb_roundtrip_candidates);
    ADD(test_rdb_roundtrip_edges);
    ADD(test_rdb_every_truncation);
    ADD(test_rdb_every_byte_flip);
    ADD(test_rdb_wrong_digest);
    for (size_t i = 0; i < sizeof hostile_cases / sizeof hostile_cases[0]; i++)
        tests[n++] = (struct CMUnitTest){hostile_cases[i].id, test_rdb_hostile, NULL, NULL,
                                         (void *)&hostile_cases[i]};
    ADD(test_merge_candidates_laws);
    ADD(test_merge_rules_laws);
    ADD(test_diff);
    ADD(test_file_roundtrip);
    ADD(test_atomic_write_failures);
    ADD(test_cli_usage);
#undef ADD
    return _cmocka_run_group_tests("ruledb", tests, n, make_scratch, drop_scratch);
}
