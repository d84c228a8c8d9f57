/* cfold.h - shape rules for every standard ONNX operator (also for nodes
 * the engine keeps opaque: only their output shapes become known) and
 * constant folding at load (prefix eg_cfold_).
 *
 * The importer walks its nodes once in topological order. For each node,
 * after the model-operator inference of infer.c, eg_cfold_node
 *   1. infers an opaque node's output dtypes and shapes from its ONNX
 *      attributes and its inputs (an unknown input leaves the output
 *      unknown; a real mismatch is EG_ESHAPE naming the node);
 *   2. folds a node whose inputs are all values (initializers, Constants,
 *      earlier folds) or which is a Shape/Size of a fully known shape, when
 *      its op is in the foldable set (Shape, Size, Constant, Identity, Cast,
 *      Gather, Unsqueeze, Squeeze, Reshape, Flatten, Expand, Concat, Slice,
 *      ConstantOfShape, Range, Equal, Less, Greater, Where, Not, Add, Sub,
 *      Mul, Div, ReduceProd, Floor, Ceil, Neg, Abs) and every output has at
 *      most EG_CFOLD_MAX_ELEMS elements, and, when its output is
 *      floating point, it is a scalar or a ConstantOfShape, Constant or
 *      Range (float weight arithmetic such as a Concat of weights is left
 *      to eg_fold_weights after rewriting): its outputs become values
 *      (EG_TF_INIT | EG_TF_CONST, dropped on export once unused) and the
 *      node is dropped by eg_cfold_end. A node writing a graph output is
 *      never folded (its shapes are still inferred).
 * So the Shape -> Gather -> Unsqueeze -> Concat arithmetic exporters write
 * in front of a Reshape becomes a constant target before the Reshape is
 * inferred, in one linear pass.
 *
 * Worked example (the importer's loop):
 *
 *     eg_cfold f;
 *     eg_status rc = eg_cfold_begin(&f, g);
 *     for (int j = 0; rc == EG_OK && j < g->n_nodes; j++) {
 *         // ... model-operator inference of node j ...
 *         rc = eg_cfold_node(&f, j, err, errlen);
 *     }
 *     rc = eg_cfold_end(&f, rc, err, errlen);
 */
#ifndef EG_CFOLD_H
#define EG_CFOLD_H

#include <stddef.h>

#include "ir/graph.h"

#define EG_CFOLD_MAX_ELEMS ((int64_t)1 << 24) /* per folded output */

typedef struct {
    eg_graph *g;
    unsigned char *drop; /* per node: folded, removed by eg_cfold_end */
    int n_folded;        /* nodes folded */
    int n_shaped;        /* opaque nodes given output shapes */
} eg_cfold;

/* Start a pass over g. @return EG_OK or EG_ENOMEM. */
eg_status eg_cfold_begin(eg_cfold *f, eg_graph *g);

/* Shape rules and folding for node id (see the header comment).
 * @pre the nodes before id are done; g's nodes in topological order and
 *      still carrying their NodeProto bytes (during import).
 * @return EG_OK; EG_ESHAPE with "node 'name' (Op): ..." in err; EG_ENOMEM. */
eg_status eg_cfold_node(eg_cfold *f, int id, char *err, size_t errlen);

/* 1 when every output cell of the default-domain operator op_type (with
 * n_in inputs) is a cell of its inputs first .. end-1, the others being
 * indices, shapes or a condition (Gather, Reshape, Concat, Where...): a
 * value's range (range.h) passes through it. */
int eg_cfold_moved_from(const char *op_type, int n_in, int *first, int *end);

/* End the pass: when rc is EG_OK, drop the folded nodes and re-index.
 * Always frees the pass's memory. @return rc, or the re-index status. */
eg_status eg_cfold_end(eg_cfold *f, eg_status rc, char *err, size_t errlen);

#endif
