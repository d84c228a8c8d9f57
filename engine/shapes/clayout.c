/* clayout.c - the shape rules for layout operators (Concat, Slice, Reshape...),
 * Einsum and quantization, and cf_infer_rule, the dispatch by rule. */
#include <math.h>
#include <string.h>

#include "shapes/cfold_int.h"
#include "shapes/oshape.h"

/* ---- layout ---- */

static eg_status r_concat(const cctx *c) {
    eg_shape o = cf_unknown();
    int rank = -1, axis;
    for (int k = 0; k < c->n->n_in; k++) {
        if (cf_in_s(c, k)->rank < 0) {
            cf_put(c, 0, cf_in_dt(c, 0), &o);
            return EG_OK;
        }
        if (rank >= 0 && cf_in_s(c, k)->rank != rank) return cf_fail(c, EG_ESHAPE, "ranks differ");
        rank = cf_in_s(c, k)->rank;
    }
    if (rank < 1 || cf_norm_axis(cf_a_int(c, "axis", 0), rank, &axis))
        return cf_fail(c, EG_ESHAPE, "axis out of range for rank %d", rank);
    o = *cf_in_s(c, 0);
    for (int k = 1, i; k < c->n->n_in; k++)
        if (eg_osh_concat_add(&o, cf_in_s(c, k), axis, &i) != EG_OSH_OK)
            return cf_fail(c, EG_ESHAPE, "input %d: dim %d is %lld, not %lld", k, i, (long long)cf_in_s(c, k)->dim[i],
                           (long long)o.dim[i]);
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_split(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int n = c->n->n_out, axis, ns = -1;
    int64_t sz[CF_MAX_INTS];
    if (x->rank < 0 || n > CF_MAX_INTS) {
        for (int k = 0; k < n; k++) cf_put(c, k, cf_in_dt(c, 0), &(eg_shape){-1, {0}});
        return EG_OK;
    }
    if (cf_norm_axis(cf_a_int(c, "axis", 0), x->rank, &axis))
        return cf_fail(c, EG_ESHAPE, "axis out of range for rank %d", x->rank);
    int64_t d = x->dim[axis];
    if (c->opset < 13) ns = cf_a_ints(c, "split", sz, CF_MAX_INTS);
    else if (cf_in_t(c, 1) && (ns = cf_in_ints(c, 1, sz, CF_MAX_INTS)) < 0) ns = -3; /* unknown */
    if (ns >= 0 && ns != n) return cf_fail(c, EG_ESHAPE, "%d split sizes for %d outputs", ns, n);
    if (ns < 0) eg_osh_split_even(ns == -3 ? -1 : d, n, sz);
    for (int k = 0; k < n; k++) {
        eg_shape o = *x;
        o.dim[axis] = sz[k];
        cf_put(c, k, cf_in_dt(c, 0), &o);
    }
    return EG_OK;
}

/* Per axis of rank: start, step and length of a Slice (len -1: unknown).
 * @return 1 when the starts/ends are not known, 0, or -1 on bad input. */
int cf_slice_plan(const cctx *c, const eg_shape *x, int64_t *start, int64_t *step, int64_t *len) {
    int64_t st[EG_MAX_RANK], en[EG_MAX_RANK], ax[EG_MAX_RANK], sp[EG_MAX_RANK];
    int n, ne, na, nsp;
    if (c->opset < 10) {
        n = cf_a_ints(c, "starts", st, EG_MAX_RANK), ne = cf_a_ints(c, "ends", en, EG_MAX_RANK);
        na = cf_a_ints(c, "axes", ax, EG_MAX_RANK), nsp = -2;
    } else {
        n = cf_in_ints(c, 1, st, EG_MAX_RANK), ne = cf_in_ints(c, 2, en, EG_MAX_RANK);
        na = cf_in_ints(c, 3, ax, EG_MAX_RANK), nsp = cf_in_ints(c, 4, sp, EG_MAX_RANK);
        if (na == -1 || nsp == -1) return 1;
        if (na == -2) na = -1;
    }
    if (n < 0 || ne < 0) return 1;
    if (ne != n || (na >= 0 && na != n) || (nsp >= 0 && nsp != n)) return -1;
    for (int i = 0; i < x->rank; i++) start[i] = 0, step[i] = 1, len[i] = x->dim[i];
    for (int k = 0; k < n; k++) {
        int a;
        int64_t s = nsp >= 0 ? sp[k] : 1;
        if (cf_norm_axis(na >= 0 ? ax[k] : k, x->rank, &a) || s == 0) return -1;
        if (s == INT64_MIN) s = -INT64_MAX;
        int64_t d = x->dim[a], b = st[k], e = en[k];
        step[a] = s;
        if (d <= 0) { /* unknown, or empty: no clamp range for a negative step */
            len[a] = d;
            continue;
        }
        if (b < 0) b += d;
        if (e < 0) e += d;
        if (s > 0) {
            b = b < 0 ? 0 : b > d ? d : b;
            e = e < 0 ? 0 : e > d ? d : e;
            len[a] = e > b ? (e - b - 1) / s + 1 : 0;
        } else {
            b = b < 0 ? 0 : b > d - 1 ? d - 1 : b;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
            len[a] = b > e ? (b - e - 1) / (-s) + 1 : 0;
        }
        start[a] = b;
    }
    return 0;
}

static eg_status r_slice(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t start[EG_MAX_RANK], step[EG_MAX_RANK], len[EG_MAX_RANK];
    eg_shape o = cf_unknown();
    if (x->rank >= 0) {
        int rc = cf_slice_plan(c, x, start, step, len);
        if (rc < 0) return cf_fail(c, EG_ESHAPE, "starts/ends/axes/steps do not fit rank %d", x->rank);
        o = cf_ranked(x->rank);
        for (int i = 0; rc == 0 && i < x->rank; i++) o.dim[i] = len[i];
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_gather(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0), *ix = cf_in_s(c, 1);
    eg_shape o = cf_unknown();
    int axis;
    if (x->rank >= 0 && ix->rank >= 0) {
        if (cf_norm_axis(cf_a_int(c, "axis", 0), x->rank, &axis))
            return cf_fail(c, EG_ESHAPE, "axis out of range for rank %d", x->rank);
        if (x->rank + ix->rank - 1 <= EG_MAX_RANK) {
            o.rank = 0;
            for (int i = 0; i < axis; i++) o.dim[o.rank++] = x->dim[i];
            for (int i = 0; i < ix->rank; i++) o.dim[o.rank++] = ix->dim[i];
            for (int i = axis + 1; i < x->rank; i++) o.dim[o.rank++] = x->dim[i];
        }
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_transpose(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t p[EG_MAX_RANK];
    eg_shape o = cf_unknown();
    if (x->rank >= 0) {
        int n = cf_a_ints(c, "perm", p, EG_MAX_RANK), sh = eg_osh_transpose(x, p, n, &o);
        if (sh == EG_OSH_RANK) return cf_fail(c, EG_ESHAPE, "perm does not fit rank %d", x->rank);
        if (sh != EG_OSH_OK) return cf_fail(c, EG_ESHAPE, "perm is not a permutation");
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_reshape(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t t[EG_MAX_RANK];
    eg_shape o = cf_unknown();
    int n = c->opset < 5 ? cf_a_ints(c, "shape", t, EG_MAX_RANK) : cf_in_ints(c, 1, t, EG_MAX_RANK);
    int allowzero = cf_a_int(c, "allowzero", 0) != 0;
    if (n < 0) {
        const eg_shape *ts = cf_in_s(c, 1);
        if (c->opset >= 5 && ts->rank == 1 && ts->dim[0] >= 0 && ts->dim[0] <= EG_MAX_RANK)
            o = cf_ranked((int)ts->dim[0]);
        cf_put(c, 0, cf_in_dt(c, 0), &o);
        return EG_OK;
    }
    int64_t in, rest;
    int at, sh = eg_osh_reshape(x, t, n, allowzero, 0, &o, &at, &in, &rest);
    if (sh == EG_OSH_DIM) return cf_fail(c, EG_ESHAPE, "bad target dim");
    if (sh == EG_OSH_COUNT)
        return cf_fail(c, EG_ESHAPE, "cannot reshape %lld elements into %lld", (long long)in, (long long)rest);
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_flatten(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    eg_shape o = cf_unknown();
    int64_t axis = cf_a_int(c, "axis", 1);
    if (x->rank >= 0) {
        if (axis < 0) axis += x->rank;
        if (axis < 0 || axis > x->rank) return cf_fail(c, EG_ESHAPE, "axis out of range");
        eg_osh_flatten(x, (int)axis, &o);
        if (o.dim[0] < 0) o.dim[0] = -1; /* too large: unknown */
        if (o.dim[1] < 0) o.dim[1] = -1;
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

/* Squeeze/Unsqueeze axes: attribute before opset 13, input from 13.
 * @return the count, -2 when absent, -1 when not known. */
static int sq_axes(const cctx *c, int64_t *ax) {
    if (c->opset < 13) {
        int n = cf_a_ints(c, "axes", ax, EG_MAX_RANK);
        return n < 0 ? -2 : n;
    }
    return cf_in_ints(c, 1, ax, EG_MAX_RANK);
}

static eg_status r_squeeze(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t ax[EG_MAX_RANK];
    int mark[EG_MAX_RANK] = {0}, n = sq_axes(c, ax), a;
    eg_shape o = cf_unknown();
    if (x->rank >= 0 && n != -1) {
        for (int i = 0; i < n; i++) {
            if (cf_norm_axis(ax[i], x->rank, &a)) return cf_fail(c, EG_ESHAPE, "axis out of range");
            if (x->dim[a] >= 0 && x->dim[a] != 1)
                return cf_fail(c, EG_ESHAPE, "squeezes dim %d of size %lld", a, (long long)x->dim[a]);
            mark[a] = 1;
        }
        o.rank = 0;
        for (int i = 0; i < x->rank; i++) {
            if (n <= 0 && x->dim[i] < 0) {
                o = cf_unknown();
                break;
            }
            if (!(n > 0 ? mark[i] : x->dim[i] == 1)) o.dim[o.rank++] = x->dim[i];
        }
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_unsqueeze(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t ax[EG_MAX_RANK];
    int mark[EG_MAX_RANK] = {0}, n = sq_axes(c, ax), a;
    eg_shape o = cf_unknown();
    if (x->rank >= 0 && n >= 0 && x->rank + n <= EG_MAX_RANK) {
        int r = x->rank + n, j = 0;
        for (int i = 0; i < n; i++) {
            if (cf_norm_axis(ax[i], r, &a) || mark[a]) return cf_fail(c, EG_ESHAPE, "bad axes");
            mark[a] = 1;
        }
        o.rank = r;
        for (int i = 0; i < r; i++) o.dim[i] = mark[i] ? 1 : x->dim[j++];
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_expand(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t t[EG_MAX_RANK];
    int n = cf_in_ints(c, 1, t, EG_MAX_RANK);
    eg_shape o = cf_unknown(), ts = cf_unknown();
    if (n >= 0) {
        ts.rank = n;
        for (int i = 0; i < n; i++) ts.dim[i] = t[i];
        o = *x;
        if (cf_bcast2(&o, &ts)) return cf_fail(c, EG_ESHAPE, "input does not broadcast to the shape");
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_tile(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t t[EG_MAX_RANK];
    int n = cf_in_ints(c, 1, t, EG_MAX_RANK);
    eg_shape o = x->rank >= 0 ? cf_ranked(x->rank) : cf_unknown();
    if (n >= 0 && x->rank >= 0) {
        if (n != x->rank) return cf_fail(c, EG_ESHAPE, "%d repeats for rank %d", n, x->rank);
        for (int i = 0; i < n; i++) o.dim[i] = cf_mul_dim(x->dim[i], t[i]);
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_pad(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t p[2 * EG_MAX_RANK], ax[EG_MAX_RANK];
    eg_shape o = x->rank >= 0 ? cf_ranked(x->rank) : cf_unknown();
    int n = c->opset < 11 ? cf_a_ints(c, "pads", p, 2 * EG_MAX_RANK) : cf_in_ints(c, 1, p, 2 * EG_MAX_RANK);
    if (c->opset < 2 && n < 0) n = cf_a_ints(c, "paddings", p, 2 * EG_MAX_RANK);
    int na = c->opset >= 18 ? cf_in_ints(c, 3, ax, EG_MAX_RANK) : -2;
    if (x->rank >= 0 && n >= 0 && na != -1) {
        int k = na >= 0 ? na : x->rank;
        for (int i = 0; i < n; i++)
            if (p[i] < -EG_DIM_MAX || p[i] > EG_DIM_MAX) n = -1;
        if (n < 0) {
            cf_put(c, 0, cf_in_dt(c, 0), &o);
            return EG_OK;
        }
        if (n != 2 * k) return cf_fail(c, EG_ESHAPE, "%d pads for %d axes", n, k);
        o = *x;
        for (int i = 0; i < k; i++) {
            int a;
            if (cf_norm_axis(na >= 0 ? ax[i] : i, x->rank, &a)) return cf_fail(c, EG_ESHAPE, "bad axes");
            if (o.dim[a] >= 0) o.dim[a] += p[i] + p[i + k];
            if (x->dim[a] >= 0 && o.dim[a] < 0) return cf_fail(c, EG_ESHAPE, "pads make dim %d negative", a);
        }
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

/* Shape's [start, end) (opset 15) clamped to [0, rank]. */
void cf_shape_range(const cctx *c, int rank, int64_t *b, int64_t *e) {
    *b = cf_a_int(c, "start", 0), *e = cf_a_int(c, "end", rank);
    if (*b < 0) *b += rank;
    if (*e < 0) *e += rank;
    *b = *b < 0 ? 0 : *b > rank ? rank : *b;
    *e = *e < 0 ? 0 : *e > rank ? rank : *e;
    if (*e < *b) *e = *b;
}

static eg_status r_shape(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    eg_shape o = cf_ranked(1);
    int64_t b, e;
    if (x->rank >= 0) {
        cf_shape_range(c, x->rank, &b, &e);
        o.dim[0] = e - b;
    }
    cf_put(c, 0, EG_DT_INT64, &o);
    return EG_OK;
}

/* The dtype of a Constant-like `value` tensor attribute, 0 when none. */
const Onnx__TensorProto *cf_value_attr(const cctx *c) {
    const Onnx__AttributeProto *a = cf_attr(c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    return a ? a->t : NULL;
}

static eg_status r_cofs(const cctx *c) {
    int64_t t[EG_MAX_RANK];
    const Onnx__TensorProto *v = cf_value_attr(c);
    int n = cf_in_ints(c, 0, t, EG_MAX_RANK), dt = v && v->has_data_type ? v->data_type : EG_DT_FLOAT;
    eg_shape o = cf_unknown();
    if (n >= 0) {
        o.rank = n;
        for (int i = 0; i < n; i++) {
            if (t[i] < 0) return cf_fail(c, EG_ESHAPE, "negative dim %lld", (long long)t[i]);
            o.dim[i] = t[i];
        }
    } else if (cf_in_s(c, 0)->rank == 1 && cf_in_s(c, 0)->dim[0] >= 0 && cf_in_s(c, 0)->dim[0] <= EG_MAX_RANK)
        o = cf_ranked((int)cf_in_s(c, 0)->dim[0]);
    cf_put(c, 0, dt, &o);
    return EG_OK;
}

static eg_status r_constant(const cctx *c) {
    const Onnx__TensorProto *v = cf_value_attr(c);
    const Onnx__AttributeProto *a;
    eg_shape o = cf_unknown();
    int dt = 0;
    if (v && v->n_dims <= EG_MAX_RANK) {
        dt = v->has_data_type ? v->data_type : 0;
        o.rank = (int)v->n_dims;
        for (int i = 0; i < o.rank; i++) o.dim[i] = v->dims[i] >= 0 ? v->dims[i] : -1;
    } else if (cf_attr(c, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) {
        dt = EG_DT_FLOAT, o.rank = 0;
    } else if (cf_attr(c, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)) {
        dt = EG_DT_INT64, o.rank = 0;
    } else if ((a = cf_attr(c, "value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS))) {
        dt = EG_DT_FLOAT, o.rank = 1, o.dim[0] = (int64_t)a->n_floats;
    } else if ((a = cf_attr(c, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS))) {
        dt = EG_DT_INT64, o.rank = 1, o.dim[0] = (int64_t)a->n_ints;
    } else if (cf_attr(c, "value_string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)) {
        dt = EG_DT_STRING, o.rank = 0;
    } else if ((a = cf_attr(c, "value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS))) {
        dt = EG_DT_STRING, o.rank = 1, o.dim[0] = (int64_t)a->n_strings;
    }
    cf_put(c, 0, dt, &o);
    return EG_OK;
}

static eg_status r_range(const cctx *c) {
    double s, l, d;
    eg_shape o = cf_ranked(1);
    if (!cf_in_scalar(c, 0, &s) && !cf_in_scalar(c, 1, &l) && !cf_in_scalar(c, 2, &d)) {
        if (d == 0) return cf_fail(c, EG_ESHAPE, "delta is 0");
        double n = ceil((l - s) / d);
        o.dim[0] = n > 0 ? (n < (double)EG_DIM_MAX ? (int64_t)n : -1) : 0;
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes; 18: axes) and
 * Upsample (scales attribute before 9, input from 9). */
static eg_status r_resize(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    eg_shape o = x->rank >= 0 ? cf_ranked(x->rank) : cf_unknown();
    int64_t sz[EG_MAX_RANK], ax[EG_MAX_RANK];
    double sc[EG_MAX_RANK];
    int nsz = -1, nsc = -1, nax = cf_a_ints(c, "axes", ax, EG_MAX_RANK);
    const eg_tensor *st = NULL;
    if (c->op == EG_X_UPSAMPLE && c->opset < 9) nsc = cf_a_floats(c, "scales", sc, EG_MAX_RANK);
    else if (c->op == EG_X_UPSAMPLE || c->opset < 11) st = cf_in_t(c, 1);
    else {
        st = cf_in_t(c, 2);
        nsz = cf_in_ints(c, 3, sz, EG_MAX_RANK);
    }
    if (st && eg_shape_numel(&st->shape) > 0 && eg_shape_numel(&st->shape) <= EG_MAX_RANK) {
        cval v;
        if (cf_cval_load(st, &v) == EG_OK) {
            nsc = (int)v.n;
            for (int i = 0; i < nsc; i++) sc[i] = cf_cv_get(&v, i);
            cf_cval_free(&v);
        }
    }
    if (x->rank >= 0 && (nsz > 0 || nsc > 0)) {
        int k = nsz > 0 ? nsz : nsc;
        if (nax >= 0 ? nax != k : k != x->rank)
            return cf_fail(c, EG_ESHAPE, "%d scales or sizes for rank %d", k, x->rank);
        for (int i = 0; i < x->rank; i++) o.dim[i] = x->dim[i];
        for (int i = 0; i < k; i++) {
            int a;
            if (cf_norm_axis(nax >= 0 ? ax[i] : i, x->rank, &a)) return cf_fail(c, EG_ESHAPE, "bad axes");
            if (nsz > 0) o.dim[a] = sz[i];
            else {
                double v = floor((double)x->dim[a] * sc[i] + 1e-9);
                o.dim[a] = x->dim[a] < 0 || !(v >= 0 && v <= (double)EG_DIM_MAX) ? -1 : (int64_t)v;
            }
        }
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

static eg_status r_layernorm(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    eg_shape m = cf_unknown();
    int axis;
    cf_put(c, 0, cf_in_dt(c, 0), x);
    if (x->rank >= 0) {
        if (cf_norm_axis(cf_a_int(c, "axis", -1), x->rank, &axis))
            return cf_fail(c, EG_ESHAPE, "axis out of range for rank %d", x->rank);
        m = *x;
        for (int i = axis; i < x->rank; i++) m.dim[i] = 1;
    }
    cf_put(c, 1, EG_DT_FLOAT, &m);
    cf_put(c, 2, EG_DT_FLOAT, &m);
    return EG_OK;
}

static eg_status r_batchnorm(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    eg_shape ch = cf_ranked(1);
    if (x->rank >= 2) ch.dim[0] = x->dim[1];
    cf_put(c, 0, cf_in_dt(c, 0), x);
    for (int k = 1; k < c->n->n_out; k++) cf_put(c, k, cf_in_dt(c, 0), &ch);
    return EG_OK;
}

static eg_status r_topk(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t k[1];
    int axis, n = c->opset < 10 ? 1 : cf_in_ints(c, 1, k, 1);
    if (c->opset < 10) k[0] = cf_a_int(c, "k", -1);
    eg_shape o = x->rank >= 0 ? *x : cf_unknown();
    if (x->rank >= 0) {
        if (cf_norm_axis(cf_a_int(c, "axis", -1), x->rank, &axis)) return cf_fail(c, EG_ESHAPE, "bad axis");
        o.dim[axis] = n == 1 ? k[0] : -1;
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    cf_put(c, 1, EG_DT_INT64, &o);
    return EG_OK;
}

/* ---- Einsum ---- */

/* One dim of a label met twice: numpy's einsum broadcasts a 1 against
 * the other; a real conflict (or an unknown that may be 1) is unknown. */
static int64_t einsum_dim(int64_t a, int64_t b) {
    if (a == b) return a;
    if (a == 1) return b > 1 ? b : -1;
    if (b == 1) return a > 1 ? a : -1;
    if (a < 0) return b;
    if (b < 0) return a;
    return -1;
}

static int einsum_label(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/* Einsum's output from the equation: each label's dim (equal dims, or a
 * 1 broadcast), the dims under "..." broadcast across the operands; the
 * output term as written after "->", else (implicit form) the "..." dims
 * then every label met once, in ASCII order. An equation it cannot read
 * leaves the output unknown (the node stays opaque either way). */
static eg_status r_einsum(const cctx *c) {
    const Onnx__AttributeProto *a = cf_attr(c, "equation", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    int64_t dim[128];
    int count[128] = {0};
    eg_shape ell = {0, {0}}, o = cf_unknown();
    char eq[256];
    size_t n = 0;
    int any_ell = 0, k = 0;
    for (int i = 0; i < 128; i++) dim[i] = -1;
    if (!a || a->s.len >= sizeof eq) goto out;
    for (size_t i = 0; i < a->s.len; i++)
        if (a->s.data[i] != ' ') eq[n++] = (char)a->s.data[i];
    eq[n] = 0;
    char *arrow = strstr(eq, "->");
    const char *p = eq, *end = arrow ? arrow : eq + n;
    while (p <= end) { /* one operand's term: p up to ',' or end */
        const char *q = p;
        while (q < end && *q != ',') q++;
        if (k >= c->n->n_in || !cf_in_t(c, k)) goto out;
        const eg_shape *x = cf_in_s(c, k);
        int labels = 0, has_ell = 0;
        for (const char *r = p; r < q; r++) {
            if (einsum_label(*r)) labels++;
            else if (*r == '.' && q - r >= 3 && r[1] == '.' && r[2] == '.' && !has_ell)
                has_ell = 1, r += 2;
            else goto out;
        }
        if (x->rank < 0 || x->rank < labels || (!has_ell && x->rank != labels)) goto out;
        int ne = x->rank - labels, d = 0;
        for (const char *r = p; r < q; r++) {
            if (*r == '.') { /* the "..." dims, broadcast with the others' */
                eg_shape e = {ne, {0}};
                memcpy(e.dim, x->dim + d, sizeof(int64_t) * (size_t)ne);
                if (cf_bcast2(&ell, &e)) goto out;
                d += ne, r += 2, any_ell = 1;
                continue;
            }
            unsigned char ch = (unsigned char)*r;
            dim[ch] = count[ch]++ ? einsum_dim(dim[ch], x->dim[d]) : x->dim[d];
            d++;
        }
        k++;
        p = q + 1;
    }
    if (k != c->n->n_in) goto out;
    o.rank = 0;
    if (arrow) {
        int done_ell = 0;
        for (const char *r = arrow + 2; *r; r++) {
            if (r[0] == '.' && r[1] == '.' && r[2] == '.' && !done_ell) {
                if (o.rank + ell.rank > EG_MAX_RANK) goto unknown_out;
                for (int i = 0; i < ell.rank; i++) o.dim[o.rank++] = ell.dim[i];
                done_ell = 1, r += 2;
            } else if (einsum_label(*r) && count[(unsigned char)*r] && o.rank < EG_MAX_RANK) {
                o.dim[o.rank++] = dim[(unsigned char)*r];
            } else {
                goto unknown_out;
            }
        }
        if (any_ell && !done_ell && ell.rank) goto unknown_out;
    } else {
        for (int i = 0; i < ell.rank; i++) o.dim[o.rank++] = ell.dim[i];
        for (int ch = 0; ch < 128; ch++)
            if (count[ch] == 1) {
                if (o.rank >= EG_MAX_RANK) goto unknown_out;
                o.dim[o.rank++] = dim[ch];
            }
    }
    goto out;
unknown_out:
    o = cf_unknown();
out:
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

/* ---- other layouts and quantization ---- */

/* DepthToSpace (to_space) and SpaceToDepth: [N, C, H, W] and blocksize b
 * into [N, C/b^2, H*b, W*b] or [N, C*b^2, H/b, W/b]; a size that does not
 * divide is left unknown. */
static eg_status r_space(const cctx *c, int to_space) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t b = cf_a_int(c, "blocksize", 0);
    eg_shape o = x->rank == 4 ? *x : cf_unknown();
    if (x->rank == 4 && b >= 1 && b <= EG_DIM_MAX) {
        int64_t bb = cf_mul_dim(b, b);
        o.dim[1] = to_space ? (x->dim[1] >= 0 && bb > 0 && x->dim[1] % bb == 0 ? x->dim[1] / bb : -1)
                            : cf_mul_dim(x->dim[1], bb);
        for (int i = 2; i < 4; i++)
            o.dim[i] = to_space ? cf_mul_dim(x->dim[i], b) : (x->dim[i] >= 0 && x->dim[i] % b == 0 ? x->dim[i] / b : -1);
    } else if (x->rank == 4) {
        o = cf_ranked(4);
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

/* QuantizeLinear's output type: the zero point's, else output_dtype
 * (opset 21), else uint8. */
static int quant_dtype(const cctx *c) {
    if (cf_in_t(c, 2)) return cf_in_dt(c, 2);
    int64_t dt = cf_a_int(c, "output_dtype", 0);
    return dt > 0 && dt < 64 ? (int)dt : EG_DT_UINT8;
}

/* DequantizeLinear's: output_dtype when given, else the scale's. */
static int dequant_dtype(const cctx *c) {
    int64_t dt = cf_a_int(c, "output_dtype", 0);
    return dt > 0 && dt < 64 ? (int)dt : cf_in_dt(c, 1);
}

/* GatherND: indices' dims but the last (q), then data's dims after the
 * batch dims and the q indexed ones. */
static eg_status r_gathernd(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0), *ix = cf_in_s(c, 1);
    int64_t b = cf_a_int(c, "batch_dims", 0);
    eg_shape o = cf_unknown();
    if (x->rank >= 0 && ix->rank >= 1 && ix->dim[ix->rank - 1] >= 0 && b >= 0 && b <= x->rank &&
        ix->dim[ix->rank - 1] <= x->rank) {
        int64_t q = ix->dim[ix->rank - 1];
        int64_t rank = ix->rank - 1 + x->rank - q - b;
        if (b + q <= x->rank && rank >= 0 && rank <= EG_MAX_RANK) {
            o.rank = 0;
            for (int i = 0; i < ix->rank - 1; i++) o.dim[o.rank++] = ix->dim[i];
            for (int64_t i = b + q; i < x->rank; i++) o.dim[o.rank++] = x->dim[i];
        }
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

/* GridSample: [N, C] then the grid's spatial dims ([N, H', W', 2]). */
static eg_status r_gridsample(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0), *gr = cf_in_s(c, 1);
    eg_shape o = cf_unknown();
    if (x->rank >= 3 && gr->rank == x->rank) {
        o.rank = x->rank;
        o.dim[0] = x->dim[0], o.dim[1] = x->dim[1];
        for (int i = 2; i < o.rank; i++) o.dim[i] = gr->dim[i - 1];
    }
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

/* OneHot: indices' shape with the (constant) depth put in at axis. */
static eg_status r_onehot(const cctx *c) {
    const eg_shape *ix = cf_in_s(c, 0);
    double depth;
    int axis;
    eg_shape o = cf_unknown();
    if (ix->rank >= 0 && ix->rank < EG_MAX_RANK && !cf_norm_axis(cf_a_int(c, "axis", -1), ix->rank + 1, &axis)) {
        o.rank = ix->rank + 1;
        for (int i = 0, j = 0; i < o.rank; i++)
            o.dim[i] = i == axis ? -1 : ix->dim[j++];
        if (!cf_in_scalar(c, 1, &depth) && depth >= 1 && depth <= (double)EG_DIM_MAX)
            o.dim[axis] = (int64_t)depth;
    }
    cf_put(c, 0, cf_in_dt(c, 2), &o);
    return EG_OK;
}

/* RoiAlign: [rois, C, output_height, output_width]. */
static eg_status r_roialign(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0), *r = cf_in_s(c, 1);
    eg_shape o = cf_ranked(4);
    int64_t oh = cf_a_int(c, "output_height", 1), ow = cf_a_int(c, "output_width", 1);
    o.dim[0] = r->rank == 2 ? r->dim[0] : -1;
    o.dim[1] = x->rank == 4 ? x->dim[1] : -1;
    o.dim[2] = oh >= 1 && oh <= EG_DIM_MAX ? oh : -1;
    o.dim[3] = ow >= 1 && ow <= EG_DIM_MAX ? ow : -1;
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

/* RNN, GRU, LSTM: Y [seq, directions, batch, hidden] and Y_h (LSTM's Y_c
 * too) [directions, batch, hidden]; with layout = 1 the batch comes
 * first in both. */
static eg_status r_rnn(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int64_t hidden = cf_a_int(c, "hidden_size", -1), ndir = cf_a_str_is(c, "direction", "bidirectional") ? 2 : 1;
    if (hidden < 1 || hidden > EG_DIM_MAX) hidden = -1;
    int batch_first = cf_a_int(c, "layout", 0) == 1;
    int64_t seq = x->rank == 3 ? x->dim[batch_first ? 1 : 0] : -1;
    int64_t batch = x->rank == 3 ? x->dim[batch_first ? 0 : 1] : -1;
    eg_shape y = cf_ranked(4), h = cf_ranked(3);
    if (batch_first) {
        y.dim[0] = batch, y.dim[1] = seq, y.dim[2] = ndir;
        h.dim[0] = batch, h.dim[1] = ndir;
    } else {
        y.dim[0] = seq, y.dim[1] = ndir, y.dim[2] = batch;
        h.dim[0] = ndir, h.dim[1] = batch;
    }
    y.dim[3] = hidden, h.dim[2] = hidden;
    cf_put(c, 0, cf_in_dt(c, 0), &y);
    cf_put(c, 1, cf_in_dt(c, 0), &h);
    if (c->op == EG_X_LSTM) cf_put(c, 2, cf_in_dt(c, 0), &h);
    return EG_OK;
}

eg_status cf_infer_rule(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    switch (cf_xop_table[c->op].rule) {
    case R_NONE: return EG_OK;
    case R_SAME: cf_put(c, 0, cf_in_dt(c, 0), x); return EG_OK;
    case R_BCAST: return cf_r_bcast(c, 0, cf_in_dt(c, 0));
    case R_CMP: return cf_r_bcast(c, 0, EG_DT_BOOL);
    case R_WHERE: return cf_r_bcast(c, 0, cf_in_dt(c, 1));
    case R_CAST: cf_put(c, 0, (int)cf_a_int(c, "to", 0), x); return EG_OK;
    case R_CASTLIKE: cf_put(c, 0, cf_in_dt(c, 1), x); return EG_OK;
    case R_CONV:
    case R_CONVT:
    case R_POOL: return cf_r_window(c, cf_xop_table[c->op].rule);
    case R_GPOOL: return cf_r_gpool(c);
    case R_GEMM: return cf_r_gemm(c);
    case R_MATMUL: return cf_r_matmul(c, cf_in_dt(c, 0));
    case R_REDUCE: return cf_r_reduce(c);
    case R_ARG: return cf_r_arg(c);
    case R_CONCAT: return r_concat(c);
    case R_SPLIT: return r_split(c);
    case R_SLICE: return r_slice(c);
    case R_GATHER: return r_gather(c);
    case R_TRANSPOSE: return r_transpose(c);
    case R_RESHAPE: return r_reshape(c);
    case R_FLATTEN: return r_flatten(c);
    case R_SQUEEZE: return r_squeeze(c);
    case R_UNSQUEEZE: return r_unsqueeze(c);
    case R_EXPAND: return r_expand(c);
    case R_TILE: return r_tile(c);
    case R_PAD: return r_pad(c);
    case R_SHAPE: return r_shape(c);
    case R_SIZE: cf_put(c, 0, EG_DT_INT64, &(eg_shape){0, {0}}); return EG_OK;
    case R_COFS: return r_cofs(c);
    case R_CONSTANT: return r_constant(c);
    case R_RANGE: return r_range(c);
    case R_RESIZE: return r_resize(c);
    case R_DROPOUT:
        cf_put(c, 0, cf_in_dt(c, 0), x);
        cf_put(c, 1, EG_DT_BOOL, x);
        return EG_OK;
    case R_LAYERNORM: return r_layernorm(c);
    case R_BATCHNORM: return r_batchnorm(c);
    case R_NONZERO: {
        eg_shape o = cf_ranked(2);
        o.dim[0] = x->rank >= 0 ? x->rank : -1;
        cf_put(c, 0, EG_DT_INT64, &o);
        return EG_OK;
    }
    case R_TOPK: return r_topk(c);
    case R_INDICES: cf_put(c, 0, cf_in_dt(c, 0), cf_in_s(c, 1)); return EG_OK;
    case R_EINSUM: return r_einsum(c);
    case R_D2S: return r_space(c, 1);
    case R_S2D: return r_space(c, 0);
    case R_QUANT: cf_put(c, 0, quant_dtype(c), x); return EG_OK;
    case R_DEQUANT: cf_put(c, 0, dequant_dtype(c), x); return EG_OK;
    case R_DYNQUANT:
        cf_put(c, 0, EG_DT_UINT8, x);
        cf_put(c, 1, EG_DT_FLOAT, &(eg_shape){0, {0}});
        cf_put(c, 2, EG_DT_UINT8, &(eg_shape){0, {0}});
        return EG_OK;
    case R_LIKE: cf_put(c, 0, (int)cf_a_int(c, "dtype", cf_in_dt(c, 0)), x); return EG_OK;
    case R_GATHERND: return r_gathernd(c);
    case R_GRIDSAMPLE: return r_gridsample(c);
    case R_ONEHOT: return r_onehot(c);
    case R_DET: {
        eg_shape o = x->rank >= 2 ? *x : cf_unknown();
        if (x->rank >= 2) o.rank -= 2;
        cf_put(c, 0, cf_in_dt(c, 0), &o);
        return EG_OK;
    }
    case R_MATMULINT: return cf_r_matmul(c, EG_DT_INT32);
    case R_ROIALIGN: return r_roialign(c);
    case R_NMS: {
        eg_shape o = cf_ranked(2);
        o.dim[1] = 3;
        cf_put(c, 0, EG_DT_INT64, &o);
        return EG_OK;
    }
    case R_RNN: return r_rnn(c);
    case R_COUNT: break;
    }
    return EG_OK;
}
