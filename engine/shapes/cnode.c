/* cnode.c - the ONNX operator table of constant folding and what its rules
 * read of a node: attributes, constant inputs, typed values (cfold_int.h). */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shapes/cfold_int.h"

const xop_info cf_xop_table[X_COUNT] = { /* ORDER XOP */
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
static_assert(sizeof cf_xop_table / sizeof cf_xop_table[0] == X_COUNT,
              "cf_xop_table needs one entry per ONNX operator");

CF_PRINTF(3, 4)
eg_status cf_fail(const cctx *c, eg_status rc, const char *fmt, ...) {
    char prefix[EG_ERRLEN];
    snprintf(prefix, sizeof prefix, "node '%s' (%s): ", c->n->name, cf_xop_table[c->op].onnx);
    va_list ap;
    va_start(ap, fmt);
    eg_verrf_after(c->err, c->errlen, rc, prefix, fmt, ap);
    va_end(ap);
    return rc;
}

/* ================= attributes ================= */

const Onnx__AttributeProto *cf_attr(const cctx *c, const char *name, atype t) {
    const Onnx__AttributeProto *a = egp_attr(c->np, name); /* the one lookup (proto/attr.c) */
    return a && !a->ref_attr_name && egp_attr_is(a, t) ? a : NULL;
}

int64_t cf_a_int(const cctx *c, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = cf_attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    return a ? a->i : def;
}

/* An ints attribute into out[max]: its count, or -1 when absent or longer. */
int cf_a_ints(const cctx *c, const char *name, int64_t *out, int max) {
    const Onnx__AttributeProto *a = cf_attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    if (!a || a->n_ints > (size_t)max) return -1;
    if (a->n_ints) memcpy(out, a->ints, sizeof(int64_t) * a->n_ints);
    return (int)a->n_ints;
}

int cf_a_floats(const cctx *c, const char *name, double *out, int max) {
    const Onnx__AttributeProto *a = cf_attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    if (!a || a->n_floats > (size_t)max) return -1;
    for (size_t i = 0; i < a->n_floats; i++) out[i] = a->floats[i];
    return (int)a->n_floats;
}

int cf_a_str_is(const cctx *c, const char *name, const char *v) {
    const Onnx__AttributeProto *a = cf_attr(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    return a && a->s.len == strlen(v) && (!a->s.len || !memcmp(a->s.data, v, a->s.len));
}

/* ================= values ================= */

int cf_is_float_dt(int dt) { return dt == EG_DT_FLOAT || dt == EG_DT_DOUBLE; }

int cf_foldable_dt(int dt) {
    switch (dt) {
    case EG_DT_FLOAT: case EG_DT_DOUBLE: case EG_DT_INT8: case EG_DT_INT16: case EG_DT_INT32:
    case EG_DT_INT64: case EG_DT_UINT8: case EG_DT_UINT16: case EG_DT_UINT32: case EG_DT_UINT64:
    case EG_DT_BOOL: return 1;
    default: return 0;
    }
}

void cf_cval_free(cval *v) {
    free(v->i), free(v->f);
    v->i = NULL, v->f = NULL;
}

eg_status cf_cval_alloc(cval *v, int dtype, const eg_shape *s) {
    memset(v, 0, sizeof *v);
    v->dtype = dtype, v->isf = cf_is_float_dt(dtype), v->s = *s;
    v->n = eg_shape_numel(s);
    if (v->n < 0 || v->n > EG_CFOLD_MAX_ELEMS) return EG_ELIMIT;
    if (v->isf) v->f = calloc((size_t)v->n + 1, sizeof(double));
    else v->i = calloc((size_t)v->n + 1, sizeof(int64_t));
    return v->f || v->i ? EG_OK : EG_ENOMEM;
}

int64_t cf_le_int(const uint8_t *p, size_t size, int sgn) {
    uint64_t v = 0;
    for (size_t b = size; b-- > 0;) v = v << 8 | p[b];
    if (sgn && size < 8 && (v >> (8 * size - 1)) & 1) v |= ~(uint64_t)0 << (8 * size);
    return (int64_t)v;
}

int cf_signed_dt(int dt) {
    return dt == EG_DT_INT8 || dt == EG_DT_INT16 || dt == EG_DT_INT32 || dt == EG_DT_INT64;
}

/* Load a tensor's value. @return EG_OK, or EG_EUNSUPPORTED when it has no
 * value this file can fold (also over the element cap). */
eg_status cf_cval_load(const eg_tensor *t, cval *v) {
    size_t size = eg_dtype_size(t->dtype);
    memset(v, 0, sizeof *v);
    if (!(t->flags & EG_TF_INIT) || (t->flags & EG_TF_SPARSE) || !cf_foldable_dt(t->dtype) ||
        !eg_shape_known(&t->shape))
        return EG_EUNSUPPORTED;
    eg_status rc = cf_cval_alloc(v, t->dtype, &t->shape);
    if (rc != EG_OK) return rc == EG_ENOMEM ? rc : EG_EUNSUPPORTED;
    if (t->dtype == EG_DT_FLOAT ? !t->data && v->n : !t->raw || t->raw_len != size * (size_t)v->n) {
        cf_cval_free(v);
        return EG_EUNSUPPORTED;
    }
    for (int64_t k = 0; k < v->n; k++) {
        if (t->dtype == EG_DT_FLOAT) v->f[k] = t->data[k];
        else if (t->dtype == EG_DT_DOUBLE) memcpy(&v->f[k], t->raw + 8 * k, 8);
        else v->i[k] = cf_le_int(t->raw + size * (size_t)k, size, cf_signed_dt(t->dtype));
    }
    return EG_OK;
}

double cf_cv_get(const cval *v, int64_t k) { return v->isf ? v->f[k] : (double)v->i[k]; }

/* Input k's tensor, or NULL when omitted. */
const eg_tensor *cf_in_t(const cctx *c, int k) { return eg_node_in(c->g, c->n, k); }

const eg_shape *cf_in_s(const cctx *c, int k) { return eg_node_in_shape(c->g, c->n, k); }

int cf_in_dt(const cctx *c, int k) {
    const eg_tensor *t = cf_in_t(c, k);
    return t ? t->dtype : 0;
}

/* A constant integer input k into out[max]: its count, -1 when not a
 * known constant (or too long), -2 when omitted. */
int cf_in_ints(const cctx *c, int k, int64_t *out, int max) {
    const eg_tensor *t = cf_in_t(c, k);
    cval v;
    if (!t) return -2;
    if (t->dtype != EG_DT_INT64 && t->dtype != EG_DT_INT32) return -1;
    if (!eg_shape_known(&t->shape) || eg_shape_numel(&t->shape) > max) return -1;
    if (cf_cval_load(t, &v) != EG_OK) return -1;
    int n = (int)v.n;
    memcpy(out, v.i, sizeof(int64_t) * (size_t)n);
    cf_cval_free(&v);
    return n;
}

/* A constant scalar (or 1-element) input as double; 0 when known. */
int cf_in_scalar(const cctx *c, int k, double *out) {
    const eg_tensor *t = cf_in_t(c, k);
    cval v;
    if (!t || eg_shape_numel(&t->shape) != 1 || cf_cval_load(t, &v) != EG_OK) return -1;
    *out = cf_cv_get(&v, 0);
    cf_cval_free(&v);
    return 0;
}
