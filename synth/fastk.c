/* fastk.c - faster CPU kernels for the operators that dominate synth's
 * time (conv2d, matmul): bit for bit the results of ops_eval (sem.c; the
 * differential test in test_synth.c checks every parameter combination),
 * with products of residues summed exactly in 128 bits and reduced once
 * per output cell instead of once per product. */
#include "fastk.h"

#include "modp.h"

/* v mod p for any v < 2^128: 2^61 = 1 (mod p), so add the 61-bit digits. */
static inline uint64_t red128(unsigned __int128 v) {
    uint64_t a0 = (uint64_t)v & MP_P, a1 = (uint64_t)(v >> 61) & MP_P, a2 = (uint64_t)(v >> 122);
    return mp_reduce(a0 + a1 + a2); /* < 2^62 */
}

/* Products are < 2^122: 60 of them still fit 128 bits. */
#define FOLD_EVERY 60

static void matmul(const ten *x, const ten *y, ten *out) {
    int32_t m = x->shape.dim[0], k = x->shape.dim[1], n = y->shape.dim[1];
    for (int32_t i = 0; i < m; i++)
        for (int32_t j = 0; j < n; j++) {
            unsigned __int128 acc = 0;
            for (int32_t t = 0; t < k; t++) {
                acc += (unsigned __int128)x->data[(int64_t)i * k + t] * y->data[(int64_t)t * n + j];
                if (t % FOLD_EVERY == FOLD_EVERY - 1) acc = red128(acc);
            }
            out->data[(int64_t)i * n + j] = red128(acc);
        }
}

typedef struct {
    int32_t n, c, h, w;         /* x */
    int32_t o, ci, kh, kw;      /* w: [o, ci, kh, kw] */
    int32_t oh, ow, s, ph, pw; /* output dims, stride, padding before */
    int32_t cout_per_group;
} conv_dims;

/* The taps r in [*r0, *r1) of a window starting at `start` that fall
 * inside [0, size). */
static void tap_range(int32_t start, int32_t k, int32_t size, int32_t *r0, int32_t *r1) {
    *r0 = start < 0 ? -start : 0;
    *r1 = size - start < k ? size - start : k;
}

static uint64_t conv_cell(const conv_dims *d, const uint64_t *x, const uint64_t *w, int32_t n,
                          int32_t oc, int32_t oy, int32_t ox) {
    int32_t y0 = oy * d->s - d->ph, x0 = ox * d->s - d->pw, r0, r1, q0, q1;
    int32_t cin0 = oc / d->cout_per_group * d->ci;
    tap_range(y0, d->kh, d->h, &r0, &r1);
    tap_range(x0, d->kw, d->w, &q0, &q1);
    unsigned __int128 acc = 0;
    int folds = 0;
    for (int32_t ic = 0; ic < d->ci; ic++) {
        const uint64_t *xp = x + (((int64_t)n * d->c + cin0 + ic) * d->h) * d->w;
        const uint64_t *wp = w + (((int64_t)oc * d->ci + ic) * d->kh) * d->kw;
        for (int32_t r = r0; r < r1; r++)
            for (int32_t q = q0; q < q1; q++) {
                acc += (unsigned __int128)xp[(int64_t)(y0 + r) * d->w + x0 + q] * wp[r * d->kw + q];
                if (++folds == FOLD_EVERY) acc = red128(acc), folds = 1;
            }
    }
    return red128(acc);
}

static void conv(const int32_t *p, const ten *x, const ten *w, ten *out) {
    const int32_t *xd = x->shape.dim, *wd = w->shape.dim;
    conv_dims d = {xd[0], xd[1], xd[2], xd[3], wd[0], wd[1], wd[2], wd[3],
                   out->shape.dim[2], out->shape.dim[3], p[0],
                   p[1] == OPS_PAD_SAME ? (wd[2] - 1) / 2 : 0,
                   p[1] == OPS_PAD_SAME ? (wd[3] - 1) / 2 : 0, wd[0] / p[3]};
    uint64_t *o = out->data;
    for (int32_t n = 0; n < d.n; n++)
        for (int32_t oc = 0; oc < d.o; oc++)
            for (int32_t oy = 0; oy < d.oh; oy++)
                for (int32_t ox = 0; ox < d.ow; ox++) {
                    uint64_t v = conv_cell(&d, x->data, w->data, n, oc, oy, ox);
                    *o++ = p[2] == OPS_ACT_RELU ? mp_relu(v) : v;
                }
}

int fk_eval(ops_op op, const int32_t *param, const ten *const *in, ten *out) {
    if (op == OP_MATMUL) {
        matmul(in[0], in[1], out);
        return 1;
    }
    if (op == OP_CONV2D) {
        conv(param, in[0], in[1], out);
        return 1;
    }
    return 0;
}
