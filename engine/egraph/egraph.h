/* egraph.h - the search by equality saturation (prefix eg_saturate):
 * every rewrite the rules allow, everywhere at once, in an e-graph, then
 * the cheapest graph it holds (Tensat, MLSys'21, after egg).
 *
 * Why. The backtracking search (search.h) walks one graph at a time: on a
 * model of many blocks it drowns in the plateau of equal-cost rewrites
 * (commuted adds, biases moved back and forth) and cannot afford a chain
 * whose first step costs more (a 1x1 kernel enlarged to 3x3 before two
 * convs merge). An e-graph keeps every equal form of every value side by
 * side, so a shuffle costs nothing and no step needs to pay for itself.
 *
 * How, in rounds (egg's Runner):
 *   match   every rule over the classes (ematch.c: the rules' plan tree of
 *           rewrite/, as eg_match_all walks a graph, with each step's
 *           candidates taken from a class: the e-nodes of the class a
 *           producer step reads, the parents of a class for a consumer
 *           step), each match checked as the graph search checks it
 *           (shapes of dst against src, free parameters, 1x1 kernels,
 *           non-finite values against rules that add zeros);
 *   apply   each match adds dst's e-nodes and merges each dst output's
 *           class with src's;
 *   rebuild congruence closure (egraph.c).
 * A rule with more than `match_limit` matches in a round is banned for
 * `ban_rounds` rounds, both doubled each time (egg's backoff scheduler),
 * so associativity and concat/split shuffles do not crowd out the rest.
 * It stops when a round adds nothing (saturated), after `iterations`
 * rounds, past `max_nodes` e-nodes, or at the time limit (a safety net:
 * the rounds and nodes decide the answer on any machine; the stop reason
 * says which). Extraction (extract.c) then picks one e-node per needed
 * class by the cost model the user chose (greedy picks, an exact ILP over
 * a region, a local search; each candidate graph priced whole), never a
 * cycle, and builds the graph; eg_optimize's pick and verify see it and
 * its runners-up as they see the backtracking search's.
 *
 * The rounds alone serve prove too (eg_saturate_derives): a rule is
 * redundant when saturating its left side with the other rules puts its
 * right side in the same class.
 */
#ifndef EG_EGRAPH_H
#define EG_EGRAPH_H

#include "cost/cost.h"
#include "ir/graph.h"
#include "rewrite/rules.h"
#include "search/search.h"

/* The saturation search over g: as eg_search (search.h), with o's
 * e-graph limits and time limit; r->expanded counts the rounds,
 * r->generated the e-nodes rewrites added, r->e_nodes and r->e_classes
 * the final size, r->stop the reason; the runners-up are the next
 * cheapest graphs of distinct costs.
 * @pre as eg_search. @return EG_OK with *best (free before g), or
 * EG_ENOMEM with a message. */
eg_status eg_saturate(const eg_graph *g, const eg_ruleset *rs, eg_cost *c, const eg_search_opts *o,
                      eg_graph **best, eg_search_result *r, char *err, size_t errlen);

/* Whether the rules derive tensor tb of g from tensor ta: the e-graph of
 * g saturated with rs under o's limits (rounds, e-nodes, time limit as a
 * safety net) until the classes of ta and tb are one (*derived 1) or a
 * limit stops it (*derived 0: not derived within the bound, which is not
 * a proof that they differ). *rounds: the rounds run (may be NULL).
 * @pre g indexed, toposorted, shapes inferred; ta, tb tensors of g.
 * @return EG_OK, or EG_ENOMEM / EG_EGRAPH (no such tensor) with a message. */
eg_status eg_saturate_derives(const eg_graph *g, int ta, int tb, const eg_ruleset *rs, const eg_search_opts *o,
                              int *derived, int *rounds, char *err, size_t errlen);

/* Whether the rules enabled[] (NULL: all) derive rule i of rs (derive.c):
 * at an instance of its input shapes and at DERIVE_VARIANTS more, its left
 * side alone saturated under o's limits holds its right side in the
 * class of its left (two_sided: both sides saturated together end in one
 * class, an equation the rules prove but a search from the left side may
 * not reach). first[] (NULL: none): rules saturated on the graph as built,
 * before enabled[] runs. *derived 0 also when no instance was found or a
 * limit stopped the rounds first (kept, never dropped, on doubt).
 * @return EG_OK or EG_ENOMEM with a message. */
eg_status eg_derive_rule(const eg_ruleset *rs, size_t i, const unsigned char *first, const unsigned char *enabled,
                         const eg_search_opts *o, int two_sided, int *derived, char *err, size_t errlen);

/* How a rule counts as derived from others (eg_derive_equation). */
typedef enum {
    EG_DERIVE_REACH,    /* its left side alone, saturated, reaches its right */
    EG_DERIVE_MEET,     /* both sides saturated together end in one class: an
                           equation the rules prove, which a search from the
                           left side may not reach (a step it would need
                           backwards may have no reverse) */
    EG_DERIVE_EQUATION, /* MEET with the enabled rules that have a reverse in
                           the ruleset (a search can walk each step either
                           way, so it reaches the right side), else REACH */
    EG_DERIVE_DETOURS   /* EQUATION after the identity detours the two sides
                           write are erased (a search reaches the right side
                           but for those) */
} eg_derive_mode;

/* What eg_derive_equation found: *derived 0 when not derived, else which
 * try derived it. A verdict of EG_DERIVED_OWN stands while no rule over
 * the rule's own operators is enabled or disabled (prove's checks of a
 * file that grows skip it). */
enum { EG_DERIVED_OWN = 1, EG_DERIVED_ALL = 2 };

/* Whether the rules enabled[] (NULL: all) derive rule i of rs (and with
 * with_mate its reverse in rs too, eg_ruleset_mate) under mode, by
 * eg_derive_rule: first under the enabled rules that write no operator
 * outside the rule's own (*derived EG_DERIVED_OWN), then, if not derived
 * and that left some out, under all of them (EG_DERIVED_ALL).
 * @return EG_OK or EG_ENOMEM with a message. */
eg_status eg_derive_equation(const eg_ruleset *rs, size_t i, const unsigned char *enabled, const eg_search_opts *o,
                             eg_derive_mode mode, int with_mate, int *derived, char *err, size_t errlen);

/* Whether the rules enabled[] (NULL: all) derive a = b, a pair of graphs
 * over the same inputs that need not be a rule of rs (prove --known: a
 * candidate pair the shipped rules already derive), under mode as
 * eg_derive_equation judges a rule and its reverse: the two sides meet
 * (MEET: under every enabled rule; EQUATION: those with a reverse; DETOURS:
 * those, after the identity detours are erased), else (not MEET) each way
 * the engine could apply as a rule (rg_can_rewrite) reaches the other
 * side from its own; first under the enabled rules over the two sides'
 * operators, as eg_derive_equation. Each at an instance of the inputs'
 * shapes and at DERIVE_VARIANTS more; *derived 0 on doubt.
 * @return EG_OK or EG_ENOMEM with a message. */
eg_status eg_derive_pair(const eg_ruleset *rs, const rg_graph *a, const rg_graph *b, const unsigned char *enabled,
                         const eg_search_opts *o, eg_derive_mode mode, int *derived, char *err, size_t errlen);

typedef struct {
    size_t rules, kept, derived; /* equations (eg_prune_derivable) */
    double seconds;
} eg_prune_stats;

/* Called after each rule decided: done of total. */
typedef void (*eg_prune_progress)(size_t done, size_t total, const eg_prune_stats *st, void *arg);

/* The rules of rs that the others do not derive, in keep[] (1 kept, one
 * byte per rule), an equation at a time: a rule and its reverse in rs
 * (eg_ruleset_mate) are kept or dropped together, and st counts equations.
 * From the smallest (nodes of both sides) to the largest, an equation is
 * dropped when the rules kept before it derive each of its directions
 * (eg_derive_equation under mode). Deterministic. A file needs only the
 * first rule of each kept equation (the engine reads it both ways).
 * Bounded saturation is not monotone (more rules kept, more matches fill
 * the e-nodes sooner), so a dropped rule may not be derived from the
 * final set: prove's pv_prune_file checks them against the file it writes.
 * Of equal size, the rule with more inputs goes first (an instance never
 * derives the general rule). candidates (NULL: all) names the equations
 * that may be kept: the others are dropped unchecked (pruning again a set
 * already pruned from rs, whose other rules it derived).
 * @return EG_OK or EG_ENOMEM. */
eg_status eg_prune_derivable(const eg_ruleset *rs, const eg_search_opts *o, eg_derive_mode mode,
                             const unsigned char *candidates, unsigned char *keep, eg_prune_stats *st,
                             eg_prune_progress progress, void *arg, char *err, size_t errlen);

#endif
