/* cfold.c - shape rules for the standard ONNX operators (so opaque nodes'
 * outputs get shapes too) and constant folding at load; see cfold.h. The
 * rules follow onnx/defs shape inference: unknown dims stay -1, a rule that
 * cannot decide leaves the output unknown, a real mismatch is EG_ESHAPE. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shapes/cfold.h"
#include "proto/onnx_pb.h"

#if defined(__GNUC__)
#define CF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CF_PRINTF(f, a)
#endif

#define CF_MAX_INTS 64 /* constant int inputs read by the rules */

/* Shape rules. ORDER RULE */
typedef enum {
    R_NONE, R_SAME, R_BCAST, R_CMP, R_WHERE, R_CAST, R_CASTLIKE, R_CONV, R_CONVT, R_POOL,
    R_GPOOL, R_GEMM, R_MATMUL, R_REDUCE, R_ARG, R_CONCAT, R_SPLIT, R_SLICE, R_GATHER,
    R_TRANSPOSE, R_RESHAPE, R_FLATTEN, R_SQUEEZE, R_UNSQUEEZE, R_EXPAND, R_TILE, R_PAD,
    R_SHAPE, R_SIZE, R_COFS, R_CONSTANT, R_RANGE, R_RESIZE, R_DROPOUT, R_LAYERNORM,
    R_BATCHNORM, R_NONZERO, R_TOPK, R_INDICES, R_EINSUM, R_D2S, R_S2D, R_QUANT, R_DEQUANT,
    R_DYNQUANT, R_LIKE, R_GATHERND, R_GRIDSAMPLE, R_ONEHOT, R_DET, R_MATMULINT, R_ROIALIGN,
    R_NMS, R_RNN, R_COUNT
} rule;

/* Folding kernels. ORDER FOLD */
typedef enum {
    F_NONE, F_SHAPE, F_SIZE, F_CONSTANT, F_COPY, F_CAST, F_GATHER, F_EXPAND, F_CONCAT,
    F_SLICE, F_COFS, F_RANGE, F_BIN, F_CMP, F_WHERE, F_UNARY, F_REDPROD, F_TRANSPOSE, F_COUNT
} fold;

/* The ONNX operators with a shape rule. ORDER XOP */
typedef enum {
    X_ABS, X_ACOS, X_ACOSH, X_ADD, X_AND, X_ARGMAX, X_ARGMIN, X_ASIN, X_ASINH, X_ATAN, X_ATANH,
    X_AVGPOOL, X_BATCHNORM, X_BERNOULLI, X_BITSHIFT, X_BITAND, X_BITNOT, X_BITOR, X_BITXOR, X_CAST,
    X_CASTLIKE, X_CEIL, X_CELU, X_CLIP, X_CONCAT, X_CONSTANT, X_COFS, X_CONV, X_CONVT, X_COS,
    X_COSH, X_CUMSUM, X_D2S, X_DEQUANT, X_DET, X_DIV, X_DROPOUT, X_DYNQUANT, X_EINSUM, X_ELU,
    X_EQUAL, X_ERF, X_EXP, X_EXPAND, X_EYELIKE, X_FLATTEN, X_FLOOR, X_GATHER, X_GATHERELEM,
    X_GATHERND, X_GELU, X_GEMM, X_GAVGPOOL, X_GLPPOOL, X_GMAXPOOL, X_GREATER, X_GREATEREQ,
    X_GRIDSAMPLE, X_GROUPNORM, X_GRU, X_HARDMAX, X_HARDSIGMOID, X_HARDSWISH, X_IDENTITY, X_INSTNORM,
    X_ISINF, X_ISNAN, X_LAYERNORM, X_LEAKYRELU, X_LESS, X_LESSEQ, X_LOG, X_LOGSOFTMAX, X_LPNORM,
    X_LPPOOL, X_LRN, X_LSTM, X_MATMUL, X_MATMULINT, X_MAX, X_MAXPOOL, X_MEAN, X_MVN, X_MIN, X_MISH, X_MOD,
    X_MUL, X_NEG, X_NMS, X_NONZERO, X_NOT, X_ONEHOT, X_OR, X_PAD, X_POW, X_PRELU, X_QUANT,
    X_RANDNLIKE, X_RANDULIKE, X_RANGE, X_RECIPROCAL, X_REDL1, X_REDL2, X_REDLOGSUM, X_REDLOGSUMEXP,
    X_REDMAX, X_REDMEAN, X_REDMIN, X_REDPROD, X_REDSUM, X_REDSUMSQ, X_RELU, X_RESHAPE, X_RESIZE,
    X_REVSEQ, X_RMSNORM, X_RNN, X_ROIALIGN, X_ROUND, X_SCATTERELEM, X_SCATTERND, X_SELU, X_SHAPE,
    X_SHRINK, X_SIGMOID, X_SIGN, X_SIN, X_SINH, X_SIZE, X_SLICE, X_SOFTMAX, X_SOFTPLUS, X_SOFTSIGN,
    X_S2D, X_SPLIT, X_SQRT, X_SQUEEZE, X_SUB, X_SUM, X_TAN, X_TANH, X_THRESHRELU, X_TILE, X_TOPK,
    X_TRANSPOSE, X_TRILU, X_UNSQUEEZE, X_UPSAMPLE, X_WHERE, X_XOR, X_COUNT
} xop;

/* Where an operator's output cells come from, when every one is a cell of
 * its data inputs (eg_cfold_moved_from). ORDER MOVES */
typedef enum {
    M_NONE, /* computed, or not said */
    M_IN0,  /* input 0's (the others are indices, shapes, axes) */
    M_ALL,  /* any input's (Concat) */
    M_WHERE /* input 1's or 2's (input 0 is the condition) */
} moves;

typedef struct {
    const char *onnx;
    rule rule;
    fold fold;
    moves moves;
} xop_info;

static const xop_info xop_table[X_COUNT] = { /* ORDER XOP */
    [X_ABS] = {"Abs", R_SAME, F_UNARY},
    [X_ACOS] = {"Acos", R_SAME, F_NONE},
    [X_ACOSH] = {"Acosh", R_SAME, F_NONE},
    [X_ADD] = {"Add", R_BCAST, F_BIN},
    [X_AND] = {"And", R_CMP, F_NONE},
    [X_ARGMAX] = {"ArgMax", R_ARG, F_NONE},
    [X_ARGMIN] = {"ArgMin", R_ARG, F_NONE},
    [X_ASIN] = {"Asin", R_SAME, F_NONE},
    [X_ASINH] = {"Asinh", R_SAME, F_NONE},
    [X_ATAN] = {"Atan", R_SAME, F_NONE},
    [X_ATANH] = {"Atanh", R_SAME, F_NONE},
    [X_AVGPOOL] = {"AveragePool", R_POOL, F_NONE},
    [X_BATCHNORM] = {"BatchNormalization", R_BATCHNORM, F_NONE},
    [X_BERNOULLI] = {"Bernoulli", R_LIKE, F_NONE},
    [X_BITSHIFT] = {"BitShift", R_BCAST, F_NONE},
    [X_BITAND] = {"BitwiseAnd", R_BCAST, F_NONE},
    [X_BITNOT] = {"BitwiseNot", R_SAME, F_NONE},
    [X_BITOR] = {"BitwiseOr", R_BCAST, F_NONE},
    [X_BITXOR] = {"BitwiseXor", R_BCAST, F_NONE},
    [X_CAST] = {"Cast", R_CAST, F_CAST},
    [X_CASTLIKE] = {"CastLike", R_CASTLIKE, F_NONE},
    [X_CEIL] = {"Ceil", R_SAME, F_UNARY},
    [X_CELU] = {"Celu", R_SAME, F_NONE},
    [X_CLIP] = {"Clip", R_SAME, F_NONE},
    [X_CONCAT] = {"Concat", R_CONCAT, F_CONCAT, M_ALL},
    [X_CONSTANT] = {"Constant", R_CONSTANT, F_CONSTANT},
    [X_COFS] = {"ConstantOfShape", R_COFS, F_COFS},
    [X_CONV] = {"Conv", R_CONV, F_NONE},
    [X_CONVT] = {"ConvTranspose", R_CONVT, F_NONE},
    [X_COS] = {"Cos", R_SAME, F_NONE},
    [X_COSH] = {"Cosh", R_SAME, F_NONE},
    [X_CUMSUM] = {"CumSum", R_SAME, F_NONE},
    [X_D2S] = {"DepthToSpace", R_D2S, F_NONE, M_IN0},
    [X_DEQUANT] = {"DequantizeLinear", R_DEQUANT, F_NONE},
    [X_DET] = {"Det", R_DET, F_NONE},
    [X_DIV] = {"Div", R_BCAST, F_BIN},
    [X_DROPOUT] = {"Dropout", R_DROPOUT, F_NONE},
    [X_DYNQUANT] = {"DynamicQuantizeLinear", R_DYNQUANT, F_NONE},
    [X_EINSUM] = {"Einsum", R_EINSUM, F_NONE},
    [X_ELU] = {"Elu", R_SAME, F_NONE},
    [X_EQUAL] = {"Equal", R_CMP, F_CMP},
    [X_ERF] = {"Erf", R_SAME, F_NONE},
    [X_EXP] = {"Exp", R_SAME, F_NONE},
    [X_EXPAND] = {"Expand", R_EXPAND, F_EXPAND, M_IN0},
    [X_EYELIKE] = {"EyeLike", R_LIKE, F_NONE},
    [X_FLATTEN] = {"Flatten", R_FLATTEN, F_COPY, M_IN0},
    [X_FLOOR] = {"Floor", R_SAME, F_UNARY},
    [X_GATHER] = {"Gather", R_GATHER, F_GATHER, M_IN0},
    [X_GATHERELEM] = {"GatherElements", R_INDICES, F_NONE, M_IN0},
    [X_GATHERND] = {"GatherND", R_GATHERND, F_NONE, M_IN0},
    [X_GELU] = {"Gelu", R_SAME, F_NONE},
    [X_GEMM] = {"Gemm", R_GEMM, F_NONE},
    [X_GAVGPOOL] = {"GlobalAveragePool", R_GPOOL, F_NONE},
    [X_GLPPOOL] = {"GlobalLpPool", R_GPOOL, F_NONE},
    [X_GMAXPOOL] = {"GlobalMaxPool", R_GPOOL, F_NONE},
    [X_GREATER] = {"Greater", R_CMP, F_CMP},
    [X_GREATEREQ] = {"GreaterOrEqual", R_CMP, F_NONE},
    [X_GRIDSAMPLE] = {"GridSample", R_GRIDSAMPLE, F_NONE},
    [X_GROUPNORM] = {"GroupNormalization", R_SAME, F_NONE},
    [X_GRU] = {"GRU", R_RNN, F_NONE},
    [X_HARDMAX] = {"Hardmax", R_SAME, F_NONE},
    [X_HARDSIGMOID] = {"HardSigmoid", R_SAME, F_NONE},
    [X_HARDSWISH] = {"HardSwish", R_SAME, F_NONE},
    [X_IDENTITY] = {"Identity", R_SAME, F_COPY, M_IN0},
    [X_INSTNORM] = {"InstanceNormalization", R_SAME, F_NONE},
    [X_ISINF] = {"IsInf", R_CMP, F_NONE},
    [X_ISNAN] = {"IsNaN", R_CMP, F_NONE},
    [X_LAYERNORM] = {"LayerNormalization", R_LAYERNORM, F_NONE},
    [X_LEAKYRELU] = {"LeakyRelu", R_SAME, F_NONE},
    [X_LESS] = {"Less", R_CMP, F_CMP},
    [X_LESSEQ] = {"LessOrEqual", R_CMP, F_NONE},
    [X_LOG] = {"Log", R_SAME, F_NONE},
    [X_LOGSOFTMAX] = {"LogSoftmax", R_SAME, F_NONE},
    [X_LPNORM] = {"LpNormalization", R_SAME, F_NONE},
    [X_LPPOOL] = {"LpPool", R_POOL, F_NONE},
    [X_LRN] = {"LRN", R_SAME, F_NONE},
    [X_LSTM] = {"LSTM", R_RNN, F_NONE},
    [X_MATMUL] = {"MatMul", R_MATMUL, F_NONE},
    [X_MATMULINT] = {"MatMulInteger", R_MATMULINT, F_NONE},
    [X_MAX] = {"Max", R_BCAST, F_BIN},
    [X_MAXPOOL] = {"MaxPool", R_POOL, F_NONE},
    [X_MEAN] = {"Mean", R_BCAST, F_NONE},
    [X_MVN] = {"MeanVarianceNormalization", R_SAME, F_NONE},
    [X_MIN] = {"Min", R_BCAST, F_BIN},
    [X_MISH] = {"Mish", R_SAME, F_NONE},
    [X_MOD] = {"Mod", R_BCAST, F_BIN},
    [X_MUL] = {"Mul", R_BCAST, F_BIN},
    [X_NEG] = {"Neg", R_SAME, F_UNARY},
    [X_NMS] = {"NonMaxSuppression", R_NMS, F_NONE},
    [X_NONZERO] = {"NonZero", R_NONZERO, F_NONE},
    [X_NOT] = {"Not", R_SAME, F_UNARY},
    [X_ONEHOT] = {"OneHot", R_ONEHOT, F_NONE},
    [X_OR] = {"Or", R_CMP, F_NONE},
    [X_PAD] = {"Pad", R_PAD, F_NONE},
    [X_POW] = {"Pow", R_BCAST, F_NONE},
    [X_PRELU] = {"PRelu", R_SAME, F_NONE},
    [X_QUANT] = {"QuantizeLinear", R_QUANT, F_NONE},
    [X_RANDNLIKE] = {"RandomNormalLike", R_LIKE, F_NONE},
    [X_RANDULIKE] = {"RandomUniformLike", R_LIKE, F_NONE},
    [X_RANGE] = {"Range", R_RANGE, F_RANGE},
    [X_RECIPROCAL] = {"Reciprocal", R_SAME, F_NONE},
    [X_REDL1] = {"ReduceL1", R_REDUCE, F_NONE},
    [X_REDL2] = {"ReduceL2", R_REDUCE, F_NONE},
    [X_REDLOGSUM] = {"ReduceLogSum", R_REDUCE, F_NONE},
    [X_REDLOGSUMEXP] = {"ReduceLogSumExp", R_REDUCE, F_NONE},
    [X_REDMAX] = {"ReduceMax", R_REDUCE, F_NONE},
    [X_REDMEAN] = {"ReduceMean", R_REDUCE, F_NONE},
    [X_REDMIN] = {"ReduceMin", R_REDUCE, F_NONE},
    [X_REDPROD] = {"ReduceProd", R_REDUCE, F_REDPROD},
    [X_REDSUM] = {"ReduceSum", R_REDUCE, F_NONE},
    [X_REDSUMSQ] = {"ReduceSumSquare", R_REDUCE, F_NONE},
    [X_RELU] = {"Relu", R_SAME, F_NONE},
    [X_RESHAPE] = {"Reshape", R_RESHAPE, F_COPY, M_IN0},
    [X_RESIZE] = {"Resize", R_RESIZE, F_NONE},
    [X_REVSEQ] = {"ReverseSequence", R_SAME, F_NONE},
    [X_RMSNORM] = {"RMSNormalization", R_SAME, F_NONE},
    [X_RNN] = {"RNN", R_RNN, F_NONE},
    [X_ROIALIGN] = {"RoiAlign", R_ROIALIGN, F_NONE},
    [X_ROUND] = {"Round", R_SAME, F_NONE},
    [X_SCATTERELEM] = {"ScatterElements", R_SAME, F_NONE},
    [X_SCATTERND] = {"ScatterND", R_SAME, F_NONE},
    [X_SELU] = {"Selu", R_SAME, F_NONE},
    [X_SHAPE] = {"Shape", R_SHAPE, F_SHAPE},
    [X_SHRINK] = {"Shrink", R_SAME, F_NONE},
    [X_SIGMOID] = {"Sigmoid", R_SAME, F_NONE},
    [X_SIGN] = {"Sign", R_SAME, F_NONE},
    [X_SIN] = {"Sin", R_SAME, F_NONE},
    [X_SINH] = {"Sinh", R_SAME, F_NONE},
    [X_SIZE] = {"Size", R_SIZE, F_SIZE},
    [X_SLICE] = {"Slice", R_SLICE, F_SLICE, M_IN0},
    [X_SOFTMAX] = {"Softmax", R_SAME, F_NONE},
    [X_SOFTPLUS] = {"Softplus", R_SAME, F_NONE},
    [X_SOFTSIGN] = {"Softsign", R_SAME, F_NONE},
    [X_S2D] = {"SpaceToDepth", R_S2D, F_NONE, M_IN0},
    [X_SPLIT] = {"Split", R_SPLIT, F_NONE, M_IN0},
    [X_SQRT] = {"Sqrt", R_SAME, F_NONE},
    [X_SQUEEZE] = {"Squeeze", R_SQUEEZE, F_COPY, M_IN0},
    [X_SUB] = {"Sub", R_BCAST, F_BIN},
    [X_SUM] = {"Sum", R_BCAST, F_NONE},
    [X_TAN] = {"Tan", R_SAME, F_NONE},
    [X_TANH] = {"Tanh", R_SAME, F_NONE},
    [X_THRESHRELU] = {"ThresholdedRelu", R_SAME, F_NONE},
    [X_TILE] = {"Tile", R_TILE, F_NONE, M_IN0},
    [X_TOPK] = {"TopK", R_TOPK, F_NONE},
    [X_TRANSPOSE] = {"Transpose", R_TRANSPOSE, F_TRANSPOSE, M_IN0},
    [X_TRILU] = {"Trilu", R_SAME, F_NONE},
    [X_UNSQUEEZE] = {"Unsqueeze", R_UNSQUEEZE, F_COPY, M_IN0},
    [X_UPSAMPLE] = {"Upsample", R_RESIZE, F_NONE},
    [X_WHERE] = {"Where", R_WHERE, F_WHERE, M_WHERE},
    [X_XOR] = {"Xor", R_CMP, F_NONE},
};
static_assert(sizeof xop_table / sizeof xop_table[0] == X_COUNT,
              "xop_table needs one entry per ONNX operator");

typedef struct {
    eg_graph *g;
    eg_node *n;
    const Onnx__NodeProto *np;
    xop op;
    int opset;
    char *err;
    size_t errlen;
} cctx;

CF_PRINTF(3, 4)
static eg_status cfail(const cctx *c, eg_status rc, const char *fmt, ...) {
    if (!c->err || !c->errlen) return rc;
    int k = snprintf(c->err, c->errlen, "node '%s' (%s): ", c->n->name, xop_table[c->op].onnx);
    if (k > 0 && (size_t)k < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ================= attributes ================= */

typedef Onnx__AttributeProto__AttributeType atype;

static const Onnx__AttributeProto *attr(const cctx *c, const char *name, atype t) {
    for (size_t i = 0; i < c->np->n_attribute; i++) {
        const Onnx__AttributeProto *a = c->np->attribute[i];
        if (a->name && !strcmp(a->name, name) && !a->ref_attr_name)
            return a->has_type && a->type == t ? a : NULL;
    }
    return NULL;
}

static int64_t a_int(const cctx *c, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    return a ? a->i : def;
}

/* An ints attribute into out[max]: its count, or -1 when absent or longer. */
static int a_ints(const cctx *c, const char *name, int64_t *out, int max) {
    const Onnx__AttributeProto *a = attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    if (!a || a->n_ints > (size_t)max) return -1;
    if (a->n_ints) memcpy(out, a->ints, sizeof(int64_t) * a->n_ints);
    return (int)a->n_ints;
}

static int a_floats(const cctx *c, const char *name, double *out, int max) {
    const Onnx__AttributeProto *a = attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    if (!a || a->n_floats > (size_t)max) return -1;
    for (size_t i = 0; i < a->n_floats; i++) out[i] = a->floats[i];
    return (int)a->n_floats;
}

static int a_str_is(const cctx *c, const char *name, const char *v) {
    const Onnx__AttributeProto *a = attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    return a && a->s.len == strlen(v) && (!a->s.len || !memcmp(a->s.data, v, a->s.len));
}

/* ================= values ================= */

/* A constant's elements as int64 (integer and bool dtypes) or double. */
typedef struct {
    int dtype, isf;
    eg_shape s;
    int64_t n;
    int64_t *i;
    double *f;
} cval;

static int is_float_dt(int dt) { return dt == EG_DT_FLOAT || dt == EG_DT_DOUBLE; }

static int foldable_dt(int dt) {
    switch (dt) {
    case EG_DT_FLOAT: case EG_DT_DOUBLE: case EG_DT_INT8: case EG_DT_INT16: case EG_DT_INT32:
    case EG_DT_INT64: case EG_DT_UINT8: case EG_DT_UINT16: case EG_DT_UINT32: case EG_DT_UINT64:
    case EG_DT_BOOL: return 1;
    default: return 0;
    }
}

static void cval_free(cval *v) {
    free(v->i), free(v->f);
    v->i = NULL, v->f = NULL;
}

static eg_status cval_alloc(cval *v, int dtype, const eg_shape *s) {
    memset(v, 0, sizeof *v);
    v->dtype = dtype, v->isf = is_float_dt(dtype), v->s = *s;
    v->n = eg_shape_numel(s);
    if (v->n < 0 || v->n > EG_CFOLD_MAX_ELEMS) return EG_ELIMIT;
    if (v->isf) v->f = calloc((size_t)v->n + 1, sizeof(double));
    else v->i = calloc((size_t)v->n + 1, sizeof(int64_t));
    return v->f || v->i ? EG_OK : EG_ENOMEM;
}

static int64_t le_int(const uint8_t *p, size_t size, int sgn) {
    uint64_t v = 0;
    for (size_t b = size; b-- > 0;) v = v << 8 | p[b];
    if (sgn && size < 8 && (v >> (8 * size - 1)) & 1) v |= ~(uint64_t)0 << (8 * size);
    return (int64_t)v;
}

static int signed_dt(int dt) {
    return dt == EG_DT_INT8 || dt == EG_DT_INT16 || dt == EG_DT_INT32 || dt == EG_DT_INT64;
}

/* Load a tensor's value. @return EG_OK, or EG_EUNSUPPORTED when it has no
 * value this file can fold (also over the element cap). */
static eg_status cval_load(const eg_tensor *t, cval *v) {
    size_t size = eg_dtype_size(t->dtype);
    memset(v, 0, sizeof *v);
    if (!(t->flags & EG_TF_INIT) || (t->flags & EG_TF_SPARSE) || !foldable_dt(t->dtype) ||
        !eg_shape_known(&t->shape))
        return EG_EUNSUPPORTED;
    eg_status rc = cval_alloc(v, t->dtype, &t->shape);
    if (rc != EG_OK) return rc == EG_ENOMEM ? rc : EG_EUNSUPPORTED;
    if (t->dtype == EG_DT_FLOAT ? !t->data && v->n : !t->raw || t->raw_len != size * (size_t)v->n) {
        cval_free(v);
        return EG_EUNSUPPORTED;
    }
    for (int64_t k = 0; k < v->n; k++) {
        if (t->dtype == EG_DT_FLOAT) v->f[k] = t->data[k];
        else if (t->dtype == EG_DT_DOUBLE) memcpy(&v->f[k], t->raw + 8 * k, 8);
        else v->i[k] = le_int(t->raw + size * (size_t)k, size, signed_dt(t->dtype));
    }
    return EG_OK;
}

/* Store v as tensor t's value (a folded constant). */
static eg_status cval_store(const cval *v, eg_tensor *t) {
    size_t size = eg_dtype_size(v->dtype), bytes = size * (size_t)v->n;
    uint8_t *raw = malloc(bytes ? bytes : 1);
    if (!raw) return EG_ENOMEM;
    for (int64_t k = 0; k < v->n; k++) {
        uint8_t *p = raw + size * (size_t)k;
        if (v->dtype == EG_DT_FLOAT) {
            float x = (float)v->f[k];
            memcpy(p, &x, 4);
        } else if (v->dtype == EG_DT_DOUBLE) {
            memcpy(p, &v->f[k], 8);
        } else {
            uint64_t x = (uint64_t)(v->dtype == EG_DT_BOOL ? v->i[k] != 0 : v->i[k]);
            for (size_t b = 0; b < size; b++) p[b] = (uint8_t)(x >> (8 * b));
        }
    }
    if (v->dtype == EG_DT_FLOAT) t->data = (float *)(void *)raw;
    else t->raw = raw, t->raw_len = bytes;
    t->dtype = v->dtype;
    t->shape = v->s;
    t->flags |= EG_TF_INIT | EG_TF_CONST;
    return EG_OK;
}

static double cv_get(const cval *v, int64_t k) { return v->isf ? v->f[k] : (double)v->i[k]; }

/* Input k's tensor, or NULL when omitted. */
static const eg_tensor *in_t(const cctx *c, int k) { return eg_node_in(c->g, c->n, k); }

static const eg_shape *in_s(const cctx *c, int k) { return eg_node_in_shape(c->g, c->n, k); }

static int in_dt(const cctx *c, int k) {
    const eg_tensor *t = in_t(c, k);
    return t ? t->dtype : 0;
}

/* A constant integer input k into out[max]: its count, -1 when not a
 * known constant (or too long), -2 when omitted. */
static int in_ints(const cctx *c, int k, int64_t *out, int max) {
    const eg_tensor *t = in_t(c, k);
    cval v;
    if (!t) return -2;
    if (t->dtype != EG_DT_INT64 && t->dtype != EG_DT_INT32) return -1;
    if (!eg_shape_known(&t->shape) || eg_shape_numel(&t->shape) > max) return -1;
    if (cval_load(t, &v) != EG_OK) return -1;
    int n = (int)v.n;
    memcpy(out, v.i, sizeof(int64_t) * (size_t)n);
    cval_free(&v);
    return n;
}

/* A constant scalar (or 1-element) input as double; 0 when known. */
static int in_scalar(const cctx *c, int k, double *out) {
    const eg_tensor *t = in_t(c, k);
    cval v;
    if (!t || eg_shape_numel(&t->shape) != 1 || cval_load(t, &v) != EG_OK) return -1;
    *out = cv_get(&v, 0);
    cval_free(&v);
    return 0;
}

/* ================= shapes ================= */

static eg_shape unknown(void) {
    eg_shape s;
    memset(&s, 0, sizeof s);
    s.rank = -1;
    return s;
}

static eg_shape ranked(int rank) {
    eg_shape s = unknown();
    s.rank = rank;
    for (int i = 0; i < rank; i++) s.dim[i] = -1;
    return s;
}

/* Set output k's dtype and shape; what the tensor knew already (the file's
 * value_info) fills what inference leaves unknown. */
static void put(const cctx *c, int k, int dtype, const eg_shape *s) {
    if (k >= c->n->n_out || c->n->out[k] < 0) return;
    eg_tensor_set_inferred(&c->g->tensor[c->n->out[k]], dtype, s);
}

/* a * b for dims: -1 when either is unknown or the product is over
 * EG_DIM_MAX. */
static int64_t mul_dim(int64_t a, int64_t b) {
    if (a < 0 || b < 0 || a > EG_DIM_MAX || b > EG_DIM_MAX) return -1;
    if (a && b > EG_DIM_MAX / a) return -1;
    return a * b;
}

/* Every value in [lo, EG_DIM_MAX]? */
static int in_range(const int64_t *v, int n, int64_t lo) {
    for (int i = 0; i < n; i++)
        if (v[i] < lo || v[i] > EG_DIM_MAX) return 0;
    return 1;
}

static int norm_axis(int64_t axis, int rank, int *out) {
    if (axis < -(int64_t)rank || axis >= rank) return -1;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return 0;
}

/* o = broadcast(o, b). @return 0, -1 on a mismatch. */
static int bcast2(eg_shape *o, const eg_shape *b) {
    eg_shape a = *o;
    return eg_shape_broadcast(&a, b, o);
}

static int same_shape(const eg_shape *a, const eg_shape *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return 0;
    return 1;
}

/* Before opset 7 binary operators broadcast the ONNX-1 way (B onto A from
 * `axis` when broadcast=1, else equal shapes): the result has A's shape. */
static int legacy_bcast(const cctx *c) {
    rule r = xop_table[c->op].rule;
    return c->g->opset < 7 && (r == R_BCAST || r == R_CMP);
}

static eg_status r_bcast(const cctx *c, int first, int dtype) {
    char sa[160], sb[160];
    eg_shape o;
    int known = 1;
    if (legacy_bcast(c)) {
        put(c, 0, dtype, in_s(c, first));
        return EG_OK;
    }
    o.rank = 0;
    for (int k = first; k < c->n->n_in; k++) {
        if (!in_t(c, k)) continue;
        if (in_s(c, k)->rank < 0) known = 0;
        eg_shape before = o;
        if (known && bcast2(&o, in_s(c, k)))
            return cfail(c, EG_ESHAPE, "shapes %s and %s do not broadcast",
                         eg_shape_str(&before, NULL, sa, sizeof sa),
                         eg_shape_str(in_s(c, k), NULL, sb, sizeof sb));
    }
    if (!known) o = unknown();
    put(c, 0, dtype, &o);
    return EG_OK;
}

/* ---- windows: Conv, ConvTranspose, pools (N-d) ---- */

static eg_status r_window(const cctx *c, rule r) {
    const eg_shape *x = in_s(c, 0), *w = in_s(c, 1);
    eg_shape o = unknown();
    int64_t k[EG_MAX_RANK], st[EG_MAX_RANK], dl[EG_MAX_RANK], pd[2 * EG_MAX_RANK],
        op[EG_MAX_RANK], os[EG_MAX_RANK];
    int dt = in_dt(c, 0);
    if (x->rank < 3) {
        put(c, 0, dt, &o);
        if (r == R_POOL) put(c, 1, EG_DT_INT64, &o);
        return EG_OK;
    }
    int ns = x->rank - 2, group = (int)a_int(c, "group", 1);
    int has_k = a_ints(c, "kernel_shape", k, ns) == ns;
    for (int i = 0; !has_k && i < ns; i++) k[i] = w->rank == x->rank ? w->dim[2 + i] : -1;
    for (int i = 0; i < ns; i++) st[i] = dl[i] = 1, pd[i] = pd[i + ns] = 0, op[i] = 0;
    a_ints(c, "strides", st, ns);
    a_ints(c, "dilations", dl, ns);
    a_ints(c, "pads", pd, 2 * ns);
    a_ints(c, "output_padding", op, ns);
    int same = a_str_is(c, "auto_pad", "SAME_UPPER") || a_str_is(c, "auto_pad", "SAME_LOWER");
    int valid = a_str_is(c, "auto_pad", "VALID"), ceil_mode = (int)a_int(c, "ceil_mode", 0);
    int has_os = r == R_CONVT && a_ints(c, "output_shape", os, ns) == ns;
    if (!in_range(st, ns, 1) || !in_range(dl, ns, 1) || !in_range(pd, 2 * ns, 0) ||
        !in_range(op, ns, 0) || (has_os && !in_range(os, ns, 0)) || group < 1 ||
        (has_k && !in_range(k, ns, 1))) {
        o = ranked(x->rank);
        put(c, 0, dt, &o);
        if (r == R_POOL) put(c, 1, EG_DT_INT64, &o);
        return EG_OK;
    }
    o = ranked(x->rank);
    o.dim[0] = x->dim[0];
    if (r == R_CONV) o.dim[1] = w->rank >= 1 ? w->dim[0] : -1;
    else if (r == R_CONVT) o.dim[1] = w->rank >= 2 ? mul_dim(w->dim[1], group) : -1;
    else o.dim[1] = x->dim[1];
    for (int i = 0; i < ns; i++) {
        int64_t in = x->dim[2 + i], s = st[i], dk = k[i] < 1 ? -1 : mul_dim(k[i] - 1, dl[i]);
        if (dk >= 0) dk++;
        if (has_os) {
            o.dim[2 + i] = os[i];
            continue;
        }
        if (in < 0 || (dk < 0 && !same)) continue;
        if (r == R_CONVT) {
            int64_t full = mul_dim(s, same ? in : in - 1);
            o.dim[2 + i] = same || full < 0 ? full : full + op[i] + dk - pd[i] - pd[i + ns];
            continue;
        }
        if (same) {
            o.dim[2 + i] = in == 0 ? 0 : (in - 1) / s + 1;
            continue;
        }
        int64_t span = in + (valid ? 0 : pd[i] + pd[i + ns]) - dk;
        if (span < 0)
            return cfail(c, EG_ESHAPE, "spatial dim %d: input %lld is smaller than the kernel %lld",
                         i, (long long)in, (long long)dk);
        int64_t out = (ceil_mode && span % s ? span / s + 1 : span / s) + 1;
        if (ceil_mode && !valid && (out - 1) * s >= in + pd[i]) out--;
        o.dim[2 + i] = out;
    }
    put(c, 0, dt, &o);
    if (r == R_POOL) put(c, 1, EG_DT_INT64, &o);
    return EG_OK;
}

static eg_status r_gpool(const cctx *c) {
    eg_shape o = *in_s(c, 0);
    for (int i = 2; i < o.rank; i++) o.dim[i] = 1;
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_gemm(const cctx *c) {
    const eg_shape *a = in_s(c, 0), *b = in_s(c, 1);
    int ta = a_int(c, "transA", 0) != 0, tb = a_int(c, "transB", 0) != 0;
    eg_shape o = ranked(2);
    if (a->rank == 2) o.dim[0] = a->dim[ta ? 1 : 0];
    if (b->rank == 2) o.dim[1] = b->dim[tb ? 0 : 1];
    if (a->rank == 2 && b->rank == 2) {
        int64_t ka = a->dim[ta ? 0 : 1], kb = b->dim[tb ? 1 : 0];
        if (ka >= 0 && kb >= 0 && ka != kb)
            return cfail(c, EG_ESHAPE, "inner dimensions %lld and %lld differ", (long long)ka,
                         (long long)kb);
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_matmul(const cctx *c, int dtype) {
    const eg_shape *a = in_s(c, 0), *b = in_s(c, 1);
    eg_shape o = unknown(), bb;
    if (a->rank < 1 || b->rank < 1) {
        put(c, 0, dtype, &o);
        return EG_OK;
    }
    int64_t ka = a->dim[a->rank - 1], kb = b->rank > 1 ? b->dim[b->rank - 2] : b->dim[0];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return cfail(c, EG_ESHAPE, "inner dimensions %lld and %lld differ", (long long)ka,
                     (long long)kb);
    o.rank = a->rank > 2 ? a->rank - 2 : 0;
    bb.rank = b->rank > 2 ? b->rank - 2 : 0;
    memcpy(o.dim, a->dim, sizeof(int64_t) * (size_t)o.rank);
    memcpy(bb.dim, b->dim, sizeof(int64_t) * (size_t)bb.rank);
    if (bcast2(&o, &bb)) return cfail(c, EG_ESHAPE, "batch dimensions do not broadcast");
    if (o.rank + 2 > EG_MAX_RANK) o = unknown();
    else {
        if (a->rank > 1) o.dim[o.rank++] = a->dim[a->rank - 2];
        if (b->rank > 1) o.dim[o.rank++] = b->dim[b->rank - 1];
    }
    put(c, 0, dtype, &o);
    return EG_OK;
}

/* ---- reductions ---- */

/* The axes of a reduction into mark[rank]; *all when none given. @return
 * 0, 1 when the axes are not known, -1 when out of range. */
static int reduce_axes(const cctx *c, int rank, int from_input, int *mark, int *all) {
    int64_t ax[EG_MAX_RANK];
    int n = from_input ? in_ints(c, 1, ax, EG_MAX_RANK) : a_ints(c, "axes", ax, EG_MAX_RANK);
    if (from_input && n == -1) return 1;
    *all = n <= 0;
    memset(mark, 0, sizeof(int) * EG_MAX_RANK);
    for (int i = 0; i < n; i++) {
        int a;
        if (norm_axis(ax[i], rank, &a)) return -1;
        mark[a] = 1;
    }
    return 0;
}

static eg_status r_reduce(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int from_input = c->op == X_REDSUM ? c->opset >= 13 : c->opset >= 18;
    int keep = a_int(c, "keepdims", 1) != 0, noop = a_int(c, "noop_with_empty_axes", 0) != 0;
    int mark[EG_MAX_RANK], all, rc;
    eg_shape o = unknown();
    if (x->rank >= 0 && (rc = reduce_axes(c, x->rank, from_input, mark, &all)) <= 0) {
        if (rc < 0) return cfail(c, EG_ESHAPE, "axes out of range for rank %d", x->rank);
        o.rank = 0;
        for (int i = 0; i < x->rank; i++) {
            int red = all ? !noop : mark[i];
            if (!red) o.dim[o.rank++] = x->dim[i];
            else if (keep) o.dim[o.rank++] = 1;
        }
    } else if (x->rank >= 0 && keep)
        o = ranked(x->rank);
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_arg(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    eg_shape o = unknown();
    int axis;
    if (x->rank >= 0) {
        if (norm_axis(a_int(c, "axis", 0), x->rank, &axis))
            return cfail(c, EG_ESHAPE, "axis out of range for rank %d", x->rank);
        o = *x;
        if (a_int(c, "keepdims", 1)) o.dim[axis] = 1;
        else {
            memmove(o.dim + axis, o.dim + axis + 1, sizeof(int64_t) * (size_t)(o.rank - axis - 1));
            o.rank--;
        }
    }
    put(c, 0, EG_DT_INT64, &o);
    return EG_OK;
}

/* ---- layout ---- */

static eg_status r_concat(const cctx *c) {
    eg_shape o = unknown();
    int rank = -1, axis;
    for (int k = 0; k < c->n->n_in; k++) {
        if (in_s(c, k)->rank < 0) {
            put(c, 0, in_dt(c, 0), &o);
            return EG_OK;
        }
        if (rank >= 0 && in_s(c, k)->rank != rank) return cfail(c, EG_ESHAPE, "ranks differ");
        rank = in_s(c, k)->rank;
    }
    if (rank < 1 || norm_axis(a_int(c, "axis", 0), rank, &axis))
        return cfail(c, EG_ESHAPE, "axis out of range for rank %d", rank);
    o = *in_s(c, 0);
    for (int k = 1; k < c->n->n_in; k++)
        for (int i = 0; i < rank; i++) {
            int64_t d = in_s(c, k)->dim[i];
            if (i == axis) o.dim[i] = o.dim[i] < 0 || d < 0 ? -1 : o.dim[i] + d;
            else if (o.dim[i] >= 0 && d >= 0 && o.dim[i] != d)
                return cfail(c, EG_ESHAPE, "input %d: dim %d is %lld, not %lld", k, i,
                             (long long)d, (long long)o.dim[i]);
            else if (o.dim[i] < 0) o.dim[i] = d;
        }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_split(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int n = c->n->n_out, axis, ns = -1;
    int64_t sz[CF_MAX_INTS];
    if (x->rank < 0 || n > CF_MAX_INTS) {
        for (int k = 0; k < n; k++) put(c, k, in_dt(c, 0), &(eg_shape){-1, {0}});
        return EG_OK;
    }
    if (norm_axis(a_int(c, "axis", 0), x->rank, &axis))
        return cfail(c, EG_ESHAPE, "axis out of range for rank %d", x->rank);
    int64_t d = x->dim[axis];
    if (c->opset < 13) ns = a_ints(c, "split", sz, CF_MAX_INTS);
    else if (in_t(c, 1) && (ns = in_ints(c, 1, sz, CF_MAX_INTS)) < 0) ns = -3; /* unknown */
    if (ns >= 0 && ns != n) return cfail(c, EG_ESHAPE, "%d split sizes for %d outputs", ns, n);
    if (ns < 0) {
        int64_t chunk = d < 0 || ns == -3 ? -1 : (d + n - 1) / n;
        for (int k = 0; k < n; k++) sz[k] = chunk < 0 ? -1 : k < n - 1 ? chunk : d - chunk * (n - 1);
    }
    for (int k = 0; k < n; k++) {
        eg_shape o = *x;
        o.dim[axis] = sz[k];
        put(c, k, in_dt(c, 0), &o);
    }
    return EG_OK;
}

/* Per axis of rank: start, step and length of a Slice (len -1: unknown).
 * @return 1 when the starts/ends are not known, 0, or -1 on bad input. */
static int slice_plan(const cctx *c, const eg_shape *x, int64_t *start, int64_t *step, int64_t *len) {
    int64_t st[EG_MAX_RANK], en[EG_MAX_RANK], ax[EG_MAX_RANK], sp[EG_MAX_RANK];
    int n, ne, na, nsp;
    if (c->opset < 10) {
        n = a_ints(c, "starts", st, EG_MAX_RANK), ne = a_ints(c, "ends", en, EG_MAX_RANK);
        na = a_ints(c, "axes", ax, EG_MAX_RANK), nsp = -2;
    } else {
        n = in_ints(c, 1, st, EG_MAX_RANK), ne = in_ints(c, 2, en, EG_MAX_RANK);
        na = in_ints(c, 3, ax, EG_MAX_RANK), nsp = in_ints(c, 4, sp, EG_MAX_RANK);
        if (na == -1 || nsp == -1) return 1;
        if (na == -2) na = -1;
    }
    if (n < 0 || ne < 0) return 1;
    if (ne != n || (na >= 0 && na != n) || (nsp >= 0 && nsp != n)) return -1;
    for (int i = 0; i < x->rank; i++) start[i] = 0, step[i] = 1, len[i] = x->dim[i];
    for (int k = 0; k < n; k++) {
        int a;
        int64_t s = nsp >= 0 ? sp[k] : 1;
        if (norm_axis(na >= 0 ? ax[k] : k, x->rank, &a) || s == 0) return -1;
        if (s == INT64_MIN) s = -INT64_MAX;
        int64_t d = x->dim[a], b = st[k], e = en[k];
        step[a] = s;
        if (d < 0) {
            len[a] = -1;
            continue;
        }
        if (b < 0) b += d;
        if (e < 0) e += d;
        if (s > 0) {
            b = b < 0 ? 0 : b > d ? d : b;
            e = e < 0 ? 0 : e > d ? d : e;
            len[a] = e > b ? (e - b - 1) / s + 1 : 0;
        } else {
            b = b < 0 ? 0 : b > d - 1 ? d - 1 : b;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
            len[a] = b > e ? (b - e - 1) / (-s) + 1 : 0;
        }
        start[a] = b;
    }
    return 0;
}

static eg_status r_slice(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int64_t start[EG_MAX_RANK], step[EG_MAX_RANK], len[EG_MAX_RANK];
    eg_shape o = unknown();
    if (x->rank >= 0) {
        int rc = slice_plan(c, x, start, step, len);
        if (rc < 0) return cfail(c, EG_ESHAPE, "starts/ends/axes/steps do not fit rank %d", x->rank);
        o = ranked(x->rank);
        for (int i = 0; rc == 0 && i < x->rank; i++) o.dim[i] = len[i];
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_gather(const cctx *c) {
    const eg_shape *x = in_s(c, 0), *ix = in_s(c, 1);
    eg_shape o = unknown();
    int axis;
    if (x->rank >= 0 && ix->rank >= 0) {
        if (norm_axis(a_int(c, "axis", 0), x->rank, &axis))
            return cfail(c, EG_ESHAPE, "axis out of range for rank %d", x->rank);
        if (x->rank + ix->rank - 1 <= EG_MAX_RANK) {
            o.rank = 0;
            for (int i = 0; i < axis; i++) o.dim[o.rank++] = x->dim[i];
            for (int i = 0; i < ix->rank; i++) o.dim[o.rank++] = ix->dim[i];
            for (int i = axis + 1; i < x->rank; i++) o.dim[o.rank++] = x->dim[i];
        }
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_transpose(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int64_t p[EG_MAX_RANK];
    eg_shape o = unknown();
    if (x->rank >= 0) {
        int n = a_ints(c, "perm", p, EG_MAX_RANK), seen[EG_MAX_RANK] = {0};
        if (n >= 0 && n != x->rank) return cfail(c, EG_ESHAPE, "perm does not fit rank %d", x->rank);
        o.rank = x->rank;
        for (int i = 0; i < x->rank; i++) {
            int64_t q = n >= 0 ? p[i] : x->rank - 1 - i;
            if (q < 0 || q >= x->rank || seen[q]++) return cfail(c, EG_ESHAPE, "perm is not a permutation");
            o.dim[i] = x->dim[q];
        }
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_reshape(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int64_t t[EG_MAX_RANK];
    eg_shape o = unknown();
    int n = c->opset < 5 ? a_ints(c, "shape", t, EG_MAX_RANK) : in_ints(c, 1, t, EG_MAX_RANK);
    int allowzero = a_int(c, "allowzero", 0) != 0, infer = -1;
    if (n < 0) {
        const eg_shape *ts = in_s(c, 1);
        if (c->opset >= 5 && ts->rank == 1 && ts->dim[0] >= 0 && ts->dim[0] <= EG_MAX_RANK)
            o = ranked((int)ts->dim[0]);
        put(c, 0, in_dt(c, 0), &o);
        return EG_OK;
    }
    o.rank = n;
    int64_t rest = 1, numel = eg_shape_numel(x);
    for (int i = 0; i < n; i++) {
        if (t[i] < -1 || (t[i] == -1 && infer >= 0)) return cfail(c, EG_ESHAPE, "bad target dim");
        if (t[i] == -1) infer = i;
        o.dim[i] = t[i] == 0 && !allowzero ? (i < x->rank ? x->dim[i] : -1) : t[i];
        if (i != infer) rest = rest < 0 ? -1 : mul_dim(rest, o.dim[i]);
    }
    if (infer >= 0) o.dim[infer] = rest > 0 && numel >= 0 && numel % rest == 0 ? numel / rest : -1;
    if (infer < 0 && rest >= 0 && numel >= 0 && rest != numel)
        return cfail(c, EG_ESHAPE, "cannot reshape %lld elements into %lld", (long long)numel,
                     (long long)rest);
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_flatten(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    eg_shape o = unknown(), part;
    int64_t axis = a_int(c, "axis", 1);
    if (x->rank >= 0) {
        if (axis < 0) axis += x->rank;
        if (axis < 0 || axis > x->rank) return cfail(c, EG_ESHAPE, "axis out of range");
        o.rank = 2;
        part = *x, part.rank = (int)axis;
        o.dim[0] = eg_shape_numel(&part);
        part.rank = x->rank - (int)axis;
        memcpy(part.dim, x->dim + axis, sizeof(int64_t) * (size_t)part.rank);
        o.dim[1] = eg_shape_numel(&part);
        if (o.dim[0] < 0) o.dim[0] = -1;
        if (o.dim[1] < 0) o.dim[1] = -1;
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

/* Squeeze/Unsqueeze axes: attribute before opset 13, input from 13.
 * @return the count, -2 when absent, -1 when not known. */
static int sq_axes(const cctx *c, int64_t *ax) {
    if (c->opset < 13) {
        int n = a_ints(c, "axes", ax, EG_MAX_RANK);
        return n < 0 ? -2 : n;
    }
    return in_ints(c, 1, ax, EG_MAX_RANK);
}

static eg_status r_squeeze(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int64_t ax[EG_MAX_RANK];
    int mark[EG_MAX_RANK] = {0}, n = sq_axes(c, ax), a;
    eg_shape o = unknown();
    if (x->rank >= 0 && n != -1) {
        for (int i = 0; i < n; i++) {
            if (norm_axis(ax[i], x->rank, &a)) return cfail(c, EG_ESHAPE, "axis out of range");
            if (x->dim[a] >= 0 && x->dim[a] != 1)
                return cfail(c, EG_ESHAPE, "squeezes dim %d of size %lld", a, (long long)x->dim[a]);
            mark[a] = 1;
        }
        o.rank = 0;
        for (int i = 0; i < x->rank; i++) {
            if (n <= 0 && x->dim[i] < 0) {
                o = unknown();
                break;
            }
            if (!(n > 0 ? mark[i] : x->dim[i] == 1)) o.dim[o.rank++] = x->dim[i];
        }
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_unsqueeze(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int64_t ax[EG_MAX_RANK];
    int mark[EG_MAX_RANK] = {0}, n = sq_axes(c, ax), a;
    eg_shape o = unknown();
    if (x->rank >= 0 && n >= 0 && x->rank + n <= EG_MAX_RANK) {
        int r = x->rank + n, j = 0;
        for (int i = 0; i < n; i++) {
            if (norm_axis(ax[i], r, &a) || mark[a]) return cfail(c, EG_ESHAPE, "bad axes");
            mark[a] = 1;
        }
        o.rank = r;
        for (int i = 0; i < r; i++) o.dim[i] = mark[i] ? 1 : x->dim[j++];
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_expand(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int64_t t[EG_MAX_RANK];
    int n = in_ints(c, 1, t, EG_MAX_RANK);
    eg_shape o = unknown(), ts = unknown();
    if (n >= 0) {
        ts.rank = n;
        for (int i = 0; i < n; i++) ts.dim[i] = t[i];
        o = *x;
        if (bcast2(&o, &ts)) return cfail(c, EG_ESHAPE, "input does not broadcast to the shape");
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_tile(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int64_t t[EG_MAX_RANK];
    int n = in_ints(c, 1, t, EG_MAX_RANK);
    eg_shape o = x->rank >= 0 ? ranked(x->rank) : unknown();
    if (n >= 0 && x->rank >= 0) {
        if (n != x->rank) return cfail(c, EG_ESHAPE, "%d repeats for rank %d", n, x->rank);
        for (int i = 0; i < n; i++) o.dim[i] = mul_dim(x->dim[i], t[i]);
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_pad(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int64_t p[2 * EG_MAX_RANK], ax[EG_MAX_RANK];
    eg_shape o = x->rank >= 0 ? ranked(x->rank) : unknown();
    int n = c->opset < 11 ? a_ints(c, "pads", p, 2 * EG_MAX_RANK) : in_ints(c, 1, p, 2 * EG_MAX_RANK);
    if (c->opset < 2 && n < 0) n = a_ints(c, "paddings", p, 2 * EG_MAX_RANK);
    int na = c->opset >= 18 ? in_ints(c, 3, ax, EG_MAX_RANK) : -2;
    if (x->rank >= 0 && n >= 0 && na != -1) {
        int k = na >= 0 ? na : x->rank;
        for (int i = 0; i < n; i++)
            if (p[i] < -EG_DIM_MAX || p[i] > EG_DIM_MAX) n = -1;
        if (n < 0) {
            put(c, 0, in_dt(c, 0), &o);
            return EG_OK;
        }
        if (n != 2 * k) return cfail(c, EG_ESHAPE, "%d pads for %d axes", n, k);
        o = *x;
        for (int i = 0; i < k; i++) {
            int a;
            if (norm_axis(na >= 0 ? ax[i] : i, x->rank, &a)) return cfail(c, EG_ESHAPE, "bad axes");
            if (o.dim[a] >= 0) o.dim[a] += p[i] + p[i + k];
            if (x->dim[a] >= 0 && o.dim[a] < 0) return cfail(c, EG_ESHAPE, "pads make dim %d negative", a);
        }
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

/* Shape's [start, end) (opset 15) clamped to [0, rank]. */
static void shape_range(const cctx *c, int rank, int64_t *b, int64_t *e) {
    *b = a_int(c, "start", 0), *e = a_int(c, "end", rank);
    if (*b < 0) *b += rank;
    if (*e < 0) *e += rank;
    *b = *b < 0 ? 0 : *b > rank ? rank : *b;
    *e = *e < 0 ? 0 : *e > rank ? rank : *e;
    if (*e < *b) *e = *b;
}

static eg_status r_shape(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    eg_shape o = ranked(1);
    int64_t b, e;
    if (x->rank >= 0) {
        shape_range(c, x->rank, &b, &e);
        o.dim[0] = e - b;
    }
    put(c, 0, EG_DT_INT64, &o);
    return EG_OK;
}

/* The dtype of a Constant-like `value` tensor attribute, 0 when none. */
static const Onnx__TensorProto *value_attr(const cctx *c) {
    const Onnx__AttributeProto *a = attr(c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    return a ? a->t : NULL;
}

static eg_status r_cofs(const cctx *c) {
    int64_t t[EG_MAX_RANK];
    const Onnx__TensorProto *v = value_attr(c);
    int n = in_ints(c, 0, t, EG_MAX_RANK), dt = v && v->has_data_type ? v->data_type : EG_DT_FLOAT;
    eg_shape o = unknown();
    if (n >= 0) {
        o.rank = n;
        for (int i = 0; i < n; i++) {
            if (t[i] < 0) return cfail(c, EG_ESHAPE, "negative dim %lld", (long long)t[i]);
            o.dim[i] = t[i];
        }
    } else if (in_s(c, 0)->rank == 1 && in_s(c, 0)->dim[0] >= 0 && in_s(c, 0)->dim[0] <= EG_MAX_RANK)
        o = ranked((int)in_s(c, 0)->dim[0]);
    put(c, 0, dt, &o);
    return EG_OK;
}

static eg_status r_constant(const cctx *c) {
    const Onnx__TensorProto *v = value_attr(c);
    const Onnx__AttributeProto *a;
    eg_shape o = unknown();
    int dt = 0;
    if (v && v->n_dims <= EG_MAX_RANK) {
        dt = v->has_data_type ? v->data_type : 0;
        o.rank = (int)v->n_dims;
        for (int i = 0; i < o.rank; i++) o.dim[i] = v->dims[i] >= 0 ? v->dims[i] : -1;
    } else if (attr(c, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) {
        dt = EG_DT_FLOAT, o.rank = 0;
    } else if (attr(c, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)) {
        dt = EG_DT_INT64, o.rank = 0;
    } else if ((a = attr(c, "value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS))) {
        dt = EG_DT_FLOAT, o.rank = 1, o.dim[0] = (int64_t)a->n_floats;
    } else if ((a = attr(c, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS))) {
        dt = EG_DT_INT64, o.rank = 1, o.dim[0] = (int64_t)a->n_ints;
    } else if (attr(c, "value_string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)) {
        dt = EG_DT_STRING, o.rank = 0;
    } else if ((a = attr(c, "value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS))) {
        dt = EG_DT_STRING, o.rank = 1, o.dim[0] = (int64_t)a->n_strings;
    }
    put(c, 0, dt, &o);
    return EG_OK;
}

static eg_status r_range(const cctx *c) {
    double s, l, d;
    eg_shape o = ranked(1);
    if (!in_scalar(c, 0, &s) && !in_scalar(c, 1, &l) && !in_scalar(c, 2, &d)) {
        if (d == 0) return cfail(c, EG_ESHAPE, "delta is 0");
        double n = ceil((l - s) / d);
        o.dim[0] = n > 0 ? (n < (double)EG_DIM_MAX ? (int64_t)n : -1) : 0;
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes; 18: axes) and
 * Upsample (scales attribute before 9, input from 9). */
static eg_status r_resize(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    eg_shape o = x->rank >= 0 ? ranked(x->rank) : unknown();
    int64_t sz[EG_MAX_RANK], ax[EG_MAX_RANK];
    double sc[EG_MAX_RANK];
    int nsz = -1, nsc = -1, nax = a_ints(c, "axes", ax, EG_MAX_RANK);
    const eg_tensor *st = NULL;
    if (c->op == X_UPSAMPLE && c->opset < 9) nsc = a_floats(c, "scales", sc, EG_MAX_RANK);
    else if (c->op == X_UPSAMPLE || c->opset < 11) st = in_t(c, 1);
    else {
        st = in_t(c, 2);
        nsz = in_ints(c, 3, sz, EG_MAX_RANK);
    }
    if (st && eg_shape_numel(&st->shape) > 0 && eg_shape_numel(&st->shape) <= EG_MAX_RANK) {
        cval v;
        if (cval_load(st, &v) == EG_OK) {
            nsc = (int)v.n;
            for (int i = 0; i < nsc; i++) sc[i] = cv_get(&v, i);
            cval_free(&v);
        }
    }
    if (x->rank >= 0 && (nsz > 0 || nsc > 0)) {
        int k = nsz > 0 ? nsz : nsc;
        if (nax >= 0 ? nax != k : k != x->rank)
            return cfail(c, EG_ESHAPE, "%d scales or sizes for rank %d", k, x->rank);
        for (int i = 0; i < x->rank; i++) o.dim[i] = x->dim[i];
        for (int i = 0; i < k; i++) {
            int a;
            if (norm_axis(nax >= 0 ? ax[i] : i, x->rank, &a)) return cfail(c, EG_ESHAPE, "bad axes");
            if (nsz > 0) o.dim[a] = sz[i];
            else {
                double v = floor((double)x->dim[a] * sc[i] + 1e-9);
                o.dim[a] = x->dim[a] < 0 || !(v >= 0 && v <= (double)EG_DIM_MAX) ? -1 : (int64_t)v;
            }
        }
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_layernorm(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    eg_shape m = unknown();
    int axis;
    put(c, 0, in_dt(c, 0), x);
    if (x->rank >= 0) {
        if (norm_axis(a_int(c, "axis", -1), x->rank, &axis))
            return cfail(c, EG_ESHAPE, "axis out of range for rank %d", x->rank);
        m = *x;
        for (int i = axis; i < x->rank; i++) m.dim[i] = 1;
    }
    put(c, 1, EG_DT_FLOAT, &m);
    put(c, 2, EG_DT_FLOAT, &m);
    return EG_OK;
}

static eg_status r_batchnorm(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    eg_shape ch = ranked(1);
    if (x->rank >= 2) ch.dim[0] = x->dim[1];
    put(c, 0, in_dt(c, 0), x);
    for (int k = 1; k < c->n->n_out; k++) put(c, k, in_dt(c, 0), &ch);
    return EG_OK;
}

static eg_status r_topk(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int64_t k[1];
    int axis, n = c->opset < 10 ? 1 : in_ints(c, 1, k, 1);
    if (c->opset < 10) k[0] = a_int(c, "k", -1);
    eg_shape o = x->rank >= 0 ? *x : unknown();
    if (x->rank >= 0) {
        if (norm_axis(a_int(c, "axis", -1), x->rank, &axis)) return cfail(c, EG_ESHAPE, "bad axis");
        o.dim[axis] = n == 1 ? k[0] : -1;
    }
    put(c, 0, in_dt(c, 0), &o);
    put(c, 1, EG_DT_INT64, &o);
    return EG_OK;
}

/* ---- Einsum ---- */

/* One dim of a label met twice: numpy's einsum broadcasts a 1 against
 * the other; a real conflict (or an unknown that may be 1) is unknown. */
static int64_t einsum_dim(int64_t a, int64_t b) {
    if (a == b) return a;
    if (a == 1) return b > 1 ? b : -1;
    if (b == 1) return a > 1 ? a : -1;
    if (a < 0) return b;
    if (b < 0) return a;
    return -1;
}

static int einsum_label(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/* Einsum's output from the equation: each label's dim (equal dims, or a
 * 1 broadcast), the dims under "..." broadcast across the operands; the
 * output term as written after "->", else (implicit form) the "..." dims
 * then every label met once, in ASCII order. An equation it cannot read
 * leaves the output unknown (the node stays opaque either way). */
static eg_status r_einsum(const cctx *c) {
    const Onnx__AttributeProto *a = attr(c, "equation", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    int64_t dim[128];
    int count[128] = {0};
    eg_shape ell = {0, {0}}, o = unknown();
    char eq[256];
    size_t n = 0;
    int any_ell = 0, k = 0;
    for (int i = 0; i < 128; i++) dim[i] = -1;
    if (!a || a->s.len >= sizeof eq) goto out;
    for (size_t i = 0; i < a->s.len; i++)
        if (a->s.data[i] != ' ') eq[n++] = (char)a->s.data[i];
    eq[n] = 0;
    char *arrow = strstr(eq, "->");
    const char *p = eq, *end = arrow ? arrow : eq + n;
    while (p <= end) { /* one operand's term: p up to ',' or end */
        const char *q = p;
        while (q < end && *q != ',') q++;
        if (k >= c->n->n_in || !in_t(c, k)) goto out;
        const eg_shape *x = in_s(c, k);
        int labels = 0, has_ell = 0;
        for (const char *r = p; r < q; r++) {
            if (einsum_label(*r)) labels++;
            else if (*r == '.' && q - r >= 3 && r[1] == '.' && r[2] == '.' && !has_ell)
                has_ell = 1, r += 2;
            else goto out;
        }
        if (x->rank < 0 || x->rank < labels || (!has_ell && x->rank != labels)) goto out;
        int ne = x->rank - labels, d = 0;
        for (const char *r = p; r < q; r++) {
            if (*r == '.') { /* the "..." dims, broadcast with the others' */
                eg_shape e = {ne, {0}};
                memcpy(e.dim, x->dim + d, sizeof(int64_t) * (size_t)ne);
                if (bcast2(&ell, &e)) goto out;
                d += ne, r += 2, any_ell = 1;
                continue;
            }
            unsigned char ch = (unsigned char)*r;
            dim[ch] = count[ch]++ ? einsum_dim(dim[ch], x->dim[d]) : x->dim[d];
            d++;
        }
        k++;
        p = q + 1;
    }
    if (k != c->n->n_in) goto out;
    o.rank = 0;
    if (arrow) {
        int done_ell = 0;
        for (const char *r = arrow + 2; *r; r++) {
            if (r[0] == '.' && r[1] == '.' && r[2] == '.' && !done_ell) {
                if (o.rank + ell.rank > EG_MAX_RANK) goto unknown_out;
                for (int i = 0; i < ell.rank; i++) o.dim[o.rank++] = ell.dim[i];
                done_ell = 1, r += 2;
            } else if (einsum_label(*r) && count[(unsigned char)*r] && o.rank < EG_MAX_RANK) {
                o.dim[o.rank++] = dim[(unsigned char)*r];
            } else {
                goto unknown_out;
            }
        }
        if (any_ell && !done_ell && ell.rank) goto unknown_out;
    } else {
        for (int i = 0; i < ell.rank; i++) o.dim[o.rank++] = ell.dim[i];
        for (int ch = 0; ch < 128; ch++)
            if (count[ch] == 1) {
                if (o.rank >= EG_MAX_RANK) goto unknown_out;
                o.dim[o.rank++] = dim[ch];
            }
    }
    goto out;
unknown_out:
    o = unknown();
out:
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

/* ---- other layouts and quantization ---- */

/* DepthToSpace (to_space) and SpaceToDepth: [N, C, H, W] and blocksize b
 * into [N, C/b^2, H*b, W*b] or [N, C*b^2, H/b, W/b]; a size that does not
 * divide is left unknown. */
static eg_status r_space(const cctx *c, int to_space) {
    const eg_shape *x = in_s(c, 0);
    int64_t b = a_int(c, "blocksize", 0);
    eg_shape o = x->rank == 4 ? *x : unknown();
    if (x->rank == 4 && b >= 1 && b <= EG_DIM_MAX) {
        int64_t bb = mul_dim(b, b);
        o.dim[1] = to_space ? (x->dim[1] >= 0 && bb > 0 && x->dim[1] % bb == 0 ? x->dim[1] / bb : -1)
                            : mul_dim(x->dim[1], bb);
        for (int i = 2; i < 4; i++)
            o.dim[i] = to_space ? mul_dim(x->dim[i], b) : (x->dim[i] >= 0 && x->dim[i] % b == 0 ? x->dim[i] / b : -1);
    } else if (x->rank == 4) {
        o = ranked(4);
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

/* QuantizeLinear's output type: the zero point's, else output_dtype
 * (opset 21), else uint8. */
static int quant_dtype(const cctx *c) {
    if (in_t(c, 2)) return in_dt(c, 2);
    int64_t dt = a_int(c, "output_dtype", 0);
    return dt > 0 && dt < 64 ? (int)dt : EG_DT_UINT8;
}

/* DequantizeLinear's: output_dtype when given, else the scale's. */
static int dequant_dtype(const cctx *c) {
    int64_t dt = a_int(c, "output_dtype", 0);
    return dt > 0 && dt < 64 ? (int)dt : in_dt(c, 1);
}

/* GatherND: indices' dims but the last (q), then data's dims after the
 * batch dims and the q indexed ones. */
static eg_status r_gathernd(const cctx *c) {
    const eg_shape *x = in_s(c, 0), *ix = in_s(c, 1);
    int64_t b = a_int(c, "batch_dims", 0);
    eg_shape o = unknown();
    if (x->rank >= 0 && ix->rank >= 1 && ix->dim[ix->rank - 1] >= 0 && b >= 0 && b <= x->rank &&
        ix->dim[ix->rank - 1] <= x->rank) {
        int64_t q = ix->dim[ix->rank - 1];
        int64_t rank = ix->rank - 1 + x->rank - q - b;
        if (b + q <= x->rank && rank >= 0 && rank <= EG_MAX_RANK) {
            o.rank = 0;
            for (int i = 0; i < ix->rank - 1; i++) o.dim[o.rank++] = ix->dim[i];
            for (int64_t i = b + q; i < x->rank; i++) o.dim[o.rank++] = x->dim[i];
        }
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

/* GridSample: [N, C] then the grid's spatial dims ([N, H', W', 2]). */
static eg_status r_gridsample(const cctx *c) {
    const eg_shape *x = in_s(c, 0), *gr = in_s(c, 1);
    eg_shape o = unknown();
    if (x->rank >= 3 && gr->rank == x->rank) {
        o.rank = x->rank;
        o.dim[0] = x->dim[0], o.dim[1] = x->dim[1];
        for (int i = 2; i < o.rank; i++) o.dim[i] = gr->dim[i - 1];
    }
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

/* OneHot: indices' shape with the (constant) depth put in at axis. */
static eg_status r_onehot(const cctx *c) {
    const eg_shape *ix = in_s(c, 0);
    double depth;
    int axis;
    eg_shape o = unknown();
    if (ix->rank >= 0 && ix->rank < EG_MAX_RANK && !norm_axis(a_int(c, "axis", -1), ix->rank + 1, &axis)) {
        o.rank = ix->rank + 1;
        for (int i = 0, j = 0; i < o.rank; i++)
            o.dim[i] = i == axis ? -1 : ix->dim[j++];
        if (!in_scalar(c, 1, &depth) && depth >= 1 && depth <= (double)EG_DIM_MAX)
            o.dim[axis] = (int64_t)depth;
    }
    put(c, 0, in_dt(c, 2), &o);
    return EG_OK;
}

/* RoiAlign: [rois, C, output_height, output_width]. */
static eg_status r_roialign(const cctx *c) {
    const eg_shape *x = in_s(c, 0), *r = in_s(c, 1);
    eg_shape o = ranked(4);
    int64_t oh = a_int(c, "output_height", 1), ow = a_int(c, "output_width", 1);
    o.dim[0] = r->rank == 2 ? r->dim[0] : -1;
    o.dim[1] = x->rank == 4 ? x->dim[1] : -1;
    o.dim[2] = oh >= 1 && oh <= EG_DIM_MAX ? oh : -1;
    o.dim[3] = ow >= 1 && ow <= EG_DIM_MAX ? ow : -1;
    put(c, 0, in_dt(c, 0), &o);
    return EG_OK;
}

/* RNN, GRU, LSTM: Y [seq, directions, batch, hidden] and Y_h (LSTM's Y_c
 * too) [directions, batch, hidden]; with layout = 1 the batch comes
 * first in both. */
static eg_status r_rnn(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    int64_t hidden = a_int(c, "hidden_size", -1), ndir = a_str_is(c, "direction", "bidirectional") ? 2 : 1;
    if (hidden < 1 || hidden > EG_DIM_MAX) hidden = -1;
    int batch_first = a_int(c, "layout", 0) == 1;
    int64_t seq = x->rank == 3 ? x->dim[batch_first ? 1 : 0] : -1;
    int64_t batch = x->rank == 3 ? x->dim[batch_first ? 0 : 1] : -1;
    eg_shape y = ranked(4), h = ranked(3);
    if (batch_first) {
        y.dim[0] = batch, y.dim[1] = seq, y.dim[2] = ndir;
        h.dim[0] = batch, h.dim[1] = ndir;
    } else {
        y.dim[0] = seq, y.dim[1] = ndir, y.dim[2] = batch;
        h.dim[0] = ndir, h.dim[1] = batch;
    }
    y.dim[3] = hidden, h.dim[2] = hidden;
    put(c, 0, in_dt(c, 0), &y);
    put(c, 1, in_dt(c, 0), &h);
    if (c->op == X_LSTM) put(c, 2, in_dt(c, 0), &h);
    return EG_OK;
}

static eg_status infer_rule(const cctx *c) {
    const eg_shape *x = in_s(c, 0);
    switch (xop_table[c->op].rule) {
    case R_NONE: return EG_OK;
    case R_SAME: put(c, 0, in_dt(c, 0), x); return EG_OK;
    case R_BCAST: return r_bcast(c, 0, in_dt(c, 0));
    case R_CMP: return r_bcast(c, 0, EG_DT_BOOL);
    case R_WHERE: return r_bcast(c, 0, in_dt(c, 1));
    case R_CAST: put(c, 0, (int)a_int(c, "to", 0), x); return EG_OK;
    case R_CASTLIKE: put(c, 0, in_dt(c, 1), x); return EG_OK;
    case R_CONV:
    case R_CONVT:
    case R_POOL: return r_window(c, xop_table[c->op].rule);
    case R_GPOOL: return r_gpool(c);
    case R_GEMM: return r_gemm(c);
    case R_MATMUL: return r_matmul(c, in_dt(c, 0));
    case R_REDUCE: return r_reduce(c);
    case R_ARG: return r_arg(c);
    case R_CONCAT: return r_concat(c);
    case R_SPLIT: return r_split(c);
    case R_SLICE: return r_slice(c);
    case R_GATHER: return r_gather(c);
    case R_TRANSPOSE: return r_transpose(c);
    case R_RESHAPE: return r_reshape(c);
    case R_FLATTEN: return r_flatten(c);
    case R_SQUEEZE: return r_squeeze(c);
    case R_UNSQUEEZE: return r_unsqueeze(c);
    case R_EXPAND: return r_expand(c);
    case R_TILE: return r_tile(c);
    case R_PAD: return r_pad(c);
    case R_SHAPE: return r_shape(c);
    case R_SIZE: put(c, 0, EG_DT_INT64, &(eg_shape){0, {0}}); return EG_OK;
    case R_COFS: return r_cofs(c);
    case R_CONSTANT: return r_constant(c);
    case R_RANGE: return r_range(c);
    case R_RESIZE: return r_resize(c);
    case R_DROPOUT:
        put(c, 0, in_dt(c, 0), x);
        put(c, 1, EG_DT_BOOL, x);
        return EG_OK;
    case R_LAYERNORM: return r_layernorm(c);
    case R_BATCHNORM: return r_batchnorm(c);
    case R_NONZERO: {
        eg_shape o = ranked(2);
        o.dim[0] = x->rank >= 0 ? x->rank : -1;
        put(c, 0, EG_DT_INT64, &o);
        return EG_OK;
    }
    case R_TOPK: return r_topk(c);
    case R_INDICES: put(c, 0, in_dt(c, 0), in_s(c, 1)); return EG_OK;
    case R_EINSUM: return r_einsum(c);
    case R_D2S: return r_space(c, 1);
    case R_S2D: return r_space(c, 0);
    case R_QUANT: put(c, 0, quant_dtype(c), x); return EG_OK;
    case R_DEQUANT: put(c, 0, dequant_dtype(c), x); return EG_OK;
    case R_DYNQUANT:
        put(c, 0, EG_DT_UINT8, x);
        put(c, 1, EG_DT_FLOAT, &(eg_shape){0, {0}});
        put(c, 2, EG_DT_UINT8, &(eg_shape){0, {0}});
        return EG_OK;
    case R_LIKE: put(c, 0, (int)a_int(c, "dtype", in_dt(c, 0)), x); return EG_OK;
    case R_GATHERND: return r_gathernd(c);
    case R_GRIDSAMPLE: return r_gridsample(c);
    case R_ONEHOT: return r_onehot(c);
    case R_DET: {
        eg_shape o = x->rank >= 2 ? *x : unknown();
        if (x->rank >= 2) o.rank -= 2;
        put(c, 0, in_dt(c, 0), &o);
        return EG_OK;
    }
    case R_MATMULINT: return r_matmul(c, EG_DT_INT32);
    case R_ROIALIGN: return r_roialign(c);
    case R_NMS: {
        eg_shape o = ranked(2);
        o.dim[1] = 3;
        put(c, 0, EG_DT_INT64, &o);
        return EG_OK;
    }
    case R_RNN: return r_rnn(c);
    case R_COUNT: break;
    }
    return EG_OK;
}

/* ================= folding ================= */

/* Offset into a value of shape vs broadcast (right-aligned) to os of the
 * flat index of os. */
static int64_t boff(const eg_shape *vs, const eg_shape *os, int64_t flat) {
    int64_t off = 0, stride = 1;
    for (int i = os->rank - 1, j = vs->rank - 1; i >= 0; i--, j--) {
        int64_t idx = flat % os->dim[i];
        flat /= os->dim[i];
        if (j < 0) continue;
        if (vs->dim[j] != 1) off += idx * stride;
        stride *= vs->dim[j];
    }
    return off;
}

static void cv_set(cval *v, int64_t k, double f, int64_t i, int from_f) {
    if (v->isf) v->f[k] = from_f ? f : (double)i;
    else v->i[k] = from_f ? (int64_t)f : i;
}

/* Copy element a of x into element k of o (same kind or converted). */
static void cv_copy(cval *o, int64_t k, const cval *x, int64_t a) {
    cv_set(o, k, x->isf ? x->f[a] : 0, x->isf ? 0 : x->i[a], x->isf);
}

/* Wrap an integer value to the width of an integer dtype. */
static int64_t wrap_int(int dt, int64_t v) {
    switch (dt) {
    case EG_DT_INT8: return (int8_t)v;
    case EG_DT_INT16: return (int16_t)v;
    case EG_DT_INT32: return (int32_t)v;
    case EG_DT_UINT8: return (uint8_t)v;
    case EG_DT_UINT16: return (uint16_t)v;
    case EG_DT_UINT32: return (uint32_t)v;
    case EG_DT_BOOL: return v != 0;
    default: return v;
    }
}

/* Integer Mod: the sign of the divisor (fmod 0, as Python's %) or of
 * the dividend (fmod 1, as C's %); unsigned types as unsigned.
 * @return 0, or -1 for a zero divisor (onnxruntime's own error). */
static int mod_int(int dt, int fmod_c, uint64_t x, uint64_t y, int64_t *r) {
    if (y == 0) return -1;
    if (!signed_dt(dt)) {
        *r = (int64_t)(x % y);
        return 0;
    }
    int64_t sx = (int64_t)x, sy = (int64_t)y;
    int64_t m = sy == -1 ? 0 : sx % sy; /* INT64_MIN % -1 overflows in C */
    if (!fmod_c && m != 0 && (m < 0) != (sy < 0)) m += sy;
    *r = m;
    return 0;
}

/* Elementwise binary ops (fmod: Mod's attribute). @return 0, or -1 when
 * not foldable here. */
static int f_bin(xop op, int fmod_c, const cval *a, const cval *b, cval *o) {
    if (o->n && (!a->n || !b->n)) return -1; /* an absent operand has no cells to give */
    if (op == X_MOD && o->isf && !fmod_c) return -1; /* not valid ONNX: left to the runtime */
    for (int64_t k = 0; k < o->n; k++) {
        int64_t ia = boff(&a->s, &o->s, k), ib = boff(&b->s, &o->s, k);
        if (o->isf) {
            double x = cv_get(a, ia), y = cv_get(b, ib);
            double r = op == X_ADD ? x + y : op == X_SUB ? x - y : op == X_MUL ? x * y
                     : op == X_DIV ? x / y : op == X_MOD ? fmod(x, y) : op == X_MAX ? (x > y ? x : y)
                     : (x < y ? x : y);
            o->f[k] = o->dtype == EG_DT_FLOAT ? (double)(float)r : r;
        } else {
            uint64_t x = (uint64_t)a->i[ia], y = (uint64_t)b->i[ib];
            int64_t sx = (int64_t)x, sy = (int64_t)y, r;
            if (op == X_DIV && (y == 0 || (sx == INT64_MIN && sy == -1))) return -1;
            if (op == X_MOD && mod_int(o->dtype, fmod_c, x, y, &r)) return -1;
            if (op != X_MOD)
                r = op == X_ADD ? (int64_t)(x + y) : op == X_SUB ? (int64_t)(x - y)
                  : op == X_MUL ? (int64_t)(x * y) : op == X_DIV ? sx / sy
                  : op == X_MAX ? (sx > sy ? sx : sy) : (sx < sy ? sx : sy);
            o->i[k] = wrap_int(o->dtype, r);
        }
    }
    return 0;
}

/* Transpose by the perm attribute (absent: the axes reversed). */
static int f_transpose(const cctx *c, const cval *x, cval *o) {
    int64_t p[EG_MAX_RANK], stride[EG_MAX_RANK];
    int rank = x->s.rank, n = a_ints(c, "perm", p, EG_MAX_RANK);
    if (rank < 0 || (n >= 0 && n != rank) || x->n != o->n || o->s.rank != rank) return -1;
    for (int i = 0; i < rank; i++) {
        if (n < 0) p[i] = rank - 1 - i;
        if (p[i] < 0 || p[i] >= rank || o->s.dim[i] != x->s.dim[p[i]]) return -1;
    }
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) stride[i] = s, s *= x->s.dim[i];
    for (int64_t k = 0; k < o->n; k++) {
        int64_t flat = k, off = 0;
        for (int i = rank - 1; i >= 0; i--) { /* output axis i reads input axis p[i] */
            off += (flat % o->s.dim[i]) * stride[p[i]];
            flat /= o->s.dim[i];
        }
        cv_copy(o, k, x, off);
    }
    return 0;
}

static int f_cmp(xop op, const cval *a, const cval *b, cval *o) {
    for (int64_t k = 0; k < o->n; k++) {
        int64_t ia = boff(&a->s, &o->s, k), ib = boff(&b->s, &o->s, k);
        int r;
        if (a->isf || b->isf) {
            double x = cv_get(a, ia), y = cv_get(b, ib);
            r = op == X_EQUAL ? x == y : op == X_LESS ? x < y : x > y;
        } else {
            int64_t x = a->i[ia], y = b->i[ib];
            r = op == X_EQUAL ? x == y : op == X_LESS ? x < y : x > y;
        }
        o->i[k] = r;
    }
    return 0;
}

static int f_unary(xop op, const cval *x, cval *o) {
    for (int64_t k = 0; k < o->n; k++) {
        if (op == X_NOT) {
            o->i[k] = !x->i[k];
            continue;
        }
        if (!o->isf) {
            int64_t v = x->i[k];
            int neg = op == X_NEG || (op == X_ABS && v < 0);
            o->i[k] = neg ? (int64_t)(0 - (uint64_t)v) : v;
            o->i[k] = wrap_int(o->dtype, o->i[k]);
            continue;
        }
        double v = x->f[k];
        o->f[k] = op == X_FLOOR ? floor(v) : op == X_CEIL ? ceil(v) : op == X_NEG ? -v : fabs(v);
    }
    return 0;
}

/* Gather along axis with indices ix. */
static int f_gather(const cctx *c, const cval *x, const cval *ix, cval *o) {
    int axis;
    if (norm_axis(a_int(c, "axis", 0), x->s.rank, &axis)) return -1;
    int64_t outer = 1, inner = 1, d = x->s.dim[axis];
    for (int i = 0; i < axis; i++) outer *= x->s.dim[i];
    for (int i = axis + 1; i < x->s.rank; i++) inner *= x->s.dim[i];
    if (outer * ix->n * inner != o->n || ix->isf) return -1;
    int64_t k = 0;
    for (int64_t p = 0; p < outer; p++)
        for (int64_t q = 0; q < ix->n; q++) {
            int64_t j = ix->i[q] < 0 ? ix->i[q] + d : ix->i[q];
            if (j < 0 || j >= d) return -1;
            for (int64_t r = 0; r < inner; r++) cv_copy(o, k++, x, (p * d + j) * inner + r);
        }
    return k == o->n ? 0 : -1;
}

static int f_concat(const cctx *c, const cval *in, int nin, cval *o) {
    int axis;
    if (norm_axis(a_int(c, "axis", 0), o->s.rank, &axis)) return -1;
    int64_t outer = 1, k = 0;
    for (int i = 0; i < axis; i++) outer *= o->s.dim[i];
    for (int q = 0; q < nin; q++) k += in[q].n;
    if (k != o->n) return -1;
    k = 0;
    for (int64_t p = 0; p < outer; p++)
        for (int q = 0; q < nin; q++) {
            int64_t chunk = outer ? in[q].n / outer : 0;
            for (int64_t r = 0; r < chunk; r++) cv_copy(o, k++, &in[q], p * chunk + r);
        }
    return k == o->n ? 0 : -1;
}

static int f_slice(const cctx *c, const cval *x, cval *o) {
    int64_t start[EG_MAX_RANK], step[EG_MAX_RANK], len[EG_MAX_RANK], stride[EG_MAX_RANK];
    if (slice_plan(c, &x->s, start, step, len)) return -1;
    int64_t s = 1, n = 1;
    for (int i = x->s.rank - 1; i >= 0; i--) stride[i] = s, s *= x->s.dim[i], n *= len[i];
    if (n != o->n) return -1;
    for (int64_t k = 0; k < o->n; k++) {
        int64_t flat = k, off = 0;
        for (int i = x->s.rank - 1; i >= 0; i--) {
            int64_t idx = flat % len[i];
            flat /= len[i];
            off += (start[i] + idx * step[i]) * stride[i];
        }
        cv_copy(o, k, x, off);
    }
    return 0;
}

/* The fill value of a ConstantOfShape (0 of float32 when absent). */
static int f_cofs(const cctx *c, cval *o) {
    const Onnx__TensorProto *v = value_attr(c);
    double f = 0;
    int64_t i = 0;
    if (v) {
        int dt = v->has_data_type ? v->data_type : 0;
        size_t size = eg_dtype_size(dt);
        if (v->has_raw_data && v->raw_data.len == size && size) {
            if (dt == EG_DT_FLOAT) {
                float x;
                memcpy(&x, v->raw_data.data, 4);
                f = x;
            } else if (dt == EG_DT_DOUBLE) memcpy(&f, v->raw_data.data, 8);
            else i = le_int(v->raw_data.data, size, signed_dt(dt));
        } else if (dt == EG_DT_FLOAT && v->n_float_data == 1) f = v->float_data[0];
        else if (dt == EG_DT_DOUBLE && v->n_double_data == 1) f = v->double_data[0];
        else if (dt == EG_DT_INT64 && v->n_int64_data == 1) i = v->int64_data[0];
        else if (v->n_int32_data == 1 && !is_float_dt(dt)) i = v->int32_data[0];
        else if (dt == EG_DT_UINT64 && v->n_uint64_data == 1) i = (int64_t)v->uint64_data[0];
        else return -1;
    }
    for (int64_t k = 0; k < o->n; k++) cv_set(o, k, f, i, o->isf);
    return 0;
}

static int f_redprod(const cctx *c, const cval *x, cval *o) {
    int mark[EG_MAX_RANK], all, noop = a_int(c, "noop_with_empty_axes", 0) != 0;
    if (reduce_axes(c, x->s.rank, c->opset >= 18, mark, &all)) return -1;
    int64_t ostride[EG_MAX_RANK], s = 1;
    for (int i = x->s.rank - 1; i >= 0; i--) {
        int red = all ? !noop : mark[i];
        ostride[i] = red ? 0 : s;
        if (!red) s *= x->s.dim[i];
    }
    if (s != o->n || x->isf != o->isf) return -1;
    for (int64_t k = 0; k < o->n; k++) cv_set(o, k, 1, 1, o->isf);
    for (int64_t k = 0; k < x->n; k++) {
        int64_t flat = k, off = 0;
        for (int i = x->s.rank - 1; i >= 0; i--) {
            off += (flat % x->s.dim[i]) * ostride[i];
            flat /= x->s.dim[i];
        }
        if (o->isf) o->f[off] *= x->f[k];
        else o->i[off] = (int64_t)((uint64_t)o->i[off] * (uint64_t)x->i[k]);
    }
    return 0;
}

static int f_constant(const cctx *c, cval *o) {
    const Onnx__AttributeProto *a;
    if (o->n != 1 && (attr(c, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) ||
                      attr(c, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)))
        return -1;
    if ((a = attr(c, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) && o->isf)
        o->f[0] = a->f;
    else if ((a = attr(c, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)) && !o->isf)
        o->i[0] = a->i;
    else if ((a = attr(c, "value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS)) &&
             a->n_floats == (size_t)o->n && o->isf)
        for (int64_t k = 0; k < o->n; k++) o->f[k] = a->floats[k];
    else if ((a = attr(c, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)) &&
             a->n_ints == (size_t)o->n && !o->isf)
        for (int64_t k = 0; k < o->n; k++) o->i[k] = a->ints[k]; /* an empty list may be NULL */
    else return -1; /* a `value` tensor the importer did not take: leave it */
    return 0;
}

/* Do the inputs whose elements become the output's hold the same kind
 * (integer or floating) as the output? Cast alone converts. */
static int kinds_match(fold f, const cval *in, int nin, const cval *o) {
    int first = f == F_WHERE ? 1 : 0, last = f == F_BIN ? 2 : f == F_WHERE ? 3 : f == F_CONCAT ? nin : 1;
    if (f == F_CAST || f == F_CMP || f == F_SHAPE || f == F_SIZE || f == F_COFS || f == F_CONSTANT ||
        f == F_REDPROD)
        return 1;
    if (f == F_RANGE) return nin >= 3 && in[0].isf == o->isf && in[2].isf == o->isf;
    for (int k = first; k < last; k++)
        if (k >= nin || in[k].isf != o->isf) return 0;
    return 1;
}

/* Do the inputs (for Expand: input 0 and the target) broadcast to
 * exactly o's shape? */
static int bcast_to(const cctx *c, const cval *in, int nin, const cval *o) {
    eg_shape b;
    b.rank = 0;
    int last = xop_table[c->op].fold == F_EXPAND ? 1 : nin;
    for (int k = 0; k < last && k < nin; k++)
        if (bcast2(&b, &in[k].s)) return 0;
    if (xop_table[c->op].fold == F_EXPAND) {
        eg_shape t;
        if (nin < 2 || in[1].isf || in[1].n > EG_MAX_RANK) return 0;
        t.rank = (int)in[1].n;
        for (int i = 0; i < t.rank; i++) t.dim[i] = in[1].i[i];
        if (bcast2(&b, &t)) return 0;
    }
    if (b.rank != o->s.rank) return 0;
    for (int i = 0; i < b.rank; i++)
        if (b.dim[i] != o->s.dim[i]) return 0;
    return 1;
}

/* Compute output 0 of a foldable node into o (allocated by the caller
 * from the output's dtype and shape). @return 0, or -1 when it does not
 * fold after all. */
static int fold_eval(const cctx *c, const cval *in, int nin, cval *o) {
    const eg_shape *x = in_s(c, 0);
    fold f = xop_table[c->op].fold;
    if ((f == F_BIN || f == F_CMP || f == F_WHERE || f == F_EXPAND) && !bcast_to(c, in, nin, o))
        return -1;
    if (!kinds_match(f, in, nin, o)) return -1;
    if ((f == F_UNARY && (nin < 1 || in[0].n != o->n)) ||
        (f == F_RANGE && (nin < 3 || in[0].n != 1 || in[2].n != 1)) ||
        (f == F_SIZE && o->n != 1) || (f == F_GATHER && nin < 2) || (f == F_WHERE && in[0].isf))
        return -1;
    switch (f) {
    case F_NONE: return -1;
    case F_SHAPE: {
        int64_t b, e;
        shape_range(c, x->rank, &b, &e);
        if (e - b != o->n) return -1;
        for (int64_t k = b; k < e; k++) o->i[k - b] = x->dim[k];
        return 0;
    }
    case F_SIZE: o->i[0] = eg_shape_numel(x); return 0;
    case F_CONSTANT: return f_constant(c, o);
    case F_COPY:
    case F_CAST:
        if (in[0].n != o->n) return -1;
        for (int64_t k = 0; k < o->n; k++) {
            if (in[0].isf && !o->isf && !(fabs(in[0].f[k]) < 9.2e18)) return -1;
            cv_copy(o, k, &in[0], k);
            if (!o->isf) o->i[k] = wrap_int(o->dtype, o->i[k]);
            else if (o->dtype == EG_DT_FLOAT) o->f[k] = (double)(float)o->f[k];
        }
        return 0;
    case F_GATHER: return nin < 2 ? -1 : f_gather(c, &in[0], &in[1], o);
    case F_EXPAND:
        for (int64_t k = 0; k < o->n; k++) cv_copy(o, k, &in[0], boff(&in[0].s, &o->s, k));
        return 0;
    case F_CONCAT: return f_concat(c, in, nin, o);
    case F_SLICE: return f_slice(c, &in[0], o);
    case F_COFS: return f_cofs(c, o);
    case F_RANGE: {
        double s = cv_get(&in[0], 0), d = cv_get(&in[2], 0);
        for (int64_t k = 0; k < o->n; k++)
            if (o->isf) o->f[k] = s + (double)k * d;
            else o->i[k] = (int64_t)((uint64_t)in[0].i[0] + (uint64_t)k * (uint64_t)in[2].i[0]);
        return 0;
    }
    case F_BIN: return nin < 2 ? -1 : f_bin(c->op, (int)a_int(c, "fmod", 0), &in[0], &in[1], o);
    case F_TRANSPOSE: return f_transpose(c, &in[0], o);
    case F_CMP: return nin < 2 ? -1 : f_cmp(c->op, &in[0], &in[1], o);
    case F_WHERE:
        if (nin < 3) return -1;
        for (int64_t k = 0; k < o->n; k++) {
            int64_t ic = boff(&in[0].s, &o->s, k);
            const cval *pick = in[0].i[ic] ? &in[1] : &in[2];
            cv_copy(o, k, pick, boff(&pick->s, &o->s, k));
        }
        return 0;
    case F_UNARY: return f_unary(c->op, &in[0], o);
    case F_REDPROD: return f_redprod(c, &in[0], o);
    case F_COUNT: break;
    }
    return -1;
}

/* Can node c->n fold: a foldable op, every input a value (Shape/Size: a
 * known shape; omitted: only the optional inputs after the data, Slice's
 * axes and steps, Squeeze's and ReduceProd's axes, since the kernels read
 * every other), one output, not a graph output, a known shape in cap? */
static int fold_ready(const cctx *c) {
    fold f = xop_table[c->op].fold;
    const eg_node *n = c->n;
    if (f == F_NONE || n->n_out != 1 || n->out[0] < 0 || n->n_implicit) return 0;
    const eg_tensor *t = &c->g->tensor[n->out[0]];
    if ((t->flags & (EG_TF_OUTPUT | EG_TF_INIT | EG_TF_SPARSE)) || !foldable_dt(t->dtype) ||
        !eg_shape_known(&t->shape) || eg_shape_numel(&t->shape) > EG_CFOLD_MAX_ELEMS)
        return 0;
    if (f == F_SHAPE || f == F_SIZE) return in_t(c, 0) && eg_shape_known(in_s(c, 0));
    /* float weight arithmetic is left to eg_fold_weights after rewriting:
     * at load only scalars (scales, epsilons) and constant sources fold */
    if (is_float_dt(t->dtype) && eg_shape_numel(&t->shape) > 1 && f != F_COFS &&
        f != F_CONSTANT && f != F_RANGE)
        return 0;
    int optional_after_data = f == F_SLICE || f == F_COPY || f == F_REDPROD;
    for (int k = 0; k < n->n_in; k++) {
        const eg_tensor *u = in_t(c, k);
        if (!u && (k == 0 || !optional_after_data)) return 0;
        if (u && (!(u->flags & EG_TF_INIT) || !foldable_dt(u->dtype) || !eg_shape_known(&u->shape)))
            return 0;
        /* legacy broadcasting is not numpy's: fold only equal shapes */
        if (u && legacy_bcast(c) && !same_shape(&u->shape, &t->shape)) return 0;
    }
    return 1;
}

/* Fold node c->n when it is ready. *folded = 1 when it did. */
static eg_status try_fold(const cctx *c, int *folded) {
    cval in[CF_MAX_INTS], o;
    int nin = 0;
    eg_status rc = EG_OK;
    *folded = 0;
    if (!fold_ready(c) || c->n->n_in > CF_MAX_INTS) return EG_OK;
    eg_tensor *t = &c->g->tensor[c->n->out[0]];
    fold f = xop_table[c->op].fold;
    for (int k = 0; rc == EG_OK && f != F_SHAPE && f != F_SIZE && k < c->n->n_in; k++, nin++) {
        memset(&in[k], 0, sizeof in[k]);
        if (in_t(c, k)) rc = cval_load(in_t(c, k), &in[k]);
    }
    if (rc == EG_OK) rc = cval_alloc(&o, t->dtype, &t->shape);
    if (rc == EG_OK && fold_eval(c, in, nin, &o) == 0) {
        rc = cval_store(&o, t);
        *folded = rc == EG_OK;
    }
    if (rc == EG_OK || rc == EG_ENOMEM) cval_free(&o);
    for (int k = 0; k < nin; k++) cval_free(&in[k]);
    return rc == EG_ENOMEM ? EG_ENOMEM : EG_OK;
}

/* ================= the pass ================= */

static xop xop_by_type(const char *op_type) {
    for (int k = 0; op_type && k < X_COUNT; k++)
        if (strcmp(xop_table[k].onnx, op_type) == 0) return (xop)k;
    return X_COUNT;
}

int eg_cfold_moved_from(const char *op_type, int n_in, int *first, int *end) {
    xop x = xop_by_type(op_type);
    *first = 0, *end = 0;
    if (x == X_COUNT) return 0;
    switch (xop_table[x].moves) {
    case M_NONE: return 0;
    case M_IN0: *end = 1; break;
    case M_ALL: *end = n_in; break;
    case M_WHERE: *first = 1, *end = 3; break;
    }
    return *first < *end && *end <= n_in;
}

static int outputs_known(const eg_graph *g, const eg_node *n) {
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && g->tensor[n->out[k]].shape.rank < 0) return 0;
    return 1;
}

eg_status eg_cfold_begin(eg_cfold *f, eg_graph *g) {
    memset(f, 0, sizeof *f);
    f->g = g;
    f->drop = calloc((size_t)g->n_nodes + 1, 1);
    return f->drop ? EG_OK : EG_ENOMEM;
}

eg_status eg_cfold_node(eg_cfold *f, int id, char *err, size_t errlen) {
    eg_node *n = &f->g->node[id];
    cctx c = {f->g, n, NULL, X_COUNT, f->g->opset, err, errlen};
    Onnx__NodeProto *np = NULL;
    egp_alloc a;
    char msg[EG_ERRLEN];
    int folded = 0;
    if (n->kind == EG_KIND_OPS || !n->proto || !eg_default_domain(n->domain))
        return EG_OK;
    c.op = xop_by_type(n->op_type);
    /* a Dropout the importer reads as an identity folds like one, as it
     * will when the exported Identity is read again */
    if (c.op == X_DROPOUT && n->kind == EG_KIND_MODEL && n->n_in == 1 && n->n_out == 1) c.op = X_IDENTITY;
    if (c.op == X_COUNT || (n->kind == EG_KIND_MODEL && !fold_ready(&c))) return EG_OK;
    egp_alloc_init(&a, n->proto_len * 8 + (16u << 20));
    eg_status rc = egp_unpack(&onnx__node_proto__descriptor, &a, 1 << 10, n->proto, n->proto_len,
                              (ProtobufCMessage **)&np, msg, sizeof msg);
    if (rc != EG_OK) return rc == EG_ENOMEM ? rc : EG_OK; /* kept as is */
    c.np = np;
    if (n->kind == EG_KIND_OPAQUE) {
        rc = infer_rule(&c);
        if (rc == EG_OK && outputs_known(f->g, n)) f->n_shaped++;
    }
    if (rc == EG_OK) rc = try_fold(&c, &folded);
    if (folded) f->drop[id] = 1, f->n_folded++;
    protobuf_c_message_free_unpacked(&np->base, &a.pc);
    return rc;
}

eg_status eg_cfold_end(eg_cfold *f, eg_status rc, char *err, size_t errlen) {
    if (rc == EG_OK && f->n_folded) rc = eg_remove_nodes(f->g, f->drop, err, errlen);
    free(f->drop);
    f->drop = NULL;
    return rc;
}
