/* in_values.c - ONNX import of values: tensor types, initializer data (inline
 * or external), graph inputs and initializers; and the importer's message
 * formatter, which every importer file uses (in_int.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/in_int.h"

/* ================= messages and small helpers (in_int.h) ================= */

IN_PRINTF(3, 4)
eg_status ei_fail(const ictx *c, eg_status rc, const char *fmt, ...) {
    char prefix[EG_ERRLEN];
    snprintf(prefix, sizeof prefix, "%s: ", c->name);
    va_list ap;
    va_start(ap, fmt);
    eg_verrf_after(c->err, c->errlen, rc, prefix, fmt, ap);
    va_end(ap);
    return rc;
}

const char *ei_str(const char *s) { return s ? s : ""; }

/* Do two shapes contradict each other where both are known? */
int ei_shapes_conflict(const eg_shape *a, const eg_shape *b) {
    if (a->rank < 0 || b->rank < 0) return 0;
    if (a->rank != b->rank) return 1;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] >= 0 && b->dim[i] >= 0 && a->dim[i] != b->dim[i]) return 1;
    return 0;
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
    if (tp->segment) return ei_fail(c, EG_EUNSUPPORTED, "%s '%s' is segmented", what, t->name);
    if (!tp->has_data_type || tp->data_type == EG_DT_UNDEFINED)
        return ei_fail(c, EG_EFORMAT, "%s '%s' has no data type", what, t->name);
    if (tp->n_dims > EG_MAX_RANK)
        return ei_fail(c, EG_EUNSUPPORTED, "%s '%s' has rank %zu (at most %d)", what, t->name,
                       tp->n_dims, EG_MAX_RANK);
    t->dtype = tp->data_type;
    t->shape.rank = (int)tp->n_dims;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0 || tp->dims[i] > EG_DIM_MAX)
            return ei_fail(c, EG_EFORMAT, "%s '%s' has dim %lld", what, t->name, (long long)tp->dims[i]);
        t->shape.dim[i] = tp->dims[i];
    }
    *numel = eg_shape_numel(&t->shape);
    if (*numel < 0 || (uint64_t)*numel > SIZE_MAX / 16)
        return ei_fail(c, EG_EFORMAT, "%s '%s' has too many elements", what, t->name);
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
        return ei_fail(c, EG_EFORMAT, "%s '%s': raw_data has %zu bytes, its shape needs %zu", what,
                       t->name, tp->raw_data.len, bytes);
    if (src == 0)
        return ei_fail(c, EG_EFORMAT, "%s '%s': %zu values stored, its shape needs %lld", what,
                       t->name, typed_count(tp, t->dtype), (long long)numel);
    uint8_t *dst = malloc(bytes ? bytes : 1);
    if (!dst) return ei_fail(c, EG_ENOMEM, "out of memory for %s '%s'", what, t->name);
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
            return ei_str(tp->external_data[i]->value);
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
        return ei_fail(c, EG_EUNSUPPORTED, "initializer '%s' keeps its data in an external file (%s), and the model was "
                       "read from memory: load it from its file, or with onnx.load (which reads the data in)",
                       t->name, loc ? loc : "?");
    if (!loc || !safe_location(loc))
        return ei_fail(c, EG_EFORMAT, "initializer '%s': external data location '%s' is not a relative path inside "
                       "the model's directory", t->name, loc ? loc : "");
    if ((off && parse_count(off, &offset)) || (len && parse_count(len, &length)))
        return ei_fail(c, EG_EFORMAT, "initializer '%s': external data offset '%s' or length '%s' is no byte count",
                       t->name, off ? off : "", len ? len : "");
    if (length != bytes)
        return ei_fail(c, EG_EFORMAT, "initializer '%s': external data has %llu bytes, its shape needs %zu", t->name,
                       (unsigned long long)length, bytes);
    const char *slash = strrchr(c->o->model_path, '/');
    size_t dir = slash ? (size_t)(slash - c->o->model_path) + 1 : 0, n = dir + strlen(loc) + 1;
    char *path = malloc(n);
    if (!path) return ei_fail(c, EG_ENOMEM, "out of memory");
    memcpy(path, c->o->model_path, dir);
    strcpy(path + dir, loc);
    eg_status rc = egp_read_range(path, offset, length, data, msg, sizeof msg);
    free(path);
    return rc == EG_OK ? EG_OK : ei_fail(c, rc, "initializer '%s': external data: %s", t->name, msg);
}

/* Load a TensorProto as t's value. Non-float graph initializers (is_init)
 * also keep their bytes for export; types with no fixed width keep only
 * them. An initializer's external data is read in: the value, and the
 * bytes kept, are as if the file held it inline (and g->external says the
 * export writes such values to a file of its own). */
eg_status ei_load_value(const ictx *c, const Onnx__TensorProto *tp, const char *what,
                        eg_tensor *t, int is_init) {
    int64_t numel = 0;
    Onnx__TensorProto inline_tp;
    uint8_t *ext = NULL;
    eg_status rc = value_shape(c, tp, what, t, &numel);
    if (rc != EG_OK) return rc;
    if (is_external(tp)) {
        size_t size = eg_dtype_size(t->dtype);
        if (!is_init || !size)
            return ei_fail(c, EG_EUNSUPPORTED, "%s '%s' keeps its data in an external file (%s): read for "
                           "initializers of fixed-width types only", what, t->name, ei_str(ext_value(tp, "location")));
        if ((uint64_t)numel > (uint64_t)SIZE_MAX / size)
            return ei_fail(c, EG_ELIMIT, "%s '%s' is too large", what, t->name);
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
        rc = ei_fail(c, EG_ENOMEM, "out of memory");
    free(ext);
    return rc;
}

/* ================= graph inputs, initializers ================= */

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
eg_status ei_keep_vinfo(const ictx *c, const Onnx__ValueInfoProto *vi, eg_tensor *t) {
    Onnx__ValueInfoProto *pinned;
    free(t->vinfo);
    t->vinfo = NULL;
    if (pin_dims(c, vi, (t->flags & EG_TF_INPUT) != 0, &pinned) != EG_OK) return ei_fail(c, EG_ENOMEM, "out of memory");
    if (pinned) vi = pinned;
    eg_status rc = egp_pack(&vi->base, &t->vinfo, &t->vinfo_len) == EG_OK ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK && !(t->flags & (EG_TF_INIT | EG_TF_SPARSE))) rc = read_type(vi->type, t);
    if (pinned) onnx__value_info_proto__free_unpacked(pinned, NULL);
    return rc == EG_OK ? EG_OK : ei_fail(c, EG_ENOMEM, "out of memory");
}

eg_status ei_add_inputs(ictx *c) {
    eg_graph *g = c->g;
    g->input = malloc(sizeof(int) * (c->gp->n_input + 1));
    if (!g->input) return ei_fail(c, EG_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = c->gp->input[i];
        int id;
        if (!vi->name || !vi->name[0]) return ei_fail(c, EG_EFORMAT, "graph input %zu has no name", i);
        eg_status rc = eg_add_tensor(g, vi->name, &id);
        if (rc == EG_EGRAPH) return ei_fail(c, rc, "graph input '%s' is listed twice", vi->name);
        if (rc != EG_OK) return ei_fail(c, rc, "out of memory");
        g->tensor[id].flags |= EG_TF_INPUT;
        g->input[g->n_inputs++] = id;
        if ((rc = ei_keep_vinfo(c, vi, &g->tensor[id])) != EG_OK) return rc;
    }
    return EG_OK;
}

/* A named value: a new tensor, or a graph input it gives a default to. */
static eg_status value_tensor(ictx *c, const char *name, const char *what, int *id) {
    if (!name || !name[0]) return ei_fail(c, EG_EFORMAT, "an %s has no name", what);
    *id = eg_find_tensor(c->g, name);
    if (*id >= 0 && (c->g->tensor[*id].flags & (EG_TF_INIT | EG_TF_SPARSE)))
        return ei_fail(c, EG_EGRAPH, "%s '%s' is defined twice", what, name);
    if (*id >= 0) return EG_OK;
    eg_status rc = eg_add_tensor(c->g, name, id);
    return rc == EG_OK ? EG_OK : ei_fail(c, rc, "out of memory");
}

/* An initializer giving a graph input its default must fit the input's
 * declaration (the writer keeps the declaration and regenerates the value). */
static eg_status check_input_default(const ictx *c, const eg_tensor *t, int dtype,
                                     const eg_shape *decl) {
    char a[160], b[160];
    if (dtype && t->dtype != dtype)
        return ei_fail(c, EG_EFORMAT, "graph input '%s' is declared %s but its initializer is %s",
                       t->name, eg_dtype_name(dtype), eg_dtype_name(t->dtype));
    if (ei_shapes_conflict(decl, &t->shape))
        return ei_fail(c, EG_ESHAPE, "graph input '%s' is declared %s but its initializer is %s",
                       t->name, eg_shape_str(decl, NULL, a, sizeof a),
                       eg_shape_str(&t->shape, NULL, b, sizeof b));
    return EG_OK;
}

eg_status ei_add_initializers(ictx *c) {
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
        rc = ei_load_value(c, tp, "initializer", t, 1);
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
            return ei_fail(c, EG_EUNSUPPORTED, "sparse initializer '%s' keeps its data in an external file (%s): "
                           "read for dense initializers only", t->name, ei_str(ext_value(sp->values, "location")));
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
