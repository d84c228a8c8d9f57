/* infer.c - shape and dtype inference for model operators (ONNX rules,
 * with unknown dims propagated as -1) and opspecs operators (through
 * ops_infer_shape). A mismatch is EG_ESHAPE with the node named; a valid
 * node the model operator does not cover is EG_EUNSUPPORTED, so the
 * importer can keep it opaque instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shapes/infer.h"
#include "shapes/oshape.h"
#include "win.h"


typedef struct {
    eg_graph *g;
    eg_node *n;
    char *err;
    size_t errlen;
} ictx;

/* Input k's tensor, or NULL when omitted or absent. */
static const eg_tensor *in_t(const ictx *c, int k) { return eg_node_in(c->g, c->n, k); }

static const eg_shape *in_s(const ictx *c, int k) { return eg_node_in_shape(c->g, c->n, k); }

/* Set output k's dtype and shape (a skipped output is fine). What the
 * tensor knew already (the file's value_info) fills what inference leaves
 * unknown; the importer checks that the two agree where both know.
 * Symbolic dim names survive only at the same rank. */
static void set_out(const ictx *c, int k, int dtype, const eg_shape *s) {
    if (k >= c->n->n_out || c->n->out[k] < 0) return;
    eg_tensor_set_inferred(&c->g->tensor[c->n->out[k]], dtype, s);
}

static int in_dtype(const ictx *c) {
    const eg_tensor *t = in_t(c, 0);
    return t ? t->dtype : EG_DT_UNDEFINED;
}

static eg_shape unknown_shape(void) {
    eg_shape s;
    memset(&s, 0, sizeof s);
    s.rank = -1;
    return s;
}

/* Two dims that must agree: -1 when both unknown, else the known one;
 * *bad set when both are known and differ. */
static int64_t agree(int64_t a, int64_t b, int *bad) {
    if (a >= 0 && b >= 0 && a != b) *bad = 1;
    return a >= 0 ? a : b;
}

/* Normalise an axis against a rank: [-r, r+extra-1] -> [0, r+extra-1].
 * @return 0, or -1 when out of range. */
static int norm_axis(int64_t axis, int rank, int extra, int *out) {
    if (axis < -(int64_t)rank || axis >= (int64_t)rank + extra) return -1;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return 0;
}

/* ================= convolution and pooling ================= */

/* Resolve auto_pad for both spatial dims once they are known. */
static void resolve_auto_pad(eg_attrs *a, const int64_t in[2], const int64_t k[2]) {
    if (!(a->flags & (EG_AF_AUTO_UPPER | EG_AF_AUTO_LOWER))) return;
    if (in[0] < 0 || in[1] < 0 || k[0] < 0 || k[1] < 0) return;
    for (int i = 0; i < 2; i++) {
        int64_t pb, pe;
        ops_onnx_same_pads(in[i], k[i], a->stride[i], (a->flags & EG_AF_AUTO_UPPER) != 0, &pb, &pe);
        a->pad[i] = (int32_t)pb, a->pad[i + 2] = (int32_t)pe;
    }
    a->flags &= ~(EG_AF_AUTO_UPPER | EG_AF_AUTO_LOWER);
}

/* Output size of the 2 spatial dims (-1 where unknown). */
static eg_status window_out(const ictx *c, const eg_attrs *a, const int64_t in[2],
                            const int64_t k[2], int64_t out[2]) {
    if (a->stride[0] < 1 || a->stride[1] < 1) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "strides must be >= 1");
    for (int i = 0; i < 2; i++) {
        out[i] = -1;
        if (in[i] < 0 || k[i] < 0 || (a->flags & (EG_AF_AUTO_UPPER | EG_AF_AUTO_LOWER)))
            continue;
        out[i] = ops_onnx_win_out(in[i], k[i], a->stride[i], a->pad[i], a->pad[i + 2], OPS_ONNX_PADS, 0);
        if (out[i] < 0)
            return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "spatial dim %d: input %lld (padded by %d+%d) is "
                         "smaller than the kernel %lld", i, (long long)in[i], (int)a->pad[i], (int)a->pad[i + 2], (long long)k[i]);
    }
    return EG_OK;
}

/* The 2-D window ops need an NCHW input; other ranks are valid ONNX that
 * these model operators do not cover. */
static eg_status need_4d(const ictx *c, const eg_shape *x) {
    if (x->rank >= 0 && x->rank != 4)
        return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "only 2-D (rank-4 NCHW) inputs are modelled, "
                     "got rank %d", x->rank);
    return EG_OK;
}

static eg_status conv_weights(const ictx *c, const eg_shape *x, const eg_shape *w,
                              int64_t k[2]) {
    eg_attrs *a = &c->n->attr;
    int bad = 0;
    if (w->rank >= 0 && w->rank != 4)
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "W must have rank 4, got %d", w->rank);
    for (int i = 0; i < 2; i++) {
        k[i] = agree(a->kernel[i] ? a->kernel[i] : -1, w->rank == 4 ? w->dim[2 + i] : -1, &bad);
        if (k[i] >= 0) a->kernel[i] = (int32_t)k[i];
    }
    if (bad) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "kernel_shape does not match W");
    if (a->group < 1) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "group %d", (int)a->group);
    if (w->rank == 4 && w->dim[0] >= 0 && w->dim[0] % a->group)
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "group %d does not divide the %lld output channels", (int)a->group, (long long)w->dim[0]);
    if (x->rank == 4 && w->rank == 4 && x->dim[1] >= 0 && w->dim[1] >= 0 &&
        w->dim[1] * a->group != x->dim[1])
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "X has %lld channels but W expects %lld x group %d", (long long)x->dim[1], (long long)w->dim[1], (int)a->group);
    return EG_OK;
}

static eg_status conv_bias(const ictx *c, const eg_shape *w) {
    const eg_shape *b = in_s(c, 2);
    if (!in_t(c, 2) || b->rank < 0) return EG_OK;
    int bad = b->rank != 1;
    if (!bad && w->rank == 4) agree(b->dim[0], w->dim[0], &bad);
    return bad ? eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "B must be [M] for M output channels") : EG_OK;
}

static eg_status infer_conv(const ictx *c) {
    const eg_shape *x = in_s(c, 0), *w = in_s(c, 1);
    eg_shape o = unknown_shape();
    int64_t k[2], in[2], sp[2];
    eg_status rc = need_4d(c, x);
    if (rc == EG_OK) rc = conv_weights(c, x, w, k);
    if (rc == EG_OK) rc = conv_bias(c, w);
    if (rc != EG_OK || x->rank < 0) {
        if (rc == EG_OK) set_out(c, 0, in_dtype(c), &o);
        return rc;
    }
    in[0] = x->dim[2], in[1] = x->dim[3];
    resolve_auto_pad(&c->n->attr, in, k);
    rc = window_out(c, &c->n->attr, in, k, sp);
    if (rc != EG_OK) return rc;
    o.rank = 4;
    o.dim[0] = x->dim[0], o.dim[1] = w->rank == 4 ? w->dim[0] : -1;
    o.dim[2] = sp[0], o.dim[3] = sp[1];
    set_out(c, 0, in_dtype(c), &o);
    return EG_OK;
}

/* ceil_mode = 1, modelled where it is floor's size with other pads. Where
 * ceil and floor give the same size, the flag is just cleared. Where ceil
 * gives one more window (whose start ONNX wants inside the input or its
 * begin pad), a MaxPool is the same pool, floor sized, with a longer end
 * pad: max ignores padding. Written so, when that pad stays under the
 * kernel (onnxruntime's rule); out[] is then the new size. An AveragePool
 * would divide by other counts: it stays opaque, as does a pool while a
 * dim is unknown. */
static eg_status ceil_mode(const ictx *c, eg_attrs *a, const int64_t in[2], const int64_t k[2], int64_t out[2]) {
    int64_t extra[2] = {0, 0};
    if (!(a->flags & EG_AF_CEIL)) return EG_OK;
    for (int i = 0; i < 2; i++) {
        if (in[i] < 0 || k[i] < 0 || (a->flags & (EG_AF_AUTO_UPPER | EG_AF_AUTO_LOWER)))
            return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "ceil_mode = 1 with an input size unknown");
        int64_t s = a->stride[i], floor_n = (in[i] + a->pad[i] + a->pad[i + 2] - k[i]) / s + 1;
        int64_t n = ops_onnx_win_out(in[i], k[i], s, a->pad[i], a->pad[i + 2], OPS_ONNX_PADS, 1);
        if (n < floor_n) n = floor_n; /* a window ceil drops is one floor keeps */
        extra[i] = (n - 1) * s + k[i] - (in[i] + a->pad[i] + a->pad[i + 2]);
        if (extra[i] > 0 && (c->n->mop != EG_MOP_MAXPOOL || a->pad[i + 2] + extra[i] >= k[i]))
            return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "ceil_mode = 1 gives a larger output than floor");
    }
    for (int i = 0; i < 2; i++)
        if (extra[i] > 0) {
            a->pad[i + 2] += (int32_t)extra[i];
            out[i] = (in[i] + a->pad[i] + a->pad[i + 2] - k[i]) / a->stride[i] + 1;
        }
    a->flags &= ~EG_AF_CEIL;
    return EG_OK;
}

static eg_status infer_pool(const ictx *c) {
    const eg_shape *x = in_s(c, 0);
    eg_shape o = unknown_shape();
    eg_attrs *a = &c->n->attr;
    int64_t k[2] = {a->kernel[0], a->kernel[1]}, in[2], sp[2];
    eg_status rc = need_4d(c, x);
    if (rc != EG_OK) return rc;
    if (x->rank != 4 && (a->flags & EG_AF_CEIL))
        return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "ceil_mode = 1 with an input of unknown rank");
    if (x->rank == 4) {
        in[0] = x->dim[2], in[1] = x->dim[3];
        resolve_auto_pad(a, in, k);
        if ((rc = window_out(c, a, in, k, sp)) != EG_OK) return rc;
        if ((rc = ceil_mode(c, a, in, k, sp)) != EG_OK) return rc;
        o.rank = 4;
        o.dim[0] = x->dim[0], o.dim[1] = x->dim[1], o.dim[2] = sp[0], o.dim[3] = sp[1];
    }
    set_out(c, 0, in_dtype(c), &o);
    return EG_OK;
}

static eg_status infer_gap(const ictx *c) {
    eg_shape o = *in_s(c, 0);
    if (o.rank >= 0 && o.rank < 3)
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "needs rank >= 3 (N, C, spatial...), got %d", o.rank);
    for (int i = 2; i < o.rank; i++) o.dim[i] = 1;
    set_out(c, 0, in_dtype(c), &o);
    return EG_OK;
}

/* ================= matrix products and broadcasting ================= */

/* Can dim `from` be broadcast with `to`? @return the result or -2 bad. */
/* Before opset 7, broadcast = 1 stretched b to a (a's shape is the result)
 * at `axis` (default: b's dims are a's last ones). numpy's broadcast means
 * the same when b's dims are a's last dims exactly, or b has one element.
 * @return 1 then; 0 otherwise, or while a shape is not fully known. */
static int legacy_is_numpy(const eg_attrs *at, const eg_shape *a, const eg_shape *b) {
    int64_t nb = eg_shape_numel(b);
    if (!eg_shape_known(a) || !eg_shape_known(b) || b->rank > a->rank) return 0;
    if (nb == 1) return 1;
    if ((at->flags & EG_AF_HAS_AXIS) && at->axis != a->rank - b->rank &&
        at->axis != -b->rank)
        return 0;
    for (int i = 0; i < b->rank; i++)
        if (b->dim[i] != a->dim[a->rank - b->rank + i]) return 0;
    return 1;
}

static eg_status infer_binary(const ictx *c) {
    char sa[160], sb[160];
    eg_shape o;
    if (!in_t(c, 0) || !in_t(c, 1)) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "needs two inputs");
    if ((c->n->attr.flags & EG_AF_LEGACY_BCAST) && !legacy_is_numpy(&c->n->attr, in_s(c, 0), in_s(c, 1)))
        return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "opset %d broadcast = 1 differs from numpy broadcasting "
                     "(or shapes unknown)", c->g->opset);
    if (eg_shape_broadcast(in_s(c, 0), in_s(c, 1), &o))
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "shapes %s and %s do not broadcast", eg_shape_str(in_s(c, 0), NULL, sa, sizeof sa), eg_shape_str(in_s(c, 1), NULL, sb, sizeof sb));
    set_out(c, 0, in_dtype(c), &o);
    return EG_OK;
}

/* Sum: numpy broadcasting of every input from opset 8, equal shapes
 * before (anything else is kept opaque). */
static eg_status infer_sum(const ictx *c) {
    char sa[160], sb[160];
    eg_shape o = *in_s(c, 0), t;
    for (int k = 0; k < c->n->n_in; k++) {
        const eg_shape *s = in_s(c, k);
        if (!in_t(c, k)) return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "input %d is omitted", k);
        if (c->g->opset < 8 && (!eg_shape_known(s) || !eg_shape_known(&o) || !eg_shape_equal(s, &o)))
            return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "opset %d Sum needs equal known shapes", c->g->opset);
        if (eg_shape_broadcast(&o, s, &t))
            return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "shapes %s and %s do not broadcast", eg_shape_str(&o, NULL, sa, sizeof sa), eg_shape_str(s, NULL, sb, sizeof sb));
        o = t;
    }
    set_out(c, 0, in_dtype(c), &o);
    return EG_OK;
}

/* Can `from` broadcast one way to `to` (each trailing dim 1 or equal)? */
static int unidirectional(const eg_shape *from, const eg_shape *to) {
    if (from->rank < 0 || to->rank < 0) return 1;
    if (from->rank > to->rank) return 0;
    for (int i = 0; i < from->rank; i++) {
        int64_t f = from->dim[i], t = to->dim[to->rank - from->rank + i];
        if (f >= 0 && f != 1 && t >= 0 && f != t) return 0;
    }
    return 1;
}

static eg_status infer_gemm(const ictx *c) {
    const eg_shape *a = in_s(c, 0), *b = in_s(c, 1), *cc = in_s(c, 2);
    uint32_t f = c->n->attr.flags;
    eg_shape o = unknown_shape();
    int64_t ka, kb;
    if ((a->rank >= 0 && a->rank != 2) || (b->rank >= 0 && b->rank != 2))
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "A and B must have rank 2");
    if (eg_osh_gemm(a, b, (f & EG_AF_TRANS_A) != 0, (f & EG_AF_TRANS_B) != 0, &o, &ka, &kb) != EG_OSH_OK)
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "inner dimensions of A and B differ");
    /* C broadcasts one way, to [M, N] */
    if (in_t(c, 2) && !unidirectional(cc, &o))
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "C does not broadcast to [M, N]");
    if (in_t(c, 2) && (c->n->attr.flags & EG_AF_LEGACY_BCAST) && !legacy_is_numpy(&c->n->attr, &o, cc))
        return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "opset %d broadcast = 1 of C differs from numpy "
                     "broadcasting (or shapes unknown)", c->g->opset);
    set_out(c, 0, in_dtype(c), &o);
    return EG_OK;
}

/* numpy matmul: rank-1 operands are promoted and the promoted dim dropped. */
static eg_status infer_matmul(const ictx *c) {
    const eg_shape *a = in_s(c, 0), *b = in_s(c, 1);
    eg_shape o = unknown_shape();
    if (a->rank == 0 || b->rank == 0) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "operands must have rank >= 1");
    if (a->rank < 0 || b->rank < 0) {
        set_out(c, 0, in_dtype(c), &o);
        return EG_OK;
    }
    int64_t ka, kb;
    int sh = eg_osh_matmul(a, b, &o, &ka, &kb);
    if (sh == EG_OSH_INNER)
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "inner dimensions %lld and %lld differ", (long long)ka,
                            (long long)kb);
    if (sh == EG_OSH_BATCH) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "batch dimensions do not broadcast");
    if (sh != EG_OSH_OK)
        return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "result rank over %d", EG_MAX_RANK);
    set_out(c, 0, in_dtype(c), &o);
    return EG_OK;
}

static eg_status infer_same(const ictx *c) {
    set_out(c, 0, in_dtype(c), in_s(c, 0));
    return EG_OK;
}

/* ================= layout ================= */

static eg_status infer_concat(const ictx *c) {
    eg_shape o = unknown_shape();
    int rank = -1, axis, bad = 0;
    for (int k = 0; k < c->n->n_in; k++) {
        if (!in_t(c, k)) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "input %d is missing", k);
        if (in_s(c, k)->rank < 0) {
            set_out(c, 0, in_dtype(c), &o);
            return EG_OK;
        }
        if (rank >= 0 && in_s(c, k)->rank != rank) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "ranks differ");
        rank = in_s(c, k)->rank;
    }
    if (norm_axis(c->n->attr.axis, rank, 0, &axis) || rank == 0)
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "axis %d out of range for rank %d", (int)c->n->attr.axis, rank);
    o = *in_s(c, 0);
    for (int k = 1; k < c->n->n_in; k++)
        if (eg_osh_concat_add(&o, in_s(c, k), axis, &bad) != EG_OSH_OK)
            return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "dims off axis %d differ", axis);
    if (eg_shape_numel(&o) == -2) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "result too large");
    set_out(c, 0, in_dtype(c), &o);
    return EG_OK;
}

int eg_const_ints(const eg_tensor *t, int64_t *out, int max) {
    if (!t || !(t->flags & EG_TF_INIT) || t->dtype != EG_DT_INT64 || !t->raw ||
        t->raw_len % 8 || t->raw_len / 8 > (size_t)max)
        return -1;
    int n = (int)(t->raw_len / 8);
    for (int i = 0; i < n; i++) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--) v = v << 8 | t->raw[8 * i + b];
        out[i] = (int64_t)v;
    }
    return n;
}

/* The Split sizes: attribute, constant input, or an equal split of d.
 * @return EG_OK with sizes[n_out] (-1 when d is unknown). */
static eg_status split_sizes(const ictx *c, int64_t d, int64_t *sizes) {
    const eg_attrs *a = &c->n->attr;
    int n = c->n->n_out;
    if (a->flags & EG_AF_INTS) {
        if (a->n_ints != n) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "%d split sizes for %d outputs", a->n_ints, n);
        memcpy(sizes, a->ints, sizeof(int64_t) * (size_t)n);
    } else if (in_t(c, 1)) {
        if (eg_const_ints(in_t(c, 1), sizes, n) != n)
            return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "split sizes are not a constant of %d int64s", n);
    } else {
        if (d >= 0 && !(a->flags & EG_AF_NUM_OUTPUTS) && d % n)
            return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "dim %lld does not split evenly in %d", (long long)d, n);
        eg_osh_split_even(d, n, sizes);
    }
    int64_t sum = 0;
    for (int k = 0; k < n; k++) {
        if (sizes[k] < -1 || (d >= 0 && (sizes[k] < 0 || sizes[k] > d)))
            return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "split size %lld out of range", (long long)sizes[k]);
        if (d >= 0) sum += sizes[k]; /* each <= d: no overflow */
    }
    if (d >= 0 && sum != d)
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "split sizes sum to %lld, not %lld", (long long)sum, (long long)d);
    return EG_OK;
}

static eg_status infer_split(const ictx *c) {
    eg_shape x = *in_s(c, 0);
    int axis;
    if (c->n->n_out > 4096) return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "too many outputs");
    int64_t sizes[4096];
    /* a sizes input must be a constant, whatever else is known */
    if (in_t(c, 1) && eg_const_ints(in_t(c, 1), sizes, c->n->n_out) != c->n->n_out)
        return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "split sizes are not a constant of %d int64s", c->n->n_out);
    if (x.rank < 0) {
        for (int k = 0; k < c->n->n_out; k++) set_out(c, k, in_dtype(c), &x);
        return EG_OK;
    }
    if (norm_axis(c->n->attr.axis, x.rank, 0, &axis))
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "axis %d out of range for rank %d", (int)c->n->attr.axis, x.rank);
    eg_status rc = split_sizes(c, x.dim[axis], sizes);
    for (int k = 0; rc == EG_OK && k < c->n->n_out; k++) {
        eg_shape o = x;
        o.dim[axis] = sizes[k];
        set_out(c, k, in_dtype(c), &o);
    }
    return rc;
}

static eg_status infer_transpose(const ictx *c) {
    const eg_shape *x = in_s(c, 0);
    const eg_attrs *a = &c->n->attr;
    eg_shape o = unknown_shape();
    if (x->rank >= 0) {
        int n = a->flags & EG_AF_INTS ? a->n_ints : -1, sh = eg_osh_transpose(x, a->ints, n, &o);
        if (sh == EG_OSH_RANK)
            return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "perm has %d entries for rank %d", n, x->rank);
        if (sh != EG_OSH_OK)
            return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "perm is not a permutation of 0..%d", x->rank - 1);
    }
    set_out(c, 0, in_dtype(c), &o);
    return EG_OK;
}

static eg_status infer_reshape(const ictx *c) {
    const eg_shape *x = in_s(c, 0);
    eg_shape o = unknown_shape();
    int64_t t[EG_MAX_RANK], in, rest;
    const eg_attrs *a = &c->n->attr;
    int n = eg_const_ints(in_t(c, 1), t, EG_MAX_RANK), at = 0;
    if ((a->flags & EG_AF_INTS) && a->n_ints <= EG_MAX_RANK) /* Reshape-1: an attribute */
        n = a->n_ints, memcpy(t, a->ints, sizeof(int64_t) * (size_t)n);
    if (n < 0) return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "the target shape is not a constant int64 vector");
    switch (eg_osh_reshape(x, t, n, (a->flags & EG_AF_ALLOWZERO) != 0, 1, &o, &at, &in, &rest)) {
    case EG_OSH_OK: set_out(c, 0, in_dtype(c), &o); return EG_OK;
    case EG_OSH_DIM:
        if (t[at] < -1) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "target dim %lld", (long long)t[at]);
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "more than one -1 in the target");
    case EG_OSH_COPY:
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "target copies dim %d of a rank-%d input", at, x->rank);
    case EG_OSH_LARGE:
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, in == -2 ? "input too large" : "target too large");
    case EG_OSH_COUNT:
        for (int i = 0; i < n; i++)
            if (t[i] == -1)
                return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "cannot reshape %lld elements with a -1 over %lld", (long long)in, (long long)rest);
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "cannot reshape %lld elements into %lld", (long long)in, (long long)rest);
    case EG_OSH_INNER:
    case EG_OSH_BATCH:
    case EG_OSH_RANK:
    case EG_OSH_PERM: break;
    }
    return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "bad target");
}

static eg_status infer_flatten(const ictx *c) {
    const eg_shape *x = in_s(c, 0);
    eg_shape o = unknown_shape();
    int axis;
    if (x->rank >= 0) {
        if (norm_axis(c->n->attr.axis, x->rank, 1, &axis))
            return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "axis %d out of range for rank %d", (int)c->n->attr.axis, x->rank);
        if (eg_osh_flatten(x, axis, &o) != EG_OSH_OK)
            return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "input too large");
    }
    set_out(c, 0, in_dtype(c), &o);
    return EG_OK;
}

static eg_status infer_batchnorm(const ictx *c) {
    const eg_shape *x = in_s(c, 0);
    int bad = 0;
    if (x->rank >= 0 && x->rank < 2) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "X needs rank >= 2");
    for (int k = 1; k < 5; k++) {
        const eg_shape *p = in_s(c, k);
        if (!in_t(c, k)) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "input %d is missing", k);
        if (p->rank < 0) continue;
        if (p->rank != 1) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "input %d must have rank 1", k);
        if (x->rank >= 2) agree(x->dim[1], p->dim[0], &bad);
    }
    if (bad) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "parameters do not match the %lld channels", (long long)x->dim[1]);
    return infer_same(c);
}

/* Before opset 13 Softmax flattened at axis; it agrees with the per-axis
 * meaning only when axis is the last one. */
static eg_status infer_softmax(const ictx *c) {
    const eg_shape *x = in_s(c, 0);
    int axis;
    if (x->rank < 0) {
        if (c->g->opset < 13) return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "rank unknown before opset 13");
        return infer_same(c);
    }
    if (norm_axis(c->n->attr.axis, x->rank, 0, &axis))
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "axis %d out of range for rank %d", (int)c->n->attr.axis, x->rank);
    if (c->g->opset < 13 && axis != x->rank - 1)
        return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "opset %d flattens at a non-last axis", c->g->opset);
    return infer_same(c);
}

/* LayerNormalization over the axes from `axis` on, in float32 (what the
 * kernels compute), with Scale and B of exactly the normalised shape: the
 * broadcasting the operator also allows stays opaque. */
static eg_status infer_layernorm(const ictx *c) {
    const eg_shape *x = in_s(c, 0);
    int axis, bad = 0;
    if (x->rank < 1) return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "X needs a known rank >= 1");
    if (in_dtype(c) != EG_DT_FLOAT) return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "only float32 is modelled");
    if (norm_axis(c->n->attr.axis, x->rank, 0, &axis))
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "axis %d out of range for rank %d", (int)c->n->attr.axis, x->rank);
    for (int k = 1; k < 3; k++) {
        const eg_shape *p = in_s(c, k);
        if (!in_t(c, k)) {
            if (k == 1) return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "Scale is missing");
            continue;
        }
        if (p->rank != x->rank - axis || in_t(c, k)->dtype != EG_DT_FLOAT)
            return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "input %d is not float32 of the normalised shape", k);
        for (int d = 0; d < p->rank; d++) {
            if (p->dim[d] < 0 || x->dim[axis + d] < 0)
                return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "input %d: unknown dims", k);
            agree(p->dim[d], x->dim[axis + d], &bad);
        }
    }
    if (bad) return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "Scale or B broadcasts to the normalised shape");
    return infer_same(c);
}

/* ================= dispatch ================= */

static eg_status infer_model(const ictx *c) {
    switch (c->n->mop) {
    case EG_MOP_CONV: return infer_conv(c);
    case EG_MOP_MAXPOOL:
    case EG_MOP_AVGPOOL: return infer_pool(c);
    case EG_MOP_GLOBALAVGPOOL: return infer_gap(c);
    case EG_MOP_GEMM: return infer_gemm(c);
    case EG_MOP_MATMUL: return infer_matmul(c);
    case EG_MOP_ADD:
    case EG_MOP_MUL:
    case EG_MOP_DIV: return infer_binary(c);
    case EG_MOP_RELU:
    case EG_MOP_SIGMOID:
    case EG_MOP_TANH:
    case EG_MOP_IDENTITY: return infer_same(c);
    case EG_MOP_CONCAT: return infer_concat(c);
    case EG_MOP_SPLIT: return infer_split(c);
    case EG_MOP_TRANSPOSE: return infer_transpose(c);
    case EG_MOP_RESHAPE: return infer_reshape(c);
    case EG_MOP_FLATTEN: return infer_flatten(c);
    case EG_MOP_BATCHNORM: return infer_batchnorm(c);
    case EG_MOP_SOFTMAX: return infer_softmax(c);
    case EG_MOP_LAYERNORM: return infer_layernorm(c);
    case EG_MOP_SUM: return infer_sum(c);
    case EG_MOP_COUNT: break;
    }
    return eg_node_errf(c->err, c->errlen, EG_EUNSUPPORTED, c->n, "unknown model operator");
}

/* opspecs operators: inputs are known by invariant; ops_infer_shape has
 * the rule and the message. */
static eg_status infer_ops(const ictx *c) {
    ten_shape in[OPS_MAX_ARITY], out;
    eg_shape o;
    char oerr[OPS_ERRLEN];
    for (int k = 0; k < ops_table[c->n->op].arity; k++)
        if (!in_t(c, k) || !eg_to_ten_shape(in_s(c, k), &in[k]))
            return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "input %d has no usable shape", k);
    if (ops_infer_shape(c->n->op, c->n->param, in, &out, oerr) != OPS_OK)
        return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "%s", oerr);
    eg_from_ten_shape(&out, &o);
    set_out(c, 0, EG_DT_FLOAT, &o);
    return EG_OK;
}

/* Every known dim stays <= EG_DIM_MAX, so the sums and products of the
 * rules above cannot overflow on the next node either. */
static eg_status check_dims(const ictx *c) {
    for (int k = 0; k < c->n->n_out; k++) {
        const eg_tensor *t = c->n->out[k] >= 0 ? &c->g->tensor[c->n->out[k]] : NULL;
        for (int i = 0; t && i < t->shape.rank; i++)
            if (t->shape.dim[i] > EG_DIM_MAX)
                return eg_node_errf(c->err, c->errlen, EG_ESHAPE, c->n, "output '%s' dim %d is %lld, over %lld", t->name, i, (long long)t->shape.dim[i], (long long)EG_DIM_MAX);
    }
    return EG_OK;
}

eg_status eg_infer_node(eg_graph *g, int id, char *err, size_t errlen) {
    ictx c = {g, &g->node[id], err, errlen};
    eg_status rc = EG_EUNSUPPORTED;
    switch (c.n->kind) {
    case EG_KIND_OPS: rc = infer_ops(&c); break;
    case EG_KIND_MODEL: rc = infer_model(&c); break;
    case EG_KIND_OPAQUE: return EG_OK;
    case EG_KIND_COUNT: return eg_node_errf(c.err, c.errlen, EG_EUNSUPPORTED, c.n, "unknown node kind");
    }
    return rc == EG_OK ? check_dims(&c) : rc;
}

eg_status eg_infer_all(eg_graph *g, char *err, size_t errlen) {
    for (int j = 0; j < g->n_nodes; j++) {
        eg_status rc = eg_infer_node(g, j, err, errlen);
        if (rc != EG_OK) return rc;
    }
    return EG_OK;
}

eg_status eg_resolve(eg_graph *g, char *err, size_t errlen) {
    eg_status rc = eg_index(g, err, errlen); /* the sort follows producers */
    if (rc == EG_OK) rc = eg_toposort(g, err, errlen);
    return rc == EG_OK ? eg_infer_all(g, err, errlen) : rc;
}
