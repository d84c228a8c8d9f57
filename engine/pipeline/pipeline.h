/* pipeline.h - engine optimize as a library (prefix eg_): the built-in
 * rewrites around the search, the cost-chosen spellings, and eg_optimize,
 * which runs them with the search in order.
 *
 * The built-ins run around the search (builtin.c):
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
 * eg_optimize runs the phases a user wants: built-in rewrites before the
 * search (eg_builtin_pre), the search, built-ins after it (weight folding,
 * bias fusion: eg_builtin_post); it never returns a graph its cost model
 * rates above the input's cost (it then keeps the input), nor, with a
 * measured cost, one whose gain is within the measurements' noise
 * (eg_cost_noise): the rules' rewrites must beat the built-ins alone by
 * more than that, and the result the input. The search's runners-up and
 * the built-ins alone are kept for verify only when asked (candidates).
 *
 * Worked example:
 *
 *     eg_ruleset *rs; eg_cost *c; eg_graph *g, *best;
 *     eg_search_opts o; eg_search_result r; eg_optimize_stats st;
 *     char err[EG_ERRLEN];
 *     eg_search_opts_init(&o);                      // alpha 1.05 ...
 *     if (eg_load("in.onnx", NULL, &g, err, sizeof err) ||
 *         eg_ruleset_shipped(&rs, err, sizeof err) ||
 *         eg_cost_new(EG_COST_ANALYTIC, NULL, &c, err, sizeof err) ||
 *         eg_optimize(g, rs, c, &o, 0, &best, &r, &st, err, sizeof err))
 *         fprintf(stderr, "%s\n", err);
 *     else
 *         printf("%.1f -> %.1f us\n", r.cost_before, r.cost_after);
 *     // eg_save("out.onnx", best, ...); eg_free(best) before eg_free(g)
 */
#ifndef EG_PIPELINE_H
#define EG_PIPELINE_H

#include <stddef.h>

#include "cost/cost.h"
#include "ir/graph.h"
#include "rewrite/rules.h"
#include "search/search.h"
#include "verify/verify.h"

typedef struct {
    int bn_folded, bias_split, identity_removed, cse_merged, reshapes_cancelled, dead_removed,
        weights_folded, relu_fused;
    int sum_spelled; /* eg_spell: additions written as Sum */
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

/* Spellings chosen by cost (spell.c): an addition read only by a layer
 * norm becomes a two-input Sum (a model node: the same sum, which
 * onnxruntime's SkipLayerNormalization fusion does not match) when c rates
 * that group cheaper by more than its noise (eg_cost_noise); the ort
 * backend times both spellings, the others rate them alike. eg_optimize
 * runs it on its result. *n_spelled (may be NULL) grows by the count.
 * @pre g indexed and toposorted. @return EG_OK or EG_ENOMEM. */
eg_status eg_spell(eg_graph *g, eg_cost *c, int *n_spelled, char *err, size_t errlen);

/* What eg_optimize did besides the search (r). */
typedef struct {
    eg_builtin_stats pre, post; /* zero when kept_input */
    int kept_input;    /* the result was not cheaper, so the result is the
                          input (engine optimize then writes the input
                          file's bytes unchanged) */
    int rules_dropped; /* the rules gained nothing beyond the built-ins
                          (within the cost model's noise) */
    eg_graph *plain;   /* with candidates, when the result is the search's:
                          the built-ins alone, for verify (it borrows as
                          *best does: free it first, eg_optimize_stats_free);
                          else NULL */
    eg_graph *second;  /* with candidates and a measured cost: the same
                          search under that device's analytic cost
                          (eg_cost_second_opinion), for verify, borrowing
                          as plain does; NULL when it gained nothing there */
    double second_cost; /* its cost under the measured model */
    eg_cost_kind second_kind; /* the analytic kind it was searched under */
} eg_optimize_stats;

/* eg_builtin_pre on a clone of g, eg_search, eg_builtin_post and eg_spell
 * on the result and on the built-ins alone; the cheaper of the two (the
 * rules must gain beyond the cost model's noise), and when that is not
 * cheaper than g itself, *best is a plain clone of g (st->kept_input).
 * candidates: 1 finishes the search's runners-up the same way and keeps
 * the built-ins alone (st->plain), the candidates verify times; 0 frees
 * them unfinished (r->n_runners 0). With candidates and a measured cost,
 * the search also runs under the analytic cost of the same device (a
 * second opinion, st->second, with its own time limit): measured kernel
 * costs are summed per kernel, and a kernel timed alone can misprice a
 * rewrite (one conv of three merged branches timed dearer than three
 * small ones and a split) that a whole-model timing in verify shows; the
 * input is then kept early only when neither search gained. g is not
 * changed. *best borrows data from g: free *best before g.
 * @return EG_OK, or the failing phase's status with its message. */
eg_status eg_optimize(const eg_graph *g, const eg_ruleset *rs, eg_cost *c, const eg_search_opts *o,
                      int candidates, eg_graph **best, eg_search_result *r, eg_optimize_stats *st,
                      char *err, size_t errlen);

/* Free st->plain (before the graph it borrows from). */
void eg_optimize_stats_free(eg_optimize_stats *st);

/* The input verify times the candidates against: its file (path), or,
 * with path NULL, a temporary copy written from bytes (the file's own
 * bytes, when the graph is them) or else from the graph. prefix: where
 * the candidates are written (PREFIX.verify.PID.K.onnx; with path NULL,
 * beside the copy). */
typedef struct {
    const char *path, *prefix;
    const uint8_t *bytes;
    size_t len;
} eg_verify_input;

/* The verify step (verify_step.c): eg_optimize's candidates (*best, the
 * runners-up in r, the second opinion in st->second, the built-ins alone
 * in st->plain) and the input timed in
 * onnxruntime (eg_verify_choose, its choices cached beside cost_cache when
 * the costs are onnxruntime's); *best becomes the fastest, or a clone of g
 * with st->kept_input set when the input stays. rep says what was timed.
 * @pre eg_optimize(g, ..., candidates 1, best, r, st) succeeded without
 *      keeping the input.
 * @return EG_OK, or an error of the export, onnxruntime or the helper. */
eg_status eg_optimize_verify(const eg_graph *g, const eg_verify_input *in, eg_cost *cost, const char *cost_cache,
                             eg_verify_opts *o, int quiet, eg_search_result *r, eg_optimize_stats *st,
                             eg_graph **best, eg_verify_report *rep, char *err, size_t errlen);

#endif
