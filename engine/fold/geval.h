/* geval.h - whole-graph float32 evaluation (prefix eg_eval): run an
 * eg_graph node by node in topological order with the float kernels of
 * fold.h (eg_fkern_node), initializers taken from the graph, on values the
 * caller gives for the graph inputs.
 *
 * Overview. It is the reference the rewrite tests hold a graph to before
 * and after a rule, a built-in rewrite or a search (equal outputs within a
 * float tolerance), and a way to check an optimized model without an ONNX
 * runtime. Only the nodes the graph outputs depend on run, and each
 * intermediate value is freed after its last reader, so memory stays near
 * the widest cut of the graph. A graph it cannot run (an opaque node on
 * the way to an output, a symbolic dim, a non-float input) is
 * EG_EUNSUPPORTED with the node or tensor named, never a wrong answer.
 *
 * Worked example: evaluate a loaded model on one input.
 *
 *     float *x = ...;                   // numel of input 0's shape
 *     const float *in[1] = {x};
 *     float *out[4];                    // g->n_outputs slots
 *     char err[EG_ERRLEN];
 *     if (eg_eval_graph(g, in, out, err, sizeof err) != EG_OK)
 *         fprintf(stderr, "%s\n", err);
 *     // out[k]: numel of g->tensor[g->output[k]].shape floats
 *     for (int k = 0; k < g->n_outputs; k++) free(out[k]);
 */
#ifndef EG_GEVAL_H
#define EG_GEVAL_H

#include <stddef.h>

#include "ir/graph.h"

/* Evaluate every graph output of g. in[k] holds graph input k's values
 * (row-major, the numel of its shape); out has g->n_outputs slots, each
 * set to a malloc'd array of that output's numel floats (the caller frees
 * them).
 * @pre eg_index and eg_toposort succeeded and shapes are inferred (as
 *      eg_load leaves a graph).
 * @return EG_OK; EG_EUNSUPPORTED when a needed node or tensor cannot be
 *         evaluated (message names it); EG_ESHAPE from a kernel; EG_ENOMEM.
 *         On failure every out[k] is NULL. */
eg_status eg_eval_graph(const eg_graph *g, const float *const *in, float **out, char *err,
                        size_t errlen);

#endif
