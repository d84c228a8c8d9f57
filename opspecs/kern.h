/* kern.h - the operator kernels, written once over a number type and
 * instantiated twice: exact residues modulo 2^61-1 (opspecs/sem.c, the
 * reference semantics synth fingerprints and prove's checks evaluate) and
 * float32 (engine/fkern.c, what rewritten graphs are checked with). Plain
 * loops over row-major arrays, no allocation.
 *
 * Include it after defining (no include guard: one instance per file):
 *   KN(name)        the instance's name for a kernel, e.g. kf_##name
 *   KT              the element type
 *   KACC            the accumulator type of sums of products
 *   K_ZERO_ACC      an empty sum
 *   K_MAC(acc,a,b)  acc plus a*b
 *   K_FOLD_EVERY    products an accumulator holds before K_FOLD (exact
 *                   128-bit residue sums must be folded now and then)
 *   K_FOLD(acc)     acc reduced, the same value
 *   K_OUT(acc)      the sum as an element
 *   K_AVG(acc,n,r)  the sum divided by the cell count n, where r is
 *                   K_RECIP(kh*kw) (the count when padding counts)
 *   K_MAX(a,b), K_RELU(a)  on elements
 *   K_CELL(op,a), K_CELL2(op,a,b)  an element-wise operator's cell
 *                   function (ops_cell_table, cells.c)
 *   K_ROW(op,x,y,n,stride,p) a row operator's row function (cells.c)
 *   K_ZERO, K_ONE   elements
 *   K_RECIP(n)      1/n as an element
 * Windows (conv, pools) come from win.h, so padding is decided there. */
#include <string.h>

#include "win.h"

/* out[m,n] = x . y where x[i,t] is x[i*xi + t*xt] and y[t,j] is y[t*yt +
 * j*yj]: a transposed operand just swaps its two steps. */
static inline void KN(gemm)(int64_t m, int64_t k, int64_t n, const KT *x, int64_t xi, int64_t xt,
                            const KT *y, int64_t yt, int64_t yj, KT *out) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            KACC acc = K_ZERO_ACC;
            for (int64_t t = 0; t < k; t++) {
                acc = K_MAC(acc, x[i * xi + t * xt], y[t * yt + j * yj]);
                if (t % K_FOLD_EVERY == K_FOLD_EVERY - 1) acc = K_FOLD(acc);
            }
            out[i * n + j] = K_OUT(acc);
        }
}

/* A grouped convolution: x [N,C,H,W] by w [O,C/groups,kh,kw] into out
 * [N,O,oh,ow] over the windows h (rows) and v (columns); the group of
 * output channel oc reads input channels [g*cin, (g+1)*cin). Taps in the
 * padding are skipped (zeros). relu != 0 applies K_RELU to each cell. */
static inline void KN(conv)(const int32_t *xd, const int32_t *wd, const int32_t *od,
                            const ops_win *h, const ops_win *v, int32_t groups, int relu,
                            const KT *x, const KT *w, KT *out) {
    int32_t cin = wd[1], cout_per_group = wd[0] / groups;
    for (int32_t n = 0; n < od[0]; n++)
        for (int32_t oc = 0; oc < od[1]; oc++) {
            int32_t cin0 = oc / cout_per_group * cin;
            for (int32_t oh = 0; oh < od[2]; oh++) {
                int32_t r0, r1, ih0 = ops_win_taps(h, oh, &r0, &r1);
                for (int32_t ow = 0; ow < od[3]; ow++) {
                    int32_t q0, q1, iw0 = ops_win_taps(v, ow, &q0, &q1);
                    KACC acc = K_ZERO_ACC;
                    int terms = 0;
                    for (int32_t ic = 0; ic < cin; ic++) {
                        const KT *xp = x + (((int64_t)n * xd[1] + cin0 + ic) * xd[2]) * xd[3];
                        const KT *wp = w + (((int64_t)oc * cin + ic) * wd[2]) * wd[3];
                        for (int32_t r = r0; r < r1; r++)
                            for (int32_t q = q0; q < q1; q++) {
                                acc = K_MAC(acc, xp[(int64_t)(ih0 + r * h->d) * xd[3] + iw0 + q * v->d],
                                            wp[(int64_t)r * wd[3] + q]);
                                if (++terms == K_FOLD_EVERY) acc = K_FOLD(acc), terms = 1;
                            }
                    }
                    KT cell = K_OUT(acc);
                    *out++ = relu ? K_RELU(cell) : cell;
                }
            }
        }
}

/* Pools over the planes of x [N,C,H,W] into out [N,C,oh,ow]. Average:
 * the window sum over kh*kw cells (padding counted as zeros) when
 * count_pad, else over the cells inside; max: over the cells inside
 * (there is always one). */
static inline void KN(pool)(int avg, int count_pad, const int32_t *xd, const int32_t *od,
                            const ops_win *h, const ops_win *v, const KT *x, KT *out) {
    int64_t planes = (int64_t)xd[0] * xd[1], psize = (int64_t)xd[2] * xd[3];
    KT recip = avg ? K_RECIP(h->k * v->k) : K_ZERO; /* once, not per cell */
    for (int64_t pl = 0; pl < planes; pl++) {
        const KT *plane = x + pl * psize;
        for (int32_t oh = 0; oh < od[2]; oh++) {
            int32_t r0, r1, ih0 = ops_win_taps(h, oh, &r0, &r1);
            for (int32_t ow = 0; ow < od[3]; ow++) {
                int32_t q0, q1, iw0 = ops_win_taps(v, ow, &q0, &q1);
                KACC sum = K_ZERO_ACC;
                KT best = K_ZERO;
                int cells = 0;
                for (int32_t r = r0; r < r1; r++)
                    for (int32_t q = q0; q < q1; q++) {
                        KT c = plane[(int64_t)(ih0 + r * h->d) * xd[3] + iw0 + q * v->d];
                        if (avg) {
                            sum = K_MAC(sum, c, K_ONE);
                            if ((cells + 1) % K_FOLD_EVERY == 0) sum = K_FOLD(sum);
                        } else
                            best = cells ? K_MAX(best, c) : c;
                        cells++;
                    }
                *out++ = !avg ? best : K_AVG(sum, count_pad ? h->k * v->k : cells, recip);
            }
        }
    }
}

/* Concatenation: each of the outer blocks of out is input 0's block
 * (blk[0] elements), then input 1's, ... */
static inline void KN(concat)(int n, int64_t outer, const int64_t *blk, const KT *const *in,
                              KT *out) {
    for (int64_t i = 0; i < outer; i++)
        for (int k = 0; k < n; k++) {
            memcpy(out, in[k] + i * blk[k], sizeof *out * (size_t)blk[k]);
            out += blk[k];
        }
}

/* One part of a split: bout elements from offset skip of each bin-element
 * block of x. */
static inline void KN(slice)(int64_t outer, int64_t bin, int64_t skip, int64_t bout, const KT *x,
                             KT *out) {
    for (int64_t i = 0; i < outer; i++)
        memcpy(out + i * bout, x + i * bin + skip, sizeof *out * (size_t)bout);
}

/* [m,n] -> [n,m]. */
static inline void KN(transpose2)(int64_t m, int64_t n, const KT *x, KT *out) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) out[j * m + i] = x[i * n + j];
}

/* permute(perm; x): out cell (i0..ir-1) is x at i[a] on axis perm[a],
 * walked with one counter per output axis and x's strides. */
static inline void KN(permute)(int32_t perm, const ten_shape *s, const ten_shape *os, const KT *x,
                               KT *out) {
    int r = s->rank;
    int64_t xstride[TEN_MAX_RANK], step[TEN_MAX_RANK], at[TEN_MAX_RANK] = {0}, n = ten_numel(os), src = 0;
    xstride[r - 1] = 1;
    for (int a = r - 2; a >= 0; a--) xstride[a] = xstride[a + 1] * s->dim[a + 1];
    for (int a = 0; a < r; a++) step[a] = xstride[OPS_PERM_AT(perm, a)];
    for (int64_t i = 0; i < n; i++) {
        out[i] = x[src];
        for (int a = r - 1; a >= 0; a--) { /* odometer over the output's axes */
            src += step[a];
            if (++at[a] < os->dim[a]) break;
            src -= step[a] * at[a];
            at[a] = 0;
        }
    }
}

/* Zero-pad each kh x kw kernel of w [O,I,kh,kw] into the centre of the
 * larger one of out [O,I,KH,KW]. */
static inline void KN(enlarge)(const int32_t *wd, const int32_t *od, const KT *w, KT *out) {
    int32_t dh = (od[2] - wd[2]) / 2, dw = (od[3] - wd[3]) / 2;
    int64_t numel = (int64_t)od[0] * od[1] * od[2] * od[3];
    for (int64_t i = 0; i < numel; i++) out[i] = K_ZERO;
    for (int64_t oi = 0; oi < (int64_t)wd[0] * wd[1]; oi++)
        for (int32_t r = 0; r < wd[2]; r++)
            for (int32_t q = 0; q < wd[3]; q++)
                out[(oi * od[2] + r + dh) * od[3] + q + dw] = w[(oi * wd[2] + r) * wd[3] + q];
}

/* The constant operators for their output shape os: imm (identity
 * matrix), iconv (1 at the centre tap where o == i), dwiconv (1 at the
 * centre tap of every o: its one input channel is o's group), poolk
 * (1/(kh*kw) on every tap where o == i), ones. */
static inline void KN(constant)(ops_op op, const ten_shape *os, KT *out) {
    int64_t numel = ten_numel(os);
    for (int64_t i = 0; i < numel; i++) out[i] = op == OP_ONES ? K_ONE : K_ZERO;
    if (op == OP_IMM)
        for (int64_t i = 0; i < os->dim[0] && i < os->dim[1]; i++) out[i * os->dim[1] + i] = K_ONE;
    if (ops_table[op].form != OPS_FORM_CKERNEL) return;
    int32_t kh = os->dim[2], kw = os->dim[3];
    int identity = ops_ckernel_identity(op);
    KT tap = identity ? K_ONE : K_RECIP(kh * kw);
    for (int32_t o = 0; o < os->dim[0]; o++) {
        int32_t i = ops_ckernel_depthwise(op) ? 0 : o;
        if (i >= os->dim[1]) break;
        for (int32_t r = 0; r < kh; r++)
            for (int32_t q = 0; q < kw; q++)
                if (!identity || (r == kh / 2 && q == kw / 2))
                    out[(((int64_t)o * os->dim[1] + i) * kh + r) * kw + q] = tap;
    }
}

/* Every opspecs operator with the conventions of ops.h, on row-major
 * arrays. @pre os is ops_infer_shape's output shape for these inputs;
 * out has ten_numel(os) cells and overlaps no input. */
static inline void KN(ops)(ops_op op, const int32_t *p, const ten_shape *s, const ten_shape *os,
                           const KT *const *in, KT *out) {
    int64_t n = ten_numel(os);
    switch (ops_table[op].form) {
    case OPS_FORM_MATMUL: {
        int64_t k = s[0].dim[1], cols = s[1].dim[1];
        KN(gemm)(s[0].dim[0], k, cols, in[0], k, 1, in[1], cols, 1, out);
        return;
    }
    case OPS_FORM_BMM: { /* one matmul per (b, h) block */
        int64_t m = s[0].dim[2], k = s[0].dim[3], cols = s[1].dim[3];
        for (int64_t b = 0; b < (int64_t)s[0].dim[0] * s[0].dim[1]; b++)
            KN(gemm)(m, k, cols, in[0] + b * m * k, k, 1, in[1] + b * k * cols, cols, 1, out + b * m * cols);
        return;
    }
    case OPS_FORM_LINEAR: /* the [m,k] blocks are one [b*m,k] matrix */
        KN(gemm)((int64_t)s[0].dim[0] * s[0].dim[1], s[0].dim[2], s[1].dim[1], in[0], s[0].dim[2], 1,
                 in[1], s[1].dim[1], 1, out);
        return;
    case OPS_FORM_CONV: {
        ops_win h = ops_win_make(s[0].dim[2], s[1].dim[2], p[0], p[1]);
        ops_win v = ops_win_make(s[0].dim[3], s[1].dim[3], p[0], p[1]);
        KN(conv)(s[0].dim, s[1].dim, os->dim, &h, &v, p[3], p[2] == OPS_ACT_RELU, in[0], in[1], out);
        return;
    }
    case OPS_FORM_MAP:
        for (int64_t i = 0; i < n; i++) out[i] = K_CELL(op, in[0][i]);
        return;
    case OPS_FORM_ZIP:
        for (int64_t i = 0; i < n; i++) out[i] = K_CELL2(op, in[0][i], in[1][i]);
        return;
    case OPS_FORM_SCALE:
        for (int64_t i = 0; i < n; i++) out[i] = K_CELL2(op, in[0][i], in[1][0]);
        return;
    case OPS_FORM_CHANNEL: {
        /* cell i sits at channel (i / inner) % dim along the axis */
        int64_t inner = 1, dim = s[0].dim[p[0]];
        for (int i = p[0] + 1; i < s[0].rank; i++) inner *= s[0].dim[i];
        for (int64_t i = 0; i < n; i++) out[i] = K_CELL2(op, in[0][i], in[1][i / inner % dim]);
        return;
    }
    case OPS_FORM_ROW: {
        /* the row through cell (o, ., i) starts at o * dim * inner + i */
        int64_t outer = 1, inner = 1, dim = s[0].dim[p[0]];
        for (int i = 0; i < p[0]; i++) outer *= s[0].dim[i];
        for (int i = p[0] + 1; i < s[0].rank; i++) inner *= s[0].dim[i];
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++)
                K_ROW(op, in[0] + o * dim * inner + i, out + o * dim * inner + i, dim, inner, p);
        return;
    }
    case OPS_FORM_POOL: {
        ops_win h = ops_win_make(s[0].dim[2], OPS_KERNEL_H(p[0]), p[1], p[2]);
        ops_win v = ops_win_make(s[0].dim[3], OPS_KERNEL_W(p[0]), p[1], p[2]);
        KN(pool)(op == OP_AVGPOOL, 1, s[0].dim, os->dim, &h, &v, in[0], out);
        return;
    }
    case OPS_FORM_CONCAT: {
        int64_t outer = 1, inner = 1, blk[2];
        for (int i = 0; i < p[0]; i++) outer *= s[0].dim[i];
        for (int i = p[0] + 1; i < s[0].rank; i++) inner *= s[0].dim[i];
        blk[0] = s[0].dim[p[0]] * inner, blk[1] = s[1].dim[p[0]] * inner;
        KN(concat)(2, outer, blk, in, out);
        return;
    }
    case OPS_FORM_SPLIT: {
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < p[0]; i++) outer *= s[0].dim[i];
        for (int i = p[0] + 1; i < s[0].rank; i++) inner *= s[0].dim[i];
        int64_t skip = op == OP_SPLIT0 ? 0 : p[1] * inner;
        KN(slice)(outer, s[0].dim[p[0]] * inner, skip, os->dim[p[0]] * inner, in[0], out);
        return;
    }
    case OPS_FORM_TRANSPOSE: KN(transpose2)(s[0].dim[0], s[0].dim[1], in[0], out); return;
    case OPS_FORM_PERMUTE: KN(permute)(p[0], &s[0], os, in[0], out); return;
    case OPS_FORM_HEADS: KN(slice)(1, 0, 0, ten_numel(os), in[0], out); return; /* a copy */
    case OPS_FORM_ENLARGE: KN(enlarge)(s[0].dim, os->dim, in[0], out); return;
    case OPS_FORM_IMM:
    case OPS_FORM_CKERNEL:
    case OPS_FORM_ONES: KN(constant)(op, os, out); return;
    case OPS_FORM_KMUL: {
        int64_t o = s[0].dim[0], m = s[0].dim[1], taps = (int64_t)s[0].dim[2] * s[0].dim[3];
        if (taps == 1) { /* v 1x1: [O,M] x [M, I*kh*kw or 1] */
            int64_t cols = ten_numel(&s[1]) / (m ? m : 1);
            KN(gemm)(o, m, cols, in[0], m, 1, in[1], cols, 1, out);
            return;
        }
        int64_t ni = s[1].dim[1]; /* w 1x1: per o, [I,M] (w read transposed) x [M, kh*kw] */
        for (int64_t q = 0; q < o; q++)
            KN(gemm)(ni, m, taps, in[1], 1, ni, in[0] + q * m * taps, taps, 1, out + q * ni * taps);
        return;
    }
    case OPS_FORM_COUNT: return; /* excluded by the precondition */
    }
}
