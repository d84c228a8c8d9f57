/* test_engine_io.c - cmocka tests of the engine's graph IR and ONNX
 * import/export: the tiny models of test/corpus/onnx (made by
 * test/mk_onnx_models.py) import with the expected operators and shapes,
 * lower to opspecs where exact, export to a fixed point, keep opaque nodes
 * byte for byte; error cases (table E..) give the expected status and a
 * message naming the node or tensor; every truncation and a byte-flip
 * sweep never crash. Table rows carry ids that name the test in TAP. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cm_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/engine.h"
#include "onnx/lower.h"
#include "shapes/infer.h"
#include "evalcheck.h"

#define CORPUS "test/corpus/onnx/"

/* ================= helpers ================= */

static int contains(const uint8_t *hay, size_t n, const uint8_t *needle, size_t k);

static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static eg_graph *load_ok(const char *file) {
    eg_graph *g = NULL;
    char err[EG_ERRLEN] = "", path[256];
    snprintf(path, sizeof path, CORPUS "%s", file);
    eg_status rc = eg_load(path, NULL, &g, err, sizeof err);
    if (rc != EG_OK) print_error("%s\n", err);
    assert_int_equal(rc, EG_OK);
    return g;
}

static const eg_node *node_named(const eg_graph *g, const char *name) {
    for (int j = 0; j < g->n_nodes; j++)
        if (strcmp(g->node[j].name, name) == 0) return &g->node[j];
    fail_msg("no node '%s'", name);
    return NULL;
}

static const char *shape_of(const eg_graph *g, const char *tensor, char *buf) {
    int t = eg_find_tensor(g, tensor);
    assert_true(t >= 0);
    return eg_shape_str(&g->tensor[t].shape, g->tensor[t].dim_name, buf, 160);
}

/* Export, import again, export again: the same bytes. @return export */
static uint8_t *fixed_point(const eg_graph *g, size_t *len) {
    uint8_t *b1, *b2;
    size_t n1, n2;
    eg_graph *h;
    char err[EG_ERRLEN];
    assert_int_equal(eg_save_mem(g, &b1, &n1, err, sizeof err), EG_OK);
    eg_status rc = eg_load_mem(b1, n1, "export", NULL, &h, err, sizeof err);
    if (rc != EG_OK) print_error("%s\n", err);
    assert_int_equal(rc, EG_OK);
    assert_int_equal(eg_save_mem(h, &b2, &n2, err, sizeof err), EG_OK);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    free(b2);
    eg_free(h);
    *len = n1;
    return b1;
}

/* ================= M: the corpus models import as expected ================= */

typedef struct {
    const char *id, *file;
    int n_nodes, n_ops, n_model, n_opaque;
    const char *tensor, *shape; /* one tensor's inferred shape */
} model_case;

static const model_case model_cases[] = {
    {"M01 conv+bn+relu", "conv_bn_relu.onnx", 4, 3, 1, 0, "y", "[1,8,8,8]"},
    {"M02 inception, symbolic batch", "inception.onnx", 8, 0, 8, 0, "y", "[N,16,6,6]"},
    {"M03 convs and pools", "convs.onnx", 9, 6, 3, 0, "mp", "[1,4,3,4]"},
    {"M04 attention", "attention.onnx", 8, 8, 0, 0, "s", "[4,4]"},
    {"M05 mixed model ops", "mixed.onnx", 12, 7, 5, 0, "rs", "[2,6]"},
    {"M06 opset 11 split, softmax and sub", "old_opset.onnx", 4, 4, 0, 0, "b", "[3,2]"},
    {"M07 opaque nodes and a subgraph", "opaque.onnx", 6, 0, 1, 5, "foo", "[2,3]"},
    {"M08 nodes out of order", "reg_unsorted.onnx", 3, 3, 0, 0, "y", "[2,3]"},
    {"M09 IR 3: initializers are inputs", "reg_ir3.onnx", 5, 5, 0, 0, "y", "[2,2]"},
    {"M10 odd dtype sizes, omitted required inputs", "reg_odd_values.onnx", 5, 0, 1, 4, "e", "[3]"},
    {"M11 no nodes", "reg_empty.onnx", 0, 0, 0, 0, "x", "[3]"},
    {"M12 If and Loop reading outer tensors", "control_flow.onnx", 8, 4, 0, 4, "s1", "[2,3]"},
    {"M13 opset 6, IR 3: legacy broadcast, BatchNormalization-6", "opset6.onnx", 10, 5, 5, 0, "f",
     "[1,4]"},
    {"M14 opset 3: Reshape-1, Concat-1, consumed_inputs", "opset3.onnx", 9, 8, 1, 0, "rs", "[6,4]"},
    {"M15 opset 28, IR 14 (onnx 1.23's default)", "opset28.onnx", 11, 10, 1, 0, "rs", "[1,64]"},
    {"M16 opset 30 (newer than known): read, all opaque", "reg_opset30.onnx", 2, 0, 0, 2, "x", "[2]"},
    {"M17 a node per shape rule, opset 17", "shapes_op17.onnx", 49, 17, 6, 26, "reshaped",
     "[1,6,4,4]"},
    {"M18 attribute forms, opset 9", "shapes_op9.onnx", 8, 2, 0, 6, "slice9", "[1,4,16]"},
    {"M19 input forms, opset 18", "shapes_op18.onnx", 3, 0, 1, 2, "rmean18", "[1,6]"},
    {"M20 transformer layer, shape arithmetic folded", "transformer.onnx", 35, 34, 1, 0, "y",
     "[1,8,16]"},
    {"M21 nodes lowered into pieces before opaque ones", "reg_lower_order.onnx", 11, 8, 1, 2, "b1",
     "[1,6,3,3]"},
};
#define N_MODEL_CASES (sizeof model_cases / sizeof model_cases[0])

/* M08's nodes come sorted: relu and sig before add. */
static void test_sorted(void **state) {
    (void)state;
    eg_graph *g = load_ok("reg_unsorted.onnx");
    assert_string_equal(g->node[2].name, "add");
    eg_free(g);
}

/* M21: the pieces a node is lowered into take its place, in the file's
 * order (before the opaque nodes after it), not the end of the graph. */
static void test_pieces_in_place(void **state) {
    (void)state;
    eg_graph *g = load_ok("reg_lower_order.onnx");
    int first_opaque = -1, last_piece = -1;
    for (int j = 0; j < g->n_nodes; j++) {
        const char *name = g->node[j].name;
        if (g->node[j].kind == EG_KIND_OPAQUE && first_opaque < 0) first_opaque = j;
        if (!strcmp(name, "cat3") || !strcmp(name, "bn_alone")) last_piece = j;
    }
    assert_true(last_piece >= 0 && first_opaque > last_piece);
    eg_free(g);
}

static void test_model(void **state) {
    const model_case *mc = *state;
    char buf[160];
    eg_graph *g = load_ok(mc->file);
    int kinds[EG_KIND_COUNT] = {0};
    for (int j = 0; j < g->n_nodes; j++) kinds[g->node[j].kind]++;
    assert_int_equal(g->n_nodes, mc->n_nodes);
    assert_int_equal(kinds[EG_KIND_OPS], mc->n_ops);
    assert_int_equal(kinds[EG_KIND_MODEL], mc->n_model);
    assert_int_equal(kinds[EG_KIND_OPAQUE], mc->n_opaque);
    assert_string_equal(shape_of(g, mc->tensor, buf), mc->shape);
    size_t len;
    free(fixed_point(g, &len));
    eg_free(g);
}

/* ================= L: lowering to opspecs ================= */

typedef struct {
    const char *id, *file, *node;
    eg_kind kind;
    int op;            /* ops_op or eg_mop */
    int32_t param[4];  /* EG_KIND_OPS */
} lower_case;

static const lower_case lower_cases[] = {
    {"L01 Conv pads (k-1)/2 -> conv2d SAME", "convs.onnx", "same", EG_KIND_OPS, OP_CONV2D,
     {1, OPS_PAD_SAME, OPS_ACT_NONE, 1}},
    {"L02 Conv 1x1 stride 2, no pads -> conv2d SAME (one spelling for 1x1)", "convs.onnx", "valid",
     EG_KIND_OPS, OP_CONV2D, {2, OPS_PAD_SAME, OPS_ACT_NONE, 1}},
    {"L03 grouped Conv -> conv2d groups 2", "convs.onnx", "grouped", EG_KIND_OPS, OP_CONV2D,
     {1, OPS_PAD_SAME, OPS_ACT_NONE, 2}},
    {"L04 asymmetric pads stay a model op", "convs.onnx", "asym", EG_KIND_MODEL, EG_MOP_CONV, {0}},
    {"L05 SAME_UPPER stride 2 (not centred) stays", "convs.onnx", "upper", EG_KIND_MODEL,
     EG_MOP_CONV, {0}},
    {"L06 AveragePool without count_include_pad stays", "convs.onnx", "avg", EG_KIND_MODEL,
     EG_MOP_AVGPOOL, {0}},
    {"L07 AveragePool counting pads -> avgpool", "convs.onnx", "avgc", EG_KIND_OPS, OP_AVGPOOL,
     {OPS_KERNEL(3, 3), 1, OPS_PAD_SAME, 0}},
    {"L08 MaxPool 3x1 stride 2 -> maxpool VALID", "convs.onnx", "mp", EG_KIND_OPS, OP_MAXPOOL,
     {OPS_KERNEL(3, 1), 2, OPS_PAD_VALID, 0}},
    {"L09 2-input Concat -> concat", "convs.onnx", "cat", EG_KIND_OPS, OP_CONCAT, {1, 0, 0, 0}},
    {"L10 Conv with bias -> conv2d, then bias(1)", "conv_bn_relu.onnx", "conv", EG_KIND_OPS,
     OP_CONV2D, {1, OPS_PAD_SAME, OPS_ACT_NONE, 1}},
    {"L11 Relu -> relu", "conv_bn_relu.onnx", "relu", EG_KIND_OPS, OP_RELU, {0}},
    {"L12 rank-2 MatMul -> matmul", "attention.onnx", "q", EG_KIND_OPS, OP_MATMUL, {0}},
    {"L12a rank-3 MatMul by a matrix -> linear", "transformer.onnx", "ff0", EG_KIND_OPS, OP_LINEAR,
     {0}},
    {"L12b Div by a rank-0 constant -> sdiv", "transformer.onnx", "ff2", EG_KIND_OPS, OP_SDIV, {0}},
    {"L12c Add of a rank-0 constant -> sadd", "transformer.onnx", "ff4", EG_KIND_OPS, OP_SADD, {0}},
    {"L13 opset 6 Add broadcast=1 axis=1 of [C] on NCHW -> numpy Add of [C,1,1]", "opset6.onnx",
     "bias", EG_KIND_MODEL, EG_MOP_ADD, {0}},
    {"L14 opset 6 Gemm broadcast=1, C [N] (numpy's too)", "opset6.onnx", "gemm", EG_KIND_MODEL,
     EG_MOP_GEMM, {0}},
    {"L15 opset 6 Mul broadcast=1 by one element", "opset6.onnx", "scale", EG_KIND_MODEL,
     EG_MOP_MUL, {0}},
    {"L16 BatchNormalization-6 is_test=1", "opset6.onnx", "bn", EG_KIND_MODEL, EG_MOP_BATCHNORM, {0}},
    {"L17 opset 6 equal-shape Add -> ewadd", "opset6.onnx", "add", EG_KIND_OPS, OP_EWADD, {0}},
    {"L18 Reshape-1 (shape attribute)", "opset3.onnx", "reshape", EG_KIND_MODEL, EG_MOP_RESHAPE, {0}},
    {"L19 Concat-1 without axis -> concat axis 1", "opset3.onnx", "concat", EG_KIND_OPS, OP_CONCAT,
     {1, 0, 0, 0}},
    {"L20 Relu-1 consumed_inputs ignored -> relu", "opset3.onnx", "relu", EG_KIND_OPS, OP_RELU, {0}},
    {"L21 Softmax-13 in opset 28 -> softmax on the last axis", "opset28.onnx", "softmax",
     EG_KIND_OPS, OP_SOFTMAX, {1, 0, 0, 0}},
    {"L22 opset 30: Relu opaque", "reg_opset30.onnx", "relu", EG_KIND_OPAQUE, 0, {0}},
    {"L23 Dropout-13, training_mode constant false, mask unread -> Identity", "legal_dropout.onnx",
     "drop", EG_KIND_MODEL, EG_MOP_IDENTITY, {0}},
    {"L24 Dropout-13 with ratio only -> Identity", "legal_dropout.onnx", "drop2", EG_KIND_MODEL,
     EG_MOP_IDENTITY, {0}},
    {"L25 Dropout-13 whose mask is a graph output stays opaque", "legal_dropout.onnx", "drop_mask",
     EG_KIND_OPAQUE, 0, {0}},
    {"L26 Dropout-7 (ratio attribute) -> Identity", "legal_dropout7.onnx", "drop", EG_KIND_MODEL,
     EG_MOP_IDENTITY, {0}},
    {"L27 Dropout-6 is_test=1 -> Identity", "legal_dropout6.onnx", "drop", EG_KIND_MODEL,
     EG_MOP_IDENTITY, {0}},
    {"L28 Dropout-6 is_test absent (training) stays opaque", "legal_dropout6.onnx", "drop_train",
     EG_KIND_OPAQUE, 0, {0}},
    {"L29 Sum of 3 equal shapes -> Adds, the first ewadd", "legal_sum.onnx", "sum3", EG_KIND_OPS,
     OP_EWADD, {0}},
    {"L30 Sum broadcasting a [4,1,1] value: that Add -> bias(1)", "legal_sum.onnx", "sumb",
     EG_KIND_OPS, OP_BIAS, {1}},
    {"L31 one-input Sum -> Identity", "legal_sum.onnx", "sum1", EG_KIND_MODEL, EG_MOP_IDENTITY, {0}},
    {"L32 Sum-6 of 4 equal shapes (opset 6) -> ewadd", "legal_sum6.onnx", "sum4", EG_KIND_OPS,
     OP_EWADD, {0}},
    {"L33 MaxPool k3 s2 ceil_mode=1 on 111 (ceil = floor) -> maxpool", "legal_ceil.onnx", "pool1",
     EG_KIND_OPS, OP_MAXPOOL, {OPS_KERNEL(3, 3), 2, OPS_PAD_VALID, 0}},
    {"L34 MaxPool k3 s2 ceil_mode=1 on 55 -> maxpool", "legal_ceil.onnx", "pool2", EG_KIND_OPS,
     OP_MAXPOOL, {OPS_KERNEL(3, 3), 2, OPS_PAD_VALID, 0}},
    {"L35 AveragePool k3 s2 ceil_mode=1 on 27 -> avgpool", "legal_ceil.onnx", "pool3", EG_KIND_OPS,
     OP_AVGPOOL, {OPS_KERNEL(3, 3), 2, OPS_PAD_VALID, 0}},
    {"L36 MaxPool ceil_mode=1 on 10 (ceil 5 > floor 4) -> the pool with an end pad", "legal_ceil.onnx",
     "pool_big", EG_KIND_MODEL, EG_MOP_MAXPOOL, {0}},
    {"L36b AveragePool ceil_mode=1 on 10 (ceil 5 > floor 4) stays opaque", "legal_ceil.onnx",
     "apool_big", EG_KIND_OPAQUE, 0, {0}},
    {"L37 opset 6 Add broadcast=1 axis=1 [C] -> numpy Add", "legal_legacy6.onnx", "bias",
     EG_KIND_MODEL, EG_MOP_ADD, {0}},
    {"L38 opset 6 Mul broadcast=1 axis=1 [C] -> numpy Mul", "legal_legacy6.onnx", "scale",
     EG_KIND_MODEL, EG_MOP_MUL, {0}},
    {"L39 Clip 0..6 (inputs, opset 14) -> relu6", "legal_acts.onnx", "clip6", EG_KIND_OPS, OP_RELU6,
     {0}},
    {"L40 HardSwish -> hardswish", "legal_acts.onnx", "hswish", EG_KIND_OPS, OP_HSWISH, {0}},
    {"L41 HardSigmoid alpha 1/6 beta 1/2 -> hardsigmoid", "legal_acts.onnx", "hsig", EG_KIND_OPS,
     OP_HSIGMOID, {0}},
    {"L41a HardSigmoid alpha 1/6, beta left at its default 1/2 (torch) -> hardsigmoid",
     "legal_acts.onnx", "hsig_torch", EG_KIND_OPS, OP_HSIGMOID, {0}},
    {"L41b Where(IsNaN(s), 0, s) -> nanzero", "legal_nanzero.onnx", "guard", EG_KIND_OPS,
     OP_NANZERO, {0}},
    {"L41c Where(IsNaN(g), 1, g) stays opaque", "legal_nanzero.onnx", "guard_one", EG_KIND_OPAQUE, 0,
     {0}},
    {"L42 Clip 0..4 stays opaque", "legal_acts.onnx", "clip4", EG_KIND_OPAQUE, 0, {0}},
    {"L43 HardSigmoid with ONNX's default alpha stays opaque", "legal_acts.onnx", "hsig_default",
     EG_KIND_OPAQUE, 0, {0}},
    {"L44 3-input Concat -> concat chain, the first concat", "legal_dense.onnx", "cat3",
     EG_KIND_OPS, OP_CONCAT, {1, 0, 0, 0}},
    {"L45 1-input Concat stays a model op", "legal_dense.onnx", "cat1", EG_KIND_MODEL,
     EG_MOP_CONCAT, {0}},
    {"L46 BatchNormalization after a Concat -> scale(1) (then bias)", "legal_dense.onnx",
     "bn_alone", EG_KIND_OPS, OP_SCALE, {1}},
    {"L47 BatchNormalization after a Conv stays for folding", "legal_dense.onnx", "bn_conv",
     EG_KIND_MODEL, EG_MOP_BATCHNORM, {0}},
    {"L48 GlobalAveragePool on 8x8 -> avgpool 8x8 stride 1 VALID", "opset6.onnx", "gap", EG_KIND_OPS,
     OP_AVGPOOL, {OPS_KERNEL(8, 8), 1, OPS_PAD_VALID, 0}},
    {"L49 Mul by a [1] initializer read only there -> smul", "legal_affine.onnx", "affine_mul", EG_KIND_OPS,
     OP_SMUL, {0}},
    {"L50 Add of a [1,1,1,1] initializer read only there -> sadd", "legal_affine.onnx", "affine_add",
     EG_KIND_OPS, OP_SADD, {0}},
    {"L51 Mul by a [1] initializer read twice stays a model op", "legal_affine.onnx", "shared_mul",
     EG_KIND_MODEL, EG_MOP_MUL, {0}},
    {"L52 BatchNormalization of a Conv's output another node reads too -> scale(1)", "legal_bn_branch.onnx",
     "bn_branch", EG_KIND_OPS, OP_SCALE, {1}},
    {"L53 BatchNormalization that alone reads a Conv's output stays for folding", "legal_bn_branch.onnx",
     "bn_fold", EG_KIND_MODEL, EG_MOP_BATCHNORM, {0}},
    {"L54 Mul by a [C,1,1] initializer read twice (once through an Identity) -> scale(1)",
     "legal_layer_scale.onnx", "ls_a", EG_KIND_OPS, OP_SCALE, {1}},
    {"L55 ... the other Mul too (its operands swapped)", "legal_layer_scale.onnx", "ls_b", EG_KIND_OPS,
     OP_SCALE, {1}},
    /* found by fuzz_onnx: export could not write it (opset 3 has no numpy
     * broadcasting); the reader of an opaque two-input Sin of [4,1,1] */
    {"L56 opset 3 Add of [4,1,1] and [1,4,6,6] without broadcast = 1 stays opaque",
     "fuzz_legacy_unequal.onnx", "res", EG_KIND_OPAQUE, 0, {0}},
};
#define N_LOWER_CASES (sizeof lower_cases / sizeof lower_cases[0])

static void test_lower(void **state) {
    const lower_case *lc = *state;
    eg_graph *g = load_ok(lc->file);
    const eg_node *n = node_named(g, lc->node);
    assert_int_equal(n->kind, lc->kind);
    if (lc->kind == EG_KIND_OPS) {
        assert_int_equal(n->op, lc->op);
        assert_int_equal(n->n_in, ops_table[n->op].arity);
        for (int k = 0; k < ops_table[n->op].n_params; k++) assert_int_equal(n->param[k], lc->param[k]);
    } else if (lc->kind == EG_KIND_MODEL)
        assert_int_equal(n->mop, lc->op);
    eg_free(g);
}

/* L39: the legalized models compute the same before and after an export
 * and re-import (the engine's evaluator: onnxruntime runs no opset < 7),
 * the export is a fixed point, and the opset-6 bias Add reads a [4,1,1]
 * value the export writes back as the [4] 'b' with axis 1. */
static void test_legal_eval(void **state) {
    static const char *const files[] = {"legal_legacy6.onnx", "legal_sum6.onnx", "legal_sum.onnx",
                                        "legal_dropout7.onnx", "legal_ceil.onnx", "legal_affine.onnx",
                                        "legal_bn_branch.onnx"};
    (void)state;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        eg_graph *g = load_ok(files[i]), *h;
        ec_values v0;
        size_t len;
        char err[EG_ERRLEN];
        if (strcmp(files[i], "legal_ceil.onnx")) ec_eval_ok(g, 7, &v0);
        uint8_t *buf = fixed_point(g, &len);
        assert_int_equal(eg_load_mem(buf, len, files[i], NULL, &h, err, sizeof err), EG_OK);
        if (strcmp(files[i], "legal_ceil.onnx")) {
            ec_assert_same(&v0, h, files[i]);
            ec_free(&v0);
        }
        if (i == 0) {
            const eg_node *n = node_named(g, "bias");
            const eg_tensor *b = &g->tensor[n->in[1]];
            assert_int_equal(b->shape.rank, 3);
            assert_int_equal(b->shape.dim[0], 4);
            assert_int_equal(b->shape.dim[1], 1);
            assert_true(contains(buf, len, (const uint8_t *)"\n\001c\n\001b", 6));
        }
        free(buf);
        eg_free(h);
        eg_free(g);
    }
}

/* Mul by a rank-0 Constant becomes smul(x, s); Split in two, split0/split1. */
static void test_smul_split(void **state) {
    (void)state;
    eg_graph *g = load_ok("attention.onnx");
    int smul = 0;
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].kind == EG_KIND_OPS && g->node[j].op == OP_SMUL) {
            smul++;
            const eg_tensor *s = &g->tensor[g->node[j].in[1]];
            assert_int_equal(s->shape.rank, 0);
            assert_true(s->flags & EG_TF_CONST);
            assert_float_equal(s->data[0], 0.25f, 0.0f);
        }
    assert_int_equal(smul, 1);
    eg_free(g);
    g = load_ok("mixed.onnx");
    int parts = 0;
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].kind == EG_KIND_OPS && (g->node[j].op == OP_SPLIT0 || g->node[j].op == OP_SPLIT1)) {
            parts++;
            assert_int_equal(g->node[j].param[0], 1); /* axis -1 of a rank-2 tensor */
            assert_int_equal(g->node[j].param[1], 2);
        }
    assert_int_equal(parts, 2);
    assert_true(g->tensor[eg_find_tensor(g, "two")].flags & EG_TF_ABSORBED);
    eg_free(g);
}

/* ================= O: opaque nodes ================= */

static int contains(const uint8_t *hay, size_t n, const uint8_t *needle, size_t k) {
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0) return 1;
    return 0;
}

/* O01: every opaque node's original bytes appear verbatim in the export;
 * the If node reads 'h' from inside its branches (an implicit, pinned input). */
static void test_opaque(void **state) {
    (void)state;
    eg_graph *g = load_ok("opaque.onnx");
    size_t len;
    uint8_t *out = fixed_point(g, &len);
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].kind == EG_KIND_OPAQUE)
            assert_true(contains(out, len, g->node[j].proto, g->node[j].proto_len));
    const eg_node *n = node_named(g, "if");
    assert_int_equal(n->n_in, 1);
    assert_int_equal(n->n_implicit, 1);
    assert_string_equal(g->tensor[n->in[1]].name, "h");
    assert_true(g->tensor[n->in[1]].flags & EG_TF_PINNED);
    const eg_node *foo = node_named(g, "custom");
    assert_string_equal(foo->domain, "com.example");
    assert_string_equal(foo->op_type, "Foo");
    free(out);
    eg_free(g);
}

/* O02: a file saved with eg_save reads back; no temporary file is left. */
static void test_save_file(void **state) {
    (void)state;
    char dir[] = "/tmp/test_engine_io.XXXXXX", path[128], tmp[160], err[EG_ERRLEN];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.onnx", dir);
    eg_graph *g = load_ok("conv_bn_relu.onnx"), *h = NULL;
    assert_int_equal(eg_save(path, g, err, sizeof err), EG_OK);
    assert_int_equal(eg_load(path, NULL, &h, err, sizeof err), EG_OK);
    assert_int_equal(h->n_nodes, g->n_nodes);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    assert_int_not_equal(access(tmp, F_OK), 0);
    snprintf(tmp, sizeof tmp, "%s/missing/out.onnx", dir);
    assert_int_equal(eg_save(tmp, g, err, sizeof err), EG_EIO);
    assert_non_null(strstr(err, "missing/out.onnx"));
    unlink(path);
    rmdir(dir);
    eg_free(g);
    eg_free(h);
}

/* ================= E: errors ================= */

typedef enum { SRC_CORPUS, SRC_BYTES, SRC_DEEP, SRC_PATH } err_source;

typedef struct {
    const char *id;
    err_source src;
    const char *arg;       /* corpus file, literal bytes, or a path */
    eg_load_opts opts;
    eg_status status;
    const char *frag[2];   /* message fragments */
} err_case;

static const err_case err_cases[] = {
    {"E01 cycle", SRC_CORPUS, "bad_cycle.onnx", {0}, EG_EGRAPH,
     {"node 1 'second' (Relu): input 'a' depends on the node's own output", "cycle"}},
    {"E02 missing initializer", SRC_CORPUS, "bad_missing_init.onnx", {0}, EG_EGRAPH,
     {"node 0 'conv0' (Conv)", "input 'w_missing' is not defined"}},
    {"E03 IR version newer than onnx 1.23's", SRC_CORPUS, "bad_ir_new.onnx", {0}, EG_EOPSET,
     {"IR version 99", "1..14"}},
    {"E04 external data, the model read from memory", SRC_CORPUS, "bad_external.onnx", {0}, EG_EUNSUPPORTED,
     {"initializer 'w' keeps its data in an external file (weights.bin)", "read from memory"}},
    {"E04b external data, its file missing", SRC_CORPUS, "bad_external.onnx",
     {.model_path = CORPUS "bad_external.onnx"}, EG_EIO, {"initializer 'w'", "weights.bin: cannot open"}},
    {"E05 shape mismatch", SRC_CORPUS, "bad_shape.onnx", {0}, EG_ESHAPE,
     {"node 'mm' (MatMul)", "3 and 4"}},
    {"E06 missing file", SRC_PATH, "test/corpus/onnx/no_such.onnx", {0}, EG_EIO,
     {"no_such.onnx", "cannot open"}},
    {"E07 empty file: no IR version", SRC_BYTES, "", {0}, EG_EOPSET, {"IR version 0", NULL}},
    {"E08 not protobuf", SRC_BYTES, "hello, world", {0}, EG_EFORMAT,
     {"not a valid ONNX model", "byte"}},
    {"E09 subgraphs nested too deeply", SRC_DEEP, NULL, {0}, EG_ELIMIT, {"nested too deeply", NULL}},
    {"E10 decoder memory cap", SRC_CORPUS, "attention.onnx", {0, 1024, 0}, EG_ELIMIT,
     {"memory cap", NULL}},
    {"E11 file size limit", SRC_CORPUS, "attention.onnx", {100, 0, 0}, EG_ELIMIT,
     {"larger than", NULL}},
    {"E12 a directory", SRC_PATH, "test/corpus/onnx", {0}, EG_EIO, {"cannot read", NULL}},
    {"E13 a value as graph output, declared another shape", SRC_CORPUS, "bad_output_decl.onnx",
     {0}, EG_ESHAPE, {"graph output 'w' is declared [2,2]", "[6,6]"}},
    {"E14 a graph input's initializer of another type", SRC_CORPUS, "bad_input_default.onnx",
     {0}, EG_EFORMAT, {"graph input 'w' is declared float32", "initializer is int64"}},
    {"E15 a graph output nothing writes", SRC_CORPUS, "bad_output_undefined.onnx", {0}, EG_EGRAPH,
     {"graph output 'ghost' is not defined", NULL}},
    {"E16 two nodes write one tensor", SRC_CORPUS, "bad_dup_output.onnx", {0}, EG_EGRAPH,
     {"node 1 'second_writer' (Neg): output 'y'", "already an output of node 0 'first_writer'"}},
    {"E17 an unnamed node writes a graph input", SRC_CORPUS, "bad_output_is_input.onnx", {0},
     EG_EGRAPH, {"node 1 (Relu): output 'x'", "already a graph input"}},
    {"E18 a node writes an initializer", SRC_CORPUS, "bad_output_is_init.onnx", {0}, EG_EGRAPH,
     {"node 0 'clobber' (Relu): output 'w'", "already an initializer"}},
    {"E19 a node reads an undefined name", SRC_CORPUS, "bad_undefined_input.onnx", {0}, EG_EGRAPH,
     {"node 1 'add' (Add)", "input 'nowhere' is not defined"}},
    {"E20 an opaque node reads an undefined name", SRC_CORPUS, "bad_opaque_undefined_input.onnx",
     {0}, EG_EGRAPH, {"node 0 'hm' (Hardmax)", "input 'nowhere' is not defined"}},
    {"E22 a subgraph reads a name no scope defines", SRC_CORPUS, "bad_subgraph_undefined.onnx",
     {0}, EG_EGRAPH, {"node 2 'if' (If)", "subgraph 'then' reads 'ghost'"}},
    {"E23 a cycle a subgraph closes", SRC_CORPUS, "bad_subgraph_cycle.onnx", {0}, EG_EGRAPH,
     {"node 3 'if' (If): 'late', which its subgraph reads", "cycle"}},
    {"E24 two initializers of one name", SRC_CORPUS, "bad_dup_initializer.onnx", {0}, EG_EGRAPH,
     {"initializer 'w' is defined twice", NULL}},
    {"E25 a graph input listed twice", SRC_CORPUS, "bad_dup_input.onnx", {0}, EG_EGRAPH,
     {"graph input 'x' is listed twice", NULL}},
    {"E26 an opaque Sub of [2,3] and [4]", SRC_CORPUS, "bad_broadcast.onnx", {0}, EG_ESHAPE,
     {"node 'sub' (Sub)", "[2,3] and [4] do not broadcast"}},
    /* found by fuzz_onnx: a node's metadata_props (a field onnx 1.16 added)
     * holds a truncated varint; onnx cannot load it, so neither may we */
    {"E27 a node's metadata_props is not protobuf", SRC_CORPUS, "bad_node_metadata.onnx", {0},
     EG_EFORMAT, {"not a valid ONNX model", "truncated varint"}},
    /* found by fuzz_onnx: a Slice with a negative step of an empty axis
     * was one element long, and the folder read past the empty value */
    {"E28 pads folded from a Slice of an empty value", SRC_CORPUS, "fuzz_slice_empty.onnx", {0},
     EG_ESHAPE, {"node 'y' (Pad)", "0 pads for 4 axes"}},
};
#define N_ERR_CASES (sizeof err_cases / sizeof err_cases[0])

static void put_varint(uint8_t **p, uint64_t v) {
    do {
        *(*p)++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

/* Wrap body in a length-delimited field, in place at the front of buf. */
static size_t wrap(uint8_t *buf, size_t n, uint32_t field) {
    uint8_t hdr[16], *p = hdr;
    put_varint(&p, (uint64_t)field << 3 | 2);
    put_varint(&p, n);
    size_t h = (size_t)(p - hdr);
    memmove(buf + h, buf, n);
    memcpy(buf, hdr, h);
    return n + h;
}

/* A model whose graph nests If-style graph attributes 200 levels deep:
 * GraphProto.node(1) -> NodeProto.attribute(5) -> AttributeProto.g(6). */
static uint8_t *deep_model(size_t *len) {
    uint8_t *buf = calloc(1 << 16, 1);
    size_t n = 0;
    assert_non_null(buf);
    for (int level = 0; level < 200; level++) {
        n = wrap(buf, n, 6); /* attribute.g = the graph so far */
        n = wrap(buf, n, 5); /* node.attribute */
        n = wrap(buf, n, 1); /* graph.node */
    }
    n = wrap(buf, n, 7); /* model.graph */
    *len = n;
    return buf;
}

static void test_error(void **state) {
    const err_case *ec = *state;
    eg_graph *g = (eg_graph *)1;
    char err[EG_ERRLEN] = "", path[256];
    eg_status rc;
    uint8_t *buf = NULL;
    size_t len = 0;
    switch (ec->src) {
    case SRC_CORPUS:
        snprintf(path, sizeof path, CORPUS "%s", ec->arg);
        if (ec->opts.max_file_bytes) {
            rc = eg_load(path, &ec->opts, &g, err, sizeof err);
            break;
        }
        buf = read_all(path, &len);
        rc = eg_load_mem(buf, len, ec->arg, &ec->opts, &g, err, sizeof err);
        break;
    case SRC_BYTES:
        rc = eg_load_mem(ec->arg, strlen(ec->arg), "bytes", &ec->opts, &g, err, sizeof err);
        break;
    case SRC_DEEP:
        buf = deep_model(&len);
        rc = eg_load_mem(buf, len, "deep", &ec->opts, &g, err, sizeof err);
        break;
    case SRC_PATH:
    default:
        rc = eg_load(ec->arg, &ec->opts, &g, err, sizeof err);
        break;
    }
    free(buf);
    if (rc != ec->status) print_error("got %s: %s\n", eg_status_name(rc), err);
    assert_int_equal(rc, ec->status);
    assert_null(g);
    for (int k = 0; k < 2; k++)
        if (ec->frag[k] && !strstr(err, ec->frag[k])) fail_msg("'%s' lacks '%s'", err, ec->frag[k]);
}

/* ================= S: sweeps over damaged files ================= */

static const char *const sweep_files[] = {"conv_bn_relu.onnx", "inception.onnx", "convs.onnx",
                                          "attention.onnx", "mixed.onnx", "old_opset.onnx",
                                          "opaque.onnx", "reg_ir3.onnx", "reg_odd_values.onnx",
                                          "control_flow.onnx"};
#define N_SWEEP (sizeof sweep_files / sizeof sweep_files[0])

/* Whatever the import says, it says it cleanly; a model it accepts exports
 * and imports again. */
static void check_clean(const uint8_t *buf, size_t len, int must_fail) {
    eg_graph *g = NULL, *h = NULL;
    char err[EG_ERRLEN] = "";
    uint8_t *out;
    size_t n;
    eg_status rc = eg_load_mem(buf, len, "sweep", NULL, &g, err, sizeof err);
    if (rc != EG_OK) {
        assert_null(g);
        assert_true(err[0] != '\0');
        return;
    }
    if (must_fail) fail_msg("a truncated file of %zu bytes loaded", len);
    assert_int_equal(eg_save_mem(g, &out, &n, err, sizeof err), EG_OK);
    assert_int_equal(eg_load_mem(out, n, "re", NULL, &h, err, sizeof err), EG_OK);
    free(out);
    eg_free(h);
    eg_free(g);
}

static uint64_t get_varint(const uint8_t *buf, size_t *at) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        uint8_t b = buf[(*at)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    return v;
}

/* Mark the offsets where a top-level ModelProto field ends: a prefix cut
 * there is a well-formed (smaller) message. The corpus files only use
 * varint and length-delimited fields at the top. */
static void field_ends(const uint8_t *buf, size_t len, char *end) {
    size_t at = 0;
    while (at < len) {
        uint64_t tag = get_varint(buf, &at);
        uint64_t v = get_varint(buf, &at);
        if ((tag & 7) == 2) at += v;
        end[at] = 1;
    }
}

/* S01: every strict prefix fails, except one cut at a top-level field
 * boundary (e.g. after the first of two opset_import entries), which may
 * load; nothing crashes either way. */
static void test_truncations(void **state) {
    (void)state;
    for (size_t f = 0; f < N_SWEEP; f++) {
        char path[256];
        size_t len;
        snprintf(path, sizeof path, CORPUS "%s", sweep_files[f]);
        uint8_t *buf = read_all(path, &len);
        char *end = calloc(len + 1, 1);
        field_ends(buf, len, end);
        for (size_t k = 0; k < len; k++) {
            uint8_t *cut = malloc(k ? k : 1); /* exact size, so ASan sees overreads */
            memcpy(cut, buf, k);
            check_clean(cut, k, !end[k]);
            free(cut);
        }
        free(end);
        free(buf);
    }
}

/* S02: each byte flipped three ways. */
static void test_flips(void **state) {
    (void)state;
    static const uint8_t masks[] = {0xff, 0x01, 0x80};
    for (size_t f = 0; f < N_SWEEP; f++) {
        char path[256];
        size_t len;
        snprintf(path, sizeof path, CORPUS "%s", sweep_files[f]);
        uint8_t *buf = read_all(path, &len);
        for (size_t k = 0; k < len; k++)
            for (size_t m = 0; m < sizeof masks; m++) {
                buf[k] ^= masks[m];
                check_clean(buf, len, 0);
                buf[k] ^= masks[m];
            }
        free(buf);
    }
}

/* ================= G: the IR itself ================= */

/* G01: a graph built by hand: names, producers, cycles, toposort. */
static void test_ir(void **state) {
    (void)state;
    eg_graph *g = eg_graph_new();
    int x, a, b, n0, n1;
    char err[EG_ERRLEN];
    assert_int_equal(eg_add_tensor(g, "x", &x), EG_OK);
    assert_int_equal(eg_add_tensor(g, "a", &a), EG_OK);
    assert_int_equal(eg_add_tensor(g, "b", &b), EG_OK);
    assert_int_equal(eg_add_tensor(g, "a", &n0), EG_EGRAPH);
    g->tensor[x].flags |= EG_TF_INPUT;
    /* added out of order: b = relu(a) first, then a = relu(x) */
    assert_int_equal(eg_add_node(g, EG_KIND_OPS, "second", 1, 0, 1, &n1), EG_OK);
    g->node[n1].op = OP_RELU, g->node[n1].in[0] = a, g->node[n1].out[0] = b;
    assert_int_equal(eg_add_node(g, EG_KIND_OPS, "first", 1, 0, 1, &n0), EG_OK);
    g->node[n0].op = OP_RELU, g->node[n0].in[0] = x, g->node[n0].out[0] = a;
    assert_int_equal(eg_index(g, err, sizeof err), EG_OK);
    assert_int_equal(eg_toposort(g, err, sizeof err), EG_OK);
    assert_string_equal(g->node[0].name, "first");
    assert_int_equal(g->tensor[b].producer, 1);
    /* close a cycle: first now reads b */
    g->node[0].in[0] = b;
    assert_int_equal(eg_index(g, err, sizeof err), EG_OK);
    assert_int_equal(eg_toposort(g, err, sizeof err), EG_EGRAPH);
    assert_non_null(strstr(err, "cycle"));
    /* a graph without a model shell cannot be exported */
    uint8_t *out;
    size_t n;
    assert_int_equal(eg_save_mem(g, &out, &n, err, sizeof err), EG_EFORMAT);
    eg_free(g);
}

/* G03: a rewrite by hand, the way the search will do it: the attention
 * block's transpose is replaced by a model Transpose, the old node
 * removed, shapes re-inferred; the result exports and loads. */
static void test_rewrite(void **state) {
    (void)state;
    eg_graph *g = load_ok("attention.onnx"), *h = NULL;
    char err[EG_ERRLEN];
    int old = -1, id;
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].kind == EG_KIND_OPS && g->node[j].op == OP_TRANSPOSE) old = j;
    assert_true(old >= 0);
    int in = g->node[old].in[0], out = g->node[old].out[0];
    assert_int_equal(eg_add_node(g, EG_KIND_MODEL, "t2", 1, 0, 1, &id), EG_OK);
    g->node[id].mop = EG_MOP_TRANSPOSE;
    g->node[id].in[0] = in, g->node[id].out[0] = out;
    unsigned char *drop = calloc((size_t)g->n_nodes, 1);
    drop[old] = 1;
    assert_int_equal(eg_remove_nodes(g, drop, err, sizeof err), EG_OK);
    free(drop);
    assert_int_equal(eg_toposort(g, err, sizeof err), EG_OK);
    assert_int_equal(eg_infer_all(g, err, sizeof err), EG_OK);
    uint8_t *buf;
    size_t len;
    assert_int_equal(eg_save_mem(g, &buf, &len, err, sizeof err), EG_OK);
    assert_int_equal(eg_load_mem(buf, len, "rewritten", NULL, &h, err, sizeof err), EG_OK);
    assert_int_equal(h->n_nodes, g->n_nodes);
    /* removing the node that writes a graph's tensor in use is refused */
    drop = calloc((size_t)h->n_nodes, 1);
    drop[0] = 1;
    assert_int_equal(eg_remove_nodes(h, drop, err, sizeof err), EG_EGRAPH);
    assert_non_null(strstr(err, "not defined"));
    free(drop);
    free(buf);
    eg_free(g);
    eg_free(h);
}

/* G02: shapes for display and opspecs. */
static void test_shapes(void **state) {
    (void)state;
    char buf[160];
    eg_shape s = {4, {1, -1, 224, 224}};
    ten_shape t;
    assert_string_equal(eg_shape_str(&s, NULL, buf, sizeof buf), "[1,?,224,224]");
    assert_int_equal(eg_shape_numel(&s), -1);
    assert_false(eg_to_ten_shape(&s, &t));
    s.dim[1] = 3;
    assert_int_equal(eg_shape_numel(&s), 3 * 224 * 224);
    assert_true(eg_to_ten_shape(&s, &t));
    eg_shape big = {3, {(int64_t)1 << 40, (int64_t)1 << 40, 1 << 20}};
    assert_int_equal(eg_shape_numel(&big), -2);
    eg_shape unk = {-1, {0}};
    assert_string_equal(eg_shape_str(&unk, NULL, buf, sizeof buf), "[?]");
}

/* ================= S: shape rules (cfold.c), K: constant folding ================= */

/* Expected shapes and dtypes: what onnx.shape_inference (data_prop=True)
 * infers for the same models (test/mk_onnx_models.py shapes_op*). */
typedef struct {
    const char *id, *file, *tensor, *shape;
    int dtype;
} shape_case;

static const shape_case shape_cases[] = {
    {"S01 ap_pad", "shapes_op17.onnx", "ap_pad", "[1,3,5,5]", EG_DT_FLOAT},
    {"S02 mp_dil", "shapes_op17.onnx", "mp_dil", "[1,3,8,8]", EG_DT_FLOAT},
    {"S03 mp_same", "shapes_op17.onnx", "mp_same", "[1,3,5,5]", EG_DT_FLOAT},
    {"S04 convt", "shapes_op17.onnx", "convt", "[1,2,21,21]", EG_DT_FLOAT},
    {"S05 gmp", "shapes_op17.onnx", "gmp", "[1,3,1,1]", EG_DT_FLOAT},
    {"S06 clip", "shapes_op17.onnx", "clip", "[1,3,10,10]", EG_DT_FLOAT},
    {"S07 hsig", "shapes_op17.onnx", "hsig", "[1,3,10,10]", EG_DT_FLOAT},
    {"S08 hswish", "shapes_op17.onnx", "hswish", "[1,3,10,10]", EG_DT_FLOAT},
    {"S09 erf", "shapes_op17.onnx", "erf", "[1,6,16]", EG_DT_FLOAT},
    {"S10 lrn", "shapes_op17.onnx", "lrn", "[1,3,10,10]", EG_DT_FLOAT},
    {"S11 inorm", "shapes_op17.onnx", "inorm", "[1,3,10,10]", EG_DT_FLOAT},
    {"S12 sub", "shapes_op17.onnx", "sub", "[1,3,10,10]", EG_DT_FLOAT},
    {"S13 pow", "shapes_op17.onnx", "pow", "[1,6,16]", EG_DT_FLOAT},
    {"S14 sum3", "shapes_op17.onnx", "sum3", "[2,3]", EG_DT_FLOAT},
    {"S15 max2", "shapes_op17.onnx", "max2", "[2,3]", EG_DT_FLOAT},
    {"S16 lsm", "shapes_op17.onnx", "lsm", "[1,6,16]", EG_DT_FLOAT},
    {"S17 ln", "shapes_op17.onnx", "ln", "[1,6,16]", EG_DT_FLOAT},
    {"S18 rmean", "shapes_op17.onnx", "rmean", "[1,6,1]", EG_DT_FLOAT},
    {"S19 rsum", "shapes_op17.onnx", "rsum", "[1,16]", EG_DT_FLOAT},
    {"S20 rmax", "shapes_op17.onnx", "rmax", "[]", EG_DT_FLOAT},
    {"S21 split_a", "shapes_op17.onnx", "split_a", "[1,2,16]", EG_DT_FLOAT},
    {"S22 split_b", "shapes_op17.onnx", "split_b", "[1,4,16]", EG_DT_FLOAT},
    {"S23 slice_neg", "shapes_op17.onnx", "slice_neg", "[1,6,4]", EG_DT_FLOAT},
    {"S24 gather", "shapes_op17.onnx", "gather", "[1,2,2,16]", EG_DT_FLOAT},
    {"S25 transp", "shapes_op17.onnx", "transp", "[16,1,6]", EG_DT_FLOAT},
    {"S26 unsq", "shapes_op17.onnx", "unsq", "[1,1,6,1,16]", EG_DT_FLOAT},
    {"S27 sq", "shapes_op17.onnx", "sq", "[1,1,6,16]", EG_DT_FLOAT},
    {"S28 expand", "shapes_op17.onnx", "expand", "[2,6,4]", EG_DT_FLOAT},
    {"S29 tile", "shapes_op17.onnx", "tile", "[2,6,16]", EG_DT_FLOAT},
    {"S30 pad", "shapes_op17.onnx", "pad", "[1,3,14,16]", EG_DT_FLOAT},
    {"S31 shape15", "shapes_op17.onnx", "shape15", "[2]", EG_DT_INT64},
    {"S32 size", "shapes_op17.onnx", "size", "[]", EG_DT_INT64},
    {"S33 cofs", "shapes_op17.onnx", "cofs", "[2,3]", EG_DT_FLOAT},
    {"S34 cast", "shapes_op17.onnx", "cast", "[1,6,16]", EG_DT_INT32},
    {"S35 drop", "shapes_op17.onnx", "drop", "[1,6,16]", EG_DT_FLOAT},
    {"S36 mask of a Dropout kept opaque", "legal_dropout.onnx", "mask", "[1,4,8,8]", EG_DT_BOOL},
    {"S37 eq", "shapes_op17.onnx", "eq", "[1,6,16]", EG_DT_BOOL},
    {"S38 where", "shapes_op17.onnx", "where", "[1,6,16]", EG_DT_FLOAT},
    {"S39 range", "shapes_op17.onnx", "range", "[4]", EG_DT_INT64},
    {"S40 resize", "shapes_op17.onnx", "resize", "[1,3,20,20]", EG_DT_FLOAT},
    {"S41 resize_sz", "shapes_op17.onnx", "resize_sz", "[1,3,7,7]", EG_DT_FLOAT},
    {"S42 mm4", "shapes_op17.onnx", "mm4", "[1,2,6,6]", EG_DT_FLOAT},
    {"S43 softmax", "shapes_op17.onnx", "softmax", "[1,6,16]", EG_DT_FLOAT},
    {"S44 cat3", "shapes_op17.onnx", "cat3", "[3,3]", EG_DT_FLOAT},
    {"S45 flat", "shapes_op17.onnx", "flat", "[3,100]", EG_DT_FLOAT},
    {"S46 conv1x", "shapes_op17.onnx", "conv1x", "[1,4,5,5]", EG_DT_FLOAT},
    {"S47 gemm", "shapes_op17.onnx", "gemm", "[4,6]", EG_DT_FLOAT},
    {"S48 rs_shape", "shapes_op17.onnx", "rs_shape", "[3]", EG_DT_INT64},
    {"S49 rs_batch", "shapes_op17.onnx", "rs_batch", "[]", EG_DT_INT64},
    {"S50 rs_b1", "shapes_op17.onnx", "rs_b1", "[1]", EG_DT_INT64},
    {"S51 rs_target", "shapes_op17.onnx", "rs_target", "[4]", EG_DT_INT64},
    {"S52 unsq9", "shapes_op9.onnx", "unsq9", "[1,1,6,16]", EG_DT_FLOAT},
    {"S53 sq9", "shapes_op9.onnx", "sq9", "[1,6,16]", EG_DT_FLOAT},
    {"S54 pad9", "shapes_op9.onnx", "pad9", "[1,10,22]", EG_DT_FLOAT},
    {"S55 split9_a", "shapes_op9.onnx", "split9_a", "[1,2,16]", EG_DT_FLOAT},
    {"S56 split9_b", "shapes_op9.onnx", "split9_b", "[1,4,16]", EG_DT_FLOAT},
    {"S57 rmean9", "shapes_op9.onnx", "rmean9", "[1]", EG_DT_FLOAT},
    {"S58 ups", "shapes_op9.onnx", "ups", "[1,12,32]", EG_DT_FLOAT},
    {"S59 s18_a", "shapes_op18.onnx", "s18_a", "[1,6,6]", EG_DT_FLOAT},
    {"S60 s18_b", "shapes_op18.onnx", "s18_b", "[1,6,6]", EG_DT_FLOAT},
    {"S61 s18_c", "shapes_op18.onnx", "s18_c", "[1,6,4]", EG_DT_FLOAT},
    {"S62 pad18", "shapes_op18.onnx", "pad18", "[1,6,19]", EG_DT_FLOAT},
    {"S63 mp_ceil", "shapes_op17.onnx", "mp_ceil", "[1,3,5,5]", EG_DT_FLOAT},
    {"S64 reshaped", "shapes_op17.onnx", "reshaped", "[1,6,4,4]", EG_DT_FLOAT},
    {"S65 slice_step", "shapes_op17.onnx", "slice_step", "[1,3,16]", EG_DT_FLOAT},
    {"S66 slice9", "shapes_op9.onnx", "slice9", "[1,4,16]", EG_DT_FLOAT},
    {"S67 rmean18", "shapes_op18.onnx", "rmean18", "[1,6]", EG_DT_FLOAT},
    {"S68 es_attn", "shapes_op21.onnx", "es_attn", "[1,2,5,6]", EG_DT_FLOAT},
    {"S69 es_implicit", "shapes_op21.onnx", "es_implicit", "[2,4]", EG_DT_FLOAT},
    {"S70 es_ellipsis", "shapes_op21.onnx", "es_ellipsis", "[2,5,3,6]", EG_DT_FLOAT},
    {"S71 es_transpose", "shapes_op21.onnx", "es_transpose", "[3,2]", EG_DT_FLOAT},
    {"S72 es_diag", "shapes_op21.onnx", "es_diag", "[3]", EG_DT_FLOAT},
    {"S73 es_outer", "shapes_op21.onnx", "es_outer", "[3,4]", EG_DT_FLOAT},
    {"S74 es_sum", "shapes_op21.onnx", "es_sum", "[]", EG_DT_FLOAT},
    {"S75 d2s", "shapes_op21.onnx", "d2s", "[1,1,12,16]", EG_DT_FLOAT},
    {"S76 s2d", "shapes_op21.onnx", "s2d", "[1,16,3,4]", EG_DT_FLOAT},
    {"S77 q8", "shapes_op21.onnx", "q8", "[1,4,6,8]", EG_DT_UINT8},
    {"S78 dq8", "shapes_op21.onnx", "dq8", "[1,4,6,8]", EG_DT_FLOAT},
    {"S79 dyq_s", "shapes_op21.onnx", "dyq_s", "[]", EG_DT_FLOAT},
    {"S80 dyq_z", "shapes_op21.onnx", "dyq_z", "[]", EG_DT_UINT8},
    {"S81 gn", "shapes_op21.onnx", "gn", "[1,4,6,8]", EG_DT_FLOAT},
    {"S82 gnd", "shapes_op21.onnx", "gnd", "[2]", EG_DT_FLOAT},
    {"S83 gs", "shapes_op21.onnx", "gs", "[1,4,3,5]", EG_DT_FLOAT},
    {"S84 oh", "shapes_op21.onnx", "oh", "[1,4,3]", EG_DT_FLOAT},
    {"S85 det", "shapes_op21.onnx", "det", "[2]", EG_DT_FLOAT},
    {"S86 lpn", "shapes_op21.onnx", "lpn", "[2,3]", EG_DT_FLOAT},
    {"S87 eye", "shapes_op21.onnx", "eye", "[3,3]", EG_DT_FLOAT},
    {"S88 band", "shapes_op21.onnx", "band", "[2,3]", EG_DT_INT64},
    {"S89 mmi", "shapes_op21.onnx", "mmi", "[2,4]", EG_DT_INT32},
    {"S90 lstm_y", "shapes_op21.onnx", "lstm_y", "[3,1,2,5]", EG_DT_FLOAT},
    {"S91 lstm_h", "shapes_op21.onnx", "lstm_h", "[1,2,5]", EG_DT_FLOAT},
    {"S92 lstm_c", "shapes_op21.onnx", "lstm_c", "[1,2,5]", EG_DT_FLOAT},
    {"S93 gru_y", "shapes_op21.onnx", "gru_y", "[3,2,2,5]", EG_DT_FLOAT},
    {"S94 gru_h", "shapes_op21.onnx", "gru_h", "[2,2,5]", EG_DT_FLOAT},
    {"S95 rnn_h", "shapes_op21.onnx", "rnn_h", "[1,2,5]", EG_DT_FLOAT},
};
#define N_SHAPE_CASES (sizeof shape_cases / sizeof shape_cases[0])

static void test_shape_rule(void **state) {
    const shape_case *sc = *state;
    char buf[160];
    eg_graph *g = load_ok(sc->file);
    assert_string_equal(shape_of(g, sc->tensor, buf), sc->shape);
    assert_int_equal(g->tensor[eg_find_tensor(g, sc->tensor)].dtype, sc->dtype);
    eg_free(g);
}

static int has_node(const eg_graph *g, const char *name) {
    for (int j = 0; j < g->n_nodes; j++)
        if (strcmp(g->node[j].name, name) == 0) return 1;
    return 0;
}

static int64_t int_at(const eg_tensor *t, int i) {
    int64_t v;
    assert_non_null(t->raw);
    memcpy(&v, t->raw + 8 * i, 8);
    return v;
}

/* K01: Shape -> Gather -> Unsqueeze -> Concat folds to the constant target
 * [1,6,4,4]; the Reshape it feeds splits the last axis [1,6,16] in 4, so it
 * is lowered to heads(4), an operator the rules know. */
static void test_fold_reshape(void **state) {
    (void)state;
    eg_graph *g = load_ok("shapes_op17.onnx");
    const char *gone[] = {"rs_shape", "rs_batch", "rs_b1", "rs_target", "range", "cofs", "size"};
    for (size_t k = 0; k < sizeof gone / sizeof gone[0]; k++) assert_false(has_node(g, gone[k]));
    assert_int_equal(node_named(g, "reshaped")->kind, EG_KIND_OPS);
    assert_int_equal(node_named(g, "reshaped")->op, OP_HEADS);
    assert_int_equal(node_named(g, "reshaped")->param[0], 4);
    const eg_tensor *t = &g->tensor[eg_find_tensor(g, "rs_target")];
    assert_true(t->flags & EG_TF_INIT);
    int64_t want[4] = {1, 6, 4, 4};
    for (int i = 0; i < 4; i++) assert_int_equal(int_at(t, i), want[i]);
    t = &g->tensor[eg_find_tensor(g, "range")];
    for (int i = 0; i < 4; i++) assert_int_equal(int_at(t, i), 3 * i);
    eg_free(g);
}

/* K02: a ConstantOfShape with a constant shape is a known tensor. */
static void test_fold_cofs(void **state) {
    (void)state;
    eg_graph *g = load_ok("shapes_op17.onnx");
    const eg_tensor *t = &g->tensor[eg_find_tensor(g, "cofs")];
    assert_true(t->flags & EG_TF_INIT);
    assert_non_null(t->data);
    for (int i = 0; i < 6; i++) assert_true(t->data[i] == 1.5f);
    eg_free(g);
}

/* K03: the transformer layer: no shape arithmetic left, every tensor's
 * shape known, every Reshape a model op. */
static void test_fold_transformer(void **state) {
    (void)state;
    eg_graph *g = load_ok("transformer.onnx");
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        char buf[96];
        const char *op = eg_node_opname(n, buf, sizeof buf);
        assert_true(strcmp(op, "Shape") && strcmp(op, "Gather") && strcmp(op, "Concat") &&
                    strcmp(op, "Unsqueeze") && strcmp(op, "ConstantOfShape"));
        if (!strcmp(op, "Reshape")) assert_int_equal(n->kind, EG_KIND_MODEL);
        for (int k = 0; k < n->n_out; k++) assert_true(eg_shape_known(&g->tensor[n->out[k]].shape));
    }
    eg_free(g);
}

/* K04: Swin-style window padding: Mod (fmod 0 and 1, int and float,
 * negative operands as onnxruntime gives them), Sub, a reversing Slice and
 * an int64 Transpose fold, so the Pad's pads are a constant. */
static void test_fold_window(void **state) {
    (void)state;
    eg_graph *g = load_ok("fold_window.onnx");
    const char *gone[] = {"w_shape", "w_hm", "pad_b", "pad_r", "w_rev", "w_tp", "pads", "mod_py", "mod_c", "mod_f"};
    for (size_t k = 0; k < sizeof gone / sizeof gone[0]; k++) assert_false(has_node(g, gone[k]));
    const eg_tensor *t = &g->tensor[eg_find_tensor(g, "pads")];
    assert_true(t->flags & EG_TF_INIT);
    int64_t pads[8] = {0, 0, 0, 0, 0, 2, 1, 0};
    for (int i = 0; i < 8; i++) assert_int_equal(int_at(t, i), pads[i]);
    t = &g->tensor[eg_find_tensor(g, "mod_i")];
    assert_true(t->flags & EG_TF_INIT);
    int64_t mods[6] = {4, -4, 2, -3, 3, -1};
    for (int i = 0; i < 6; i++) assert_int_equal(int_at(t, i), mods[i]);
    t = &g->tensor[eg_find_tensor(g, "mod_f")];
    assert_true(t->flags & EG_TF_INIT);
    assert_non_null(t->data);
    assert_true(t->data[0] == -1.5f);
    char buf[160];
    assert_string_equal(shape_of(g, "y", buf), "[1,7,7,3]");
    eg_free(g);
}

/* Found by fuzz_onnx. A Sum of int constants folds as the Adds import
 * lowers it to (else export wrote Adds that the next import folded: not
 * a fixed point); a Not of a float constant (not valid ONNX) is left to
 * the runtime instead of read as ints. */
static void test_fold_fuzzed(void **state) {
    (void)state;
    eg_graph *g = load_ok("fuzz_sum_folds.onnx");
    assert_false(has_node(g, "w_hm"));
    const eg_tensor *t = &g->tensor[eg_find_tensor(g, "pads")];
    assert_true(t->flags & EG_TF_INIT);
    int64_t pads[8] = {0, 0, 0, 0, 0, 2, 1, 0}; /* (7 - (5 + 7)) mod 7 = 2, as Mod(5, 7) gave */
    for (int i = 0; i < 8; i++) assert_int_equal(int_at(t, i), pads[i]);
    eg_free(g);
    g = load_ok("fuzz_not_float.onnx");
    assert_true(has_node(g, "mod_f"));
    eg_free(g);
}

/* ================= main ================= */


int main(void) {
    struct CMUnitTest tests[N_MODEL_CASES + N_LOWER_CASES + N_ERR_CASES + N_SHAPE_CASES + 32];
    size_t n = 0;
    ADD_TABLE(tests, n, model_cases, N_MODEL_CASES, test_model);
    ADD_TABLE(tests, n, lower_cases, N_LOWER_CASES, test_lower);
    ADD_TABLE(tests, n, err_cases, N_ERR_CASES, test_error);
    ADD_TABLE(tests, n, shape_cases, N_SHAPE_CASES, test_shape_rule);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fold_reshape);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fold_cofs);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fold_transformer);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fold_window);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fold_fuzzed);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_sorted);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_pieces_in_place);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_smul_split);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_legal_eval);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_opaque);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_save_file);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_truncations);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_flips);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_ir);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_rewrite);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_shapes);
    return _cmocka_run_group_tests("engine_io", tests, n, NULL, NULL);
}
