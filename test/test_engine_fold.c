/* test_engine_fold.c - cmocka tests of fold.h and geval.h: the float
 * kernels against the exact opspecs semantics (table K.., small integer
 * inputs, so float results are exact), what the whole-graph evaluator
 * refuses, weight folding of a Concat of two initializers, and the
 * built-in rewrites: on every corpus model it can evaluate (table E..)
 * each of eg_builtin_pre and eg_builtin_post leaves the outputs' values as
 * they were (evalcheck.h), and on the fold_* models they do what they are
 * for (BatchNormalization folded, bias split and fused back, rank-3
 * MatMuls squeezed). The model operators' kernels are held to onnxruntime
 * by test/engine_fold_test.py. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_table.h"
#include "onnx/engine.h"
#include "shapes/infer.h"
#include "evalcheck.h"
#include "fold/fold.h"
#include "pipeline/pipeline.h"
#include "modp.h"

#define CORPUS "test/corpus/onnx/"
#define K(h, w) OPS_KERNEL(h, w)

/* ================= kernels vs ops_eval ================= */

typedef struct {
    const char *id;
    ops_op op;
    int32_t p[OPS_MAX_PARAMS];
    ten_shape in[OPS_MAX_ARITY];
    double (*ref)(double); /* a function with no exact residue semantics
                              (cells.c): the float kernel against this */
} kcase;

/* Independent spellings of the transcendental cells. */
static double ref_sigmoid(double x) { return 0.5 * (1 + tanh(x / 2)); }
static double ref_tanh(double x) { return (exp(2 * x) - 1) / (exp(2 * x) + 1); }
static double ref_erf(double x) { return 1 - erfc(x); }
static double ref_hsigmoid(double x) { return fmin(1, fmax(0, (x + 3) / 6)); }
static double ref_hswish(double x) { return x * fmin(1, fmax(0, (x + 3) / 6)); }
static double ref_identity(double x) { return x; } /* nanzero of cells that are no NaN */

#define S1(a) {1, {a}}
#define S2(a, b) {2, {a, b}}
#define S3(a, b, c) {3, {a, b, c}}
#define S4(a, b, c, d) {4, {a, b, c, d}}

static const kcase kcases[] = {
    {"K01 matmul", OP_MATMUL, {0}, {S2(3, 4), S2(4, 5)}},
    {"K01a bmm", OP_BMM, {0}, {S4(2, 3, 2, 4), S4(2, 3, 4, 5)}},
    {"K01b linear", OP_LINEAR, {0}, {S3(2, 3, 4), S2(4, 5)}},
    {"K02 conv2d s1 SAME", OP_CONV2D, {1, OPS_PAD_SAME, OPS_ACT_NONE, 1}, {S4(1, 4, 5, 5), S4(6, 4, 3, 3)}},
    {"K03 conv2d s2 VALID relu", OP_CONV2D, {2, OPS_PAD_VALID, OPS_ACT_RELU, 1}, {S4(2, 2, 6, 5), S4(3, 2, 2, 3)}},
    {"K04 conv2d s2 SAME g2 relu", OP_CONV2D, {2, OPS_PAD_SAME, OPS_ACT_RELU, 2}, {S4(1, 4, 5, 5), S4(4, 2, 3, 3)}},
    {"K05 conv2d s1 SAME 1x3 g4", OP_CONV2D, {1, OPS_PAD_SAME, OPS_ACT_NONE, 4}, {S4(1, 4, 3, 4), S4(8, 1, 1, 3)}},
    {"K06 ewadd", OP_EWADD, {0}, {S3(2, 3, 4), S3(2, 3, 4)}},
    {"K07 ewmul", OP_EWMUL, {0}, {S3(2, 3, 4), S3(2, 3, 4)}},
    {"K08 smul", OP_SMUL, {0}, {S2(3, 4), {0, {0}}}},
    {"K08a sadd", OP_SADD, {0}, {S3(2, 3, 4), {0, {0}}}},
    {"K08b sdiv", OP_SDIV, {0}, {S2(3, 4), {0, {0}}}},
    {"K09 relu", OP_RELU, {0}, {S2(2, 7)}},
    {"K10 avgpool 3x3 s1 SAME", OP_AVGPOOL, {K(3, 3), 1, OPS_PAD_SAME}, {S4(1, 2, 5, 5)}},
    {"K11 avgpool 2x2 s2 VALID", OP_AVGPOOL, {K(2, 2), 2, OPS_PAD_VALID}, {S4(2, 1, 5, 4)}},
    {"K12 maxpool 3x3 s2 SAME", OP_MAXPOOL, {K(3, 3), 2, OPS_PAD_SAME}, {S4(1, 2, 5, 5)}},
    {"K13 maxpool 3x1 s1 VALID", OP_MAXPOOL, {K(3, 1), 1, OPS_PAD_VALID}, {S4(1, 3, 4, 4)}},
    {"K14 concat axis 0", OP_CONCAT, {0}, {S2(2, 3), S2(4, 3)}},
    {"K15 concat axis 1", OP_CONCAT, {1}, {S3(2, 3, 2), S3(2, 1, 2)}},
    {"K16 split0", OP_SPLIT0, {1, 2}, {S2(3, 5)}},
    {"K17 split1", OP_SPLIT1, {1, 2}, {S2(3, 5)}},
    {"K18 split1 axis 0", OP_SPLIT1, {0, 1}, {S3(3, 2, 2)}},
    {"K19 transpose", OP_TRANSPOSE, {0}, {S2(3, 4)}},
    {"K19a permute 0231", OP_PERMUTE, {OPS_PERM4(0, 2, 3, 1)}, {S4(2, 3, 4, 5)}},
    {"K19c heads 4", OP_HEADS, {4}, {S3(2, 3, 8)}},
    {"K19d unheads 2", OP_UNHEADS, {2}, {S4(1, 3, 2, 5)}},
    {"K19e kmul of 1x1 kernels", OP_KMUL, {0}, {S4(3, 2, 1, 1), S4(2, 4, 1, 1)}},
    {"K19f kmul of a vector", OP_KMUL, {0}, {S4(3, 2, 1, 1), S1(2)}},
    {"K19b permute 021 (rank 3)", OP_PERMUTE, {(3 << 12) | (2 << 6) | (1 << 3)}, {S3(2, 3, 4)}},
    {"K20 enlarge 5x5", OP_ENLARGE, {K(5, 5)}, {S4(2, 3, 3, 1)}},
    {"K21 enlarge 3x3", OP_ENLARGE, {K(3, 3)}, {S4(2, 2, 1, 1)}},
    {"K22 imm", OP_IMM, {0}, {S2(3, 4)}},
    {"K23 iconv 3x3", OP_ICONV, {K(3, 3)}, {S4(1, 3, 4, 4)}},
    {"K24 poolk 3x1", OP_POOLK, {K(3, 1)}, {S4(1, 2, 4, 4)}},
    {"K24b dwiconv 3x1", OP_DWICONV, {K(3, 1)}, {S4(1, 2, 4, 4)}},
    {"K25 ones", OP_ONES, {0}, {S1(6)}},
    {"K26 sigmoid", OP_SIGMOID, {0}, {S2(3, 4)}, ref_sigmoid},
    {"K27 tanh", OP_TANH, {0}, {S4(1, 2, 2, 3)}, ref_tanh},
    {"K28 erf", OP_ERF, {0}, {S2(2, 7)}, ref_erf},
    {"K28a relu6", OP_RELU6, {0}, {S3(2, 3, 4)}},
    {"K28b hardsigmoid", OP_HSIGMOID, {0}, {S2(4, 9)}, ref_hsigmoid},
    {"K28c hardswish", OP_HSWISH, {0}, {S4(1, 2, 3, 5)}, ref_hswish},
    {"K28h nanzero", OP_NANZERO, {0}, {S3(2, 3, 4)}, ref_identity},
    {"K28d softmax axis 1 of 3", OP_SOFTMAX, {1}, {S3(2, 5, 3)}},
    {"K28e softmax last axis", OP_SOFTMAX, {3}, {S4(1, 2, 3, 4)}},
    {"K28f layernorm last axis, eps 1e-5", OP_LAYERNORM, {2, 0x3727c5ac}, {S3(2, 3, 6)}},
    {"K28g layernorm axis 1 of 4, eps 0.5", OP_LAYERNORM, {1, 0x3f000000}, {S4(1, 5, 2, 3)}},
    {"K29 bias axis 1 NCHW", OP_BIAS, {1}, {S4(2, 3, 2, 2), S1(3)}},
    {"K30 bias axis 0", OP_BIAS, {0}, {S2(3, 4), S1(3)}},
    {"K31 scale last axis of rank 3", OP_SCALE, {2}, {S3(2, 3, 4), S1(4)}},
    {"K32 scale axis 0 OIHW", OP_SCALE, {0}, {S4(2, 3, 1, 3), S1(2)}},
};

/* Small signed integers in -2..3 (0..3 for relu-free exactness is not
 * needed: the residue reading of ops' relu/max is signed). */
static int64_t small(int64_t i, int k) { return (i * 7 + k * 3 + 1) % 6 - 2; }

static uint64_t residue(int64_t v) { return v < 0 ? MP_P - (uint64_t)(-v) : (uint64_t)v; }

/* The divisor that makes an operator's result an integer. */
static int64_t divisor(const kcase *c) {
    if (c->op == OP_AVGPOOL) return OPS_KERNEL_H(c->p[0]) * OPS_KERNEL_W(c->p[0]);
    if (c->op == OP_SDIV) return small(0, 1); /* the scalar divisor */
    return 1;
}

static void run_kcase(const kcase *c) {
    int a = ops_table[c->op].arity;
    ten tin[OPS_MAX_ARITY], tout;
    const ten *tp[OPS_MAX_ARITY];
    float *fin[OPS_MAX_ARITY];
    ten_shape os;
    char err[OPS_ERRLEN];
    assert_int_equal(ops_infer_shape(c->op, c->p, c->in, &os, err), OPS_OK);
    for (int k = 0; k < a; k++) {
        int64_t n = ten_numel(&c->in[k]);
        assert_int_equal(ten_alloc(&tin[k], &c->in[k]), 0);
        fin[k] = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            tin[k].data[i] = residue(small(i, k));
            fin[k][i] = (float)small(i, k);
        }
        tp[k] = &tin[k];
    }
    int64_t n = ten_numel(&os), d = divisor(c);
    assert_int_equal(ten_alloc(&tout, &os), 0);
    float *fout = malloc(sizeof(float) * (size_t)n);
    assert_int_equal(ops_eval(c->op, c->p, tp, &tout), OPS_OK);
    assert_int_equal(eg_fkern_eval(c->op, c->p, c->in, (const float *const *)fin, fout, NULL, 0), EG_OK);
    if (ops_table[c->op].form == OPS_FORM_ROW) { /* no exact residue form: in double */
        int64_t outer = 1, inner = 1, dim = c->in[0].dim[c->p[0]];
        for (int k = 0; k < c->p[0]; k++) outer *= c->in[0].dim[k];
        for (int k = c->p[0] + 1; k < c->in[0].rank; k++) inner *= c->in[0].dim[k];
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                double sum = 0, mean = 0, var = 0;
                for (int64_t k = 0; k < dim; k++) {
                    double v = fin[0][(o * dim + k) * inner + i];
                    sum += exp(v), mean += v / (double)dim;
                }
                for (int64_t k = 0; k < dim; k++) {
                    double v = fin[0][(o * dim + k) * inner + i];
                    var += (v - mean) * (v - mean) / (double)dim;
                }
                for (int64_t k = 0; k < dim; k++) {
                    int64_t at = (o * dim + k) * inner + i;
                    double want = c->op == OP_SOFTMAX
                                      ? exp(fin[0][at]) / sum
                                      : (fin[0][at] - mean) / sqrt(var + ops_eps_value(c->p[1]));
                    if (fabs(fout[at] - want) > 1e-5)
                        fail_msg("%s: cell %lld: %g, want %g", c->id, (long long)at, fout[at], want);
                }
            }
        n = 0; /* nothing else to compare */
    }
    for (int64_t i = 0; c->ref && i < n; i++)
        if (fabs(fout[i] - c->ref(fin[0][i])) > 1e-6)
            fail_msg("%s: cell %lld: %g, want %g", c->id, (long long)i, fout[i], c->ref(fin[0][i]));
    for (int64_t i = 0; !c->ref && i < n; i++) {
        /* poolk cells are 1/(kh*kw): scale both by it */
        int64_t dd = c->op == OP_POOLK ? (int64_t)os.dim[2] * os.dim[3] : d;
        uint64_t want = mp_mul(tout.data[i], (uint64_t)dd);
        int64_t ws = want > MP_HALF ? -(int64_t)(MP_P - want) : (int64_t)want;
        double got = (double)fout[i] * (double)dd;
        if (fabs(got - (double)ws) > 1e-4) fail_msg("%s: cell %lld: float %g, exact %lld", c->id,
                                                   (long long)i, got, (long long)ws);
    }
    for (int k = 0; k < a; k++) ten_free(&tin[k]), free(fin[k]);
    ten_free(&tout);
    free(fout);
}

static void test_kernels(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof kcases / sizeof kcases[0]; i++) run_kcase(&kcases[i]);
}

/* Every operator has a kernel case: a row of kcases, or for a binary
 * element-wise row of the table (forms zip and scale: exact on residues,
 * so the float kernel is checked against them) one made from its form. */
static void test_every_op_covered(void **state) {
    (void)state;
    int seen[OP_COUNT] = {0};
    for (size_t i = 0; i < sizeof kcases / sizeof kcases[0]; i++) seen[kcases[i].op] = 1;
    for (int op = 0; op < OP_COUNT; op++) {
        if (seen[op]) continue;
        ops_form f = ops_table[op].form;
        if ((f == OPS_FORM_ZIP || f == OPS_FORM_SCALE) && ops_table[op].n_params == 0) {
            kcase c = {ops_table[op].name, (ops_op)op, {0}, {S3(2, 3, 4), S3(2, 3, 4)}, NULL};
            if (f == OPS_FORM_SCALE) c.in[1] = (ten_shape){0, {0}};
            run_kcase(&c);
            continue;
        }
        fail_msg("no kernel case for %s: add its row to kcases in test/test_engine_fold.c (rows of the zip "
                 "and scale forms come from the operator table)", ops_table[op].name);
    }
}

/* nanzero on floats: a NaN cell becomes 0, every other cell (infinities
 * too) stays. */
static void test_nanzero_nan(void **state) {
    (void)state;
    static const int32_t p[OPS_MAX_PARAMS] = {0};
    ten_shape s = {1, {4}};
    float x[4] = {NAN, -2.5f, INFINITY, -NAN}, y[4];
    const float *in[1] = {x};
    assert_int_equal(eg_fkern_eval(OP_NANZERO, p, &s, in, y, NULL, 0), EG_OK);
    assert_true(y[0] == 0.0f && !signbit(y[0]));
    assert_true(y[1] == -2.5f && isinf(y[2]) && y[3] == 0.0f);
}

static void test_kernel_bad_shape(void **state) {
    (void)state;
    ten_shape in[2] = {S4(1, 4, 5, 5), S4(6, 3, 3, 3)};
    int32_t p[OPS_MAX_PARAMS] = {1, OPS_PAD_SAME, OPS_ACT_NONE, 1};
    float x[100] = {0}, w[162] = {0}, out[200];
    const float *fin[2] = {x, w};
    char err[EG_ERRLEN] = "";
    assert_int_equal(eg_fkern_eval(OP_CONV2D, p, in, fin, out, err, sizeof err), EG_ESHAPE);
    assert_non_null(strstr(err, "conv2d"));
}

/* ================= folding and built-ins ================= */

static eg_graph *load_ok(const char *file) {
    eg_graph *g = NULL;
    char err[EG_ERRLEN] = "";
    eg_status rc = eg_load(file, NULL, &g, err, sizeof err);
    if (rc != EG_OK) print_error("%s\n", err);
    assert_int_equal(rc, EG_OK);
    return g;
}

static int count_nodes(const eg_graph *g, eg_kind kind, int op) {
    int n = 0;
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].kind == kind && (kind == EG_KIND_OPS ? (int)g->node[j].op : (int)g->node[j].mop) == op)
            n++;
    return n;
}

/* The graph still checks, sorts, infers and exports. */
static void assert_valid(eg_graph *g) {
    char err[EG_ERRLEN] = "";
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(eg_index(g, err, sizeof err), EG_OK);
    assert_int_equal(eg_toposort(g, err, sizeof err), EG_OK);
    assert_int_equal(eg_infer_all(g, err, sizeof err), EG_OK);
    assert_int_equal(eg_save_mem(g, &buf, &len, err, sizeof err), EG_OK);
    free(buf);
}

/* eg_builtin_pre, then eg_builtin_post, each checked to keep the values
 * of the outputs; the graph still checks, sorts, infers and exports. */
static void pre_post_checked(eg_graph *g, eg_builtin_stats *st, const char *id) {
    char err[EG_ERRLEN] = "", what[96];
    ec_values v;
    ec_eval_ok(g, 1, &v);
    if (eg_builtin_pre(g, st, err, sizeof err) != EG_OK) fail_msg("%s: pre: %s", id, err);
    snprintf(what, sizeof what, "%s: after eg_builtin_pre", id);
    ec_assert_same(&v, g, what);
    assert_valid(g);
    if (eg_builtin_post(g, st, err, sizeof err) != EG_OK) fail_msg("%s: post: %s", id, err);
    snprintf(what, sizeof what, "%s: after eg_builtin_post", id);
    ec_assert_same(&v, g, what);
    assert_valid(g);
    ec_free(&v);
}

/* ================= whole-graph evaluation ================= */

/* What eg_eval_graph cannot run is refused with the culprit named; an
 * opaque node no output depends on is not run at all. */
static void test_eval_refuses(void **state) {
    (void)state;
    eg_graph *g = load_ok(CORPUS "opaque.onnx");
    char err[EG_ERRLEN] = "";
    ec_values v;
    assert_int_equal(ec_eval(g, 1, &v, err, sizeof err), EG_EUNSUPPORTED);
    assert_non_null(strstr(err, "an opaque operator has no kernel"));
    eg_free(g);
    g = load_ok(CORPUS "inception.onnx");
    assert_int_equal(ec_eval(g, 1, &v, err, sizeof err), EG_EUNSUPPORTED);
    assert_non_null(strstr(err, "input 'x'"));
    eg_free(g);
    g = load_ok(CORPUS "reg_unsorted.onnx");
    int id;
    assert_int_equal(eg_add_node(g, EG_KIND_OPAQUE, "unread", 1, 0, 0, &id), EG_OK);
    g->node[id].in[0] = g->input[0];
    ec_eval_ok(g, 1, &v);
    ec_free(&v);
    eg_free(g);
}

/* ================= folding and built-ins ================= */

/* Every model of evalcheck.h's list (E..). */
static void test_builtin_values(void **state) {
    const ec_model *bc = *state;
    char path[128];
    eg_builtin_stats st = {0};
    snprintf(path, sizeof path, CORPUS "%s", bc->file);
    eg_graph *g = load_ok(path);
    pre_post_checked(g, &st, bc->id);
    eg_free(g);
}

static void test_fold_concat(void **state) {
    (void)state;
    eg_graph *g = load_ok(CORPUS "fold_conv_bias.onnx");
    char err[EG_ERRLEN] = "";
    int folded = -1;
    ec_values v;
    ec_eval_ok(g, 1, &v);
    assert_int_equal(count_nodes(g, EG_KIND_OPS, OP_CONCAT), 1);
    const eg_tensor *wa = &g->tensor[eg_find_tensor(g, "wa")], *wb = &g->tensor[eg_find_tensor(g, "wb")];
    float want[15];
    memcpy(want, wa->data, 6 * sizeof(float));
    memcpy(want + 6, wb->data, 9 * sizeof(float));
    assert_int_equal(eg_fold_weights(g, &folded, err, sizeof err), EG_OK);
    assert_int_equal(folded, 1);
    assert_int_equal(count_nodes(g, EG_KIND_OPS, OP_CONCAT), 0);
    const eg_tensor *t = &g->tensor[eg_find_tensor(g, "wcat")];
    assert_true(t->flags & EG_TF_INIT);
    assert_int_equal(t->dtype, EG_DT_FLOAT);
    assert_int_equal(t->shape.rank, 4);
    assert_int_equal(t->shape.dim[0], 5);
    assert_memory_equal(t->data, want, sizeof want);
    assert_valid(g);
    ec_assert_same(&v, g, "weights folded");
    ec_free(&v);
    eg_free(g);
}

/* Beyond keeping the values (E5), what the rewrites are for: no
 * BatchNormalization left, biases split off for the search as the bias
 * operator rules see (the importer's form of a Conv with a bias). That
 * the export writes each pair back as one Conv with its bias (no Add) is
 * checked on the exported file by engine_fold_test.py (GONE). */
static void test_builtin_bn(void **state) {
    (void)state;
    eg_graph *g = load_ok(CORPUS "fold_conv_bn.onnx");
    eg_builtin_stats st = {0};
    char err[EG_ERRLEN] = "";
    assert_int_equal(eg_builtin_pre(g, &st, err, sizeof err), EG_OK);
    assert_int_equal(st.bn_folded, 2);
    assert_int_equal(st.bias_split, 2);
    assert_int_equal(st.identity_removed, 1);
    assert_int_equal(count_nodes(g, EG_KIND_MODEL, EG_MOP_BATCHNORM), 0);
    assert_int_equal(count_nodes(g, EG_KIND_OPS, OP_CONV2D), 2);
    assert_int_equal(count_nodes(g, EG_KIND_OPS, OP_BIAS), 2);
    assert_int_equal(count_nodes(g, EG_KIND_MODEL, EG_MOP_ADD), 0);
    assert_valid(g);
    assert_int_equal(eg_builtin_post(g, &st, err, sizeof err), EG_OK);
    assert_int_equal(count_nodes(g, EG_KIND_OPS, OP_CONV2D), 2);
    assert_int_equal(count_nodes(g, EG_KIND_MODEL, EG_MOP_ADD), 0);
    assert_true(g->tensor[g->output[0]].producer >= 0);
    assert_string_equal(g->tensor[g->output[0]].name, "y");
    assert_valid(g);
    eg_free(g);
}

/* Beyond keeping the values (E7): rank-3 MatMuls by a matrix are linear
 * nodes the rules can match from the load on; the common Reshape merged. */
static void test_builtin_matmul(void **state) {
    (void)state;
    eg_graph *g = load_ok(CORPUS "fold_matmul3.onnx");
    eg_builtin_stats st = {0};
    char err[EG_ERRLEN] = "";
    assert_int_equal(count_nodes(g, EG_KIND_OPS, OP_LINEAR), 2);
    assert_int_equal(eg_builtin_pre(g, &st, err, sizeof err), EG_OK);
    assert_true(st.cse_merged >= 1);
    assert_int_equal(count_nodes(g, EG_KIND_OPS, OP_LINEAR), 2);
    assert_int_equal(count_nodes(g, EG_KIND_MODEL, EG_MOP_MATMUL), 0);
    assert_valid(g);
    assert_int_equal(eg_builtin_post(g, &st, err, sizeof err), EG_OK);
    assert_int_equal(count_nodes(g, EG_KIND_MODEL, EG_MOP_TRANSPOSE), 0);
    assert_valid(g);
    eg_free(g);
}

/* Arithmetic by a neutral constant is the value it is applied to, in
 * every form the import leaves it (a scalar op, a same-shape one, a model
 * op, an opaque Sub); the look-alikes stay. The values are compared in
 * onnxruntime by engine_fold_test.py (the C evaluator has no Sub). */
static void test_builtin_neutral(void **state) {
    (void)state;
    eg_graph *g = load_ok(CORPUS "fold_neutral.onnx");
    eg_builtin_stats st = {0};
    char err[EG_ERRLEN] = "";
    int n = g->n_nodes;
    assert_int_equal(eg_builtin_pre(g, &st, err, sizeof err), EG_OK);
    assert_int_equal(st.identity_removed, 7);
    assert_int_equal(g->n_nodes, n - 7);
    int y = g->output[0], r = g->tensor[y].producer;
    assert_true(r >= 0);
    assert_int_equal(g->node[r].in[0], g->input[0]); /* y = relu(x) */
    assert_valid(g);
    eg_free(g);
}

/* opaque.onnx has operators without a kernel, so its values cannot be
 * compared; nothing applies to it, and the graph is the same computation
 * (structural hash) afterwards. */
static void test_builtin_noop(void **state) {
    (void)state;
    eg_graph *g = load_ok(CORPUS "opaque.onnx");
    eg_builtin_stats st = {0};
    char err[EG_ERRLEN] = "";
    int n = g->n_nodes;
    uint64_t h = eg_graph_hash(g);
    assert_int_equal(eg_builtin_pre(g, &st, err, sizeof err), EG_OK);
    assert_int_equal(eg_builtin_post(g, NULL, err, sizeof err), EG_OK);
    assert_int_equal(g->n_nodes, n);
    assert_true(eg_graph_hash(g) == h);
    assert_valid(g);
    eg_free(g);
}

int main(void) {
    struct CMUnitTest tests[EC_N_MODELS + 32];
    size_t n = 0;
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_kernels);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_every_op_covered);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_nanzero_nan);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_kernel_bad_shape);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_eval_refuses);
    ADD_TABLE(tests, n, ec_models, EC_N_MODELS, test_builtin_values);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fold_concat);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_builtin_bn);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_builtin_matmul);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_builtin_noop);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_builtin_neutral);
    return _cmocka_run_group_tests("engine_fold", tests, n, NULL, NULL);
}
