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
 * The built-ins run around the search:
 *   eg_builtin_pre   Identity removal; BatchNormalization folded into the
 *                    Conv before it; a Conv's bias split off into
 *                    bias(1; conv2d, [C]), the importer's form, which
 *                    rules see and the export writes as one Conv;
 *                    Relu fused into the conv before it; NaN guards on
 *                    values proved finite (range.h) dropped;
 *                    MatMul [1,s,k] x [k,n] as Reshape -> matmul -> Reshape
 *                    (rule-matchable); common subexpressions merged; dead
 *                    nodes dropped.
 *   eg_builtin_post  weight folding; Reshape(Reshape(x)) back to x's shape
 *                    (and no-op Reshapes) removed; dead nodes dropped.
 * Both keep the graph valid (eg_index, eg_toposort and eg_infer_all
 * succeed; it exports and passes the ONNX checker) and keep the names of
 * the graph outputs.
 *
 * Worked example: the pipeline around a search.
 *
 *     eg_builtin_stats st = {0};
 *     char err[EG_ERRLEN];
 *     if (eg_builtin_pre(g, &st, err, sizeof err) != EG_OK) goto fail;
 *     // ... rule-driven search on g ...
 *     if (eg_builtin_post(g, &st, err, sizeof err) != EG_OK) goto fail;
 *     printf("%d batchnorms folded, %d weights folded\n",
 *            st.bn_folded, st.weights_folded);
 *     eg_save("out.onnx", g, err, sizeof err);
 */
#ifndef EG_FOLD_H
#define EG_FOLD_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

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

typedef struct {
    int bn_folded, bias_split, identity_removed, cse_merged, reshapes_cancelled, dead_removed,
        weights_folded, relu_fused;
    int sum_spelled; /* eg_spell (search.h): additions written as Sum */
    int nan_guards_dropped;
} eg_builtin_stats;

/* The built-in rewrites before the search (see the overview):
 * - Identity removal (not when both ends are graph inputs/outputs or a
 *   name is pinned);
 * - BatchNormalization (inference) folded into the Conv (model Conv or
 *   conv2d without act) before it when the conv output has no other reader
 *   and weights, bias and BN parameters are float initializers:
 *   W' = W * s[o], b' = (b - mean) * s + B with s = scale / sqrt(var + eps);
 * - a Conv with a bias whose pads/strides fit conv2d becomes conv2d +
 *   bias(1; ., [C]) (the export writes the pair as one Conv again);
 * - relu(conv2d) with the relu the conv's only reader: conv2d with act
 *   RELU (one kernel; exported as Conv + Relu, which runtimes fuse);
 * - a NaN guard nanzero(x) (Where(IsNaN(x), 0, x)) dropped where x is
 *   finite for every input (range.h: a softmax of scores computed from
 *   token ids and finite weights);
 * - common-subexpression elimination: identical non-opaque nodes on the
 *   same inputs (or equal int64 constants) merge;
 * - dead nodes dropped.
 * st (may be NULL) accumulates counts.
 * @pre g loaded (indexed, sorted, shapes inferred).
 * @return EG_OK; EG_ENOMEM; EG_EGRAPH/EG_ESHAPE (a bug: the rewrite broke
 *         the graph) with a message. */
eg_status eg_builtin_pre(eg_graph *g, eg_builtin_stats *st, char *err, size_t errlen);

/* The built-in rewrites after the search: eg_fold_weights; Reshape(Reshape(x)) back to x's shape,
 * and a Reshape to its input's own shape, removed; dead nodes dropped.
 * @return as eg_builtin_pre. */
eg_status eg_builtin_post(eg_graph *g, eg_builtin_stats *st, char *err, size_t errlen);

#endif
