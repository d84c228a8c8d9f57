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

#include "ir/graph.h"

typedef struct {
    double lo, hi; /* every element e: lo <= e <= hi; any: -inf, inf */
} eg_range;

/* Fill r[g->n_tensors] with every tensor's range.
 * @pre nodes in topological order, producers indexed, shapes inferred. */
void eg_ranges(const eg_graph *g, eg_range *r);

/* 1 when every element is a finite float (never NaN or infinite). */
int eg_range_finite(eg_range r);

/* Flag with EG_TF_NONFINITE every float tensor that may hold an infinity
 * or a NaN although every float graph input is finite and no sum or
 * product overflows: what a log of 0, a division by a value that may be
 * 0, a square root of a negative value, or an initializer holding -inf
 * (an attention mask) makes, and everything computed from it. Clears the
 * flag elsewhere.
 *
 * Why: the rules are proved over the reals, where 0 * x = 0. A rule whose
 * right side multiplies a matched value by constant zeros (an identity
 * matrix, a kernel padded with zeros) turns -inf into NaN, which then
 * reaches cells the left side kept clean: T5's relative-position buckets
 * take log(0) = -inf and mask it later, and x @ (I / s) for x / s spreads
 * the NaN over the whole row. The matcher refuses such a rule on a
 * flagged value (match.c).
 * @pre as eg_ranges. @return EG_OK or EG_ENOMEM. */
eg_status eg_mark_nonfinite(eg_graph *g);

#endif
