/* range.h - value ranges (prefix eg_range): for every float tensor of a
 * graph, an interval its elements lie in for every value of the graph
 * inputs, worked out forward from the initializers' values.
 *
 * Why: exporters guard attention's softmax against NaN rows with
 * Where(IsNaN(p), 0, p) (nanzero), which costs twice the softmax in
 * onnxruntime. A softmax of finite values is never NaN, and in a
 * transformer reading token ids the scores are finite for every input:
 * embeddings are gathered from finite tables, layer norms bound what they
 * write, the weights are finite. The ranges prove that, so the built-ins
 * drop such a guard (builtin.c); a guard whose value may be NaN or
 * infinite (a float graph input reaches it) stays.
 *
 * Semantics: each operator's ONNX meaning over the reals, as the rules
 * are proved (a layer norm with eps > 0 writes at most sqrt(n) in
 * magnitude before its scale and bias), with float rounding accounted
 * for: a sum or product rounded once is finite when its exact bound is
 * below FLT_MAX plus half an ulp; an accumulation of K terms is widened
 * by K rounding errors. A range is "any" ([-inf, inf], maybe NaN) where
 * nothing is known: graph inputs, non-float tensors, operators the table
 * below does not know, and everything computed from such a value.
 *
 * Example:
 *
 *     eg_range *r = malloc(sizeof *r * g->n_tensors);
 *     eg_ranges(g, r);
 *     if (eg_range_finite(r[t])) ... // t is finite for every input
 */
#ifndef EG_RANGE_H
#define EG_RANGE_H

#include "graph.h"

typedef struct {
    double lo, hi; /* every element e: lo <= e <= hi; any: -inf, inf */
} eg_range;

/* Fill r[g->n_tensors] with every tensor's range.
 * @pre nodes in topological order, producers indexed, shapes inferred. */
void eg_ranges(const eg_graph *g, eg_range *r);

/* 1 when every element is a finite float (never NaN or infinite). */
int eg_range_finite(eg_range r);

#endif
