/* fkern.c - float32 reference kernels: every opspecs operator with the
 * conventions of ops.h (opspecs/kern.h's loops, the ones sem.c runs over
 * residues, instantiated over floats), and every model operator with
 * ONNX's meaning, built from the same loops (a Conv is conv2d's kernel
 * with its own pads and strides, Gemm and a batched MatMul are matmul with
 * strides, a Split is split0's slice). Plain loops, no allocation. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fold/fold.h"

/* The float instance of opspecs/kern.h: sums of products in double. */
#define KN(name) kf_##name
#define KT float
#define KACC double
#define K_ZERO_ACC 0.0
#define K_MAC(acc, a, b) ((acc) + (double)(a) * (b))
#define K_FOLD_EVERY INT32_MAX
#define K_FOLD(acc) (acc)
#define K_OUT(acc) ((float)(acc))
#define K_AVG(acc, n, r) ((void)(r), (float)((acc) / (double)(n)))
#define K_CELL(op, a) ops_cell_table[op].fcell(a)
#define K_CELL2(op, a, b) ops_cell_table[op].fcell2(a, b)
#define K_ROW(op, x, y, n, stride, p) ops_cell_table[op].frow(x, y, n, stride, p)
#define K_MAX(a, b) ((a) > (b) ? (a) : (b))
#define K_RELU(a) ((a) > 0 ? (a) : 0.0f)
#define K_ZERO 0.0f
#define K_ONE 1.0f
#define K_RECIP(n) (1.0f / (float)(n))
#include "kern.h"

/* A row-major tensor as [outer, dim[axis] * inner] blocks. */
static void f_blocks(const eg_shape *s, int axis, int64_t *outer, int64_t *inner) {
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= s->dim[i];
    for (int i = axis + 1; i < s->rank; i++) *inner *= s->dim[i];
}

eg_status eg_fkern_eval(ops_op op, const int32_t *param, const ten_shape *in_shape,
                        const float *const *in, float *out, char *err, size_t errlen) {
    ten_shape os;
    char oerr[OPS_ERRLEN];
    if (op >= OP_COUNT || ops_infer_shape(op, param, in_shape, &os, oerr) != OPS_OK) {
        if (err && errlen) snprintf(err, errlen, "%s", op < OP_COUNT ? oerr : "unknown operator");
        return EG_ESHAPE;
    }
    kf_ops(op, param, in_shape, &os, in, out);
    return EG_OK;
}

/* ================= model operators ================= */

/* Row-major strides of s. */
static void strides_of(const eg_shape *s, int64_t *st) {
    int64_t acc = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= s->dim[i];
    }
}

/* Steps through s (in units of `unit` floats) per index of each dim of os,
 * s aligned to os's last dims (numpy broadcasting): a dim s lacks or has
 * size 1 steps 0. */
static void bcast_steps(const eg_shape *s, const eg_shape *os, int64_t unit, int64_t *step) {
    int64_t st[EG_MAX_RANK];
    strides_of(s, st);
    for (int d = 0; d < os->rank; d++) {
        int ds = d - (os->rank - s->rank);
        step[d] = ds >= 0 && s->dim[ds] != 1 ? st[ds] * unit : 0;
    }
}

/* Advance the row-major multi-index idx over shape s by one. */
static void odo_next(int64_t *idx, const eg_shape *s) {
    for (int d = s->rank - 1; d >= 0 && ++idx[d] == s->dim[d]; d--) idx[d] = 0;
}

static int64_t dot_idx(const int64_t *idx, const int64_t *step, int rank) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off += idx[d] * step[d];
    return off;
}

/* Transpose: output index i (digits over the output dims) reads input
 * position sum of digit[d] * in_stride[perm[d]]. */
static void m_transpose(const eg_shape *xs, const eg_attrs *a, const float *x, const eg_shape *os,
                        float *out) {
    int64_t ist[EG_MAX_RANK], step[EG_MAX_RANK], idx[EG_MAX_RANK] = {0}, n = eg_shape_numel(os);
    int r = xs->rank;
    strides_of(xs, ist);
    for (int d = 0; d < r; d++) step[d] = ist[a->flags & EG_AF_INTS ? a->ints[d] : r - 1 - d];
    for (int64_t i = 0; i < n; i++, odo_next(idx, os)) out[i] = x[dot_idx(idx, step, r)];
}

/* Numpy-broadcast out = a * b (Mul), a / b (Div) or a + beta * b (Add). out may be a when a
 * has the output's shape (each a[i] is read before out[i] is written). */
static void m_binary(eg_mop op, float beta, const eg_shape *as, const eg_shape *bs, const float *a,
                     const float *b, const eg_shape *os, float *out) {
    int64_t sa[EG_MAX_RANK], sb[EG_MAX_RANK], idx[EG_MAX_RANK] = {0}, n = eg_shape_numel(os);
    bcast_steps(as, os, 1, sa);
    bcast_steps(bs, os, 1, sb);
    for (int64_t i = 0; i < n; i++, odo_next(idx, os)) {
        float x = a[dot_idx(idx, sa, os->rank)], y = b[dot_idx(idx, sb, os->rank)];
        out[i] = op == EG_MOP_MUL ? x * y : op == EG_MOP_DIV ? x / y : x + beta * y;
    }
}

/* An NCHW model shape as an opspecs one (the conv and pool loops index
 * with int32 dims). @return 1, or 0 when it does not fit. */
static int as_ten4(const eg_shape *s, ten_shape *t) {
    return s->rank == 4 && eg_to_ten_shape(s, t);
}

/* Conv (X, W [, B]) with explicit begin pads and per-dim strides. */
static int m_conv(const eg_attrs *a, const eg_shape *const *s, const float *const *in,
                  const eg_shape *os, float *out) {
    ten_shape ts[2], tos;
    if (!as_ten4(s[0], &ts[0]) || !as_ten4(s[1], &ts[1]) || !as_ten4(os, &tos)) return 0;
    ops_win h = {ts[0].dim[2], ts[1].dim[2], a->stride[0], a->pad[0], 1};
    ops_win v = {ts[0].dim[3], ts[1].dim[3], a->stride[1], a->pad[1], 1};
    kf_conv(ts[0].dim, ts[1].dim, tos.dim, &h, &v, a->group, 0, in[0], in[1], out);
    if (!in[2]) return 1;
    int64_t plane = os->dim[2] * os->dim[3];
    for (int64_t i = 0; i < eg_shape_numel(os); i++) out[i] += in[2][i / plane % os->dim[1]];
    return 1;
}

static int m_pool(eg_mop mop, const eg_attrs *a, const eg_shape *xs, const float *x,
                  const eg_shape *os, float *out) {
    ten_shape txs, tos;
    if (!as_ten4(xs, &txs) || !as_ten4(os, &tos)) return 0;
    ops_win h = {txs.dim[2], a->kernel[0], a->stride[0], a->pad[0], 1};
    ops_win v = {txs.dim[3], a->kernel[1], a->stride[1], a->pad[1], 1};
    kf_pool(mop == EG_MOP_AVGPOOL, (a->flags & EG_AF_COUNT_PAD) != 0, txs.dim, tos.dim, &h, &v,
            x, out);
    return 1;
}

static void m_global_avg(const eg_shape *xs, const float *x, float *out) {
    int64_t planes = xs->dim[0] * xs->dim[1], psize = eg_shape_numel(xs) / (planes ? planes : 1);
    for (int64_t p = 0; p < planes; p++) {
        double sum = 0;
        for (int64_t i = 0; i < psize; i++) sum += x[p * psize + i];
        out[p] = (float)(sum / (double)psize);
    }
}

/* Gemm: alpha * A' B' + beta * C, C broadcast to [M, N]. */
static void m_gemm(const eg_attrs *a, const eg_shape *const *s, const float *const *in,
                   const eg_shape *os, float *out) {
    int ta = (a->flags & EG_AF_TRANS_A) != 0, tb = (a->flags & EG_AF_TRANS_B) != 0;
    int64_t m = os->dim[0], n = os->dim[1], k = s[0]->dim[ta ? 0 : 1];
    kf_gemm(m, k, n, in[0], ta ? 1 : k, ta ? m : 1, in[1], tb ? 1 : n, tb ? k : 1, out);
    for (int64_t i = 0; i < m * n; i++) out[i] *= a->alpha;
    if (in[2]) m_binary(EG_MOP_ADD, a->beta, os, s[2], out, in[2], os, out);
}

/* numpy matmul: one kf_gemm per index of the output's batch dims, each
 * operand's batch dims broadcast; a rank-1 operand is a row (A) or a
 * column (B) whose unit dim the output lacks. */
static void m_matmul(const eg_shape *as, const eg_shape *bs, const float *a, const float *b,
                     const eg_shape *os, float *out) {
    int64_t m = as->rank > 1 ? as->dim[as->rank - 2] : 1, k = as->dim[as->rank - 1];
    int64_t n = bs->rank > 1 ? bs->dim[bs->rank - 1] : 1;
    eg_shape ba = *as, bb = *bs, ob = *os;
    ba.rank = as->rank > 2 ? as->rank - 2 : 0;
    bb.rank = bs->rank > 2 ? bs->rank - 2 : 0;
    ob.rank = os->rank - (as->rank > 1) - (bs->rank > 1);
    int64_t sa[EG_MAX_RANK], sb[EG_MAX_RANK], idx[EG_MAX_RANK] = {0}, nb = eg_shape_numel(&ob);
    bcast_steps(&ba, &ob, m * k, sa);
    bcast_steps(&bb, &ob, k * n, sb);
    for (int64_t i = 0; i < nb; i++, odo_next(idx, &ob))
        kf_gemm(m, k, n, a + dot_idx(idx, sa, ob.rank), k, 1, b + dot_idx(idx, sb, ob.rank), n, 1,
               out + i * m * n);
}

static void m_unary(eg_mop mop, int64_t n, const float *x, float *out) {
    for (int64_t i = 0; mop == EG_MOP_RELU && i < n; i++) out[i] = K_RELU(x[i]);
    for (int64_t i = 0; mop == EG_MOP_SIGMOID && i < n; i++) out[i] = 1.0f / (1.0f + expf(-x[i]));
    for (int64_t i = 0; mop == EG_MOP_TANH && i < n; i++) out[i] = tanhf(x[i]);
}

static int norm_axis(int64_t axis, int rank) { return (int)(axis < 0 ? axis + rank : axis); }

static void m_concat(const eg_node *nd, const eg_shape *const *s, const float *const *in,
                     float *out) {
    int64_t outer, inner, blk[EG_MAX_INTS];
    int axis = norm_axis(nd->attr.axis, s[0]->rank);
    f_blocks(s[0], axis, &outer, &inner);
    for (int k = 0; k < nd->n_in; k++) blk[k] = s[k]->dim[axis] * inner;
    kf_concat(nd->n_in, outer, blk, in, out);
}

/* Split: output k is the slice after outputs 0..k-1 along the axis, its
 * size that output's shape's (an omitted output still takes its room). */
static void m_split(const eg_graph *g, const eg_node *nd, const eg_shape *xs, const float *x,
                    float *const *out) {
    int64_t outer, inner, skip = 0;
    int axis = norm_axis(nd->attr.axis, xs->rank);
    f_blocks(xs, axis, &outer, &inner);
    for (int k = 0; k < nd->n_out; k++) {
        int64_t size = g->tensor[nd->out[k]].shape.dim[axis] * inner;
        if (out[k]) kf_slice(outer, xs->dim[axis] * inner, skip, size, x, out[k]);
        skip += size;
    }
}

/* Inference BatchNormalization over dim 1: (x - mean) / sqrt(var + eps)
 * * scale + B. */
static void m_batchnorm(const eg_attrs *a, const eg_shape *xs, const float *const *in,
                        float *out) {
    int64_t outer, inner, c = xs->dim[1];
    f_blocks(xs, 1, &outer, &inner);
    for (int64_t i = 0; i < outer * c; i++) {
        int64_t ch = i % c;
        double s = in[1][ch] / sqrt((double)in[4][ch] + a->epsilon);
        for (int64_t j = 0; j < inner; j++)
            out[i * inner + j] = (float)((in[0][i * inner + j] - in[3][ch]) * s + in[2][ch]);
    }
}

/* Softmax along the axis (infer.c admits an opset < 13 node only when the
 * axis is the last, where the flattening meaning is the same). */
static void m_softmax(const eg_attrs *a, const eg_shape *xs, const float *x, float *out) {
    int64_t outer, inner;
    int axis = norm_axis(a->axis, xs->rank);
    f_blocks(xs, axis, &outer, &inner);
    int64_t d = xs->dim[axis];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const float *xr = x + o * d * inner + j;
            float *yr = out + o * d * inner + j, mx = xr[0];
            double sum = 0;
            for (int64_t t = 1; t < d; t++) mx = xr[t * inner] > mx ? xr[t * inner] : mx;
            for (int64_t t = 0; t < d; t++) sum += exp((double)xr[t * inner] - mx);
            for (int64_t t = 0; t < d; t++) yr[t * inner] = (float)(exp((double)xr[t * inner] - mx) / sum);
        }
}

/* LayerNormalization: each contiguous block of the normalised axes is a row
 * of opspecs' layernorm kernel, then Scale and B cell by cell (infer.c
 * admits them only in the normalised shape). */
static void m_layernorm(const eg_attrs *a, const eg_shape *xs, const float *const *in, int has_b,
                        float *out) {
    int axis = norm_axis(a->axis, xs->rank);
    int64_t outer, d;
    f_blocks(xs, axis, &outer, &d);
    d *= xs->dim[axis];
    int32_t p[OPS_MAX_PARAMS] = {0, ops_eps_param(a->epsilon), 0, 0};
    for (int64_t o = 0; o < outer; o++) {
        float *y = out + o * d;
        ops_cell_table[OP_LAYERNORM].frow(in[0] + o * d, y, d, 1, p);
        for (int64_t i = 0; i < d; i++) y[i] = y[i] * in[1][i] + (has_b ? in[2][i] : 0.0f);
    }
}

/* The model kernels, one output each except Split. @return 1 when
 * written, 0 when a shape does not fit the loops (an NCHW dim over the
 * opspecs limits). */
static int model_eval(const eg_graph *g, const eg_node *nd, const eg_shape *const *s,
                      const float *const *in, float *const *out) {
    const eg_shape *os = &g->tensor[nd->out[0]].shape;
    const eg_attrs *a = &nd->attr;
    int64_t numel = eg_shape_numel(os);
    switch (nd->mop) {
    case EG_MOP_IDENTITY:
    case EG_MOP_RESHAPE:
    case EG_MOP_FLATTEN: memcpy(out[0], in[0], sizeof *out[0] * (size_t)numel); return 1;
    case EG_MOP_TRANSPOSE: m_transpose(s[0], a, in[0], os, out[0]); return 1;
    case EG_MOP_ADD:
    case EG_MOP_MUL:
    case EG_MOP_DIV: m_binary(nd->mop, 1.0f, s[0], s[1], in[0], in[1], os, out[0]); return 1;
    case EG_MOP_SUM: /* lowered on import; kept for completeness */
        memset(out[0], 0, sizeof *out[0] * (size_t)numel);
        for (int k = 0; k < nd->n_in; k++) m_binary(EG_MOP_ADD, 1.0f, os, s[k], out[0], in[k], os, out[0]);
        return 1;
    case EG_MOP_CONV: return m_conv(a, s, in, os, out[0]);
    case EG_MOP_MAXPOOL:
    case EG_MOP_AVGPOOL: return m_pool(nd->mop, a, s[0], in[0], os, out[0]);
    case EG_MOP_GLOBALAVGPOOL: m_global_avg(s[0], in[0], out[0]); return 1;
    case EG_MOP_GEMM: m_gemm(a, s, in, os, out[0]); return 1;
    case EG_MOP_MATMUL: m_matmul(s[0], s[1], in[0], in[1], os, out[0]); return 1;
    case EG_MOP_RELU:
    case EG_MOP_SIGMOID:
    case EG_MOP_TANH: m_unary(nd->mop, numel, in[0], out[0]); return 1;
    case EG_MOP_CONCAT: m_concat(nd, s, in, out[0]); return 1;
    case EG_MOP_SPLIT: m_split(g, nd, s[0], in[0], out); return 1;
    case EG_MOP_BATCHNORM: m_batchnorm(a, s[0], in, out[0]); return 1;
    case EG_MOP_SOFTMAX: m_softmax(a, s[0], in[0], out[0]); return 1;
    case EG_MOP_LAYERNORM: m_layernorm(a, s[0], in, nd->n_in > 2 && nd->in[2] >= 0, out[0]); return 1;
    case EG_MOP_COUNT: break;
    }
    return 0;
}

/* ================= one node of a graph ================= */

/* Input k's float data must be there: every input of a model operator but
 * Reshape's shape and Split's sizes (read from the graph's shapes), and
 * every input of an opspecs operator but a constant operator's reference. */
static int needs_data(const eg_node *n, int k) {
    if (n->in[k] < 0) return 0;
    if (n->kind == EG_KIND_OPS) return !(ops_table[n->op].flags & OPF_CONST);
    return !((n->mop == EG_MOP_RESHAPE || n->mop == EG_MOP_SPLIT) && k == 1);
}

/* Shapes of the inputs (known) and outputs (known), data where needed. */
static eg_status node_ready(const eg_graph *g, const eg_node *n, const float *const *in,
                            float *const *out, const eg_shape **s, char *err, size_t errlen) {
    char buf[160];
    if (n->n_in > EG_MAX_INTS) return eg_node_errf(err, errlen, EG_EUNSUPPORTED, n, "more than %d inputs", EG_MAX_INTS);
    for (int k = 0; k < n->n_in; k++) {
        const eg_tensor *t = n->in[k] >= 0 ? &g->tensor[n->in[k]] : NULL;
        s[k] = t ? &t->shape : NULL;
        if (!t || !needs_data(n, k)) continue;
        if (!eg_shape_known(&t->shape))
            return eg_node_errf(err, errlen, EG_EUNSUPPORTED, n, "input '%s' has shape %s", t->name, eg_shape_str(&t->shape, t->dim_name, buf, sizeof buf));
        if (!in[k]) return eg_node_errf(err, errlen, EG_EUNSUPPORTED, n, "input '%s' has no float value", t->name);
    }
    for (int k = 0; k < n->n_out; k++) {
        const eg_tensor *t = n->out[k] >= 0 ? &g->tensor[n->out[k]] : NULL;
        if (!t) return eg_node_errf(err, errlen, EG_EUNSUPPORTED, n, "output %d is omitted", k); /* a Split's size */
        if (!eg_shape_known(&t->shape))
            return eg_node_errf(err, errlen, EG_EUNSUPPORTED, n, "output '%s' has shape %s", t->name, eg_shape_str(&t->shape, t->dim_name, buf, sizeof buf));
        if (!out[k]) return eg_node_errf(err, errlen, EG_EUNSUPPORTED, n, "no room for output '%s'", t->name);
    }
    return EG_OK;
}

static eg_status ops_node_eval(const eg_graph *g, const eg_node *n, const float *const *in,
                               float *out, char *err, size_t errlen) {
    ten_shape ts[OPS_MAX_ARITY];
    for (int k = 0; k < ops_table[n->op].arity; k++)
        if (!eg_to_ten_shape(&g->tensor[n->in[k]].shape, &ts[k]))
            return eg_node_errf(err, errlen, EG_EUNSUPPORTED, n, "input %d is not an opspecs shape", k);
    return eg_fkern_eval(n->op, n->param, ts, in, out, err, errlen);
}

eg_status eg_fkern_node(const eg_graph *g, const eg_node *n, const float *const *in,
                        float *const *out, char *err, size_t errlen) {
    const eg_shape *s[EG_MAX_INTS] = {0};
    const float *din[EG_MAX_INTS] = {0}; /* NULL past n_in: a Conv's absent bias */
    if (n->kind != EG_KIND_OPS && n->kind != EG_KIND_MODEL)
        return eg_node_errf(err, errlen, EG_EUNSUPPORTED, n, "an opaque operator has no kernel");
    if (n->n_out < 1) return eg_node_errf(err, errlen, EG_EUNSUPPORTED, n, "no output");
    eg_status rc = node_ready(g, n, in, out, s, err, errlen);
    if (rc != EG_OK) return rc;
    for (int k = 0; k < n->n_in; k++) din[k] = n->in[k] >= 0 ? in[k] : NULL;
    if (n->kind == EG_KIND_OPS) return ops_node_eval(g, n, din, out[0], err, errlen);
    if (!model_eval(g, n, s, din, out))
        return eg_node_errf(err, errlen, EG_EUNSUPPORTED, n, "a dim is over the kernels' limits");
    return EG_OK;
}

int eg_fkern_model(const eg_graph *g, const eg_node *n, const float *const *in, float *out) {
    if (n->kind != EG_KIND_MODEL || n->n_out != 1) return 0;
    switch (n->mop) {
    case EG_MOP_IDENTITY:
    case EG_MOP_RESHAPE:
    case EG_MOP_FLATTEN:
    case EG_MOP_TRANSPOSE:
    case EG_MOP_ADD:
    case EG_MOP_MUL:
    case EG_MOP_DIV: break;
    case EG_MOP_CONV:
    case EG_MOP_MAXPOOL:
    case EG_MOP_AVGPOOL:
    case EG_MOP_GLOBALAVGPOOL:
    case EG_MOP_SUM:
    case EG_MOP_GEMM:
    case EG_MOP_MATMUL:
    case EG_MOP_RELU:
    case EG_MOP_SIGMOID:
    case EG_MOP_TANH:
    case EG_MOP_CONCAT:
    case EG_MOP_SPLIT:
    case EG_MOP_BATCHNORM:
    case EG_MOP_SOFTMAX:
    case EG_MOP_LAYERNORM:
    case EG_MOP_COUNT: return 0; /* left to run time */
    }
    float *const outs[1] = {out};
    return eg_fkern_node(g, n, in, outs, NULL, 0) == EG_OK;
}
