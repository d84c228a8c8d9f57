/* oshape.h - ONNX shape arithmetic written once (prefix eg_osh_), for
 * the model operators' rules (infer.c) and the opaque operators' rules
 * (cshape.c, clayout.c) alike: each function computes an output shape
 * from shapes and attribute values; the callers read the attributes their
 * way (eg_attrs or the NodeProto) and word their own messages from the
 * code returned. Unknown dims are -1 and stay so. Windows are
 * opspecs/win.h's, broadcasting eg_shape_broadcast's.
 */
#ifndef EG_OSHAPE_H
#define EG_OSHAPE_H

#include <stdint.h>

#include "ir/graph.h"

enum {
    EG_OSH_OK,
    EG_OSH_INNER, /* the contracted dims differ (*ka, *kb say how) */
    EG_OSH_BATCH, /* MatMul's batch dims do not broadcast */
    EG_OSH_RANK,  /* a result over EG_MAX_RANK, or a perm of another length */
    EG_OSH_PERM,  /* not a permutation of the axes */
    EG_OSH_LARGE, /* an element count over int64 (its dim is -2) */
    EG_OSH_DIM,   /* a Reshape target dim below -1, or a second -1 */
    EG_OSH_COPY,  /* a Reshape 0 that copies a dim past the input's rank */
    EG_OSH_COUNT  /* Reshape: the element counts differ */
};

/* numpy MatMul of a and b, both of known rank >= 1: rank-1 operands are
 * promoted and the promoted dim dropped; the batch dims broadcast. */
int eg_osh_matmul(const eg_shape *a, const eg_shape *b, eg_shape *o, int64_t *ka, int64_t *kb);

/* Gemm: [M, K] x [K, N] with A or B transposed (ta, tb); a dim of an
 * operand whose rank is not 2 is unknown. */
int eg_osh_gemm(const eg_shape *a, const eg_shape *b, int ta, int tb, eg_shape *o, int64_t *ka, int64_t *kb);

/* Transpose of x (rank known) by perm[0..n), or reversed axes for n < 0. */
int eg_osh_transpose(const eg_shape *x, const int64_t *perm, int n, eg_shape *o);

/* Flatten of x (rank known) at axis (0..rank): the count of the dims
 * before it and after it. */
int eg_osh_flatten(const eg_shape *x, int axis, eg_shape *o);

/* Concat: input x (of o's rank) appended to o along axis: o's axis dim
 * grows by x's (unknown when either is), the other dims must agree (an
 * unknown one takes x's). EG_OSH_INNER with *dim the first dim that
 * differs (o unchanged there). */
int eg_osh_concat_add(eg_shape *o, const eg_shape *x, int axis, int *dim);

/* Reshape of x to the target t[0..n) (n <= EG_MAX_RANK), allowzero the
 * attribute: a 0 copies x's dim, one -1 takes what the element count
 * leaves. Strict (a model operator, whose shape the rules rely on): a 0
 * past x's rank is EG_OSH_COPY, a -1 the count does not fix exactly
 * EG_OSH_COUNT, a count over int64 EG_OSH_LARGE. Lenient (an opaque
 * operator, whose shape the runtime decides): those dims are left unknown.
 * Both: EG_OSH_DIM for a dim below -1 or a second -1 (*at its index), and
 * EG_OSH_COUNT when, with no -1, the counts are known and differ; *in and
 * *rest are the input's count and the target's (without the -1). */
int eg_osh_reshape(const eg_shape *x, const int64_t *t, int n, int allowzero, int strict, eg_shape *o, int *at,
                   int64_t *in, int64_t *rest);

/* Split's equal sizes: d in n parts of ceil(d / n), the last the rest;
 * all -1 when d is unknown (< 0). */
void eg_osh_split_even(int64_t d, int n, int64_t *sizes);

#endif
