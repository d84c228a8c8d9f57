/* oshape.c - ONNX shape arithmetic shared by both sets of shape rules
 * (oshape.h). */
#include "shapes/oshape.h"

#include <stdint.h>
#include <string.h>

int eg_osh_matmul(const eg_shape *a, const eg_shape *b, eg_shape *o, int64_t *ka, int64_t *kb) {
    eg_shape ba, bb;
    *ka = a->dim[a->rank - 1], *kb = b->rank > 1 ? b->dim[b->rank - 2] : b->dim[0];
    if (*ka >= 0 && *kb >= 0 && *ka != *kb) return EG_OSH_INNER;
    ba.rank = a->rank > 2 ? a->rank - 2 : 0;
    bb.rank = b->rank > 2 ? b->rank - 2 : 0;
    memcpy(ba.dim, a->dim, sizeof(int64_t) * (size_t)ba.rank);
    memcpy(bb.dim, b->dim, sizeof(int64_t) * (size_t)bb.rank);
    if (eg_shape_broadcast(&ba, &bb, o)) return EG_OSH_BATCH;
    if (o->rank + (a->rank > 1) + (b->rank > 1) > EG_MAX_RANK) return EG_OSH_RANK;
    if (a->rank > 1) o->dim[o->rank++] = a->dim[a->rank - 2];
    if (b->rank > 1) o->dim[o->rank++] = b->dim[b->rank - 1];
    return EG_OSH_OK;
}

int eg_osh_gemm(const eg_shape *a, const eg_shape *b, int ta, int tb, eg_shape *o, int64_t *ka, int64_t *kb) {
    o->rank = 2;
    o->dim[0] = a->rank == 2 ? a->dim[ta ? 1 : 0] : -1;
    o->dim[1] = b->rank == 2 ? b->dim[tb ? 0 : 1] : -1;
    *ka = a->rank == 2 ? a->dim[ta ? 0 : 1] : -1;
    *kb = b->rank == 2 ? b->dim[tb ? 1 : 0] : -1;
    return *ka >= 0 && *kb >= 0 && *ka != *kb ? EG_OSH_INNER : EG_OSH_OK;
}

int eg_osh_transpose(const eg_shape *x, const int64_t *perm, int n, eg_shape *o) {
    int seen[EG_MAX_RANK] = {0};
    if (n >= 0 && n != x->rank) return EG_OSH_RANK;
    o->rank = x->rank;
    for (int i = 0; i < x->rank; i++) {
        int64_t p = n >= 0 ? perm[i] : x->rank - 1 - i;
        if (p < 0 || p >= x->rank || seen[p]++) return EG_OSH_PERM;
        o->dim[i] = x->dim[p];
    }
    return EG_OSH_OK;
}

int eg_osh_flatten(const eg_shape *x, int axis, eg_shape *o) {
    eg_shape part = *x;
    o->rank = 2;
    part.rank = axis;
    o->dim[0] = eg_shape_numel(&part);
    part.rank = x->rank - axis;
    memcpy(part.dim, x->dim + axis, sizeof(int64_t) * (size_t)part.rank);
    o->dim[1] = eg_shape_numel(&part);
    return o->dim[0] == -2 || o->dim[1] == -2 ? EG_OSH_LARGE : EG_OSH_OK;
}

int eg_osh_concat_add(eg_shape *o, const eg_shape *x, int axis, int *dim) {
    for (int i = 0; i < o->rank; i++) {
        int64_t d = x->dim[i];
        if (i == axis) {
            o->dim[i] = o->dim[i] < 0 || d < 0 ? -1 : o->dim[i] + d;
        } else if (o->dim[i] >= 0 && d >= 0 && o->dim[i] != d) {
            *dim = i;
            return EG_OSH_INNER;
        } else if (o->dim[i] < 0) {
            o->dim[i] = d;
        }
    }
    return EG_OSH_OK;
}

int eg_osh_reshape(const eg_shape *x, const int64_t *t, int n, int allowzero, int strict, eg_shape *o, int *at,
                   int64_t *in, int64_t *rest) {
    int infer = -1;
    o->rank = n;
    *in = eg_shape_numel(x), *rest = 1;
    for (int i = 0; i < n; i++) {
        if (t[i] < -1 || (t[i] == -1 && infer >= 0)) {
            *at = i;
            return EG_OSH_DIM;
        }
        if (t[i] == -1) infer = i;
        int copy = t[i] == 0 && !allowzero;
        if (copy && x->rank >= 0 && i >= x->rank && strict) {
            *at = i;
            return EG_OSH_COPY;
        }
        o->dim[i] = copy ? (i < x->rank ? x->dim[i] : -1) : t[i];
    }
    if (infer >= 0) o->dim[infer] = -1;
    for (int i = 0; i < n; i++) {
        if (i == infer) continue;
        if (o->dim[i] < 0) return EG_OSH_OK; /* an unknown copied dim: the -1 stays unknown */
        if (o->dim[i] && *rest > INT64_MAX / o->dim[i]) return strict ? EG_OSH_LARGE : EG_OSH_OK;
        *rest *= o->dim[i];
    }
    if (*in == -2) return strict ? EG_OSH_LARGE : EG_OSH_OK;
    if (*in < 0) return EG_OSH_OK;
    if (infer < 0) return *rest == *in ? EG_OSH_OK : EG_OSH_COUNT;
    if (*rest && *in % *rest == 0) o->dim[infer] = *in / *rest;
    else if (strict) return EG_OSH_COUNT;
    return EG_OSH_OK;
}

void eg_osh_split_even(int64_t d, int n, int64_t *sizes) {
    int64_t chunk = d < 0 ? -1 : (d + n - 1) / n;
    for (int k = 0; k < n; k++) sizes[k] = chunk < 0 ? -1 : k < n - 1 ? chunk : d - chunk * (n - 1);
}
