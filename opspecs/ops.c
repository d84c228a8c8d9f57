/* ops.c - the operator and parameter tables, name lookup, the digest. */
#include "ops.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* kinds column: what synth may feed an operator and what it gets back */
#define K_M OPS_KM(OPS_KIND_MATRIX)
#define K_A OPS_KM(OPS_KIND_ACT)
#define K_W OPS_KM(OPS_KIND_WEIGHT)
#define K_S OPS_KM(OPS_KIND_SCALAR)
#define K_V OPS_KM(OPS_KIND_VECTOR)
#define K_SAME_AS(m) {m, OPS_KM_SAME, OPS_OUT_IN0} /* binary, both one kind */
#define K_UNARY(m) {m, 0, OPS_OUT_IN0}
#define P1(k, n) .n_params = 1, .pkind = {k}, .pname = {n}
/* an activation: element-wise, on matrices and activations; flops: its
 * cost per cell relative to an add (a transcendental cell costs ~4) */
#define ACT_ROW(nm, ox, fl) .name = nm, .arity = 1, .flags = OPF_ELEMENTWISE, .onnx = ox, \
                            .kinds = K_UNARY(K_M | K_A), .form = OPS_FORM_MAP, .flops = fl
#define ACT(nm, ox, fl) {ACT_ROW(nm, ox, fl)}

const ops_info ops_table[OP_COUNT] = { /* ORDER OP */
    [OP_MATMUL] = {.name = "matmul", .arity = 2, .onnx = "MatMul",
                   .kinds = {K_M, K_M, OPS_KIND_MATRIX}, .form = OPS_FORM_MATMUL},
    [OP_BMM] = {.name = "bmm", .arity = 2, .onnx = "MatMul", .kinds = {K_A, K_A, OPS_KIND_ACT},
                .form = OPS_FORM_BMM},
    [OP_LINEAR] = {.name = "linear", .arity = 2, .onnx = "MatMul", .kinds = {K_A, K_M, OPS_KIND_ACT},
                   .form = OPS_FORM_LINEAR},
    [OP_CONV2D] = {.name = "conv2d", .arity = 2, .n_params = 4,
                   .pkind = {PK_STRIDE, PK_PAD, PK_ACT, PK_GROUPS},
                   .pname = {"stride", "pad", "act", "groups"}, .onnx = "Conv",
                   .kinds = {K_A, K_W, OPS_KIND_ACT}, .form = OPS_FORM_CONV},
    [OP_EWADD] = {.name = "ewadd", .arity = 2, .flags = OPF_ELEMENTWISE | OPF_COMMUTATIVE,
                  .onnx = "Add", .kinds = K_SAME_AS(OPS_KM_TENSOR), .form = OPS_FORM_ZIP, .flops = 1},
    [OP_EWMUL] = {.name = "ewmul", .arity = 2, .flags = OPF_ELEMENTWISE | OPF_COMMUTATIVE,
                  .onnx = "Mul", .kinds = K_SAME_AS(OPS_KM_TENSOR), .form = OPS_FORM_ZIP, .flops = 1},
    [OP_SMUL] = {.name = "smul", .arity = 2, .onnx = "Mul", .kinds = {OPS_KM_ANY, K_S, OPS_OUT_IN0},
                 .form = OPS_FORM_SCALE, .flops = 1},
    [OP_SADD] = {.name = "sadd", .arity = 2, .onnx = "Add", .kinds = {OPS_KM_ANY, K_S, OPS_OUT_IN0},
                 .form = OPS_FORM_SCALE, .flops = 1},
    [OP_SDIV] = {.name = "sdiv", .arity = 2, .onnx = "Div", .kinds = {OPS_KM_ANY, K_S, OPS_OUT_IN0},
                 .form = OPS_FORM_SCALE, .flops = 1},
    [OP_RELU] = ACT("relu", "Relu", 1),
    [OP_SIGMOID] = ACT("sigmoid", "Sigmoid", 4),
    [OP_TANH] = ACT("tanh", "Tanh", 4),
    [OP_ERF] = ACT("erf", "Erf", 4),
    [OP_RELU6] = {ACT_ROW("relu6", "Clip", 1), .onnx_const = {{"min", 0.0f}, {"max", 6.0f}},
                  .onnx_const_inputs_since = 11},
    [OP_HSIGMOID] = {ACT_ROW("hardsigmoid", "HardSigmoid", 2),
                     .onnx_const = {{"alpha", 1.0f / 6.0f, 0}, {"beta", 0.5f, 1}}},
    [OP_HSWISH] = ACT("hardswish", "HardSwish", 3),
    [OP_NANZERO] = ACT("nanzero", "IsNaN+Where", 1), /* two ONNX nodes: lower.c, onnx_out.c */
    [OP_SOFTMAX] = {.name = "softmax", .arity = 1, P1(PK_AXIS, "axis"), .onnx = "Softmax",
                    .kinds = K_UNARY(K_M | K_A), .form = OPS_FORM_ROW, .flops = 5},
    [OP_LAYERNORM] = {.name = "layernorm", .arity = 1, .n_params = 2, .pkind = {PK_AXIS, PK_EPS},
                      .pname = {"axis", "eps"}, .onnx = "LayerNormalization",
                      .kinds = K_UNARY(K_M | K_A), .form = OPS_FORM_ROW, .flops = 6},
    [OP_BIAS] = {.name = "bias", .arity = 2, P1(PK_AXIS, "axis"), .onnx = "Add",
                 .kinds = {K_M | K_A | K_W, K_V, OPS_OUT_IN0}, .form = OPS_FORM_CHANNEL, .flops = 1},
    [OP_SCALE] = {.name = "scale", .arity = 2, P1(PK_AXIS, "axis"), .onnx = "Mul",
                  .kinds = {K_M | K_A | K_W, K_V, OPS_OUT_IN0}, .form = OPS_FORM_CHANNEL, .flops = 1},
    [OP_AVGPOOL] = {.name = "avgpool", .arity = 1, .n_params = 3,
                    .pkind = {PK_KERNEL, PK_STRIDE, PK_PAD}, .pname = {"kernel", "stride", "pad"},
                    .onnx = "AveragePool", .kinds = K_UNARY(K_A), .form = OPS_FORM_POOL},
    [OP_MAXPOOL] = {.name = "maxpool", .arity = 1, .n_params = 3,
                    .pkind = {PK_KERNEL, PK_STRIDE, PK_PAD}, .pname = {"kernel", "stride", "pad"},
                    .onnx = "MaxPool", .kinds = K_UNARY(K_A), .form = OPS_FORM_POOL},
    [OP_CONCAT] = {.name = "concat", .arity = 2, P1(PK_AXIS, "axis"), .onnx = "Concat",
                   .kinds = K_SAME_AS(OPS_KM_TENSOR), .form = OPS_FORM_CONCAT},
    [OP_SPLIT0] = {.name = "split0", .arity = 1, .n_params = 2, .pkind = {PK_AXIS, PK_SIZE},
                   .pname = {"axis", "size"}, .onnx = "Split", .kinds = K_UNARY(OPS_KM_TENSOR),
                   .form = OPS_FORM_SPLIT},
    [OP_SPLIT1] = {.name = "split1", .arity = 1, .n_params = 2, .pkind = {PK_AXIS, PK_SIZE},
                   .pname = {"axis", "size"}, .onnx = "Split", .kinds = K_UNARY(OPS_KM_TENSOR),
                   .form = OPS_FORM_SPLIT},
    [OP_TRANSPOSE] = {.name = "transpose", .arity = 1, .onnx = "Transpose", .kinds = K_UNARY(K_M),
                      .form = OPS_FORM_TRANSPOSE},
    [OP_PERMUTE] = {.name = "permute", .arity = 1, P1(PK_PERM, "perm"), .onnx = "Transpose",
                    .kinds = K_UNARY(K_A), .form = OPS_FORM_PERMUTE},
    [OP_HEADS] = {.name = "heads", .arity = 1, P1(PK_HEADS, "heads"), .onnx = "Reshape",
                  .kinds = K_UNARY(K_A), .form = OPS_FORM_HEADS},
    [OP_UNHEADS] = {.name = "unheads", .arity = 1, P1(PK_HEADS, "heads"), .onnx = "Reshape",
                    .kinds = K_UNARY(K_A), .form = OPS_FORM_HEADS},
    [OP_ENLARGE] = {.name = "enlarge", .arity = 1, P1(PK_KERNEL, "kernel"), .onnx = "Pad",
                    .kinds = K_UNARY(K_W), .form = OPS_FORM_ENLARGE},
    [OP_IMM] = {.name = "imm", .arity = 1, .flags = OPF_CONST, .onnx = "(initializer)",
                .kinds = K_UNARY(K_M), .ref = OPS_REF_DIM1, .form = OPS_FORM_IMM},
    [OP_ICONV] = {.name = "iconv", .arity = 1, P1(PK_KERNEL, "kernel"), .flags = OPF_CONST,
                  .onnx = "(initializer)", .kinds = {K_A, 0, OPS_KIND_WEIGHT}, .ref = OPS_REF_DIM1,
                  .form = OPS_FORM_CKERNEL},
    [OP_POOLK] = {.name = "poolk", .arity = 1, P1(PK_KERNEL, "kernel"), .flags = OPF_CONST,
                  .onnx = "(initializer)", .kinds = {K_A, 0, OPS_KIND_WEIGHT}, .ref = OPS_REF_DIM1,
                  .form = OPS_FORM_CKERNEL},
    [OP_ONES] = {.name = "ones", .arity = 1, .flags = OPF_CONST, .onnx = "(initializer)",
                 .kinds = K_UNARY(OPS_KM_TENSOR), .ref = OPS_REF_SHAPE, .form = OPS_FORM_ONES},
    [OP_KMUL] = {.name = "kmul", .arity = 2, .onnx = "Conv", .kinds = {K_W, K_W | K_V, OPS_OUT_IN1},
                 .form = OPS_FORM_KMUL},
    [OP_EWSUB] = {.name = "ewsub", .arity = 2, .flags = OPF_ELEMENTWISE, .onnx = "Sub",
                  .kinds = K_SAME_AS(OPS_KM_TENSOR), .form = OPS_FORM_ZIP, .flops = 1},
    [OP_DWICONV] = {.name = "dwiconv", .arity = 1, P1(PK_KERNEL, "kernel"), .flags = OPF_CONST,
                    .onnx = "(initializer)", .kinds = {K_A, 0, OPS_KIND_WEIGHT}, .ref = OPS_REF_DIM1,
                    .form = OPS_FORM_CKERNEL},
};
static_assert(OP_COUNT <= 64, "ops_set holds 64 operators");
static_assert(sizeof ops_table / sizeof ops_table[0] == OP_COUNT,
              "ops_table needs one entry per operator");

static const int32_t axis_dom[] = {0, 1, 2, 3};
static const int32_t stride_dom[] = {1, 2};
static const int32_t pad_dom[] = {OPS_PAD_SAME, OPS_PAD_VALID};
static const int32_t act_dom[] = {OPS_ACT_NONE, OPS_ACT_RELU};
static const int32_t kernel_dom[] = {OPS_KERNEL(1, 1), OPS_KERNEL(3, 3), OPS_KERNEL(2, 2),
                                     OPS_KERNEL(1, 3), OPS_KERNEL(3, 1)};
static const int32_t groups_dom[] = {1, 2};
static const int32_t size_dom[] = {1, 2, 3};
static const int32_t eps_dom[] = {0x3727c5ac}; /* 1e-5f, ONNX's default: a label */
static const int32_t heads_dom[] = {3}; /* a label; 3 divides synth's token features */
/* the rank-4 permutations that keep axis 0 (the batch): attention's head
 * swaps and NCHW <-> NHWC; closed under composition */
static const int32_t perm_dom[] = {OPS_PERM4(0, 2, 1, 3), OPS_PERM4(0, 1, 3, 2), OPS_PERM4(0, 2, 3, 1),
                                   OPS_PERM4(0, 3, 1, 2), OPS_PERM4(0, 3, 2, 1)};

#define DOM(a) a, (int)(sizeof a / sizeof a[0])
const ops_pkind_info ops_pkind_table[PK_COUNT] = { /* ORDER PKIND */
    [PK_AXIS] = {"axis", DOM(axis_dom), 1},
    [PK_STRIDE] = {"stride", DOM(stride_dom), 1},
    [PK_PAD] = {"pad", DOM(pad_dom), 1},
    [PK_ACT] = {"act", DOM(act_dom), 0},
    [PK_KERNEL] = {"kernel", DOM(kernel_dom), 1},
    [PK_GROUPS] = {"groups", DOM(groups_dom), 0, 0, 1},
    [PK_SIZE] = {"size", DOM(size_dom), 0}, /* a symbol: split sizes are any dim */
    [PK_EPS] = {"eps", DOM(eps_dom), 0, 1},
    [PK_PERM] = {"perm", DOM(perm_dom), 1},
    [PK_HEADS] = {"heads", DOM(heads_dom), 0, 1},
};
static_assert(sizeof ops_pkind_table / sizeof ops_pkind_table[0] == PK_COUNT,
              "ops_pkind_table needs one entry per parameter kind");

int ops_shape_of_in0(ops_op op) {
    switch (ops_table[op].form) {
    case OPS_FORM_MAP:
    case OPS_FORM_ZIP:
    case OPS_FORM_SCALE:
    case OPS_FORM_CHANNEL:
    case OPS_FORM_ROW:
    case OPS_FORM_ONES: return 1;
    case OPS_FORM_MATMUL:
    case OPS_FORM_BMM:
    case OPS_FORM_LINEAR:
    case OPS_FORM_CONV:
    case OPS_FORM_POOL:
    case OPS_FORM_CONCAT:
    case OPS_FORM_SPLIT:
    case OPS_FORM_TRANSPOSE:
    case OPS_FORM_PERMUTE:
    case OPS_FORM_HEADS:
    case OPS_FORM_ENLARGE:
    case OPS_FORM_IMM:
    case OPS_FORM_CKERNEL:
    case OPS_FORM_KMUL:
    case OPS_FORM_COUNT: return 0;
    }
    return 0;
}

ops_op ops_by_name(const char *name) {
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(ops_table[i].name, name) == 0) return (ops_op)i;
    return OP_COUNT;
}

const char *ops_param_str(ops_pkind kind, int32_t v, char *buf) {
    switch (kind) {
    case PK_PAD:
        if (v == OPS_PAD_SAME) return strcpy(buf, "SAME");
        if (v == OPS_PAD_VALID) return strcpy(buf, "VALID");
        break;
    case PK_ACT:
        if (v == OPS_ACT_NONE) return strcpy(buf, "NONE");
        if (v == OPS_ACT_RELU) return strcpy(buf, "RELU");
        break;
    case PK_KERNEL:
        snprintf(buf, 16, "%dx%d", (int)OPS_KERNEL_H(v), (int)OPS_KERNEL_W(v));
        return buf;
    case PK_PERM:
        if (!ops_perm_ok(v)) break;
        for (int a = 0; a < OPS_PERM_RANK(v); a++) buf[a] = (char)('0' + OPS_PERM_AT(v, a));
        buf[OPS_PERM_RANK(v)] = 0;
        return buf;
    case PK_EPS: /* nine significant digits give the same float back */
        snprintf(buf, 16, "%.9g", (double)ops_eps_value(v));
        return buf;
    case PK_AXIS:
    case PK_STRIDE:
    case PK_GROUPS:
    case PK_SIZE:
    case PK_HEADS:
    case PK_COUNT:
        break;
    }
    snprintf(buf, 16, "%d", (int)v);
    return buf;
}

/* A decimal in [1, 65536] (0 allowed for axes); rejects signs and junk. */
static int parse_small_int(const char *s, int32_t lo, int32_t *v) {
    char *end;
    if (*s < '0' || *s > '9') return -1;
    long n = strtol(s, &end, 10);
    if (*end || n < lo || n > 65536) return -1;
    *v = (int32_t)n;
    return 0;
}

ops_status ops_param_parse(ops_pkind kind, const char *s, int32_t *v) {
    int32_t kh, kw;
    char digits[16];
    switch (kind) {
    case PK_PAD:
        if (strcmp(s, "SAME") == 0) { *v = OPS_PAD_SAME; return OPS_OK; }
        if (strcmp(s, "VALID") == 0) { *v = OPS_PAD_VALID; return OPS_OK; }
        return OPS_EPARAM;
    case PK_ACT:
        if (strcmp(s, "NONE") == 0) { *v = OPS_ACT_NONE; return OPS_OK; }
        if (strcmp(s, "RELU") == 0) { *v = OPS_ACT_RELU; return OPS_OK; }
        return OPS_EPARAM;
    case PK_KERNEL:
        /* "KHxKW", two plain decimals: no signs, spaces or leftovers */
        if (strlen(s) >= sizeof digits || !strchr(s, 'x')) return OPS_EPARAM;
        strcpy(digits, s);
        *strchr(digits, 'x') = 0;
        if (parse_small_int(digits, 1, &kh) || parse_small_int(strchr(s, 'x') + 1, 1, &kw) ||
            kh > 255 || kw > 255)
            return OPS_EPARAM;
        *v = OPS_KERNEL(kh, kw);
        return OPS_OK;
    case PK_AXIS:
        return parse_small_int(s, 0, v) || *v >= TEN_MAX_RANK ? OPS_EPARAM : OPS_OK;
    case PK_STRIDE:
    case PK_GROUPS:
    case PK_SIZE:
    case PK_HEADS:
        return parse_small_int(s, 1, v) ? OPS_EPARAM : OPS_OK;
    case PK_PERM: { /* r distinct digits below r, 2 <= r <= 4 */
        size_t r = strlen(s);
        int32_t p = (int32_t)r << 12;
        if (r < 2 || r > 4) return OPS_EPARAM;
        for (size_t a = 0; a < r; a++) {
            if (s[a] < '0' || s[a] >= '0' + (int)r) return OPS_EPARAM;
            p |= (int32_t)(s[a] - '0') << (9 - 3 * a);
        }
        if (!ops_perm_ok(p)) return OPS_EPARAM;
        *v = p;
        return OPS_OK;
    }
    case PK_EPS: {
        char *end;
        if ((*s < '0' || *s > '9') && *s != '.') return OPS_EPARAM;
        float f = strtof(s, &end);
        if (*end || !ops_eps_ok(ops_eps_param(f))) return OPS_EPARAM;
        *v = ops_eps_param(f);
        return OPS_OK;
    }
    case PK_COUNT:
        break;
    }
    return OPS_EPARAM;
}

float ops_eps_value(int32_t v) {
    float f;
    memcpy(&f, &v, sizeof f);
    return f;
}

int32_t ops_eps_param(float f) {
    int32_t v;
    memcpy(&v, &f, sizeof v);
    return v;
}

int ops_perm_ok(int32_t v) {
    int r = v >= 0 ? OPS_PERM_RANK(v) : 0;
    unsigned seen = 0;
    if (r < 2 || r > 4 || (v & ((1 << (3 * (4 - r))) - 1))) return 0; /* unused digits 0 */
    for (int a = 0; a < r; a++) seen |= 1u << OPS_PERM_AT(v, a);
    return seen == (1u << r) - 1;
}

int ops_eps_ok(int32_t v) {
    float f = ops_eps_value(v);
    return isfinite(f) && f >= 0;
}

void ops_digest(uint8_t out[16]) {
    /* Canonical text: version, then per operator its name, arity, flags and
     * parameter kinds. Anything a rule's meaning depends on belongs here. */
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof buf, "opspecs v%d;", OPS_SEMANTICS_VERSION);
    for (int i = 0; i < OP_COUNT; i++) {
        const ops_info *o = &ops_table[i];
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s/%d/%u", o->name,
                              o->arity, o->flags);
        for (int k = 0; k < o->n_params; k++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, ",%s",
                                  ops_pkind_table[o->pkind[k]].name);
        n += (size_t)snprintf(buf + n, sizeof buf - n, ";");
    }
    assert(n < sizeof buf);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(buf, n));
    memcpy(out, c.digest, 16);
}
