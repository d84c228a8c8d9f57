/* out_int.h - internals the ONNX exporter's files share (onnx_out.c,
 * out_ops.c): the export context, the node builder and their helpers. */
#ifndef EG_ONNX_OUT_INT_H
#define EG_ONNX_OUT_INT_H

#include "onnx/engine.h"
#include "proto/onnx_pb.h"

#if defined(__GNUC__)
#define OUT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OUT_PRINTF(f, a)
#endif

#define NB_MAX_ATTRS 8
#define NB_MAX_INTS 8

typedef struct {
    char *name;
    int dtype;
    eg_shape shape;
    int tensor; /* its tensor id, or -1 for a value the export made */
} new_value; /* an initializer IR < 4 must also list as a graph input */

typedef struct {
    char *name;
    int n;
    uint8_t raw[8 * EG_MAX_INTS];
} new_ints; /* an int64 vector the export wrote (eo_put_ints) */

typedef struct {
    char *name;
    float v;
    int rank;
    int64_t numel;
} new_fill; /* a float fill the export wrote (eo_put_fill) */

typedef struct {
    const eg_graph *g;
    char *err;
    size_t errlen;
    egp_buf nodes, inits, ios;
    eg_names *node_names; /* node names in use */
    eg_names *new_names;  /* tensor names the export created */
    int counter;
    int *uses;
    int *partner;         /* split0 <-> split1 written as one Split */
    int *fuse;            /* nodes written as one ONNX node, -1 for none:
                             conv2d <-> its bias (one Conv, at the conv),
                             scale <-> bias (one BatchNormalization, at the bias),
                             matmul <-> bias and transpose -> bias (one Gemm, at
                             the bias), inner concat -> outer concat (one Concat) */
    signed char *vtrail;  /* per tensor: trailing 1s its value is written with */
    char *unit_moved;     /* per tensor: a heads output [1,a,b,c] written as
                             [a,1,b,c] (eo_plan_batch_transposes) */
    char *revived;        /* per tensor: an absorbed value the export uses again */
    char **pad_name;      /* per node: the Pad output a pre-padded avgpool reads
                             (emit_pool), given a value_info as a re-import would */
    new_value *added;
    int n_added, cap_added;
    new_ints *ints;       /* the int64 vectors eo_put_ints wrote */
    int n_ints, cap_ints;
    new_fill *fills;      /* the float fills eo_put_fill wrote */
    int n_fills, cap_fills;
    const char *ext_loc;  /* non-NULL: float values of EXT_MIN_BYTES or more go
                             to ext, named in the model by this location
                             (integer ones stay inline: onnxruntime reads a
                             Reshape's shape only from the model itself) */
    egp_buf ext;
} octx;

typedef struct {
    Onnx__NodeProto np;
    Onnx__AttributeProto attr[NB_MAX_ATTRS];
    Onnx__AttributeProto *attrp[NB_MAX_ATTRS];
    int64_t ints[NB_MAX_ATTRS][EG_MAX_INTS];
    char *in_small[8], *out_small[8];
    char **in, **out; /* in_small/out_small, or malloc'd when larger */
    char *owned[4];   /* strings freed with the builder */
    int n_owned;
} nbuild; /* one NodeProto being built (eo_nb_*) */

/* onnx_out.c */

/* Write fmt to the context's error buffer. @return rc */
OUT_PRINTF(3, 4)
eg_status eo_fail(const octx *c, eg_status rc, const char *fmt, ...);
/* Whether value i is written (a dead absorbed value or Constant is not). */
int eo_value_live(const octx *c, int i);
/* A fresh tensor name "base_tag<N>", unused in the output. @return malloc'd, or NULL. */
char *eo_fresh_name(octx *c, const char *base, const char *tag);
/* Tensor t's name, "" for none (t < 0). */
const char *eo_tname(const octx *c, int t);
/* Write an initializer (raw little-endian bytes); added: also list it as an input below IR 4. */
eg_status eo_put_value(octx *c, const char *name, int dtype, const eg_shape *s,
                       const void *bytes, size_t len, int added, int tensor);
/* An int64 vector initializer, an absorbed one reused. @return its name (malloc'd) or NULL. */
char *eo_put_ints(octx *c, const char *base, const char *tag, const int64_t *v, int n);
/* A float initializer of shape s filled with v. @return its name (malloc'd) or NULL. */
char *eo_put_fill(octx *c, const char *base, const char *tag, float v, const eg_shape *s);
/* Start a node of op_type with room for n_in inputs and n_out outputs. */
eg_status eo_nb_init(nbuild *b, const char *op_type, int n_in, int n_out);
/* Free what the builder holds (after eo_nb_init, whatever it returned). */
void eo_nb_free(nbuild *b);
/* Keep a malloc'd string alive as long as the builder. @return s */
char *eo_nb_own(nbuild *b, char *s);
/* Append an input name (not copied). */
void eo_nb_in(nbuild *b, const char *name);
/* Append a malloc'd input name, owned by the builder. @return s */
const char *eo_nb_in_owned(nbuild *b, char *s);
/* Append an output name (not copied). */
void eo_nb_out(nbuild *b, const char *name);
/* Add an int attribute. */
void eo_nb_int(nbuild *b, const char *name, int64_t v);
/* Add a float attribute. */
void eo_nb_float(nbuild *b, const char *name, float v);
/* Add an ints attribute of n values (copied). */
void eo_nb_ints(nbuild *b, const char *name, const int64_t *v, int n);
/* Name the node (unique) and append it to the graph's nodes. */
eg_status eo_nb_emit(octx *c, nbuild *b, const char *want);

/* out_ops.c */

/* Write opspecs node j (with the nodes fused into it; nothing for one
 * fused into another). */
eg_status eo_emit_ops(octx *c, int j);
/* Add/Mul before opset 7: the broadcast of inputs 0 and 1 (already in b) as
 * that opset spells it. @return EG_OK, EG_ENOMEM, or EG_EFORMAT */
eg_status eo_legacy_broadcast(octx *c, const eg_node *n, nbuild *b);
/* The shape tensor t is written with (see octx.unit_moved). */
eg_shape eo_written_shape(const octx *c, int t);
/* Pair each split1 with a split0 of the same input and parameters. */
void eo_pair_splits(const eg_graph *g, int *partner);
/* Plan fuse[] (Conv bias, BatchNormalization, LayerNormalization) and vtrail[]. */
eg_status eo_plan_channels(octx *c);
/* Plan concat chains written as one Concat. @pre eo_plan_channels ran */
void eo_plan_concats(octx *c);
/* Plan matmul + bias written as one Gemm. @pre eo_plan_channels ran */
void eo_plan_gemms(octx *c);
/* Plan the heads outputs written with their unit axis moved (unit_moved). */
void eo_plan_batch_transposes(octx *c);

/* The field number of name in message descriptor d. */
uint32_t eo_field_id(const ProtobufCMessageDescriptor *d, const char *name);
/* 1 when a buffer of c ran out of memory. */
int eo_oom(const octx *c);
/* Record value name (of tensor, -1 for none) as written, for value_info. */
eg_status eo_note_added(octx *c, const char *name, int dtype, const eg_shape *s, int tensor);
/* A string attribute on the node being built. */
void eo_nb_str(nbuild *b, const char *name, const char *v);

#endif
