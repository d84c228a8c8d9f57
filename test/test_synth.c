/* test_synth.c - cmocka tests of synth: canonical forms and variable
 * alignment (C),
 * the whole-graph and incremental fingerprints against each other (K),
 * known identities found and non-identities not (I, N), pruning (P), and
 * whole runs: determinism across threads, shards merged, planted hash
 * collisions, memory-limit passes, bad options (R). Table rows carry ids
 * that name the case in the TAP output. Runs stay small (operator subsets,
 * depth <= 3) so the file takes seconds under ASan. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fptable.h"
#include "gpu.h"
#include "key.h"
#include "modp.h"
#include "ops.h"
#include "prune.h"
#include "ruledb.h"
#include "sgraph.h"
#include "synth.h"

/* ================= helpers ================= */

static syn_stats g_stats; /* of the last run_synth */

/* ops: "op,op" or "op,op/type,type" (pool types after the slash). */
static rdb_file *run_synth(int max_ops, const char *ops, int threads, void (*tweak)(syn_options *)) {
    syn_options o;
    syn_stats st;
    rdb_file *f = NULL;
    char err[SYN_ERRLEN], list[256];
    syn_options_init(&o);
    o.max_ops = max_ops, o.threads = threads, o.no_timings = 1;
    if (ops) {
        snprintf(list, sizeof list, "%s", ops);
        char *types = strchr(list, '/');
        if (types) *types++ = 0, assert_int_equal(syn_parse_types(types, &o.types, err, sizeof err), 0);
        assert_int_equal(syn_parse_ops(list, &o.ops, err, sizeof err), 0);
    }
    if (tweak) tweak(&o);
    syn_status rc = syn_run(&o, &f, &st, err, sizeof err);
    if (rc != SYN_OK) fail_msg("syn_run: %s", err);
    assert_non_null(f);
    g_stats = st;
    return f;
}

static void no_prune(syn_options *o) { o->no_prune = 1; }

/* Rename the inputs of g by map (input i -> map[i]), symbolic sizes too. */
static void rename_inputs(rg_graph *g, const int *map, int n_inputs) {
    for (int j = 0; j < g->n_nodes; j++) {
        rg_node *nd = &g->node[j];
        const ops_info *o = &ops_table[nd->op];
        for (int k = 0; k < o->arity; k++)
            if (RG_IS_INPUT(nd->in[k])) nd->in[k] = (rg_ref)map[nd->in[k]];
        for (int k = 0; k < o->n_params; k++)
            if (o->pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(nd->param[k]))
                nd->param[k] = RG_SYM_SIZE(map[RG_SYM_INPUT(nd->param[k])], RG_SYM_AXIS(nd->param[k]));
    }
    for (int k = 0; k < g->n_outputs; k++)
        if (RG_IS_INPUT(g->out[k])) g->out[k] = (rg_ref)map[g->out[k]];
    g->n_inputs = n_inputs;
}

/* Text of g with its outputs in order `order` (0: as is, 1: swapped). */
static void text_of(const rg_graph *g, int order, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = 0;
    for (int k = 0; k < g->n_outputs; k++) {
        int o = order && g->n_outputs == 2 ? 1 - k : k;
        if (k) n += (size_t)snprintf(buf + n, len - n, ", ");
        n += rg_format_output(g, o, buf + n, len - n);
    }
}

static int has_member_text(const rdb_class *c, const char *text) {
    char buf[1024];
    for (size_t m = 0; m < c->n_members; m++) {
        text_of(&c->members[m], 0, buf, sizeof buf);
        if (strcmp(buf, text) == 0) return 1;
    }
    return 0;
}

/* Next injective map of n inputs into 0..k-1 (odometer). */
static int next_map(int *map, int n, int k) {
    for (int i = n - 1; i >= 0; i--) {
        for (map[i]++; map[i] < k; map[i]++) {
            int dup = 0;
            for (int j = 0; j < i; j++) dup |= map[j] == map[i];
            if (!dup) break;
        }
        if (map[i] < k) {
            for (int j = i + 1; j < n; j++) /* smallest completion */
                for (map[j] = 0;; map[j]++) {
                    int dup = 0;
                    for (int q = 0; q < j; q++) dup |= map[q] == map[j];
                    if (!dup) break;
                }
            if (map[n - 1] < k) return 1;
        }
    }
    return 0;
}

/* 1 when input i renamed by map has shape want[i] (NULL: any). */
static int shapes_fit(const rdb_class *c, const int *map, int n, const char *const *want) {
    char buf[64];
    for (int i = 0; i < n; i++)
        if (want && want[i] && strcmp(ten_shape_str(&c->shapes[map[i]], buf), want[i]) != 0) return 0;
    return 1;
}

/* 1 when some class holds both graphs under one renaming of their inputs
 * (and, for two outputs, one order of the outputs), input i of shape
 * want[i] when given. */
static int same_class_shaped(const rdb_file *f, const char *a_text, const char *b_text,
                             const char *const *want) {
    rg_graph a, b;
    char err[RG_ERRLEN];
    if (rg_parse(a_text, &a, err, sizeof err) != RG_OK) fail_msg("%s: %s", a_text, err);
    if (rg_parse(b_text, &b, err, sizeof err) != RG_OK) fail_msg("%s: %s", b_text, err);
    int n = a.n_inputs > b.n_inputs ? a.n_inputs : b.n_inputs;
    for (size_t i = 0; i < f->n_classes; i++) {
        const rdb_class *c = &f->classes[i];
        if (c->members[0].n_outputs != a.n_outputs || c->n_shapes < n) continue;
        int map[RG_MAX_INPUTS];
        for (int k = 0; k < n; k++) map[k] = k;
        do {
            if (!shapes_fit(c, map, n, want)) continue;
            rg_graph ra = a, rb = b;
            char ta[1024], tb[1024];
            rename_inputs(&ra, map, c->n_shapes), rename_inputs(&rb, map, c->n_shapes);
            for (int order = 0; order < a.n_outputs; order++) {
                text_of(&ra, order, ta, sizeof ta), text_of(&rb, order, tb, sizeof tb);
                if (has_member_text(c, ta) && has_member_text(c, tb)) return 1;
            }
        } while (next_map(map, n, c->n_shapes));
    }
    return 0;
}


/* ================= C: canonical forms and alignment ================= */

typedef struct {
    pool pool;
    dom dom;
    key_ctx *c;
} fixture;

static int fx_setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || pool_init(&f->pool, 1)) return -1;
    dom_init(&f->dom, OPS_SET_ALL, 0, 0);
    if (!(f->c = key_ctx_new(&f->pool, &f->dom, 0))) return -1;
    *state = f;
    return 0;
}

static int fx_teardown(void **state) {
    fixture *f = *state;
    key_ctx_free(f->c);
    pool_free(&f->pool);
    free(f);
    return 0;
}

enum { T_SCALAR, T_MATRIX, T_ACT, T_W33, T_W11 }; /* pool.c's type order */

static sg_node N(ops_op op, int combo, uint8_t a, uint8_t b) {
    sg_node n = {(uint8_t)op, (uint8_t)combo, {a, ops_table[op].arity > 1 ? b : 0}};
    return n;
}

/* A slot graph from nodes; outputs given. */
static sg_graph G(int n_nodes, const sg_node *nodes, int n_out, uint8_t o0, uint8_t o1) {
    sg_graph g;
    memset(&g, 0, sizeof g);
    g.n_nodes = (uint8_t)n_nodes, g.n_out = (uint8_t)n_out, g.out[0] = o0, g.out[1] = o1;
    for (int j = 0; j < n_nodes; j++) g.node[j] = nodes[j];
    return g;
}

static void key_of(fixture *f, const sg_graph *g, int n_slots, const uint8_t *types, uint8_t *key,
                   size_t *len, key_result *r) {
    assert_int_equal(key_graph(f->c, g, n_slots, types, r), KEY_OK);
    memcpy(key, r->key, r->len);
    *len = r->len;
}

/* C01: two node orders of one graph are one canonical graph. */
static void test_canon_node_order(void **state) {
    fixture *f = *state;
    char ta[256], tb[256];
    sg_node a[3] = {N(OP_RELU, 0, 5, 0), N(OP_TRANSPOSE, 0, 6, 0), N(OP_EWADD, 0, SG_NODE(0), SG_NODE(1))};
    sg_node b[3] = {N(OP_TRANSPOSE, 0, 6, 0), N(OP_RELU, 0, 5, 0), N(OP_EWADD, 0, SG_NODE(1), SG_NODE(0))};
    sg_graph ga = G(3, a, 1, SG_NODE(2), 0), gb = G(3, b, 1, SG_NODE(2), 0);
    assert_true(sg_compare(&ga, &gb) != 0);
    sg_canon(&ga, 0), sg_canon(&gb, 0);
    assert_int_equal(sg_compare(&ga, &gb), 0);
    assert_string_equal(sg_format(&ga, &f->dom, ta, sizeof ta), "(ewadd (relu v5) (transpose v6))");
    assert_string_equal(sg_format(&gb, &f->dom, tb, sizeof tb), ta);
}

/* C02: renamed inputs collide: mm(x1, mm(x0, x2)) in every slot numbering
 * has one key and one aligned form, and associativity meets across
 * numberings. */
static void test_renamed_inputs_collide(void **state) {
    fixture *f = *state;
    uint8_t types[3] = {T_MATRIX, T_MATRIX, T_MATRIX}, key0[KEY_MAX_BYTES], key[KEY_MAX_BYTES];
    size_t len0, len;
    key_result r0, r;
    static const uint8_t perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int i = 0; i < 6; i++) {
        const uint8_t *p = perms[i];
        sg_node n[2] = {N(OP_MATMUL, 0, p[0], p[2]), N(OP_MATMUL, 0, p[1], SG_NODE(0))};
        sg_graph g = G(2, n, 1, SG_NODE(1), 0);
        key_of(f, &g, 3, types, i ? key : key0, i ? &len : &len0, i ? &r : &r0);
        if (i) {
            assert_int_equal(len, len0);
            assert_memory_equal(key, key0, len);
            assert_int_equal(r.n_aligned, 1);
            assert_int_equal(sg_compare(&r.aligned[0], &r0.aligned[0]), 0);
        }
    }
    /* (x0 x1) x2 under another numbering meets x1 (x0 x2) renamed... */
    sg_node m[2] = {N(OP_MATMUL, 0, 2, 0), N(OP_MATMUL, 0, SG_NODE(0), 1)};
    sg_graph h = G(2, m, 1, SG_NODE(1), 0);
    key_of(f, &h, 3, types, key, &len, &r);
    /* ... mm(mm(a, b), c) == mm(a, mm(b, c)): the first numbering above is
     * mm(x1, mm(x0, x2)) = mm(a, mm(b, c)) with a = x1 */
    assert_int_equal(len, len0);
    assert_memory_equal(key, key0, len);
}

/* C03: symmetric slots give every aligned order: ewadd(x, y) is met as
 * ewadd(v, w) and ewadd(w, v), the commutativity pair. */
static void test_symmetric_slots(void **state) {
    fixture *f = *state;
    uint8_t types[2] = {T_ACT, T_ACT}, key[KEY_MAX_BYTES];
    size_t len;
    key_result r;
    sg_node n[1] = {N(OP_EWADD, 0, 0, 1)};
    sg_graph g = G(1, n, 1, SG_NODE(0), 0);
    key_of(f, &g, 2, types, key, &len, &r);
    assert_int_equal(r.n_aligned, 2);
    assert_true(sg_compare(&r.aligned[0], &r.aligned[1]) != 0);
}

/* C04: a variable that only lends its shape or is dropped by the graph
 * takes a later name: split1(concat(x, y)) is aligned with y first, so it
 * meets the graph "y". */
static void test_ignored_variable(void **state) {
    fixture *f = *state;
    uint8_t types[2] = {T_ACT, T_ACT}, k1[KEY_MAX_BYTES], k2[KEY_MAX_BYTES];
    size_t l1, l2;
    key_result r;
    sg_node n[2] = {N(OP_CONCAT, 1, 0, 1), N(OP_SPLIT1, 1, SG_NODE(0), 0)};
    sg_graph g = G(2, n, 1, SG_NODE(1), 0);
    key_of(f, &g, 2, types, k1, &l1, &r);
    sg_graph y = G(0, n, 1, 0, 0);
    key_of(f, &y, 1, types, k2, &l2, &r);
    assert_int_equal(l1, l2);
    assert_memory_equal(k1, k2, l1);
}

/* ================= K: incremental = whole-graph fingerprints ================= */

/* Extend rep (aligned) by node n over its slots and compare with the key
 * of the whole graph. */
static void check_extend(fixture *f, const sg_graph *rep, sg_node n, int fresh_type) {
    key_parent P;
    key_ext e;
    key_result r1, r2;
    uint8_t k1[KEY_MAX_BYTES];
    assert_int_equal(key_parent_from_rep(f->c, rep, &P), KEY_OK);
    memset(&e, 0, sizeof e);
    e.n = n, e.n_slots = P.n_slots;
    memcpy(e.slot_type, P.slot_type, sizeof e.slot_type);
    if (fresh_type >= 0) e.slot_type[e.n_slots++] = (uint8_t)fresh_type;
    uint64_t shape[SG_N_REFS];
    for (int s = 0; s < e.n_slots; s++) shape[s] = f->pool.shape[e.slot_type[s]];
    for (int j = 0; j < P.g.n_nodes; j++) shape[SG_NODE(j)] = P.shape[SG_NODE(j)];
    sg_graph whole = P.g;
    whole.node[whole.n_nodes++] = n;
    whole.n_out = 1, whole.out[0] = SG_NODE(P.g.n_nodes);
    e.shape = sg_node_shape(&n, &f->dom, key_memo(f->c), shape, P.bound, e.param, NULL);
    assert_true(e.shape != DOM_BAD);
    e.n_sinks = 1, e.sink[0] = SG_NODE(P.g.n_nodes);
    assert_int_equal(key_extend(f->c, &P, &e, &r1), KEY_OK);
    memcpy(k1, r1.key, r1.len);
    key_parent_release(f->c, &P);
    assert_int_equal(key_graph(f->c, &whole, e.n_slots, e.slot_type, &r2), KEY_OK);
    assert_int_equal(r1.len, r2.len);
    assert_memory_equal(k1, r2.key, r1.len);
    assert_int_equal(r1.n_aligned, r2.n_aligned);
    for (int i = 0; i < r1.n_aligned; i++) assert_int_equal(sg_compare(&r1.aligned[i], &r2.aligned[i]), 0);
}

static void test_incremental_equals_whole(void **state) {
    fixture *f = *state;
    int act = f->pool.first[T_ACT], w = f->pool.first[T_W33], m = f->pool.first[T_MATRIX];
    /* K01 conv(relu(a), w) + a */
    sg_node n1[2] = {N(OP_RELU, 0, (uint8_t)act, 0), N(OP_CONV2D, 0, SG_NODE(0), (uint8_t)w)};
    sg_graph r1 = G(2, n1, 1, SG_NODE(1), 0);
    check_extend(f, &r1, N(OP_EWADD, 0, SG_NODE(1), 0), -1);
    /* K02 ... + a fresh activation (a new slot) */
    check_extend(f, &r1, N(OP_EWADD, 0, SG_NODE(1), 2), T_ACT);
    /* K03 mm(mm(x, y), x): a repeated variable */
    sg_node n3[1] = {N(OP_MATMUL, 0, (uint8_t)m, (uint8_t)(m + 1))};
    sg_graph r3 = G(1, n3, 1, SG_NODE(0), 0);
    check_extend(f, &r3, N(OP_MATMUL, 0, SG_NODE(0), 0), -1);
    check_extend(f, &r3, N(OP_MATMUL, 0, 2, SG_NODE(0)), T_MATRIX);
    /* K05 split of a concat of an inner node */
    sg_node n5[2] = {N(OP_RELU, 0, (uint8_t)act, 0), N(OP_CONCAT, 3, SG_NODE(0), (uint8_t)(act + 1))};
    sg_graph r5 = G(2, n5, 1, SG_NODE(1), 0);
    check_extend(f, &r5, N(OP_SPLIT0, 3, SG_NODE(1), 0), -1);
    /* K06 split of a conv over concatenated weights: its split point */
    sg_node n6[2] = {N(OP_CONCAT, 0, (uint8_t)w, (uint8_t)(w + 1)), N(OP_CONV2D, 0, (uint8_t)act, SG_NODE(0))};
    sg_graph r6 = G(2, n6, 1, SG_NODE(1), 0);
    check_extend(f, &r6, N(OP_SPLIT1, 1, SG_NODE(1), 0), -1);
}

/* ================= I / N: identities found, non-identities not ================= */

/* The slot graph of a rule graph: input xi is slot i, parameters are found
 * among dom's combos (a split's size comes from its split point). */
static void slot_graph(const dom *d, const rg_graph *r, sg_graph *g) {
    memset(g, 0, sizeof *g);
    g->n_nodes = (uint8_t)r->n_nodes, g->n_out = (uint8_t)r->n_outputs;
    for (int j = 0; j < r->n_nodes; j++) {
        const rg_node *n = &r->node[j];
        int np = n->op == OP_SPLIT0 || n->op == OP_SPLIT1 ? 1 : ops_table[n->op].n_params, c = 0;
        while (c < d->n_combo[n->op] && memcmp(d->combo[n->op][c], n->param, (size_t)np * 4)) c++;
        assert_true(c < d->n_combo[n->op]);
        g->node[j].op = (uint8_t)n->op, g->node[j].combo = (uint8_t)c;
        for (int k = 0; k < ops_table[n->op].arity; k++)
            g->node[j].in[k] = RG_IS_INPUT(n->in[k]) ? n->in[k] : SG_NODE(RG_NODE_INDEX(n->in[k]));
    }
    for (int k = 0; k < r->n_outputs; k++)
        g->out[k] = RG_IS_INPUT(r->out[k]) ? r->out[k] : SG_NODE(RG_NODE_INDEX(r->out[k]));
}

static int type_named(const char *name) {
    for (int t = 0; t < pool_n_types; t++)
        if (strcmp(pool_types[t].name, name) == 0) return t;
    fail_msg("no pool type %s", name);
    return -1;
}

/* 1 when the two graphs over slots of the named types have equal keys (so
 * share a class wherever both are made). */
static int same_key(fixture *f, const char *a_text, const char *b_text, const char *types_text) {
    uint8_t types[KEY_MAX_SLOTS], ka[KEY_MAX_BYTES];
    char buf[128], *save, *tok;
    int n = 0;
    snprintf(buf, sizeof buf, "%s", types_text);
    for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        types[n++] = (uint8_t)type_named(tok);
    rg_graph a, b;
    sg_graph ga, gb;
    key_result r;
    char err[RG_ERRLEN];
    assert_int_equal(rg_parse(a_text, &a, err, sizeof err), RG_OK);
    assert_int_equal(rg_parse(b_text, &b, err, sizeof err), RG_OK);
    slot_graph(&f->dom, &a, &ga), slot_graph(&f->dom, &b, &gb);
    assert_int_equal(key_graph(f->c, &ga, n, types, &r), KEY_OK);
    size_t la = r.len;
    memcpy(ka, r.key, la);
    assert_int_equal(key_graph(f->c, &gb, n, types, &r), KEY_OK);
    return la == r.len && memcmp(ka, r.key, la) == 0;
}

typedef struct {
    const char *id;
    const char *ops; /* a whole run over these operators; NULL: compare keys */
    int max_ops;
    const char *a, *b;
    int same;          /* 1: must share a class; 0: must not */
    int after_pruning; /* a run with same == 1: also in the pruned output */
    const char *types; /* compared keys: the types of x0, x1, ... */
    int (*combo)(int op, const int32_t *p); /* a run: its combos (NULL: all) */
} ident_case;

/* conv2d at stride 1, SAME, no activation only: a depth-4 run over conv2d
 * then takes about 1 s (15 s under ASan, both runs); with all eight combos
 * it takes 9 s per run in a release build. */
static int one_conv(int op, const int32_t *p) {
    return op != OP_CONV2D || (p[0] == 1 && p[1] == OPS_PAD_SAME && p[2] == OPS_ACT_NONE);
}

static const ident_case ident_cases[] = {
    {"I01 matmul associativity", "matmul", 2, "(matmul x0 (matmul x1 x2))",
     "(matmul (matmul x0 x1) x2)", 1, 1, NULL},
    {"I02 conv distributes over ewadd of weights", "conv2d,ewadd/act,w3x3", 3,
     "(ewadd (conv2d 1 SAME NONE 1 x0 x1) (conv2d 1 SAME NONE 1 x0 x2))",
     "(conv2d 1 SAME NONE 1 x0 (ewadd x1 x2))", 1, 0, NULL},
    {"I03 relu fused into conv", "conv2d,relu", 2, "(relu (conv2d 2 VALID NONE 1 x0 x1))",
     "(conv2d 2 VALID RELU 1 x0 x1)", 1, 1, NULL},
    {"I04 split0 of concat is the operand (2 nodes vs 0)", "concat,split0", 2,
     "(split0 1 (dim 1 x0) (concat 1 x0 x1))", "x0", 1, 1, NULL},
    {"I05 split0/split1 of concat are the parts (two outputs)", "concat,split0,split1", 3,
     "(split0 3 (dim 3 x0) (concat 3 x0 x1)), (split1 3 (dim 3 x0) (concat 3 x0 x1))", "x0, x1",
     1, 1, NULL},
    {"I06 transpose twice", "transpose", 2, "(transpose (transpose x0))", "x0", 1, 1, NULL},
    {"I07 transpose of matmul", "matmul,transpose", 3, "(transpose (matmul x0 x1))",
     "(matmul (transpose x1) (transpose x0))", 1, 1, NULL},
    {"I08 avg pool is conv with the pool kernel", "avgpool,conv2d,poolk", 2,
     "(avgpool 3x3 1 SAME x0)", "(conv2d 1 SAME NONE 1 x0 (poolk 3x3 x0))", 1, 1, NULL},
    {"I09 ewadd commutes", "ewadd", 1, "(ewadd x0 x1)", "(ewadd x1 x0)", 1, 1, NULL},
    {"I10 conv of the enlarged kernel", "conv2d,enlarge", 2, "(conv2d 1 SAME NONE 1 x0 x1)",
     "(conv2d 1 SAME NONE 1 x0 (enlarge 3x3 x1))", 1, 0, NULL},
    {"I11 two convs of one input are one conv, split (TASO)", NULL, 0,
     "(conv2d 1 SAME NONE 1 x0 x1), (conv2d 1 SAME NONE 1 x0 x2)",
     "(split0 1 (dim 0 x1) (conv2d 1 SAME NONE 1 x0 (concat 0 x1 x2))), "
     "(split1 1 (dim 0 x1) (conv2d 1 SAME NONE 1 x0 (concat 0 x1 x2)))", 1, 0, "act w3x3 w3x3"},
    /* kept by pruning: split0's subterm equals (matmul x0 x1) by value,
     * but it shares the matmul with split1, so it is no smaller rule */
    {"I12 two matmuls of one input are one matmul, split", "matmul,concat,split0,split1", 4,
     "(matmul x0 x1), (matmul x0 x2)",
     "(split0 1 (dim 1 x1) (matmul x0 (concat 1 x1 x2))), (split1 1 (dim 1 x1) (matmul x0 (concat 1 x1 x2)))",
     1, 1, NULL},
    {"I13 relu commutes with concat", NULL, 0, "(relu (concat 2 x0 x1))",
     "(concat 2 (relu x0) (relu x1))", 1, 0, "act act"},
    /* I11 as a whole run: the pair of convs of one input must be enumerated
     * (a two-output graph whose cones share only x0) and meet the split pair
     * of the merged conv, whose split point comes from the concatenated
     * weights; and pruning must keep it. One weight type keeps it small. */
    {"I14 two convs of one input are one conv, split (run)", "conv2d,concat,split0,split1/act,w3x3", 4,
     "(conv2d 1 SAME NONE 1 x0 x1), (conv2d 1 SAME NONE 1 x0 x2)",
     "(split0 1 (dim 0 x1) (conv2d 1 SAME NONE 1 x0 (concat 0 x1 x2))), "
     "(split1 1 (dim 0 x1) (conv2d 1 SAME NONE 1 x0 (concat 0 x1 x2)))", 1, 1, NULL, one_conv},
    /* the same pair at depth 2: with 1x1 weights SAME and VALID agree, so
     * the class is written; pruning drops it (it follows from the one-output
     * SAME = VALID rule) */
    {"I15 two convs of one input, 1x1: SAME pairs with VALID", "conv2d/act,w1x1", 2,
     "(conv2d 1 SAME NONE 1 x0 x1), (conv2d 1 SAME NONE 1 x0 x2)",
     "(conv2d 1 SAME NONE 1 x0 x1), (conv2d 1 VALID NONE 1 x0 x2)", 1, 0, NULL},
    {"N01 concat of convs on H is not conv of concat", NULL, 0,
     "(concat 2 (conv2d 1 SAME NONE 1 x0 x2) (conv2d 1 SAME NONE 1 x1 x2))",
     "(conv2d 1 SAME NONE 1 (concat 2 x0 x1) x2)", 0, 0, "act act w3x3"},
    {"N02 ... but on N it is", NULL, 0,
     "(concat 0 (conv2d 1 SAME NONE 1 x0 x2) (conv2d 1 SAME NONE 1 x1 x2))",
     "(conv2d 1 SAME NONE 1 (concat 0 x0 x1) x2)", 1, 0, "act act w3x3"},
    {"N03 relu does not distribute over ewadd", NULL, 0, "(relu (ewadd x0 x1))",
     "(ewadd (relu x0) (relu x1))", 0, 0, "act act"},
    {"N04 matmul does not commute", "matmul", 1, "(matmul x0 x1)", "(matmul x1 x0)", 0, 0, NULL},
    /* keys are equal up to renaming: mm(T x0, T x1) renamed is mm(T x1,
     * T x0) = T mm(x0, x1); only a run shows which pairing the class has */
    {"N05 transpose of matmul is not matmul of transposes", "matmul,transpose", 3,
     "(transpose (matmul x0 x1))", "(matmul (transpose x0) (transpose x1))", 0, 0, NULL},
    {"N06 smul does not commute with relu", NULL, 0, "(relu (smul x0 x1))",
     "(smul (relu x0) x1)", 0, 0, "act scalar"},
};

/* Runs are cached by (operators, depth, pruning, combos): several cases
 * share one. */
typedef struct {
    const char *ops;
    int max_ops, pruned;
    int (*combo)(int op, const int32_t *p);
    rdb_file *f;
} cached_run;

static int (*g_combo)(int op, const int32_t *p); /* of the run being made */
static void case_pruned(syn_options *o) { o->test_combo = g_combo; }
static void case_no_prune(syn_options *o) { o->test_combo = g_combo, o->no_prune = 1; }

static rdb_file *cached(cached_run *c, int *n, const ident_case *t, int pruned) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(c[i].ops, t->ops) && c[i].max_ops == t->max_ops && c[i].pruned == pruned &&
            c[i].combo == t->combo)
            return c[i].f;
    g_combo = t->combo;
    rdb_file *f = run_synth(t->max_ops, t->ops, 2, pruned ? case_pruned : case_no_prune);
    c[*n] = (cached_run){t->ops, t->max_ops, pruned, t->combo, f};
    return c[(*n)++].f;
}

static void test_identities(void **state) {
    fixture *f = *state;
    enum { N_CASES = sizeof ident_cases / sizeof ident_cases[0] };
    cached_run runs[2 * N_CASES];
    int n_runs = 0;
    for (size_t i = 0; i < N_CASES; i++) {
        const ident_case *t = &ident_cases[i];
        int found = t->ops ? same_class_shaped(cached(runs, &n_runs, t, 0), t->a, t->b, NULL)
                           : same_key(f, t->a, t->b, t->types);
        if (found != t->same) fail_msg("%s: same class %d, wanted %d", t->id, found, t->same);
        if (t->ops && t->after_pruning &&
            !same_class_shaped(cached(runs, &n_runs, t, 1), t->a, t->b, NULL))
            fail_msg("%s: pruned away", t->id);
    }
    for (int i = 0; i < n_runs; i++) rdb_free(runs[i].f);
}

/* I16: dw3x3 is opt-in: not in the default types (so the default runs
 * keep their pool), and named, it gives the depthwise weight that
 * x + dwconv(x, w) = dwconv(x, w + dwiconv) needs (RepViT's RepVggDw). */
static void depthwise_run(syn_options *o) { o->groups2 = 1, o->test_combo = one_conv; }

static void test_opt_in_type(void **state) {
    (void)state;
    syn_options o;
    syn_options_init(&o);
    int dw = type_named("dw3x3");
    assert_int_equal(o.types >> dw & 1, 0);
    assert_int_equal(o.types | 1u << dw, (1u << pool_n_types) - 1);
    rdb_file *f = run_synth(3, "conv2d,ewadd,dwiconv/act,dw3x3", 2, depthwise_run);
    const char *const want[] = {"[1,2,4,4]", "[2,1,3,3]"};
    assert_true(same_class_shaped(f, "(ewadd x0 (conv2d 1 SAME NONE 2 x0 x1))",
                                  "(conv2d 1 SAME NONE 2 x0 (ewadd x1 (dwiconv 3x3 x0)))", want));
    rdb_free(f);
}

/* ================= P / R: pruning and whole runs ================= */

/* P01: no class pairs a graph with itself, and members are distinct. */
static void test_never_self(void **state) {
    (void)state;
    rdb_file *f = run_synth(3, "matmul,transpose,ewadd", 2, no_prune);
    char a[1024], b[1024];
    assert_true(f->n_classes > 0);
    for (size_t i = 0; i < f->n_classes; i++)
        for (size_t m = 0; m < f->classes[i].n_members; m++)
            for (size_t k = m + 1; k < f->classes[i].n_members; k++) {
                text_of(&f->classes[i].members[m], 0, a, sizeof a);
                text_of(&f->classes[i].members[k], 0, b, sizeof b);
                assert_string_not_equal(a, b);
            }
    char err[RDB_ERRLEN];
    assert_int_equal(rdb_validate(f, err, sizeof err), RDB_OK);
    rdb_free(f);
}

/* P02: pruning keeps a subset of each class and never invents one. */
static void test_pruning_subset(void **state) {
    (void)state;
    rdb_file *all = run_synth(2, "conv2d,relu,ewadd", 1, no_prune);
    rdb_file *some = run_synth(2, "conv2d,relu,ewadd", 1, NULL);
    size_t j = 0;
    assert_true(some->n_classes < all->n_classes);
    for (size_t i = 0; i < some->n_classes; i++) {
        while (j < all->n_classes && (all->classes[j].fp_len != some->classes[i].fp_len ||
                                      memcmp(all->classes[j].fp, some->classes[i].fp, some->classes[i].fp_len)))
            j++;
        assert_true(j < all->n_classes);
        for (size_t m = 0; m < some->classes[i].n_members; m++) {
            int in = 0;
            for (size_t k = 0; k < all->classes[j].n_members; k++)
                in |= rg_equal(&some->classes[i].members[m], &all->classes[j].members[k]);
            assert_true(in);
        }
    }
    rdb_free(all), rdb_free(some);
}

static void write_mem(const rdb_file *f, uint8_t **buf, size_t *len) {
    char err[RDB_ERRLEN];
    assert_int_equal(rdb_write_mem(f, buf, len, err, sizeof err), RDB_OK);
}

static void assert_same_bytes(const rdb_file *a, const rdb_file *b) {
    uint8_t *ba, *bb;
    size_t la, lb;
    write_mem(a, &ba, &la), write_mem(b, &bb, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(ba, bb, la);
    free(ba), free(bb);
}

/* R01: one thread or two, the same bytes. */
static void test_threads_same_bytes(void **state) {
    (void)state;
    static const char *const cfg[][2] = {{"3", "matmul,transpose,smul,concat,split0,split1"},
                                         {"2", "conv2d,ewadd,relu,concat,split0,split1,avgpool"}};
    for (int i = 0; i < 2; i++) {
        rdb_file *a = run_synth(atoi(cfg[i][0]), cfg[i][1], 1, NULL);
        rdb_file *b = run_synth(atoi(cfg[i][0]), cfg[i][1], 2, NULL);
        assert_true(a->n_classes > 0);
        assert_same_bytes(a, b);
        rdb_free(a), rdb_free(b);
    }
}

/* A divided run: N shard files in `parts` parts, each part merged, the
 * parts merged by rdb_merge. tweak as in run_synth. */
static rdb_file *run_divided(int max_ops, const char *ops, uint32_t n, uint32_t parts,
                             void (*tweak)(syn_options *)) {
    char dir[] = "/tmp/test_synth.XXXXXX", path[8][64], err[RDB_ERRLEN];
    const char *paths[8];
    syn_options o;
    syn_stats st;
    rdb_file *merged = NULL;
    assert_non_null(mkdtemp(dir));
    syn_options_init(&o);
    o.max_ops = max_ops, o.threads = 2, o.no_timings = 1, o.shard_n = n, o.parts = parts;
    assert_int_equal(syn_parse_ops(ops, &o.ops, err, sizeof err), 0);
    if (tweak) tweak(&o);
    for (uint32_t k = 0; k < n; k++) {
        snprintf(path[k], sizeof path[k], "%s/shard-%u", dir, k);
        paths[k] = path[k];
        o.shard_k = k;
        if (syn_run_shard(&o, path[k], &st, err, sizeof err) != SYN_OK) fail_msg("syn_run_shard: %s", err);
    }
    for (uint32_t p = 0; p < parts; p++) {
        syn_options ro;
        rdb_file *part = NULL, *m = NULL;
        /* the files in another order than the shards': the result must not care */
        const char *rev[8];
        for (uint32_t k = 0; k < n; k++) rev[k] = paths[(k + p + 1) % n];
        if (syn_merge_part(rev, (int)n, p, 1, &ro, &part, &st, err, sizeof err) != SYN_OK)
            fail_msg("syn_merge_part: %s", err);
        assert_int_equal(ro.max_ops, max_ops);
        if (!merged) {
            merged = part;
            continue;
        }
        assert_int_equal(rdb_merge(merged, part, &m, err, sizeof err), RDB_OK);
        rdb_free(merged), rdb_free(part);
        merged = m;
    }
    for (uint32_t k = 0; k < n; k++) remove(path[k]);
    remove(dir);
    return merged;
}

/* R02: a divided run (3 shards, 2 parts, merged) gives the undivided
 * run's file byte for byte, generator included; one part gives it too. */
static void test_shards_merge(void **state) {
    (void)state;
    const char *ops = "matmul,ewadd,transpose,smul";
    rdb_file *whole = run_synth(3, ops, 2, NULL), *merged = run_divided(3, ops, 3, 2, NULL);
    assert_true(whole->n_classes > 100);
    assert_same_bytes(merged, whole);
    rdb_free(merged);
    merged = run_divided(3, ops, 2, 1, NULL);
    assert_same_bytes(merged, whole);
    rdb_free(merged), rdb_free(whole);
}

static uint64_t constant_hash(const void *p, size_t n) {
    (void)p, (void)n;
    return 0x1234567812345678ull;
}
static void planted_collision(syn_options *o) { o->hash = constant_hash; }

/* R02b: every class with one hash: a divided run still joins only the
 * classes with equal key bytes (the merge compares them), and gives the
 * undivided run's file. */
static void test_shards_collision(void **state) {
    (void)state;
    rdb_file *whole = run_synth(2, "ewadd,relu,transpose", 1, NULL);
    rdb_file *merged = run_divided(2, "ewadd,relu,transpose", 3, 2, planted_collision);
    assert_true(whole->n_classes > 0);
    assert_same_bytes(merged, whole);
    rdb_free(merged), rdb_free(whole);
}

/* R03: a hash that always collides changes nothing: exact comparison keeps
 * classes apart, so no candidate comes from a collision. */
static void test_planted_collision(void **state) {
    (void)state;
    rdb_file *a = run_synth(2, "ewadd,relu,transpose", 1, NULL);
    rdb_file *b = run_synth(2, "ewadd,relu,transpose", 1, planted_collision);
    assert_true(a->n_classes > 0);
    assert_same_bytes(a, b);
    rdb_free(a), rdb_free(b);
}

static void tiny_limit(syn_options *o) { o->memory_limit = 1; }
static uint64_t g_budget;
static void some_budget(syn_options *o) { o->test_table_budget = g_budget; }

/* R04: a memory limit splits the last level into passes and changes no
 * class; one too small for the levels below fails cleanly. */
static void test_memory_passes(void **state) {
    (void)state;
    const char *ops = "matmul,ewadd,transpose,smul";
    rdb_file *a = run_synth(3, ops, 2, NULL), *b;
    syn_stats whole = g_stats;
    assert_int_equal(whole.passes, 1);
    /* room for a third of what the last level adds: passes */
    g_budget = whole.table_below + (whole.table_peak - whole.table_below) / 3;
    b = run_synth(3, ops, 2, some_budget);
    if (g_stats.passes < 2) fail_msg("%d passes", g_stats.passes);
    assert_same_bytes(a, b);
    rdb_free(a), rdb_free(b);
    syn_options o;
    syn_stats st;
    char err[SYN_ERRLEN];
    syn_options_init(&o);
    o.max_ops = 3, o.threads = 2, o.no_timings = 1;
    syn_parse_ops(ops, &o.ops, err, sizeof err);
    tiny_limit(&o);
    assert_int_equal(syn_run(&o, &b, &st, err, sizeof err), SYN_ELIMIT);
    assert_null(b);
    assert_non_null(strstr(err, "memory limit"));
}

/* R05: bad options and the CUDA backend without a device. */
static void test_bad_options(void **state) {
    (void)state;
    syn_options o;
    syn_stats st;
    rdb_file *f;
    char err[SYN_ERRLEN];
    ops_set ops;
    assert_int_equal(syn_parse_ops("matmul,bogus", &ops, err, sizeof err), -1);
    assert_non_null(strstr(err, "bogus"));
    syn_options_init(&o);
    o.max_ops = 9;
    assert_int_equal(syn_run(&o, &f, &st, err, sizeof err), SYN_EINVAL);
    syn_options_init(&o);
    o.shard_k = 3, o.shard_n = 3;
    assert_int_equal(syn_run(&o, &f, &st, err, sizeof err), SYN_EINVAL);
    syn_options_init(&o);
    o.max_ops = 1, o.backend = SYN_CUDA;
    int n;
    char why[GPU_ERRLEN];
    if (gpu_device_count(&n, why) != GPU_OK) {
        assert_int_equal(syn_run(&o, &f, &st, err, sizeof err), SYN_EDEV);
        assert_non_null(strstr(err, "cuda"));
        assert_null(f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_canon_node_order, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_renamed_inputs_collide, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_symmetric_slots, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ignored_variable, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_incremental_equals_whole, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_identities, fx_setup, fx_teardown),
        cmocka_unit_test(test_opt_in_type),
        cmocka_unit_test(test_never_self),
        cmocka_unit_test(test_pruning_subset),
        cmocka_unit_test(test_threads_same_bytes),
        cmocka_unit_test(test_shards_merge),
        cmocka_unit_test(test_shards_collision),
        cmocka_unit_test(test_planted_collision),
        cmocka_unit_test(test_memory_passes),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
