/* cnode.c - the shape rule, folding kernel and moves of each ONNX operator
 * (indexed by ir/onnx_op.h) and what its rules read of a node: attributes,
 * constant inputs, typed values (cfold_int.h). */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shapes/cfold_int.h"

const xop_info cf_xop_table[EG_X_COUNT] = { /* ORDER XOP */
    [EG_X_ABS] = {R_SAME, F_UNARY},
    [EG_X_ACOS] = {R_SAME, F_NONE},
    [EG_X_ACOSH] = {R_SAME, F_NONE},
    [EG_X_ADD] = {R_BCAST, F_BIN},
    [EG_X_AND] = {R_CMP, F_NONE},
    [EG_X_ARGMAX] = {R_ARG, F_NONE},
    [EG_X_ARGMIN] = {R_ARG, F_NONE},
    [EG_X_ASIN] = {R_SAME, F_NONE},
    [EG_X_ASINH] = {R_SAME, F_NONE},
    [EG_X_ATAN] = {R_SAME, F_NONE},
    [EG_X_ATANH] = {R_SAME, F_NONE},
    [EG_X_AVGPOOL] = {R_POOL, F_NONE},
    [EG_X_BATCHNORM] = {R_BATCHNORM, F_NONE},
    [EG_X_BERNOULLI] = {R_LIKE, F_NONE},
    [EG_X_BITSHIFT] = {R_BCAST, F_NONE},
    [EG_X_BITAND] = {R_BCAST, F_NONE},
    [EG_X_BITNOT] = {R_SAME, F_NONE},
    [EG_X_BITOR] = {R_BCAST, F_NONE},
    [EG_X_BITXOR] = {R_BCAST, F_NONE},
    [EG_X_CAST] = {R_CAST, F_CAST},
    [EG_X_CASTLIKE] = {R_CASTLIKE, F_NONE},
    [EG_X_CEIL] = {R_SAME, F_UNARY},
    [EG_X_CELU] = {R_SAME, F_NONE},
    [EG_X_CLIP] = {R_SAME, F_NONE},
    [EG_X_CONCAT] = {R_CONCAT, F_CONCAT, M_ALL},
    [EG_X_CONSTANT] = {R_CONSTANT, F_CONSTANT},
    [EG_X_COFS] = {R_COFS, F_COFS},
    [EG_X_CONV] = {R_CONV, F_NONE},
    [EG_X_CONVT] = {R_CONVT, F_NONE},
    [EG_X_COS] = {R_SAME, F_NONE},
    [EG_X_COSH] = {R_SAME, F_NONE},
    [EG_X_CUMSUM] = {R_SAME, F_NONE},
    [EG_X_D2S] = {R_D2S, F_NONE, M_IN0},
    [EG_X_DEQUANT] = {R_DEQUANT, F_NONE},
    [EG_X_DET] = {R_DET, F_NONE},
    [EG_X_DIV] = {R_BCAST, F_BIN},
    [EG_X_DROPOUT] = {R_DROPOUT, F_NONE},
    [EG_X_DYNQUANT] = {R_DYNQUANT, F_NONE},
    [EG_X_EINSUM] = {R_EINSUM, F_NONE},
    [EG_X_ELU] = {R_SAME, F_NONE},
    [EG_X_EQUAL] = {R_CMP, F_CMP},
    [EG_X_ERF] = {R_SAME, F_NONE},
    [EG_X_EXP] = {R_SAME, F_NONE},
    [EG_X_EXPAND] = {R_EXPAND, F_EXPAND, M_IN0},
    [EG_X_EYELIKE] = {R_LIKE, F_NONE},
    [EG_X_FLATTEN] = {R_FLATTEN, F_COPY, M_IN0},
    [EG_X_FLOOR] = {R_SAME, F_UNARY},
    [EG_X_GATHER] = {R_GATHER, F_GATHER, M_IN0},
    [EG_X_GATHERELEM] = {R_INDICES, F_NONE, M_IN0},
    [EG_X_GATHERND] = {R_GATHERND, F_NONE, M_IN0},
    [EG_X_GELU] = {R_SAME, F_NONE},
    [EG_X_GEMM] = {R_GEMM, F_NONE},
    [EG_X_GAVGPOOL] = {R_GPOOL, F_NONE},
    [EG_X_GLPPOOL] = {R_GPOOL, F_NONE},
    [EG_X_GMAXPOOL] = {R_GPOOL, F_NONE},
    [EG_X_GREATER] = {R_CMP, F_CMP},
    [EG_X_GREATEREQ] = {R_CMP, F_NONE},
    [EG_X_GRIDSAMPLE] = {R_GRIDSAMPLE, F_NONE},
    [EG_X_GROUPNORM] = {R_SAME, F_NONE},
    [EG_X_GRU] = {R_RNN, F_NONE},
    [EG_X_HARDMAX] = {R_SAME, F_NONE},
    [EG_X_HARDSIGMOID] = {R_SAME, F_NONE},
    [EG_X_HARDSWISH] = {R_SAME, F_NONE},
    [EG_X_IDENTITY] = {R_SAME, F_COPY, M_IN0},
    [EG_X_INSTNORM] = {R_SAME, F_NONE},
    [EG_X_ISINF] = {R_CMP, F_NONE},
    [EG_X_ISNAN] = {R_CMP, F_NONE},
    [EG_X_LAYERNORM] = {R_LAYERNORM, F_NONE},
    [EG_X_LEAKYRELU] = {R_SAME, F_NONE},
    [EG_X_LESS] = {R_CMP, F_CMP},
    [EG_X_LESSEQ] = {R_CMP, F_NONE},
    [EG_X_LOG] = {R_SAME, F_NONE},
    [EG_X_LOGSOFTMAX] = {R_SAME, F_NONE},
    [EG_X_LPNORM] = {R_SAME, F_NONE},
    [EG_X_LPPOOL] = {R_POOL, F_NONE},
    [EG_X_LRN] = {R_SAME, F_NONE},
    [EG_X_LSTM] = {R_RNN, F_NONE},
    [EG_X_MATMUL] = {R_MATMUL, F_NONE},
    [EG_X_MATMULINT] = {R_MATMULINT, F_NONE},
    [EG_X_MAX] = {R_BCAST, F_BIN},
    [EG_X_MAXPOOL] = {R_POOL, F_NONE},
    [EG_X_MEAN] = {R_BCAST, F_NONE},
    [EG_X_MVN] = {R_SAME, F_NONE},
    [EG_X_MIN] = {R_BCAST, F_BIN},
    [EG_X_MISH] = {R_SAME, F_NONE},
    [EG_X_MOD] = {R_BCAST, F_BIN},
    [EG_X_MUL] = {R_BCAST, F_BIN},
    [EG_X_NEG] = {R_SAME, F_UNARY},
    [EG_X_NMS] = {R_NMS, F_NONE},
    [EG_X_NONZERO] = {R_NONZERO, F_NONE},
    [EG_X_NOT] = {R_SAME, F_UNARY},
    [EG_X_ONEHOT] = {R_ONEHOT, F_NONE},
    [EG_X_OR] = {R_CMP, F_NONE},
    [EG_X_PAD] = {R_PAD, F_NONE},
    [EG_X_POW] = {R_BCAST, F_NONE},
    [EG_X_PRELU] = {R_SAME, F_NONE},
    [EG_X_QUANT] = {R_QUANT, F_NONE},
    [EG_X_RANDNLIKE] = {R_LIKE, F_NONE},
    [EG_X_RANDULIKE] = {R_LIKE, F_NONE},
    [EG_X_RANGE] = {R_RANGE, F_RANGE},
    [EG_X_RECIPROCAL] = {R_SAME, F_NONE},
    [EG_X_REDL1] = {R_REDUCE, F_NONE},
    [EG_X_REDL2] = {R_REDUCE, F_NONE},
    [EG_X_REDLOGSUM] = {R_REDUCE, F_NONE},
    [EG_X_REDLOGSUMEXP] = {R_REDUCE, F_NONE},
    [EG_X_REDMAX] = {R_REDUCE, F_NONE},
    [EG_X_REDMEAN] = {R_REDUCE, F_NONE},
    [EG_X_REDMIN] = {R_REDUCE, F_NONE},
    [EG_X_REDPROD] = {R_REDUCE, F_REDPROD},
    [EG_X_REDSUM] = {R_REDUCE, F_NONE},
    [EG_X_REDSUMSQ] = {R_REDUCE, F_NONE},
    [EG_X_RELU] = {R_SAME, F_NONE},
    [EG_X_RESHAPE] = {R_RESHAPE, F_COPY, M_IN0},
    [EG_X_RESIZE] = {R_RESIZE, F_NONE},
    [EG_X_REVSEQ] = {R_SAME, F_NONE},
    [EG_X_RMSNORM] = {R_SAME, F_NONE},
    [EG_X_RNN] = {R_RNN, F_NONE},
    [EG_X_ROIALIGN] = {R_ROIALIGN, F_NONE},
    [EG_X_ROUND] = {R_SAME, F_NONE},
    [EG_X_SCATTERELEM] = {R_SAME, F_NONE},
    [EG_X_SCATTERND] = {R_SAME, F_NONE},
    [EG_X_SELU] = {R_SAME, F_NONE},
    [EG_X_SHAPE] = {R_SHAPE, F_SHAPE},
    [EG_X_SHRINK] = {R_SAME, F_NONE},
    [EG_X_SIGMOID] = {R_SAME, F_NONE},
    [EG_X_SIGN] = {R_SAME, F_NONE},
    [EG_X_SIN] = {R_SAME, F_NONE},
    [EG_X_SINH] = {R_SAME, F_NONE},
    [EG_X_SIZE] = {R_SIZE, F_SIZE},
    [EG_X_SLICE] = {R_SLICE, F_SLICE, M_IN0},
    [EG_X_SOFTMAX] = {R_SAME, F_NONE},
    [EG_X_SOFTPLUS] = {R_SAME, F_NONE},
    [EG_X_SOFTSIGN] = {R_SAME, F_NONE},
    [EG_X_S2D] = {R_S2D, F_NONE, M_IN0},
    [EG_X_SPLIT] = {R_SPLIT, F_NONE, M_IN0},
    [EG_X_SQRT] = {R_SAME, F_NONE},
    [EG_X_SQUEEZE] = {R_SQUEEZE, F_COPY, M_IN0},
    [EG_X_SUB] = {R_BCAST, F_BIN},
    [EG_X_SUM] = {R_BCAST, F_SUM},
    [EG_X_TAN] = {R_SAME, F_NONE},
    [EG_X_TANH] = {R_SAME, F_NONE},
    [EG_X_THRESHRELU] = {R_SAME, F_NONE},
    [EG_X_TILE] = {R_TILE, F_NONE, M_IN0},
    [EG_X_TOPK] = {R_TOPK, F_NONE},
    [EG_X_TRANSPOSE] = {R_TRANSPOSE, F_TRANSPOSE, M_IN0},
    [EG_X_TRILU] = {R_SAME, F_NONE},
    [EG_X_UNSQUEEZE] = {R_UNSQUEEZE, F_COPY, M_IN0},
    [EG_X_UPSAMPLE] = {R_RESIZE, F_NONE},
    [EG_X_WHERE] = {R_WHERE, F_WHERE, M_WHERE},
    [EG_X_XOR] = {R_CMP, F_NONE},
};
static_assert(sizeof cf_xop_table / sizeof cf_xop_table[0] == EG_X_COUNT,
              "cf_xop_table needs one entry per ONNX operator");

CF_PRINTF(3, 4)
eg_status cf_fail(const cctx *c, eg_status rc, const char *fmt, ...) {
    char prefix[EG_ERRLEN];
    snprintf(prefix, sizeof prefix, "node '%s' (%s): ", c->n->name, eg_xop_name[c->op]);
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
