/* out_build.c - the exporter's building blocks (out_int.h): fresh names,
 * values and their external data, the node builder, the error message;
 * what onnx_out.c and out_ops.c write nodes and values with. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/out_int.h"
#include "shapes/infer.h"

/* The size from which a value goes to the external data file: onnx's own
 * default threshold (onnx.save_model's size_threshold). */
#define EXT_MIN_BYTES 1024

/* Field numbers, from the descriptors rather than copied by hand. */
uint32_t eo_field_id(const ProtobufCMessageDescriptor *d, const char *name) {
    return protobuf_c_message_descriptor_get_field_by_name(d, name)->id;
}

OUT_PRINTF(3, 4)
eg_status eo_fail(const octx *c, eg_status rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    eg_verrf(c->err, c->errlen, rc, fmt, ap);
    va_end(ap);
    return rc;
}

int eo_oom(const octx *c) { return c->nodes.oom || c->inits.oom || c->ios.oom || c->ext.oom; }

/* ================= names ================= */

/* Does the output file name tensor i? (A dead value is dropped, so its
 * name is free again: that keeps export a fixed point after one round.) */
static int written(const octx *c, int i) {
    const eg_tensor *t = &c->g->tensor[i];
    return t->producer >= 0 || (t->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_SPARSE | EG_TF_PINNED)) ||
           eo_value_live(c, i);
}

/* A fresh tensor name "base_tag<N>", unused in the output. @return a
 * malloc'd string, or NULL. */
char *eo_fresh_name(octx *c, const char *base, const char *tag) {
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

const char *eo_tname(const octx *c, int t) { return t >= 0 ? c->g->tensor[t].name : ""; }

/* ================= values ================= */

/* The array arr of n elements used of *cap, each size bytes, with room
 * for one more (grown by doubling, 8 at first). @return it, moved or
 * not, or NULL out of memory (arr is then unchanged). */
static void *room_for_one(void *arr, int n, int *cap, size_t size) {
    if (arr && n < *cap) return arr;
    int nc = *cap ? 2 * *cap : 8;
    void *q = realloc(arr, size * (size_t)nc);
    if (q) *cap = nc;
    return q;
}

eg_status eo_note_added(octx *c, const char *name, int dtype, const eg_shape *s, int tensor) {
    if (c->g->ir_version >= 4) return EG_OK;
    new_value *va = room_for_one(c->added, c->n_added, &c->cap_added, sizeof *va);
    if (!va) return EG_ENOMEM;
    c->added = va;
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
eg_status eo_put_value(octx *c, const char *name, int dtype, const eg_shape *s,
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
    egp_buf_message(&c->inits, eo_field_id(&onnx__graph_proto__descriptor, "initializer"), &tp.base);
    return added ? eo_note_added(c, name, dtype, s, tensor) : EG_OK;
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
char *eo_put_ints(octx *c, const char *base, const char *tag, const int64_t *v, int n) {
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
    new_ints *vi = room_for_one(c->ints, c->n_ints, &c->cap_ints, sizeof *vi);
    if (!vi) return NULL;
    c->ints = vi;
    char *name = eo_fresh_name(c, base, tag);
    if (!name) return NULL;
    if (eo_put_value(c, name, EG_DT_INT64, &s, raw, 8 * (size_t)n, 1, -1) != EG_OK ||
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
char *eo_put_fill(octx *c, const char *base, const char *tag, float v, const eg_shape *s) {
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
    /* One new fill per value and size: two BatchNormalizations of one
     * width share it, as they share the absorbed one when the file is read
     * again (a round trip is a fixed point) */
    for (int k = 0; k < c->n_fills; k++)
        if (c->fills[k].rank == s->rank && c->fills[k].numel == n && !memcmp(&c->fills[k].v, &v, sizeof v))
            return strdup(c->fills[k].name);
    new_fill *vf = room_for_one(c->fills, c->n_fills, &c->cap_fills, sizeof *vf);
    if (!vf) return NULL;
    c->fills = vf;
    uint8_t *raw = malloc(4 * (size_t)(n > 0 ? n : 1));
    char *name = raw ? eo_fresh_name(c, base, tag) : NULL;
    uint32_t bits;
    memcpy(&bits, &v, 4);
    for (int64_t k = 0; raw && k < n; k++)
        for (int b = 0; b < 4; b++) raw[4 * k + b] = (uint8_t)(bits >> (8 * b));
    new_fill *f = &c->fills[c->n_fills];
    if (name && (eo_put_value(c, name, EG_DT_FLOAT, s, raw, 4 * (size_t)n, 1, -1) != EG_OK ||
                 !(f->name = strdup(name)))) {
        free(name);
        name = NULL;
    }
    if (name) f->v = v, f->rank = s->rank, f->numel = n, c->n_fills++;
    free(raw);
    return name;
}

/* ================= node builder ================= */

eg_status eo_nb_init(nbuild *b, const char *op_type, int n_in, int n_out) {
    memset(b, 0, sizeof *b);
    onnx__node_proto__init(&b->np);
    b->np.op_type = (char *)op_type;
    b->in = n_in <= 8 ? b->in_small : malloc(sizeof(char *) * (size_t)n_in);
    b->out = n_out <= 8 ? b->out_small : malloc(sizeof(char *) * (size_t)n_out);
    if (!b->in || !b->out) return EG_ENOMEM;
    b->np.input = b->in, b->np.output = b->out;
    return EG_OK;
}

void eo_nb_free(nbuild *b) {
    if (b->in != b->in_small) free(b->in);
    if (b->out != b->out_small) free(b->out);
    for (int k = 0; k < b->n_owned; k++) free(b->owned[k]);
}

/* Keep a malloc'd string alive as long as the builder. @return s */
char *eo_nb_own(nbuild *b, char *s) {
    if (s && b->n_owned < 4) b->owned[b->n_owned++] = s;
    return s;
}

void eo_nb_in(nbuild *b, const char *name) { b->in[b->np.n_input++] = (char *)name; }

/* Add a malloc'd name as an input, owned by the builder. @return s */
const char *eo_nb_in_owned(nbuild *b, char *s) {
    if (s) eo_nb_in(b, eo_nb_own(b, s));
    return s;
}
void eo_nb_out(nbuild *b, const char *name) { b->out[b->np.n_output++] = (char *)name; }

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

void eo_nb_int(nbuild *b, const char *name, int64_t v) {
    Onnx__AttributeProto *a = nb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1, a->i = v;
}

void eo_nb_float(nbuild *b, const char *name, float v) {
    Onnx__AttributeProto *a = nb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1, a->f = v;
}

void eo_nb_str(nbuild *b, const char *name, const char *v) {
    Onnx__AttributeProto *a = nb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.len = strlen(v), a->s.data = (uint8_t *)v;
}

void eo_nb_ints(nbuild *b, const char *name, const int64_t *v, int n) {
    size_t k = b->np.n_attribute;
    Onnx__AttributeProto *a = nb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    memcpy(b->ints[k], v, sizeof(int64_t) * (size_t)n);
    a->n_ints = (size_t)n, a->ints = b->ints[k];
}

/* Name the node (unique) and append it. */
eg_status eo_nb_emit(octx *c, nbuild *b, const char *want) {
    char *name = node_name(c, want);
    if (!name) return EG_ENOMEM;
    b->np.name = name;
    egp_buf_message(&c->nodes, eo_field_id(&onnx__graph_proto__descriptor, "node"), &b->np.base);
    free(name);
    return eo_oom(c) ? EG_ENOMEM : EG_OK;
}

/* Whether a value is written: a value the importer absorbed, or a
 * Constant, that nothing reads any more is dropped. */
int eo_value_live(const octx *c, int i) {
    const eg_tensor *t = &c->g->tensor[i];
    if (!(t->flags & EG_TF_INIT) || (t->flags & EG_TF_SPARSE)) return 0;
    if (c->uses[i] || c->revived[i] || (t->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED)))
        return 1;
    return !(t->flags & (EG_TF_ABSORBED | EG_TF_CONST));
}

