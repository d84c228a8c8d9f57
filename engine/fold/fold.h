/* fold.h - float32 kernels of the opspecs operators, weight folding and
 * the engine's few built-in rewrites (prefix eg_), kept apart from the
 * rule-driven rewrites of the search.
 *
 * Overview. eg_fkern_eval computes any opspecs operator on float32 data
 * with the exact conventions of ops.h (NCHW/OIHW, centred SAME padding,
 * avg pool dividing by kh*kw, split by an explicit size, the constant
 * operators). eg_fold_weights uses it to replace every weight-only
 * subgraph (eg_mark_weight_only) by the initializers it computes.
 *
 */
#ifndef EG_FOLD_H
#define EG_FOLD_H

#include <stddef.h>
#include <stdint.h>

#include "ir/graph.h"

/* Float32 reference kernel of every opspecs operator. in[k] has shape
 * in_shape[k] (row-major); out has room for the shape ops_infer_shape
 * gives and overlaps no input. err may be NULL.
 * @return EG_OK, EG_ESHAPE (shapes or params invalid, message in err),
 *         EG_ENOMEM. */
eg_status eg_fkern_eval(ops_op op, const int32_t *param, const ten_shape *in_shape,
                        const float *const *in, float *out, char *err, size_t errlen);

/* Float32 evaluation of node n of g, any kind but opaque: an opspecs
 * operator through eg_fkern_eval, a model operator with ONNX's meaning
 * (Conv with its pads, strides, group and bias; pools with
 * count_include_pad; Gemm with alpha, beta, transposes and C broadcast;
 * numpy MatMul; Softmax along its axis; inference BatchNormalization...).
 * in[k] is the data of input k (NULL for an omitted input and for a
 * non-float one such as Reshape's shape); out[k] has room for the numel of
 * output k's shape. Shapes come from g.
 * @pre shapes inferred. @return EG_OK; EG_EUNSUPPORTED (an opaque node, a
 *      shape not known, a float input without data, an omitted output, a
 *      conv or pool dim over the opspecs limits) or EG_ESHAPE, with
 *      "node 'name' (Op): ..." in err (err may be NULL). */
eg_status eg_fkern_node(const eg_graph *g, const eg_node *n, const float *const *in,
                        float *const *out, char *err, size_t errlen);

/* eg_fkern_node for the model operators weight folding evaluates:
 * Identity, Reshape, Flatten (copies), Transpose (any perm), Add and Mul
 * (numpy broadcasting); out is output 0.
 * @return 1 when out was written, 0 when the node is not one of these or
 *         eg_fkern_node refused it. */
int eg_fkern_model(const eg_graph *g, const eg_node *n, const float *const *in, float *out);

/* A new float32 initializer named "<base>_<tag>" (or with a number added
 * when that is taken), shape s, owning data (malloc'd; freed here on
 * failure). @return EG_OK with *id set, or EG_ENOMEM. */
eg_status eg_add_float_init(eg_graph *g, const char *base, const char *tag, const eg_shape *s,
                            float *data, int *id);

/* Make every reader of tensor from (node inputs; not graph outputs) read
 * tensor to instead. @return the number of inputs changed. */
int eg_replace_uses(eg_graph *g, int from, int to);

/* Drop every non-opaque node none of whose outputs is read (by a node or
 * as a graph output), repeatedly; initializers only dropped nodes read are
 * flagged EG_TF_ABSORBED so export leaves them out. Keeps the order.
 * @pre topological order. @return EG_OK, EG_ENOMEM, EG_EGRAPH; *n_removed
 *      (may be NULL) counts the nodes dropped. */
eg_status eg_drop_dead(eg_graph *g, int *n_removed, char *err, size_t errlen);

/* Fold weight-only nodes whose outputs feed non-weight-only nodes or
 * graph outputs into float32 initializers: such an output tensor becomes
 * the initializer itself (its name, unique already, is kept, so graph
 * outputs keep theirs). Works for opspecs nodes and the model operators of
 * eg_fkern_model; other weight-only nodes stay (with their inputs folded),
 * and so do those whose value (1 MiB or more) would copy an initializer
 * (1 MiB or more) that a node left in the graph or another such value
 * still reads (a tied embedding's transpose, a shared layer scaled per
 * layer): the runtime folds them at load, and the file does not store the
 * weight twice.
 * Then drops dead nodes, re-indexes, sorts and re-infers.
 * @pre eg_index and eg_toposort succeeded, shapes inferred.
 * @return EG_OK with *n_folded (may be NULL) the number of tensors made
 *         initializers; EG_ENOMEM; EG_EGRAPH/EG_ESHAPE with a message. */
eg_status eg_fold_weights(eg_graph *g, int *n_folded, char *err, size_t errlen);

#endif
