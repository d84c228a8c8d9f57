/* cfold_int.h - internals shared by cnode.c, cshape.c, clayout.c and cfold.c (shape
 * rules and constant folding of the standard ONNX operators; see cfold.h). */
#ifndef EG_CFOLD_INT_H
#define EG_CFOLD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "shapes/cfold.h"
#include "ir/onnx_op.h"
#include "proto/onnx_pb.h"

#if defined(__GNUC__)
#define CF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CF_PRINTF(f, a)
#endif

#define CF_MAX_INTS 64 /* constant int inputs read by the rules */

/* Shape rules. ORDER RULE */
typedef enum {
    R_NONE, R_SAME, R_BCAST, R_CMP, R_WHERE, R_CAST, R_CASTLIKE, R_CONV, R_CONVT, R_POOL,
    R_GPOOL, R_GEMM, R_MATMUL, R_REDUCE, R_ARG, R_CONCAT, R_SPLIT, R_SLICE, R_GATHER,
    R_TRANSPOSE, R_RESHAPE, R_FLATTEN, R_SQUEEZE, R_UNSQUEEZE, R_EXPAND, R_TILE, R_PAD,
    R_SHAPE, R_SIZE, R_COFS, R_CONSTANT, R_RANGE, R_RESIZE, R_DROPOUT, R_LAYERNORM,
    R_BATCHNORM, R_NONZERO, R_TOPK, R_INDICES, R_EINSUM, R_D2S, R_S2D, R_QUANT, R_DEQUANT,
    R_DYNQUANT, R_LIKE, R_GATHERND, R_GRIDSAMPLE, R_ONEHOT, R_DET, R_MATMULINT, R_ROIALIGN,
    R_NMS, R_RNN, R_COUNT
} rule;

/* Folding kernels. ORDER FOLD */
typedef enum {
    F_NONE, F_SHAPE, F_SIZE, F_CONSTANT, F_COPY, F_CAST, F_GATHER, F_EXPAND, F_CONCAT,
    F_SLICE, F_COFS, F_RANGE, F_BIN, F_SUM, F_CMP, F_WHERE, F_UNARY, F_REDPROD, F_TRANSPOSE, F_COUNT
} fold;


/* Where an operator's output cells come from, when every one is a cell of
 * its data inputs (eg_cfold_moved_from). ORDER MOVES */
typedef enum {
    M_NONE, /* computed, or not said */
    M_IN0,  /* input 0's (the others are indices, shapes, axes) */
    M_ALL,  /* any input's (Concat) */
    M_WHERE /* input 1's or 2's (input 0 is the condition) */
} moves;

typedef struct {
    rule rule;
    fold fold;
    moves moves;
} xop_info;

/* Per ONNX operator (ir/onnx_op.h): its shape rule, folding kernel and
 * moves (cnode.c). */
extern const xop_info cf_xop_table[EG_X_COUNT];

/* One node under the pass: its graph, node, unpacked NodeProto and error buffer. */
typedef struct {
    eg_graph *g;
    eg_node *n;
    const Onnx__NodeProto *np;
    eg_xop op;
    int opset;
    char *err;
    size_t errlen;
} cctx;

typedef Onnx__AttributeProto__AttributeType atype;

/* A constant's elements as int64 (integer and bool dtypes) or double. */
typedef struct {
    int dtype, isf;
    eg_shape s;
    int64_t n;
    int64_t *i;
    double *f;
} cval;

/* ---- cnode.c: the operator table, the node's attributes and inputs ---- */

/* Write "node 'name' (Op): ..." into c's error buffer. @return rc. */
CF_PRINTF(3, 4) eg_status cf_fail(const cctx *c, eg_status rc, const char *fmt, ...);
/* The attribute `name` of type t, NULL when absent or of another type. */
const Onnx__AttributeProto *cf_attr(const cctx *c, const char *name, atype t);
/* An int attribute, def when absent. */
int64_t cf_a_int(const cctx *c, const char *name, int64_t def);
/* An ints attribute into out[max]: its count, or -1 when absent or longer. */
int cf_a_ints(const cctx *c, const char *name, int64_t *out, int max);
/* A floats attribute into out[max]: its count, or -1 when absent or longer. */
int cf_a_floats(const cctx *c, const char *name, double *out, int max);
/* Is the string attribute `name` equal to v? */
int cf_a_str_is(const cctx *c, const char *name, const char *v);
/* Is dt float or double (a cval of doubles)? */
int cf_is_float_dt(int dt);
/* Can a cval hold dt (the float, integer and bool dtypes)? */
int cf_foldable_dt(int dt);
/* Free v's elements. */
void cf_cval_free(cval *v);
/* A zeroed value of dtype and shape s. @return EG_OK, EG_ELIMIT, EG_ENOMEM. */
eg_status cf_cval_alloc(cval *v, int dtype, const eg_shape *s);
/* A little-endian integer of size bytes, sign-extended when sgn. */
int64_t cf_le_int(const uint8_t *p, size_t size, int sgn);
/* Is dt a signed integer dtype? */
int cf_signed_dt(int dt);
/* Load a tensor's value. @return EG_OK, or EG_EUNSUPPORTED when not foldable. */
eg_status cf_cval_load(const eg_tensor *t, cval *v);
/* Element k of v as double. */
double cf_cv_get(const cval *v, int64_t k);
/* Input k's tensor, or NULL when omitted. */
const eg_tensor *cf_in_t(const cctx *c, int k);
/* Input k's shape. */
const eg_shape *cf_in_s(const cctx *c, int k);
/* Input k's dtype, 0 when omitted. */
int cf_in_dt(const cctx *c, int k);
/* A constant integer input k into out[max]: its count, -1 unknown, -2 omitted. */
int cf_in_ints(const cctx *c, int k, int64_t *out, int max);
/* A constant scalar (or 1-element) input as double; 0 when known. */
int cf_in_scalar(const cctx *c, int k, double *out);

/* ---- cshape.c: shape helpers and rules ---- */

/* A shape of unknown rank. */
eg_shape cf_unknown(void);
/* A shape of known rank and unknown dims. */
eg_shape cf_ranked(int rank);
/* Set output k's dtype and shape (value_info fills what stays unknown). */
void cf_put(const cctx *c, int k, int dtype, const eg_shape *s);
/* a * b for dims: -1 when either is unknown or the product is over EG_DIM_MAX. */
int64_t cf_mul_dim(int64_t a, int64_t b);
/* axis in [-rank, rank) into *out in [0, rank). @return 0, -1 when out of range. */
int cf_norm_axis(int64_t axis, int rank, int *out);
/* o = broadcast(o, b). @return 0, -1 on a mismatch. */
int cf_bcast2(eg_shape *o, const eg_shape *b);
/* Does c's binary operator broadcast the ONNX-1 way (before opset 7)? */
int cf_legacy_bcast(const cctx *c);
/* A reduction's axes into mark[rank]; *all when none. @return 0, 1 unknown, -1 bad. */
int cf_reduce_axes(const cctx *c, int rank, int from_input, int *mark, int *all);
/* Broadcasting ops from input `first`, output of dtype. */
eg_status cf_r_bcast(const cctx *c, int first, int dtype);
/* Conv, ConvTranspose and the pools (rule r). */
eg_status cf_r_window(const cctx *c, rule r);
/* The global pools. */
eg_status cf_r_gpool(const cctx *c);
/* Gemm. */
eg_status cf_r_gemm(const cctx *c);
/* MatMul and MatMulInteger (output of dtype). */
eg_status cf_r_matmul(const cctx *c, int dtype);
/* The Reduce* operators. */
eg_status cf_r_reduce(const cctx *c);
/* ArgMax and ArgMin. */
eg_status cf_r_arg(const cctx *c);

/* ---- clayout.c ---- */

/* A Slice's per-axis start, step, length. @return 0, 1 unknown, -1 bad input. */
int cf_slice_plan(const cctx *c, const eg_shape *x, int64_t *start, int64_t *step, int64_t *len);
/* Shape's [start, end) clamped to [0, rank]. */
void cf_shape_range(const cctx *c, int rank, int64_t *b, int64_t *e);
/* A Constant-like `value` tensor attribute, NULL when none. */
const Onnx__TensorProto *cf_value_attr(const cctx *c);
/* Infer c's opaque node's output dtypes and shapes by its op's rule. */
eg_status cf_infer_rule(const cctx *c);

#endif
