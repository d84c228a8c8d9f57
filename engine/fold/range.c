/* range.c - value ranges (range.h): one forward pass over the nodes, an
 * interval rule per operator. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shapes/cfold.h"
#include "fold/range.h"

/* An exact value below this in magnitude rounds to a finite float (round
 * to nearest: FLT_MAX plus half its ulp). */
#define OVERFLOW_AT (0x1p128 - 0x1p103)
/* Bounds are doubles; their own rounding is far below a float's. */
#define SLACK 0x1p-40

static const eg_range ANY = {-INFINITY, INFINITY};

int eg_range_finite(eg_range r) { return r.lo >= -FLT_MAX && r.hi <= FLT_MAX; }

static double mag(eg_range r) { return fmax(fabs(r.lo), fabs(r.hi)); }

/* The range of a float result whose exact value lies in [lo, hi] (NaN
 * bounds included: any). */
static eg_range rounded(double lo, double hi) {
    lo -= fabs(lo) * SLACK, hi += fabs(hi) * SLACK;
    if (!(lo > -OVERFLOW_AT && hi < OVERFLOW_AT && lo <= hi)) return ANY;
    return (eg_range){fmax(lo, -FLT_MAX), fmin(hi, FLT_MAX)};
}

static eg_range hull(eg_range a, eg_range b) { return (eg_range){fmin(a.lo, b.lo), fmax(a.hi, b.hi)}; }

static eg_range add(eg_range a, eg_range b) {
    if (!eg_range_finite(a) || !eg_range_finite(b)) return ANY;
    return rounded(a.lo + b.lo, a.hi + b.hi);
}

static eg_range mul(eg_range a, eg_range b) {
    if (!eg_range_finite(a) || !eg_range_finite(b)) return ANY;
    double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    return rounded(fmin(fmin(p[0], p[1]), fmin(p[2], p[3])), fmax(fmax(p[0], p[1]), fmax(p[2], p[3])));
}

/* a / b for b bounded away from zero. */
static eg_range divide(eg_range a, eg_range b) {
    if (!eg_range_finite(b) || (b.lo <= 0 && b.hi >= 0)) return ANY;
    return mul(a, (eg_range){1 / b.hi, 1 / b.lo});
}

/* A sum of k products of a and b elements, accumulated in float: each
 * partial sum rounds, so the bound grows by k rounding errors. */
static eg_range dot(eg_range a, eg_range b, int64_t k) {
    if (!eg_range_finite(a) || !eg_range_finite(b) || k < 1) return ANY;
    double m = mag(a) * mag(b) * (double)k * (1 + (double)(k + 1) * 0x1p-23);
    return rounded(-m, m);
}

/* Elementwise maps into [lo, hi] of finite inputs (a NaN stays NaN). */
static eg_range bounded(eg_range x, double lo, double hi) {
    return eg_range_finite(x) ? (eg_range){lo, hi} : ANY;
}

static eg_range relu(eg_range x) { return bounded(x, fmax(x.lo, 0), fmax(x.hi, 0)); }

/* A mean of cells (padding counted as zeros): within the cells' range and
 * 0, when their float sum cannot overflow (windows under 2^27 cells). */
static eg_range mean(eg_range x) {
    return eg_range_finite(x) && mag(x) < 0x1p100 ? hull(x, (eg_range){0, 0}) : ANY;
}

/* A layer norm over n elements writes (x - mean) / sqrt(var + eps), at
 * most sqrt(n) in magnitude (the squares sum to n var), when eps > 0 and
 * the variance's sum of squares cannot overflow; a margin of 2 for its
 * rounding. */
static eg_range layernorm(eg_range x, int64_t n, double eps) {
    double m = mag(x);
    if (!eg_range_finite(x) || n < 1 || !(eps > 0) || 4 * m * m * (double)n >= FLT_MAX / 2) return ANY;
    double z = 2 * sqrt((double)n);
    return (eg_range){-z, z};
}

static int64_t dim(const eg_graph *g, const eg_node *n, int k, int d) {
    const eg_shape *s = eg_node_in_shape(g, n, k);
    if (d < 0) d += s->rank;
    return d >= 0 && d < s->rank ? s->dim[d] : -1;
}

/* The product of input k's dims from..rank-1; -1 when one is unknown. */
static int64_t dims_from(const eg_graph *g, const eg_node *n, int k, int from) {
    const eg_shape *s = eg_node_in_shape(g, n, k);
    int64_t p = 1;
    if (s->rank < 0 || from < 0 || from > s->rank) return -1;
    for (int d = from; d < s->rank; d++) {
        if (s->dim[d] < 0) return -1;
        p *= s->dim[d];
    }
    return p;
}

static eg_range in_r(const eg_graph *g, const eg_node *n, const eg_range *r, int k) {
    return k < n->n_in && n->in[k] >= 0 && n->in[k] < g->n_tensors ? r[n->in[k]] : ANY;
}

/* How an opspecs operator's result is bounded. An operator missing from
 * op_rule is R_ANY: nothing is known, which is always sound, so a new
 * operator needs no line here (it only gains one). */
typedef enum {
    R_ANY,
    R_DOT,       /* a sum of products: matmul forms, conv (its act), kmul */
    R_ADD,
    R_MUL,
    R_DIV,       /* by a scalar bounded away from zero */
    R_FIXED,     /* within [lo, hi] for finite input */
    R_UPTO,      /* within [lo, max(x, 0)] for finite input */
    R_SAME,      /* the input's cells (or a maximum of them) */
    R_MEAN,      /* a mean of the input's cells and zeros */
    R_HULL,      /* either input's cells */
    R_LAYERNORM,
    R_CONST      /* [lo, hi] whatever the input (a constant the input shapes) */
} rule_kind;

static const struct {
    rule_kind kind;
    double lo, hi;
} op_rule[OP_COUNT] = {
    [OP_MATMUL] = {R_DOT, 0, 0},     [OP_BMM] = {R_DOT, 0, 0},        [OP_LINEAR] = {R_DOT, 0, 0},
    [OP_CONV2D] = {R_DOT, 0, 0},     [OP_KMUL] = {R_DOT, 0, 0},       [OP_EWADD] = {R_ADD, 0, 0},
    [OP_SADD] = {R_ADD, 0, 0},       [OP_BIAS] = {R_ADD, 0, 0},       [OP_EWMUL] = {R_MUL, 0, 0},
    [OP_SMUL] = {R_MUL, 0, 0},       [OP_SCALE] = {R_MUL, 0, 0},      [OP_SDIV] = {R_DIV, 0, 0},
    [OP_RELU] = {R_UPTO, 0, 0},      [OP_HSWISH] = {R_UPTO, -0.375, 0}, /* x relu6(x + 3) / 6 */
    [OP_RELU6] = {R_FIXED, 0, 6},    [OP_SIGMOID] = {R_FIXED, 0, 1},  [OP_HSIGMOID] = {R_FIXED, 0, 1},
    [OP_SOFTMAX] = {R_FIXED, 0, 1},  [OP_TANH] = {R_FIXED, -1, 1},    [OP_ERF] = {R_FIXED, -1, 1},
    [OP_NANZERO] = {R_SAME, 0, 0},   [OP_MAXPOOL] = {R_SAME, 0, 0},   [OP_SPLIT0] = {R_SAME, 0, 0},
    [OP_SPLIT1] = {R_SAME, 0, 0},    [OP_TRANSPOSE] = {R_SAME, 0, 0}, [OP_PERMUTE] = {R_SAME, 0, 0},
    [OP_HEADS] = {R_SAME, 0, 0},     [OP_UNHEADS] = {R_SAME, 0, 0},   [OP_AVGPOOL] = {R_MEAN, 0, 0},
    [OP_ENLARGE] = {R_MEAN, 0, 0},   [OP_CONCAT] = {R_HULL, 0, 0},    [OP_LAYERNORM] = {R_LAYERNORM, 0, 0},
    [OP_IMM] = {R_CONST, 0, 1},      [OP_ICONV] = {R_CONST, 0, 1},    [OP_POOLK] = {R_CONST, 0, 1},
    [OP_ONES] = {R_CONST, 1, 1},
    [OP_DWICONV] = {R_CONST, 0, 1},
};

/* The number of products each output cell of an R_DOT operator sums. */
static int64_t dot_terms(const eg_graph *g, const eg_node *n) {
    ops_form f = ops_table[n->op].form;
    if (f == OPS_FORM_CONV) return dims_from(g, n, 1, 1); /* I kh kw */
    if (f == OPS_FORM_KMUL) return dim(g, n, 0, 1);       /* M */
    return dim(g, n, 0, -1); /* k, the left operand's last axis */
}

static eg_range ops_rule(const eg_graph *g, const eg_node *n, const eg_range *r) {
    eg_range a = in_r(g, n, r, 0), b = in_r(g, n, r, 1), y;
    double lo = op_rule[n->op].lo, hi = op_rule[n->op].hi;
    switch (op_rule[n->op].kind) {
    case R_ANY: break;
    case R_DOT:
        y = dot(a, b, dot_terms(g, n));
        return ops_table[n->op].form == OPS_FORM_CONV && n->param[2] == OPS_ACT_RELU ? relu(y) : y;
    case R_ADD: return add(a, b);
    case R_MUL: return mul(a, b);
    case R_DIV: return divide(a, b);
    case R_FIXED: return bounded(a, lo, hi);
    case R_UPTO: return bounded(a, lo, fmax(a.hi, 0));
    case R_SAME: return eg_range_finite(a) ? a : ANY;
    case R_MEAN: return mean(a);
    case R_HULL: return hull(a, b);
    case R_LAYERNORM: return layernorm(a, dim(g, n, 0, n->param[0]), ops_eps_value(n->param[1]));
    case R_CONST: return (eg_range){lo, hi};
    }
    return ANY;
}

/* Inference BatchNormalization: scale (x - mean) / sqrt(var + eps) + B,
 * bounded with each parameter's worst channel. */
static eg_range batchnorm(const eg_graph *g, const eg_node *n, const eg_range *r) {
    eg_range x = in_r(g, n, r, 0), var = in_r(g, n, r, 4);
    double eps = n->attr.epsilon;
    if (!eg_range_finite(var) || !(var.lo + eps > 0)) return ANY;
    eg_range inv = {0, 1 / sqrt(var.lo + eps)};
    eg_range centred = add(x, mul(in_r(g, n, r, 3), (eg_range){-1, -1}));
    return add(mul(mul(centred, inv), in_r(g, n, r, 1)), in_r(g, n, r, 2));
}

static eg_range model_rule(const eg_graph *g, const eg_node *n, const eg_range *r) {
    eg_range a = in_r(g, n, r, 0), b = in_r(g, n, r, 1), c = in_r(g, n, r, 2);
    const eg_attrs *at = &n->attr;
    switch (n->mop) {
    case EG_MOP_CONV: {
        eg_range y = dot(a, b, dims_from(g, n, 1, 1));
        return n->n_in > 2 && n->in[2] >= 0 ? add(y, c) : y;
    }
    case EG_MOP_GEMM: {
        int64_t k = dim(g, n, 0, (at->flags & EG_AF_TRANS_A) ? 0 : 1);
        eg_range y = mul(dot(a, b, k), (eg_range){at->alpha, at->alpha});
        return n->n_in > 2 && n->in[2] >= 0 ? add(y, mul(c, (eg_range){at->beta, at->beta})) : y;
    }
    case EG_MOP_MATMUL: return dot(a, b, dim(g, n, 0, -1));
    case EG_MOP_ADD: return add(a, b);
    case EG_MOP_MUL: return mul(a, b);
    case EG_MOP_DIV: return divide(a, b);
    case EG_MOP_RELU: return relu(a);
    case EG_MOP_SIGMOID:
    case EG_MOP_SOFTMAX: return bounded(a, 0, 1);
    case EG_MOP_TANH: return bounded(a, -1, 1);
    case EG_MOP_MAXPOOL:
    case EG_MOP_SPLIT:
    case EG_MOP_TRANSPOSE:
    case EG_MOP_RESHAPE:
    case EG_MOP_FLATTEN:
    case EG_MOP_IDENTITY: return a;
    case EG_MOP_AVGPOOL:
    case EG_MOP_GLOBALAVGPOOL: return mean(a);
    case EG_MOP_CONCAT: {
        eg_range y = a;
        for (int k = 1; k < n->n_in; k++) y = hull(y, in_r(g, n, r, k));
        return y;
    }
    case EG_MOP_SUM: {
        eg_range y = a;
        for (int k = 1; k < n->n_in; k++) y = add(y, in_r(g, n, r, k));
        return y;
    }
    case EG_MOP_BATCHNORM: return batchnorm(g, n, r);
    case EG_MOP_LAYERNORM: {
        const eg_shape *s = eg_node_in_shape(g, n, 0);
        int axis = at->axis < 0 ? at->axis + s->rank : at->axis;
        eg_range z = layernorm(a, dims_from(g, n, 0, axis), at->epsilon);
        z = mul(z, b);
        return n->n_in > 2 && n->in[2] >= 0 ? add(z, c) : z;
    }
    case EG_MOP_COUNT: break;
    }
    return ANY;
}

/* A float Cast of an integer or boolean tensor: finite (2^64 at most). */
static int int_dtype(int dt) {
    return dt == EG_DT_BOOL || dt == EG_DT_INT8 || dt == EG_DT_UINT8 || dt == EG_DT_INT16 ||
           dt == EG_DT_UINT16 || dt == EG_DT_INT32 || dt == EG_DT_UINT32 || dt == EG_DT_INT64 ||
           dt == EG_DT_UINT64;
}

static eg_range opaque_rule(const eg_graph *g, const eg_node *n, const eg_range *r) {
    if (!n->op_type || !eg_default_domain(n->domain)) return ANY;
    if (eg_xop_of(n->op_type) == EG_X_CAST && n->n_in == 1 && n->in[0] >= 0) {
        int dt = g->tensor[n->in[0]].dtype;
        if (int_dtype(dt)) return (eg_range){-0x1p64, 0x1p64};
        return dt == EG_DT_FLOAT ? r[n->in[0]] : ANY;
    }
    int first, end;
    if (!eg_cfold_moved_from(n->op_type, n->n_in, &first, &end)) return ANY;
    eg_range y = in_r(g, n, r, first);
    for (int k = first + 1; k < end; k++) y = hull(y, in_r(g, n, r, k));
    return y;
}

/* An initializer's range: its values, when all are finite. */
static eg_range init_range(const eg_tensor *t) {
    int64_t numel = eg_shape_numel(&t->shape);
    if (!t->data || numel < 1) return ANY;
    eg_range y = {t->data[0], t->data[0]};
    for (int64_t i = 0; i < numel; i++) {
        if (!isfinite(t->data[i])) return ANY;
        y.lo = fmin(y.lo, t->data[i]), y.hi = fmax(y.hi, t->data[i]);
    }
    return y;
}

void eg_ranges(const eg_graph *g, eg_range *r) {
    for (int t = 0; t < g->n_tensors; t++) {
        const eg_tensor *x = &g->tensor[t];
        r[t] = ANY;
        if ((x->flags & EG_TF_INIT) && !(x->flags & EG_TF_INPUT) && x->dtype == EG_DT_FLOAT)
            r[t] = init_range(x);
    }
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        eg_range y = ANY;
        switch (n->kind) {
        case EG_KIND_OPS: y = ops_rule(g, n, r); break;
        case EG_KIND_MODEL: y = model_rule(g, n, r); break;
        case EG_KIND_OPAQUE: y = opaque_rule(g, n, r); break;
        case EG_KIND_COUNT: break;
        }
        for (int k = 0; k < n->n_out; k++) {
            int t = n->out[k];
            if (t >= 0 && g->tensor[t].dtype == EG_DT_FLOAT) r[t] = y;
        }
    }
}

/* ================= eg_mark_nonfinite ================= */

/* Default-domain operators whose outputs are finite whenever their inputs
 * are and no sum or product overflows. Anything else (Log, Sqrt,
 * Reciprocal, Exp, a custom domain, a new operator) may make an infinity
 * or a NaN: sound for free, so a new operator needs no line here. */
static const unsigned char keeps_finite[EG_X_COUNT] = {
    [EG_X_ABS] = 1, [EG_X_ADD] = 1, [EG_X_AVGPOOL] = 1, [EG_X_BATCHNORM] = 1, [EG_X_CAST] = 1,
    [EG_X_CASTLIKE] = 1, [EG_X_CEIL] = 1, [EG_X_CLIP] = 1, [EG_X_CONV] = 1, [EG_X_CONVT] = 1,
    [EG_X_COS] = 1, [EG_X_CUMSUM] = 1, [EG_X_DROPOUT] = 1, [EG_X_EINSUM] = 1, [EG_X_ELU] = 1,
    [EG_X_ERF] = 1, [EG_X_EXPAND] = 1, [EG_X_FLOOR] = 1, [EG_X_GELU] = 1, [EG_X_GEMM] = 1,
    [EG_X_GAVGPOOL] = 1, [EG_X_GMAXPOOL] = 1, [EG_X_HARDSIGMOID] = 1, [EG_X_HARDSWISH] = 1,
    [EG_X_IDENTITY] = 1, [EG_X_INSTNORM] = 1, [EG_X_LAYERNORM] = 1, [EG_X_LEAKYRELU] = 1,
    [EG_X_LOGSOFTMAX] = 1, [EG_X_MATMUL] = 1, [EG_X_MAX] = 1, [EG_X_MAXPOOL] = 1, [EG_X_MEAN] = 1,
    [EG_X_MIN] = 1, [EG_X_MUL] = 1, [EG_X_NEG] = 1, [EG_X_PAD] = 1, [EG_X_REDL1] = 1,
    [EG_X_REDL2] = 1, [EG_X_REDMAX] = 1, [EG_X_REDMEAN] = 1, [EG_X_REDMIN] = 1, [EG_X_REDSUM] = 1,
    [EG_X_REDSUMSQ] = 1, [EG_X_RELU] = 1, [EG_X_RESIZE] = 1, [EG_X_ROUND] = 1, [EG_X_SELU] = 1,
    [EG_X_SIGMOID] = 1, [EG_X_SIGN] = 1, [EG_X_SIN] = 1, [EG_X_SOFTMAX] = 1, [EG_X_SUB] = 1,
    [EG_X_SUM] = 1, [EG_X_TANH] = 1, [EG_X_TILE] = 1, [EG_X_TOPK] = 1, [EG_X_TRILU] = 1,
};

/* x / b, b's range bounded away from zero. */
static int nonzero(eg_range b) { return eg_range_finite(b) && (b.lo > 0 || b.hi < 0); }

/* 1 when the node may make a non-finite value of finite inputs. */
static int makes_nonfinite(const eg_graph *g, const eg_node *n, const eg_range *r) {
    eg_range b = in_r(g, n, r, 1);
    switch (n->kind) {
    case EG_KIND_OPS:
        if (op_rule[n->op].kind == R_DIV) return !nonzero(b);
        return n->op == OP_LAYERNORM && !(ops_eps_value(n->param[1]) > 0);
    case EG_KIND_MODEL:
        if (n->mop == EG_MOP_DIV) return !nonzero(b);
        if (n->mop == EG_MOP_LAYERNORM) return !(n->attr.epsilon > 0);
        if (n->mop == EG_MOP_BATCHNORM) {
            eg_range var = in_r(g, n, r, 4);
            return !(eg_range_finite(var) && var.lo + n->attr.epsilon > 0);
        }
        return 0;
    case EG_KIND_OPAQUE: break;
    case EG_KIND_COUNT: return 1;
    }
    if (!n->op_type || !eg_default_domain(n->domain)) return 1;
    int first, end;
    if (eg_cfold_moved_from(n->op_type, n->n_in, &first, &end)) return 0;
    eg_range a = in_r(g, n, r, 0);
    eg_xop x = eg_xop_of(n->op_type);
    if (x == EG_X_LOG) return !(eg_range_finite(a) && a.lo > 0);
    if (x == EG_X_SQRT) return !(eg_range_finite(a) && a.lo >= 0);
    if (x == EG_X_RECIPROCAL) return !nonzero(a);
    if (x == EG_X_POW) /* x^k, k a constant whole number >= 0: a product */
        return !(b.lo == b.hi && b.lo >= 0 && b.lo == floor(b.lo));
    return x == EG_X_COUNT || !keeps_finite[x];
}

/* An initializer holding an infinity or a NaN (all exponent bits set),
 * float32 from its values, the other float types from their bytes. */
static int init_nonfinite(const eg_tensor *t) {
    int64_t numel = eg_shape_numel(&t->shape);
    for (int64_t i = 0; t->data && i < numel; i++)
        if (!isfinite(t->data[i])) return 1;
    uint64_t mask = t->dtype == EG_DT_FLOAT16    ? 0x7C00
                    : t->dtype == EG_DT_BFLOAT16 ? 0x7F80
                    : t->dtype == EG_DT_DOUBLE   ? 0x7FF0000000000000u
                                                 : 0;
    size_t w = t->dtype == EG_DT_DOUBLE ? 8 : 2;
    for (size_t i = 0; mask && t->raw && i + w <= t->raw_len; i += w) {
        uint64_t v = 0;
        for (size_t b = 0; b < w; b++) v |= (uint64_t)t->raw[i + b] << (8 * b);
        if ((v & mask) == mask) return 1;
    }
    return 0;
}

eg_status eg_mark_nonfinite(eg_graph *g) {
    eg_range *r = malloc(sizeof *r * (size_t)(g->n_tensors ? g->n_tensors : 1));
    if (!r) return EG_ENOMEM;
    eg_ranges(g, r);
    for (int t = 0; t < g->n_tensors; t++) {
        eg_tensor *x = &g->tensor[t];
        x->flags &= ~EG_TF_NONFINITE;
        if ((x->flags & EG_TF_INIT) && !(x->flags & EG_TF_INPUT) && init_nonfinite(x))
            x->flags |= EG_TF_NONFINITE;
    }
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        unsigned f = makes_nonfinite(g, n, r) ? EG_TF_NONFINITE : 0;
        for (int k = 0; k < n->n_in + n->n_implicit; k++)
            if (n->in[k] >= 0 && n->in[k] < g->n_tensors) f |= g->tensor[n->in[k]].flags & EG_TF_NONFINITE;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0 && !int_dtype(g->tensor[n->out[k]].dtype)) g->tensor[n->out[k]].flags |= f;
    }
    free(r);
    return EG_OK;
}
