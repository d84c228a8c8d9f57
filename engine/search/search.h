/* search.h - the cost-based backtracking search over rule rewrites and the
 * (prefix eg_search); the whole optimize pipeline around it is in
 * pipeline/pipeline.h.
 *
 * Overview. The search keeps a queue of candidate graphs ordered by cost
 * (two binary heaps on cost and age: the cheapest is popped, the dearest
 * dropped when the queue is full). A queued graph is a rewrite of its
 * parent, (parent, match), built only when it is popped, looked past (see
 * below) or kept as a result: its parent's graph stays while such children
 * wait. Each expansion, in phases:
 *   build   the popped rewrite (eg_apply), its node costs from the
 *           parent's, its tensors' tokens (trial.h);
 *   match   its matches from the parent's (eg_rematch: the parent's that
 *           bind nothing the rewrite touched, and new ones found around
 *           what it touched), or every rule anew (eg_match_all) when the
 *           parent is gone;
 *   judge   each match without building it (eg_trial_judge: the cost
 *           change from the charges around the match, the token hash
 *           change, the refusals eg_apply would make); a match far from
 *           what the rewrite touched (eg_trial_reach) keeps the parent's
 *           judgment, and a refusal for its own shapes or for a cycle
 *           (after a rewrite that keeps paths) stays; a cost over alpha
 *           x the best cost seen (TASO's backtracking: alpha > 1 lets it
 *           pass through slightly worse graphs to reach better ones), one
 *           a full queue would drop at once, or a token hash seen already
 *           stops there; the rest are checked by their structural hash
 *           (eg_apply_hash: token hashes tell apart a few graphs equal in
 *           structure) and queued when new.
 * The result reports the seconds spent in each (build counts as apply;
 * with two threads, the work of both). Build, match and judge read nothing
 * the queue changes (prep.h), so they are done ahead: while one state's
 * matches are queued and looked past, a second thread
 * (eg_search_opts.threads) builds, matches and judges the cheapest states
 * still queued that have no job yet, two ahead; these are the next ones
 * popped in practice (97-99% of pops on the bench models), and while the
 * search would wait for that thread it prepares the following ones itself.
 * A job whose state leaves the queue is dropped; a state popped without
 * one is prepared then. With an analytic cost a job's answers depend on its
 * inputs alone, so the search takes the same path and gives the same bytes
 * with one thread or two; a measuring backend runs on one thread. A
 * rewrite dearer than its parent is built and has the rewrites that use
 * what it created judged at once (one step further), so a two-step gain is
 * not left behind every graph of the first step's cost; one judged as in
 * the parent is not (it was looked past there).
 * Graphs that differ only in the operand order of ewadd/ewmul hash alike,
 * and matches inside weight-only expressions (folded on export) are not
 * tried: neither changes what the model runs. It stops when the queue is empty
 * (saturated), after `budget` expansions, or after `time_limit` seconds
 * of search (time a measured cost backend spends timing kernels is not
 * counted: a cold cost cache does not cut the search short), whichever
 * comes first; stopping is a value (eg_stop), not an error.
 * With the analytic cost the result is deterministic: matches come in a
 * fixed order, ties in cost go to the older graph.
 *
 * Graphs the search builds are clones that borrow their tensor data from
 * the input graph (eg_graph_clone), so a model's weights are never copied;
 * the queue is capped (EG_SEARCH_QUEUE_MAX graphs, the worst dropped
 * first) so memory stays bounded on big models.
 *
 * Worked example:
 *
 *     eg_ruleset *rs; eg_cost *c; eg_graph *g, *best;
 *     eg_search_opts o; eg_search_result r;
 *     char err[EG_ERRLEN];
 *     eg_search_opts_init(&o);                      // alpha 1.05 ...
 *     if (eg_load("in.onnx", NULL, &g, err, sizeof err) ||
 *         eg_ruleset_load("ruledb/default.tasodb", &rs, err, sizeof err) ||
 *         eg_cost_new(EG_COST_ANALYTIC, NULL, &c, err, sizeof err) ||
 *         eg_search(g, rs, c, &o, &best, &r, err, sizeof err))
 *         fprintf(stderr, "%s\n", err);
 *     else
 *         printf("%.1f -> %.1f us\n", r.cost_before, r.cost_after);
 *     // eg_save("out.onnx", best, ...); eg_free(best) before eg_free(g)
 */
#ifndef EG_SEARCH_H
#define EG_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "cost/cost.h"
#include "ir/graph.h"
#include "rewrite/rules.h"

#define EG_SEARCH_QUEUE_MAX 256
#define EG_SEARCH_RUNNERS 2 /* runners-up kept for --verify */

typedef struct {
    double alpha;      /* keep graphs under alpha x best cost (default 1.05) */
    uint64_t budget;   /* graph expansions (default 200) */
    double time_limit; /* seconds of search, kernel measurement left out (default 10) */
    int progress;      /* 1: a progress line on stderr every second */
    int egraph;        /* 1: search by equality saturation (egraph/egraph.h)
                          instead; 0 (default): this backtracking search */
    int iterations;    /* saturation: rounds of match and apply (default 6) */
    int max_nodes;     /* saturation: e-nodes at most (default 100000) */
    int passes;        /* saturation: passes at most (default 6); a pass that
                          gained and stopped at a limit restarts from its
                          result (egraph/saturate.c) */
    uint32_t match_limit; /* saturation: a rule with more matches in a round
                          is banned for ban_rounds (default 2000, 2) */
    int ban_rounds;
    int second_opinion; /* eg_optimize with verify's candidates and a
                          measured cost: 1 (default) also searches under
                          the device's analytic cost (pipeline.h); 0 not */
    int threads;       /* 2 (default): while one graph is expanded, a second
                          thread builds, matches and judges the ones expected
                          next (analytic costs, more than one CPU online);
                          1: one thread. The result is the same either way. */
} eg_search_opts;

/* The time limit of a deterministic search (engine optimize
 * --deterministic, tasoc_optimize's deterministic, Python's
 * deterministic=True) unless one is given: a safety net far past what the
 * work bounds (rounds, e-nodes, passes, the extraction's budget; the
 * backtracking search's expansions) take, so that no load or machine
 * speed decides the answer. */
#define EG_DETERMINISTIC_TIME_LIMIT 600.0

/* What a deterministic search stopped by the clock says after "the time
 * limit" (engine optimize's warning, tasoc_summary.warning). */
#define EG_CLOCK_STOPPED \
    "stopped the search before its work bounds did: another machine or load may give another answer"

/* Why the search stopped. ORDER STOP: eg_stop_name. */
typedef enum {
    EG_STOP_SATURATED, /* nothing left in the queue */
    EG_STOP_BUDGET,    /* --budget expansions done */
    EG_STOP_TIME,      /* --time-limit reached */
    EG_STOP_ITERATIONS, /* saturation: its rounds done */
    EG_STOP_NODES,     /* saturation: its e-node limit reached */
    EG_STOP_COUNT
} eg_stop;

typedef struct {
    double cost_before, cost_after; /* microseconds, of the input and result */
    double seconds;                 /* search wall time */
    uint64_t expanded;              /* graphs popped and matched */
    uint64_t generated;             /* rewrites applied successfully */
    uint64_t looked_ahead;          /* of them, second steps past a costlier
                                       rewrite (look_ahead in search.c) */
    uint64_t duplicates;            /* rewrites whose graph was seen already
                                       (token hash, trial.h) */
    uint64_t rejected;              /* matches eg_apply refused (shape, cycle) */
    uint64_t pruned;                /* rewrites over alpha x best */
    eg_stop stop;
    double t_match;       /* seconds finding matches (eg_rematch, eg_match_all,
                             eg_match_anchored) */
    double t_apply;       /* seconds building graphs (eg_apply, node costs, tokens) */
    double t_judge;       /* seconds judging matches (trial.c) and queueing */
    uint64_t e_nodes, e_classes;    /* saturation: the e-graph's final size */
    int passes;                     /* saturation: passes run */
    uint64_t ilp_region;            /* saturation: the exact extraction's e-nodes (0: not tried) */
    int ilp_solved;                 /* 1: it proved its optimum there; 0: not
                                       within its resource limit; -1: the
                                       region was too big to try */
    size_t n_rules;
    uint32_t *applied;    /* [n_rules]: times each rule is on the best path */
    int n_runners;        /* the cheapest graphs after the best that are
                             still held when the search stops (queued, not
                             expanded), cheapest first: candidates for a
                             measurement (engine optimize --verify). They
                             borrow data as the best graph does: free them
                             (eg_search_result_free) before it. */
    eg_graph *runner[EG_SEARCH_RUNNERS];
    double runner_cost[EG_SEARCH_RUNNERS];
} eg_search_result;

void eg_search_opts_init(eg_search_opts *o);
const char *eg_stop_name(eg_stop s);

/* Search for the cheapest graph reachable from g with the rules.
 * @pre g indexed, toposorted, shapes inferred (as eg_load leaves it).
 * @return EG_OK with *best a new graph (it may borrow data from g: free it
 *         first) and *r filled (free with eg_search_result_free); or
 *         EG_ENOMEM with a message. */
eg_status eg_search(const eg_graph *g, const eg_ruleset *rs, eg_cost *c,
                    const eg_search_opts *o, eg_graph **best, eg_search_result *r,
                    char *err, size_t errlen);

/* Free what r holds: the applied counts and the runners-up. */
void eg_search_result_free(eg_search_result *r);

#endif
