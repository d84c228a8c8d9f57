/* cfold.c - constant folding at load, and the pass (cfold.h) that runs each
 * node's shape rule (cshape.c, clayout.c) and folds it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shapes/cfold_int.h"

/* ================= folding ================= */

/* Store v as tensor t's value (a folded constant). */
static eg_status cval_store(const cval *v, eg_tensor *t) {
    size_t size = eg_dtype_size(v->dtype), bytes = size * (size_t)v->n;
    uint8_t *raw = malloc(bytes ? bytes : 1);
    if (!raw) return EG_ENOMEM;
    for (int64_t k = 0; k < v->n; k++) {
        uint8_t *p = raw + size * (size_t)k;
        if (v->dtype == EG_DT_FLOAT) {
            float x = (float)v->f[k];
            memcpy(p, &x, 4);
        } else if (v->dtype == EG_DT_DOUBLE) {
            memcpy(p, &v->f[k], 8);
        } else {
            uint64_t x = (uint64_t)(v->dtype == EG_DT_BOOL ? v->i[k] != 0 : v->i[k]);
            for (size_t b = 0; b < size; b++) p[b] = (uint8_t)(x >> (8 * b));
        }
    }
    if (v->dtype == EG_DT_FLOAT) t->data = (float *)(void *)raw;
    else t->raw = raw, t->raw_len = bytes;
    t->dtype = v->dtype;
    t->shape = v->s;
    t->flags |= EG_TF_INIT | EG_TF_CONST;
    return EG_OK;
}

/* Offset into a value of shape vs broadcast (right-aligned) to os of the
 * flat index of os. */
static int64_t boff(const eg_shape *vs, const eg_shape *os, int64_t flat) {
    int64_t off = 0, stride = 1;
    for (int i = os->rank - 1, j = vs->rank - 1; i >= 0; i--, j--) {
        int64_t idx = flat % os->dim[i];
        flat /= os->dim[i];
        if (j < 0) continue;
        if (vs->dim[j] != 1) off += idx * stride;
        stride *= vs->dim[j];
    }
    return off;
}

static void cv_set(cval *v, int64_t k, double f, int64_t i, int from_f) {
    if (v->isf) v->f[k] = from_f ? f : (double)i;
    else v->i[k] = from_f ? (int64_t)f : i;
}

/* Copy element a of x into element k of o (same kind or converted). */
static void cv_copy(cval *o, int64_t k, const cval *x, int64_t a) {
    cv_set(o, k, x->isf ? x->f[a] : 0, x->isf ? 0 : x->i[a], x->isf);
}

/* Wrap an integer value to the width of an integer dtype. */
static int64_t wrap_int(int dt, int64_t v) {
    switch (dt) {
    case EG_DT_INT8: return (int8_t)v;
    case EG_DT_INT16: return (int16_t)v;
    case EG_DT_INT32: return (int32_t)v;
    case EG_DT_UINT8: return (uint8_t)v;
    case EG_DT_UINT16: return (uint16_t)v;
    case EG_DT_UINT32: return (uint32_t)v;
    case EG_DT_BOOL: return v != 0;
    default: return v;
    }
}

/* Integer Mod: the sign of the divisor (fmod 0, as Python's %) or of
 * the dividend (fmod 1, as C's %); unsigned types as unsigned.
 * @return 0, or -1 for a zero divisor (onnxruntime's own error). */
static int mod_int(int dt, int fmod_c, uint64_t x, uint64_t y, int64_t *r) {
    if (y == 0) return -1;
    if (!cf_signed_dt(dt)) {
        *r = (int64_t)(x % y);
        return 0;
    }
    int64_t sx = (int64_t)x, sy = (int64_t)y;
    int64_t m = sy == -1 ? 0 : sx % sy; /* INT64_MIN % -1 overflows in C */
    if (!fmod_c && m != 0 && (m < 0) != (sy < 0)) m += sy;
    *r = m;
    return 0;
}

/* o = x broadcast to o's shape (Expand, and a Sum's first addend). */
static void bcast_copy(cval *o, const cval *x) {
    for (int64_t k = 0; k < o->n; k++) cv_copy(o, k, x, boff(&x->s, &o->s, k));
}

/* Elementwise binary ops (fmod: Mod's attribute). @return 0, or -1 when
 * not foldable here. */
static int f_bin(eg_xop op, int fmod_c, const cval *a, const cval *b, cval *o) {
    if (o->n && (!a->n || !b->n)) return -1; /* an absent operand has no cells to give */
    if (op == EG_X_MOD && o->isf && !fmod_c) return -1; /* not valid ONNX: left to the runtime */
    for (int64_t k = 0; k < o->n; k++) {
        int64_t ia = boff(&a->s, &o->s, k), ib = boff(&b->s, &o->s, k);
        if (o->isf) {
            double x = cf_cv_get(a, ia), y = cf_cv_get(b, ib);
            double r = op == EG_X_ADD ? x + y : op == EG_X_SUB ? x - y : op == EG_X_MUL ? x * y
                     : op == EG_X_DIV ? x / y : op == EG_X_MOD ? fmod(x, y) : op == EG_X_MAX ? (x > y ? x : y)
                     : (x < y ? x : y);
            o->f[k] = o->dtype == EG_DT_FLOAT ? (double)(float)r : r;
        } else {
            uint64_t x = (uint64_t)a->i[ia], y = (uint64_t)b->i[ib];
            int64_t sx = (int64_t)x, sy = (int64_t)y, r;
            if (op == EG_X_DIV && (y == 0 || (sx == INT64_MIN && sy == -1))) return -1;
            if (op == EG_X_MOD && mod_int(o->dtype, fmod_c, x, y, &r)) return -1;
            if (op != EG_X_MOD)
                r = op == EG_X_ADD ? (int64_t)(x + y) : op == EG_X_SUB ? (int64_t)(x - y)
                  : op == EG_X_MUL ? (int64_t)(x * y) : op == EG_X_DIV ? sx / sy
                  : op == EG_X_MAX ? (sx > sy ? sx : sy) : (sx < sy ? sx : sy);
            o->i[k] = wrap_int(o->dtype, r);
        }
    }
    return 0;
}

/* Transpose by the perm attribute (absent: the axes reversed). */
static int f_transpose(const cctx *c, const cval *x, cval *o) {
    int64_t p[EG_MAX_RANK], stride[EG_MAX_RANK];
    int rank = x->s.rank, n = cf_a_ints(c, "perm", p, EG_MAX_RANK);
    if (rank < 0 || (n >= 0 && n != rank) || x->n != o->n || o->s.rank != rank) return -1;
    for (int i = 0; i < rank; i++) {
        if (n < 0) p[i] = rank - 1 - i;
        if (p[i] < 0 || p[i] >= rank || o->s.dim[i] != x->s.dim[p[i]]) return -1;
    }
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) stride[i] = s, s *= x->s.dim[i];
    for (int64_t k = 0; k < o->n; k++) {
        int64_t flat = k, off = 0;
        for (int i = rank - 1; i >= 0; i--) { /* output axis i reads input axis p[i] */
            off += (flat % o->s.dim[i]) * stride[p[i]];
            flat /= o->s.dim[i];
        }
        cv_copy(o, k, x, off);
    }
    return 0;
}

static int f_cmp(eg_xop op, const cval *a, const cval *b, cval *o) {
    for (int64_t k = 0; k < o->n; k++) {
        int64_t ia = boff(&a->s, &o->s, k), ib = boff(&b->s, &o->s, k);
        int r;
        if (a->isf || b->isf) {
            double x = cf_cv_get(a, ia), y = cf_cv_get(b, ib);
            r = op == EG_X_EQUAL ? x == y : op == EG_X_LESS ? x < y : x > y;
        } else {
            int64_t x = a->i[ia], y = b->i[ib];
            r = op == EG_X_EQUAL ? x == y : op == EG_X_LESS ? x < y : x > y;
        }
        o->i[k] = r;
    }
    return 0;
}

static int f_unary(eg_xop op, const cval *x, cval *o) {
    if (op == EG_X_NOT && (x->isf || o->isf)) return -1; /* Not of a float: not valid ONNX, left to the runtime */
    for (int64_t k = 0; k < o->n; k++) {
        if (op == EG_X_NOT) {
            o->i[k] = !x->i[k];
            continue;
        }
        if (!o->isf) {
            int64_t v = x->i[k];
            int neg = op == EG_X_NEG || (op == EG_X_ABS && v < 0);
            o->i[k] = neg ? (int64_t)(0 - (uint64_t)v) : v;
            o->i[k] = wrap_int(o->dtype, o->i[k]);
            continue;
        }
        double v = x->f[k];
        o->f[k] = op == EG_X_FLOOR ? floor(v) : op == EG_X_CEIL ? ceil(v) : op == EG_X_NEG ? -v : fabs(v);
    }
    return 0;
}

/* Gather along axis with indices ix. */
static int f_gather(const cctx *c, const cval *x, const cval *ix, cval *o) {
    int axis;
    if (cf_norm_axis(cf_a_int(c, "axis", 0), x->s.rank, &axis)) return -1;
    int64_t outer = 1, inner = 1, d = x->s.dim[axis];
    for (int i = 0; i < axis; i++) outer *= x->s.dim[i];
    for (int i = axis + 1; i < x->s.rank; i++) inner *= x->s.dim[i];
    if (outer * ix->n * inner != o->n || ix->isf) return -1;
    int64_t k = 0;
    for (int64_t p = 0; p < outer; p++)
        for (int64_t q = 0; q < ix->n; q++) {
            int64_t j = ix->i[q] < 0 ? ix->i[q] + d : ix->i[q];
            if (j < 0 || j >= d) return -1;
            for (int64_t r = 0; r < inner; r++) cv_copy(o, k++, x, (p * d + j) * inner + r);
        }
    return k == o->n ? 0 : -1;
}

static int f_concat(const cctx *c, const cval *in, int nin, cval *o) {
    int axis;
    if (cf_norm_axis(cf_a_int(c, "axis", 0), o->s.rank, &axis)) return -1;
    int64_t outer = 1, k = 0;
    for (int i = 0; i < axis; i++) outer *= o->s.dim[i];
    for (int q = 0; q < nin; q++) k += in[q].n;
    if (k != o->n) return -1;
    k = 0;
    for (int64_t p = 0; p < outer; p++)
        for (int q = 0; q < nin; q++) {
            int64_t chunk = outer ? in[q].n / outer : 0;
            for (int64_t r = 0; r < chunk; r++) cv_copy(o, k++, &in[q], p * chunk + r);
        }
    return k == o->n ? 0 : -1;
}

static int f_slice(const cctx *c, const cval *x, cval *o) {
    int64_t start[EG_MAX_RANK], step[EG_MAX_RANK], len[EG_MAX_RANK], stride[EG_MAX_RANK];
    if (cf_slice_plan(c, &x->s, start, step, len)) return -1;
    int64_t s = 1, n = 1;
    for (int i = x->s.rank - 1; i >= 0; i--) stride[i] = s, s *= x->s.dim[i], n *= len[i];
    if (n != o->n) return -1;
    for (int64_t k = 0; k < o->n; k++) {
        int64_t flat = k, off = 0;
        for (int i = x->s.rank - 1; i >= 0; i--) {
            int64_t idx = flat % len[i];
            flat /= len[i];
            off += (start[i] + idx * step[i]) * stride[i];
        }
        cv_copy(o, k, x, off);
    }
    return 0;
}

/* The fill value of a ConstantOfShape (0 of float32 when absent). */
static int f_cofs(const cctx *c, cval *o) {
    const Onnx__TensorProto *v = cf_value_attr(c);
    double f = 0;
    int64_t i = 0;
    if (v) {
        int dt = v->has_data_type ? v->data_type : 0;
        size_t size = eg_dtype_size(dt);
        if (v->has_raw_data && v->raw_data.len == size && size) {
            if (dt == EG_DT_FLOAT) {
                float x;
                memcpy(&x, v->raw_data.data, 4);
                f = x;
            } else if (dt == EG_DT_DOUBLE) memcpy(&f, v->raw_data.data, 8);
            else i = cf_le_int(v->raw_data.data, size, cf_signed_dt(dt));
        } else if (dt == EG_DT_FLOAT && v->n_float_data == 1) f = v->float_data[0];
        else if (dt == EG_DT_DOUBLE && v->n_double_data == 1) f = v->double_data[0];
        else if (dt == EG_DT_INT64 && v->n_int64_data == 1) i = v->int64_data[0];
        else if (v->n_int32_data == 1 && !cf_is_float_dt(dt)) i = v->int32_data[0];
        else if (dt == EG_DT_UINT64 && v->n_uint64_data == 1) i = (int64_t)v->uint64_data[0];
        else return -1;
    }
    for (int64_t k = 0; k < o->n; k++) cv_set(o, k, f, i, o->isf);
    return 0;
}

static int f_redprod(const cctx *c, const cval *x, cval *o) {
    int mark[EG_MAX_RANK], all, noop = cf_a_int(c, "noop_with_empty_axes", 0) != 0;
    if (cf_reduce_axes(c, x->s.rank, c->opset >= 18, mark, &all)) return -1;
    int64_t ostride[EG_MAX_RANK], s = 1;
    for (int i = x->s.rank - 1; i >= 0; i--) {
        int red = all ? !noop : mark[i];
        ostride[i] = red ? 0 : s;
        if (!red) s *= x->s.dim[i];
    }
    if (s != o->n || x->isf != o->isf) return -1;
    for (int64_t k = 0; k < o->n; k++) cv_set(o, k, 1, 1, o->isf);
    for (int64_t k = 0; k < x->n; k++) {
        int64_t flat = k, off = 0;
        for (int i = x->s.rank - 1; i >= 0; i--) {
            off += (flat % x->s.dim[i]) * ostride[i];
            flat /= x->s.dim[i];
        }
        if (o->isf) o->f[off] *= x->f[k];
        else o->i[off] = (int64_t)((uint64_t)o->i[off] * (uint64_t)x->i[k]);
    }
    return 0;
}

static int f_constant(const cctx *c, cval *o) {
    const Onnx__AttributeProto *a;
    if (o->n != 1 && (cf_attr(c, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) ||
                      cf_attr(c, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)))
        return -1;
    if ((a = cf_attr(c, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) && o->isf)
        o->f[0] = a->f;
    else if ((a = cf_attr(c, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)) && !o->isf)
        o->i[0] = a->i;
    else if ((a = cf_attr(c, "value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS)) &&
             a->n_floats == (size_t)o->n && o->isf)
        for (int64_t k = 0; k < o->n; k++) o->f[k] = a->floats[k];
    else if ((a = cf_attr(c, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)) &&
             a->n_ints == (size_t)o->n && !o->isf)
        for (int64_t k = 0; k < o->n; k++) o->i[k] = a->ints[k]; /* an empty list may be NULL */
    else return -1; /* a `value` tensor the importer did not take: leave it */
    return 0;
}

/* Do the inputs whose elements become the output's hold the same kind
 * (integer or floating) as the output? Cast alone converts. */
static int kinds_match(fold f, const cval *in, int nin, const cval *o) {
    int first = f == F_WHERE ? 1 : 0, last = f == F_BIN ? 2 : f == F_WHERE ? 3 : f == F_CONCAT || f == F_SUM ? nin : 1;
    if (f == F_CAST || f == F_CMP || f == F_SHAPE || f == F_SIZE || f == F_COFS || f == F_CONSTANT ||
        f == F_REDPROD)
        return 1;
    if (f == F_RANGE) return nin >= 3 && in[0].isf == o->isf && in[2].isf == o->isf;
    for (int k = first; k < last; k++)
        if (k >= nin || in[k].isf != o->isf) return 0;
    return 1;
}

/* Do the inputs (for Expand: input 0 and the target) broadcast to
 * exactly o's shape? */
static int bcast_to(const cctx *c, const cval *in, int nin, const cval *o) {
    eg_shape b;
    b.rank = 0;
    int last = cf_xop_table[c->op].fold == F_EXPAND ? 1 : nin;
    for (int k = 0; k < last && k < nin; k++)
        if (cf_bcast2(&b, &in[k].s)) return 0;
    if (cf_xop_table[c->op].fold == F_EXPAND) {
        eg_shape t;
        if (nin < 2 || in[1].isf || in[1].n > EG_MAX_RANK) return 0;
        t.rank = (int)in[1].n;
        for (int i = 0; i < t.rank; i++) t.dim[i] = in[1].i[i];
        if (cf_bcast2(&b, &t)) return 0;
    }
    if (b.rank != o->s.rank) return 0;
    for (int i = 0; i < b.rank; i++)
        if (b.dim[i] != o->s.dim[i]) return 0;
    return 1;
}

/* Compute output 0 of a foldable node into o (allocated by the caller
 * from the output's dtype and shape). @return 0, or -1 when it does not
 * fold after all. */
static int fold_eval(const cctx *c, const cval *in, int nin, cval *o) {
    const eg_shape *x = cf_in_s(c, 0);
    fold f = cf_xop_table[c->op].fold;
    if ((f == F_BIN || f == F_SUM || f == F_CMP || f == F_WHERE || f == F_EXPAND) && !bcast_to(c, in, nin, o))
        return -1;
    if (!kinds_match(f, in, nin, o)) return -1;
    if ((f == F_UNARY && (nin < 1 || in[0].n != o->n)) ||
        (f == F_RANGE && (nin < 3 || in[0].n != 1 || in[2].n != 1)) ||
        (f == F_SIZE && o->n != 1) || (f == F_GATHER && nin < 2) || (f == F_WHERE && in[0].isf))
        return -1;
    switch (f) {
    case F_NONE: return -1;
    case F_SHAPE: {
        int64_t b, e;
        cf_shape_range(c, x->rank, &b, &e);
        if (e - b != o->n) return -1;
        for (int64_t k = b; k < e; k++) o->i[k - b] = x->dim[k];
        return 0;
    }
    case F_SIZE: o->i[0] = eg_shape_numel(x); return 0;
    case F_CONSTANT: return f_constant(c, o);
    case F_COPY:
    case F_CAST:
        if (in[0].n != o->n) return -1;
        for (int64_t k = 0; k < o->n; k++) {
            if (in[0].isf && !o->isf && !(fabs(in[0].f[k]) < 9.2e18)) return -1;
            cv_copy(o, k, &in[0], k);
            if (!o->isf) o->i[k] = wrap_int(o->dtype, o->i[k]);
            else if (o->dtype == EG_DT_FLOAT) o->f[k] = (double)(float)o->f[k];
        }
        return 0;
    case F_GATHER: return nin < 2 ? -1 : f_gather(c, &in[0], &in[1], o);
    case F_EXPAND:
        bcast_copy(o, &in[0]);
        return 0;
    case F_CONCAT: return f_concat(c, in, nin, o);
    case F_SLICE: return f_slice(c, &in[0], o);
    case F_COFS: return f_cofs(c, o);
    case F_RANGE: {
        double s = cf_cv_get(&in[0], 0), d = cf_cv_get(&in[2], 0);
        for (int64_t k = 0; k < o->n; k++)
            if (o->isf) o->f[k] = s + (double)k * d;
            else o->i[k] = (int64_t)((uint64_t)in[0].i[0] + (uint64_t)k * (uint64_t)in[2].i[0]);
        return 0;
    }
    case F_BIN: return nin < 2 ? -1 : f_bin(c->op, (int)cf_a_int(c, "fmod", 0), &in[0], &in[1], o);
    case F_SUM: /* as import lowers it, Add(Add(x0, x1), x2)..., each sum rounded */
        if (nin < 1 || (o->n && !in[0].n)) return -1;
        bcast_copy(o, &in[0]);
        for (int k = 1; k < nin; k++)
            if (f_bin(EG_X_ADD, 0, o, &in[k], o)) return -1;
        return 0;
    case F_TRANSPOSE: return f_transpose(c, &in[0], o);
    case F_CMP: return nin < 2 ? -1 : f_cmp(c->op, &in[0], &in[1], o);
    case F_WHERE:
        if (nin < 3) return -1;
        for (int64_t k = 0; k < o->n; k++) {
            int64_t ic = boff(&in[0].s, &o->s, k);
            const cval *pick = in[0].i[ic] ? &in[1] : &in[2];
            cv_copy(o, k, pick, boff(&pick->s, &o->s, k));
        }
        return 0;
    case F_UNARY: return f_unary(c->op, &in[0], o);
    case F_REDPROD: return f_redprod(c, &in[0], o);
    case F_COUNT: break;
    }
    return -1;
}

/* Can node c->n fold: a foldable op, every input a value (Shape/Size: a
 * known shape; omitted: only the optional inputs after the data, Slice's
 * axes and steps, Squeeze's and ReduceProd's axes, since the kernels read
 * every other), one output, not a graph output, a known shape in cap? */
static int fold_ready(const cctx *c) {
    fold f = cf_xop_table[c->op].fold;
    const eg_node *n = c->n;
    if (f == F_NONE || n->n_out != 1 || n->out[0] < 0 || n->n_implicit) return 0;
    const eg_tensor *t = &c->g->tensor[n->out[0]];
    if ((t->flags & (EG_TF_OUTPUT | EG_TF_INIT | EG_TF_SPARSE)) || !cf_foldable_dt(t->dtype) ||
        !eg_shape_known(&t->shape) || eg_shape_numel(&t->shape) > EG_CFOLD_MAX_ELEMS)
        return 0;
    if (f == F_SHAPE || f == F_SIZE) return cf_in_t(c, 0) && eg_shape_known(cf_in_s(c, 0));
    /* float weight arithmetic is left to eg_fold_weights after rewriting:
     * at load only scalars (scales, epsilons) and constant sources fold */
    if (cf_is_float_dt(t->dtype) && eg_shape_numel(&t->shape) > 1 && f != F_COFS &&
        f != F_CONSTANT && f != F_RANGE)
        return 0;
    int optional_after_data = f == F_SLICE || f == F_COPY || f == F_REDPROD;
    for (int k = 0; k < n->n_in; k++) {
        const eg_tensor *u = cf_in_t(c, k);
        if (!u && (k == 0 || !optional_after_data)) return 0;
        if (u && (!(u->flags & EG_TF_INIT) || !cf_foldable_dt(u->dtype) || !eg_shape_known(&u->shape)))
            return 0;
        /* legacy broadcasting is not numpy's: fold only equal shapes */
        if (u && cf_legacy_bcast(c) && !eg_shape_equal(&u->shape, &t->shape)) return 0;
    }
    return 1;
}

/* Fold node c->n when it is ready. *folded = 1 when it did. */
static eg_status try_fold(const cctx *c, int *folded) {
    cval in[CF_MAX_INTS], o;
    int nin = 0;
    eg_status rc = EG_OK;
    *folded = 0;
    if (!fold_ready(c) || c->n->n_in > CF_MAX_INTS) return EG_OK;
    eg_tensor *t = &c->g->tensor[c->n->out[0]];
    fold f = cf_xop_table[c->op].fold;
    for (int k = 0; rc == EG_OK && f != F_SHAPE && f != F_SIZE && k < c->n->n_in; k++, nin++) {
        memset(&in[k], 0, sizeof in[k]);
        if (cf_in_t(c, k)) rc = cf_cval_load(cf_in_t(c, k), &in[k]);
    }
    if (rc == EG_OK) rc = cf_cval_alloc(&o, t->dtype, &t->shape);
    if (rc == EG_OK && fold_eval(c, in, nin, &o) == 0) {
        rc = cval_store(&o, t);
        *folded = rc == EG_OK;
    }
    if (rc == EG_OK || rc == EG_ENOMEM) cf_cval_free(&o);
    for (int k = 0; k < nin; k++) cf_cval_free(&in[k]);
    return rc == EG_ENOMEM ? EG_ENOMEM : EG_OK;
}

/* ================= the pass ================= */

int eg_cfold_moved_from(const char *op_type, int n_in, int *first, int *end) {
    eg_xop x = eg_xop_of(op_type);
    *first = 0, *end = 0;
    if (x == EG_X_COUNT) return 0;
    switch (cf_xop_table[x].moves) {
    case M_NONE: return 0;
    case M_IN0: *end = 1; break;
    case M_ALL: *end = n_in; break;
    case M_WHERE: *first = 1, *end = 3; break;
    }
    return *first < *end && *end <= n_in;
}

static int outputs_known(const eg_graph *g, const eg_node *n) {
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && g->tensor[n->out[k]].shape.rank < 0) return 0;
    return 1;
}

eg_status eg_cfold_begin(eg_cfold *f, eg_graph *g) {
    memset(f, 0, sizeof *f);
    f->g = g;
    f->drop = calloc((size_t)g->n_nodes + 1, 1);
    return f->drop ? EG_OK : EG_ENOMEM;
}

eg_status eg_cfold_node(eg_cfold *f, int id, char *err, size_t errlen) {
    eg_node *n = &f->g->node[id];
    cctx c = {f->g, n, NULL, EG_X_COUNT, f->g->opset, err, errlen};
    Onnx__NodeProto *np = NULL;
    egp_alloc a;
    char msg[EG_ERRLEN];
    int folded = 0;
    if (n->kind == EG_KIND_OPS || !n->proto || !eg_default_domain(n->domain))
        return EG_OK;
    c.op = eg_xop_of(n->op_type);
    /* a Dropout the importer reads as an identity folds like one, as it
     * will when the exported Identity is read again */
    if (c.op == EG_X_DROPOUT && n->kind == EG_KIND_MODEL && n->n_in == 1 && n->n_out == 1) c.op = EG_X_IDENTITY;
    if (c.op == EG_X_COUNT || (n->kind == EG_KIND_MODEL && !fold_ready(&c))) return EG_OK;
    egp_alloc_init(&a, n->proto_len * 8 + (16u << 20));
    eg_status rc = egp_unpack(&onnx__node_proto__descriptor, &a, 1 << 10, n->proto, n->proto_len,
                              (ProtobufCMessage **)&np, msg, sizeof msg);
    if (rc != EG_OK) return rc == EG_ENOMEM ? rc : EG_OK; /* kept as is */
    c.np = np;
    if (n->kind == EG_KIND_OPAQUE) {
        rc = cf_infer_rule(&c);
        if (rc == EG_OK && outputs_known(f->g, n)) f->n_shaped++;
    }
    if (rc == EG_OK) rc = try_fold(&c, &folded);
    if (folded) f->drop[id] = 1, f->n_folded++;
    protobuf_c_message_free_unpacked(&np->base, &a.pc);
    return rc;
}

eg_status eg_cfold_end(eg_cfold *f, eg_status rc, char *err, size_t errlen) {
    if (rc == EG_OK && f->n_folded) rc = eg_remove_nodes(f->g, f->drop, err, errlen);
    free(f->drop);
    f->drop = NULL;
    return rc;
}
