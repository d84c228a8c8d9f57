/* kernel.c - a node reduced to a kernel descriptor with its flops and
 * bytes (one switch per operator enum, no default), and the analytic
 * roofline that prices it (kernel.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "cost/cost_impl.h"
#include "cost/kernel.h"
#include "cost/cost_calib.h"
#include "win.h"

/* ================= node -> kernel ================= */

/* Tensor t's shape with every unknown dim taken as 1 (a symbolic batch
 * "N" is costed at batch 1) into buf.
 * @return buf, or NULL when t is -1 or its rank is unknown. */
static const eg_shape *shape_of(const eg_graph *g, int t, eg_shape *buf) {
    if (t < 0 || t >= g->n_tensors || g->tensor[t].shape.rank < 0) return NULL;
    *buf = g->tensor[t].shape;
    if (buf->rank > EG_MAX_RANK) return NULL;
    for (int i = 0; i < buf->rank; i++)
        if (buf->dim[i] < 0) buf->dim[i] = 1;
    return buf;
}

static int64_t dim(const eg_graph *g, int t, int i) {
    eg_shape buf;
    const eg_shape *s = shape_of(g, t, &buf);
    return s && i < s->rank ? s->dim[i] : -1;
}

/* @return the bytes of tensor t, with *elems its elements (-1: the rank
 *         is unknown, -2: too many). */
static double tensor_bytes(const eg_graph *g, int t, int64_t *elems) {
    eg_shape buf;
    const eg_shape *s = shape_of(g, t, &buf);
    int64_t n = s ? eg_shape_numel(s) : -1;
    size_t sz = eg_dtype_size(g->tensor[t].dtype);
    *elems = n;
    return (double)n * (double)(sz ? sz : 4);
}

/* Bytes and element counts of every input and output.
 * @return 1, or 0 when a shape is unknown. */
static int count_io(const eg_graph *g, const eg_node *n, eg_cost_kern *k) {
    double bytes = 0;
    int64_t e, in = 0, out = 0;
    for (int j = 0; j < n->n_in + n->n_out; j++) {
        int t = j < n->n_in ? n->in[j] : n->out[j - n->n_in];
        if (t < 0 || t >= g->n_tensors) continue;
        bytes += tensor_bytes(g, t, &e);
        if (e < 0) return 0;
        if (j < n->n_in) in += e;
        else out += e;
    }
    k->bytes = bytes, k->in_elems = in, k->out_elems = out;
    return n->n_out > 0 && n->out[0] >= 0;
}

static int64_t max1(int64_t v) { return v < 1 ? 1 : v; }

/* Spatial geometry of a conv or pool from x [n,c,h,w] and y [n,o,oh,ow];
 * the far pads are what makes the output size come out. @return 1 or 0 */
static int spatial(const eg_graph *g, int x, int y, eg_cost_kern *k) {
    eg_shape xb, yb;
    const eg_shape *xs = shape_of(g, x, &xb), *ys = shape_of(g, y, &yb);
    if (!xs || !ys || xs->rank != 4 || ys->rank != 4) return 0;
    k->n = xs->dim[0], k->c = xs->dim[1], k->h = xs->dim[2], k->w = xs->dim[3];
    k->o = ys->dim[1], k->oh = ys->dim[2], k->ow = ys->dim[3];
    k->sh = max1(k->sh), k->sw = max1(k->sw), k->kh = max1(k->kh), k->kw = max1(k->kw);
    /* in double: a hand-built graph may hold any dims */
    double pb = (double)(k->oh - 1) * (double)k->sh + (double)(k->kh - k->h - k->pt);
    double pr = (double)(k->ow - 1) * (double)k->sw + (double)(k->kw - k->w - k->pl);
    k->pb = pb < 0 ? 0 : pb > INT32_MAX ? INT32_MAX : (int64_t)pb;
    k->pr = pr < 0 ? 0 : pr > INT32_MAX ? INT32_MAX : (int64_t)pr;
    return 1;
}

static void conv_flops(eg_cost_kern *k) {
    k->cls = EG_KC_CONV;
    k->group = max1(k->group);
    k->flops = 2.0 * (double)k->n * (double)k->o * (double)k->oh * (double)k->ow *
               (double)(k->c / k->group) * (double)k->kh * (double)k->kw;
    if (k->bias) k->flops += (double)k->out_elems;
}

static void ewise(eg_cost_kern *k, eg_cost_ew ew, double per_elem) {
    k->cls = EG_KC_EWISE, k->ew = ew;
    k->flops = per_elem * (double)k->out_elems;
}

/* The runtime loop an element-wise operator is timed as: its ONNX kernel
 * when the backend has one, else relu's loop for a cheap cell (flops 1)
 * and sigmoid's for a transcendental one (they cost alike). */
static eg_cost_ew runtime_ew(ops_op op) {
    const char *onnx = ops_table[op].onnx;
    if (ops_table[op].form == OPS_FORM_SCALE) return EG_EW_SCALE;
    if (strcmp(onnx, "Add") == 0) return EG_EW_ADD;
    if (strcmp(onnx, "Mul") == 0) return EG_EW_MUL;
    if (strcmp(onnx, "Tanh") == 0) return EG_EW_TANH;
    return ops_table[op].flops > 1 ? EG_EW_SIGMOID : EG_EW_RELU;
}

/* numpy-style MatMul: batch x [m,k] x [k,n] from the input ranks. */
static int kern_matmul(const eg_graph *g, const eg_node *n, eg_cost_kern *k) {
    eg_shape ab, bb;
    const eg_shape *a = shape_of(g, n->in[0], &ab), *b = shape_of(g, n->in[1], &bb);
    if (!a || !b || a->rank < 1 || b->rank < 1) return 0;
    k->cls = EG_KC_GEMM;
    k->k = a->dim[a->rank - 1];
    k->m = a->rank >= 2 ? a->dim[a->rank - 2] : 1;
    k->nn = b->rank >= 2 ? b->dim[b->rank - 1] : 1;
    k->batch = k->out_elems / max1(k->m * k->nn);
    k->flops = 2.0 * (double)k->batch * (double)k->m * (double)k->nn * (double)k->k;
    return 1;
}

/* A permutation of x's axes: a transpose of [rest, last dim] blocks. */
/* 1 when perm (output axis a is input axis perm[a], rank r, of input
 * shape s) moves three blocks or more: axes of size 1 dropped, axes that
 * stay neighbours merged into blocks, a block that keeps its place at
 * either end left out, more than two blocks remain. 0321 reverses three
 * (onnxruntime's slow path, 20x the time per byte); 0132, 0213 and 0231
 * swap two (a batched 2-D transpose or a copy of rows). */
static int perm_general(const eg_shape *s, const int *perm, int r) {
    int kept[EG_MAX_RANK], q[EG_MAX_RANK], start[EG_MAX_RANK], n = 0, m = 0;
    for (int a = 0; a < r && a < EG_MAX_RANK; a++)
        if (perm[a] >= 0 && perm[a] < s->rank && s->dim[perm[a]] != 1) kept[n++] = perm[a];
    for (int i = 0; i < n; i++) { /* renumbered 0..n-1 by input position */
        q[i] = 0;
        for (int j = 0; j < n; j++) q[i] += kept[j] < kept[i];
    }
    for (int i = 0; i < n; i++)
        if (i == 0 || q[i] != q[i - 1] + 1) start[m++] = q[i];
    int lo = 0, hi = m; /* blocks by rank of their start: fixed ones at the ends */
    for (int j = 0; j < m; j++) {
        int rank = 0;
        for (int i = 0; i < m; i++) rank += start[i] < start[j];
        q[j] = rank;
    }
    while (lo < hi && q[lo] == lo) lo++;
    while (hi > lo && q[hi - 1] == hi - 1) hi--;
    return hi - lo > 2;
}

static int kern_permute(const eg_graph *g, int x, const int *perm, int r, eg_cost_kern *k) {
    eg_shape sb;
    const eg_shape *s = shape_of(g, x, &sb);
    if (!s || s->rank < 1) return 0;
    k->cls = EG_KC_TRANS, k->batch = 1, k->nn = s->dim[s->rank - 1];
    k->m = k->out_elems / max1(k->nn);
    k->general = perm && perm_general(s, perm, r);
    return 1;
}

/* 1 when a row operator along axis of x is written with its axis moved
 * last and back (onnx_out.c: ONNX's LayerNormalization, and its Softmax
 * before opset 13, take every dim from the axis on, and some after this
 * one are not 1): its traffic is then three times its own, the two
 * Transposes'. */
static int row_transposed(const eg_graph *g, int x, int axis) {
    const eg_shape *s = x >= 0 ? &g->tensor[x].shape : NULL;
    for (int k = axis + 1; s && k < s->rank; k++)
        if (s->dim[k] != 1) return 1;
    return 0;
}

/* opspecs operators, per form. @return 1, or 0 for shapes the formulas
 * cannot use. */
static int kern_ops(const eg_graph *g, const eg_node *n, eg_cost_kern *k) {
    const int32_t *p = n->param;
    int x = n->in[0], y = n->out[0];
    switch (ops_table[n->op].form) {
    case OPS_FORM_MATMUL:
        k->cls = EG_KC_GEMM, k->batch = 1;
        k->m = dim(g, x, 0), k->k = dim(g, x, 1), k->nn = dim(g, n->in[1], 1);
        k->flops = 2.0 * (double)k->m * (double)k->nn * (double)k->k;
        return 1;
    case OPS_FORM_BMM:
    case OPS_FORM_LINEAR: return kern_matmul(g, n, k);
    case OPS_FORM_CONV:
        k->sh = k->sw = p[0], k->group = p[3];
        k->kh = dim(g, n->in[1], 2), k->kw = dim(g, n->in[1], 3);
        k->pt = ops_pad_begin(k->kh, p[1]), k->pl = ops_pad_begin(k->kw, p[1]);
        if (!spatial(g, x, y, k)) return 0;
        conv_flops(k); /* a fused RELU (p[2]) is free */
        return 1;
    case OPS_FORM_MAP:
    case OPS_FORM_ZIP:
    case OPS_FORM_SCALE:
    case OPS_FORM_CHANNEL: ewise(k, runtime_ew(n->op), ops_table[n->op].flops); return 1;
    case OPS_FORM_ROW:
        ewise(k, runtime_ew(n->op), ops_table[n->op].flops);
        if ((n->op == OP_LAYERNORM || g->opset < 13) && row_transposed(g, x, p[0])) k->bytes *= 3, k->extra = 2;
        return 1;
    case OPS_FORM_POOL:
        k->cls = EG_KC_POOL, k->avg = n->op == OP_AVGPOOL;
        k->kh = OPS_KERNEL_H(p[0]), k->kw = OPS_KERNEL_W(p[0]), k->sh = k->sw = p[1];
        k->pt = ops_pad_begin(k->kh, p[2]), k->pl = ops_pad_begin(k->kw, p[2]);
        if (!spatial(g, x, y, k)) return 0;
        k->flops = (double)k->out_elems * (double)(k->kh * k->kw);
        return 1;
    case OPS_FORM_CONCAT:
    case OPS_FORM_ENLARGE: k->cls = EG_KC_MOVE; return 1;
    case OPS_FORM_SPLIT: k->cls = EG_KC_VIEW; return 1;
    case OPS_FORM_HEADS: k->cls = EG_KC_FREE; return 1; /* a Reshape: runtimes alias it */
    case OPS_FORM_TRANSPOSE:
        k->cls = EG_KC_TRANS, k->batch = 1, k->m = dim(g, x, 0), k->nn = dim(g, x, 1);
        return 1;
    case OPS_FORM_PERMUTE: {
        int perm[EG_MAX_RANK], r = OPS_PERM_RANK(p[0]);
        for (int a = 0; a < r && a < EG_MAX_RANK; a++) perm[a] = OPS_PERM_AT(p[0], a);
        return kern_permute(g, x, perm, r < EG_MAX_RANK ? r : EG_MAX_RANK, k);
    }
    case OPS_FORM_IMM:
    case OPS_FORM_CKERNEL:
    case OPS_FORM_ONES: k->cls = EG_KC_FREE; return 1;
    case OPS_FORM_KMUL: /* [O,M] x [M,I]; on weights only, folded before it runs */
        k->cls = EG_KC_GEMM, k->batch = 1;
        k->m = dim(g, x, 0), k->k = dim(g, x, 1), k->nn = max1(k->out_elems / max1(k->m));
        k->flops = 2.0 * (double)k->m * (double)k->nn * (double)k->k;
        return 1;
    case OPS_FORM_COUNT: return 0;
    }
    return 0;
}

static int kern_gemm(const eg_graph *g, const eg_node *n, eg_cost_kern *k) {
    int ta = (n->attr.flags & EG_AF_TRANS_A) != 0;
    k->cls = EG_KC_GEMM, k->batch = 1;
    k->ta = ta, k->tb = (n->attr.flags & EG_AF_TRANS_B) != 0;
    k->m = dim(g, n->in[0], ta), k->k = dim(g, n->in[0], !ta);
    k->nn = dim(g, n->out[0], 1);
    k->flops = 2.0 * (double)k->m * (double)k->nn * (double)k->k;
    if (n->n_in > 2 && n->in[2] >= 0) k->flops += 2.0 * (double)k->out_elems;
    return k->m > 0 && k->k > 0 && k->nn > 0;
}

static int kern_model(const eg_graph *g, const eg_node *n, eg_cost_kern *k) {
    const eg_attrs *a = &n->attr;
    int x = n->in[0], y = n->out[0];
    int64_t d1 = dim(g, x, 1);
    switch (n->mop) {
    case EG_MOP_CONV:
        k->kh = dim(g, n->in[1], 2), k->kw = dim(g, n->in[1], 3);
        k->sh = a->stride[0], k->sw = a->stride[1], k->group = a->group;
        k->pt = a->pad[0], k->pl = a->pad[1];
        k->bias = n->n_in > 2 && n->in[2] >= 0;
        if (!spatial(g, x, y, k)) return 0;
        conv_flops(k);
        return 1;
    case EG_MOP_MAXPOOL:
    case EG_MOP_AVGPOOL:
        k->cls = EG_KC_POOL;
        if (n->mop == EG_MOP_AVGPOOL) k->avg = (a->flags & EG_AF_COUNT_PAD) ? 1 : 2;
        k->kh = a->kernel[0], k->kw = a->kernel[1], k->sh = a->stride[0], k->sw = a->stride[1];
        k->pt = a->pad[0], k->pl = a->pad[1];
        if (!spatial(g, x, y, k)) return 0;
        k->flops = (double)k->out_elems * (double)(k->kh * k->kw);
        return 1;
    case EG_MOP_GLOBALAVGPOOL:
        ewise(k, EG_EW_GAP, 0);
        k->inner = k->in_elems / max1(dim(g, x, 0) * d1);
        k->flops = (double)k->in_elems;
        return 1;
    case EG_MOP_GEMM: return kern_gemm(g, n, k);
    case EG_MOP_MATMUL: return kern_matmul(g, n, k);
    case EG_MOP_ADD:
    case EG_MOP_SUM: ewise(k, EG_EW_ADD, 1); return 1;
    case EG_MOP_MUL:
    case EG_MOP_DIV: ewise(k, EG_EW_MUL, 1); return 1;
    case EG_MOP_RELU: ewise(k, EG_EW_RELU, 1); return 1;
    case EG_MOP_SIGMOID: ewise(k, EG_EW_SIGMOID, 4); return 1;
    case EG_MOP_TANH: ewise(k, EG_EW_TANH, 4); return 1;
    case EG_MOP_CONCAT:
    case EG_MOP_SPLIT: k->cls = EG_KC_MOVE; return 1;
    case EG_MOP_RESHAPE: /* a new shape on the same buffer: runtimes alias it */
    case EG_MOP_FLATTEN:
    case EG_MOP_IDENTITY: k->cls = EG_KC_FREE; return 1;
    case EG_MOP_TRANSPOSE: {
        int perm[EG_MAX_RANK], r = x >= 0 ? g->tensor[x].shape.rank : 0;
        if (r < 0 || r > EG_MAX_RANK) r = 0;
        for (int d = 0; d < r; d++) /* no perm: the axes reversed */
            perm[d] = a->n_ints == r ? (int)a->ints[d] : r - 1 - d;
        return kern_permute(g, x, perm, r, k);
    }
    case EG_MOP_BATCHNORM:
        ewise(k, EG_EW_BNORM, 2);
        k->c = max1(d1), k->inner = k->out_elems / max1(dim(g, x, 0) * k->c);
        return 1;
    case EG_MOP_SOFTMAX: {
        eg_shape sb;
        const eg_shape *s = shape_of(g, x, &sb);
        if (!s || s->rank < 1) return 0;
        int ax = a->axis < 0 ? a->axis + s->rank : a->axis;
        if (ax < 0 || ax >= s->rank) return 0;
        ewise(k, EG_EW_SOFTMAX, 5);
        k->inner = s->dim[ax];
        return 1;
    }
    case EG_MOP_LAYERNORM: { /* rows of the normalised size */
        eg_shape sb;
        const eg_shape *s = shape_of(g, x, &sb);
        int ax = s ? (a->axis < 0 ? a->axis + s->rank : a->axis) : -1;
        if (!s || ax < 0 || ax >= s->rank) return 0;
        ewise(k, EG_EW_SOFTMAX, 6);
        k->inner = 1;
        for (int d = ax; d < s->rank; d++) k->inner *= s->dim[d];
        return 1;
    }
    case EG_MOP_COUNT: return 0;
    }
    return 0;
}

/* Reduce node to a kernel. @return 1, or 0 when its shapes are unknown. */
int eg_cost_kern_of(const eg_graph *g, const eg_node *n, eg_cost_kern *k) {
    memset(k, 0, sizeof *k);
    if (!count_io(g, n, k)) return 0;
    switch (n->kind) {
    case EG_KIND_OPS:
        return (unsigned)n->op < OP_COUNT && n->n_in >= ops_table[n->op].arity &&
               kern_ops(g, n, k);
    case EG_KIND_MODEL:
        return (unsigned)n->mop < EG_MOP_COUNT && n->n_in >= 1 &&
               n->n_in >= eg_mop_table[n->mop].min_in && kern_model(g, n, k);
    case EG_KIND_OPAQUE:
    case EG_KIND_COUNT: return 0;
    }
    return 0;
}

/* ================= the analytic price ================= */

/* A roofline target: launch and view overheads (us), flops and bytes per us. */
typedef struct {
    double launch, view, peak, bandwidth;
} target;

static const target gpu_like = {EG_COST_LAUNCH_US, EG_COST_VIEW_US, EG_COST_PEAK_FLOPS,
                                EG_COST_BANDWIDTH};

static double roofline(const target *t, double flops, double bytes) {
    double t1 = flops / t->peak, t2 = bytes / t->bandwidth;
    return t1 > t2 ? t1 : t2;
}

static double analytic(const target *t, const eg_cost_kern *k) {
    double extra = k->extra * t->launch;
    switch (k->cls) {
    case EG_KC_FREE: return 0;
    case EG_KC_VIEW: return t->view + roofline(t, 0, k->bytes);
    case EG_KC_MOVE:
    case EG_KC_TRANS: return t->launch + roofline(t, 0, k->bytes);
    case EG_KC_CONV:
    case EG_KC_GEMM:
    case EG_KC_POOL:
    case EG_KC_EWISE: return extra + t->launch + roofline(t, k->flops, k->bytes);
    case EG_KC_COUNT: break;
    }
    return EG_COST_UNKNOWN_US;
}

/* analytic-cpu: one CPU core as onnxruntime runs it, the constants of k's
 * class fitted to its measured kernels (cost_calib.h, bench/calibrate.py).
 * A sum, not a roofline's max: a CPU kernel pays its call, its arithmetic
 * and its memory traffic, and the fit finds how much of each. */
static double analytic_cpu(const eg_cost_kern *k) {
    int cal = eg_cost_cal_of(k);
    if (k->cls == EG_KC_FREE) return 0;
    if (cal < 0) return EG_COST_UNKNOWN_US;
    const eg_cost_calib *p = &eg_cost_calib_table[cal];
    return (1 + k->extra) * p->launch_us + k->flops * p->us_per_flop + k->bytes * p->us_per_byte;
}

double eg_cost_opaque_us(const eg_graph *g, const eg_node *n) {
    double bytes = 0;
    int64_t e;
    for (int j = 0; j < n->n_out; j++) {
        if (n->out[j] < 0 || n->out[j] >= g->n_tensors) continue;
        bytes += tensor_bytes(g, n->out[j], &e);
        if (e < 0) return EG_COST_UNKNOWN_US;
    }
    return EG_COST_LAUNCH_US + bytes / EG_COST_BANDWIDTH;
}

int eg_cost_cal_of(const eg_cost_kern *k) {
    switch (k->cls) {
    case EG_KC_FREE: return -1;
    case EG_KC_CONV:
        if (k->group > 1 && k->group == k->c) return EG_CAL_DWCONV;
        if (k->group > 1) return EG_CAL_GCONV;
        return k->kh == 1 && k->kw == 1 ? EG_CAL_CONV1 : EG_CAL_CONV;
    case EG_KC_GEMM: return EG_CAL_GEMM;
    case EG_KC_POOL: return EG_CAL_POOL;
    case EG_KC_MOVE: return EG_CAL_MOVE;
    case EG_KC_TRANS: return k->general ? EG_CAL_TRANSN : EG_CAL_TRANS;
    case EG_KC_VIEW: return EG_CAL_VIEW;
    case EG_KC_EWISE:
        switch (k->ew) {
        case EG_EW_ADD:
        case EG_EW_MUL:
        case EG_EW_SCALE:
        case EG_EW_RELU: return EG_CAL_EW;
        case EG_EW_SIGMOID:
        case EG_EW_TANH: return EG_CAL_EWMATH;
        case EG_EW_BNORM: return EG_CAL_BNORM;
        case EG_EW_SOFTMAX: return EG_CAL_ROWS;
        case EG_EW_GAP: return EG_CAL_GAP;
        case EG_EW_COUNT: break;
        }
        return -1;
    case EG_KC_COUNT: break;
    }
    return -1;
}

double eg_cost_kern_us(const eg_cost_kern *k, int cpu) { return cpu ? analytic_cpu(k) : analytic(&gpu_like, k); }
