/* onnx_out.c - ONNX export: an eg_graph becomes a ModelProto again.
 *
 * The model is assembled on the wire: the model shell the importer kept
 * (everything but the graph), then the graph field, itself the graph shell
 * followed by nodes, initializers, inputs, outputs and value_info. Nodes
 * are written in the graph's topological order: opspecs and model
 * operators from the IR (in the form the model's opset expects), opaque
 * nodes from their original bytes (re-packed only when their input or
 * output names changed). Graph inputs and outputs keep their original
 * ValueInfoProto; value_info is generated for every other tensor whose
 * type and shape are known. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/engine.h"
#include "win.h"
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
} new_ints; /* an int64 vector the export wrote (put_ints) */

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
                             [a,1,b,c] (plan_batch_transposes) */
    char *revived;        /* per tensor: an absorbed value the export uses again */
    char **pad_name;      /* per node: the Pad output a pre-padded avgpool reads
                             (emit_pool), given a value_info as a re-import would */
    new_value *added;
    int n_added, cap_added;
    new_ints *ints;       /* the int64 vectors put_ints wrote */
    int n_ints, cap_ints;
    const char *ext_loc;  /* non-NULL: float values of EXT_MIN_BYTES or more go
                             to ext, named in the model by this location
                             (integer ones stay inline: onnxruntime reads a
                             Reshape's shape only from the model itself) */
    egp_buf ext;
} octx;

/* The size from which a value goes to the external data file: onnx's own
 * default threshold (onnx.save_model's size_threshold). */
#define EXT_MIN_BYTES 1024

/* Field numbers, from the descriptors rather than copied by hand. */
static uint32_t field_id(const ProtobufCMessageDescriptor *d, const char *name) {
    return protobuf_c_message_descriptor_get_field_by_name(d, name)->id;
}

OUT_PRINTF(3, 4)
static eg_status fail(const octx *c, eg_status rc, const char *fmt, ...) {
    if (c->err && c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static int oom(const octx *c) { return c->nodes.oom || c->inits.oom || c->ios.oom || c->ext.oom; }

/* ================= names ================= */

static int value_live(const octx *c, int i);

/* Does the output file name tensor i? (A dead value is dropped, so its
 * name is free again: that keeps export a fixed point after one round.) */
static int written(const octx *c, int i) {
    const eg_tensor *t = &c->g->tensor[i];
    return t->producer >= 0 || (t->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_SPARSE | EG_TF_PINNED)) ||
           value_live(c, i);
}

/* A fresh tensor name "base_tag<N>", unused in the output. @return a
 * malloc'd string, or NULL. */
static char *fresh_name(octx *c, const char *base, const char *tag) {
    size_t n = strlen(base) + strlen(tag) + 24;
    char *s = malloc(n);
    int id;
    if (!s) return NULL;
    do snprintf(s, n, "%s_%s%d", base, tag, c->counter++);
    while ((id = eg_find_tensor(c->g, s)) == EG_NAME_RESERVED || (id >= 0 && written(c, id)) ||
           eg_names_get(c->new_names, s) >= 0);
    if (eg_names_put(c->new_names, s, 0) != EG_OK) {
        free(s);
        return NULL;
    }
    return s;
}

/* A node name not used yet ("" stays ""). @return malloc'd, or NULL. */
static char *node_name(octx *c, const char *want) {
    size_t n = strlen(want) + 24;
    char *s = malloc(n);
    if (!s) return NULL;
    snprintf(s, n, "%s", want);
    while (want[0] && eg_names_put(c->node_names, s, 0) == EG_EGRAPH)
        snprintf(s, n, "%s_%d", want, c->counter++);
    return s;
}

static const char *tname(const octx *c, int t) { return t >= 0 ? c->g->tensor[t].name : ""; }

/* ================= values ================= */

static eg_status note_added(octx *c, const char *name, int dtype, const eg_shape *s, int tensor) {
    if (c->g->ir_version >= 4) return EG_OK;
    if (c->n_added == c->cap_added) {
        int nc = c->cap_added ? 2 * c->cap_added : 8;
        new_value *p = realloc(c->added, sizeof *p * (size_t)nc);
        if (!p) return EG_ENOMEM;
        c->added = p, c->cap_added = nc;
    }
    new_value *v = &c->added[c->n_added];
    v->name = strdup(name);
    if (!v->name) return EG_ENOMEM;
    v->dtype = dtype, v->shape = *s, v->tensor = tensor;
    c->n_added++;
    return EG_OK;
}

/* An initializer: name, dims, dtype, raw little-endian bytes. `added`: 0
 * when it is a graph input already, else 1 (then `tensor` is its id, or -1
 * for a value the export made). */
static eg_status put_value(octx *c, const char *name, int dtype, const eg_shape *s,
                           const void *bytes, size_t len, int added, int tensor) {
    Onnx__TensorProto tp;
    int64_t dims[EG_MAX_RANK];
    onnx__tensor_proto__init(&tp);
    tp.name = (char *)name;
    tp.n_dims = (size_t)s->rank;
    memcpy(dims, s->dim, sizeof(int64_t) * (size_t)s->rank);
    tp.dims = dims;
    tp.has_data_type = 1, tp.data_type = dtype;
    tp.has_raw_data = 1, tp.raw_data.len = len, tp.raw_data.data = (uint8_t *)bytes;
    Onnx__StringStringEntryProto kv[3], *kvp[3];
    char num[2][24];
    if (c->ext_loc && dtype == EG_DT_FLOAT && len >= EXT_MIN_BYTES) { /* in the data file, at its end */
        const char *key[3] = {"location", "offset", "length"};
        snprintf(num[0], sizeof num[0], "%zu", c->ext.len);
        snprintf(num[1], sizeof num[1], "%zu", len);
        for (int k = 0; k < 3; k++) {
            onnx__string_string_entry_proto__init(&kv[k]);
            kv[k].key = (char *)key[k], kv[k].value = k ? num[k - 1] : (char *)c->ext_loc;
            kvp[k] = &kv[k];
        }
        egp_buf_put(&c->ext, bytes, len);
        tp.has_raw_data = 0, tp.raw_data.len = 0, tp.raw_data.data = NULL;
        tp.has_data_location = 1, tp.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        tp.n_external_data = 3, tp.external_data = kvp;
    }
    egp_buf_message(&c->inits, field_id(&onnx__graph_proto__descriptor, "initializer"), &tp.base);
    return added ? note_added(c, name, dtype, s, tensor) : EG_OK;
}

/* An int64 initializer holding exactly raw, absorbed (the importer folded
 * it into a node; the node now needs it again) or read by a node the
 * export writes, or -1. */
static int absorbed_match(const octx *c, const uint8_t *raw, int n) {
    for (int i = 0; i < c->g->n_tensors; i++) {
        const eg_tensor *t = &c->g->tensor[i];
        int kept = (t->flags & EG_TF_ABSORBED) || ((t->flags & EG_TF_INIT) && c->uses[i] > 0);
        if (kept && t->dtype == EG_DT_INT64 && t->raw &&
            t->shape.rank == 1 && t->shape.dim[0] == n && t->raw_len == 8 * (size_t)n &&
            memcmp(t->raw, raw, t->raw_len) == 0)
            return i;
    }
    return -1;
}

/* An int64 vector initializer: the absorbed value it came from when there
 * is one (so a round trip keeps the file's names), else a new one.
 * @return its name (malloc'd) or NULL. */
static char *put_ints(octx *c, const char *base, const char *tag, const int64_t *v, int n) {
    uint8_t raw[8 * EG_MAX_INTS];
    eg_shape s = {1, {n}};
    for (int i = 0; i < n; i++)
        for (int b = 0; b < 8; b++) raw[8 * i + b] = (uint8_t)((uint64_t)v[i] >> (8 * b));
    int old = absorbed_match(c, raw, n);
    if (old >= 0) {
        c->revived[old] = 1;
        return strdup(c->g->tensor[old].name);
    }
    /* One new vector per value: two Reshapes to one shape share it, as
     * they share the absorbed one when the file is read again (a round
     * trip is a fixed point). */
    for (int k = 0; k < c->n_ints; k++)
        if (c->ints[k].n == n && memcmp(c->ints[k].raw, raw, 8 * (size_t)n) == 0)
            return strdup(c->ints[k].name);
    if (c->n_ints == c->cap_ints) {
        int nc = c->cap_ints ? 2 * c->cap_ints : 8;
        new_ints *p = realloc(c->ints, sizeof *p * (size_t)nc);
        if (!p) return NULL;
        c->ints = p, c->cap_ints = nc;
    }
    char *name = fresh_name(c, base, tag);
    if (!name) return NULL;
    if (put_value(c, name, EG_DT_INT64, &s, raw, 8 * (size_t)n, 1, -1) != EG_OK ||
        !(c->ints[c->n_ints].name = strdup(name))) {
        free(name);
        return NULL;
    }
    c->ints[c->n_ints].n = n;
    memcpy(c->ints[c->n_ints++].raw, raw, 8 * (size_t)n);
    return name;
}

/* A float initializer of shape s filled with v: an absorbed one like it
 * when there is one (a Clip's min and max, a BatchNormalization's mean and
 * variance come back under their own names), else a new one.
 * @return its name (malloc'd) or NULL. */
static char *put_fill(octx *c, const char *base, const char *tag, float v, const eg_shape *s) {
    int64_t n = eg_shape_numel(s);
    for (int i = 0; i < c->g->n_tensors; i++) {
        const eg_tensor *t = &c->g->tensor[i];
        int same = (t->flags & EG_TF_ABSORBED) && t->dtype == EG_DT_FLOAT && t->data &&
                   t->shape.rank == s->rank && eg_shape_numel(&t->shape) == n;
        for (int64_t k = 0; same && k < n; k++) same = t->data[k] == v;
        if (same) {
            c->revived[i] = 1;
            return strdup(t->name);
        }
    }
    uint8_t *raw = malloc(4 * (size_t)(n > 0 ? n : 1));
    char *name = raw ? fresh_name(c, base, tag) : NULL;
    uint32_t bits;
    memcpy(&bits, &v, 4);
    for (int64_t k = 0; raw && k < n; k++)
        for (int b = 0; b < 4; b++) raw[4 * k + b] = (uint8_t)(bits >> (8 * b));
    if (name && put_value(c, name, EG_DT_FLOAT, s, raw, 4 * (size_t)n, 1, -1) != EG_OK) {
        free(name);
        name = NULL;
    }
    free(raw);
    return name;
}

/* ================= node builder ================= */

typedef struct {
    Onnx__NodeProto np;
    Onnx__AttributeProto attr[NB_MAX_ATTRS];
    Onnx__AttributeProto *attrp[NB_MAX_ATTRS];
    int64_t ints[NB_MAX_ATTRS][EG_MAX_INTS];
    char *in_small[8], *out_small[8];
    char **in, **out; /* in_small/out_small, or malloc'd when larger */
    char *owned[4];   /* strings freed with the builder */
    int n_owned;
} nbuild;

static eg_status nb_init(nbuild *b, const char *op_type, int n_in, int n_out) {
    memset(b, 0, sizeof *b);
    onnx__node_proto__init(&b->np);
    b->np.op_type = (char *)op_type;
    b->in = n_in <= 8 ? b->in_small : malloc(sizeof(char *) * (size_t)n_in);
    b->out = n_out <= 8 ? b->out_small : malloc(sizeof(char *) * (size_t)n_out);
    if (!b->in || !b->out) return EG_ENOMEM;
    b->np.input = b->in, b->np.output = b->out;
    return EG_OK;
}

static void nb_free(nbuild *b) {
    if (b->in != b->in_small) free(b->in);
    if (b->out != b->out_small) free(b->out);
    for (int k = 0; k < b->n_owned; k++) free(b->owned[k]);
}

/* Keep a malloc'd string alive as long as the builder. @return s */
static char *nb_own(nbuild *b, char *s) {
    if (s && b->n_owned < 4) b->owned[b->n_owned++] = s;
    return s;
}

static void nb_in(nbuild *b, const char *name) { b->in[b->np.n_input++] = (char *)name; }

/* Add a malloc'd name as an input, owned by the builder. @return s */
static const char *nb_in_owned(nbuild *b, char *s) {
    if (s) nb_in(b, nb_own(b, s));
    return s;
}
static void nb_out(nbuild *b, const char *name) { b->out[b->np.n_output++] = (char *)name; }

static Onnx__AttributeProto *nb_attr(nbuild *b, const char *name, Onnx__AttributeProto__AttributeType t) {
    size_t k = b->np.n_attribute++;
    Onnx__AttributeProto *a = &b->attr[k];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1, a->type = t;
    b->attrp[k] = a;
    b->np.attribute = b->attrp;
    return a;
}

static void nb_int(nbuild *b, const char *name, int64_t v) {
    Onnx__AttributeProto *a = nb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1, a->i = v;
}

static void nb_float(nbuild *b, const char *name, float v) {
    Onnx__AttributeProto *a = nb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1, a->f = v;
}

static void nb_str(nbuild *b, const char *name, const char *v) {
    Onnx__AttributeProto *a = nb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.len = strlen(v), a->s.data = (uint8_t *)v;
}

static void nb_ints(nbuild *b, const char *name, const int64_t *v, int n) {
    size_t k = b->np.n_attribute;
    Onnx__AttributeProto *a = nb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    memcpy(b->ints[k], v, sizeof(int64_t) * (size_t)n);
    a->n_ints = (size_t)n, a->ints = b->ints[k];
}

/* Name the node (unique) and append it. */
static eg_status nb_emit(octx *c, nbuild *b, const char *want) {
    char *name = node_name(c, want);
    if (!name) return EG_ENOMEM;
    b->np.name = name;
    egp_buf_message(&c->nodes, field_id(&onnx__graph_proto__descriptor, "node"), &b->np.base);
    free(name);
    return oom(c) ? EG_ENOMEM : EG_OK;
}

/* ================= opspecs operators ================= */

static void window_attrs(nbuild *b, int64_t kh, int64_t kw, int32_t stride, int32_t pad) {
    int64_t k[2] = {kh, kw}, s[2] = {stride, stride};
    int64_t ph = ops_pad_begin((int32_t)kh, pad), pw = ops_pad_begin((int32_t)kw, pad);
    int64_t p[4] = {ph, pw, ph, pw};
    nb_ints(b, "kernel_shape", k, 2);
    nb_ints(b, "strides", s, 2);
    nb_ints(b, "pads", p, 4);
}

/* conv2d; a fused RELU becomes Conv into a fresh tensor, then Relu; a
 * bias node (plan_channels) becomes the Conv's third input and output. */
static eg_status emit_conv2d(octx *c, const eg_node *n, const eg_node *bias) {
    nbuild b;
    const eg_shape *w = &c->g->tensor[n->in[1]].shape;
    const char *y = tname(c, (bias ? bias : n)->out[0]);
    eg_status rc = nb_init(&b, "Conv", 3, 1);
    if (rc == EG_OK && n->param[2] == OPS_ACT_RELU && !(y = nb_own(&b, fresh_name(c, y, "conv"))))
        rc = EG_ENOMEM;
    if (rc == EG_OK) {
        nb_in(&b, tname(c, n->in[0])), nb_in(&b, tname(c, n->in[1])), nb_out(&b, y);
        if (bias) nb_in(&b, tname(c, bias->in[1]));
        window_attrs(&b, w->dim[2], w->dim[3], n->param[0], n->param[1]);
        nb_int(&b, "group", n->param[3]);
        rc = nb_emit(c, &b, n->name);
    }
    nbuild r;
    if (rc == EG_OK && n->param[2] == OPS_ACT_RELU && (rc = nb_init(&r, "Relu", 1, 1)) == EG_OK) {
        nb_in(&r, y), nb_out(&r, tname(c, n->out[0]));
        rc = nb_emit(c, &r, n->name);
        nb_free(&r);
    }
    nb_free(&b);
    return rc;
}

/* Pad(x) -> y with zeros, pads[8] in ONNX order, as the opset spells it:
 * attribute "paddings" (Pad-1), "pads" (2..10), an input (11 on). */
static eg_status emit_pad(octx *c, const char *x, const char *y, const int64_t *pads, const char *name) {
    nbuild b;
    eg_status rc = nb_init(&b, "Pad", 2, 1);
    if (rc == EG_OK) {
        nb_in(&b, x), nb_out(&b, y);
        if (c->g->opset < 11) nb_ints(&b, c->g->opset < 2 ? "paddings" : "pads", pads, 8);
        else if (!nb_in_owned(&b, put_ints(c, y, "pads", pads, 8))) rc = EG_ENOMEM;
        if (rc == EG_OK) rc = nb_emit(c, &b, name);
    }
    nb_free(&b);
    return rc;
}

/* maxpool/avgpool. An avgpool with SAME padding counts the pads; before
 * opset 7 AveragePool has no count_include_pad and never counts them, so
 * the zeros are padded on by a Pad in front. */
/* An average pool whose one VALID window is the whole plane: what a
 * GlobalAveragePool becomes on import (lower.c), written back as one. */
static int global_pool(const octx *c, const eg_node *n) {
    const eg_shape *x = &c->g->tensor[n->in[0]].shape;
    return n->op == OP_AVGPOOL && n->param[1] == 1 && n->param[2] == OPS_PAD_VALID &&
           x->rank == 4 && OPS_KERNEL_H(n->param[0]) == x->dim[2] &&
           OPS_KERNEL_W(n->param[0]) == x->dim[3];
}

static eg_status emit_pool(octx *c, const eg_node *n) {
    nbuild b;
    if (global_pool(c, n)) {
        eg_status rc = nb_init(&b, "GlobalAveragePool", 1, 1);
        if (rc != EG_OK) return rc;
        nb_in(&b, tname(c, n->in[0])), nb_out(&b, tname(c, n->out[0]));
        rc = nb_emit(c, &b, n->name);
        nb_free(&b);
        return rc;
    }
    int32_t k = n->param[0], pad = n->param[2];
    int64_t kh = OPS_KERNEL_H(k), kw = OPS_KERNEL_W(k);
    int64_t ph = ops_same_pad((int32_t)kh), pw = ops_same_pad((int32_t)kw);
    int64_t pads[8] = {0, 0, ph, pw, 0, 0, ph, pw};
    int pre_pad = n->op == OP_AVGPOOL && pad == OPS_PAD_SAME && c->g->opset < 7 && (kh > 1 || kw > 1);
    const char *x = tname(c, n->in[0]);
    eg_status rc = nb_init(&b, n->op == OP_AVGPOOL ? "AveragePool" : "MaxPool", 1, 1);
    if (rc == EG_OK && pre_pad && !(x = nb_own(&b, fresh_name(c, tname(c, n->out[0]), "pad"))))
        rc = EG_ENOMEM;
    if (rc == EG_OK && pre_pad && !(c->pad_name[n - c->g->node] = strdup(x))) rc = EG_ENOMEM;
    if (rc == EG_OK && pre_pad) rc = emit_pad(c, tname(c, n->in[0]), x, pads, n->name);
    if (rc == EG_OK) {
        nb_in(&b, x), nb_out(&b, tname(c, n->out[0]));
        window_attrs(&b, kh, kw, n->param[1], pre_pad ? OPS_PAD_VALID : pad);
        if (n->op == OP_AVGPOOL && pad == OPS_PAD_SAME && !pre_pad && c->g->opset >= 7)
            nb_int(&b, "count_include_pad", 1);
        rc = nb_emit(c, &b, n->name);
    }
    nb_free(&b);
    return rc;
}

/* ---- Add and Mul before opset 7: legacy broadcasting ---- */

/* Where b, aligned to a's last dims, has its dims other than 1: [*lo, *hi).
 * @return 1 when those equal a's dims there (b broadcasts to a as a's
 *         dims lo..hi, which legacy broadcasting with axis lo writes). */
static int legacy_core(const eg_shape *a, const eg_shape *b, int *lo, int *hi) {
    int off = a->rank - b->rank;
    if (!eg_shape_known(a) || !eg_shape_known(b) || off < 0) return 0;
    *lo = a->rank, *hi = 0;
    for (int i = 0; i < b->rank; i++)
        if (b->dim[i] != 1) {
            if (*lo > off + i) *lo = off + i;
            *hi = off + i + 1;
        }
    if (*hi == 0) *lo = *hi = a->rank; /* one element */
    for (int i = *lo; i < *hi; i++)
        if (b->dim[i - off] != a->dim[i]) return 0;
    return 1;
}

/* The value the importer reshaped into v ("<name>_bcast", onnx_in.c's
 * legacy_channel): a float value of that name holding v's elements in the
 * core shape, so the export writes it back under its own name (revived
 * when nothing else reads it). @return its id, or -1. */
static int legacy_source(octx *c, const eg_tensor *v, const eg_shape *core) {
    size_t len = strlen(v->name);
    int64_t numel = eg_shape_numel(core);
    if (len <= 6 || strcmp(v->name + len - 6, "_bcast")) return -1;
    char *name = strndup(v->name, len - 6);
    int id = name ? eg_find_tensor(c->g, name) : -1;
    free(name);
    if (id < 0) return -1;
    const eg_tensor *t = &c->g->tensor[id];
    if (!(t->flags & EG_TF_INIT) || !t->data || t->shape.rank != core->rank ||
        memcmp(t->shape.dim, core->dim, sizeof(int64_t) * (size_t)core->rank) ||
        memcmp(t->data, v->data, sizeof(float) * (size_t)numel))
        return -1;
    if (!value_live(c, id)) c->revived[id] = 1;
    return id;
}

/* Write the broadcast of inputs 0 and 1 (already in b) as opset < 7
 * spells it: nothing for equal shapes; broadcast = 1 (with axis) when the
 * second is the first's dims lo..hi plus leading or trailing 1s, the
 * inputs swapped when it is the other way round (Add and Mul commute),
 * and, when the 1s would be in the way, a float value rewritten without
 * them. @return EG_OK, EG_ENOMEM, or EG_EFORMAT when the opset cannot say it. */
static eg_status legacy_broadcast(octx *c, const eg_node *n, nbuild *b) {
    char sa[160], sb[160];
    int t[2] = {n->in[0], n->in[1]}, lo, hi, swap;
    const eg_shape *s0 = &c->g->tensor[t[0]].shape, *s1 = &c->g->tensor[t[1]].shape;
    /* the importer lowers a legacy broadcast=1 only between known shapes,
     * so an unknown one comes from broadcast=0: equal shapes, no attribute */
    if (!eg_shape_known(s0) || !eg_shape_known(s1)) return EG_OK;
    if (s0->rank == s1->rank && !memcmp(s0->dim, s1->dim, sizeof(int64_t) * (size_t)s0->rank))
        return EG_OK;
    swap = !legacy_core(s0, s1, &lo, &hi);
    if (swap && !legacy_core(s1, s0, &lo, &hi))
        return fail(c, EG_EFORMAT, "node '%s' (%s): broadcasting %s with %s cannot be written in "
                    "opset %d", n->name, b->np.op_type, eg_shape_str(s0, NULL, sa, sizeof sa),
                    eg_shape_str(s1, NULL, sb, sizeof sb), c->g->opset);
    const eg_tensor *a = &c->g->tensor[t[swap]], *v = &c->g->tensor[t[!swap]];
    b->in[0] = a->name, b->in[1] = v->name;
    nb_int(b, "broadcast", 1);
    if (hi == lo || (hi - lo == v->shape.rank && hi == a->shape.rank)) return EG_OK; /* suffix */
    if (hi - lo != v->shape.rank) { /* 1s to drop: only a value can be rewritten */
        eg_shape core = {hi - lo, {0}};
        memcpy(core.dim, a->shape.dim + lo, sizeof(int64_t) * (size_t)(hi - lo));
        if (!v->data || !(v->flags & EG_TF_INIT))
            return fail(c, EG_EFORMAT, "node '%s' (%s): broadcasting %s with %s cannot be written "
                        "in opset %d", n->name, b->np.op_type, eg_shape_str(&a->shape, NULL, sa, sizeof sa),
                        eg_shape_str(&v->shape, NULL, sb, sizeof sb), c->g->opset);
        int src = legacy_source(c, v, &core);
        char *name = src >= 0 ? NULL : nb_own(b, fresh_name(c, v->name, "legacy"));
        if (src < 0 && (!name || put_value(c, name, EG_DT_FLOAT, &core, v->data,
                                           sizeof(float) * (size_t)eg_shape_numel(&core), 1, -1) != EG_OK))
            return EG_ENOMEM;
        b->in[1] = src >= 0 ? c->g->tensor[src].name : name;
        c->uses[t[!swap]]--; /* read here no more: dropped if absorbed and unread */
    }
    if (hi > lo) nb_int(b, "axis", lo);
    return EG_OK;
}

/* An op with the node's inputs and output and at most one int attribute. */
static eg_status emit_plain(octx *c, const eg_node *n, const char *op_type, const char *attr,
                            int64_t v) {
    nbuild b;
    eg_status rc = nb_init(&b, op_type, n->n_in, 1);
    if (rc == EG_OK) {
        for (int k = 0; k < n->n_in; k++) nb_in(&b, tname(c, n->in[k]));
        nb_out(&b, tname(c, n->out[0]));
        if (attr) nb_int(&b, attr, v);
        if (c->g->opset < 7 && (!strcmp(op_type, "Add") || !strcmp(op_type, "Mul")))
            rc = legacy_broadcast(c, n, &b);
        if (rc == EG_OK) rc = nb_emit(c, &b, n->name);
    }
    nb_free(&b);
    return rc;
}

/* A map whose ONNX spelling carries constants (ops_info.onnx_const): as
 * scalar inputs after x from the opset the table names, else as float
 * attributes. */
/* nanzero: IsNaN(x) into a fresh tensor, then Where(it, 0, x). */
static eg_status emit_nanzero(octx *c, const eg_node *n) {
    static const eg_shape scalar = {0, {0}};
    const char *x = tname(c, n->in[0]), *y = tname(c, n->out[0]);
    nbuild b, w;
    eg_status rc = nb_init(&b, "IsNaN", 1, 1);
    if (rc != EG_OK) return rc;
    const char *isnan = nb_own(&b, fresh_name(c, y, "isnan"));
    if (!isnan) rc = EG_ENOMEM;
    if (rc == EG_OK) { /* the Where keeps the node's name, so reading the file back and
                          writing it again gives the same names */
        size_t len = strlen(n->name) + 8;
        char *name = malloc(len);
        nb_in(&b, x), nb_out(&b, isnan);
        if (name) snprintf(name, len, "%s_isnan", n->name);
        rc = name ? nb_emit(c, &b, name) : EG_ENOMEM;
        free(name);
    }
    if (rc == EG_OK && (rc = nb_init(&w, "Where", 3, 1)) == EG_OK) {
        nb_in(&w, isnan);
        if (!nb_in_owned(&w, put_fill(c, y, "zero", 0.0f, &scalar))) rc = EG_ENOMEM;
        nb_in(&w, x), nb_out(&w, y);
        if (rc == EG_OK) rc = nb_emit(c, &w, n->name);
        nb_free(&w);
    }
    nb_free(&b);
    return rc;
}

static eg_status emit_map(octx *c, const eg_node *n) {
    const ops_info *o = &ops_table[n->op];
    if (n->op == OP_NANZERO) return emit_nanzero(c, n);
    int as_inputs = o->onnx_const_inputs_since > 0 && c->g->opset >= o->onnx_const_inputs_since;
    static const eg_shape scalar = {0, {0}};
    nbuild b;
    eg_status rc = nb_init(&b, o->onnx, 3, 1);
    if (rc != EG_OK) return rc;
    nb_in(&b, tname(c, n->in[0])), nb_out(&b, tname(c, n->out[0]));
    for (int k = 0; k < 2 && o->onnx_const[k].name && rc == EG_OK; k++) {
        if (!as_inputs) {
            if (!o->onnx_const[k].is_default) nb_float(&b, o->onnx_const[k].name, o->onnx_const[k].value);
        } else if (!nb_in_owned(&b, put_fill(c, tname(c, n->in[0]), o->onnx_const[k].name,
                                           o->onnx_const[k].value, &scalar)))
            rc = EG_ENOMEM;
    }
    if (rc == EG_OK) rc = nb_emit(c, &b, n->name);
    nb_free(&b);
    return rc;
}

/* transpose, or permute with its perm: one Transpose. */
static eg_status emit_transpose(octx *c, const eg_node *n) {
    int64_t perm[TEN_MAX_RANK] = {1, 0};
    int r = 2;
    if (n->op == OP_PERMUTE)
        for (r = 0; r < OPS_PERM_RANK(n->param[0]); r++) perm[r] = OPS_PERM_AT(n->param[0], r);
    if (c->unit_moved[n->in[0]]) /* its input's axes 0 and 1 are swapped */
        for (int a = 0; a < r; a++) perm[a] = perm[a] < 2 ? 1 - perm[a] : perm[a];
    nbuild b;
    eg_status rc = nb_init(&b, "Transpose", 1, 1);
    if (rc == EG_OK) {
        nb_in(&b, tname(c, n->in[0])), nb_out(&b, tname(c, n->out[0]));
        nb_ints(&b, "perm", perm, r);
        rc = nb_emit(c, &b, n->name);
    }
    nb_free(&b);
    return rc;
}

/* split0 + split1 on the same input and parameters: one Split. */
static eg_status emit_split_pair(octx *c, const eg_node *s0, const eg_node *s1) {
    nbuild b;
    int64_t d = c->g->tensor[s0->in[0]].shape.dim[s0->param[0]];
    int64_t sizes[2] = {s0->param[1], d - s0->param[1]};
    eg_status rc = nb_init(&b, "Split", 2, 2);
    if (rc == EG_OK) {
        nb_in(&b, tname(c, s0->in[0]));
        nb_out(&b, tname(c, s0->out[0])), nb_out(&b, tname(c, s1->out[0]));
        nb_int(&b, "axis", s0->param[0]);
        if (c->g->opset < 13) nb_ints(&b, "split", sizes, 2);
        else if (!nb_in_owned(&b, put_ints(c, tname(c, s0->out[0]), "split", sizes, 2))) rc = EG_ENOMEM;
        if (rc == EG_OK) rc = nb_emit(c, &b, s0->name);
    }
    nb_free(&b);
    return rc;
}

/* An unpaired split0/split1: a Slice of [0, size) or [size, d). */
static eg_status emit_slice(octx *c, const eg_node *n) {
    nbuild b;
    int64_t axis = n->param[0], size = n->param[1];
    int64_t d = c->g->tensor[n->in[0]].shape.dim[axis];
    int64_t start = n->op == OP_SPLIT0 ? 0 : size, end = n->op == OP_SPLIT0 ? size : d;
    const char *y = tname(c, n->out[0]);
    eg_status rc = nb_init(&b, "Slice", 4, 1);
    if (rc == EG_OK) {
        nb_in(&b, tname(c, n->in[0])), nb_out(&b, y);
        if (c->g->opset < 10) {
            nb_ints(&b, "starts", &start, 1), nb_ints(&b, "ends", &end, 1), nb_ints(&b, "axes", &axis, 1);
        } else if (!nb_in_owned(&b, put_ints(c, y, "starts", &start, 1)) ||
                   !nb_in_owned(&b, put_ints(c, y, "ends", &end, 1)) ||
                   !nb_in_owned(&b, put_ints(c, y, "axes", &axis, 1)))
            rc = EG_ENOMEM;
        if (rc == EG_OK) rc = nb_emit(c, &b, n->name);
    }
    nb_free(&b);
    return rc;
}

/* heads, unheads: one Reshape to the output's shape (an attribute before
 * opset 5, then an int64 input). */
static eg_status reshape_to(octx *c, const char *x, const char *y, const eg_shape *s, const char *name) {
    nbuild b;
    eg_status rc = nb_init(&b, "Reshape", 2, 1);
    if (rc == EG_OK) {
        nb_in(&b, x), nb_out(&b, y);
        if (c->g->opset < 5) nb_ints(&b, "shape", s->dim, s->rank);
        else if (!nb_in_owned(&b, put_ints(c, y, "shape", s->dim, s->rank))) rc = EG_ENOMEM;
        if (rc == EG_OK) rc = nb_emit(c, &b, name);
    }
    nb_free(&b);
    return rc;
}

/* The shape a unit_moved tensor is written with: its first two axes
 * swapped. */
static eg_shape written_shape(const octx *c, int t) {
    eg_shape s = c->g->tensor[t].shape;
    if (c->unit_moved[t]) s.dim[0] = s.dim[1], s.dim[1] = 1;
    return s;
}

static eg_status emit_reshape(octx *c, const eg_node *n) {
    eg_shape s = written_shape(c, n->out[0]);
    return reshape_to(c, tname(c, n->in[0]), tname(c, n->out[0]), &s, n->name);
}

/* kmul(v, w): w's 1x1 kernel transposed to [I,M,1,1] (a vector: reshaped
 * to [1,M,1,1]) is a batch of 1x1 images, so it is Conv(w', v), turned
 * back. (It reads weights only, so the export has usually folded it.) */
static eg_status emit_kmul(octx *c, const eg_node *n) {
    const eg_shape *w = &c->g->tensor[n->in[1]].shape;
    const char *y = tname(c, n->out[0]);
    static const int64_t swap01[4] = {1, 0, 2, 3};
    char *t1 = fresh_name(c, y, "kin"), *t2 = fresh_name(c, y, "kconv");
    eg_status rc = t1 && t2 ? EG_OK : EG_ENOMEM;
    nbuild b;
    for (int step = 0; step < 3 && rc == EG_OK; step++) {
        const char *from = step == 0 ? tname(c, n->in[1]) : step == 1 ? t1 : t2;
        const char *to = step == 0 ? t1 : step == 1 ? t2 : y;
        if (step == 1) { /* Conv(w', v) */
            if ((rc = nb_init(&b, "Conv", 2, 1)) != EG_OK) break;
            nb_in(&b, from), nb_in(&b, tname(c, n->in[0])), nb_out(&b, to);
            rc = nb_emit(c, &b, to);
            nb_free(&b);
        } else if (w->rank == 4) { /* Transpose of the first two axes */
            if ((rc = nb_init(&b, "Transpose", 1, 1)) != EG_OK) break;
            nb_in(&b, from), nb_out(&b, to), nb_ints(&b, "perm", swap01, 4);
            rc = nb_emit(c, &b, step ? n->name : to);
            nb_free(&b);
        } else { /* [M] -> [1,M,1,1] and [1,O,1,1] -> [O] */
            eg_shape s = {4, {1, w->dim[0], 1, 1}};
            if (step == 2) s = c->g->tensor[n->out[0]].shape;
            rc = reshape_to(c, from, to, &s, step ? n->name : to);
        }
    }
    free(t1), free(t2);
    return rc;
}

/* enlarge: zero-pad the kernel's spatial dims, centred. */
static eg_status emit_enlarge(octx *c, const eg_node *n) {
    const eg_shape *w = &c->g->tensor[n->in[0]].shape;
    int64_t ph = (OPS_KERNEL_H(n->param[0]) - w->dim[2]) / 2, pw = (OPS_KERNEL_W(n->param[0]) - w->dim[3]) / 2;
    int64_t pads[8] = {0, 0, ph, pw, 0, 0, ph, pw};
    return emit_pad(c, tname(c, n->in[0]), tname(c, n->out[0]), pads, n->name);
}

/* The value of a constant operator (imm, iconv, poolk, ones) for its
 * inferred output shape, written as an initializer of that name. */
static void fill_constant(ops_op op, const eg_shape *s, float *v, int64_t numel) {
    int64_t kh = s->rank == 4 ? s->dim[2] : 1, kw = s->rank == 4 ? s->dim[3] : 1;
    for (int64_t i = 0; i < numel; i++) v[i] = op == OP_ONES ? 1.0f : 0.0f;
    if (op == OP_IMM)
        for (int64_t i = 0; i < s->dim[0]; i++) v[i * s->dim[1] + i] = 1.0f;
    if (op == OP_ICONV || op == OP_POOLK)
        for (int64_t o = 0; o < s->dim[0]; o++) {
            float *cell = v + (o * s->dim[1] + o) * kh * kw;
            if (op == OP_ICONV) cell[(kh / 2) * kw + kw / 2] = 1.0f;
            else
                for (int64_t k = 0; k < kh * kw; k++) cell[k] = 1.0f / (float)(kh * kw);
        }
}

static eg_status emit_constant(octx *c, const eg_node *n) {
    const eg_tensor *t = &c->g->tensor[n->out[0]];
    int64_t numel = eg_shape_numel(&t->shape);
    if (numel < 0 || numel > ((int64_t)1 << 30))
        return fail(c, EG_ELIMIT, "node '%s' (%s): constant of shape too large to write",
                    n->name, ops_table[n->op].name);
    float *v = malloc(sizeof(float) * (size_t)(numel ? numel : 1));
    if (!v) return EG_ENOMEM;
    fill_constant(n->op, &t->shape, v, numel);
    eg_status rc = put_value(c, t->name, EG_DT_FLOAT, &t->shape, v, sizeof(float) * (size_t)numel, 1,
                             n->out[0]);
    free(v);
    return rc;
}

/* bias/scale (axis; x, v) as Add/Mul: numpy aligns trailing dims, so v
 * needs a 1 for each dim after the axis. A value only such nodes read is
 * written in that shape (plan_channels); otherwise a Reshape makes it. */
/* scale(1; x, s) then bias(1; ., b) as BatchNormalization(x, s, b, 0, 1)
 * with epsilon 0: x * s / sqrt(1) + b, one pass. */
static eg_status emit_batchnorm(octx *c, const eg_node *s, const eg_node *b) {
    const eg_shape *vs = &c->g->tensor[s->in[1]].shape;
    nbuild nb;
    eg_status rc = nb_init(&nb, "BatchNormalization", 5, 1);
    if (rc != EG_OK) return rc;
    nb_in(&nb, tname(c, s->in[0])), nb_in(&nb, tname(c, s->in[1])), nb_in(&nb, tname(c, b->in[1]));
    if (!nb_in_owned(&nb, put_fill(c, tname(c, b->out[0]), "mean", 0.0f, vs)) ||
        !nb_in_owned(&nb, put_fill(c, tname(c, b->out[0]), "var", 1.0f, vs)))
        rc = EG_ENOMEM;
    nb_out(&nb, tname(c, b->out[0]));
    nb_float(&nb, "epsilon", 0.0f);
    if (rc == EG_OK) rc = nb_emit(c, &nb, s->name);
    nb_free(&nb);
    return rc;
}

/* matmul(a, w) then bias(1; ., v) as Gemm(a, w, v); w read through a
 * transpose that plan_gemms fused becomes transB = 1 of its input. */
static eg_status emit_gemm(octx *c, const eg_node *m, const eg_node *b) {
    const eg_graph *g = c->g;
    int w = m->in[1], t = g->tensor[w].producer, trans = 0;
    if (t >= 0 && g->node[t].kind == EG_KIND_OPS && g->node[t].op == OP_TRANSPOSE &&
        c->fuse[t] == (int)(b - g->node))
        w = g->node[t].in[0], trans = 1;
    nbuild nb;
    eg_status rc = nb_init(&nb, "Gemm", 3, 1);
    if (rc != EG_OK) return rc;
    nb_in(&nb, tname(c, m->in[0])), nb_in(&nb, tname(c, w)), nb_in(&nb, tname(c, b->in[1]));
    nb_out(&nb, tname(c, b->out[0]));
    if (trans) nb_int(&nb, "transB", 1);
    rc = nb_emit(c, &nb, m->name);
    nb_free(&nb);
    return rc;
}

static eg_status emit_channel(octx *c, int j) {
    const eg_node *n = &c->g->node[j];
    const eg_tensor *x = &c->g->tensor[n->in[0]], *v = &c->g->tensor[n->in[1]];
    int trail = x->shape.rank - 1 - n->param[0];
    if (c->fuse[j] >= 0 && n->op == OP_BIAS && c->g->node[c->fuse[j]].kind == EG_KIND_OPS &&
        c->g->node[c->fuse[j]].op == OP_SCALE)
        return emit_batchnorm(c, &c->g->node[c->fuse[j]], n);
    if (c->fuse[j] >= 0 && n->op == OP_BIAS && c->g->node[c->fuse[j]].kind == EG_KIND_OPS &&
        c->g->node[c->fuse[j]].op == OP_MATMUL)
        return emit_gemm(c, &c->g->node[c->fuse[j]], n);
    if (c->fuse[j] >= 0) return EG_OK; /* the Conv's bias, or the BatchNormalization's scale */
    if (c->g->opset < 7 && trail > 0) { /* the legacy form says it directly */
        nbuild b;
        eg_status rc = nb_init(&b, ops_table[n->op].onnx, 2, 1);
        if (rc == EG_OK) {
            nb_in(&b, x->name), nb_in(&b, v->name), nb_out(&b, tname(c, n->out[0]));
            nb_int(&b, "broadcast", 1), nb_int(&b, "axis", n->param[0]);
            rc = nb_emit(c, &b, n->name);
        }
        nb_free(&b);
        return rc;
    }
    if (trail == 0 || c->vtrail[n->in[1]] == trail)
        return emit_plain(c, n, ops_table[n->op].onnx, NULL, 0);
    int64_t shape[EG_MAX_RANK] = {v->shape.dim[0]};
    for (int k = 1; k <= trail; k++) shape[k] = 1;
    nbuild r, b;
    char *vr = fresh_name(c, v->name, "bcast");
    eg_status rc = vr ? nb_init(&r, "Reshape", 2, 1) : EG_ENOMEM;
    if (rc != EG_OK) return free(vr), rc;
    nb_in(&r, v->name), nb_out(&r, nb_own(&r, vr));
    if (c->g->opset < 5) nb_ints(&r, "shape", shape, trail + 1);
    else if (!nb_in_owned(&r, put_ints(c, v->name, "shape", shape, trail + 1))) rc = EG_ENOMEM;
    if (rc == EG_OK) rc = nb_emit(c, &r, n->name);
    if (rc == EG_OK && (rc = nb_init(&b, ops_table[n->op].onnx, 2, 1)) == EG_OK) {
        nb_in(&b, x->name), nb_in(&b, vr), nb_out(&b, tname(c, n->out[0]));
        rc = nb_emit(c, &b, n->name);
        nb_free(&b);
    }
    nb_free(&r);
    return rc;
}

/* A float initializer [C] with its data, read only where the export
 * writes it as one. */
static int const_vec(const octx *c, int v, int64_t n) {
    return eg_float_vec(c->g, v, n) && !(c->g->tensor[v].flags & EG_TF_INPUT);
}

/* Is node j a bias on axis 1 whose input only a scale on axis 1 writes,
 * both by constant vectors? Written as one BatchNormalization (mean 0,
 * variance 1), the form lower.c's lower_batchnorm reads back as it is. */
static int bn_pair(const octx *c, int j) {
    const eg_graph *g = c->g;
    const eg_node *b = &g->node[j];
    if (b->kind != EG_KIND_OPS || b->op != OP_BIAS || b->param[0] != 1 || b->in[0] < 0) return 0;
    int t = b->in[0], p = g->tensor[t].producer;
    const eg_node *s = p >= 0 ? &g->node[p] : NULL;
    if (!s || s->kind != EG_KIND_OPS || s->op != OP_SCALE || s->param[0] != 1 || s->in[0] < 0 ||
        c->uses[t] != 1 || (g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED)) ||
        g->tensor[s->in[0]].shape.rank < 2)
        return 0;
    int64_t n = g->tensor[s->in[0]].shape.dim[1];
    return const_vec(c, s->in[1], n) && const_vec(c, b->in[1], n);
}

/* layernorm and the scale and bias eg_layernorm_of says belong to it: one
 * LayerNormalization (lower.c's lower_layernorm reads it back the same
 * way). fuse[layernorm] = the last of them, fuse[scale] = fuse[bias] = the
 * layernorm. Runs first. */
static void plan_layernorms(octx *c) {
    for (int j = 0; j < c->g->n_nodes; j++) {
        int l = eg_layernorm_of(c->g, c->uses, j);
        if (l < 0) continue;
        c->fuse[j] = l;
        if (c->g->node[j].op == OP_BIAS || c->fuse[l] < 0) c->fuse[l] = j;
    }
}

/* The name of vector v ([C]) as the scale or bias of a LayerNormalization
 * over the last `trail` + 1 dims: v itself when trail is 0, else v
 * reshaped to [C, 1, ..., 1] (a Reshape of a constant, which the runtime
 * folds), as ONNX wants them of the normalised shape. */
static char *ln_vector(octx *c, int v, int trail, const char *node) {
    const eg_shape *vs = &c->g->tensor[v].shape;
    char *y = NULL;
    if (!trail) return strdup(tname(c, v));
    eg_shape s = {1 + trail, {vs->rank == 1 ? vs->dim[0] : -1}};
    for (int k = 1; k <= trail; k++) s.dim[k] = 1;
    if (!(y = fresh_name(c, tname(c, v), "ln"))) return NULL;
    if (reshape_to(c, tname(c, v), y, &s, node) != EG_OK) {
        free(y);
        return NULL;
    }
    return y;
}

/* 1 when a dim of s after axis is not 1: a row operator along axis then
 * differs from ONNX's LayerNormalization (and Softmax before opset 13),
 * which take every dim from the axis on. */
static int rows_differ(const eg_shape *s, int axis) {
    for (int k = axis + 1; k < s->rank; k++)
        if (s->dim[k] != 1) return 1;
    return 0;
}

/* A Transpose of tensor name x by perm into a fresh name *y (tag'ed). */
static eg_status emit_perm(octx *c, const char *x, char **y, const char *tag, const int64_t *perm, int rank,
                           const char *node) {
    nbuild b;
    *y = fresh_name(c, x, tag);
    eg_status rc = *y ? nb_init(&b, "Transpose", 1, 1) : EG_ENOMEM;
    if (rc != EG_OK) return rc;
    nb_in(&b, x), nb_out(&b, *y), nb_ints(&b, "perm", perm, rank);
    rc = nb_emit(c, &b, node);
    nb_free(&b);
    return rc;
}

/* Row operator n along its axis, written as ONNX op_type with the axis
 * last: x is moved there by a Transpose into *x, and *y is the name the
 * operator writes, moved back into n's output by finish_moved. perm and
 * inv get the permutation and its inverse. */
static eg_status start_moved(octx *c, const eg_node *n, const eg_node *last, char **x, char **y, int64_t *perm,
                             int64_t *inv) {
    int axis = n->param[0], rank = c->g->tensor[n->in[0]].shape.rank;
    for (int k = 0, q = 0; k < rank; k++)
        if (k != axis) perm[q++] = k;
    perm[rank - 1] = axis;
    for (int k = 0; k < rank; k++) inv[perm[k]] = k;
    *y = NULL;
    eg_status rc = emit_perm(c, tname(c, n->in[0]), x, "last", perm, rank, n->name);
    if (rc == EG_OK && !(*y = fresh_name(c, tname(c, last->out[0]), "last"))) rc = EG_ENOMEM;
    return rc;
}

static eg_status finish_moved(octx *c, const eg_node *n, const eg_node *last, const char *y, const int64_t *inv) {
    nbuild b;
    eg_status rc = nb_init(&b, "Transpose", 1, 1);
    if (rc != EG_OK) return rc;
    nb_in(&b, y), nb_out(&b, tname(c, last->out[0]));
    nb_ints(&b, "perm", inv, c->g->tensor[n->in[0]].shape.rank);
    rc = nb_emit(c, &b, n->name);
    nb_free(&b);
    return rc;
}

/* softmax(axis): Softmax; before opset 13 ONNX's Softmax flattens every
 * dim from its axis on, so an axis with other dims after it is moved last
 * and back. */
static eg_status emit_softmax(octx *c, const eg_node *n) {
    const eg_shape *xs = &c->g->tensor[n->in[0]].shape;
    if (c->g->opset >= 13 || !rows_differ(xs, n->param[0])) return emit_plain(c, n, "Softmax", "axis", n->param[0]);
    int64_t perm[EG_MAX_RANK], inv[EG_MAX_RANK];
    char *x = NULL, *y = NULL;
    nbuild b;
    eg_status rc = start_moved(c, n, n, &x, &y, perm, inv);
    if (rc == EG_OK && (rc = nb_init(&b, "Softmax", 1, 1)) == EG_OK) {
        nb_in(&b, x), nb_out(&b, y), nb_int(&b, "axis", xs->rank - 1);
        rc = nb_emit(c, &b, n->name);
        nb_free(&b);
    }
    if (rc == EG_OK) rc = finish_moved(c, n, n, y, inv);
    free(x), free(y);
    return rc;
}

/* layernorm(axis), with the scale and bias plan_layernorms fused into it
 * (without a fused scale its Scale is ones), as one ONNX
 * LayerNormalization. The opspecs layernorm normalises along its axis
 * alone, ONNX's over every dim from its axis on: the same when the dims
 * after the axis are all 1 (a channel norm of a pooled [N, C, 1, 1]; the
 * scale and bias then get those 1s too), and otherwise the axis is moved
 * last by a Transpose and back after. */
static eg_status emit_layernorm(octx *c, int j) {
    const eg_graph *g = c->g;
    const eg_node *n = &g->node[j];
    const eg_node *last = c->fuse[j] >= 0 ? &g->node[c->fuse[j]] : n;
    const eg_node *b = last != n && last->op == OP_BIAS ? last : NULL;
    const eg_node *s = b ? &g->node[g->tensor[b->in[0]].producer] : last != n ? last : NULL;
    const eg_shape *xs = &g->tensor[n->in[0]].shape;
    int axis = n->param[0], rank = xs->rank, moved = rows_differ(xs, axis);
    int trail = moved ? 0 : rank - 1 - axis;
    eg_shape vs = {1 + trail, {xs->dim[axis]}};
    for (int k = 1; k <= trail; k++) vs.dim[k] = 1;
    int64_t perm[EG_MAX_RANK], inv[EG_MAX_RANK];
    char *x = NULL, *y = NULL;
    eg_status rc = EG_OK;
    if (moved) {
        rc = start_moved(c, n, last, &x, &y, perm, inv);
    } else {
        x = strdup(tname(c, n->in[0])), y = strdup(tname(c, last->out[0]));
        if (!x || !y) rc = EG_ENOMEM;
    }
    nbuild nb;
    if (rc == EG_OK) rc = nb_init(&nb, "LayerNormalization", 3, 1);
    if (rc != EG_OK) {
        free(x), free(y);
        return rc;
    }
    nb_in(&nb, x);
    if (s) {
        if (!nb_in_owned(&nb, ln_vector(c, s->in[1], trail, n->name))) rc = EG_ENOMEM;
    } else if (!nb_in_owned(&nb, put_fill(c, tname(c, n->out[0]), "scale", 1.0f, &vs))) {
        rc = EG_ENOMEM;
    }
    if (b && rc == EG_OK && !nb_in_owned(&nb, ln_vector(c, b->in[1], trail, n->name))) rc = EG_ENOMEM;
    nb_out(&nb, y);
    nb_int(&nb, "axis", moved ? rank - 1 : axis);
    nb_float(&nb, "epsilon", ops_eps_value(n->param[1]));
    if (rc == EG_OK) rc = nb_emit(c, &nb, n->name);
    nb_free(&nb);
    if (rc == EG_OK && moved) rc = finish_moved(c, n, last, y, inv);
    free(x), free(y);
    return rc;
}

/* A conv2d without a fused relu whose output only a bias on its channels
 * reads is written as one Conv with that bias (what the runtimes fuse);
 * a value read only by bias/scale nodes needing the same trailing 1s is
 * written in that shape, so an imported [C,1,1] bias goes back as it came. */
static eg_status plan_channels(octx *c) {
    const eg_graph *g = c->g;
    int *reads = calloc((size_t)g->n_tensors + 1, sizeof *reads);
    if (!reads) return EG_ENOMEM;
    for (int j = 0; j < g->n_nodes; j++) c->fuse[j] = -1;
    for (int i = 0; i < g->n_tensors; i++) c->vtrail[i] = -1;
    plan_layernorms(c);
    for (int j = 0; g->opset >= 9 && j < g->n_nodes; j++) /* scale + bias: BatchNormalization */
        if (c->fuse[j] < 0 && bn_pair(c, j) && c->fuse[g->tensor[g->node[j].in[0]].producer] < 0)
            c->fuse[j] = g->tensor[g->node[j].in[0]].producer, c->fuse[c->fuse[j]] = j;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *b = &g->node[j];
        if (b->kind != EG_KIND_OPS || ops_table[b->op].form != OPS_FORM_CHANNEL) continue;
        int t = b->in[0], p = g->tensor[t].producer, trail = g->tensor[t].shape.rank - 1 - b->param[0];
        if (c->fuse[j] >= 0) trail = 0; /* a BatchNormalization's [C] */
        if (b->op == OP_BIAS && b->param[0] == 1 && p >= 0 && c->fuse[p] < 0 && c->fuse[j] < 0 &&
            g->node[p].kind == EG_KIND_OPS && g->node[p].op == OP_CONV2D &&
            g->node[p].param[2] == OPS_ACT_NONE && c->uses[t] == 1 &&
            !(g->tensor[t].flags & EG_TF_OUTPUT) && b->in[1] != t)
            c->fuse[p] = j, c->fuse[j] = p, trail = 0;
        int v = b->in[1];
        if (g->opset < 7) trail = 0; /* emit_channel's legacy form reads [d] */
        if (c->vtrail[v] == -1) c->vtrail[v] = (signed char)trail;
        else if (c->vtrail[v] != trail) c->vtrail[v] = -2;
        reads[v]++;
    }
    for (int i = 0; i < g->n_tensors; i++) {
        const eg_tensor *t = &g->tensor[i];
        if (c->vtrail[i] <= 0 || reads[i] != c->uses[i] || !t->data || !(t->flags & EG_TF_INIT) ||
            (t->flags & (EG_TF_INPUT | EG_TF_OUTPUT)) || t->shape.rank != 1)
            c->vtrail[i] = 0;
    }
    free(reads);
    return EG_OK;
}

/* A concat whose output only one concat along the same axis reads (the
 * importer's chain for an n-input Concat, or what rules made) is written
 * inside that one: fuse[inner] = outer. Runs after plan_channels. */
static void plan_concats(octx *c) {
    const eg_graph *g = c->g;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *o = &g->node[j];
        if (o->kind != EG_KIND_OPS || o->op != OP_CONCAT) continue;
        for (int k = 0; k < 2; k++) {
            int t = o->in[k], p = t >= 0 ? g->tensor[t].producer : -1;
            if (p >= 0 && g->node[p].kind == EG_KIND_OPS && g->node[p].op == OP_CONCAT &&
                g->node[p].param[0] == o->param[0] && c->uses[t] == 1 && o->in[1 - k] != t &&
                !(g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED)))
                c->fuse[p] = j;
        }
    }
}

/* The single-use producer of t when it is an opspecs op, else -1. */
static int only_producer(const octx *c, int t, ops_op op) {
    const eg_graph *g = c->g;
    int p = t >= 0 ? g->tensor[t].producer : -1;
    if (p < 0 || g->node[p].kind != EG_KIND_OPS || g->node[p].op != op || c->uses[t] != 1 ||
        (g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED)) || c->fuse[p] >= 0)
        return -1;
    return p;
}

/* A bias on the columns of a matmul's only output is written with it as
 * one Gemm (the importer's form of a Gemm, lower.c), the matmul's right
 * operand read through a transpose as transB: fuse[bias] = matmul,
 * fuse[matmul] = bias, fuse[transpose] = bias. Runs after plan_channels. */
static void plan_gemms(octx *c) {
    const eg_graph *g = c->g;
    for (int j = 0; g->opset >= 7 && j < g->n_nodes; j++) {
        const eg_node *b = &g->node[j];
        if (b->kind != EG_KIND_OPS || b->op != OP_BIAS || b->param[0] != 1 || c->fuse[j] >= 0 ||
            b->in[0] < 0 || g->tensor[b->in[0]].shape.rank != 2)
            continue;
        int m = only_producer(c, b->in[0], OP_MATMUL);
        if (m < 0 || g->node[m].in[1] == b->in[1]) continue;
        c->fuse[j] = m, c->fuse[m] = j;
        int t = only_producer(c, g->node[m].in[1], OP_TRANSPOSE);
        if (t >= 0) c->fuse[t] = j;
    }
}

/* Attention's heads, [1,m,k] -> [1,m,h,d] read by one permute that keeps
 * the unit axis first ([1,h,m,d], or [1,h,d,m] for the keys), are written
 * as [m,1,h,d] and the permute's perm adjusted to match: the same values
 * in the same memory order, but now the permute moves the leading axis
 * behind the batch axes, the form onnxruntime folds into the batched
 * MatMul reading it (FusedMatMul transBatchA/transBatchB), so no copy is
 * made. With a batch of 1 the two spellings are equal. */
static void plan_batch_transposes(octx *c) {
    const eg_graph *g = c->g;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        if (n->kind != EG_KIND_OPS || n->op != OP_PERMUTE || OPS_PERM_RANK(n->param[0]) != 4 ||
            OPS_PERM_AT(n->param[0], 0) != 0)
            continue;
        int t = n->in[0], p = g->tensor[t].producer;
        const eg_shape *s = &g->tensor[t].shape;
        if (p >= 0 && g->node[p].kind == EG_KIND_OPS && g->node[p].op == OP_HEADS && c->uses[t] == 1 &&
            !(g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED)) && s->rank == 4 && s->dim[0] == 1)
            c->unit_moved[t] = 1;
    }
}

static int inner_concat(const octx *c, int t) {
    int p = t >= 0 ? c->g->tensor[t].producer : -1;
    return p >= 0 && c->g->node[p].kind == EG_KIND_OPS && c->g->node[p].op == OP_CONCAT &&
           c->fuse[p] >= 0;
}

/* Grow a malloc'd array of n elements of size sz to hold one more. */
static int grow(void **a, int n, int *cap, size_t sz) {
    if (n < *cap) return 1;
    void *b = realloc(*a, sz * (size_t)(*cap * 2));
    if (!b) return 0;
    *a = b, *cap *= 2;
    return 1;
}

/* Node j's concat chain as one Concat of its leaves, in order (a
 * depth-first walk with an explicit stack: a chain may be long). */
static eg_status emit_concat(octx *c, int j) {
    const eg_node *n = &c->g->node[j];
    if (c->fuse[j] >= 0) return EG_OK; /* written inside its outer concat */
    int n_leaves = 0, cap = 8, sp = 0, scap = 8;
    const char **names = malloc(sizeof *names * (size_t)cap);
    int *stack = malloc(sizeof *stack * (size_t)scap);
    eg_status rc = names && stack ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) stack[sp++] = n->in[1], stack[sp++] = n->in[0];
    while (rc == EG_OK && sp > 0) {
        int t = stack[--sp];
        if (inner_concat(c, t)) {
            const eg_node *p = &c->g->node[c->g->tensor[t].producer];
            if (!grow((void **)&stack, sp + 1, &scap, sizeof *stack)) rc = EG_ENOMEM;
            else stack[sp++] = p->in[1], stack[sp++] = p->in[0];
        } else if (!grow((void **)&names, n_leaves, &cap, sizeof *names)) {
            rc = EG_ENOMEM;
        } else {
            names[n_leaves++] = tname(c, t);
        }
    }
    nbuild b;
    if (rc == EG_OK && (rc = nb_init(&b, "Concat", n_leaves, 1)) == EG_OK) {
        for (int k = 0; k < n_leaves; k++) nb_in(&b, names[k]);
        nb_out(&b, tname(c, n->out[0]));
        nb_int(&b, "axis", n->param[0]);
        rc = nb_emit(c, &b, n->name);
        nb_free(&b);
    }
    free(names), free(stack);
    return rc;
}

static eg_status emit_ops(octx *c, int j) {
    const eg_node *n = &c->g->node[j];
    const ops_info *o = &ops_table[n->op];
    switch (o->form) {
    case OPS_FORM_MAP: return emit_map(c, n);
    case OPS_FORM_MATMUL:
        if (c->fuse[j] >= 0) return EG_OK; /* inside the Gemm its bias writes */
        return emit_plain(c, n, o->onnx, NULL, 0);
    case OPS_FORM_BMM:
    case OPS_FORM_LINEAR:
    case OPS_FORM_ZIP:
    case OPS_FORM_SCALE: return emit_plain(c, n, o->onnx, NULL, 0);
    case OPS_FORM_CHANNEL: return emit_channel(c, j);
    case OPS_FORM_CONV: return emit_conv2d(c, n, c->fuse[j] >= 0 ? &c->g->node[c->fuse[j]] : NULL);
    case OPS_FORM_POOL: return emit_pool(c, n);
    case OPS_FORM_CONCAT: return emit_concat(c, j);
    case OPS_FORM_ROW:
        return n->op == OP_LAYERNORM ? emit_layernorm(c, j) : emit_softmax(c, n);
    case OPS_FORM_SPLIT:
        if (c->partner[j] < 0) return emit_slice(c, n);
        if (c->partner[j] < j) return EG_OK; /* written with its partner */
        return n->op == OP_SPLIT0 ? emit_split_pair(c, n, &c->g->node[c->partner[j]])
                                  : emit_split_pair(c, &c->g->node[c->partner[j]], n);
    case OPS_FORM_TRANSPOSE:
        if (c->fuse[j] >= 0) return EG_OK; /* a Gemm's transB */
        return emit_transpose(c, n);
    case OPS_FORM_PERMUTE: return emit_transpose(c, n);
    case OPS_FORM_HEADS: return emit_reshape(c, n);
    case OPS_FORM_ENLARGE: return emit_enlarge(c, n);
    case OPS_FORM_IMM:
    case OPS_FORM_CKERNEL:
    case OPS_FORM_ONES: return emit_constant(c, n);
    case OPS_FORM_KMUL: return emit_kmul(c, n);
    case OPS_FORM_COUNT: break;
    }
    return fail(c, EG_EFORMAT, "node '%s': unknown opspecs operator %d", n->name, (int)n->op);
}

/* Pair each split1 with a split0 of the same input and parameters. */
static void pair_splits(const eg_graph *g, int *partner) {
    for (int j = 0; j < g->n_nodes; j++) partner[j] = -1;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *a = &g->node[j];
        if (a->kind != EG_KIND_OPS || a->op != OP_SPLIT1) continue;
        for (int i = 0; i < g->n_nodes; i++) {
            const eg_node *b = &g->node[i];
            if (b->kind == EG_KIND_OPS && b->op == OP_SPLIT0 && partner[i] < 0 &&
                b->in[0] == a->in[0] && b->param[0] == a->param[0] && b->param[1] == a->param[1]) {
                partner[i] = j, partner[j] = i;
                break;
            }
        }
    }
}

/* ================= model operators ================= */

static void model_window(nbuild *b, const eg_attrs *a) {
    int64_t k[2] = {a->kernel[0], a->kernel[1]}, s[2] = {a->stride[0], a->stride[1]};
    int64_t p[4] = {a->pad[0], a->pad[1], a->pad[2], a->pad[3]};
    if (k[0] > 0) nb_ints(b, "kernel_shape", k, 2);
    nb_ints(b, "strides", s, 2);
    if (a->flags & EG_AF_AUTO_UPPER) nb_str(b, "auto_pad", "SAME_UPPER");
    else if (a->flags & EG_AF_AUTO_LOWER) nb_str(b, "auto_pad", "SAME_LOWER");
    else nb_ints(b, "pads", p, 4);
}

/* Split: sizes as the opset expects them (attribute before 13, input
 * after; num_outputs from 18 when there are no sizes). */
static eg_status split_attrs(octx *c, const eg_node *n, nbuild *b) {
    const eg_attrs *a = &n->attr;
    nb_int(b, "axis", a->axis);
    if ((a->flags & EG_AF_INTS) && c->g->opset < 13) nb_ints(b, "split", a->ints, a->n_ints);
    else if ((a->flags & EG_AF_INTS) && b->np.n_input == 1) {
        if (!nb_in_owned(b, put_ints(c, tname(c, n->out[0]), "split", a->ints, a->n_ints)))
            return EG_ENOMEM;
    } else if (c->g->opset >= 18 && b->np.n_input == 1)
        nb_int(b, "num_outputs", n->n_out);
    return EG_OK;
}

static int same_shape(const eg_shape *a, const eg_shape *b) {
    return a->rank == b->rank && !memcmp(a->dim, b->dim, sizeof(int64_t) * (size_t)(a->rank > 0 ? a->rank : 0));
}

/* Reshape: the target an input from opset 5, the attribute "shape" before
 * (Reshape-1), whichever form the node holds it in. */
static eg_status reshape_attrs(octx *c, const eg_node *n, nbuild *b) {
    const eg_attrs *a = &n->attr;
    int64_t t[EG_MAX_RANK];
    int k = a->flags & EG_AF_INTS ? a->n_ints : -1;
    if (k >= 0) memcpy(t, a->ints, sizeof(int64_t) * (size_t)k);
    else if (c->g->opset < 5 && (k = eg_const_ints(&c->g->tensor[n->in[1]], t, EG_MAX_RANK)) < 0)
        return fail(c, EG_EFORMAT, "node '%s' (Reshape): opset %d needs a constant target shape",
                    n->name, c->g->opset);
    if (c->g->opset < 5) {
        b->np.n_input = 1;
        nb_ints(b, "shape", t, k);
    } else if (a->flags & EG_AF_INTS) {
        if (!nb_in_owned(b, put_ints(c, tname(c, n->out[0]), "shape", t, k))) return EG_ENOMEM;
    }
    if (a->flags & EG_AF_ALLOWZERO) nb_int(b, "allowzero", 1);
    return EG_OK;
}

static eg_status model_attrs(octx *c, const eg_node *n, nbuild *b) {
    const eg_attrs *a = &n->attr;
    switch (n->mop) {
    case EG_MOP_CONV: model_window(b, a); nb_int(b, "group", a->group); break;
    case EG_MOP_MAXPOOL: model_window(b, a); break;
    case EG_MOP_AVGPOOL: /* count_include_pad exists from opset 7 */
        model_window(b, a);
        if (c->g->opset >= 7) nb_int(b, "count_include_pad", (a->flags & EG_AF_COUNT_PAD) != 0);
        break;
    case EG_MOP_GEMM:
        nb_float(b, "alpha", a->alpha), nb_float(b, "beta", a->beta);
        nb_int(b, "transA", (a->flags & EG_AF_TRANS_A) != 0);
        nb_int(b, "transB", (a->flags & EG_AF_TRANS_B) != 0);
        if (c->g->opset < 7 && n->n_in > 2 && n->in[2] >= 0 &&
            !same_shape(&c->g->tensor[n->in[2]].shape, &c->g->tensor[n->out[0]].shape))
            nb_int(b, "broadcast", 1); /* a C other than [M, N] (numpy-equal: infer.c) */
        break;
    case EG_MOP_CONCAT:
    case EG_MOP_FLATTEN:
    case EG_MOP_SOFTMAX: nb_int(b, "axis", a->axis); break;
    case EG_MOP_LAYERNORM: nb_int(b, "axis", a->axis), nb_float(b, "epsilon", a->epsilon); break;
    case EG_MOP_SPLIT: return split_attrs(c, n, b);
    case EG_MOP_TRANSPOSE:
        if (a->flags & EG_AF_INTS) nb_ints(b, "perm", a->ints, a->n_ints);
        break;
    case EG_MOP_RESHAPE: return reshape_attrs(c, n, b);
    case EG_MOP_BATCHNORM:
        nb_float(b, "epsilon", a->epsilon);
        if (c->g->opset < 7) nb_int(b, "is_test", 1); /* opset 6 (1..5 are never lowered) */
        break;
    case EG_MOP_ADD:
    case EG_MOP_MUL:
    case EG_MOP_DIV: return c->g->opset < 7 ? legacy_broadcast(c, n, b) : EG_OK;
    case EG_MOP_GLOBALAVGPOOL:
    case EG_MOP_MATMUL:
    case EG_MOP_RELU:
    case EG_MOP_SIGMOID:
    case EG_MOP_TANH:
    case EG_MOP_IDENTITY:
    case EG_MOP_SUM: /* lowered on import; written as is when met */
    case EG_MOP_COUNT: break;
    }
    return EG_OK;
}

static eg_status emit_model(octx *c, int j) {
    const eg_node *n = &c->g->node[j];
    nbuild b;
    int n_in = n->n_in;
    while (n_in > 0 && n->in[n_in - 1] < 0) n_in--; /* trailing omitted inputs */
    eg_status rc = nb_init(&b, eg_mop_table[n->mop].onnx, n_in + 1, n->n_out);
    if (rc == EG_OK) {
        for (int k = 0; k < n_in; k++) nb_in(&b, tname(c, n->in[k]));
        for (int k = 0; k < n->n_out; k++) nb_out(&b, tname(c, n->out[k]));
        rc = model_attrs(c, n, &b);
    }
    if (rc == EG_OK) rc = nb_emit(c, &b, n->name);
    nb_free(&b);
    return rc;
}

/* ================= opaque nodes ================= */

static int same_names(const octx *c, char *const *names, size_t n, const int *ids, int n_ids) {
    if (n != (size_t)n_ids) return 0;
    for (size_t k = 0; k < n; k++)
        if (strcmp(names[k] ? names[k] : "", tname(c, ids[k])) != 0) return 0;
    return 1;
}

/* The original bytes, unless the IR renamed an input or output: then the
 * node is re-packed with the new names and everything else as it was. */
static eg_status emit_opaque(octx *c, int j) {
    const eg_node *n = &c->g->node[j];
    uint32_t field = field_id(&onnx__graph_proto__descriptor, "node");
    Onnx__NodeProto *np;
    egp_alloc a;
    char msg[EG_ERRLEN];
    egp_alloc_init(&a, n->proto_len * 8 + (64u << 20));
    if (egp_unpack(&onnx__node_proto__descriptor, &a, 1 << 16, n->proto, n->proto_len,
                   (ProtobufCMessage **)&np, msg, sizeof msg) != EG_OK)
        return fail(c, EG_EFORMAT, "node '%s': its stored bytes do not decode: %s", n->name, msg);
    eg_status rc = EG_OK;
    if (same_names(c, np->input, np->n_input, n->in, n->n_in) &&
        same_names(c, np->output, np->n_output, n->out, n->n_out)) {
        egp_buf_field(&c->nodes, field, n->proto, n->proto_len);
    } else {
        nbuild b;
        char **in = np->input, **out = np->output;
        size_t nin = np->n_input, nout = np->n_output;
        if ((rc = nb_init(&b, "", n->n_in, n->n_out)) == EG_OK) {
            for (int k = 0; k < n->n_in; k++) nb_in(&b, tname(c, n->in[k]));
            for (int k = 0; k < n->n_out; k++) nb_out(&b, tname(c, n->out[k]));
            np->input = b.in, np->n_input = b.np.n_input;
            np->output = b.out, np->n_output = b.np.n_output;
            egp_buf_message(&c->nodes, field, &np->base);
            np->input = in, np->n_input = nin, np->output = out, np->n_output = nout;
        }
        nb_free(&b);
    }
    protobuf_c_message_free_unpacked(&np->base, &a.pc);
    return rc != EG_OK ? rc : oom(c) ? EG_ENOMEM : EG_OK;
}

static eg_status emit_nodes(octx *c) {
    eg_status rc = EG_OK;
    for (int j = 0; j < c->g->n_nodes && rc == EG_OK; j++) {
        switch (c->g->node[j].kind) {
        case EG_KIND_OPS: rc = emit_ops(c, j); break;
        case EG_KIND_MODEL: rc = emit_model(c, j); break;
        case EG_KIND_OPAQUE: rc = emit_opaque(c, j); break;
        case EG_KIND_COUNT: rc = fail(c, EG_EFORMAT, "node %d has no kind", j); break;
        }
    }
    return rc;
}

/* ================= values, inputs, outputs, value_info ================= */

/* Whether a value is written: a value the importer absorbed, or a
 * Constant, that nothing reads any more is dropped. */
static int value_live(const octx *c, int i) {
    const eg_tensor *t = &c->g->tensor[i];
    if (!(t->flags & EG_TF_INIT) || (t->flags & EG_TF_SPARSE)) return 0;
    if (c->uses[i] || c->revived[i] || (t->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED)))
        return 1;
    return !(t->flags & (EG_TF_ABSORBED | EG_TF_CONST));
}

static eg_status emit_values(octx *c) {
    uint32_t field = field_id(&onnx__graph_proto__descriptor, "initializer");
    for (int i = 0; i < c->g->n_tensors; i++) {
        const eg_tensor *t = &c->g->tensor[i];
        eg_status rc = EG_OK;
        int added = !(t->flags & EG_TF_INPUT);
        if (!value_live(c, i)) continue;
        eg_shape ws = t->shape; /* a channel vector gets its trailing 1s */
        for (int k = 0; k < c->vtrail[i] && ws.rank < EG_MAX_RANK; k++) ws.dim[ws.rank++] = 1;
        if (t->data)
            rc = put_value(c, t->name, EG_DT_FLOAT, &ws, t->data,
                           sizeof(float) * (size_t)eg_shape_numel(&t->shape), added, i);
        else if (t->proto) {
            egp_buf_field(&c->inits, field, t->proto, t->proto_len);
            if (added) rc = note_added(c, t->name, t->dtype, &t->shape, i);
        } else if (t->raw)
            rc = put_value(c, t->name, t->dtype, &t->shape, t->raw, t->raw_len, added, i);
        if (rc != EG_OK) return rc;
    }
    return oom(c) ? EG_ENOMEM : EG_OK;
}

/* A ValueInfoProto for a tensor type with as much shape as is known. */
static void gen_vinfo(octx *c, uint32_t field, const char *name, int dtype, const eg_shape *s,
                      char *const *dim_name) {
    Onnx__ValueInfoProto vi;
    Onnx__TypeProto tp;
    Onnx__TypeProto__Tensor tt;
    Onnx__TensorShapeProto sp;
    Onnx__TensorShapeProto__Dimension d[EG_MAX_RANK], *dp[EG_MAX_RANK];
    onnx__value_info_proto__init(&vi);
    onnx__type_proto__init(&tp);
    onnx__type_proto__tensor__init(&tt);
    onnx__tensor_shape_proto__init(&sp);
    vi.name = (char *)name;
    vi.type = &tp;
    tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp.tensor_type = &tt;
    tt.has_elem_type = 1, tt.elem_type = dtype;
    if (s->rank >= 0) tt.shape = &sp;
    for (int i = 0; i < s->rank; i++) {
        onnx__tensor_shape_proto__dimension__init(&d[i]);
        dp[i] = &d[i];
        if (s->dim[i] >= 0)
            d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE, d[i].dim_value = s->dim[i];
        else if (dim_name && dim_name[i])
            d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM, d[i].dim_param = dim_name[i];
    }
    sp.n_dim = (size_t)(s->rank > 0 ? s->rank : 0), sp.dim = dp;
    egp_buf_message(&c->ios, field, &vi.base);
}

/* A graph input or output: its original entry, else a generated one. */
static void emit_io(octx *c, uint32_t field, const eg_tensor *t) {
    if (t->vinfo) egp_buf_field(&c->ios, field, t->vinfo, t->vinfo_len);
    else gen_vinfo(c, field, t->name, t->dtype, &t->shape, t->dim_name);
}

/* value_info for a node output: an opaque node's original entry; else
 * generated when dtype and shape are known; else the original, if any. */
static void emit_value_info(octx *c, uint32_t field, const eg_tensor *t) {
    int opaque = t->producer >= 0 && c->g->node[t->producer].kind == EG_KIND_OPAQUE;
    if (t->vinfo && (opaque || !t->dtype || !eg_shape_known(&t->shape)))
        egp_buf_field(&c->ios, field, t->vinfo, t->vinfo_len);
    else if (t->dtype && eg_shape_known(&t->shape)) {
        eg_shape s = written_shape(c, (int)(t - c->g->tensor));
        gen_vinfo(c, field, t->name, t->dtype, &s, NULL);
    }
}

/* The value_info of the Pad output emit_pool put in front of node j, so
 * that a re-import, which sees a real tensor there, exports the same. */
static void emit_pad_vinfo(octx *c, uint32_t field, int j) {
    const eg_node *n = &c->g->node[j];
    const eg_tensor *x = &c->g->tensor[n->in[0]];
    eg_shape s = x->shape;
    if (!x->dtype || !eg_shape_known(&s) || s.rank != 4) return;
    s.dim[2] += OPS_KERNEL_H(n->param[0]) - 1;
    s.dim[3] += OPS_KERNEL_W(n->param[0]) - 1;
    gen_vinfo(c, field, c->pad_name[j], x->dtype, &s, NULL);
}

static eg_status emit_ios(octx *c) {
    const eg_graph *g = c->g;
    uint32_t fin = field_id(&onnx__graph_proto__descriptor, "input");
    uint32_t fout = field_id(&onnx__graph_proto__descriptor, "output");
    uint32_t fvi = field_id(&onnx__graph_proto__descriptor, "value_info");
    for (int k = 0; k < g->n_inputs; k++) emit_io(c, fin, &g->tensor[g->input[k]]);
    /* IR < 4: every initializer is an input; a graph output's declaration
     * serves for it when there is one (one entry per tensor, as on import) */
    for (int k = 0; k < c->n_added; k++) {
        const new_value *v = &c->added[k];
        if (v->tensor >= 0 && g->tensor[v->tensor].vinfo) emit_io(c, fin, &g->tensor[v->tensor]);
        else gen_vinfo(c, fin, v->name, v->dtype, &v->shape, NULL);
    }
    for (int k = 0; k < g->n_outputs; k++) emit_io(c, fout, &g->tensor[g->output[k]]);
    /* in node order, which a re-import keeps (tensor ids it does not) */
    for (int j = 0; j < g->n_nodes; j++) {
        if (c->pad_name[j]) emit_pad_vinfo(c, fvi, j);
        if (g->node[j].kind == EG_KIND_OPS &&
            (g->node[j].op == OP_CONV2D || g->node[j].op == OP_CONCAT || g->node[j].op == OP_SCALE ||
             g->node[j].op == OP_MATMUL || g->node[j].op == OP_TRANSPOSE ||
             g->node[j].op == OP_LAYERNORM) &&
            c->fuse[j] >= 0)
            continue; /* its output is the fused bias's, inside a Concat or a BatchNormalization */
        for (int k = 0; k < g->node[j].n_out; k++) {
            int i = g->node[j].out[k];
            if (i >= 0 && !(g->tensor[i].flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_INIT)))
                emit_value_info(c, fvi, &g->tensor[i]);
        }
    }
    return oom(c) ? EG_ENOMEM : EG_OK;
}

/* ================= assembly ================= */

static eg_status octx_init(octx *c, const eg_graph *g, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->g = g, c->err = err, c->errlen = errlen;
    c->uses = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
    c->partner = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    c->fuse = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    c->vtrail = malloc((size_t)g->n_tensors + 1);
    c->revived = calloc((size_t)g->n_tensors + 1, 1);
    c->unit_moved = calloc((size_t)g->n_tensors + 1, 1);
    c->pad_name = calloc((size_t)g->n_nodes + 1, sizeof *c->pad_name);
    c->node_names = eg_names_new();
    c->new_names = eg_names_new();
    if (!c->uses || !c->partner || !c->fuse || !c->vtrail || !c->revived || !c->unit_moved || !c->pad_name ||
        !c->node_names || !c->new_names)
        return EG_ENOMEM;
    eg_count_uses(g, c->uses);
    pair_splits(g, c->partner);
    if (plan_channels(c) != EG_OK) return EG_ENOMEM;
    plan_concats(c);
    plan_gemms(c);
    plan_batch_transposes(c);
    /* opaque nodes keep their names, so the generated ones avoid them */
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].kind == EG_KIND_OPAQUE && g->node[j].name[0] &&
            eg_names_put(c->node_names, g->node[j].name, 0) == EG_ENOMEM)
            return EG_ENOMEM;
    return EG_OK;
}

static void octx_free(octx *c) {
    free(c->nodes.p), free(c->inits.p), free(c->ios.p), free(c->ext.p);
    free(c->uses), free(c->partner), free(c->fuse), free(c->vtrail), free(c->revived), free(c->unit_moved);
    for (int j = 0; c->pad_name && j < c->g->n_nodes; j++) free(c->pad_name[j]);
    free(c->pad_name);
    eg_names_free(c->node_names), eg_names_free(c->new_names);
    for (int k = 0; k < c->n_added; k++) free(c->added[k].name);
    free(c->added);
    for (int k = 0; k < c->n_ints; k++) free(c->ints[k].name);
    free(c->ints);
}

/* model shell + graph field (graph shell + nodes + values + ios), written
 * straight into one buffer: the graph's length is the sum of its parts. */
static eg_status assemble(octx *c, uint8_t **buf, size_t *len) {
    egp_buf mb = {0};
    size_t glen = c->g->graph_shell_len + c->nodes.len + c->inits.len + c->ios.len;
    egp_buf_put(&mb, c->g->model_shell, c->g->model_shell_len);
    egp_buf_varint(&mb, (uint64_t)field_id(&onnx__model_proto__descriptor, "graph") << 3 | 2);
    egp_buf_varint(&mb, glen);
    egp_buf_put(&mb, c->g->graph_shell, c->g->graph_shell_len);
    egp_buf_put(&mb, c->nodes.p, c->nodes.len);
    free(c->nodes.p), c->nodes.p = NULL;
    egp_buf_put(&mb, c->inits.p, c->inits.len);
    free(c->inits.p), c->inits.p = NULL;
    egp_buf_put(&mb, c->ios.p, c->ios.len);
    if (mb.oom) {
        free(mb.p);
        return EG_ENOMEM;
    }
    *buf = mb.p;
    *len = mb.len;
    return EG_OK;
}

/* The model into *buf; with ext_loc, its large values into *ext (see
 * octx.ext_loc). */
static eg_status save_model(const eg_graph *g, const char *ext_loc, uint8_t **buf, size_t *len, egp_buf *ext,
                            char *err, size_t errlen) {
    octx c;
    *buf = NULL, *len = 0;
    if (!g->model_shell) {
        snprintf(err, errlen, "the graph has no model shell (not loaded from ONNX)");
        return EG_EFORMAT;
    }
    eg_status rc = octx_init(&c, g, err, errlen);
    c.ext_loc = ext_loc;
    if (rc == EG_OK) rc = emit_nodes(&c);
    if (rc == EG_OK) rc = emit_values(&c);
    if (rc == EG_OK) rc = emit_ios(&c);
    if (rc == EG_OK) rc = assemble(&c, buf, len);
    if (rc == EG_ENOMEM) snprintf(err, errlen, "out of memory writing the model");
    if (rc == EG_OK && ext) *ext = c.ext, c.ext = (egp_buf){0};
    octx_free(&c);
    return rc;
}

eg_status eg_save_mem(const eg_graph *g, uint8_t **buf, size_t *len, char *err, size_t errlen) {
    return save_model(g, NULL, buf, len, NULL, err, errlen);
}

eg_status eg_save(const char *path, const eg_graph *g, char *err, size_t errlen) {
    uint8_t *buf;
    size_t len, n = strlen(path) + 8;
    char msg[EG_ERRLEN];
    egp_buf ext = {0};
    char *data_path = g->external ? malloc(n) : NULL;
    if (g->external && !data_path) {
        snprintf(err, errlen, "%s: out of memory", path);
        return EG_ENOMEM;
    }
    const char *base = strrchr(path, '/');
    if (data_path) snprintf(data_path, n, "%s.data", path);
    /* the model names its data file relative to itself: PATH's name + .data */
    eg_status rc = save_model(g, data_path ? data_path + (base ? base + 1 - path : 0) : NULL, &buf, &len,
                              &ext, msg, sizeof msg);
    if (rc != EG_OK) {
        snprintf(err, errlen, "%s: %s", path, msg);
        free(data_path);
        return rc;
    }
    if (data_path) rc = egp_write_file(data_path, ext.p ? ext.p : (uint8_t *)"", ext.len, err, errlen);
    if (rc == EG_OK) rc = egp_write_file(path, buf, len, err, errlen);
    free(buf), free(ext.p), free(data_path);
    return rc;
}

void eg_remove_saved(const char *path, const eg_graph *g) {
    size_t n = strlen(path) + 8;
    char *data = g->external ? malloc(n) : NULL;
    remove(path);
    if (data) {
        snprintf(data, n, "%s.data", path);
        remove(data);
    }
    free(data);
}
