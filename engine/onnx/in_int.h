/* in_int.h - internals the ONNX importer's files share (onnx_in.c,
 * in_values.c, in_ops.c): the import context and the helpers they call. */
#ifndef EG_ONNX_IN_INT_H
#define EG_ONNX_IN_INT_H

#include "onnx/engine.h"
#include "proto/onnx_pb.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little-endian; this reader assumes a little-endian host"
#endif

#if defined(__GNUC__)
#define IN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define IN_PRINTF(f, a)
#endif

typedef struct {
    eg_graph *g;
    const char *name; /* the file, for messages */
    char *err;
    size_t errlen;
    Onnx__ModelProto *m;
    Onnx__GraphProto *gp;
    int *node_of;     /* gp->node[i] -> node id, or -1 for a Constant */
    eg_shape *vshape; /* per tensor: the file's value_info shape (rank -2: none) */
    const eg_load_opts *o;
    int *dim_used;    /* per o->dims[k]: found in the file */
} ictx;

/* onnx_in.c */

/* Write "NAME: " and fmt to the context's error buffer. @return rc */
IN_PRINTF(3, 4)
eg_status ei_fail(const ictx *c, eg_status rc, const char *fmt, ...);
/* s, or "" for NULL. */
const char *ei_str(const char *s);
/* Do two shapes contradict each other where both are known? */
int ei_shapes_conflict(const eg_shape *a, const eg_shape *b);

/* in_values.c */

/* Load a TensorProto as t's value (external data read in); is_init: a
 * graph initializer, whose non-float bytes are also kept for export. */
eg_status ei_load_value(const ictx *c, const Onnx__TensorProto *tp, const char *what,
                        eg_tensor *t, int is_init);
/* Keep a ValueInfoProto's bytes for export (with the pinned dims); its
 * type gives t's dtype and shape unless t has a value. */
eg_status ei_keep_vinfo(const ictx *c, const Onnx__ValueInfoProto *vi, eg_tensor *t);
/* The graph inputs as tensors, in order (g->input). */
eg_status ei_add_inputs(ictx *c);
/* The initializers as values, sparse ones as pinned tensors. @pre ei_add_inputs ran */
eg_status ei_add_initializers(ictx *c);

/* in_ops.c */

/* Which model operator np is, with its attributes; EG_MOP_COUNT when it
 * must stay opaque. */
eg_mop ei_classify(const Onnx__NodeProto *np, int opset, eg_attrs *a);

#endif
