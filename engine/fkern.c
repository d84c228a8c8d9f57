/* fkern.c - float32 reference kernels: every opspecs operator with the
 * conventions of ops.h (mirroring opspecs/sem.c over floats instead of
 * residues), and the few model operators weight folding evaluates.
 * Plain loops, no allocation. */
#include <stdio.h>
#include <string.h>

#include "fold.h"

/* One spatial dim of a sliding window; SAME padding is centred. */
typedef struct {
    int32_t in, k, s, pb;
} fwin;

static fwin fwin_make(int32_t in, int32_t k, int32_t s, int32_t pad) {
    fwin w = {in, k, s, pad == OPS_PAD_SAME ? (k - 1) / 2 : 0};
    return w;
}

/* Input coordinate of offset r in output o's window, or -1 when padding. */
static int32_t fwin_at(const fwin *w, int32_t o, int32_t r) {
    int32_t i = o * w->s - w->pb + r;
    return i >= 0 && i < w->in ? i : -1;
}

static int64_t at4(const int32_t *d, int64_t a, int64_t b, int64_t c, int64_t e) {
    return ((a * d[1] + b) * d[2] + c) * d[3] + e;
}

static void f_matmul(const ten_shape *s, const float *x, const float *y, float *out) {
    int64_t m = s[0].dim[0], k = s[0].dim[1], n = s[1].dim[1];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t t = 0; t < k; t++) acc += (double)x[i * k + t] * y[t * n + j];
            out[i * n + j] = (float)acc;
        }
}

/* One conv output cell; the group of oc reads channels [g*cin, (g+1)*cin). */
static float f_conv_cell(const ten_shape *s, const float *x, const float *w, const fwin *h,
                         const fwin *v, int32_t cout_per_group, int32_t n, int32_t oc,
                         int32_t oh, int32_t ow) {
    int32_t cin = s[1].dim[1], cin0 = oc / cout_per_group * cin;
    double acc = 0;
    for (int32_t ic = 0; ic < cin; ic++)
        for (int32_t r = 0; r < h->k; r++) {
            int32_t ih = fwin_at(h, oh, r);
            for (int32_t q = 0; ih >= 0 && q < v->k; q++) {
                int32_t iw = fwin_at(v, ow, q);
                if (iw >= 0)
                    acc += (double)x[at4(s[0].dim, n, cin0 + ic, ih, iw)] *
                           w[at4(s[1].dim, oc, ic, r, q)];
            }
        }
    return (float)acc;
}

static void f_conv(const int32_t *p, const ten_shape *s, const ten_shape *os, const float *x,
                   const float *w, float *out) {
    fwin h = fwin_make(s[0].dim[2], s[1].dim[2], p[0], p[1]);
    fwin v = fwin_make(s[0].dim[3], s[1].dim[3], p[0], p[1]);
    int32_t cpg = s[1].dim[0] / p[3];
    for (int32_t n = 0; n < os->dim[0]; n++)
        for (int32_t oc = 0; oc < os->dim[1]; oc++)
            for (int32_t oh = 0; oh < os->dim[2]; oh++)
                for (int32_t ow = 0; ow < os->dim[3]; ow++) {
                    float c = f_conv_cell(s, x, w, &h, &v, cpg, n, oc, oh, ow);
                    *out++ = p[2] == OPS_ACT_RELU && c < 0 ? 0.0f : c;
                }
}

/* avg pool: the window sum over kh*kw (padding counted as zeros); max
 * pool: the max over in-bounds cells (there is always one). */
static float f_window(ops_op op, const float *plane, const fwin *h, const fwin *v, int32_t oh,
                      int32_t ow) {
    double sum = 0;
    float best = 0;
    int any = 0;
    for (int32_t r = 0; r < h->k; r++) {
        int32_t ih = fwin_at(h, oh, r);
        for (int32_t q = 0; ih >= 0 && q < v->k; q++) {
            int32_t iw = fwin_at(v, ow, q);
            if (iw < 0) continue;
            float c = plane[(int64_t)ih * v->in + iw];
            sum += c;
            best = any && best > c ? best : c;
            any = 1;
        }
    }
    return op == OP_AVGPOOL ? (float)(sum / (h->k * v->k)) : best;
}

static void f_pool(ops_op op, const int32_t *p, const ten_shape *xs, const ten_shape *os,
                   const float *x, float *out) {
    fwin h = fwin_make(xs->dim[2], OPS_KERNEL_H(p[0]), p[1], p[2]);
    fwin v = fwin_make(xs->dim[3], OPS_KERNEL_W(p[0]), p[1], p[2]);
    int64_t planes = (int64_t)xs->dim[0] * xs->dim[1], psize = (int64_t)xs->dim[2] * xs->dim[3];
    for (int64_t pl = 0; pl < planes; pl++)
        for (int32_t oh = 0; oh < os->dim[2]; oh++)
            for (int32_t ow = 0; ow < os->dim[3]; ow++)
                *out++ = f_window(op, x + pl * psize, &h, &v, oh, ow);
}

/* A row-major tensor as [outer, dim[axis] * inner] blocks. */
static void f_blocks(const ten_shape *s, int axis, int64_t *outer, int64_t *inner) {
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= s->dim[i];
    for (int i = axis + 1; i < s->rank; i++) *inner *= s->dim[i];
}

static void f_concat(int axis, const ten_shape *s, const float *x, const float *y, float *out) {
    int64_t outer, inner;
    f_blocks(&s[0], axis, &outer, &inner);
    int64_t bx = s[0].dim[axis] * inner, by = s[1].dim[axis] * inner;
    for (int64_t i = 0; i < outer; i++) {
        memcpy(out, x + i * bx, sizeof *out * (size_t)bx);
        out += bx;
        memcpy(out, y + i * by, sizeof *out * (size_t)by);
        out += by;
    }
}

static void f_split(ops_op op, const int32_t *p, const ten_shape *xs, const ten_shape *os,
                    const float *x, float *out) {
    int64_t outer, inner;
    f_blocks(xs, p[0], &outer, &inner);
    int64_t bin = xs->dim[p[0]] * inner, bout = os->dim[p[0]] * inner;
    int64_t skip = op == OP_SPLIT0 ? 0 : p[1] * inner;
    for (int64_t i = 0; i < outer; i++)
        memcpy(out + i * bout, x + i * bin + skip, sizeof *out * (size_t)bout);
}

static void f_transpose(const ten_shape *xs, const float *x, float *out) {
    int64_t m = xs->dim[0], n = xs->dim[1];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) out[j * m + i] = x[i * n + j];
}

static void f_enlarge(const ten_shape *ws, const ten_shape *os, const float *w, float *out) {
    const int32_t *wd = ws->dim, *od = os->dim;
    int32_t dh = (od[2] - wd[2]) / 2, dw = (od[3] - wd[3]) / 2;
    memset(out, 0, sizeof *out * (size_t)ten_numel(os));
    for (int32_t o = 0; o < wd[0]; o++)
        for (int32_t i = 0; i < wd[1]; i++)
            for (int32_t r = 0; r < wd[2]; r++)
                for (int32_t q = 0; q < wd[3]; q++)
                    out[at4(od, o, i, r + dh, q + dw)] = w[at4(wd, o, i, r, q)];
}

/* imm, iconv, poolk, ones for the output shape os. */
static void f_constant(ops_op op, const ten_shape *os, float *out) {
    int64_t numel = ten_numel(os);
    for (int64_t i = 0; i < numel; i++) out[i] = op == OP_ONES ? 1.0f : 0.0f;
    if (op == OP_IMM)
        for (int64_t i = 0; i < os->dim[0]; i++) out[i * os->dim[1] + i] = 1.0f;
    if (op != OP_ICONV && op != OP_POOLK) return;
    int32_t kh = os->dim[2], kw = os->dim[3];
    for (int32_t o = 0; o < os->dim[0] && o < os->dim[1]; o++)
        for (int32_t r = 0; r < kh; r++)
            for (int32_t q = 0; q < kw; q++) {
                float v = op == OP_POOLK ? 1.0f / (float)(kh * kw) : r == kh / 2 && q == kw / 2;
                out[at4(os->dim, o, o, r, q)] = v;
            }
}

eg_status eg_fkern_eval(ops_op op, const int32_t *param, const ten_shape *in_shape,
                        const float *const *in, float *out, char *err, size_t errlen) {
    ten_shape os;
    char oerr[OPS_ERRLEN];
    if (op >= OP_COUNT || ops_infer_shape(op, param, in_shape, &os, oerr) != OPS_OK) {
        if (err && errlen) snprintf(err, errlen, "%s", op < OP_COUNT ? oerr : "unknown operator");
        return EG_ESHAPE;
    }
    int64_t n = ten_numel(&os);
    switch (op) {
    case OP_MATMUL: f_matmul(in_shape, in[0], in[1], out); break;
    case OP_CONV2D: f_conv(param, in_shape, &os, in[0], in[1], out); break;
    case OP_EWADD:
        for (int64_t i = 0; i < n; i++) out[i] = in[0][i] + in[1][i];
        break;
    case OP_EWMUL:
        for (int64_t i = 0; i < n; i++) out[i] = in[0][i] * in[1][i];
        break;
    case OP_SMUL:
        for (int64_t i = 0; i < n; i++) out[i] = in[0][i] * in[1][0];
        break;
    case OP_RELU:
        for (int64_t i = 0; i < n; i++) out[i] = in[0][i] > 0 ? in[0][i] : 0.0f;
        break;
    case OP_AVGPOOL:
    case OP_MAXPOOL: f_pool(op, param, &in_shape[0], &os, in[0], out); break;
    case OP_CONCAT: f_concat(param[0], in_shape, in[0], in[1], out); break;
    case OP_SPLIT0:
    case OP_SPLIT1: f_split(op, param, &in_shape[0], &os, in[0], out); break;
    case OP_TRANSPOSE: f_transpose(&in_shape[0], in[0], out); break;
    case OP_ENLARGE: f_enlarge(&in_shape[0], &os, in[0], out); break;
    case OP_IMM:
    case OP_ICONV:
    case OP_POOLK:
    case OP_ONES: f_constant(op, &os, out); break;
    case OP_COUNT: return EG_ESHAPE; /* refused above */
    }
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

/* Transpose: output index i (digits over the output dims) reads input
 * position sum of digit[d] * in_stride[perm[d]]. */
static void m_transpose(const eg_shape *xs, const eg_attrs *a, const float *x, const eg_shape *os,
                        float *out) {
    int64_t ist[EG_MAX_RANK], idx[EG_MAX_RANK] = {0}, n = eg_shape_numel(os);
    int r = xs->rank, perm[EG_MAX_RANK];
    strides_of(xs, ist);
    for (int d = 0; d < r; d++) perm[d] = (int)(a->flags & EG_AF_INTS ? a->ints[d] : r - 1 - d);
    for (int64_t i = 0; i < n; i++) {
        int64_t src = 0;
        for (int d = 0; d < r; d++) src += idx[d] * ist[perm[d]];
        out[i] = x[src];
        for (int d = r - 1; d >= 0 && ++idx[d] == os->dim[d]; d--) idx[d] = 0;
    }
}

/* Numpy-broadcast elementwise add or mul. */
static void m_binary(eg_mop mop, const eg_shape *as, const eg_shape *bs, const float *a,
                     const float *b, const eg_shape *os, float *out) {
    int64_t ast[EG_MAX_RANK], bst[EG_MAX_RANK], sa[EG_MAX_RANK] = {0}, sb[EG_MAX_RANK] = {0};
    int64_t idx[EG_MAX_RANK] = {0}, n = eg_shape_numel(os);
    int r = os->rank;
    strides_of(as, ast);
    strides_of(bs, bst);
    for (int d = 0; d < r; d++) { /* a broadcast (size-1 or missing) dim steps 0 */
        int da = d - (r - as->rank), db = d - (r - bs->rank);
        sa[d] = da >= 0 && as->dim[da] != 1 ? ast[da] : 0;
        sb[d] = db >= 0 && bs->dim[db] != 1 ? bst[db] : 0;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t ia = 0, ib = 0;
        for (int d = 0; d < r; d++) ia += idx[d] * sa[d], ib += idx[d] * sb[d];
        out[i] = mop == EG_MOP_ADD ? a[ia] + b[ib] : a[ia] * b[ib];
        for (int d = r - 1; d >= 0 && ++idx[d] == os->dim[d]; d--) idx[d] = 0;
    }
}

int eg_fkern_model(const eg_graph *g, const eg_node *n, const float *const *in, float *out) {
    if (n->kind != EG_KIND_MODEL || n->n_out != 1 || n->out[0] < 0 || !in[0]) return 0;
    const eg_shape *os = &g->tensor[n->out[0]].shape, *xs = &g->tensor[n->in[0]].shape;
    int64_t numel = eg_shape_numel(os);
    if (numel < 0 || !eg_shape_known(xs)) return 0;
    switch (n->mop) {
    case EG_MOP_IDENTITY:
    case EG_MOP_RESHAPE:
    case EG_MOP_FLATTEN:
        if (eg_shape_numel(xs) != numel) return 0;
        memcpy(out, in[0], sizeof *out * (size_t)numel);
        return 1;
    case EG_MOP_TRANSPOSE: m_transpose(xs, &n->attr, in[0], os, out); return 1;
    case EG_MOP_ADD:
    case EG_MOP_MUL:
        if (n->n_in != 2 || n->in[1] < 0 || !in[1] || !eg_shape_known(&g->tensor[n->in[1]].shape))
            return 0;
        m_binary(n->mop, xs, &g->tensor[n->in[1]].shape, in[0], in[1], os, out);
        return 1;
    case EG_MOP_CONV:
    case EG_MOP_MAXPOOL:
    case EG_MOP_AVGPOOL:
    case EG_MOP_GLOBALAVGPOOL:
    case EG_MOP_GEMM:
    case EG_MOP_MATMUL:
    case EG_MOP_RELU:
    case EG_MOP_SIGMOID:
    case EG_MOP_TANH:
    case EG_MOP_CONCAT:
    case EG_MOP_SPLIT:
    case EG_MOP_BATCHNORM:
    case EG_MOP_SOFTMAX:
    case EG_MOP_COUNT: break; /* left to run time */
    }
    return 0;
}
