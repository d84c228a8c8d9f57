/* test_engine_cost.c - cmocka tests of the engine's cost model (cost.h):
 * the analytic backend is deterministic and positive for every opspecs
 * operator (table A..) and every model operator (table M..), memoises,
 * skips weight-only nodes, and rates three parallel MatMuls above one
 * merged MatMul plus splits; the cpu backend measures finite, positive
 * times once and memoises them (no wall-clock comparison: that is
 * bench/cost.sh's); the cache file round-trips without re-measuring and
 * every corrupted or truncated file (table C..) is EG_EFORMAT, not a
 * crash; cuda without a GPU is EG_EUNSUPPORTED. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cm_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost/cost.h"
#include "cost/cost_calib.h"
#include "cost/cost_impl.h"
#include "onnx/engine.h"

/* ================= helpers ================= */

/* Add a float tensor of that shape (rank -1: unknown) and flags. */
static int tensor(eg_graph *g, const char *name, int rank, const int64_t *dims, unsigned flags) {
    int id;
    assert_int_equal(eg_add_tensor(g, name, &id), EG_OK);
    eg_tensor *t = &g->tensor[id];
    t->dtype = EG_DT_FLOAT;
    t->flags = flags;
    t->shape.rank = rank;
    for (int i = 0; i < rank; i++) t->shape.dim[i] = dims[i];
    if (flags & EG_TF_INPUT) {
        g->input = realloc(g->input, (size_t)(g->n_inputs + 1) * sizeof *g->input);
        assert_non_null(g->input);
        g->input[g->n_inputs++] = id;
    }
    return id;
}

/* Append an opspecs node reading a, b (b -1 for unary) into a new tensor
 * whose shape ops_infer_shape gives. @return the node id */
static int ops_node(eg_graph *g, ops_op op, const int32_t *param, int a, int b, const char *out) {
    int ar = ops_table[op].arity, id, y;
    ten_shape in[OPS_MAX_ARITY], os;
    char err[OPS_ERRLEN];
    assert_int_equal(eg_add_node(g, EG_KIND_OPS, out, ar, 0, 1, &id), EG_OK);
    eg_node *n = &g->node[id];
    n->op = op;
    memcpy(n->param, param, sizeof n->param);
    n->in[0] = a;
    if (ar > 1) n->in[1] = b;
    for (int k = 0; k < ar; k++) assert_true(eg_to_ten_shape(&g->tensor[n->in[k]].shape, &in[k]));
    ops_status st = ops_infer_shape(op, param, in, &os, err);
    if (st != OPS_OK) print_error("%s\n", err);
    assert_int_equal(st, OPS_OK);
    y = tensor(g, out, 0, NULL, 0);
    eg_from_ten_shape(&os, &g->tensor[y].shape);
    g->node[id].out[0] = y;
    return id;
}

static void index_ok(eg_graph *g) {
    char err[EG_ERRLEN];
    eg_status rc = eg_index(g, err, sizeof err);
    if (rc != EG_OK) print_error("%s\n", err);
    assert_int_equal(rc, EG_OK);
}

static eg_cost *cost_new(eg_cost_kind kind, const char *path) {
    eg_cost *c = NULL;
    char err[EG_ERRLEN] = "";
    eg_status rc = eg_cost_new(kind, path, &c, err, sizeof err);
    if (rc != EG_OK) print_error("%s\n", err);
    assert_int_equal(rc, EG_OK);
    return c;
}

/* 1 when the cuda backend has a device to measure on (then every test that
 * measures on the cpu backend measures on cuda too). */
static int have_cuda(void) {
    static int known = -1;
    if (known < 0) {
        eg_cost *c = NULL;
        char err[EG_ERRLEN] = "";
        known = eg_cost_new(EG_COST_CUDA, NULL, &c, err, sizeof err) == EG_OK;
        eg_cost_free(c);
    }
    return known;
}

static void tmp_path(char *buf, size_t len, const char *tag) {
    snprintf(buf, len, "/tmp/test_engine_cost.%ld.%s", (long)getpid(), tag);
}

static void write_file(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* ================= A: every opspecs operator ================= */

#define S(...) {__VA_ARGS__}
typedef struct {
    const char *id;
    ops_op op;
    int32_t param[OPS_MAX_PARAMS];
    int ra, rb;            /* input ranks (rb 0 with arity 2: a scalar) */
    int64_t a[4], b[4];
} ops_case;

static const ops_case ops_cases[] = {
    {"A01 matmul [8,16]x[16,4]", OP_MATMUL, {0}, 2, 2, S(8, 16), S(16, 4)},
    {"A01a bmm [1,4,8,16]x[1,4,16,8]", OP_BMM, {0}, 4, 4, S(1, 4, 8, 16), S(1, 4, 16, 8)},
    {"A01b linear [2,8,16]x[16,4]", OP_LINEAR, {0}, 3, 2, S(2, 8, 16), S(16, 4)},
    {"A02 conv2d 3x3 SAME", OP_CONV2D, {1, OPS_PAD_SAME, OPS_ACT_NONE, 1}, 4, 4, S(1, 4, 8, 8),
     S(8, 4, 3, 3)},
    {"A03 ewadd", OP_EWADD, {0}, 2, 2, S(4, 4), S(4, 4)},
    {"A04 ewmul", OP_EWMUL, {0}, 2, 2, S(4, 4), S(4, 4)},
    {"A05 smul", OP_SMUL, {0}, 2, 0, S(4, 4), S(0)},
    {"A05a sadd", OP_SADD, {0}, 2, 0, S(4, 4), S(0)},
    {"A05b sdiv", OP_SDIV, {0}, 3, 0, S(2, 4, 4), S(0)},
    {"A06 relu", OP_RELU, {0}, 2, 0, S(4, 4), S(0)},
    {"A07 avgpool 3x3", OP_AVGPOOL, {OPS_KERNEL(3, 3), 1, OPS_PAD_SAME}, 4, 0, S(1, 2, 8, 8),
     S(0)},
    {"A08 maxpool 3x3 s2 VALID", OP_MAXPOOL, {OPS_KERNEL(3, 3), 2, OPS_PAD_VALID}, 4, 0,
     S(1, 2, 9, 9), S(0)},
    {"A09 concat axis 1", OP_CONCAT, {1}, 2, 2, S(4, 4), S(4, 2)},
    {"A10 split0", OP_SPLIT0, {1, 2}, 2, 0, S(4, 6), S(0)},
    {"A11 split1", OP_SPLIT1, {1, 2}, 2, 0, S(4, 6), S(0)},
    {"A12 transpose", OP_TRANSPOSE, {0}, 2, 0, S(4, 6), S(0)},
    {"A12a permute 0213", OP_PERMUTE, {OPS_PERM4(0, 2, 1, 3)}, 4, 0, S(1, 8, 16, 4), S(0)},
    {"A12b heads 4 of [1,8,16]", OP_HEADS, {4}, 3, 0, S(1, 8, 16), S(0)},
    {"A12c unheads 4 of [1,8,4,4]", OP_UNHEADS, {4}, 4, 0, S(1, 8, 4, 4), S(0)},
    {"A12d kmul of 1x1 kernels", OP_KMUL, {0}, 4, 4, S(8, 4, 1, 1), S(4, 6, 1, 1)},
    {"A13 enlarge 1x1 -> 3x3", OP_ENLARGE, {OPS_KERNEL(3, 3)}, 4, 0, S(4, 4, 1, 1), S(0)},
    {"A14 imm", OP_IMM, {0}, 2, 0, S(4, 4), S(0)},
    {"A15 iconv", OP_ICONV, {OPS_KERNEL(3, 3)}, 4, 0, S(1, 4, 8, 8), S(0)},
    {"A16 poolk", OP_POOLK, {OPS_KERNEL(3, 3)}, 4, 0, S(1, 4, 8, 8), S(0)},
    {"A16b dwiconv", OP_DWICONV, {OPS_KERNEL(3, 3)}, 4, 0, S(1, 4, 8, 8), S(0)},
    {"A17 ones", OP_ONES, {0}, 2, 0, S(4, 4), S(0)},
    {"A18 conv2d 1x3 s2 SAME relu groups 2", OP_CONV2D, {2, OPS_PAD_SAME, OPS_ACT_RELU, 2}, 4,
     4, S(1, 4, 9, 9), S(4, 2, 1, 3)},
    {"A19 avgpool 3x3 s2 SAME (uneven pads)", OP_AVGPOOL, {OPS_KERNEL(3, 3), 2, OPS_PAD_SAME}, 4,
     0, S(1, 2, 8, 8), S(0)},
    {"A20 matmul [1,1]x[1,1]", OP_MATMUL, {0}, 2, 2, S(1, 1), S(1, 1)},
    {"A21 sigmoid", OP_SIGMOID, {0}, 4, 0, S(1, 4, 8, 8), S(0)},
    {"A22 tanh", OP_TANH, {0}, 2, 0, S(16, 64), S(0)},
    {"A23 erf", OP_ERF, {0}, 2, 0, S(16, 64), S(0)},
    {"A23a relu6", OP_RELU6, {0}, 4, 0, S(1, 4, 8, 8), S(0)},
    {"A23b hardsigmoid", OP_HSIGMOID, {0}, 2, 0, S(16, 64), S(0)},
    {"A23c hardswish", OP_HSWISH, {0}, 4, 0, S(1, 8, 4, 4), S(0)},
    {"A23d nanzero", OP_NANZERO, {0}, 3, 0, S(1, 8, 16), S(0)},
    {"A23d softmax last axis", OP_SOFTMAX, {2}, 3, 0, S(2, 8, 16), S(0)},
    {"A23e layernorm last axis", OP_LAYERNORM, {2, 0x3727c5ac}, 3, 0, S(2, 8, 16), S(0)},
    {"A24 bias axis 1", OP_BIAS, {1}, 4, 1, S(1, 8, 8, 8), S(8)},
    {"A25 scale axis 1", OP_SCALE, {1}, 2, 1, S(16, 64), S(64)},
};
#define N_OPS_CASES (sizeof ops_cases / sizeof ops_cases[0])

/* A one-node graph for the case; inputs are graph inputs (not weights). */
static eg_graph *ops_graph(const ops_case *t) {
    eg_graph *g = eg_graph_new();
    assert_non_null(g);
    int a = tensor(g, "a", t->ra, t->a, EG_TF_INPUT), b = -1;
    if (ops_table[t->op].arity > 1) b = tensor(g, "b", t->rb, t->b, EG_TF_INPUT);
    ops_node(g, t->op, t->param, a, b, "y");
    index_ok(g);
    return g;
}

/* Check one node's cost on a backend: finite, positive (0 for the
 * constants; on cuda a split view of a few bytes may cost 0, its copy no
 * longer than an empty launch), the same from a fresh model, a hit the
 * second time. */
static void check_node(eg_cost_kind kind, eg_graph *g, int is_const) {
    eg_cost *c1 = cost_new(kind, NULL);
    uint64_t hits, misses;
    double t1 = eg_cost_node(c1, g, 0);
    const eg_node *n = &g->node[0];
    int view = n->kind == EG_KIND_OPS && ops_table[n->op].form == OPS_FORM_SPLIT;
    assert_true(isfinite(t1));
    if (is_const) assert_true(t1 == 0);
    else if (kind == EG_COST_CUDA && view) assert_true(t1 >= 0);
    else assert_true(t1 > 0);
    eg_cost_stats(c1, &hits, &misses);
    assert_int_equal(hits, 0);
    assert_int_equal(misses, 1);
    assert_true(eg_cost_node(c1, g, 0) == t1);
    assert_int_equal(eg_cost_fallbacks(c1), 0); /* measured, not estimated */
    assert_int_equal(eg_cost_measured(c1), kind != EG_COST_ANALYTIC && !is_const);
    eg_cost_stats(c1, &hits, &misses);
    assert_int_equal(hits, 1);
    assert_int_equal(misses, 1);
    if (kind == EG_COST_ANALYTIC) {
        eg_cost *c2 = cost_new(kind, NULL);
        assert_true(eg_cost_node(c2, g, 0) == t1);
        eg_cost_free(c2);
    }
    eg_cost_free(c1);
}

static void test_ops(void **state) {
    const ops_case *t = *state;
    eg_graph *g = ops_graph(t);
    /* constants, and reshapes (a new shape on the same buffer), cost nothing */
    int is_free = (ops_table[t->op].flags & OPF_CONST) || ops_table[t->op].form == OPS_FORM_HEADS;
    check_node(EG_COST_ANALYTIC, g, is_free);
    check_node(EG_COST_CPU, g, is_free);
    if (have_cuda()) check_node(EG_COST_CUDA, g, is_free);
    eg_free(g);
}

/* Every operator is costed: a row of ops_cases, or for an element-wise
 * row of the table without parameters (forms map, zip, scale) one made
 * from its form. */
static void test_ops_complete(void **state) {
    (void)state;
    int seen[OP_COUNT] = {0};
    for (size_t i = 0; i < N_OPS_CASES; i++) seen[ops_cases[i].op]++;
    for (int op = 0; op < OP_COUNT; op++) {
        if (seen[op]) continue;
        ops_form f = ops_table[op].form;
        if ((f == OPS_FORM_MAP || f == OPS_FORM_ZIP || f == OPS_FORM_SCALE) && ops_table[op].n_params == 0) {
            ops_case c = {ops_table[op].name, (ops_op)op, {0}, 2, f == OPS_FORM_ZIP ? 2 : 0, S(4, 4), S(4, 4)};
            void *st = &c;
            test_ops(&st);
            continue;
        }
        fail_msg("operator %s has no row: add it to ops_cases in test/test_engine_cost.c (element-wise rows "
                 "without parameters come from the operator table)", ops_table[op].name);
    }
}

/* ================= M: every model operator ================= */

#define MAX_T 5
typedef struct {
    const char *id;
    eg_mop mop;
    eg_attrs attr;
    int n_in, n_out;
    int rank[MAX_T + 2];     /* inputs, then outputs */
    int64_t dim[MAX_T + 2][4];
} mop_case;

static const mop_case mop_cases[] = {
    {"M01 Conv 3x3 pads 1 + bias", EG_MOP_CONV,
     {.stride = {1, 1}, .pad = {1, 1, 1, 1}, .group = 1}, 3, 1, {4, 4, 1, 4},
     {S(1, 4, 8, 8), S(8, 4, 3, 3), S(8), S(1, 8, 8, 8)}},
    {"M02 Conv grouped stride 2", EG_MOP_CONV,
     {.stride = {2, 2}, .pad = {0, 0, 0, 0}, .group = 2}, 2, 1, {4, 4, 4},
     {S(1, 4, 8, 8), S(8, 2, 2, 2), S(1, 8, 4, 4)}},
    {"M03 MaxPool 2x2 s2", EG_MOP_MAXPOOL, {.kernel = {2, 2}, .stride = {2, 2}}, 1, 1, {4, 4},
     {S(1, 4, 8, 8), S(1, 4, 4, 4)}},
    {"M04 AveragePool 3x3 pads 1", EG_MOP_AVGPOOL,
     {.kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1, 1, 1}, .flags = EG_AF_COUNT_PAD}, 1, 1,
     {4, 4}, {S(1, 4, 8, 8), S(1, 4, 8, 8)}},
    {"M05 GlobalAveragePool", EG_MOP_GLOBALAVGPOOL, {.group = 0}, 1, 1, {4, 4},
     {S(1, 4, 8, 8), S(1, 4, 1, 1)}},
    {"M06 Gemm + C", EG_MOP_GEMM, {.alpha = 1, .beta = 1}, 3, 1, {2, 2, 1, 2},
     {S(8, 16), S(16, 4), S(4), S(8, 4)}},
    {"M07 Gemm transA", EG_MOP_GEMM, {.alpha = 1, .flags = EG_AF_TRANS_A}, 2, 1, {2, 2, 2},
     {S(16, 8), S(16, 4), S(8, 4)}},
    {"M08 MatMul batched", EG_MOP_MATMUL, {.group = 0}, 2, 1, {3, 2, 3},
     {S(2, 8, 16), S(16, 4), S(2, 8, 4)}},
    {"M09 Add broadcast", EG_MOP_ADD, {.group = 0}, 2, 1, {2, 1, 2}, {S(4, 4), S(4), S(4, 4)}},
    {"M10 Mul", EG_MOP_MUL, {.group = 0}, 2, 1, {2, 2, 2}, {S(4, 4), S(4, 4), S(4, 4)}},
    {"M10a Div broadcast", EG_MOP_DIV, {.group = 0}, 2, 1, {2, 1, 2}, {S(4, 4), S(4), S(4, 4)}},
    {"M11 Relu", EG_MOP_RELU, {.group = 0}, 1, 1, {2, 2}, {S(4, 4), S(4, 4)}},
    {"M12 Sigmoid", EG_MOP_SIGMOID, {.group = 0}, 1, 1, {2, 2}, {S(4, 4), S(4, 4)}},
    {"M13 Tanh", EG_MOP_TANH, {.group = 0}, 1, 1, {2, 2}, {S(4, 4), S(4, 4)}},
    {"M14 Concat 3 inputs", EG_MOP_CONCAT, {.axis = 1}, 3, 1, {2, 2, 2, 2},
     {S(4, 2), S(4, 2), S(4, 2), S(4, 6)}},
    {"M15 Split 2 ways", EG_MOP_SPLIT, {.axis = 1}, 1, 2, {2, 2, 2},
     {S(4, 6), S(4, 3), S(4, 3)}},
    {"M16 Transpose rank 3", EG_MOP_TRANSPOSE, {.group = 0}, 1, 1, {3, 3},
     {S(2, 3, 4), S(4, 3, 2)}},
    {"M17 Reshape", EG_MOP_RESHAPE, {.group = 0}, 2, 1, {2, 1, 1}, {S(4, 6), S(1), S(24)}},
    {"M18 Flatten", EG_MOP_FLATTEN, {.axis = 1}, 1, 1, {3, 2}, {S(2, 3, 4), S(2, 12)}},
    {"M19 BatchNormalization", EG_MOP_BATCHNORM, {.epsilon = 1e-5f}, 5, 1, {4, 1, 1, 1, 1, 4},
     {S(1, 4, 8, 8), S(4), S(4), S(4), S(4), S(1, 4, 8, 8)}},
    {"M20 Softmax axis -1", EG_MOP_SOFTMAX, {.axis = -1}, 1, 1, {2, 2}, {S(4, 6), S(4, 6)}},
    {"M20a LayerNormalization axis 1", EG_MOP_LAYERNORM, {.axis = 1, .epsilon = 1e-5f}, 3, 1,
     {3, 2, 2, 3}, {S(2, 4, 6), S(4, 6), S(4, 6), S(2, 4, 6)}},
    {"M21 Identity", EG_MOP_IDENTITY, {.group = 0}, 1, 1, {2, 2}, {S(4, 4), S(4, 4)}},
    {"M22 AveragePool excluding pads", EG_MOP_AVGPOOL,
     {.kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1, 1, 1}}, 1, 1, {4, 4},
     {S(1, 4, 8, 8), S(1, 4, 8, 8)}},
    {"M23 MaxPool ceil mode", EG_MOP_MAXPOOL, {.kernel = {2, 2}, .stride = {2, 2}}, 1, 1, {4, 4},
     {S(1, 2, 7, 7), S(1, 2, 4, 4)}},
    {"M24 Gemm transB", EG_MOP_GEMM, {.alpha = 1, .flags = EG_AF_TRANS_B}, 2, 1, {2, 2, 2},
     {S(8, 16), S(4, 16), S(8, 4)}},
    {"M25 Conv depthwise asymmetric pads", EG_MOP_CONV,
     {.stride = {1, 1}, .pad = {0, 1, 2, 1}, .group = 4}, 2, 1, {4, 4, 4},
     {S(1, 4, 8, 8), S(4, 1, 3, 3), S(1, 4, 8, 8)}},
    {"M26 Sum of three", EG_MOP_SUM, {.group = 0}, 3, 1, {2, 2, 2, 2},
     {S(4, 4), S(4, 4), S(4, 4), S(4, 4)}},
};
#define N_MOP_CASES (sizeof mop_cases / sizeof mop_cases[0])

static eg_graph *mop_graph(const mop_case *t) {
    eg_graph *g = eg_graph_new();
    int id, ids[MAX_T + 2];
    char name[16];
    assert_non_null(g);
    for (int k = 0; k < t->n_in + t->n_out; k++) {
        snprintf(name, sizeof name, "t%d", k);
        ids[k] = tensor(g, name, t->rank[k], t->dim[k], k < t->n_in ? EG_TF_INPUT : 0);
    }
    assert_int_equal(eg_add_node(g, EG_KIND_MODEL, "n", t->n_in, 0, t->n_out, &id), EG_OK);
    eg_node *n = &g->node[id];
    n->mop = t->mop;
    n->attr = t->attr;
    for (int k = 0; k < t->n_in; k++) n->in[k] = ids[k];
    for (int k = 0; k < t->n_out; k++) n->out[k] = ids[t->n_in + k];
    index_ok(g);
    return g;
}

static void test_mop(void **state) {
    eg_graph *g = mop_graph(*state);
    const mop_case *t = *state;
    /* a new shape on the same buffer costs nothing: runtimes alias it */
    int is_free = t->mop == EG_MOP_RESHAPE || t->mop == EG_MOP_FLATTEN || t->mop == EG_MOP_IDENTITY;
    check_node(EG_COST_ANALYTIC, g, is_free);
    check_node(EG_COST_CPU, g, is_free);
    if (have_cuda()) check_node(EG_COST_CUDA, g, is_free);
    eg_free(g);
}

static void test_mop_complete(void **state) {
    (void)state;
    int seen[EG_MOP_COUNT] = {0};
    for (size_t i = 0; i < N_MOP_CASES; i++) seen[mop_cases[i].mop]++;
    for (int m = 0; m < EG_MOP_COUNT; m++) {
        if (!seen[m]) print_error("model op %s has no row\n", eg_mop_name((eg_mop)m));
        assert_true(seen[m] >= 1);
    }
}

/* ================= memo, weight-only, unknown and opaque ================= */

/* Two nodes with the same operator and shapes share one entry; a fused
 * RELU costs what the plain conv costs. */
static void test_memo(void **state) {
    (void)state;
    eg_graph *g = eg_graph_new();
    int32_t p[OPS_MAX_PARAMS] = {1, OPS_PAD_SAME, OPS_ACT_NONE, 1};
    int x = tensor(g, "x", 4, (int64_t[]){1, 8, 16, 16}, EG_TF_INPUT);
    int w = tensor(g, "w", 4, (int64_t[]){8, 8, 3, 3}, EG_TF_INPUT);
    ops_node(g, OP_CONV2D, p, x, w, "y1");
    ops_node(g, OP_CONV2D, p, x, w, "y2");
    p[2] = OPS_ACT_RELU;
    ops_node(g, OP_CONV2D, p, x, w, "y3");
    index_ok(g);
    eg_cost *c = cost_new(EG_COST_ANALYTIC, NULL);
    uint64_t hits, misses;
    double a = eg_cost_node(c, g, 0), b = eg_cost_node(c, g, 1), r = eg_cost_node(c, g, 2);
    eg_cost_stats(c, &hits, &misses);
    assert_true(a == b && a == r);
    assert_int_equal(hits, 1);
    assert_int_equal(misses, 2);
    assert_int_equal(eg_cost_size(c), 2);
    assert_true(eg_cost_graph(c, g) == 3 * a);
    eg_cost_free(c);
    eg_free(g);
}

/* analytic-cpu's fitted table (cost_calib.h, bench/calibrate.py): every
 * class has usable constants (finite, none negative, a kernel never free),
 * and kernels land in the class their onnxruntime kernel is (a depthwise
 * conv is not a dense one: onnxruntime runs them with other code). */
static void test_calibration(void **state) {
    (void)state;
    for (int i = 0; i < EG_CAL_COUNT; i++) {
        const eg_cost_calib *p = &eg_cost_calib_table[i];
        assert_true(isfinite(p->launch_us) && isfinite(p->us_per_flop) && isfinite(p->us_per_byte));
        assert_true(p->launch_us >= 0 && p->us_per_flop >= 0 && p->us_per_byte >= 0);
        assert_true(p->launch_us + p->us_per_flop + p->us_per_byte > 0);
    }
    eg_cost_kern k = {.cls = EG_KC_CONV, .c = 32, .group = 32, .kh = 3, .kw = 3};
    assert_int_equal(eg_cost_cal_of(&k), EG_CAL_DWCONV);
    k.group = 4;
    assert_int_equal(eg_cost_cal_of(&k), EG_CAL_GCONV);
    k.group = 1;
    assert_int_equal(eg_cost_cal_of(&k), EG_CAL_CONV);
    k.kh = k.kw = 1;
    assert_int_equal(eg_cost_cal_of(&k), EG_CAL_CONV1);
    k = (eg_cost_kern){.cls = EG_KC_EWISE, .ew = EG_EW_SIGMOID};
    assert_int_equal(eg_cost_cal_of(&k), EG_CAL_EWMATH);
    k.ew = EG_EW_RELU;
    assert_int_equal(eg_cost_cal_of(&k), EG_CAL_EW);
    k = (eg_cost_kern){.cls = EG_KC_FREE};
    assert_int_equal(eg_cost_cal_of(&k), -1);
    assert_true(strstr(EG_COST_CALIB_MACHINE, "onnxruntime") != NULL);
    /* permutations: a batched swap of two blocks is a transpose, three
     * blocks or more the general (slow) class, axes of size 1 aside */
    eg_graph *g = eg_graph_new();
    int x = tensor(g, "x", 4, (int64_t[]){1, 12, 128, 64}, EG_TF_INPUT);
    int32_t p3[OPS_MAX_PARAMS] = {OPS_PERM4(0, 3, 2, 1)}, p2[OPS_MAX_PARAMS] = {OPS_PERM4(0, 1, 3, 2)},
            ph[OPS_MAX_PARAMS] = {OPS_PERM4(0, 2, 1, 3)}, p1[OPS_MAX_PARAMS] = {OPS_PERM4(1, 0, 2, 3)};
    ops_node(g, OP_PERMUTE, p3, x, -1, "rev3");
    ops_node(g, OP_PERMUTE, p2, x, -1, "swap_last");
    ops_node(g, OP_PERMUTE, ph, x, -1, "heads");
    ops_node(g, OP_PERMUTE, p1, x, -1, "unit_axis");
    index_ok(g);
    eg_cost *c = cost_new(EG_COST_ANALYTIC_CPU, NULL);
    const eg_cost_calib *t = &eg_cost_calib_table[EG_CAL_TRANS], *tn = &eg_cost_calib_table[EG_CAL_TRANSN];
    double bytes = 2.0 * 4 * 12 * 128 * 64, simple = t->launch_us + bytes * t->us_per_byte;
    assert_true(fabs(eg_cost_node(c, g, 0) - (tn->launch_us + bytes * tn->us_per_byte)) < 1e-9 * simple);
    for (int j = 1; j < 4; j++) assert_true(fabs(eg_cost_node(c, g, j) - simple) < 1e-9 * simple);
    eg_cost_free(c);
    eg_free(g);
}

/* onnxruntime folds a multiply by a constant scalar on a MatMul's input or
 * output into the MatMul (FusedMatMul's alpha): such a multiply costs
 * nothing, so moving it across the product is no saving; by a scalar that
 * is not constant it runs, and costs. */
static void test_matmul_scale(void **state) {
    (void)state;
    for (int konst = 0; konst < 2; konst++)
        for (int after = 0; after < 2; after++) {
            eg_graph *g = eg_graph_new();
            int x = tensor(g, "x", 2, (int64_t[]){64, 64}, EG_TF_INPUT);
            int w = tensor(g, "w", 2, (int64_t[]){64, 64}, EG_TF_INIT);
            int s = tensor(g, "s", 0, NULL, konst ? EG_TF_INIT : EG_TF_INPUT);
            int32_t p0[OPS_MAX_PARAMS] = {0};
            int m, sc;
            if (after) {
                m = ops_node(g, OP_MATMUL, p0, x, w, "m");
                sc = ops_node(g, OP_SMUL, p0, g->node[m].out[0], s, "sc");
                g->tensor[g->node[sc].out[0]].flags |= EG_TF_OUTPUT;
            } else {
                sc = ops_node(g, OP_SMUL, p0, x, s, "sc");
                m = ops_node(g, OP_MATMUL, p0, g->node[sc].out[0], w, "m");
                g->tensor[g->node[m].out[0]].flags |= EG_TF_OUTPUT;
            }
            index_ok(g);
            eg_cost *c = cost_new(EG_COST_ANALYTIC_CPU, NULL);
            double all = eg_cost_graph(c, g), mm = eg_cost_node(c, g, m), smul = eg_cost_node(c, g, sc);
            assert_true(smul > 0);
            assert_true(fabs(all - (konst ? mm : mm + smul)) < 1e-9 * all);
            eg_cost_free(c);
            eg_free(g);
        }
}

/* SqueezeNet's fire module, expand convs of 64 channels from 16: a 1x1
 * and a 3x3 conv, or one 3x3 conv of both (the 1x1 enlarged with zeros,
 * TASO's merge). The GPU-like roofline rates the merged conv cheaper (one
 * launch saved); analytic-cpu (the deterministic mode's) rates it
 * dearer (the 1x1's work nine-fold), as onnxruntime on a CPU runs it. Both
 * are deterministic: the same figures from a fresh model. */
static void test_analytic_targets(void **state) {
    (void)state;
    eg_graph *g = eg_graph_new();
    int32_t p1[OPS_MAX_PARAMS] = {1, OPS_PAD_SAME, OPS_ACT_NONE, 1}, p3[OPS_MAX_PARAMS] = {1, OPS_PAD_SAME,
                                                                                          OPS_ACT_NONE, 1};
    int x = tensor(g, "x", 4, (int64_t[]){1, 16, 28, 28}, EG_TF_INPUT);
    int w1 = tensor(g, "w1", 4, (int64_t[]){64, 16, 1, 1}, EG_TF_INPUT);
    int w3 = tensor(g, "w3", 4, (int64_t[]){64, 16, 3, 3}, EG_TF_INPUT);
    int wm = tensor(g, "wm", 4, (int64_t[]){128, 16, 3, 3}, EG_TF_INPUT);
    ops_node(g, OP_CONV2D, p1, x, w1, "e1");
    ops_node(g, OP_CONV2D, p3, x, w3, "e3");
    ops_node(g, OP_CONV2D, p3, x, wm, "merged");
    index_ok(g);
    for (int gpu = 0; gpu < 2; gpu++) {
        eg_cost *c = cost_new(gpu ? EG_COST_ANALYTIC : EG_COST_ANALYTIC_CPU, NULL);
        double apart = eg_cost_node(c, g, 0) + eg_cost_node(c, g, 1), merged = eg_cost_node(c, g, 2);
        print_message("# %s: 1x1 + 3x3 %.2f us, merged 3x3 %.2f us\n", gpu ? "analytic" : "analytic-cpu", apart,
                      merged);
        assert_true(gpu ? merged < apart : merged > apart);
        assert_int_equal(eg_cost_measured(c), 0);
        assert_true(eg_cost_noise(c) == 0);
        eg_cost *again = cost_new(gpu ? EG_COST_ANALYTIC : EG_COST_ANALYTIC_CPU, NULL);
        assert_true(eg_cost_node(again, g, 2) == merged);
        eg_cost_free(again);
        /* a fork (the search's second thread) holds the memo and answers
         * alike; its lookups join the model's counts */
        eg_cost *fork = NULL;
        uint64_t hits0, hits1, misses0, misses1;
        assert_int_equal(eg_cost_fork(c, &fork), EG_OK);
        assert_int_equal(eg_cost_size(fork), eg_cost_size(c));
        eg_cost_stats(c, &hits0, &misses0);
        assert_true(eg_cost_node(fork, g, 2) == merged && eg_cost_node(fork, g, 0) + eg_cost_node(fork, g, 1) == apart);
        eg_cost_join_stats(c, fork);
        eg_cost_stats(c, &hits1, &misses1);
        assert_true(hits1 == hits0 + 3 && misses1 == misses0);
        eg_cost_free(fork);
        eg_cost_free(c);
    }
    assert_int_equal(eg_cost_kind_parse("analytic-cpu"), EG_COST_ANALYTIC_CPU);
    assert_string_equal(eg_cost_kind_name(EG_COST_ANALYTIC_CPU), "analytic-cpu");
    eg_free(g);
}

/* w2 = w + w on an initializer is weight-only: the graph costs the matmul. */
static void test_weight_only(void **state) {
    (void)state;
    eg_graph *g = eg_graph_new();
    int32_t p[OPS_MAX_PARAMS] = {0};
    int x = tensor(g, "x", 2, (int64_t[]){8, 16}, EG_TF_INPUT);
    int w = tensor(g, "w", 2, (int64_t[]){16, 4}, EG_TF_INIT);
    int add = ops_node(g, OP_EWADD, p, w, w, "w2");
    int mm = ops_node(g, OP_MATMUL, p, x, g->node[add].out[0], "y");
    index_ok(g);
    eg_cost *c = cost_new(EG_COST_ANALYTIC, NULL);
    double t_add = eg_cost_node(c, g, add), t_mm = eg_cost_node(c, g, mm);
    assert_true(t_add > 0);
    assert_true(eg_cost_graph(c, g) == t_mm);
    eg_cost_free(c);
    eg_free(g);
}

static void test_unknown_and_opaque(void **state) {
    (void)state;
    eg_graph *g = eg_graph_new();
    int id;
    int x = tensor(g, "x", -1, NULL, EG_TF_INPUT);
    int y = tensor(g, "y", -1, NULL, 0);
    int z = tensor(g, "z", 2, (int64_t[]){1000, 250}, 0);
    assert_int_equal(eg_add_node(g, EG_KIND_MODEL, "relu", 1, 0, 1, &id), EG_OK);
    g->node[id].mop = EG_MOP_RELU, g->node[id].in[0] = x, g->node[id].out[0] = y;
    assert_int_equal(eg_add_node(g, EG_KIND_OPAQUE, "op", 1, 0, 1, &id), EG_OK);
    g->node[id].op_type = strdup("Custom"), g->node[id].domain = strdup("x.y");
    g->node[id].in[0] = y, g->node[id].out[0] = z;
    index_ok(g);
    eg_cost *c = cost_new(EG_COST_CPU, NULL);
    assert_true(eg_cost_node(c, g, 0) == EG_COST_UNKNOWN_US);
    assert_true(eg_cost_node(c, g, 1) == EG_COST_LAUNCH_US + 1e6 / EG_COST_BANDWIDTH);
    eg_cost_free(c);
    eg_free(g);
}

/* A symbolic batch dim costs as batch 1. */
static void test_dynamic_batch(void **state) {
    (void)state;
    eg_graph *g = eg_graph_new();
    int id;
    int xd = tensor(g, "xd", 2, (int64_t[]){-1, 16}, EG_TF_INPUT);
    int x1 = tensor(g, "x1", 2, (int64_t[]){1, 16}, EG_TF_INPUT);
    int w = tensor(g, "w", 2, (int64_t[]){16, 4}, EG_TF_INPUT);
    int yd = tensor(g, "yd", 2, (int64_t[]){-1, 4}, 0);
    int y1 = tensor(g, "y1", 2, (int64_t[]){1, 4}, 0);
    const int io[2][2] = {{xd, yd}, {x1, y1}};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(eg_add_node(g, EG_KIND_MODEL, "mm", 2, 0, 1, &id), EG_OK);
        g->node[id].mop = EG_MOP_MATMUL;
        g->node[id].in[0] = io[i][0], g->node[id].in[1] = w, g->node[id].out[0] = io[i][1];
    }
    index_ok(g);
    eg_cost *c = cost_new(EG_COST_ANALYTIC, NULL);
    double td = eg_cost_node(c, g, 0);
    assert_true(td == eg_cost_node(c, g, 1));
    assert_true(td < EG_COST_UNKNOWN_US);
    assert_int_equal(eg_cost_size(c), 2); /* distinct keys all the same */
    eg_cost_free(c);
    eg_free(g);
}

/* ================= merging three MatMuls ================= */

/* x [64,256] times three [256,256] weights, either as three matmuls or as
 * one [256,768] matmul (its weight concatenated: weight-only) plus
 * split0/split1 pairs. The analytic (GPU-like) model prefers the merge, and
 * so does the cuda backend where there is a device. */
static void test_merge_matmuls(void **state) {
    (void)state;
    int32_t p0[OPS_MAX_PARAMS] = {0}, s256[OPS_MAX_PARAMS] = {1, 256};
    eg_graph *three = eg_graph_new(), *one = eg_graph_new();
    int64_t xd[] = {64, 256}, wd[] = {256, 256};
    int w[3], x = tensor(three, "x", 2, xd, EG_TF_INPUT);
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "w%d", i);
        w[i] = tensor(three, name, 2, wd, EG_TF_INIT);
        snprintf(name, sizeof name, "y%d", i);
        ops_node(three, OP_MATMUL, p0, x, w[i], name);
    }
    index_ok(three);

    int x1 = tensor(one, "x", 2, xd, EG_TF_INPUT), v[3];
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "w%d", i);
        v[i] = tensor(one, name, 2, wd, EG_TF_INIT);
    }
    int32_t axis1[OPS_MAX_PARAMS] = {1};
    int c01 = ops_node(one, OP_CONCAT, axis1, v[0], v[1], "w01");
    int cat = ops_node(one, OP_CONCAT, axis1, one->node[c01].out[0], v[2], "w012");
    int mm = ops_node(one, OP_MATMUL, p0, x1, one->node[cat].out[0], "y");
    int yall = one->node[mm].out[0];
    ops_node(one, OP_SPLIT0, s256, yall, -1, "y0");
    int rest = ops_node(one, OP_SPLIT1, s256, yall, -1, "y12");
    ops_node(one, OP_SPLIT0, s256, one->node[rest].out[0], -1, "y1");
    ops_node(one, OP_SPLIT1, s256, one->node[rest].out[0], -1, "y2");
    index_ok(one);

    eg_cost *c = cost_new(EG_COST_ANALYTIC, NULL);
    double t3 = eg_cost_graph(c, three), t1 = eg_cost_graph(c, one);
    print_message("# analytic: 3 matmuls %.2f us, merged + 4 splits %.2f us\n", t3, t1);
    assert_true(t1 < t3);
    assert_true(eg_cost_node(c, one, c01) > 0); /* not free, but weight-only */
    eg_cost_free(c);
    c = cost_new(EG_COST_CPU, NULL);
    print_message("# cpu: 3 matmuls %.2f us, merged + 4 splits %.2f us\n", eg_cost_graph(c, three),
                  eg_cost_graph(c, one));
    eg_cost_free(c);
    if (have_cuda()) {
        /* On a GPU the merge runs faster (one launch for three); the
         * splits are views there, which must not cost a launch each. */
        c = cost_new(EG_COST_CUDA, NULL);
        t3 = eg_cost_graph(c, three), t1 = eg_cost_graph(c, one);
        print_message("# cuda: 3 matmuls %.2f us, merged + 4 splits %.2f us\n", t3, t1);
        assert_true(t1 < t3);
        eg_cost_free(c);
    }
    eg_free(three);
    eg_free(one);
}

/* ================= real models ================= */

/* Every well-formed corpus model costs a finite, positive amount on both
 * backends, the cpu one without a fallback; costing twice is all hits. */
static void test_corpus(void **state) {
    (void)state;
    static const char *const files[] = {"attention.onnx", "conv_bn_relu.onnx", "convs.onnx",
                                        "inception.onnx", "mixed.onnx", "opaque.onnx",
                                        "old_opset.onnx"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[256], err[EG_ERRLEN];
        eg_graph *g = NULL;
        snprintf(path, sizeof path, "test/corpus/onnx/%s", files[i]);
        eg_status rc = eg_load(path, NULL, &g, err, sizeof err);
        if (rc != EG_OK) print_error("%s\n", err);
        assert_int_equal(rc, EG_OK);
        for (int kind = EG_COST_ANALYTIC; kind <= EG_COST_CPU; kind++) {
            eg_cost *c = cost_new((eg_cost_kind)kind, NULL);
            uint64_t hits, misses;
            double t = eg_cost_graph(c, g);
            eg_cost_stats(c, NULL, &misses);
            assert_true(eg_cost_graph(c, g) == t);
            eg_cost_stats(c, &hits, NULL);
            print_message("# %s %s: %d nodes, %.1f us, %llu distinct\n", files[i],
                          eg_cost_kind_name((eg_cost_kind)kind), g->n_nodes, t,
                          (unsigned long long)eg_cost_size(c));
            assert_true(isfinite(t) && t > 0);
            assert_true(hits >= misses);
            assert_int_equal(eg_cost_fallbacks(c), 0);
            eg_cost_free(c);
        }
        eg_free(g);
    }
}

/* What the export writes as one node costs as one: in legal_dense.onnx the
 * inner concats of the 3- and 4-input Concat chains and the scale of the
 * lone BatchNormalization (scale + bias) cost nothing of their own; every
 * other node costs what eg_cost_node says. */
static void test_written_inside(void **state) {
    (void)state;
    char err[EG_ERRLEN];
    eg_graph *g = NULL;
    eg_status rc = eg_load("test/corpus/onnx/legal_dense.onnx", NULL, &g, err, sizeof err);
    if (rc != EG_OK) print_error("%s\n", err);
    assert_int_equal(rc, EG_OK);
    eg_cost *c = cost_new(EG_COST_ANALYTIC, NULL);
    double want = 0;
    int free_nodes = 0;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        const eg_tensor *o = &g->tensor[n->out[0]];
        int inner = n->kind == EG_KIND_OPS && n->op == OP_SCALE && !(o->flags & EG_TF_OUTPUT);
        for (int r = 0; n->kind == EG_KIND_OPS && n->op == OP_CONCAT && r < g->n_nodes; r++)
            inner |= g->node[r].kind == EG_KIND_OPS && g->node[r].op == OP_CONCAT &&
                     (g->node[r].in[0] == n->out[0] || g->node[r].in[1] == n->out[0]);
        if (inner) free_nodes++;
        else want += eg_cost_node(c, g, j);
    }
    assert_int_equal(free_nodes, 1 + 2 + 1); /* cat3's inner, cat4's two, the scale */
    assert_true(fabs(eg_cost_graph(c, g) - want) < 1e-9 * want);
    eg_cost_free(c);
    eg_free(g);
}

/* layernorm + scale + bias is one LayerNormalization when exported, so the
 * graph costs the layernorm alone; a scale whose output is read twice is a
 * Mul of its own, and its reader a bias of its own too. */
static void test_layernorm_charged_once(void **state) {
    (void)state;
    for (int shared = 0; shared < 2; shared++) {
        eg_graph *g = eg_graph_new();
        int32_t p[OPS_MAX_PARAMS] = {1, 0x3727c5ac}, cp[OPS_MAX_PARAMS] = {1};
        int x = tensor(g, "x", 2, (int64_t[]){32, 64}, EG_TF_INPUT);
        int v = tensor(g, "v", 1, (int64_t[]){64}, EG_TF_INPUT);
        /* adding a node moves the arrays: take each id before reading them */
        int j = ops_node(g, OP_LAYERNORM, p, x, -1, "l"), l = g->node[j].out[0];
        j = ops_node(g, OP_SCALE, cp, l, v, "s");
        int s = g->node[j].out[0];
        j = ops_node(g, OP_BIAS, cp, s, v, "y");
        g->tensor[g->node[j].out[0]].flags |= EG_TF_OUTPUT;
        if (shared) {
            j = ops_node(g, OP_RELU, cp, s, -1, "r");
            g->tensor[g->node[j].out[0]].flags |= EG_TF_OUTPUT;
        }
        index_ok(g);
        eg_cost *c = cost_new(EG_COST_ANALYTIC, NULL);
        double want = eg_cost_node(c, g, 0) + (shared ? eg_cost_node(c, g, 2) + eg_cost_node(c, g, 3) : 0);
        assert_true(fabs(eg_cost_graph(c, g) - want) < 1e-9 * want);
        eg_cost_free(c);
        eg_free(g);
    }
}

/* ================= cpu backend ================= */

/* Measured costs are finite and positive, measured once and then memoised
 * (the same value again, no new measurement), and never a fallback. Which
 * conv is dearer is a claim about wall-clock time, so it is not asserted
 * here: bench/cost.sh measures it and records medians. */
static void test_cpu_conv_measures(void **state) {
    (void)state;
    eg_graph *g = eg_graph_new();
    int32_t p[OPS_MAX_PARAMS] = {1, OPS_PAD_SAME, OPS_ACT_NONE, 1};
    int xs = tensor(g, "xs", 4, (int64_t[]){1, 4, 8, 8}, EG_TF_INPUT);
    int ws = tensor(g, "ws", 4, (int64_t[]){4, 4, 1, 1}, EG_TF_INPUT);
    int xb = tensor(g, "xb", 4, (int64_t[]){1, 32, 32, 32}, EG_TF_INPUT);
    int wb = tensor(g, "wb", 4, (int64_t[]){64, 32, 3, 3}, EG_TF_INPUT);
    ops_node(g, OP_CONV2D, p, xs, ws, "ys");
    ops_node(g, OP_CONV2D, p, xb, wb, "yb");
    index_ok(g);
    eg_cost *c = cost_new(EG_COST_CPU, NULL);
    uint64_t hits, misses;
    double small = eg_cost_node(c, g, 0), big = eg_cost_node(c, g, 1);
    print_message("# cpu conv2d: [1,4,8,8]x[4,4,1,1] %.2f us, [1,32,32,32]x[64,32,3,3] %.2f us\n",
                  small, big);
    assert_true(isfinite(small) && small > 0);
    assert_true(isfinite(big) && big > 0);
    assert_true(eg_cost_node(c, g, 0) == small && eg_cost_node(c, g, 1) == big);
    eg_cost_stats(c, &hits, &misses);
    assert_int_equal(misses, 2);
    assert_int_equal(hits, 2);
    assert_int_equal(eg_cost_size(c), 2);
    assert_int_equal(eg_cost_fallbacks(c), 0);
    eg_cost *fork = NULL; /* a measured time is not a function of the node: no copy answers alike */
    assert_int_equal(eg_cost_fork(c, &fork), EG_EUNSUPPORTED);
    assert_null(fork);
    eg_cost_free(c);
    eg_free(g);
}

/* The price of a node not timed yet, for the e-graph's thousands of
 * e-nodes: the analytic price, in the measuring backend's scale (timed /
 * analytic of the kernels of its class timed so far, else of every class),
 * timing and memoising nothing. */
static void test_estimate_scaled(void **state) {
    (void)state;
    eg_graph *g = eg_graph_new();
    int32_t p[OPS_MAX_PARAMS] = {1, OPS_PAD_SAME, OPS_ACT_NONE, 1};
    int xa = tensor(g, "xa", 4, (int64_t[]){1, 16, 16, 16}, EG_TF_INPUT);
    int wa = tensor(g, "wa", 4, (int64_t[]){16, 16, 1, 1}, EG_TF_INPUT);
    int xb = tensor(g, "xb", 4, (int64_t[]){1, 32, 16, 16}, EG_TF_INPUT);
    int wb = tensor(g, "wb", 4, (int64_t[]){64, 32, 1, 1}, EG_TF_INPUT);
    int wc = tensor(g, "wc", 4, (int64_t[]){16, 16, 3, 3}, EG_TF_INPUT);
    int na = ops_node(g, OP_CONV2D, p, xa, wa, "ya"), nb = ops_node(g, OP_CONV2D, p, xb, wb, "yb");
    int nc = ops_node(g, OP_CONV2D, p, xa, wc, "yc");
    index_ok(g);
    eg_cost *an = cost_new(EG_COST_ANALYTIC_CPU, NULL), *c = cost_new(EG_COST_CPU, NULL);
    double aa = eg_cost_node(an, g, na), ab = eg_cost_node(an, g, nb), ac = eg_cost_node(an, g, nc);
    assert_true(eg_cost_node_estimate(an, g, nb) == ab); /* an analytic cost is its own estimate */
    assert_true(eg_cost_node_estimate(c, g, nb) == ab);  /* nothing timed yet: no scale */
    assert_int_equal(eg_cost_size(c), 0);
    assert_int_equal(eg_cost_measured(c), 0);
    double ta = eg_cost_node(c, g, na), scale = ta / aa;
    assert_true(ta > 0 && ta != aa);
    assert_true(fabs(eg_cost_node_estimate(c, g, nb) - ab * scale) <= 1e-9 * ab * scale); /* conv1's scale */
    assert_true(fabs(eg_cost_node_estimate(c, g, nc) - ac * scale) <= 1e-9 * ac * scale); /* no conv timed: all */
    assert_true(fabs(eg_cost_node_estimate(c, g, na) - ta) <= 1e-9 * ta); /* its scale is its own */
    assert_int_equal(eg_cost_size(c), 1);
    assert_int_equal(eg_cost_measured(c), 1);
    eg_cost_free(an);
    eg_cost_free(c);
    eg_free(g);
}

/* With two kernels of a class timed, a node between them in analytic
 * price takes a scale between theirs, interpolated in the logarithm of
 * the price; one beyond them takes the nearest one's; and the estimate's
 * epoch moves with each kernel timed (an analytic one's never). */
static void test_estimate_interpolated(void **state) {
    (void)state;
    eg_graph *g = eg_graph_new();
    int32_t p[OPS_MAX_PARAMS] = {1, OPS_PAD_SAME, OPS_ACT_NONE, 1};
    int sizes[4] = {8, 32, 96, 160}, node[4];
    for (int i = 0; i < 4; i++) {
        char x[8], w[8], y[8];
        snprintf(x, sizeof x, "x%d", i), snprintf(w, sizeof w, "w%d", i), snprintf(y, sizeof y, "y%d", i);
        int xi = tensor(g, x, 4, (int64_t[]){1, sizes[i], 16, 16}, EG_TF_INPUT);
        int wi = tensor(g, w, 4, (int64_t[]){sizes[i], sizes[i], 1, 1}, EG_TF_INPUT);
        node[i] = ops_node(g, OP_CONV2D, p, xi, wi, y);
    }
    index_ok(g);
    eg_cost *an = cost_new(EG_COST_ANALYTIC_CPU, NULL), *c = cost_new(EG_COST_CPU, NULL);
    double a[4];
    for (int i = 0; i < 4; i++) a[i] = eg_cost_node(an, g, node[i]);
    assert_true(a[0] < a[1] && a[1] < a[2] && a[2] < a[3]);
    assert_true(eg_cost_estimate_epoch(an) == 0);
    uint64_t e0 = eg_cost_estimate_epoch(c);
    double t0 = eg_cost_node(c, g, node[0]);
    uint64_t e1 = eg_cost_estimate_epoch(c);
    double t2 = eg_cost_node(c, g, node[2]);
    assert_true(e1 != e0 && eg_cost_estimate_epoch(c) != e1);
    double r0 = log(t0 / a[0]), r2 = log(t2 / a[2]);
    double r1 = r0 + (r2 - r0) * (log(a[1]) - log(a[0])) / (log(a[2]) - log(a[0]));
    double want1 = a[1] * exp(r1), want3 = a[3] * t2 / a[2];
    assert_true(fabs(eg_cost_node_estimate(c, g, node[1]) - want1) <= 1e-9 * want1);
    assert_true(fabs(eg_cost_node_estimate(c, g, node[3]) - want3) <= 1e-9 * want3);
    eg_cost_free(an);
    eg_cost_free(c);
    eg_free(g);
}

/* ================= cache file ================= */

/* Cost every table row on the cpu backend, save, reload: the same costs
 * and no measurement (misses == 0, eg_cost_measured 0, every entry loaded). */
static void test_cache_roundtrip(void **state) {
    (void)state;
    char path[128];
    eg_graph *g[N_OPS_CASES];
    double t[N_OPS_CASES];
    char err[EG_ERRLEN];
    uint64_t hits, misses;
    tmp_path(path, sizeof path, "cache");
    remove(path);
    eg_cost *c = cost_new(EG_COST_CPU, path);
    for (size_t i = 0; i < N_OPS_CASES; i++) {
        g[i] = ops_graph(&ops_cases[i]);
        t[i] = eg_cost_node(c, g[i], 0);
    }
    assert_int_equal(eg_cost_save(c, err, sizeof err), EG_OK);
    size_t n = eg_cost_size(c);
    assert_int_equal(eg_cost_loaded(c), 0);
    assert_true(eg_cost_measured(c) > 0);
    eg_cost_stats(c, NULL, &misses);
    assert_true(eg_cost_measured(c) <= misses);
    eg_cost_free(c);
    c = cost_new(EG_COST_CPU, path);
    assert_int_equal(eg_cost_size(c), n);
    assert_int_equal(eg_cost_loaded(c), n);
    for (size_t i = 0; i < N_OPS_CASES; i++) assert_true(eg_cost_node(c, g[i], 0) == t[i]);
    eg_cost_stats(c, &hits, &misses);
    assert_int_equal(misses, 0);
    assert_int_equal(eg_cost_measured(c), 0);
    assert_int_equal(hits, N_OPS_CASES);
    /* the analytic backend refuses the cpu file */
    eg_cost *a = NULL;
    assert_int_equal(eg_cost_new(EG_COST_ANALYTIC, path, &a, err, sizeof err), EG_EFORMAT);
    assert_null(a);
    assert_non_null(strstr(err, path));
    eg_cost_free(c);
    for (size_t i = 0; i < N_OPS_CASES; i++) eg_free(g[i]);
    remove(path);
}

static void test_cache_nopath(void **state) {
    (void)state;
    char err[EG_ERRLEN];
    eg_cost *c = cost_new(EG_COST_ANALYTIC, NULL);
    assert_int_equal(eg_cost_save(c, err, sizeof err), EG_OK);
    eg_cost_free(c);
}

typedef struct {
    const char *id;
    const char *text;    /* after the header when header is 1 */
    int header;          /* prepend the valid analytic header */
    int line;            /* the line the message names */
} bad_case;

#define HEAD "eg-cost-cache 1 analytic any\n"
static const bad_case bad_cases[] = {
    {"C01 empty file", "", 0, 0},
    {"C02 not a cache", "hello\n", 0, 1},
    {"C03 other backend", "eg-cost-cache 1 cpu any\n", 0, 1},
    {"C04 other machine", "eg-cost-cache 1 analytic some-gpu\n", 0, 1},
    {"C05 version 2", "eg-cost-cache 2 analytic any\n", 0, 1},
    {"C06 odd hex digits", "abc 1.5\n", 1, 2},
    {"C07 upper-case hex", "AB 1.5\n", 1, 2},
    {"C08 no time", "abcd\n", 1, 2},
    {"C09 empty time", "abcd \n", 1, 2},
    {"C10 negative time", "abcd -1\n", 1, 2},
    {"C11 nan", "abcd nan\n", 1, 2},
    {"C12 inf", "abcd inf\n", 1, 2},
    {"C13 trailing junk", "abcd 1.5x\n", 1, 2},
    {"C14 no newline at the end", "abcd 1.5\nabcd 2", 1, 3},
    {"C15 empty key", " 1.5\n", 1, 2},
    {"C16 blank line", "abcd 1\n\n", 1, 3},
    {"C17 header without newline", "eg-cost-cache 1 analytic any", 0, 1},
    {"C18 overflowing time", "abcd 1e999\n", 1, 2},
};
#define N_BAD_CASES (sizeof bad_cases / sizeof bad_cases[0])

static void expect_format(const char *path, const char *data, size_t len, int line) {
    char err[EG_ERRLEN] = "", want[160];
    eg_cost *c = NULL;
    write_file(path, data, len);
    eg_status rc = eg_cost_new(EG_COST_ANALYTIC, path, &c, err, sizeof err);
    if (rc != EG_EFORMAT) print_error("status %s: %s\n", eg_status_name(rc), err);
    assert_int_equal(rc, EG_EFORMAT);
    assert_null(c);
    snprintf(want, sizeof want, "%s:%d: ", path, line);
    if (line >= 0 && strncmp(err, want, strlen(want)) != 0)
        fail_msg("message '%s' does not start with '%s'", err, want);
}

static void test_bad_cache(void **state) {
    const bad_case *t = *state;
    char path[128], buf[512];
    tmp_path(path, sizeof path, "bad");
    snprintf(buf, sizeof buf, "%s%s", t->header ? HEAD : "", t->text);
    expect_format(path, buf, strlen(buf), t->line);
    remove(path);
}

/* A line longer than any key, and a NUL byte inside a record. */
static void test_bad_cache_bytes(void **state) {
    (void)state;
    char path[128];
    size_t n = 2 * EG_COST_MAX_KEY + 200, h = strlen(HEAD);
    char *buf = malloc(h + n + 8);
    assert_non_null(buf);
    tmp_path(path, sizeof path, "bytes");
    memcpy(buf, HEAD, h);
    memset(buf + h, 'a', n);
    memcpy(buf + h + n, " 1\n", 3);
    expect_format(path, buf, h + n + 3, 2);
    memcpy(buf + h, "ab\0d 1\n", 7);
    expect_format(path, buf, h + 7, 2);
    free(buf);
    remove(path);
}

/* Truncations of a valid file (every cut in the header and the first
 * record, then around each line end and every 7th byte: file writes are
 * slow here) load or are EG_EFORMAT; the ones cut at a line end load. */
static void test_cache_truncations(void **state) {
    (void)state;
    char path[128], cut[128], err[EG_ERRLEN];
    size_t len;
    tmp_path(path, sizeof path, "full");
    tmp_path(cut, sizeof cut, "cut");
    eg_cost *c = cost_new(EG_COST_ANALYTIC, path);
    for (size_t i = 0; i < 4; i++) {
        eg_graph *g = ops_graph(&ops_cases[i]);
        eg_cost_node(c, g, 0);
        eg_free(g);
    }
    assert_int_equal(eg_cost_save(c, err, sizeof err), EG_OK);
    eg_cost_free(c);
    char *full = read_file(path, &len);
    for (size_t k = 0; k < len; k++) {
        eg_cost *d = NULL;
        if (k > 120 && full[k - 1] != '\n' && full[k] != '\n' && k % 7) continue;
        write_file(cut, full, k);
        eg_status rc = eg_cost_new(EG_COST_ANALYTIC, cut, &d, err, sizeof err);
        int at_line_end = k > 0 && full[k - 1] == '\n';
        assert_int_equal(rc, at_line_end ? EG_OK : EG_EFORMAT);
        eg_cost_free(d);
    }
    free(full);
    remove(path);
    remove(cut);
}

/* Byte flips over a valid file (each position of the first records, a few
 * values each): the load succeeds or is EG_EFORMAT, and a success never
 * holds more entries than the file has lines. */
static void test_cache_flips(void **state) {
    (void)state;
    char path[128], bad[128], err[EG_ERRLEN];
    static const char vals[] = {'\0', '\n', ' ', '0', 'f', 'g', '-', 'e', '.', '\xff'};
    size_t len;
    tmp_path(path, sizeof path, "flipsrc");
    tmp_path(bad, sizeof bad, "flip");
    eg_cost *c = cost_new(EG_COST_ANALYTIC, path);
    for (size_t i = 0; i < 2; i++) {
        eg_graph *g = ops_graph(&ops_cases[i]);
        eg_cost_node(c, g, 0);
        eg_free(g);
    }
    assert_int_equal(eg_cost_save(c, err, sizeof err), EG_OK);
    eg_cost_free(c);
    char *full = read_file(path, &len);
    for (size_t k = 0; k < len; k += 3)
        for (size_t v = 0; v < sizeof vals; v++) {
            char keep = full[k];
            eg_cost *d = NULL;
            if (vals[v] == keep) continue;
            full[k] = vals[v];
            write_file(bad, full, len);
            eg_status rc = eg_cost_new(EG_COST_ANALYTIC, bad, &d, err, sizeof err);
            assert_true(rc == EG_OK || rc == EG_EFORMAT);
            if (rc == EG_OK) assert_true(eg_cost_size(d) <= 3);
            eg_cost_free(d);
            full[k] = keep;
        }
    free(full);
    remove(path);
    remove(bad);
}

/* ================= kinds ================= */

/* cuda: with a device, a backend that names the device and measures a
 * convolution and a matmul (no fallback to the roofline); without one, a
 * clear refusal. */
static void test_cuda_device_or_refusal(void **state) {
    (void)state;
    eg_cost *c = NULL;
    char err[EG_ERRLEN] = "";
    eg_status rc = eg_cost_new(EG_COST_CUDA, NULL, &c, err, sizeof err);
    if (!have_cuda()) {
        assert_int_equal(rc, EG_EUNSUPPORTED);
        assert_null(c);
        assert_non_null(strstr(err, "no CUDA device: use --cost analytic or cpu"));
        return;
    }
    assert_int_equal(rc, EG_OK);
    eg_graph *g = eg_graph_new();
    int32_t p[OPS_MAX_PARAMS] = {1, OPS_PAD_SAME, OPS_ACT_NONE, 1};
    int x = tensor(g, "x", 4, (int64_t[]){1, 32, 32, 32}, EG_TF_INPUT);
    int w = tensor(g, "w", 4, (int64_t[]){64, 32, 3, 3}, EG_TF_INPUT);
    int a = tensor(g, "a", 2, (int64_t[]){256, 512}, EG_TF_INPUT);
    int b = tensor(g, "b", 2, (int64_t[]){512, 128}, EG_TF_INPUT);
    int32_t none[OPS_MAX_PARAMS] = {0};
    ops_node(g, OP_CONV2D, p, x, w, "y");
    ops_node(g, OP_MATMUL, none, a, b, "z");
    index_ok(g);
    double conv = eg_cost_node(c, g, 0), mm = eg_cost_node(c, g, 1);
    print_message("# cuda: conv2d [1,32,32,32]x[64,32,3,3] %.2f us, matmul 256x512x128 %.2f us\n",
                  conv, mm);
    assert_true(isfinite(conv) && conv > 0 && isfinite(mm) && mm > 0);
    assert_int_equal(eg_cost_measured(c), 2);
    assert_int_equal(eg_cost_fallbacks(c), 0);
    eg_cost_free(c);
    eg_free(g);
}

static void test_kind_names(void **state) {
    (void)state;
    for (int k = 0; k < EG_COST_KIND_COUNT; k++)
        assert_int_equal(eg_cost_kind_parse(eg_cost_kind_name((eg_cost_kind)k)), k);
    assert_string_equal(eg_cost_kind_name(EG_COST_CPU), "cpu");
    assert_int_equal(eg_cost_kind_parse("gpu"), -1);
    assert_int_equal(eg_cost_kind_parse(NULL), -1);
}

/* ================= main ================= */


int main(void) {
    /* the tables' rows, then the single tests below (a fixed size overflowed
     * once the tables grew) */
    struct CMUnitTest tests[N_OPS_CASES + N_MOP_CASES + N_BAD_CASES + 32];
    size_t n = 0;
    ADD_TABLE(tests, n, ops_cases, N_OPS_CASES, test_ops);
    ADD_TABLE(tests, n, mop_cases, N_MOP_CASES, test_mop);
    ADD_TABLE(tests, n, bad_cases, N_BAD_CASES, test_bad_cache);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_ops_complete);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_mop_complete);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_memo);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_analytic_targets);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_calibration);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_matmul_scale);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_weight_only);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_unknown_and_opaque);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_dynamic_batch);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_merge_matmuls);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cpu_conv_measures);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_estimate_scaled);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_estimate_interpolated);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_corpus);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_written_inside);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_layernorm_charged_once);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cache_roundtrip);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cache_nopath);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bad_cache_bytes);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cache_truncations);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cache_flips);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cuda_device_or_refusal);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_kind_names);
    return _cmocka_run_group_tests("engine_cost", tests, n, NULL, NULL);
}
