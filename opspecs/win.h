/* win.h - the one owner of sliding-window arithmetic (conv and pools):
 * output sizes, the padding before the first cell, and the input cell a
 * window offset reads. Every kernel, shape rule, cost and ONNX lowering
 * asks here, so the centred-SAME convention is written once:
 *
 *   SAME:  pad_begin = (k-1)/2, out = ceil(in / s)
 *   VALID: pad_begin = 0,       out = (in - k) / s + 1
 *
 * (A 1x1 kernel and its enlarged 3x3 version then look at the same centre
 * for every stride; ONNX's SAME_UPPER does not have that property.) ONNX
 * windows with explicit pads and dilations use the same struct. */
#ifndef OPS_WIN_H
#define OPS_WIN_H

#include <stdint.h>

#include "ops.h"

/* One spatial dim of a window: input size, kernel, stride, padding before
 * the first cell, dilation (1 for every opspecs operator). */
typedef struct {
    int32_t in, k, s, pb, d;
} ops_win;

/* The padding before the first cell of a SAME window (the rest goes after). */
static inline int32_t ops_same_pad(int32_t k) { return (k - 1) / 2; }

/* The padding before the first cell for OPS_PAD_SAME or OPS_PAD_VALID. */
static inline int32_t ops_pad_begin(int32_t k, int32_t pad) {
    return pad == OPS_PAD_SAME ? ops_same_pad(k) : 0;
}

/* Output size of an opspecs window, or -1 when a VALID window does not
 * fit (in < k). @pre s >= 1 */
static inline int32_t ops_win_out(int32_t in, int32_t k, int32_t s, int32_t pad) {
    if (pad == OPS_PAD_SAME) return (int32_t)(((int64_t)in + s - 1) / s);
    return in < k ? -1 : (in - k) / s + 1;
}

/* The opspecs padding of a kh x kw window with explicit ONNX pads (h
 * begin, w begin, h end, w end): OPS_PAD_VALID for none, OPS_PAD_SAME for
 * an odd kernel with the centred (k-1)/2 before, else -1. The end pads
 * follow from the output size, which the caller checks with
 * ops_infer_shape. */
static inline int ops_pad_of(int32_t kh, int32_t kw, const int32_t pads[4]) {
    if (!pads[0] && !pads[1] && !pads[2] && !pads[3]) return OPS_PAD_VALID;
    if (kh % 2 == 1 && kw % 2 == 1 && pads[0] == ops_same_pad(kh) && pads[1] == ops_same_pad(kw))
        return OPS_PAD_SAME;
    return -1;
}

/* The window of an opspecs operator (stride s, OPS_PAD_*). */
static inline ops_win ops_win_make(int32_t in, int32_t k, int32_t s, int32_t pad) {
    ops_win w = {in, k, s, ops_pad_begin(k, pad), 1};
    return w;
}

/* Input coordinate that offset r of output o's window reads, or -1 when it
 * falls in the padding. */
static inline int32_t ops_win_at(const ops_win *w, int32_t o, int32_t r) {
    int64_t i = (int64_t)o * w->s - w->pb + (int64_t)r * w->d;
    return i >= 0 && i < w->in ? (int32_t)i : -1;
}

/* The offsets [*r0, *r1) of output o's window that read inside the input
 * (the others read padding): kernels loop over these instead of testing
 * every tap. @return the input index of the window's tap 0 (tap r reads
 * start + r * d). */
static inline int32_t ops_win_taps(const ops_win *w, int32_t o, int32_t *r0, int32_t *r1) {
    int64_t start = (int64_t)o * w->s - w->pb, d = w->d;
    int64_t lo = start < 0 ? (-start + d - 1) / d : 0;
    int64_t hi = w->in - start <= 0 ? 0 : (w->in - start + d - 1) / d;
    if (hi > w->k) hi = w->k;
    if (lo > hi) lo = hi;
    *r0 = (int32_t)lo, *r1 = (int32_t)hi;
    return (int32_t)start;
}

/* ---- ONNX windows (Conv, pools): the engine's shape rules ---- */

/* How an ONNX window pads: its explicit pads (auto_pad NOTSET), SAME
 * (SAME_UPPER or SAME_LOWER: ceil(in / s) windows) or VALID (none). */
enum { OPS_ONNX_PADS, OPS_ONNX_SAME, OPS_ONNX_VALID };

/* The output size of an ONNX window along one dim: input in, extent dk
 * of the (dilated) kernel, (k - 1) * dilation + 1, stride s, pads pb
 * before and pe after (OPS_ONNX_PADS only), ceil_mode. With explicit pads
 * a ceil_mode window that would start inside the end padding is dropped,
 * as onnxruntime does. @return the size, or -1 when the kernel does not
 * fit the padded input. @pre s >= 1; dk >= 1 (any with SAME); in, pb,
 * pe >= 0. */
static inline int64_t ops_onnx_win_out(int64_t in, int64_t dk, int64_t s, int64_t pb, int64_t pe, int mode,
                                       int ceil_mode) {
    if (mode == OPS_ONNX_SAME) return in == 0 ? 0 : (in - 1) / s + 1;
    if (mode == OPS_ONNX_VALID) pb = pe = 0;
    int64_t span = in + pb + pe - dk;
    if (span < 0) return -1;
    int64_t out = (ceil_mode && span % s ? span / s + 1 : span / s) + 1;
    if (ceil_mode && mode == OPS_ONNX_PADS && (out - 1) * s >= in + pb) out--;
    return out;
}

/* The pads auto_pad SAME_UPPER (upper 1) or SAME_LOWER gives along one
 * dim: the total that makes ceil(in / s) windows, the odd one after
 * (UPPER) or before (LOWER). @pre s >= 1. */
static inline void ops_onnx_same_pads(int64_t in, int64_t k, int64_t s, int upper, int64_t *pb, int64_t *pe) {
    int64_t o = (in + s - 1) / s, total = (o - 1) * s + k - in;
    if (total < 0) total = 0;
    *pb = upper ? total / 2 : total - total / 2;
    *pe = total - *pb;
}

#endif
