/* cshape.c - the ONNX shape rules for broadcasting, windows, Gemm/MatMul
 * and reductions (the layout rules are clayout.c's). */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shapes/cfold_int.h"
#include "shapes/oshape.h"
#include "win.h"

/* ================= shapes ================= */

/* The rules (here and in clayout.c) follow onnx/defs shape inference:
 * unknown dims stay -1, a rule that cannot decide leaves the output
 * unknown, a real mismatch is EG_ESHAPE. */

eg_shape cf_unknown(void) {
    eg_shape s;
    memset(&s, 0, sizeof s);
    s.rank = -1;
    return s;
}

eg_shape cf_ranked(int rank) {
    eg_shape s = cf_unknown();
    s.rank = rank;
    for (int i = 0; i < rank; i++) s.dim[i] = -1;
    return s;
}

/* Set output k's dtype and shape; what the tensor knew already (the file's
 * value_info) fills what inference leaves unknown. */
void cf_put(const cctx *c, int k, int dtype, const eg_shape *s) {
    if (k >= c->n->n_out || c->n->out[k] < 0) return;
    eg_tensor_set_inferred(&c->g->tensor[c->n->out[k]], dtype, s);
}

/* a * b for dims: -1 when either is unknown or the product is over
 * EG_DIM_MAX. */
int64_t cf_mul_dim(int64_t a, int64_t b) {
    if (a < 0 || b < 0 || a > EG_DIM_MAX || b > EG_DIM_MAX) return -1;
    if (a && b > EG_DIM_MAX / a) return -1;
    return a * b;
}

/* Every value in [lo, EG_DIM_MAX]? */
static int in_range(const int64_t *v, int n, int64_t lo) {
    for (int i = 0; i < n; i++)
        if (v[i] < lo || v[i] > EG_DIM_MAX) return 0;
    return 1;
}

int cf_norm_axis(int64_t axis, int rank, int *out) {
    if (axis < -(int64_t)rank || axis >= rank) return -1;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return 0;
}

/* o = broadcast(o, b). @return 0, -1 on a mismatch. */
int cf_bcast2(eg_shape *o, const eg_shape *b) {
    eg_shape a = *o;
    return eg_shape_broadcast(&a, b, o);
}

/* Before opset 7 binary operators broadcast the ONNX-1 way (B onto A from
 * `axis` when broadcast=1, else equal shapes): the result has A's shape. */
int cf_legacy_bcast(const cctx *c) {
    rule r = cf_xop_table[c->op].rule;
    return c->g->opset < 7 && (r == R_BCAST || r == R_CMP);
}

eg_status cf_r_bcast(const cctx *c, int first, int dtype) {
    char sa[160], sb[160];
    eg_shape o;
    int known = 1;
    if (cf_legacy_bcast(c)) {
        cf_put(c, 0, dtype, cf_in_s(c, first));
        return EG_OK;
    }
    o.rank = 0;
    for (int k = first; k < c->n->n_in; k++) {
        if (!cf_in_t(c, k)) continue;
        if (cf_in_s(c, k)->rank < 0) known = 0;
        eg_shape before = o;
        if (known && cf_bcast2(&o, cf_in_s(c, k)))
            return cf_fail(c, EG_ESHAPE, "shapes %s and %s do not broadcast",
                         eg_shape_str(&before, NULL, sa, sizeof sa),
                         eg_shape_str(cf_in_s(c, k), NULL, sb, sizeof sb));
    }
    if (!known) o = cf_unknown();
    cf_put(c, 0, dtype, &o);
    return EG_OK;
}

/* ---- windows: Conv, ConvTranspose, pools (N-d) ---- */

eg_status cf_r_window(const cctx *c, rule r) {
    const eg_shape *x = cf_in_s(c, 0), *w = cf_in_s(c, 1);
    eg_shape o = cf_unknown();
    int64_t k[EG_MAX_RANK], st[EG_MAX_RANK], dl[EG_MAX_RANK], pd[2 * EG_MAX_RANK],
        op[EG_MAX_RANK], os[EG_MAX_RANK];
    int dt = cf_in_dt(c, 0);
    if (x->rank < 3) {
        cf_put(c, 0, dt, &o);
        if (r == R_POOL) cf_put(c, 1, EG_DT_INT64, &o);
        return EG_OK;
    }
    int ns = x->rank - 2, group = (int)cf_a_int(c, "group", 1);
    int has_k = cf_a_ints(c, "kernel_shape", k, ns) == ns;
    for (int i = 0; !has_k && i < ns; i++) k[i] = w->rank == x->rank ? w->dim[2 + i] : -1;
    for (int i = 0; i < ns; i++) st[i] = dl[i] = 1, pd[i] = pd[i + ns] = 0, op[i] = 0;
    cf_a_ints(c, "strides", st, ns);
    cf_a_ints(c, "dilations", dl, ns);
    cf_a_ints(c, "pads", pd, 2 * ns);
    cf_a_ints(c, "output_padding", op, ns);
    int same = cf_a_str_is(c, "auto_pad", "SAME_UPPER") || cf_a_str_is(c, "auto_pad", "SAME_LOWER");
    int valid = cf_a_str_is(c, "auto_pad", "VALID"), ceil_mode = (int)cf_a_int(c, "ceil_mode", 0);
    int has_os = r == R_CONVT && cf_a_ints(c, "output_shape", os, ns) == ns;
    if (!in_range(st, ns, 1) || !in_range(dl, ns, 1) || !in_range(pd, 2 * ns, 0) ||
        !in_range(op, ns, 0) || (has_os && !in_range(os, ns, 0)) || group < 1 ||
        (has_k && !in_range(k, ns, 1))) {
        o = cf_ranked(x->rank);
        cf_put(c, 0, dt, &o);
        if (r == R_POOL) cf_put(c, 1, EG_DT_INT64, &o);
        return EG_OK;
    }
    o = cf_ranked(x->rank);
    o.dim[0] = x->dim[0];
    if (r == R_CONV) o.dim[1] = w->rank >= 1 ? w->dim[0] : -1;
    else if (r == R_CONVT) o.dim[1] = w->rank >= 2 ? cf_mul_dim(w->dim[1], group) : -1;
    else o.dim[1] = x->dim[1];
    for (int i = 0; i < ns; i++) {
        int64_t in = x->dim[2 + i], s = st[i], dk = k[i] < 1 ? -1 : cf_mul_dim(k[i] - 1, dl[i]);
        if (dk >= 0) dk++;
        if (has_os) {
            o.dim[2 + i] = os[i];
            continue;
        }
        if (in < 0 || (dk < 0 && !same)) continue;
        if (r == R_CONVT) {
            int64_t full = cf_mul_dim(s, same ? in : in - 1);
            o.dim[2 + i] = same || full < 0 ? full : full + op[i] + dk - pd[i] - pd[i + ns];
            continue;
        }
        int mode = same ? OPS_ONNX_SAME : valid ? OPS_ONNX_VALID : OPS_ONNX_PADS;
        int64_t out = ops_onnx_win_out(in, dk, s, pd[i], pd[i + ns], mode, ceil_mode);
        if (out < 0)
            return cf_fail(c, EG_ESHAPE, "spatial dim %d: input %lld is smaller than the kernel %lld",
                         i, (long long)in, (long long)dk);
        o.dim[2 + i] = out;
    }
    cf_put(c, 0, dt, &o);
    if (r == R_POOL) cf_put(c, 1, EG_DT_INT64, &o);
    return EG_OK;
}

eg_status cf_r_gpool(const cctx *c) {
    eg_shape o = *cf_in_s(c, 0);
    for (int i = 2; i < o.rank; i++) o.dim[i] = 1;
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

eg_status cf_r_gemm(const cctx *c) {
    const eg_shape *a = cf_in_s(c, 0), *b = cf_in_s(c, 1);
    int ta = cf_a_int(c, "transA", 0) != 0, tb = cf_a_int(c, "transB", 0) != 0;
    eg_shape o;
    int64_t ka, kb;
    if (eg_osh_gemm(a, b, ta, tb, &o, &ka, &kb) != EG_OSH_OK)
        return cf_fail(c, EG_ESHAPE, "inner dimensions %lld and %lld differ", (long long)ka, (long long)kb);
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

eg_status cf_r_matmul(const cctx *c, int dtype) {
    const eg_shape *a = cf_in_s(c, 0), *b = cf_in_s(c, 1);
    eg_shape o = cf_unknown();
    if (a->rank < 1 || b->rank < 1) {
        cf_put(c, 0, dtype, &o);
        return EG_OK;
    }
    int64_t ka, kb;
    int sh = eg_osh_matmul(a, b, &o, &ka, &kb);
    if (sh == EG_OSH_INNER)
        return cf_fail(c, EG_ESHAPE, "inner dimensions %lld and %lld differ", (long long)ka, (long long)kb);
    if (sh == EG_OSH_BATCH) return cf_fail(c, EG_ESHAPE, "batch dimensions do not broadcast");
    if (sh != EG_OSH_OK) o = cf_unknown();
    cf_put(c, 0, dtype, &o);
    return EG_OK;
}

/* ---- reductions ---- */

/* The axes of a reduction into mark[rank]; *all when none given. @return
 * 0, 1 when the axes are not known, -1 when out of range. */
int cf_reduce_axes(const cctx *c, int rank, int from_input, int *mark, int *all) {
    int64_t ax[EG_MAX_RANK];
    int n = from_input ? cf_in_ints(c, 1, ax, EG_MAX_RANK) : cf_a_ints(c, "axes", ax, EG_MAX_RANK);
    if (from_input && n == -1) return 1;
    *all = n <= 0;
    memset(mark, 0, sizeof(int) * EG_MAX_RANK);
    for (int i = 0; i < n; i++) {
        int a;
        if (cf_norm_axis(ax[i], rank, &a)) return -1;
        mark[a] = 1;
    }
    return 0;
}

eg_status cf_r_reduce(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    int from_input = c->op == EG_X_REDSUM ? c->opset >= 13 : c->opset >= 18;
    int keep = cf_a_int(c, "keepdims", 1) != 0, noop = cf_a_int(c, "noop_with_empty_axes", 0) != 0;
    int mark[EG_MAX_RANK], all, rc;
    eg_shape o = cf_unknown();
    if (x->rank >= 0 && (rc = cf_reduce_axes(c, x->rank, from_input, mark, &all)) <= 0) {
        if (rc < 0) return cf_fail(c, EG_ESHAPE, "axes out of range for rank %d", x->rank);
        o.rank = 0;
        for (int i = 0; i < x->rank; i++) {
            int red = all ? !noop : mark[i];
            if (!red) o.dim[o.rank++] = x->dim[i];
            else if (keep) o.dim[o.rank++] = 1;
        }
    } else if (x->rank >= 0 && keep)
        o = cf_ranked(x->rank);
    cf_put(c, 0, cf_in_dt(c, 0), &o);
    return EG_OK;
}

eg_status cf_r_arg(const cctx *c) {
    const eg_shape *x = cf_in_s(c, 0);
    eg_shape o = cf_unknown();
    int axis;
    if (x->rank >= 0) {
        if (cf_norm_axis(cf_a_int(c, "axis", 0), x->rank, &axis))
            return cf_fail(c, EG_ESHAPE, "axis out of range for rank %d", x->rank);
        o = *x;
        if (cf_a_int(c, "keepdims", 1)) o.dim[axis] = 1;
        else {
            memmove(o.dim + axis, o.dim + axis + 1, sizeof(int64_t) * (size_t)(o.rank - axis - 1));
            o.rank--;
        }
    }
    cf_put(c, 0, EG_DT_INT64, &o);
    return EG_OK;
}
