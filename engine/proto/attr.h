/* attr.h - an opaque node's attributes, read from the NodeProto bytes it
 * carries (prefix eg_opaque_): what lowering (onnx/lower.c) and the
 * built-ins (pipeline/builtin.c) ask of an operator they did not import
 * as a model op. No protobuf types here, so its users need not see the
 * generated onnx.pb-c.h.
 */
#ifndef EG_ATTR_H
#define EG_ATTR_H

#include <stdint.h>

#include "ir/graph.h"

/* 1 when opaque node n's attributes are exactly the count float
 * constants c with exactly their values, one left out only where its value
 * is ONNX's default. */
int eg_opaque_consts_are(const eg_node *n, const ops_onnx_const *c, int count);

/* Opaque node n's integer attributes: for each of the count names, its
 * values (an int is one value; at most max) into vals[k * max ..] and
 * their number into n_vals[k], -1 when absent. @return 0, or -1 when the node has another attribute, one
 * of these is not an int or ints, or has more than max values. */
int eg_opaque_int_attrs(const eg_node *n, const char *const *names, int count, int64_t *vals, int *n_vals,
                        int max);

/* 1 when opaque nodes a and b compute the same function of their inputs:
 * the same default-domain operator, not a random one, with the same
 * attributes byte for byte and none holding a subgraph. */
int eg_opaque_same(const eg_node *a, const eg_node *b);

#endif
