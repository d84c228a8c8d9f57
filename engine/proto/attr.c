/* attr.c - an opaque node's attributes read from its NodeProto (attr.h),
 * and egp_attr / egp_attr_is (onnx_pb.h), the one attribute lookup the
 * importer and these readers share. */
#include "proto/attr.h"

#include <stdlib.h>
#include <string.h>

#include "proto/onnx_pb.h"

const Onnx__AttributeProto *egp_attr(const Onnx__NodeProto *np, const char *name) {
    for (size_t i = 0; i < np->n_attribute; i++)
        if (np->attribute[i]->name && strcmp(np->attribute[i]->name, name) == 0) return np->attribute[i];
    return NULL;
}

int egp_attr_is(const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType t) {
    return a->has_type && a->type == t;
}

int eg_opaque_int_attrs(const eg_node *n, const char *const *names, int count, int64_t *vals, int *n_vals,
                        int max) {
    if (n->kind != EG_KIND_OPAQUE || !n->proto) return -1;
    Onnx__NodeProto *np = onnx__node_proto__unpack(NULL, n->proto_len, n->proto);
    size_t present = 0;
    int ok = np != NULL;
    for (int k = 0; ok && k < count; k++) {
        const Onnx__AttributeProto *a = egp_attr(np, names[k]);
        n_vals[k] = -1;
        if (!a) continue;
        present++;
        if (a->ref_attr_name) ok = 0;
        else if (egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) && max >= 1)
            vals[k * max] = a->i, n_vals[k] = 1;
        else if (egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) && a->n_ints <= (size_t)max) {
            for (size_t i = 0; i < a->n_ints; i++) vals[k * max + (int)i] = a->ints[i];
            n_vals[k] = (int)a->n_ints;
        } else {
            ok = 0;
        }
    }
    ok = ok && np->n_attribute == present; /* no attribute beyond them */
    if (np) onnx__node_proto__free_unpacked(np, NULL);
    return ok ? 0 : -1;
}

int eg_opaque_consts_are(const eg_node *n, const ops_onnx_const *c, int count) {
    if (n->kind != EG_KIND_OPAQUE || !n->proto) return 0;
    Onnx__NodeProto *np = onnx__node_proto__unpack(NULL, n->proto_len, n->proto);
    size_t present = 0;
    int ok = np != NULL;
    for (int k = 0; ok && k < count; k++) {
        const Onnx__AttributeProto *a = egp_attr(np, c[k].name);
        if (!a) {
            ok = c[k].is_default;
            continue;
        }
        present++;
        ok = !a->ref_attr_name && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) &&
             a->f == c[k].value;
    }
    ok = ok && np->n_attribute == present; /* no attribute beyond them */
    if (np) onnx__node_proto__free_unpacked(np, NULL);
    return ok;
}

/* Operators of the default domain whose output is not a function of their
 * inputs and attributes: two such nodes are never one. */
static int is_random(const char *op_type) {
    static const char *const random_ops[] = {"RandomNormal",     "RandomUniform", "RandomNormalLike",
                                             "RandomUniformLike", "Multinomial",   "Bernoulli",
                                             "Dropout"};
    for (size_t i = 0; i < sizeof random_ops / sizeof random_ops[0]; i++)
        if (!strcmp(op_type, random_ops[i])) return 1;
    return 0;
}

/* 1 when attribute a holds a subgraph, or refers to a function's. */
static int attr_unsafe(const Onnx__AttributeProto *a) {
    return a->ref_attr_name || a->g || a->n_graphs || egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH) ||
           egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS);
}

static int attr_bytes_equal(const Onnx__AttributeProto *a, const Onnx__AttributeProto *b) {
    uint8_t *pa = NULL, *pb = NULL;
    size_t la = 0, lb = 0;
    int same = egp_pack(&a->base, &pa, &la) == EG_OK && egp_pack(&b->base, &pb, &lb) == EG_OK && la == lb &&
               memcmp(pa, pb, la) == 0;
    free(pa);
    free(pb);
    return same;
}

int eg_opaque_same(const eg_node *a, const eg_node *b) {
    if (a->kind != EG_KIND_OPAQUE || b->kind != EG_KIND_OPAQUE || !a->proto || !b->proto) return 0;
    if (strcmp(a->op_type, b->op_type) || strcmp(a->domain, b->domain)) return 0;
    if (!eg_default_domain(a->domain) || is_random(a->op_type)) return 0;
    Onnx__NodeProto *pa = onnx__node_proto__unpack(NULL, a->proto_len, a->proto);
    Onnx__NodeProto *pb = onnx__node_proto__unpack(NULL, b->proto_len, b->proto);
    int same = pa && pb && pa->n_attribute == pb->n_attribute;
    /* the same attributes in the same order, byte for byte: a different
     * spelling of equal attributes only misses a merge */
    for (size_t k = 0; same && k < pa->n_attribute; k++)
        same = !attr_unsafe(pa->attribute[k]) && attr_bytes_equal(pa->attribute[k], pb->attribute[k]);
    if (pa) onnx__node_proto__free_unpacked(pa, NULL);
    if (pb) onnx__node_proto__free_unpacked(pb, NULL);
    return same;
}
