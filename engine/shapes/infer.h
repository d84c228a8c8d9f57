/* infer.h - dtype and shape inference of the model operators (prefix
 * eg_infer), and eg_resolve, the one way to make a graph whole again after
 * an edit: index, sort, infer. Opaque nodes' shapes are cfold.h's. */
#ifndef EG_INFER_H
#define EG_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "ir/graph.h"

/* Infer dtype and shape of node id's outputs from its inputs. Opaque nodes
 * keep what they have. Resolves auto_pad into explicit pads once spatial
 * dims are known. @pre inputs come earlier in topological order.
 * @return EG_OK; EG_ESHAPE with "node 'name' (Op): ..." in err;
 *         EG_EUNSUPPORTED when the node is valid ONNX the model op does not
 *         cover (a 1-D Conv, a non-constant Reshape shape...): the importer
 *         then keeps it opaque. */
eg_status eg_infer_node(eg_graph *g, int id, char *err, size_t errlen);

/* eg_infer_node over every node in order. @return as eg_infer_node. */
eg_status eg_infer_all(eg_graph *g, char *err, size_t errlen);

/* After an edit: producers indexed, nodes sorted (eg_toposort), dtypes
 * and shapes inferred (eg_infer_all). @return as those. */
eg_status eg_resolve(eg_graph *g, char *err, size_t errlen);

/* Read an int64 constant (a value with dtype INT64) into out[max].
 * @return its element count, or -1 when t has no int64 value or more than
 *         max elements. */
int eg_const_ints(const eg_tensor *t, int64_t *out, int max);

#endif
