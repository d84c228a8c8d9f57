/* onnx_in.c - ONNX import: a ModelProto (decoded by protobuf-c under the
 * limits of onnx_pb.c) becomes an eg_graph. Order of work: opset and
 * shells, graph inputs, initializers, nodes (Constant nodes become values,
 * known ops model operators, the rest opaque), inputs resolved by name,
 * value_info, structure and topological order, shape inference (a model
 * node that turns out to be outside what its model op covers is kept
 * opaque) in one pass with cfold.c's shape rules for opaque nodes and
 * constant folding, lowering to opspecs operators.
 *
 * The top-level graph must keep the structural rules onnx.checker checks
 * (check_model, full_check=False), or the model is refused with EG_EGRAPH
 * and a message naming the node (its index in graph.node, name and op)
 * and the tensor: every name defined once (graph inputs, initializers,
 * node outputs; an initializer may share a graph input's name, and below
 * IR version 4 it must), every node input ("" is an omitted optional
 * input) and graph output defined, no cycle. Nodes out of order are
 * sorted, not refused. Inside an opaque node's subgraphs only a name
 * defined in no scope at all is refused; the rest is passed through. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shapes/cfold.h"
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

#define ATTR_MAX (1 << 20)         /* kernel, stride, pad values */

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

IN_PRINTF(3, 4)
static eg_status fail(const ictx *c, eg_status rc, const char *fmt, ...) {
    if (!c->err || !c->errlen) return rc;
    int k = snprintf(c->err, c->errlen, "%s: ", c->name);
    if (k > 0 && (size_t)k < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static const char *str(const char *s) { return s ? s : ""; }

#define NREF_LEN 160

/* How messages name node i of the file: "node 3 'conv1' (Conv)", or
 * "node 3 (com.example:Foo)" when it has no name; 3 is its index in
 * graph.node. @return buf. */
static const char *node_ref(const Onnx__NodeProto *np, size_t i, char *buf, size_t len) {
    const char *name = np->name ? np->name : "", *dom = eg_default_domain(np->domain) ? "" : np->domain;
    snprintf(buf, len, "node %zu%s%.64s%s (%.40s%s%.40s)", i, name[0] ? " '" : "", name,
             name[0] ? "'" : "", dom, dom[0] ? ":" : "", np->op_type ? np->op_type : "");
    return buf;
}

/* ================= model header ================= */

/* The IR version and the default-domain opset. Any opset is read: one
 * past EG_OPSET_MAX (or no default-domain opset at all, which a valid
 * model has only when it uses no default-domain operator) leaves every
 * node opaque (classify); below IR 3 a model without one is opset 1. */
static eg_status check_versions(ictx *c) {
    const Onnx__ModelProto *m = c->m;
    int opset = -1;
    if (!m->has_ir_version || m->ir_version < 1 || m->ir_version > EG_IR_MAX)
        return fail(c, EG_EOPSET, "IR version %lld is not supported (1..%d)",
                    (long long)m->ir_version, EG_IR_MAX);
    for (size_t i = 0; i < m->n_opset_import && opset < 0; i++) {
        const Onnx__OperatorSetIdProto *os = m->opset_import[i];
        if (!eg_default_domain(os->domain)) continue;
        opset = !os->has_version || os->version < 0 ? 0 : os->version > 1000 ? 1000 : (int)os->version;
    }
    if (opset < 0) opset = m->ir_version < 3 && !m->n_opset_import ? 1 : 0;
    if (!m->graph) return fail(c, EG_EFORMAT, "the model has no graph");
    c->g->opset = opset;
    c->g->ir_version = m->ir_version;
    return EG_OK;
}

static char *join2(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s%s", a, a[0] && b[0] ? " " : "", b);
    return s;
}

/* The model without its graph, and the graph without the parts the writer
 * regenerates: everything else (metadata, functions, sparse initializers,
 * quantization annotations, fields newer than our onnx.proto) is re-emitted
 * from these bytes. */
static eg_status make_shells(ictx *c) {
    Onnx__GraphProto *gp = c->gp, saved = *gp;
    eg_status rc;
    c->m->graph = NULL;
    rc = egp_pack(&c->m->base, &c->g->model_shell, &c->g->model_shell_len);
    c->m->graph = gp;
    gp->n_node = gp->n_initializer = gp->n_input = gp->n_output = gp->n_value_info = 0;
    if (rc == EG_OK) rc = egp_pack(&gp->base, &c->g->graph_shell, &c->g->graph_shell_len);
    *gp = saved;
    c->g->producer = join2(str(c->m->producer_name), str(c->m->producer_version));
    c->g->graph_name = strdup(str(gp->name));
    if (rc == EG_OK && (!c->g->producer || !c->g->graph_name)) rc = EG_ENOMEM;
    return rc == EG_OK ? EG_OK : fail(c, rc, "out of memory");
}

/* ================= types and values ================= */

static eg_status set_dim_name(eg_tensor *t, int i, const char *name) {
    if (!t->dim_name) {
        t->dim_name = calloc(EG_MAX_RANK, sizeof *t->dim_name);
        if (!t->dim_name) return EG_ENOMEM;
    }
    free(t->dim_name[i]);
    t->dim_name[i] = strdup(name);
    return t->dim_name[i] ? EG_OK : EG_ENOMEM;
}

/* dtype and shape from a TypeProto (tensor types only); symbolic dims keep
 * their names. */
static eg_status read_type(const Onnx__TypeProto *tp, eg_tensor *t) {
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) return EG_OK;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type) t->dtype = tt->elem_type;
    if (!tt->shape || tt->shape->n_dim > EG_MAX_RANK) return EG_OK;
    t->shape.rank = (int)tt->shape->n_dim;
    for (int i = 0; i < t->shape.rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        t->shape.dim[i] = -1;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value >= 0 && d->dim_value <= EG_DIM_MAX)
            t->shape.dim[i] = d->dim_value;
        else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                 d->dim_param && d->dim_param[0] && set_dim_name(t, i, d->dim_param))
            return EG_ENOMEM;
    }
    return EG_OK;
}

/* Shape of a TensorProto; rejects what a value cannot have. */
static eg_status value_shape(const ictx *c, const Onnx__TensorProto *tp, const char *what,
                             eg_tensor *t, int64_t *numel) {
    if (tp->segment) return fail(c, EG_EUNSUPPORTED, "%s '%s' is segmented", what, t->name);
    if (!tp->has_data_type || tp->data_type == EG_DT_UNDEFINED)
        return fail(c, EG_EFORMAT, "%s '%s' has no data type", what, t->name);
    if (tp->n_dims > EG_MAX_RANK)
        return fail(c, EG_EUNSUPPORTED, "%s '%s' has rank %zu (at most %d)", what, t->name,
                    tp->n_dims, EG_MAX_RANK);
    t->dtype = tp->data_type;
    t->shape.rank = (int)tp->n_dims;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0 || tp->dims[i] > EG_DIM_MAX)
            return fail(c, EG_EFORMAT, "%s '%s' has dim %lld", what, t->name, (long long)tp->dims[i]);
        t->shape.dim[i] = tp->dims[i];
    }
    *numel = eg_shape_numel(&t->shape);
    if (*numel < 0 || (uint64_t)*numel > SIZE_MAX / 16)
        return fail(c, EG_EFORMAT, "%s '%s' has too many elements", what, t->name);
    return EG_OK;
}

static void put_le(uint8_t *dst, uint64_t v, size_t size) {
    for (size_t b = 0; b < size; b++) dst[b] = (uint8_t)(v >> (8 * b));
}

/* The typed field holding a dtype's values: count and element reader. */
static size_t typed_count(const Onnx__TensorProto *tp, int dtype) {
    switch (dtype) {
    case EG_DT_FLOAT: return tp->n_float_data;
    case EG_DT_INT64: return tp->n_int64_data;
    case EG_DT_DOUBLE: return tp->n_double_data;
    case EG_DT_UINT32: case EG_DT_UINT64: return tp->n_uint64_data;
    default: return tp->n_int32_data;
    }
}

static uint64_t typed_bits(const Onnx__TensorProto *tp, int dtype, size_t i) {
    uint64_t v;
    switch (dtype) {
    case EG_DT_INT64: return (uint64_t)tp->int64_data[i];
    case EG_DT_DOUBLE: memcpy(&v, &tp->double_data[i], 8); return v;
    case EG_DT_UINT32: case EG_DT_UINT64: return tp->uint64_data[i];
    default: return (uint64_t)(uint32_t)tp->int32_data[i];
    }
}

/* Where a value's elements are: 1 raw_data, 2 float_data, 3 the other
 * typed fields, 0 nowhere that matches the shape (checked before anything
 * is allocated by the shape, which a hostile file may make huge). */
static int value_source(const Onnx__TensorProto *tp, int dtype, int64_t numel, size_t bytes) {
    if (tp->has_raw_data && (tp->raw_data.len || !typed_count(tp, dtype)))
        return tp->raw_data.len == bytes ? 1 : 0;
    if (dtype == EG_DT_FLOAT) return tp->n_float_data == (size_t)numel ? 2 : 0;
    return typed_count(tp, dtype) == (size_t)numel ? 3 : 0;
}

/* Copy a value's elements: floats into t->data, other fixed-width types
 * into t->raw (little-endian). */
static eg_status value_data(const ictx *c, const Onnx__TensorProto *tp, const char *what,
                            eg_tensor *t, int64_t numel) {
    size_t size = eg_dtype_size(t->dtype), bytes = (size_t)numel * size;
    int src = value_source(tp, t->dtype, numel, bytes);
    if (src == 0 && tp->has_raw_data && tp->raw_data.len)
        return fail(c, EG_EFORMAT, "%s '%s': raw_data has %zu bytes, its shape needs %zu", what,
                    t->name, tp->raw_data.len, bytes);
    if (src == 0)
        return fail(c, EG_EFORMAT, "%s '%s': %zu values stored, its shape needs %lld", what,
                    t->name, typed_count(tp, t->dtype), (long long)numel);
    uint8_t *dst = malloc(bytes ? bytes : 1);
    if (!dst) return fail(c, EG_ENOMEM, "out of memory for %s '%s'", what, t->name);
    if (src == 1 && bytes) memcpy(dst, tp->raw_data.data, bytes);
    if (src == 2 && bytes) memcpy(dst, tp->float_data, bytes);
    for (size_t i = 0; src == 3 && i < (size_t)numel; i++)
        put_le(dst + i * size, typed_bits(tp, t->dtype, i), size);
    if (t->dtype == EG_DT_FLOAT) t->data = (float *)(void *)dst;
    else t->raw = dst, t->raw_len = bytes;
    return EG_OK;
}

/* ================= external data ================= */

static int is_external(const Onnx__TensorProto *tp) {
    return (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
           tp->n_external_data;
}

/* The value of an external_data key, or NULL. */
static const char *ext_value(const Onnx__TensorProto *tp, const char *key) {
    for (size_t i = 0; i < tp->n_external_data; i++)
        if (tp->external_data[i]->key && strcmp(tp->external_data[i]->key, key) == 0)
            return str(tp->external_data[i]->value);
    return NULL;
}

/* A decimal byte count or offset (under 2^62): 0, or -1 when it is none. */
static int parse_count(const char *s, uint64_t *v) {
    *v = 0;
    if (!s || !*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || *v > (((uint64_t)1 << 62) - 10) / 10) return -1;
        *v = *v * 10 + (uint64_t)(*s - '0');
    }
    return 0;
}

/* A location the reader follows: relative and never above the model's
 * directory (no ".." part), as onnx's own loader requires, so a file cannot
 * make the engine read what lies elsewhere on the machine. */
static int safe_location(const char *loc) {
    if (!loc[0] || loc[0] == '/' || strchr(loc, '\\')) return 0;
    for (const char *p = loc; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return 0;
        p += n + (e != NULL);
    }
    return 1;
}

/* An initializer's bytes from the file its external_data names (location,
 * offset, length; relative to the model file's directory) into *data, its
 * shape needing `bytes`. */
static eg_status read_external(const ictx *c, const Onnx__TensorProto *tp, const eg_tensor *t, size_t bytes,
                               uint8_t **data) {
    const char *loc = ext_value(tp, "location"), *off = ext_value(tp, "offset"), *len = ext_value(tp, "length");
    uint64_t offset = 0, length = bytes;
    char msg[EG_ERRLEN];
    if (!c->o->model_path)
        return fail(c, EG_EUNSUPPORTED, "initializer '%s' keeps its data in an external file (%s), and the model was "
                    "read from memory: load it from its file, or with onnx.load (which reads the data in)",
                    t->name, loc ? loc : "?");
    if (!loc || !safe_location(loc))
        return fail(c, EG_EFORMAT, "initializer '%s': external data location '%s' is not a relative path inside "
                    "the model's directory", t->name, loc ? loc : "");
    if ((off && parse_count(off, &offset)) || (len && parse_count(len, &length)))
        return fail(c, EG_EFORMAT, "initializer '%s': external data offset '%s' or length '%s' is no byte count",
                    t->name, off ? off : "", len ? len : "");
    if (length != bytes)
        return fail(c, EG_EFORMAT, "initializer '%s': external data has %llu bytes, its shape needs %zu", t->name,
                    (unsigned long long)length, bytes);
    const char *slash = strrchr(c->o->model_path, '/');
    size_t dir = slash ? (size_t)(slash - c->o->model_path) + 1 : 0, n = dir + strlen(loc) + 1;
    char *path = malloc(n);
    if (!path) return fail(c, EG_ENOMEM, "out of memory");
    memcpy(path, c->o->model_path, dir);
    strcpy(path + dir, loc);
    eg_status rc = egp_read_range(path, offset, length, data, msg, sizeof msg);
    free(path);
    return rc == EG_OK ? EG_OK : fail(c, rc, "initializer '%s': external data: %s", t->name, msg);
}

/* Load a TensorProto as t's value. Non-float graph initializers (is_init)
 * also keep their bytes for export; types with no fixed width keep only
 * them. An initializer's external data is read in: the value, and the
 * bytes kept, are as if the file held it inline (and g->external says the
 * export writes such values to a file of its own). */
static eg_status load_value(const ictx *c, const Onnx__TensorProto *tp, const char *what,
                            eg_tensor *t, int is_init) {
    int64_t numel = 0;
    Onnx__TensorProto inline_tp;
    uint8_t *ext = NULL;
    eg_status rc = value_shape(c, tp, what, t, &numel);
    if (rc != EG_OK) return rc;
    if (is_external(tp)) {
        size_t size = eg_dtype_size(t->dtype);
        if (!is_init || !size)
            return fail(c, EG_EUNSUPPORTED, "%s '%s' keeps its data in an external file (%s): read for "
                        "initializers of fixed-width types only", what, t->name, str(ext_value(tp, "location")));
        if ((uint64_t)numel > (uint64_t)SIZE_MAX / size)
            return fail(c, EG_ELIMIT, "%s '%s' is too large", what, t->name);
        if ((rc = read_external(c, tp, t, (size_t)numel * size, &ext)) != EG_OK) return rc;
        inline_tp = *tp; /* the same message, its bytes inline */
        inline_tp.has_data_location = 0, inline_tp.data_location = 0;
        inline_tp.n_external_data = 0, inline_tp.external_data = NULL;
        inline_tp.has_raw_data = 1, inline_tp.raw_data.len = (size_t)numel * size, inline_tp.raw_data.data = ext;
        tp = &inline_tp;
        c->g->external = 1;
    }
    t->flags |= EG_TF_INIT;
    if (eg_dtype_size(t->dtype)) rc = value_data(c, tp, what, t, numel);
    if (rc == EG_OK && is_init && t->dtype != EG_DT_FLOAT &&
        egp_pack(&tp->base, &t->proto, &t->proto_len) != EG_OK)
        rc = fail(c, EG_ENOMEM, "out of memory");
    free(ext);
    return rc;
}

/* ================= graph inputs, initializers ================= */

static int shapes_conflict(const eg_shape *a, const eg_shape *b);

/* 1 when pin names axis `axis` of the graph input `input`: "INPUT:AXIS",
 * the way --dim reaches an axis the file gives neither size nor name. */
static int names_axis(const char *pin, const char *input, size_t axis) {
    size_t n = strlen(input), a = 0;
    const char *p = pin + n + 1;
    if (strncmp(pin, input, n) || pin[n] != ':' || !*p) return 0;
    for (; *p >= '0' && *p <= '9' && a <= EG_MAX_RANK; p++) a = 10 * a + (size_t)(*p - '0');
    return !*p && a == axis;
}

/* The load options' pin for axis `axis` (dim d) of value vi, or -1: a
 * symbolic dim by its name, or, of a graph input (input), any axis
 * without a size by "INPUT:AXIS". */
static int pinned_dim(const ictx *c, const Onnx__ValueInfoProto *vi, int input, size_t axis,
                      const Onnx__TensorShapeProto__Dimension *d) {
    int symbolic = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param;
    for (int k = 0; symbolic && k < c->o->n_dims; k++)
        if (c->o->dims[k].name && !strcmp(c->o->dims[k].name, d->dim_param)) return k;
    if (!input || d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) return -1;
    for (int k = 0; k < c->o->n_dims; k++)
        if (c->o->dims[k].name && names_axis(c->o->dims[k].name, vi->name, axis)) return k;
    return -1;
}

/* vi, with each dim the load options pin (--dim) given its size: *copy is
 * NULL when vi has none, else a copy so changed (free it with
 * onnx__value_info_proto__free_unpacked). input: vi declares a graph
 * input. @return EG_OK or EG_ENOMEM. */
static eg_status pin_dims(const ictx *c, const Onnx__ValueInfoProto *vi, int input, Onnx__ValueInfoProto **copy) {
    *copy = NULL;
    const Onnx__TypeProto *tp = vi->type;
    if (!c->o || !c->o->n_dims || !tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !tp->tensor_type || !tp->tensor_type->shape)
        return EG_OK;
    int any = 0;
    for (size_t i = 0; i < tp->tensor_type->shape->n_dim && !any; i++)
        any = pinned_dim(c, vi, input, i, tp->tensor_type->shape->dim[i]) >= 0;
    if (!any) return EG_OK;
    uint8_t *buf;
    size_t len;
    if (egp_pack(&vi->base, &buf, &len) != EG_OK) return EG_ENOMEM;
    Onnx__ValueInfoProto *v = onnx__value_info_proto__unpack(NULL, len, buf);
    free(buf);
    if (!v) return EG_ENOMEM;
    Onnx__TensorShapeProto *sh = v->type->tensor_type->shape;
    for (size_t i = 0; i < sh->n_dim; i++) {
        int k = pinned_dim(c, vi, input, i, sh->dim[i]);
        if (k < 0) continue;
        if (sh->dim[i]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
            free(sh->dim[i]->dim_param); /* the default allocator's, as unpack made it */
        sh->dim[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        sh->dim[i]->dim_value = c->o->dims[k].value;
        c->dim_used[k] = 1;
    }
    *copy = v;
    return EG_OK;
}

/* Keep a ValueInfoProto's bytes for export (with the pinned dims); its
 * type gives the tensor's dtype and shape unless the tensor has a value
 * (which knows better). */
static eg_status keep_vinfo(const ictx *c, const Onnx__ValueInfoProto *vi, eg_tensor *t) {
    Onnx__ValueInfoProto *pinned;
    free(t->vinfo);
    t->vinfo = NULL;
    if (pin_dims(c, vi, (t->flags & EG_TF_INPUT) != 0, &pinned) != EG_OK) return fail(c, EG_ENOMEM, "out of memory");
    if (pinned) vi = pinned;
    eg_status rc = egp_pack(&vi->base, &t->vinfo, &t->vinfo_len) == EG_OK ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK && !(t->flags & (EG_TF_INIT | EG_TF_SPARSE))) rc = read_type(vi->type, t);
    if (pinned) onnx__value_info_proto__free_unpacked(pinned, NULL);
    return rc == EG_OK ? EG_OK : fail(c, EG_ENOMEM, "out of memory");
}

static eg_status add_inputs(ictx *c) {
    eg_graph *g = c->g;
    g->input = malloc(sizeof(int) * (c->gp->n_input + 1));
    if (!g->input) return fail(c, EG_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = c->gp->input[i];
        int id;
        if (!vi->name || !vi->name[0]) return fail(c, EG_EFORMAT, "graph input %zu has no name", i);
        eg_status rc = eg_add_tensor(g, vi->name, &id);
        if (rc == EG_EGRAPH) return fail(c, rc, "graph input '%s' is listed twice", vi->name);
        if (rc != EG_OK) return fail(c, rc, "out of memory");
        g->tensor[id].flags |= EG_TF_INPUT;
        g->input[g->n_inputs++] = id;
        if ((rc = keep_vinfo(c, vi, &g->tensor[id])) != EG_OK) return rc;
    }
    return EG_OK;
}

/* A named value: a new tensor, or a graph input it gives a default to. */
static eg_status value_tensor(ictx *c, const char *name, const char *what, int *id) {
    if (!name || !name[0]) return fail(c, EG_EFORMAT, "an %s has no name", what);
    *id = eg_find_tensor(c->g, name);
    if (*id >= 0 && (c->g->tensor[*id].flags & (EG_TF_INIT | EG_TF_SPARSE)))
        return fail(c, EG_EGRAPH, "%s '%s' is defined twice", what, name);
    if (*id >= 0) return EG_OK;
    eg_status rc = eg_add_tensor(c->g, name, id);
    return rc == EG_OK ? EG_OK : fail(c, rc, "out of memory");
}

/* An initializer giving a graph input its default must fit the input's
 * declaration (the writer keeps the declaration and regenerates the value). */
static eg_status check_input_default(const ictx *c, const eg_tensor *t, int dtype,
                                     const eg_shape *decl) {
    char a[160], b[160];
    if (dtype && t->dtype != dtype)
        return fail(c, EG_EFORMAT, "graph input '%s' is declared %s but its initializer is %s",
                    t->name, eg_dtype_name(dtype), eg_dtype_name(t->dtype));
    if (shapes_conflict(decl, &t->shape))
        return fail(c, EG_ESHAPE, "graph input '%s' is declared %s but its initializer is %s",
                    t->name, eg_shape_str(decl, NULL, a, sizeof a),
                    eg_shape_str(&t->shape, NULL, b, sizeof b));
    return EG_OK;
}

static eg_status add_initializers(ictx *c) {
    for (size_t i = 0; i < c->gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = c->gp->initializer[i];
        int id;
        eg_status rc = value_tensor(c, tp->name, "initializer", &id);
        if (rc != EG_OK) return rc;
        eg_tensor *t = &c->g->tensor[id];
        int dtype = t->dtype; /* a graph input's declaration, or 0 */
        eg_shape decl = t->shape;
        /* IR < 4 wants every initializer listed as a graph input too; a file
         * that does not is still run by onnxruntime, so it is read, and the
         * exporter lists the initializer (onnx_out.c, note_added). */
        if (c->g->ir_version < 4 && !(t->flags & EG_TF_INPUT)) c->g->repaired = 1;
        rc = load_value(c, tp, "initializer", t, 1);
        if (rc == EG_OK && (t->flags & EG_TF_INPUT)) rc = check_input_default(c, t, dtype, &decl);
        if (rc != EG_OK) return rc;
    }
    /* sparse initializers stay in the graph shell; nodes may read them */
    for (size_t i = 0; i < c->gp->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *sp = c->gp->sparse_initializer[i];
        int id;
        eg_status rc = value_tensor(c, sp->values ? sp->values->name : NULL, "sparse initializer", &id);
        if (rc != EG_OK) return rc;
        eg_tensor *t = &c->g->tensor[id];
        if (is_external(sp->values) || (sp->indices && is_external(sp->indices)))
            return fail(c, EG_EUNSUPPORTED, "sparse initializer '%s' keeps its data in an external file (%s): "
                        "read for dense initializers only", t->name, str(ext_value(sp->values, "location")));
        t->flags |= EG_TF_SPARSE | EG_TF_PINNED;
        t->dtype = sp->values->has_data_type ? sp->values->data_type : 0;
        if (sp->n_dims <= EG_MAX_RANK) {
            t->shape.rank = (int)sp->n_dims;
            for (size_t k = 0; k < sp->n_dims; k++)
                t->shape.dim[k] = sp->dims[k] >= 0 && sp->dims[k] <= EG_DIM_MAX ? sp->dims[k] : -1;
        }
    }
    return EG_OK;
}

/* ================= attributes ================= */


/* Every attribute named in list (NULL-terminated), none a reference to a
 * function attribute. */
static int only_attrs(const Onnx__NodeProto *np, const char *const *list) {
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        int known = 0;
        if (a->ref_attr_name || !a->name) return 0;
        for (int k = 0; list[k] && !known; k++) known = strcmp(list[k], a->name) == 0;
        if (!known) return 0;
    }
    return 1;
}

/* An int attribute in [lo, hi], def when absent. @return 0, or -1. */
static int get_int(const Onnx__NodeProto *np, const char *name, int64_t def, int64_t lo,
                   int64_t hi, int64_t *v) {
    const Onnx__AttributeProto *a = egp_attr(np, name);
    *v = def;
    if (!a) return 0;
    if (!egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) || a->i < lo || a->i > hi) return -1;
    *v = a->i;
    return 0;
}

/* An ints attribute with n entries in [lo, hi] each; *n = -1 when absent
 * (v untouched). @return 0, or -1 when malformed or more than max. */
static int get_ints(const Onnx__NodeProto *np, const char *name, int max, int64_t lo, int64_t hi,
                    int64_t *v, int *n) {
    const Onnx__AttributeProto *a = egp_attr(np, name);
    *n = -1;
    if (!a) return 0;
    if (!egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) || a->n_ints > (size_t)max) return -1;
    for (size_t i = 0; i < a->n_ints; i++)
        if (a->ints[i] < lo || a->ints[i] > hi) return -1;
    if (a->n_ints) memcpy(v, a->ints, sizeof(int64_t) * a->n_ints);
    *n = (int)a->n_ints;
    return 0;
}

static int get_float(const Onnx__NodeProto *np, const char *name, float def, float *v) {
    const Onnx__AttributeProto *a = egp_attr(np, name);
    *v = def;
    if (!a) return 0;
    if (!egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) return -1;
    *v = a->f;
    return 0;
}

/* A string attribute equal to one of the choices: its index, def when
 * absent, -1 otherwise. */
static int get_choice(const Onnx__NodeProto *np, const char *name, int def, const char *const *choice) {
    const Onnx__AttributeProto *a = egp_attr(np, name);
    if (!a) return def;
    if (!egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)) return -1;
    for (int k = 0; choice[k]; k++)
        if (a->s.len == strlen(choice[k]) && (!a->s.len || !memcmp(a->s.data, choice[k], a->s.len)))
            return k;
    return -1;
}

/* ================= model operators ================= */

/* kernel_shape, strides, pads, dilations (all 1), auto_pad of a 2-D window
 * op. @return 1 when understood. */
static int parse_window(const Onnx__NodeProto *np, eg_attrs *a, int need_kernel) {
    static const char *const autopad[] = {"NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER", NULL};
    int64_t v[4];
    int n;
    if (get_ints(np, "kernel_shape", 2, 1, ATTR_MAX, v, &n) || (n >= 0 && n != 2) ||
        (n < 0 && need_kernel))
        return 0;
    if (n == 2) a->kernel[0] = (int32_t)v[0], a->kernel[1] = (int32_t)v[1];
    a->stride[0] = a->stride[1] = 1;
    if (get_ints(np, "strides", 2, 1, ATTR_MAX, v, &n) || (n >= 0 && n != 2)) return 0;
    if (n == 2) a->stride[0] = (int32_t)v[0], a->stride[1] = (int32_t)v[1];
    if (get_ints(np, "pads", 4, 0, ATTR_MAX, v, &n) || (n >= 0 && n != 4)) return 0;
    for (int i = 0; i < 4 && n == 4; i++) a->pad[i] = (int32_t)v[i];
    if (get_ints(np, "dilations", 2, 1, 1, v, &n) || (n >= 0 && n != 2)) return 0;
    int ap = get_choice(np, "auto_pad", 0, autopad);
    if (ap < 0) return 0;
    if (ap >= 2) memset(a->pad, 0, sizeof a->pad);
    if (ap == 3) a->flags |= EG_AF_AUTO_UPPER;
    if (ap == 4) a->flags |= EG_AF_AUTO_LOWER;
    return 1;
}

static int parse_conv(const Onnx__NodeProto *np, eg_attrs *a) {
    static const char *const ok[] = {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad", NULL};
    int64_t group;
    if (!only_attrs(np, ok) || !parse_window(np, a, 0) || get_int(np, "group", 1, 1, ATTR_MAX, &group))
        return 0;
    a->group = (int32_t)group;
    return 1;
}

static int parse_pool(const Onnx__NodeProto *np, eg_attrs *a, int avg) {
    static const char *const okmax[] = {"kernel_shape", "strides", "pads", "dilations", "auto_pad",
                                        "ceil_mode", "storage_order", NULL};
    static const char *const okavg[] = {"kernel_shape", "strides", "pads", "dilations", "auto_pad",
                                        "ceil_mode", "count_include_pad", NULL};
    int64_t ceil, cip, order;
    if (!only_attrs(np, avg ? okavg : okmax) || !parse_window(np, a, 1)) return 0;
    if (get_int(np, "ceil_mode", 0, 0, 1, &ceil) || get_int(np, "storage_order", 0, 0, 1, &order) ||
        get_int(np, "count_include_pad", 0, 0, 1, &cip))
        return 0;
    if (cip) a->flags |= EG_AF_COUNT_PAD;
    if (ceil) a->flags |= EG_AF_CEIL; /* infer.c: modelled only where floor agrees */
    return 1;
}

/* Before opset 7 (Gemm-1, Gemm-6) C is broadcast only with broadcast = 1,
 * in the legacy way (EG_AF_LEGACY_BCAST: infer.c keeps it where that is
 * numpy's broadcast). */
static int parse_gemm(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    static const char *const ok[] = {"alpha", "beta", "transA", "transB", NULL};
    static const char *const ok6[] = {"alpha", "beta", "transA", "transB", "broadcast", NULL};
    int64_t ta, tb, bc;
    if (!only_attrs(np, opset < 7 ? ok6 : ok) || get_int(np, "broadcast", 0, 0, 1, &bc)) return 0;
    if (bc) a->flags |= EG_AF_LEGACY_BCAST;
    if (get_float(np, "alpha", 1.0f, &a->alpha) ||
        get_float(np, "beta", 1.0f, &a->beta) || get_int(np, "transA", 0, 0, 1, &ta) ||
        get_int(np, "transB", 0, 0, 1, &tb))
        return 0;
    a->flags |= (ta ? EG_AF_TRANS_A : 0) | (tb ? EG_AF_TRANS_B : 0);
    return 1;
}

/* An `axis` attribute; required when def is INT64_MIN. */
static int parse_axis(const Onnx__NodeProto *np, eg_attrs *a, int64_t def) {
    static const char *const ok[] = {"axis", NULL};
    int64_t v;
    if (!only_attrs(np, ok) || get_int(np, "axis", def, -EG_MAX_RANK, EG_MAX_RANK, &v) ||
        v == INT64_MIN)
        return 0;
    a->axis = (int32_t)v;
    return 1;
}

/* Add, Mul: before opset 7 numpy broadcasting did not exist; broadcast = 1
 * (with an optional axis) broadcast B to A in the legacy way, which
 * infer.c keeps only where numpy's agrees. consumed_inputs (before 6) is
 * an in-place hint with no meaning. */
static int parse_binary(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    static const char *const ok[] = {"broadcast", "axis", "consumed_inputs", NULL};
    int64_t bc, axis;
    if (opset >= 7) return np->n_attribute == 0;
    if (!only_attrs(np, ok) || (opset >= 6 && egp_attr(np, "consumed_inputs")) ||
        get_int(np, "broadcast", 0, 0, 1, &bc) ||
        get_int(np, "axis", INT64_MIN, -EG_MAX_RANK, EG_MAX_RANK, &axis))
        return 0;
    if (bc) a->flags |= EG_AF_LEGACY_BCAST;
    if (bc && axis != INT64_MIN) a->flags |= EG_AF_HAS_AXIS, a->axis = (int32_t)axis;
    return 1;
}

/* Relu, Sigmoid, Tanh, Sum: consumed_inputs (before opset 6) is ignored. */
static int parse_unary(const Onnx__NodeProto *np, int opset) {
    static const char *const ok[] = {"consumed_inputs", NULL};
    return opset < 6 ? only_attrs(np, ok) : np->n_attribute == 0;
}

static int parse_split(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    static const char *const ok[] = {"axis", "split", "num_outputs", NULL};
    int64_t axis, nout;
    int n;
    if (!only_attrs(np, ok) || np->n_output < 1 || np->n_output > 4096 ||
        get_int(np, "axis", 0, -EG_MAX_RANK, EG_MAX_RANK, &axis) ||
        get_ints(np, "split", EG_MAX_INTS, 0, EG_DIM_MAX, a->ints, &n) ||
        get_int(np, "num_outputs", -1, 1, 4096, &nout))
        return 0;
    if ((n >= 0 && opset >= 13) || (nout >= 0 && (opset < 18 || nout != (int64_t)np->n_output)))
        return 0;
    if (np->n_input > 1 && opset < 13) return 0;
    a->axis = (int32_t)axis;
    if (n >= 0) a->flags |= EG_AF_INTS, a->n_ints = n;
    if (nout >= 0) a->flags |= EG_AF_NUM_OUTPUTS;
    return 1;
}

static int parse_transpose(const Onnx__NodeProto *np, eg_attrs *a) {
    static const char *const ok[] = {"perm", NULL};
    int n;
    if (!only_attrs(np, ok) || get_ints(np, "perm", EG_MAX_RANK, 0, EG_MAX_RANK - 1, a->ints, &n))
        return 0;
    if (n >= 0) a->flags |= EG_AF_INTS, a->n_ints = n;
    return 1;
}

/* Reshape-1 (opsets 1..4) takes the target shape as an attribute (into
 * ints, EG_AF_INTS); from 5 it is the second input. */
static int parse_reshape(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    static const char *const ok[] = {"allowzero", NULL};
    static const char *const ok1[] = {"shape", "consumed_inputs", NULL};
    int64_t z;
    int n;
    if (opset < 5) {
        if (!only_attrs(np, ok1) || get_ints(np, "shape", EG_MAX_RANK, -1, EG_DIM_MAX, a->ints, &n) ||
            n < 0)
            return 0;
        a->flags |= EG_AF_INTS, a->n_ints = n;
        return 1;
    }
    if (!only_attrs(np, ok) || get_int(np, "allowzero", 0, 0, 1, &z)) return 0;
    if (z) a->flags |= EG_AF_ALLOWZERO;
    return 1;
}

/* Inference only: spatial = 1 before opset 9, training_mode = 0, one
 * output; in opset 6 is_test = 1 (its default 0 is training). Opsets 1..5
 * (consumed_inputs required) stay opaque (mop_opsets). */
static int parse_batchnorm(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    static const char *const ok[] = {"epsilon", "momentum", "spatial", "training_mode", NULL};
    static const char *const ok6[] = {"epsilon", "momentum", "spatial", "is_test", NULL};
    int64_t spatial, training, is_test;
    float momentum;
    if (opset < 7 && (get_int(np, "is_test", 0, 0, 1, &is_test) || !is_test)) return 0;
    if (!only_attrs(np, opset < 7 ? ok6 : ok) || get_float(np, "epsilon", 1e-5f, &a->epsilon) ||
        get_float(np, "momentum", 0.9f, &momentum) || get_int(np, "spatial", 1, 1, 1, &spatial) ||
        get_int(np, "training_mode", 0, 0, 0, &training))
        return 0;
    return 1;
}

/* LayerNormalization: stash_type 1 (float32 statistics) is what the
 * kernels compute; the Mean and InvStdDev outputs are refused by arity.
 * Any epsilon is read; lowering takes only what opspecs accepts. */
static int parse_layernorm(const Onnx__NodeProto *np, eg_attrs *a) {
    static const char *const ok[] = {"axis", "epsilon", "stash_type", NULL};
    int64_t axis, stash;
    if (!only_attrs(np, ok) || get_int(np, "axis", -1, -EG_MAX_RANK, EG_MAX_RANK, &axis) ||
        get_float(np, "epsilon", 1e-5f, &a->epsilon) || get_int(np, "stash_type", 1, 1, 1, &stash))
        return 0;
    a->axis = (int32_t)axis;
    return 1;
}

static int no_attrs(const Onnx__NodeProto *np) { return np->n_attribute == 0; }

/* The model operator for op_type, or EG_MOP_COUNT. */
static eg_mop mop_by_type(const char *op_type) {
    for (int k = 0; k < EG_MOP_COUNT; k++)
        if (strcmp(eg_mop_table[k].onnx, op_type) == 0) return (eg_mop)k;
    return EG_MOP_COUNT;
}

/* The opsets in which each model operator is lowered (read as a model
 * operator rather than kept opaque): every version the attribute parsers
 * below handle. An op's version in a model is the newest one at or below
 * the model's opset, so a range of opsets is a range of versions.
 * ORDER MOP */
static const struct { int lo, hi; } mop_opsets[EG_MOP_COUNT] = {
    [EG_MOP_CONV] = {1, EG_OPSET_MAX},          /* 1, 11, 22: same meaning */
    [EG_MOP_MAXPOOL] = {1, EG_OPSET_MAX},       /* 1, 8, 10, 11, 12, 22; ceil_mode
                                                   only where it equals floor */
    [EG_MOP_AVGPOOL] = {1, EG_OPSET_MAX},       /* 1 excludes pads, as cip 0 */
    [EG_MOP_GLOBALAVGPOOL] = {1, EG_OPSET_MAX}, /* 1, 22 */
    [EG_MOP_GEMM] = {1, EG_OPSET_MAX},          /* < 7: legacy broadcast checked */
    [EG_MOP_MATMUL] = {1, EG_OPSET_MAX},        /* 1, 9, 13 */
    [EG_MOP_ADD] = {1, EG_OPSET_MAX},           /* < 7: legacy broadcast checked */
    [EG_MOP_MUL] = {1, EG_OPSET_MAX},
    [EG_MOP_DIV] = {1, EG_OPSET_MAX},
    [EG_MOP_RELU] = {1, EG_OPSET_MAX},          /* < 6: consumed_inputs ignored */
    [EG_MOP_SIGMOID] = {1, EG_OPSET_MAX},
    [EG_MOP_TANH] = {1, EG_OPSET_MAX},
    [EG_MOP_CONCAT] = {1, EG_OPSET_MAX},        /* < 4: axis defaults to 1 */
    [EG_MOP_SPLIT] = {1, EG_OPSET_MAX},         /* 1: a sizes input stays opaque */
    [EG_MOP_TRANSPOSE] = {1, EG_OPSET_MAX},
    [EG_MOP_RESHAPE] = {1, EG_OPSET_MAX},       /* < 5: shape attribute */
    [EG_MOP_FLATTEN] = {1, EG_OPSET_MAX},
    [EG_MOP_BATCHNORM] = {6, EG_OPSET_MAX},     /* 6: is_test = 1 only */
    [EG_MOP_SOFTMAX] = {1, EG_OPSET_MAX},       /* < 13: last axis only (infer.c) */
    [EG_MOP_LAYERNORM] = {17, EG_OPSET_MAX},    /* 17: the first version */
    [EG_MOP_IDENTITY] = {1, EG_OPSET_MAX},      /* and Dropout (parse_dropout) */
    [EG_MOP_SUM] = {1, EG_OPSET_MAX},           /* < 8: equal shapes (infer.c) */
};
_Static_assert(sizeof mop_opsets / sizeof mop_opsets[0] == EG_MOP_COUNT, "mop_opsets: ORDER MOP");

static int parse_attrs(const Onnx__NodeProto *np, int opset, eg_mop mop, eg_attrs *a) {
    switch (mop) {
    case EG_MOP_CONV: return parse_conv(np, a);
    case EG_MOP_MAXPOOL: return parse_pool(np, a, 0);
    case EG_MOP_AVGPOOL: return parse_pool(np, a, 1);
    case EG_MOP_GEMM: return parse_gemm(np, opset, a);
    case EG_MOP_CONCAT: return parse_axis(np, a, opset < 4 ? 1 : INT64_MIN);
    case EG_MOP_SPLIT: return parse_split(np, opset, a);
    case EG_MOP_TRANSPOSE: return parse_transpose(np, a);
    case EG_MOP_RESHAPE: return parse_reshape(np, opset, a);
    case EG_MOP_FLATTEN: return parse_axis(np, a, 1);
    case EG_MOP_BATCHNORM: return parse_batchnorm(np, opset, a);
    case EG_MOP_SOFTMAX: return parse_axis(np, a, opset < 13 ? 1 : -1);
    case EG_MOP_LAYERNORM: return parse_layernorm(np, a);
    case EG_MOP_ADD:
    case EG_MOP_MUL:
    case EG_MOP_DIV: return parse_binary(np, opset, a);
    case EG_MOP_RELU:
    case EG_MOP_SIGMOID:
    case EG_MOP_TANH:
    case EG_MOP_SUM: return parse_unary(np, opset);
    case EG_MOP_GLOBALAVGPOOL:
    case EG_MOP_MATMUL:
    case EG_MOP_IDENTITY: return no_attrs(np);
    case EG_MOP_COUNT: break;
    }
    return 0;
}

/* The input count node np may have as mop in this opset. */
static void arity(eg_mop mop, int opset, int *min_in, int *max_in) {
    *min_in = eg_mop_table[mop].min_in, *max_in = eg_mop_table[mop].max_in;
    if (mop == EG_MOP_RESHAPE && opset < 5) *min_in = *max_in = 1;
}

/* Dropout in inference is an identity of its first input: before opset 7
 * only with is_test = 1 (its default 0 is training); from 7 the runtime
 * decides, and inference is what the engine models; from 12 training_mode
 * (input 2) must be a constant false, which finish_dropouts checks once
 * inputs are resolved, with the mask output unread. */
static eg_mop parse_dropout(const Onnx__NodeProto *np, int opset) {
    static const char *const ok1[] = {"ratio", "is_test", "consumed_inputs", NULL};
    static const char *const ok7[] = {"ratio", NULL};
    static const char *const ok12[] = {"seed", NULL};
    int64_t is_test;
    float ratio;
    if (opset < mop_opsets[EG_MOP_IDENTITY].lo || opset > mop_opsets[EG_MOP_IDENTITY].hi ||
        np->n_input < 1 || np->n_input > (opset < 12 ? 1u : 3u) || np->n_output < 1 ||
        np->n_output > 2 || !np->input[0] || !np->input[0][0] || !np->output[0] || !np->output[0][0])
        return EG_MOP_COUNT;
    if (!only_attrs(np, opset < 7 ? ok1 : opset < 12 ? ok7 : ok12) ||
        (opset < 12 && get_float(np, "ratio", 0.5f, &ratio)) ||
        (opset < 7 && (get_int(np, "is_test", 0, 0, 1, &is_test) || !is_test)) ||
        (opset >= 6 && egp_attr(np, "consumed_inputs")))
        return EG_MOP_COUNT;
    return EG_MOP_IDENTITY;
}

/* Which model operator np is, with its attributes; EG_MOP_COUNT when it
 * must stay opaque (unknown op, other domain, an operator version outside
 * mop_opsets, attributes or arity outside what the model operator covers). */
static eg_mop classify(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    int min_in, max_in;
    memset(a, 0, sizeof *a);
    if (!eg_default_domain(np->domain) || !np->op_type) return EG_MOP_COUNT;
    if (strcmp(np->op_type, "Dropout") == 0) return parse_dropout(np, opset);
    eg_mop mop = mop_by_type(np->op_type);
    if (mop == EG_MOP_COUNT || opset < mop_opsets[mop].lo || opset > mop_opsets[mop].hi)
        return EG_MOP_COUNT;
    const eg_mop_info *info = &eg_mop_table[mop];
    arity(mop, opset, &min_in, &max_in);
    if (np->n_input < (size_t)min_in || (max_in >= 0 && np->n_input > (size_t)max_in))
        return EG_MOP_COUNT;
    if (info->max_out >= 0 && np->n_output != (size_t)info->max_out) return EG_MOP_COUNT;
    for (int k = 0; k < min_in; k++) /* required inputs cannot be omitted */
        if (!np->input[k] || !np->input[k][0]) return EG_MOP_COUNT;
    for (size_t k = 0; k < np->n_output; k++)
        if (!np->output[k] || !np->output[k][0]) return EG_MOP_COUNT;
    return parse_attrs(np, opset, mop, a) ? mop : EG_MOP_COUNT;
}

/* ================= nodes ================= */

static int is_graph_output(const ictx *c, const char *name) {
    for (size_t i = 0; i < c->gp->n_output; i++)
        if (c->gp->output[i]->name && strcmp(c->gp->output[i]->name, name) == 0) return 1;
    return 0;
}

/* The one tensor-valued attribute of a Constant we can hold as a value;
 * builds the TensorProto for the scalar/list forms into *tmp. */
static const Onnx__TensorProto *const_value(const Onnx__NodeProto *np, Onnx__TensorProto *tmp,
                                            int64_t *dim) {
    if (np->n_attribute != 1 || np->attribute[0]->ref_attr_name || !np->attribute[0]->name) return NULL;
    const Onnx__AttributeProto *a = np->attribute[0];
    const char *n = a->name;
    onnx__tensor_proto__init(tmp);
    tmp->has_data_type = 1;
    tmp->dims = dim;
    if (!strcmp(n, "value") && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR) && a->t)
        return eg_dtype_size(a->t->has_data_type ? a->t->data_type : 0) ? a->t : NULL;
    if (!strcmp(n, "value_float") && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) {
        tmp->data_type = EG_DT_FLOAT, tmp->n_float_data = 1, tmp->float_data = (float *)&a->f;
        return tmp;
    }
    if (!strcmp(n, "value_int") && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)) {
        tmp->data_type = EG_DT_INT64, tmp->n_int64_data = 1, tmp->int64_data = (int64_t *)&a->i;
        return tmp;
    }
    *dim = 0;
    tmp->n_dims = 1;
    if (!strcmp(n, "value_floats") && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS)) {
        tmp->data_type = EG_DT_FLOAT, *dim = (int64_t)a->n_floats;
        tmp->n_float_data = a->n_floats, tmp->float_data = a->floats;
        return tmp;
    }
    if (!strcmp(n, "value_ints") && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)) {
        tmp->data_type = EG_DT_INT64, *dim = (int64_t)a->n_ints;
        tmp->n_int64_data = a->n_ints, tmp->int64_data = a->ints;
        return tmp;
    }
    return NULL;
}

/* What defined `name` before node i's output of that name (node i itself
 * when it writes the name twice), for a message. @return a phrase. */
static const char *first_definition(const ictx *c, const char *name, size_t i, char *buf, size_t len) {
    int id = eg_find_tensor(c->g, name);
    unsigned f = id >= 0 ? c->g->tensor[id].flags : 0;
    if (f & EG_TF_INPUT) return "a graph input";
    if (f & EG_TF_SPARSE) return "a sparse initializer";
    if ((f & EG_TF_INIT) && !(f & EG_TF_CONST)) return "an initializer";
    for (size_t k = 0; k <= i; k++) {
        const Onnx__NodeProto *np = c->gp->node[k];
        for (size_t q = 0; q < np->n_output; q++)
            if (np->output[q] && strcmp(np->output[q], name) == 0) {
                int w = snprintf(buf, len, "an output of ");
                node_ref(np, k, buf + w, len - (size_t)w);
                return buf;
            }
    }
    return "defined";
}

/* Node i writes a name something defined already. */
static eg_status defined_twice(const ictx *c, size_t i, const char *name) {
    char at[NREF_LEN], first[NREF_LEN + 16];
    return fail(c, EG_EGRAPH, "%s: output '%s' is already %s",
                node_ref(c->gp->node[i], i, at, sizeof at), name,
                first_definition(c, name, i, first, sizeof first));
}

/* A Constant node whose value we can hold becomes a value (exported as an
 * initializer). *taken = 0 when it must stay an (opaque) node. */
static eg_status take_constant(ictx *c, size_t i, int *taken) {
    const Onnx__NodeProto *np = c->gp->node[i];
    Onnx__TensorProto tmp;
    int64_t dim;
    int id;
    *taken = 0;
    if (!eg_default_domain(np->domain) || !np->op_type || strcmp(np->op_type, "Constant") ||
        c->g->opset < EG_OPSET_MIN || c->g->opset > EG_OPSET_MAX ||
        np->n_output != 1 || !np->output[0] || !np->output[0][0] || np->n_input ||
        is_graph_output(c, np->output[0]))
        return EG_OK;
    const Onnx__TensorProto *tp = const_value(np, &tmp, &dim);
    if (!tp) return EG_OK;
    eg_status rc = eg_add_tensor(c->g, np->output[0], &id);
    if (rc == EG_EGRAPH) return defined_twice(c, i, np->output[0]);
    if (rc != EG_OK) return fail(c, rc, "out of memory");
    c->g->tensor[id].flags |= EG_TF_CONST;
    *taken = 1;
    return load_value(c, tp, "Constant", &c->g->tensor[id], 0);
}

/* Opaque identity of a node, its bytes and output tensors. */
static eg_status node_identity(ictx *c, const Onnx__NodeProto *np, eg_node *n) {
    n->op_type = strdup(str(np->op_type));
    n->domain = strdup(str(np->domain));
    if (!n->op_type || !n->domain || egp_pack(&np->base, &n->proto, &n->proto_len) != EG_OK)
        return fail(c, EG_ENOMEM, "out of memory");
    return EG_OK;
}

static eg_status node_outputs(ictx *c, size_t i, int id) {
    const Onnx__NodeProto *np = c->gp->node[i];
    for (size_t k = 0; k < np->n_output; k++) {
        int t;
        if (!np->output[k] || !np->output[k][0]) continue;
        eg_status rc = eg_add_tensor(c->g, np->output[k], &t);
        if (rc == EG_EGRAPH) return defined_twice(c, i, np->output[k]);
        if (rc != EG_OK) return fail(c, rc, "out of memory");
        c->g->node[id].out[k] = t;
    }
    return EG_OK;
}

static eg_status add_node(ictx *c, size_t i) {
    const Onnx__NodeProto *np = c->gp->node[i];
    eg_attrs a;
    char at[NREF_LEN];
    int id, taken;
    eg_status rc = take_constant(c, i, &taken);
    c->node_of[i] = -1;
    if (rc != EG_OK || taken) return rc;
    if (np->n_input > (1 << 20) || np->n_output > (1 << 20))
        return fail(c, EG_ELIMIT, "%s has too many inputs or outputs", node_ref(np, i, at, sizeof at));
    eg_mop mop = classify(np, c->g->opset, &a);
    rc = eg_add_node(c->g, mop == EG_MOP_COUNT ? EG_KIND_OPAQUE : EG_KIND_MODEL, str(np->name),
                     (int)np->n_input, 0, (int)np->n_output, &id);
    if (rc != EG_OK) return fail(c, rc, "out of memory");
    c->node_of[i] = id;
    eg_node *n = &c->g->node[id];
    n->mop = mop == EG_MOP_COUNT ? (eg_mop)0 : mop;
    n->attr = a;
    rc = node_identity(c, np, n);
    return rc == EG_OK ? node_outputs(c, i, id) : rc;
}

/* ---- inputs, including names read inside subgraph attributes ---- */

typedef struct {
    int *id;
    int n, cap;
    int stamp; /* mark[t] == stamp: already listed */
    int *mark;
    const char *undefined; /* EG_EGRAPH: a name no scope defines */
    const char *graph;     /* the subgraph that reads it */
} refs;

static eg_status refs_add(refs *r, int t) {
    if (t < 0 || r->mark[t] == r->stamp) return EG_OK;
    if (r->n == r->cap) {
        int nc = r->cap ? 2 * r->cap : 8;
        int *p = realloc(r->id, sizeof(int) * (size_t)nc);
        if (!p) return EG_ENOMEM;
        r->id = p, r->cap = nc;
    }
    r->mark[t] = r->stamp;
    r->id[r->n++] = t;
    return EG_OK;
}

static eg_status scan_graph(const ictx *c, const Onnx__GraphProto *sg, refs *r);

static eg_status scan_attrs(const ictx *c, const Onnx__NodeProto *np, refs *r) {
    eg_status rc = EG_OK;
    for (size_t k = 0; rc == EG_OK && k < np->n_attribute; k++) {
        const Onnx__AttributeProto *a = np->attribute[k];
        if (a->g) rc = scan_graph(c, a->g, r);
        for (size_t q = 0; rc == EG_OK && q < a->n_graphs; q++) rc = scan_graph(c, a->graphs[q], r);
    }
    return rc;
}

/* Names a subgraph defines: taken, so the writer's new names avoid them. */
static eg_status reserve_names(const ictx *c, const Onnx__GraphProto *sg) {
    eg_status rc = EG_OK;
    for (size_t k = 0; rc == EG_OK && k < sg->n_input; k++)
        if (sg->input[k]->name) rc = eg_reserve_name(c->g, sg->input[k]->name);
    for (size_t k = 0; rc == EG_OK && k < sg->n_initializer; k++)
        if (sg->initializer[k]->name) rc = eg_reserve_name(c->g, sg->initializer[k]->name);
    for (size_t j = 0; rc == EG_OK && j < sg->n_node; j++)
        for (size_t k = 0; rc == EG_OK && k < sg->node[j]->n_output; k++)
            if (sg->node[j]->output[k] && sg->node[j]->output[k][0])
                rc = eg_reserve_name(c->g, sg->node[j]->output[k]);
    return rc;
}

/* A name subgraph sg reads: an outer-scope tensor to list, a name some
 * subgraph defines (reserved), or, found nowhere, an undefined name: every
 * enclosing scope's names are known by now (the top level's all, and each
 * subgraph's before its nodes are scanned). */
static eg_status read_name(const ictx *c, const Onnx__GraphProto *sg, const char *name, refs *r) {
    int t = eg_find_tensor(c->g, name);
    if (t != -1) return refs_add(r, t);
    r->undefined = name, r->graph = str(sg->name);
    return EG_EGRAPH;
}

/* Outer-scope tensors a subgraph reads (nesting is bounded by the wire
 * check's depth limit). */
static eg_status scan_graph(const ictx *c, const Onnx__GraphProto *sg, refs *r) {
    eg_status rc = reserve_names(c, sg);
    for (size_t j = 0; rc == EG_OK && j < sg->n_node; j++) {
        const Onnx__NodeProto *np = sg->node[j];
        for (size_t k = 0; rc == EG_OK && k < np->n_input; k++)
            if (np->input[k] && np->input[k][0]) rc = read_name(c, sg, np->input[k], r);
        if (rc == EG_OK) rc = scan_attrs(c, np, r);
    }
    for (size_t k = 0; rc == EG_OK && k < sg->n_output; k++)
        if (sg->output[k]->name && sg->output[k]->name[0])
            rc = read_name(c, sg, sg->output[k]->name, r);
    return rc;
}

static eg_status implicit_inputs(ictx *c, size_t i, int id, refs *r) {
    const Onnx__NodeProto *np = c->gp->node[i];
    char at[NREF_LEN];
    r->n = 0;
    r->stamp = id + 1;
    eg_status rc = scan_attrs(c, np, r);
    if (rc == EG_EGRAPH)
        return fail(c, rc, "%s: its subgraph '%.64s' reads '%s', which no enclosing graph defines",
                    node_ref(np, i, at, sizeof at), r->graph, r->undefined);
    if (rc != EG_OK) return fail(c, EG_ENOMEM, "out of memory");
    if (r->n == 0) return EG_OK;
    eg_node *n = &c->g->node[id];
    int *in = realloc(n->in, sizeof(int) * (size_t)(n->n_in + r->n + 1));
    if (!in) return fail(c, EG_ENOMEM, "out of memory");
    n->in = in;
    for (int k = 0; k < r->n; k++) {
        in[n->n_in + k] = r->id[k];
        c->g->tensor[r->id[k]].flags |= EG_TF_PINNED;
    }
    n->n_implicit = r->n;
    return EG_OK;
}

static eg_status resolve_inputs(ictx *c, size_t i, refs *r) {
    const Onnx__NodeProto *np = c->gp->node[i];
    int id = c->node_of[i];
    if (id < 0) return EG_OK;
    for (size_t k = 0; k < np->n_input; k++) {
        if (!np->input[k] || !np->input[k][0]) continue;
        int t = eg_find_tensor(c->g, np->input[k]);
        char at[NREF_LEN];
        if (t < 0)
            return fail(c, EG_EGRAPH, "%s: input '%s' is not defined (no initializer, graph "
                        "input or node output)", node_ref(np, i, at, sizeof at), np->input[k]);
        c->g->node[id].in[k] = t;
    }
    return c->g->node[id].kind == EG_KIND_OPAQUE ? implicit_inputs(c, i, id, r) : EG_OK;
}

static eg_status add_nodes(ictx *c) {
    refs r = {0};
    eg_status rc = EG_OK;
    c->node_of = malloc(sizeof(int) * (c->gp->n_node + 1));
    if (!c->node_of) return fail(c, EG_ENOMEM, "out of memory");
    for (size_t i = 0; rc == EG_OK && i < c->gp->n_node; i++) rc = add_node(c, i);
    if (rc == EG_OK && !(r.mark = calloc((size_t)c->g->n_tensors + 1, sizeof(int))))
        rc = fail(c, EG_ENOMEM, "out of memory");
    for (size_t i = 0; rc == EG_OK && i < c->gp->n_node; i++) rc = resolve_inputs(c, i, &r);
    free(r.id);
    free(r.mark);
    return rc;
}

/* ================= outputs, value_info ================= */

/* Do two shapes contradict each other where both are known? */
static int shapes_conflict(const eg_shape *a, const eg_shape *b) {
    if (a->rank < 0 || b->rank < 0) return 0;
    if (a->rank != b->rank) return 1;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] >= 0 && b->dim[i] >= 0 && a->dim[i] != b->dim[i]) return 1;
    return 0;
}

/* The shape a ValueInfoProto declares (rank -1 when none). */
static eg_shape declared_shape(const Onnx__ValueInfoProto *vi) {
    eg_tensor t;
    memset(&t, 0, sizeof t);
    t.shape.rank = -1;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
        !tp->tensor_type->shape || tp->tensor_type->shape->n_dim > EG_MAX_RANK)
        return t.shape;
    t.shape.rank = (int)tp->tensor_type->shape->n_dim;
    for (int i = 0; i < t.shape.rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tp->tensor_type->shape->dim[i];
        t.shape.dim[i] = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                                 d->dim_value >= 0 && d->dim_value <= EG_DIM_MAX
                             ? d->dim_value : -1;
    }
    return t.shape;
}

/* A graph output that is a graph input or a value has a shape already;
 * its declaration must agree (the writer keeps only one of the two). */
static eg_status check_output_decl(const ictx *c, const Onnx__ValueInfoProto *vi, const eg_tensor *t) {
    char a[160], b[160];
    eg_shape decl = declared_shape(vi);
    const Onnx__TypeProto *tp = vi->type;
    int dtype = tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type &&
                        tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0;
    if (dtype && t->dtype && dtype != t->dtype)
        return fail(c, EG_EFORMAT, "graph output '%s' is declared %s but is %s", t->name,
                    eg_dtype_name(dtype), eg_dtype_name(t->dtype));
    if (!shapes_conflict(&decl, &t->shape)) return EG_OK;
    return fail(c, EG_ESHAPE, "graph output '%s' is declared %s but is %s %s", t->name,
                eg_shape_str(&decl, NULL, a, sizeof a),
                t->flags & EG_TF_INPUT ? "the graph input" : "a value of shape",
                eg_shape_str(&t->shape, NULL, b, sizeof b));
}

static eg_status add_outputs(ictx *c) {
    eg_graph *g = c->g;
    g->output = malloc(sizeof(int) * (c->gp->n_output + 1));
    if (!g->output) return fail(c, EG_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = c->gp->output[i];
        int id = vi->name ? eg_find_tensor(g, vi->name) : -1;
        if (id < 0)
            return fail(c, EG_EGRAPH, "graph output '%s' is not defined (no node writes it, "
                        "and it is no graph input or initializer)", str(vi->name));
        if (g->tensor[id].flags & EG_TF_OUTPUT)
            return fail(c, EG_EGRAPH, "graph output '%s' is listed twice", vi->name);
        g->tensor[id].flags |= EG_TF_OUTPUT;
        g->output[g->n_outputs++] = id;
        eg_status rc = EG_OK;
        if (g->tensor[id].flags & (EG_TF_INPUT | EG_TF_INIT | EG_TF_SPARSE))
            rc = check_output_decl(c, vi, &g->tensor[id]);
        if (rc != EG_OK) return rc;
        if (g->tensor[id].vinfo) continue; /* a graph input too: one entry serves */
        rc = keep_vinfo(c, vi, &g->tensor[id]);
        if (rc != EG_OK) return rc;
        if (!(g->tensor[id].flags & (EG_TF_INIT | EG_TF_SPARSE))) c->vshape[id] = g->tensor[id].shape;
    }
    return EG_OK;
}

/* value_info of intermediate tensors: kept for export, and the shape an
 * opaque node's output gets. Entries for unknown names are dropped. */
static eg_status add_value_info(ictx *c) {
    for (size_t i = 0; i < c->gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = c->gp->value_info[i];
        int id = vi->name ? eg_find_tensor(c->g, vi->name) : -1;
        if (id < 0 || (c->g->tensor[id].flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_INIT | EG_TF_SPARSE)))
            continue;
        eg_status rc = keep_vinfo(c, vi, &c->g->tensor[id]);
        if (rc != EG_OK) return rc;
        c->vshape[id] = c->g->tensor[id].shape;
    }
    return EG_OK;
}

/* ================= structure, shapes ================= */

/* The file position of node id j (ids follow the file's order until the
 * nodes are sorted; Constants taken as values have none). */
static size_t file_index(const ictx *c, int j) {
    size_t i = 0;
    while (i + 1 < c->gp->n_node && c->node_of[i] != j) i++;
    return i;
}

/* A node on a cycle: its input that depends on its own output. */
static eg_status cycle(const ictx *c, int j, int k) {
    char at[NREF_LEN];
    const eg_node *n = &c->g->node[j];
    size_t i = file_index(c, j);
    node_ref(c->gp->node[i], i, at, sizeof at);
    if (k < n->n_in)
        return fail(c, EG_EGRAPH, "%s: input '%s' depends on the node's own output (the graph has "
                    "a cycle)", at, c->g->tensor[n->in[k]].name);
    return fail(c, EG_EGRAPH, "%s: '%s', which its subgraph reads, depends on the node's own "
                "output (the graph has a cycle)", at, c->g->tensor[n->in[k]].name);
}

static eg_status structure(ictx *c) {
    char msg[EG_ERRLEN];
    int j, k;
    eg_status rc = eg_index(c->g, msg, sizeof msg);
    if (rc == EG_OK && (rc = eg_toposort_at(c->g, &j, &k)) == EG_EGRAPH) return cycle(c, j, k);
    if (rc == EG_ENOMEM) return fail(c, rc, "out of memory");
    return rc == EG_OK ? EG_OK : fail(c, rc, "%s", msg);
}

/* An inferred shape must agree with the file's value_info where both know. */
static eg_status check_vinfo(const ictx *c, const eg_node *n) {
    char a[160], b[160];
    for (int k = 0; k < n->n_out; k++) {
        int t = n->out[k];
        if (t < 0) continue;
        const eg_shape *got = &c->g->tensor[t].shape, *file = &c->vshape[t];
        if (file->rank != -2 && shapes_conflict(got, file))
            return fail(c, EG_ESHAPE, "node '%s' (%s): output '%s' has shape %s but the file's "
                        "value_info says %s", n->name, eg_mop_table[n->mop].onnx,
                        c->g->tensor[t].name, eg_shape_str(got, NULL, a, sizeof a),
                        eg_shape_str(file, NULL, b, sizeof b));
    }
    return EG_OK;
}

/* Keep a model node opaque after all: its outputs go back to the file's
 * value_info shapes (or unknown). */
static void demote(ictx *c, eg_node *n) {
    n->kind = EG_KIND_OPAQUE;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && c->vshape[n->out[k]].rank != -2)
            c->g->tensor[n->out[k]].shape = c->vshape[n->out[k]];
        else if (n->out[k] >= 0)
            c->g->tensor[n->out[k]].shape.rank = -1;
}

/* Does float value b sit in a at axis ax, with dims of a after it (the
 * opset < 7 conv-bias form: A [N,C,H,W], B [C], axis 1)? */
static int channel_value(const eg_tensor *a, const eg_tensor *b, int ax, int ir) {
    if ((b->flags & EG_TF_INPUT) && ir >= 4) return 0; /* a default a caller may replace */
    if (!eg_shape_known(&a->shape) || !eg_shape_known(&b->shape) || b->dtype != EG_DT_FLOAT ||
        !b->data || !(b->flags & EG_TF_INIT) || ax < 0 ||
        ax + b->shape.rank >= a->shape.rank)
        return 0;
    for (int i = 0; i < b->shape.rank; i++)
        if (b->shape.dim[i] != a->shape.dim[ax + i]) return 0;
    return 1;
}

/* Before opset 7, Add/Mul(A, B) with broadcast = 1 and an axis that leaves
 * dims of A after B's (a constant [C] on NCHW at axis 1) reads B as B
 * with trailing 1s ([C,1,1]) in numpy's broadcasting: node j then reads
 * such a new value instead and is an ordinary numpy Add/Mul (the export
 * writes it back as broadcast = 1, axis, the [C] value). */
static eg_status legacy_channel(ictx *c, int j) {
    eg_node *n = &c->g->node[j];
    int id;
    if ((n->mop != EG_MOP_ADD && n->mop != EG_MOP_MUL && n->mop != EG_MOP_DIV) || n->in[0] < 0 || n->in[1] < 0 ||
        (n->attr.flags & (EG_AF_LEGACY_BCAST | EG_AF_HAS_AXIS)) != (EG_AF_LEGACY_BCAST | EG_AF_HAS_AXIS))
        return EG_OK;
    const eg_tensor *a = &c->g->tensor[n->in[0]], *b = &c->g->tensor[n->in[1]];
    int ax = n->attr.axis < 0 ? n->attr.axis + a->shape.rank : n->attr.axis;
    if (!channel_value(a, b, ax, (int)c->g->ir_version)) return EG_OK;
    eg_shape s = b->shape;
    int64_t numel = eg_shape_numel(&s);
    while (s.rank < a->shape.rank - ax) s.dim[s.rank++] = 1;
    size_t len = strlen(b->name) + 32;
    char *name = malloc(len);
    float *data = malloc(sizeof(float) * (size_t)(numel ? numel : 1));
    eg_status rc = name && data ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) {
        memcpy(data, b->data, sizeof(float) * (size_t)numel);
        snprintf(name, len, "%s_bcast", b->name);
        for (int k = 0; eg_find_tensor(c->g, name) != -1; k++) snprintf(name, len, "%s_bcast%d", b->name, k);
        rc = eg_add_tensor(c->g, name, &id); /* moves c->g->tensor */
    }
    free(name);
    if (rc != EG_OK) {
        free(data);
        return fail(c, EG_ENOMEM, "out of memory");
    }
    eg_tensor *t = &c->g->tensor[id], *old = &c->g->tensor[n->in[1]];
    t->dtype = EG_DT_FLOAT, t->shape = s, t->data = data, t->flags = EG_TF_INIT | EG_TF_ABSORBED;
    if (!(old->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED))) old->flags |= EG_TF_ABSORBED;
    n->in[1] = id;
    n->attr.flags &= ~(EG_AF_LEGACY_BCAST | EG_AF_HAS_AXIS);
    return EG_OK;
}

/* Model node j's shapes, kept opaque when outside its model op. */
static eg_status infer_model(ictx *c, int j, char *msg, size_t len) {
    eg_node *n = &c->g->node[j];
    if (n->kind != EG_KIND_MODEL) return EG_OK;
    eg_status rc = legacy_channel(c, j);
    if (rc != EG_OK) return rc;
    rc = eg_infer_node(c->g, j, msg, len);
    if (rc == EG_EUNSUPPORTED) {
        demote(c, n);
        return EG_OK;
    }
    if (rc != EG_OK) return fail(c, rc, "%s", msg);
    return check_vinfo(c, n);
}

/* One pass in order: model-op inference, then (cfold.c) the shape rules
 * of opaque nodes and constant folding, so a Reshape whose target the
 * pass has just folded is inferred as a model op. */
static eg_status infer(ictx *c) {
    char msg[EG_ERRLEN] = "";
    eg_cfold f;
    eg_status rc = eg_cfold_begin(&f, c->g);
    for (int j = 0; rc == EG_OK && j < c->g->n_nodes; j++)
        if ((rc = infer_model(c, j, msg, sizeof msg)) == EG_OK &&
            (rc = eg_cfold_node(&f, j, msg, sizeof msg)) != EG_OK)
            rc = fail(c, rc, "%s", msg);
    rc = eg_cfold_end(&f, rc, msg, sizeof msg);
    return rc == EG_OK || (c->err && c->err[0]) ? rc : fail(c, rc, "%s", msg);
}

/* Only opaque nodes keep their file identity. */
static void finish_nodes(eg_graph *g) {
    for (int j = 0; j < g->n_nodes; j++) {
        eg_node *n = &g->node[j];
        if (n->kind == EG_KIND_OPAQUE) continue;
        free(n->op_type), free(n->domain), free(n->proto);
        n->op_type = n->domain = NULL, n->proto = NULL, n->proto_len = 0;
    }
}

static eg_status init_vshape(ictx *c) {
    c->vshape = malloc(sizeof *c->vshape * (size_t)(c->g->n_tensors + 1));
    if (!c->vshape) return fail(c, EG_ENOMEM, "out of memory");
    for (int i = 0; i < c->g->n_tensors; i++) c->vshape[i].rank = -2;
    return EG_OK;
}

/* A Dropout read as an identity (parse_dropout) stays one only when
 * training_mode, if given, is a constant false and the mask output is read
 * by no node and is no graph output; then it keeps input 0 and output 0
 * (ratio and training_mode values are dropped once unread), otherwise it
 * is opaque. @pre inputs resolved, graph outputs flagged. */
static eg_status finish_dropouts(ictx *c) {
    eg_graph *g = c->g;
    int *uses = malloc(sizeof *uses * (size_t)(g->n_tensors + 1));
    if (!uses) return fail(c, EG_ENOMEM, "out of memory");
    eg_count_uses(g, uses);
    for (int j = 0; j < g->n_nodes; j++) {
        eg_node *n = &g->node[j];
        if (n->kind != EG_KIND_MODEL || !n->op_type || strcmp(n->op_type, "Dropout")) continue;
        const eg_tensor *tm = n->n_in > 2 && n->in[2] >= 0 ? &g->tensor[n->in[2]] : NULL;
        int mask = n->n_out > 1 ? n->out[1] : -1;
        if ((tm && (!(tm->flags & EG_TF_INIT) || (tm->flags & EG_TF_INPUT) || tm->dtype != EG_DT_BOOL ||
                    tm->raw_len != 1 || tm->raw[0] != 0)) ||
            (mask >= 0 && (uses[mask] || (g->tensor[mask].flags & EG_TF_OUTPUT)))) {
            n->kind = EG_KIND_OPAQUE;
            continue;
        }
        for (int k = 1; k < n->n_in; k++)
            if (n->in[k] >= 0 && !(g->tensor[n->in[k]].flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED)))
                g->tensor[n->in[k]].flags |= EG_TF_ABSORBED;
        n->n_in = 1, n->n_out = 1;
    }
    free(uses);
    return EG_OK;
}

static eg_status import_model(ictx *c) {
    eg_status rc = check_versions(c);
    if (rc == EG_OK) c->gp = c->m->graph, rc = make_shells(c);
    if (rc == EG_OK) rc = add_inputs(c);
    if (rc == EG_OK) rc = add_initializers(c);
    if (rc == EG_OK) rc = add_nodes(c);
    if (rc == EG_OK) rc = init_vshape(c);
    if (rc == EG_OK) rc = add_outputs(c);
    if (rc == EG_OK) rc = finish_dropouts(c);
    if (rc == EG_OK) rc = add_value_info(c);
    if (rc == EG_OK) rc = structure(c);
    if (rc == EG_OK) rc = infer(c);
    if (rc == EG_OK && eg_lower(c->g) != EG_OK) rc = fail(c, EG_ENOMEM, "out of memory");
    if (rc == EG_OK) finish_nodes(c->g);
    return rc;
}

/* ================= entry points ================= */

static void fill_opts(const eg_load_opts *in, size_t len, eg_load_opts *o) {
    memset(o, 0, sizeof *o);
    if (in) *o = *in;
    if (!o->max_file_bytes) o->max_file_bytes = EG_MAX_FILE;
    if (!o->max_depth) o->max_depth = EG_MAX_DEPTH;
    if (!o->max_decode_bytes)
        o->max_decode_bytes = len < (SIZE_MAX - (64u << 20)) / 2 ? 2 * len + (64u << 20) : SIZE_MAX;
}

eg_status eg_load_mem(const void *buf, size_t len, const char *name, const eg_load_opts *opts,
                      eg_graph **out, char *err, size_t errlen) {
    eg_load_opts o;
    egp_alloc a;
    char msg[EG_ERRLEN];
    ictx c = {NULL, name ? name : "(memory)", err, errlen, NULL, NULL, NULL, NULL};
    *out = NULL;
    fill_opts(opts, len, &o);
    if (len > o.max_file_bytes)
        return fail(&c, EG_ELIMIT, "larger than the limit of %zu bytes", o.max_file_bytes);
    for (int k = 0; k < o.n_dims; k++)
        if (!o.dims[k].name || !o.dims[k].name[0] || o.dims[k].value < 1 || o.dims[k].value > EG_DIM_MAX)
            return fail(&c, EG_EFORMAT, "a pinned dimension (--dim) needs a name and a size of 1 to %lld",
                        (long long)EG_DIM_MAX);
    egp_alloc_init(&a, o.max_decode_bytes);
    eg_status rc = egp_unpack(&onnx__model_proto__descriptor, &a, o.max_depth, buf, len,
                              (ProtobufCMessage **)&c.m, msg, sizeof msg);
    if (rc != EG_OK) return fail(&c, rc, "not a valid ONNX model: %s", msg);
    c.o = &o;
    c.dim_used = calloc((size_t)o.n_dims + 1, sizeof *c.dim_used);
    c.g = eg_graph_new();
    rc = c.g && c.dim_used ? import_model(&c) : fail(&c, EG_ENOMEM, "out of memory");
    for (int k = 0; rc == EG_OK && k < o.n_dims; k++)
        if (!c.dim_used[k])
            rc = fail(&c, EG_EFORMAT,
                      "no graph input, output or value_info has a dimension named '%s', nor is it "
                      "INPUT:AXIS for an axis of a graph input without a size (--dim)",
                      o.dims[k].name ? o.dims[k].name : "");
    free(c.dim_used);
    protobuf_c_message_free_unpacked(&c.m->base, &a.pc);
    free(c.node_of);
    free(c.vshape);
    if (rc != EG_OK) {
        eg_free(c.g);
        return rc;
    }
    *out = c.g;
    return EG_OK;
}

eg_status eg_load(const char *path, const eg_load_opts *opts, eg_graph **out, char *err,
                  size_t errlen) {
    uint8_t *buf;
    size_t len;
    eg_load_opts o = {0};
    *out = NULL;
    if (opts) o = *opts; /* the limits left 0 eg_load_mem fills from the file's size */
    if (!o.model_path) o.model_path = path; /* external data lies beside it */
    eg_status rc = egp_read_file(path, o.max_file_bytes ? o.max_file_bytes : EG_MAX_FILE, &buf, &len, err, errlen);
    if (rc != EG_OK) return rc;
    rc = eg_load_mem(buf, len, path, &o, out, err, errlen);
    free(buf);
    return rc;
}

