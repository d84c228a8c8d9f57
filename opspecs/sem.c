/* sem.c - the exact reference semantics of every operator (ops_eval):
 * integers modulo 2^61-1, the values synth fingerprints and the axiom
 * checks test. Plain loops; no allocation, so OPS_ENOMEM never happens. */
#include <string.h>

#include "modp.h"
#include "ops.h"

/* One spatial dim of a sliding window (conv, pools). SAME padding is
 * centred: the window of output o starts at o*s - (k-1)/2, so a 1x1 kernel
 * and its enlarged 3x3 version look at the same centre for every stride. */
typedef struct {
    int32_t in, k, s, pb;
} win1;

static win1 win_make(int32_t in, int32_t k, int32_t s, int32_t pad) {
    win1 w = {in, k, s, pad == OPS_PAD_SAME ? (k - 1) / 2 : 0};
    return w;
}

/* Input coordinate of window offset r for output o; may be out of bounds
 * (padding), which callers test with in_bounds. */
static int32_t win_at(const win1 *w, int32_t o, int32_t r) {
    return o * w->s - w->pb + r;
}

static int in_bounds(const win1 *w, int32_t i) { return i >= 0 && i < w->in; }

static int64_t idx4(const int32_t *d, int64_t a, int64_t b, int64_t c, int64_t e) {
    return ((a * d[1] + b) * d[2] + c) * d[3] + e;
}

/* ------------------------------------------------------------ matmul */

static void eval_matmul(const ten *x, const ten *y, ten *out) {
    int32_t m = x->shape.dim[0], k = x->shape.dim[1], n = y->shape.dim[1];
    for (int32_t i = 0; i < m; i++)
        for (int32_t j = 0; j < n; j++) {
            uint64_t acc = 0;
            for (int32_t t = 0; t < k; t++)
                acc = mp_add(acc, mp_mul(x->data[(int64_t)i * k + t],
                                         y->data[(int64_t)t * n + j]));
            out->data[(int64_t)i * n + j] = acc;
        }
}

/* ------------------------------------------------------------ conv2d */

typedef struct {
    const ten *x, *w;
    win1 h, v; /* rows, columns */
    int32_t cin_per_group, cout_per_group;
} conv_ctx;

/* One output cell: the group of output channel oc reads input channels
 * [g*cin_per_group, (g+1)*cin_per_group); padding cells are zeros. */
static uint64_t conv_cell(const conv_ctx *c, int32_t n, int32_t oc, int32_t oh,
                          int32_t ow) {
    const int32_t *xd = c->x->shape.dim, *wd = c->w->shape.dim;
    int32_t cin0 = oc / c->cout_per_group * c->cin_per_group;
    uint64_t acc = 0;
    for (int32_t ic = 0; ic < c->cin_per_group; ic++)
        for (int32_t r = 0; r < c->h.k; r++) {
            int32_t ih = win_at(&c->h, oh, r);
            if (!in_bounds(&c->h, ih)) continue;
            for (int32_t q = 0; q < c->v.k; q++) {
                int32_t iw = win_at(&c->v, ow, q);
                if (!in_bounds(&c->v, iw)) continue;
                acc = mp_add(acc, mp_mul(c->x->data[idx4(xd, n, cin0 + ic, ih, iw)],
                                         c->w->data[idx4(wd, oc, ic, r, q)]));
            }
        }
    return acc;
}

static void eval_conv(const int32_t *p, const ten *x, const ten *w, ten *out) {
    const int32_t *od = out->shape.dim;
    conv_ctx c = {x, w, win_make(x->shape.dim[2], w->shape.dim[2], p[0], p[1]),
                  win_make(x->shape.dim[3], w->shape.dim[3], p[0], p[1]),
                  w->shape.dim[1], w->shape.dim[0] / p[3]};
    uint64_t *o = out->data;
    for (int32_t n = 0; n < od[0]; n++)
        for (int32_t oc = 0; oc < od[1]; oc++)
            for (int32_t oh = 0; oh < od[2]; oh++)
                for (int32_t ow = 0; ow < od[3]; ow++) {
                    uint64_t v = conv_cell(&c, n, oc, oh, ow);
                    *o++ = p[2] == OPS_ACT_RELU ? mp_relu(v) : v;
                }
}

/* ------------------------------------------------------------ elementwise */

static void eval_ew(ops_op op, const ten *x, const ten *y, ten *out) {
    int64_t n = ten_numel(&out->shape);
    for (int64_t i = 0; i < n; i++)
        out->data[i] = op == OP_EWADD ? mp_add(x->data[i], y->data[i])
                                      : mp_mul(x->data[i], y->data[i]);
}

static void eval_smul(const ten *x, const ten *s, ten *out) {
    int64_t n = ten_numel(&out->shape);
    for (int64_t i = 0; i < n; i++) out->data[i] = mp_mul(x->data[i], s->data[0]);
}

static void eval_relu(const ten *x, ten *out) {
    int64_t n = ten_numel(&out->shape);
    for (int64_t i = 0; i < n; i++) out->data[i] = mp_relu(x->data[i]);
}

/* ------------------------------------------------------------ pools */

/* Sum over the window, padding counting as zero (avg pool divides by
 * kh*kw regardless, so conv with the pool kernel equals it). */
static uint64_t window_sum(const uint64_t *plane, const win1 *h, const win1 *v,
                           int32_t oh, int32_t ow) {
    uint64_t acc = 0;
    for (int32_t r = 0; r < h->k; r++) {
        int32_t ih = win_at(h, oh, r);
        if (!in_bounds(h, ih)) continue;
        for (int32_t q = 0; q < v->k; q++) {
            int32_t iw = win_at(v, ow, q);
            if (in_bounds(v, iw)) acc = mp_add(acc, plane[(int64_t)ih * v->in + iw]);
        }
    }
    return acc;
}

/* Max over in-bounds cells only. Every window holds at least its centre
 * row/column o*s, which is < in because out = ceil(in/s) under SAME. */
static uint64_t window_max(const uint64_t *plane, const win1 *h, const win1 *v,
                           int32_t oh, int32_t ow) {
    uint64_t best = 0;
    int any = 0;
    for (int32_t r = 0; r < h->k; r++) {
        int32_t ih = win_at(h, oh, r);
        if (!in_bounds(h, ih)) continue;
        for (int32_t q = 0; q < v->k; q++) {
            int32_t iw = win_at(v, ow, q);
            if (!in_bounds(v, iw)) continue;
            uint64_t c = plane[(int64_t)ih * v->in + iw];
            best = any ? mp_max(best, c) : c;
            any = 1;
        }
    }
    return best;
}

static void eval_pool(ops_op op, const int32_t *p, const ten *x, ten *out) {
    const int32_t *xd = x->shape.dim, *od = out->shape.dim;
    int32_t kh = OPS_KERNEL_H(p[0]), kw = OPS_KERNEL_W(p[0]);
    win1 h = win_make(xd[2], kh, p[1], p[2]), v = win_make(xd[3], kw, p[1], p[2]);
    uint64_t inv = mp_inv((uint64_t)kh * (uint64_t)kw);
    int64_t planes = (int64_t)xd[0] * xd[1], plane_size = (int64_t)xd[2] * xd[3];
    uint64_t *o = out->data;
    for (int64_t pl = 0; pl < planes; pl++) {
        const uint64_t *plane = x->data + pl * plane_size;
        for (int32_t oh = 0; oh < od[2]; oh++)
            for (int32_t ow = 0; ow < od[3]; ow++)
                *o++ = op == OP_AVGPOOL ? mp_mul(window_sum(plane, &h, &v, oh, ow), inv)
                                        : window_max(plane, &h, &v, oh, ow);
    }
}

/* ------------------------------------------------------------ copies */

/* A row-major tensor seen as [outer, dim[axis] * inner] blocks. */
static void outer_inner(const ten_shape *s, int axis, int64_t *outer, int64_t *inner) {
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= s->dim[i];
    for (int i = axis + 1; i < s->rank; i++) *inner *= s->dim[i];
}

static void eval_concat(int axis, const ten *x, const ten *y, ten *out) {
    int64_t outer, inner;
    outer_inner(&x->shape, axis, &outer, &inner);
    int64_t bx = x->shape.dim[axis] * inner, by = y->shape.dim[axis] * inner;
    uint64_t *dst = out->data;
    for (int64_t i = 0; i < outer; i++) {
        memcpy(dst, x->data + i * bx, (size_t)bx * sizeof *dst);
        dst += bx;
        memcpy(dst, y->data + i * by, (size_t)by * sizeof *dst);
        dst += by;
    }
}

/* split0 copies the first `size` slices of each block, split1 the rest. */
static void eval_split(ops_op op, const int32_t *p, const ten *x, ten *out) {
    int64_t outer, inner;
    outer_inner(&x->shape, p[0], &outer, &inner);
    int64_t bin = x->shape.dim[p[0]] * inner, bout = out->shape.dim[p[0]] * inner;
    int64_t skip = op == OP_SPLIT0 ? 0 : p[1] * inner;
    for (int64_t i = 0; i < outer; i++)
        memcpy(out->data + i * bout, x->data + i * bin + skip,
               (size_t)bout * sizeof *out->data);
}

static void eval_transpose(const ten *x, ten *out) {
    int32_t m = x->shape.dim[0], n = x->shape.dim[1];
    for (int32_t i = 0; i < m; i++)
        for (int32_t j = 0; j < n; j++)
            out->data[(int64_t)j * m + i] = x->data[(int64_t)i * n + j];
}

/* Zero-pad each kh x kw kernel into the centre of the larger one. */
static void eval_enlarge(const ten *w, ten *out) {
    const int32_t *wd = w->shape.dim, *od = out->shape.dim;
    int32_t dh = (od[2] - wd[2]) / 2, dw = (od[3] - wd[3]) / 2;
    memset(out->data, 0, (size_t)ten_numel(&out->shape) * sizeof *out->data);
    for (int32_t o = 0; o < wd[0]; o++)
        for (int32_t i = 0; i < wd[1]; i++)
            for (int32_t r = 0; r < wd[2]; r++)
                for (int32_t q = 0; q < wd[3]; q++)
                    out->data[idx4(od, o, i, r + dh, q + dw)] =
                        w->data[idx4(wd, o, i, r, q)];
}

/* ------------------------------------------------------------ constants */

static void eval_imm(ten *out) {
    int32_t n = out->shape.dim[0];
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = 0; j < n; j++) out->data[(int64_t)i * n + j] = i == j;
}

/* iconv: 1 at the centre tap where o == i; poolk: 1/(kh*kw) on every tap
 * where o == i. Both [C,C,kh,kw]. */
static void eval_ckernel(ops_op op, ten *out) {
    const int32_t *od = out->shape.dim;
    uint64_t inv = op == OP_POOLK ? mp_inv((uint64_t)od[2] * (uint64_t)od[3]) : 0;
    for (int32_t o = 0; o < od[0]; o++)
        for (int32_t i = 0; i < od[1]; i++)
            for (int32_t r = 0; r < od[2]; r++)
                for (int32_t q = 0; q < od[3]; q++) {
                    uint64_t v = 0;
                    if (o == i && op == OP_POOLK) v = inv;
                    if (o == i && op == OP_ICONV) v = r == od[2] / 2 && q == od[3] / 2;
                    out->data[idx4(od, o, i, r, q)] = v;
                }
}

static void eval_ones(ten *out) {
    int64_t n = ten_numel(&out->shape);
    for (int64_t i = 0; i < n; i++) out->data[i] = 1;
}

ops_status ops_eval(ops_op op, const int32_t *param, const ten *const *in,
                    ten *out) {
    switch (op) {
    case OP_MATMUL: eval_matmul(in[0], in[1], out); break;
    case OP_CONV2D: eval_conv(param, in[0], in[1], out); break;
    case OP_EWADD:
    case OP_EWMUL: eval_ew(op, in[0], in[1], out); break;
    case OP_SMUL: eval_smul(in[0], in[1], out); break;
    case OP_RELU: eval_relu(in[0], out); break;
    case OP_AVGPOOL:
    case OP_MAXPOOL: eval_pool(op, param, in[0], out); break;
    case OP_CONCAT: eval_concat(param[0], in[0], in[1], out); break;
    case OP_SPLIT0:
    case OP_SPLIT1: eval_split(op, param, in[0], out); break;
    case OP_TRANSPOSE: eval_transpose(in[0], out); break;
    case OP_ENLARGE: eval_enlarge(in[0], out); break;
    case OP_IMM: eval_imm(out); break;
    case OP_ICONV:
    case OP_POOLK: eval_ckernel(op, out); break;
    case OP_ONES: eval_ones(out); break;
    case OP_COUNT: return OPS_EPARAM; /* excluded by the precondition */
    }
    return OPS_OK;
}
