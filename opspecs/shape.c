/* shape.c - the shape function of every operator (ops_infer_shape):
 * validates parameters and input shapes, computes the output shape.
 *
 * Error classes: OPS_EPARAM when a parameter is outside its domain or does
 * not fit the input it applies to (axis >= rank, split size, groups not
 * dividing C and O, pool/enlarge/iconv kernel sizes); OPS_ESHAPE when the
 * input shapes themselves do not fit (ranks, mismatched dims, an input
 * smaller than a VALID window, an even conv kernel under SAME padding).
 */
#include <stdarg.h>
#include <stdio.h>

#include "ops.h"
#include "win.h"

#if defined(__GNUC__)
#define SHAPE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SHAPE_PRINTF(f, a)
#endif

/* Kernel sizes fit in a byte each (OPS_KERNEL packs them). */
#define KERNEL_MAX 255

/* Write "op [in0] [in1]: reason" into err (unless NULL) and return rc. */
SHAPE_PRINTF(5, 6)
static ops_status fail(ops_op op, ops_status rc, const ten_shape *in,
                       char err[OPS_ERRLEN], const char *fmt, ...) {
    char sbuf[64];
    if (!err) return rc;
    int n = snprintf(err, OPS_ERRLEN, "%s", ops_table[op].name);
    for (int i = 0; i < ops_table[op].arity && n < OPS_ERRLEN; i++)
        n += snprintf(err + n, (size_t)(OPS_ERRLEN - n), " %s",
                      ten_shape_str(&in[i], sbuf));
    if (n < OPS_ERRLEN - 2) {
        n += snprintf(err + n, (size_t)(OPS_ERRLEN - n), ": ");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, (size_t)(OPS_ERRLEN - n), fmt, ap);
        va_end(ap);
    }
    return rc;
}

static int stride_ok(int32_t s) { return s >= 1 && s <= TEN_MAX_DIM; }
static int pad_ok(int32_t p) { return p == OPS_PAD_SAME || p == OPS_PAD_VALID; }
static int act_ok(int32_t a) { return a == OPS_ACT_NONE || a == OPS_ACT_RELU; }

/* A packed kernel with both sizes in 1..255 (a negative or oversized value
 * would unpack into garbage). */
static int kernel_ok(int32_t k) {
    return k >= OPS_KERNEL(1, 1) && k <= OPS_KERNEL(KERNEL_MAX, KERNEL_MAX) &&
           OPS_KERNEL_W(k) >= 1;
}

static int odd(int32_t v) { return v % 2 == 1; }

/* Cap on cells so ten_numel and the byte count of ten_alloc cannot
 * overflow (four dims of 65536 would overflow int64). */
static int numel_ok(const ten_shape *s) {
    const uint64_t limit = (uint64_t)INT64_MAX / 16;
    uint64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if ((uint64_t)s->dim[i] > limit / n) return 0;
        n *= (uint64_t)s->dim[i];
    }
    return 1;
}

static void set4(ten_shape *o, int32_t a, int32_t b, int32_t c, int32_t d) {
    o->rank = 4;
    o->dim[0] = a, o->dim[1] = b, o->dim[2] = c, o->dim[3] = d;
}

static void set2(ten_shape *o, int32_t a, int32_t b) {
    o->rank = 2;
    o->dim[0] = a, o->dim[1] = b;
    o->dim[2] = o->dim[3] = 0;
}

static ops_status shape_matmul(const ten_shape *in, ten_shape *out, char *err) {
    const ten_shape *x = &in[0], *y = &in[1];
    if (x->rank != 2 || y->rank != 2)
        return fail(OP_MATMUL, OPS_ESHAPE, in, err, "needs rank 2 x rank 2");
    if (x->dim[1] != y->dim[0])
        return fail(OP_MATMUL, OPS_ESHAPE, in, err, "inner dims %d != %d",
                    (int)x->dim[1], (int)y->dim[0]);
    set2(out, x->dim[0], y->dim[1]);
    return OPS_OK;
}

static ops_status shape_bmm(const ten_shape *in, ten_shape *out, char *err) {
    const ten_shape *x = &in[0], *y = &in[1];
    if (x->rank != 4 || y->rank != 4) return fail(OP_BMM, OPS_ESHAPE, in, err, "needs rank 4 x rank 4");
    if (x->dim[0] != y->dim[0] || x->dim[1] != y->dim[1])
        return fail(OP_BMM, OPS_ESHAPE, in, err, "batch dims differ");
    if (x->dim[3] != y->dim[2])
        return fail(OP_BMM, OPS_ESHAPE, in, err, "inner dims %d != %d", (int)x->dim[3], (int)y->dim[2]);
    *out = *x;
    out->dim[3] = y->dim[3];
    return OPS_OK;
}

static ops_status shape_linear(const ten_shape *in, ten_shape *out, char *err) {
    const ten_shape *x = &in[0], *w = &in[1];
    if (x->rank != 3 || w->rank != 2) return fail(OP_LINEAR, OPS_ESHAPE, in, err, "needs rank 3 x rank 2");
    if (x->dim[2] != w->dim[0])
        return fail(OP_LINEAR, OPS_ESHAPE, in, err, "inner dims %d != %d", (int)x->dim[2], (int)w->dim[0]);
    *out = *x;
    out->dim[2] = w->dim[1];
    return OPS_OK;
}

static ops_status conv_params(const int32_t *p, const ten_shape *in, char *err) {
    if (!stride_ok(p[0]))
        return fail(OP_CONV2D, OPS_EPARAM, in, err, "bad stride %d", (int)p[0]);
    if (!pad_ok(p[1]))
        return fail(OP_CONV2D, OPS_EPARAM, in, err, "bad pad %d", (int)p[1]);
    if (!act_ok(p[2]))
        return fail(OP_CONV2D, OPS_EPARAM, in, err, "bad act %d", (int)p[2]);
    if (p[3] < 1)
        return fail(OP_CONV2D, OPS_EPARAM, in, err, "bad groups %d", (int)p[3]);
    return OPS_OK;
}

/* conv2d(stride, pad, act, groups; x [N,C,H,W], w [O,C/g,kh,kw]). */
static ops_status shape_conv(const int32_t *p, const ten_shape *in,
                             ten_shape *out, char *err) {
    const ten_shape *x = &in[0], *w = &in[1];
    ops_status rc = conv_params(p, in, err);
    if (rc != OPS_OK) return rc;
    if (x->rank != 4 || w->rank != 4)
        return fail(OP_CONV2D, OPS_ESHAPE, in, err, "needs rank 4 x and w");
    int32_t g = p[3], kh = w->dim[2], kw = w->dim[3];
    if (x->dim[1] % g || w->dim[0] % g)
        return fail(OP_CONV2D, OPS_EPARAM, in, err,
                    "groups %d must divide C and O", (int)g);
    if ((int64_t)w->dim[1] * g != x->dim[1])
        return fail(OP_CONV2D, OPS_ESHAPE, in, err,
                    "w.dim[1]*groups != C (groups %d)", (int)g);
    if (p[1] == OPS_PAD_SAME && (!odd(kh) || !odd(kw)))
        return fail(OP_CONV2D, OPS_ESHAPE, in, err, "SAME needs an odd kernel");
    int32_t oh = ops_win_out(x->dim[2], kh, p[0], p[1]);
    int32_t ow = ops_win_out(x->dim[3], kw, p[0], p[1]);
    if (oh < 0 || ow < 0)
        return fail(OP_CONV2D, OPS_ESHAPE, in, err, "input smaller than the VALID kernel");
    set4(out, x->dim[0], w->dim[0], oh, ow);
    return OPS_OK;
}

/* ewadd/ewmul: identical shapes, no broadcasting. */
static ops_status shape_ew(ops_op op, const ten_shape *in, ten_shape *out,
                           char *err) {
    if (!ten_shape_eq(&in[0], &in[1]))
        return fail(op, OPS_ESHAPE, in, err, "shapes differ");
    *out = in[0];
    return OPS_OK;
}

static ops_status shape_smul(ops_op op, const ten_shape *in, ten_shape *out, char *err) {
    if (in[1].rank != 0)
        return fail(op, OPS_ESHAPE, in, err, "the scalar must have rank 0");
    *out = in[0];
    return OPS_OK;
}

/* avgpool/maxpool(kernel, stride, pad; x [N,C,H,W]). */
static ops_status shape_pool(ops_op op, const int32_t *p, const ten_shape *in,
                             ten_shape *out, char *err) {
    const ten_shape *x = &in[0];
    if (!kernel_ok(p[0]))
        return fail(op, OPS_EPARAM, in, err, "bad kernel %d", (int)p[0]);
    if (!stride_ok(p[1]))
        return fail(op, OPS_EPARAM, in, err, "bad stride %d", (int)p[1]);
    if (!pad_ok(p[2]))
        return fail(op, OPS_EPARAM, in, err, "bad pad %d", (int)p[2]);
    int32_t kh = OPS_KERNEL_H(p[0]), kw = OPS_KERNEL_W(p[0]);
    if (p[2] == OPS_PAD_SAME && (!odd(kh) || !odd(kw)))
        return fail(op, OPS_EPARAM, in, err, "SAME needs an odd kernel, got %dx%d",
                    (int)kh, (int)kw);
    if (x->rank != 4) return fail(op, OPS_ESHAPE, in, err, "needs rank 4");
    int32_t oh = ops_win_out(x->dim[2], kh, p[1], p[2]);
    int32_t ow = ops_win_out(x->dim[3], kw, p[1], p[2]);
    if (oh < 0 || ow < 0)
        return fail(op, OPS_ESHAPE, in, err, "input smaller than the %dx%d window",
                    (int)kh, (int)kw);
    set4(out, x->dim[0], x->dim[1], oh, ow);
    return OPS_OK;
}

/* concat(axis; x, y): equal ranks, equal dims off the axis. */
static ops_status shape_concat(ops_op op, const int32_t *p, const ten_shape *in,
                               ten_shape *out, char *err) {
    const ten_shape *x = &in[0], *y = &in[1];
    if (x->rank != y->rank)
        return fail(op, OPS_ESHAPE, in, err, "ranks differ");
    if (p[0] < 0 || p[0] >= x->rank)
        return fail(op, OPS_EPARAM, in, err, "axis %d out of range", (int)p[0]);
    for (int i = 0; i < x->rank; i++)
        if (i != p[0] && x->dim[i] != y->dim[i])
            return fail(op, OPS_ESHAPE, in, err, "dim %d differs", i);
    *out = *x;
    out->dim[p[0]] = x->dim[p[0]] + y->dim[p[0]]; /* <= 2^17: no overflow */
    return OPS_OK;
}

/* split0/split1(axis, size; x): 1 <= size < dim[axis]. */
static ops_status shape_split(ops_op op, const int32_t *p, const ten_shape *in,
                              ten_shape *out, char *err) {
    const ten_shape *x = &in[0];
    if (p[0] < 0 || p[0] >= x->rank)
        return fail(op, OPS_EPARAM, in, err, "axis %d out of range", (int)p[0]);
    int32_t d = x->dim[p[0]];
    if (p[1] < 1 || p[1] >= d)
        return fail(op, OPS_EPARAM, in, err, "size %d not in 1..%d", (int)p[1],
                    (int)d - 1);
    *out = *x;
    out->dim[p[0]] = op == OP_SPLIT0 ? p[1] : d - p[1];
    return OPS_OK;
}

static ops_status shape_transpose(ops_op op, const ten_shape *in, ten_shape *out, char *err) {
    if (in[0].rank != 2)
        return fail(op, OPS_ESHAPE, in, err, "needs rank 2");
    set2(out, in[0].dim[1], in[0].dim[0]);
    return OPS_OK;
}

/* permute(perm; x): a permutation of x's rank. */
static ops_status shape_permute(ops_op op, const int32_t *p, const ten_shape *in, ten_shape *out,
                                char *err) {
    if (!ops_perm_ok(p[0])) return fail(op, OPS_EPARAM, in, err, "not a permutation");
    if (in[0].rank != OPS_PERM_RANK(p[0]))
        return fail(op, OPS_ESHAPE, in, err, "needs rank %d", OPS_PERM_RANK(p[0]));
    out->rank = in[0].rank;
    for (int a = 0; a < out->rank; a++) out->dim[a] = in[0].dim[OPS_PERM_AT(p[0], a)];
    return OPS_OK;
}

/* heads(h; x [b,m,k]) -> [b,m,h,k/h], h dividing k; unheads(h; x
 * [b,m,h,d]) -> [b,m,h*d]: the same cells, in row-major order. */
static ops_status shape_heads(ops_op op, const int32_t *p, const ten_shape *in, ten_shape *out,
                              char *err) {
    const ten_shape *x = &in[0];
    if (p[0] < 1) return fail(op, OPS_EPARAM, in, err, "needs at least 1 head, got %d", (int)p[0]);
    if (op == OP_HEADS) {
        if (x->rank != 3) return fail(op, OPS_ESHAPE, in, err, "needs rank 3");
        if (x->dim[2] % p[0])
            return fail(op, OPS_ESHAPE, in, err, "%d heads do not divide %d features", (int)p[0],
                        (int)x->dim[2]);
        set4(out, x->dim[0], x->dim[1], p[0], x->dim[2] / p[0]);
        return OPS_OK;
    }
    if (x->rank != 4) return fail(op, OPS_ESHAPE, in, err, "needs rank 4");
    if (x->dim[2] != p[0])
        return fail(op, OPS_ESHAPE, in, err, "needs %d heads on axis 2, got %d", (int)p[0],
                    (int)x->dim[2]);
    if ((int64_t)x->dim[2] * x->dim[3] > INT32_MAX) return fail(op, OPS_ESHAPE, in, err, "too large");
    out->rank = 3;
    out->dim[0] = x->dim[0], out->dim[1] = x->dim[1], out->dim[2] = x->dim[2] * x->dim[3];
    return OPS_OK;
}

static int is_1x1(const ten_shape *w) { return w->rank == 4 && w->dim[2] == 1 && w->dim[3] == 1; }

/* kmul(v [O,M,a,b], w [M,I,c,d]) -> [O,I,kh,kw], one of the two 1x1 and
 * kh x kw the other's; kmul(v 1x1, w [M]) -> [O]. */
static ops_status shape_kmul(ops_op op, const ten_shape *in, ten_shape *out, char *err) {
    const ten_shape *v = &in[0], *w = &in[1];
    if (v->rank != 4) return fail(op, OPS_ESHAPE, in, err, "needs a kernel first");
    if (w->rank != 1 && w->rank != 4)
        return fail(op, OPS_ESHAPE, in, err, "needs a kernel or a vector second");
    if (!is_1x1(v) && !is_1x1(w))
        return fail(op, OPS_ESHAPE, in, err, "needs a 1x1 kernel on one side");
    if (w->dim[0] != v->dim[1])
        return fail(op, OPS_ESHAPE, in, err, "inner dims %d != %d", (int)v->dim[1], (int)w->dim[0]);
    if (w->rank == 1) {
        out->rank = 1, out->dim[0] = v->dim[0];
        return OPS_OK;
    }
    const ten_shape *k = is_1x1(v) ? w : v;
    set4(out, v->dim[0], w->dim[1], k->dim[2], k->dim[3]);
    return OPS_OK;
}

/* enlarge(kernel; w [O,I,kh,kw]): the kernel is at least w's and differs
 * from it by an even amount, so w can sit exactly in the centre. */
static ops_status shape_enlarge(ops_op op, const int32_t *p, const ten_shape *in,
                                ten_shape *out, char *err) {
    const ten_shape *w = &in[0];
    if (!kernel_ok(p[0]))
        return fail(op, OPS_EPARAM, in, err, "bad kernel %d", (int)p[0]);
    if (w->rank != 4) return fail(op, OPS_ESHAPE, in, err, "needs rank 4");
    int32_t kh = OPS_KERNEL_H(p[0]), kw = OPS_KERNEL_W(p[0]);
    if (w->dim[2] > kh || w->dim[3] > kw || (kh - w->dim[2]) % 2 ||
        (kw - w->dim[3]) % 2)
        return fail(op, OPS_EPARAM, in, err,
                    "kernel %dx%d cannot centre the weights", (int)kh, (int)kw);
    set4(out, w->dim[0], w->dim[1], kh, kw);
    return OPS_OK;
}

static ops_status shape_imm(ops_op op, const ten_shape *in, ten_shape *out, char *err) {
    if (in[0].rank != 2) return fail(op, OPS_ESHAPE, in, err, "needs rank 2");
    set2(out, in[0].dim[1], in[0].dim[1]);
    return OPS_OK;
}

/* iconv/poolk(kernel; ref [N,C,H,W]) -> [C,C,kh,kw], dwiconv -> [C,1,kh,kw];
 * the identities need a centre. */
static ops_status shape_ckernel(ops_op op, const int32_t *p, const ten_shape *in,
                                ten_shape *out, char *err) {
    if (!kernel_ok(p[0]))
        return fail(op, OPS_EPARAM, in, err, "bad kernel %d", (int)p[0]);
    int32_t kh = OPS_KERNEL_H(p[0]), kw = OPS_KERNEL_W(p[0]);
    if (ops_ckernel_identity(op) && (!odd(kh) || !odd(kw)))
        return fail(op, OPS_EPARAM, in, err, "needs an odd kernel, got %dx%d",
                    (int)kh, (int)kw);
    if (in[0].rank != 4) return fail(op, OPS_ESHAPE, in, err, "needs rank 4");
    set4(out, in[0].dim[1], ops_ckernel_depthwise(op) ? 1 : in[0].dim[1], kh, kw);
    return OPS_OK;
}

/* bias/scale(axis; x, v): v is [x.dim[axis]]. */
static ops_status shape_channel(ops_op op, const int32_t *p, const ten_shape *in,
                                ten_shape *out, char *err) {
    const ten_shape *x = &in[0], *v = &in[1];
    if (p[0] < 0 || p[0] >= x->rank)
        return fail(op, OPS_EPARAM, in, err, "axis %d out of range", (int)p[0]);
    if (v->rank != 1 || v->dim[0] != x->dim[p[0]])
        return fail(op, OPS_ESHAPE, in, err, "needs a vector of dim %d", (int)x->dim[p[0]]);
    *out = *x;
    return OPS_OK;
}

/* softmax(axis; x): x's shape, the axis one of its. */
static ops_status shape_row(ops_op op, const int32_t *p, const ten_shape *in, ten_shape *out,
                            char *err) {
    if (p[0] < 0 || p[0] >= in[0].rank)
        return fail(op, OPS_EPARAM, in, err, "axis %d out of range", (int)p[0]);
    for (int k = 1; k < ops_table[op].n_params; k++) /* layernorm's eps: a variance offset */
        if (ops_table[op].pkind[k] == PK_EPS && !ops_eps_ok(p[k]))
            return fail(op, OPS_EPARAM, in, err, "eps must be a finite float >= 0");
    *out = in[0];
    return OPS_OK;
}

static ops_status dispatch(ops_op op, const int32_t *p, const ten_shape *in,
                           ten_shape *out, char *err) {
    switch (ops_table[op].form) {
    case OPS_FORM_MATMUL: return shape_matmul(in, out, err);
    case OPS_FORM_BMM: return shape_bmm(in, out, err);
    case OPS_FORM_LINEAR: return shape_linear(in, out, err);
    case OPS_FORM_CONV: return shape_conv(p, in, out, err);
    case OPS_FORM_ZIP: return shape_ew(op, in, out, err);
    case OPS_FORM_SCALE: return shape_smul(op, in, out, err);
    case OPS_FORM_CHANNEL: return shape_channel(op, p, in, out, err);
    case OPS_FORM_ROW: return shape_row(op, p, in, out, err);
    case OPS_FORM_MAP:
    case OPS_FORM_ONES: *out = in[0]; return OPS_OK;
    case OPS_FORM_POOL: return shape_pool(op, p, in, out, err);
    case OPS_FORM_CONCAT: return shape_concat(op, p, in, out, err);
    case OPS_FORM_SPLIT: return shape_split(op, p, in, out, err);
    case OPS_FORM_TRANSPOSE: return shape_transpose(op, in, out, err);
    case OPS_FORM_PERMUTE: return shape_permute(op, p, in, out, err);
    case OPS_FORM_HEADS: return shape_heads(op, p, in, out, err);
    case OPS_FORM_ENLARGE: return shape_enlarge(op, p, in, out, err);
    case OPS_FORM_IMM: return shape_imm(op, in, out, err);
    case OPS_FORM_CKERNEL: return shape_ckernel(op, p, in, out, err);
    case OPS_FORM_KMUL: return shape_kmul(op, in, out, err);
    case OPS_FORM_COUNT: break;
    }
    if (err) snprintf(err, OPS_ERRLEN, "unknown operator %d", (int)op);
    return OPS_EPARAM;
}

ops_status ops_infer_shape(ops_op op, const int32_t *param,
                           const ten_shape *in, ten_shape *out,
                           char err[OPS_ERRLEN]) {
    char sbuf[64];
    if ((unsigned)op >= OP_COUNT) {
        if (err) snprintf(err, OPS_ERRLEN, "unknown operator %d", (int)op);
        return OPS_EPARAM;
    }
    /* Inputs first, so the per-operator rules may index dims freely. */
    for (int i = 0; i < ops_table[op].arity; i++)
        if (!ten_shape_valid(&in[i]) || !numel_ok(&in[i])) {
            if (err)
                snprintf(err, OPS_ERRLEN, "%s: input %d has invalid shape %s",
                         ops_table[op].name, i, ten_shape_str(&in[i], sbuf));
            return OPS_ESHAPE;
        }
    ops_status rc = dispatch(op, param, in, out, err);
    if (rc == OPS_OK && (!ten_shape_valid(out) || !numel_ok(out)))
        return fail(op, OPS_ESHAPE, in, err, "output shape %s out of range",
                    ten_shape_str(out, sbuf));
    return rc;
}
