/* saturate.c - eg_saturate (egraph.h): the rounds of match, apply and
 * rebuild under the backoff scheduler, then extraction. */
#include "egraph/egraph_int.h"
#include "fold/range.h"
#include "sys/sys.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rules with several outputs (two convs of one input as one conv of
 * concatenated weights, and the split/concat moves that follow) match
 * every pair of like nodes and multiply the e-graph each round: like
 * Tensat, they match everywhere in the first rounds only. Later rounds
 * match them semi-naively, anchored on the e-nodes the round before added
 * (the merged matmul of two projections meets the third), which keeps the
 * pairs of old nodes from being matched again. */
#define MULTI_ROUNDS 1
#define MULTI_FRESH_ROUNDS 2 /* the rounds they match in at all */

/* egg's backoff scheduler: per rule, the matches it may have in a round
 * (limit), the rounds it sits out (until), and how often it was banned. */
typedef struct {
    uint32_t *limit, *count, *banned;
    int *until;
    unsigned char *off;  /* [rules]: banned, or over its limit this round */
    unsigned char *pass; /* [rules]: off for one matching pass */
    const unsigned char *enabled; /* [rules]: the rules that run at all; NULL: all */
    int fresh0;          /* the first e-node the last round added */
} sched;

static void sched_free(sched *s) {
    free(s->limit), free(s->count), free(s->banned), free(s->until), free(s->off), free(s->pass);
}

static int slicing_op(ops_op op) { return op == OP_CONCAT || op == OP_SPLIT0 || op == OP_SPLIT1; }

static int slices_in(const rg_graph *side) {
    int n = 0;
    for (int j = 0; j < side->n_nodes; j++) n += slicing_op(side->node[j].op);
    return n;
}

/* 1 when rule i is one that floods an e-graph with slices: it only moves
 * slices around (every node of both sides a concat or a split: the
 * associativity of concat and its dozens of variants rewrite every concat
 * tree into every other), or it grows the graph with new ones (a conv of
 * a sum as a conv of concatenations, a conv of a concatenation as a
 * concatenation of convs: on MobileOne-S0 they filled the e-nodes before
 * the merges that pay were chained; a merge into concatenations that adds
 * no node, two convs summed as one conv of concatenated inputs, is not
 * one, nor a rule of several outputs, which runs in the first rounds only
 * and merges the projections of one input). With heavy set, so is a
 * rule of one output that adds a conv or a matmul (a conv of a sum as a
 * sum of convs: on RepViT-M1 it copied the conv after every residual sum,
 * the merges of two convs of one weight paired the copies, and the
 * e-nodes ran out before x + bias(dwconv(x)) became one conv in half the
 * blocks; its reverse, which saves a conv, is not one), and a rule of
 * several outputs that grows slices without merging a conv or a matmul
 * (two divisions, scales or biases of one operand batched along an axis:
 * with the depth-4 rules, one per operator and axis filled FastViT-T8's
 * e-graph in its second round, bench/results/schedule.md). They get a
 * sixteenth of the match limit, so they are banned before they crowd out
 * the rest. */
static int heavy_op(ops_op op) { return op == OP_CONV2D || op == OP_MATMUL || op == OP_BMM || op == OP_LINEAR; }

static int heavy_in(const rg_graph *side) {
    int n = 0;
    for (int j = 0; j < side->n_nodes; j++) n += heavy_op(side->node[j].op);
    return n;
}

static int flooding_rule(const eg_ruleset *rs, size_t i, int heavy) {
    const rdb_rule *r = eg_ruleset_rule(rs, i);
    int only = slices_in(&r->src) == r->src.n_nodes && slices_in(&r->dst) == r->dst.n_nodes;
    int one = r->src.n_outputs == 1;
    int grows = slices_in(&r->dst) > slices_in(&r->src) && r->dst.n_nodes > r->src.n_nodes;
    return only || (one && grows) || (heavy && one && heavy_in(&r->dst) > heavy_in(&r->src)) ||
           (heavy && !one && grows && heavy_in(&r->dst) >= heavy_in(&r->src));
}

/* 1 when rule i is f(x0, x1) => f(x1, x0) for a commutative f. It is
 * never banned: it can at most double the e-nodes of f (its result is
 * hash-consed once), so it cannot flood an e-graph, and the chains that
 * pay need it between their steps. On RepViT-M1, x + bias(dwconv(x)) is
 * one conv once the bias moves out (a rule whose add reads the other way
 * round) and the add is commuted again for x + dwconv(x) = dwconv(x, w +
 * dwiconv); with commutation banned from the third round on (over the
 * match limit on a model of 500 nodes), that chain was cut in every
 * block. */
static int commutation_rule(const eg_ruleset *rs, size_t i) {
    const rdb_rule *r = eg_ruleset_rule(rs, i);
    const rg_node *a = &r->src.node[0], *b = &r->dst.node[0];
    return r->src.n_nodes == 1 && r->dst.n_nodes == 1 && r->src.n_outputs == 1 && a->op == b->op &&
           (ops_table[a->op].flags & OPF_COMMUTATIVE) && ops_table[a->op].arity == 2 &&
           !memcmp(a->param, b->param, sizeof a->param) && a->in[0] == b->in[1] && a->in[1] == b->in[0] &&
           a->in[0] != a->in[1];
}

/* heavy: the search's passes over a model (flooding_rule); a derivation
 * (ee_saturate_until: a rule's two sides under a small e-node bound, where
 * nothing crowds out anything) runs without it, as the shipped ruledb's
 * pruning was decided. */
static eg_status sched_new(sched *s, const eg_ruleset *rs, size_t n, uint32_t limit, int heavy,
                           const unsigned char *enabled) {
    s->limit = malloc(sizeof *s->limit * (n + 1)), s->count = calloc(n + 1, sizeof *s->count);
    s->banned = calloc(n + 1, sizeof *s->banned), s->until = calloc(n + 1, sizeof *s->until);
    s->off = calloc(n + 1, 1), s->pass = calloc(n + 1, 1);
    if (!s->limit || !s->count || !s->banned || !s->until || !s->off || !s->pass) return EG_ENOMEM;
    s->enabled = enabled;
    for (size_t i = 0; i < n; i++) /* a rule not enabled never matches: its limit is not read */
        s->limit[i] = enabled && !enabled[i] ? 0
                      : commutation_rule(rs, i) ? UINT32_MAX
                      : flooding_rule(rs, i, heavy) ? (limit / 16 > 16 ? limit / 16 : 16)
                                              : limit;
    return EG_OK;
}

/* One round: match every rule not banned, ban those over their limit
 * (their matches dropped), apply the rest in order. *changed: e-nodes
 * added and classes merged; *banned_now: rules sitting out.
 * @return EG_OK or EG_ENOMEM. */
static eg_status round_once(ee_graph *E, const eg_ruleset *rs, sched *s, const eg_search_opts *o, int round,
                            double deadline, int *changed, int *banned_now, uint64_t *added, int *timed_out) {
    size_t nr = eg_ruleset_count(rs);
    ee_matches M = {.count = s->count, .limit = s->limit, .off = s->pass, .deadline = deadline};
    int naive = round < MULTI_ROUNDS;
    *changed = 0, *banned_now = 0;
    for (size_t i = 0; i < nr; i++) {
        int multi = eg_ruleset_rule(rs, i)->src.n_outputs > 1;
        s->off[i] = s->until[i] > round || (s->enabled && !s->enabled[i]);
        s->pass[i] = s->off[i] || (multi && !naive);
        s->count[i] = 0, *banned_now += s->until[i] > round;
    }
    double t0 = eg_now_s();
    eg_status rc = ee_match_all(E, rs, &M);
    if (rc == EG_OK && !naive && round < MULTI_FRESH_ROUNDS && !M.timed_out) { /* the multi-output rules, on new anchors */
        for (size_t i = 0; i < nr; i++) s->pass[i] = s->off[i] || eg_ruleset_rule(rs, i)->src.n_outputs < 2;
        M.anchor_from = s->fresh0;
        rc = ee_match_all(E, rs, &M);
    }
    s->fresh0 = E->n_nodes;
    double t1 = eg_now_s();
    *timed_out = M.timed_out;
    *banned_now += M.cut_nodes; /* cut rules did not finish: not saturated */
    for (size_t i = 0; rc == EG_OK && i < nr; i++) {
        if (s->count[i] <= s->limit[i]) continue;
        s->off[i] = 1; /* its matches this round are dropped */
        int len = o->ban_rounds << (s->banned[i] < 8 ? s->banned[i] : 8);
        s->until[i] = round + 1 + len;
        s->limit[i] = s->limit[i] <= UINT32_MAX / 2 ? 2 * s->limit[i] : UINT32_MAX;
        s->banned[i]++;
        (*banned_now)++;
    }
    int before = E->n_nodes;
    for (size_t k = 0; rc == EG_OK && k < M.n; k++) {
        if (s->off[M.m[k].rule]) continue;
        if (E->n_live >= o->max_nodes) break;
        eg_status ar = ee_apply(E, rs, &M.m[k], changed);
        if (ar == EG_ENOMEM) rc = ar;
    }
    *added += (uint64_t)(E->n_nodes - before);
    double t2 = eg_now_s();
    if (rc == EG_OK) rc = ee_rebuild(E);
    if (o->progress)
        fprintf(stderr, "egraph: round %d: %zu matches (match %.2f s, apply %.2f s, rebuild %.2f s)\n", round + 1,
                M.n, t1 - t0, t2 - t1, eg_now_s() - t2);
    free(M.m);
    return rc;
}

/* Extract the e-graph as it is now into the cheapest graphs so far (top),
 * the first kept whatever it costs, applied counted for the cheapest.
 * Greedy extraction is a heuristic that more e-nodes can lead astray, so
 * every round is extracted and the cheapest graphs of all are the result
 * and the runners-up. The graphs borrow g's data as the e-graph's graph
 * does (a clone's payloads point into g). @return EG_OK or the
 * extraction's failure. */
static eg_status keep_cheapest(ee_graph *E, eg_cost *c, size_t nr, ee_budget *budget, double deadline, ee_top *top,
                               eg_search_result *r, double *t_extract, char *err, size_t errlen) {
    double t = eg_now_s();
    uint32_t *applied = calloc(nr + 1, sizeof *applied);
    ee_top got = {0};
    eg_status rc = applied ? ee_extract(E, c, nr, budget, deadline, &got, applied, err, errlen) : EG_ENOMEM;
    if (got.ilp_region) r->ilp_region = (uint64_t)got.ilp_region, r->ilp_solved = got.ilp_solved;
    if (got.timed_out) r->stop = EG_STOP_TIME; /* the answer is the clock's: say so */
    for (int k = 0; rc == EG_OK && k < got.n; k++)
        if (ee_top_offer(top, got.g[k], got.cost[k]) && k == 0) memcpy(r->applied, applied, sizeof *applied * nr);
    free(applied);
    *t_extract += eg_now_s() - t;
    return rc;
}

/* One pass: g saturated and the cheapest graphs extracted (eg_saturate
 * before passes), its time limit ending at t0 + o->time_limit, the final
 * extraction's work taken from *budget. *gaining:
 * a round after the first extracted a graph cheaper than every one before
 * it (the rounds were building on their own merges: a chain, which a
 * fresh e-graph may take further). */
static eg_status saturate_pass(const eg_graph *g, const eg_ruleset *rs, eg_cost *c, const eg_search_opts *o, double t0,
                               ee_budget *budget, eg_graph **best, eg_search_result *r, int *gaining, char *err,
                               size_t errlen) {
    double tp = eg_now_s();
    size_t nr = eg_ruleset_count(rs);
    *gaining = 0;
    ee_graph E;
    sched s = {0};
    ee_top top = {0};
    eg_graph *marked = eg_graph_clone(g);
    eg_status rc = marked ? EG_OK : EG_ENOMEM;
    *best = NULL;
    memset(r, 0, sizeof *r);
    memset(&E, 0, sizeof E);
    r->n_rules = nr;
    r->applied = calloc(nr + 1, sizeof *r->applied);
    if (!r->applied) rc = EG_ENOMEM;
    if (rc == EG_OK) rc = eg_mark_nonfinite(marked); /* a rule that adds zeros refuses those values */
    if (rc == EG_OK) rc = ee_build(&E, marked);
    if (rc == EG_OK) rc = sched_new(&s, rs, nr, o->match_limit, 1, NULL);
    r->cost_before = eg_cost_graph(c, g);
    r->stop = EG_STOP_ITERATIONS;
    double t_extract = 0;
    for (int round = 0; rc == EG_OK && round < o->iterations; round++) {
        if (eg_now_s() - t0 > o->time_limit) {
            r->stop = EG_STOP_TIME;
            break;
        }
        if (E.n_live >= o->max_nodes - o->max_nodes / 100) { /* a round with under 1% of its e-nodes left
                                                               adds little but matches everything again */
            r->stop = EG_STOP_NODES;
            break;
        }
        int changed, banned, timed_out;
        rc = round_once(&E, rs, &s, o, round, t0 + o->time_limit, &changed, &banned, &r->generated, &timed_out);
        r->expanded++;
        double had = top.n ? top.cost[0] : INFINITY;
        if (rc == EG_OK) rc = keep_cheapest(&E, c, nr, NULL, t0 + o->time_limit, &top, r, &t_extract, err, errlen);
        if (round > 0 && rc == EG_OK && top.n && top.cost[0] < had * (1 - eg_cost_noise(c))) *gaining = 1;
        if (o->progress)
            fprintf(stderr, "egraph: round %d: %d e-nodes, %d classes merged or added, %d rules banned, cheapest %.1f us\n",
                    round + 1, E.n_live, changed, banned, top.n ? top.cost[0] : 0.0);
        if (rc == EG_OK && timed_out) { /* what it found is applied; the stop says time */
            r->stop = EG_STOP_TIME;
            break;
        }
        if (rc == EG_OK && !changed && !banned) {
            r->stop = EG_STOP_SATURATED;
            break;
        }
        if (rc == EG_OK && !changed) /* only banned rules are left: let them in now (egg) */
            for (size_t i = 0; i < nr; i++) s.until[i] = 0;
    }
    if (rc == EG_OK && r->stop == EG_STOP_ITERATIONS && E.n_live >= o->max_nodes) r->stop = EG_STOP_NODES;
    r->e_nodes = (uint64_t)E.n_live;
    for (int k = 0; k < E.n_cls; k++) r->e_classes += E.c[k].uf == k && E.c[k].n_node > 0;
    r->t_match = eg_now_s() - tp;
    r->t_match -= t_extract, r->t_apply = t_extract;
    /* the final e-graph once more, with the local search */
    if (rc == EG_OK) rc = keep_cheapest(&E, c, nr, budget, t0 + o->time_limit, &top, r, &r->t_apply, err, errlen);
    if (rc == EG_OK) { /* the cheapest is the result, the next ones --verify's runners-up */
        *best = top.g[0], r->cost_after = top.cost[0];
        for (int k = 1; k < top.n; k++) r->runner[k - 1] = top.g[k], r->runner_cost[k - 1] = top.cost[k];
        r->n_runners = top.n - 1;
        top.n = 0;
    }
    ee_top_free(&top);
    if (rc == EG_ENOMEM) {
        eg_errf(err, errlen, rc, "saturation: out of memory (%d e-nodes)", E.n_live);
    }
    ee_free(&E);
    sched_free(&s);
    eg_free(marked);
    return rc;
}

/* Add what pass p found to the totals in r (the e-graph's size, the stop
 * and the exact extraction are the last pass's). */
static void add_pass(eg_search_result *r, const eg_search_result *p, size_t nr) {
    r->expanded += p->expanded, r->generated += p->generated;
    r->t_match += p->t_match, r->t_apply += p->t_apply;
    r->e_nodes = p->e_nodes, r->e_classes = p->e_classes, r->stop = p->stop;
    r->ilp_region = p->ilp_region, r->ilp_solved = p->ilp_solved;
    for (size_t i = 0; i < nr; i++) r->applied[i] += p->applied[i];
}

eg_status eg_saturate(const eg_graph *g, const eg_ruleset *rs, eg_cost *c, const eg_search_opts *o,
                      eg_graph **best, eg_search_result *r, char *err, size_t errlen) {
    double t0 = eg_now_s();
    size_t nr = eg_ruleset_count(rs);
    eg_status rc = EG_OK;
    *best = NULL;
    memset(r, 0, sizeof *r);
    r->n_rules = nr;
    if (!(r->applied = calloc(nr + 1, sizeof *r->applied))) rc = eg_errf(err, errlen, EG_ENOMEM, "saturation: out of memory");
    r->cost_before = eg_cost_graph(c, g);
    /* Passes: a pass that gained and stopped at a limit, when its rounds
     * after the first still found cheaper graphs or the e-nodes ran out
     * before its last round, restarts from its result, so the merges it
     * made are where the next one starts, and the shuffles that filled its
     * e-graph are gone (a sum of five convs needs a round per merge; one
     * e-graph over a whole model fills up with commuted adds first). Each
     * pass's result is a graph over g's data (a pass clones its input and
     * borrows through it), so the previous one is freed once the next has
     * made its own. A pass cut by the time limit that gains nothing leaves
     * the result as it was. */
    ee_budget budget = {EE_ILP_BUDGET, EE_POLISH_BUDGET};
    for (int pass = 0; rc == EG_OK && pass < (o->passes > 0 ? o->passes : 1); pass++) {
        eg_search_result pr;
        eg_graph *pb = NULL;
        int gaining;
        rc = saturate_pass(*best ? *best : g, rs, c, o, t0, &budget, &pb, &pr, &gaining, err, errlen);
        if (rc != EG_OK) {
            eg_search_result_free(&pr);
            eg_free(pb);
            break;
        }
        double before = *best ? r->cost_after : r->cost_before;
        /* kept when cheaper at all, as a round's extraction keeps its
         * cheapest: under a measuring backend's costs a chain of passes
         * may gain less than the timing noise each (FastViT-T8's training
         * form with the depth-4 rules: 8,255 us, then 8,108, ... 7,577),
         * and a noise margin here cut it at its first such step. Verify
         * times what the search returns. */
        int better = pr.cost_after < before;
        /* on: later rounds gained (a chain), or the e-nodes ran out before
         * the rounds did (the e-graph filled before the chains were done) */
        int go_on = gaining || (pr.stop == EG_STOP_NODES && pr.expanded < (uint64_t)o->iterations);
        add_pass(r, &pr, nr);
        r->passes++;
        if (pass > 0 && !better) { /* nothing gained: the previous pass's graphs stay */
            eg_free(pb);
            eg_search_result_free(&pr);
            break;
        }
        for (int k = 0; k < r->n_runners; k++) eg_free(r->runner[k]);
        eg_free(*best);
        *best = pb, r->cost_after = pr.cost_after;
        r->n_runners = pr.n_runners;
        for (int k = 0; k < pr.n_runners; k++) r->runner[k] = pr.runner[k], r->runner_cost[k] = pr.runner_cost[k];
        pr.n_runners = 0;
        eg_search_result_free(&pr);
        if (!better || !go_on || r->stop == EG_STOP_SATURATED || r->stop == EG_STOP_TIME) break;
    }
    if (rc != EG_OK) {
        eg_search_result_free(r);
        eg_free(*best);
        *best = NULL;
    }
    r->seconds = eg_now_s() - t0;
    return rc;
}

eg_status ee_saturate_until(ee_graph *E, const eg_ruleset *rs, const unsigned char *enabled, const eg_search_opts *o,
                           ee_done_fn done, void *arg, int *rounds) {
    double t0 = eg_now_s();
    size_t nr = eg_ruleset_count(rs);
    sched s = {0};
    uint64_t added = 0;
    int round = 0;
    eg_status rc = sched_new(&s, rs, nr, o->match_limit, 0, enabled);
    for (; rc == EG_OK && round < o->iterations; round++) {
        if (done(E, arg)) break;
        if (eg_now_s() - t0 > o->time_limit || E->n_live >= o->max_nodes) break;
        int changed, banned, timed_out;
        rc = round_once(E, rs, &s, o, round, t0 + o->time_limit, &changed, &banned, &added, &timed_out);
        if (rc != EG_OK || timed_out || (!changed && !banned)) {
            round += rc == EG_OK;
            break;
        }
        if (!changed)
            for (size_t i = 0; i < nr; i++) s.until[i] = 0;
    }
    if (rounds) *rounds = round;
    sched_free(&s);
    return rc;
}

typedef struct {
    int ta, tb;
} same_pair;

static int same_classes(ee_graph *E, void *arg) {
    const same_pair *p = arg;
    return ee_find(E, E->tensor_cls[p->ta]) == ee_find(E, E->tensor_cls[p->tb]);
}

eg_status eg_saturate_derives(const eg_graph *g, int ta, int tb, const eg_ruleset *rs, const eg_search_opts *o,
                              int *derived, int *rounds, char *err, size_t errlen) {
    ee_graph E;
    eg_graph *marked = NULL;
    same_pair p = {ta, tb};
    eg_status rc = EG_OK;
    *derived = 0;
    memset(&E, 0, sizeof E);
    if (ta < 0 || tb < 0 || ta >= g->n_tensors || tb >= g->n_tensors)
        return eg_errf(err, errlen, EG_EGRAPH, "derive: tensor %d or %d is not in the graph", ta, tb);
    if (!(marked = eg_graph_clone(g))) rc = EG_ENOMEM;
    if (rc == EG_OK) rc = eg_mark_nonfinite(marked);
    if (rc == EG_OK) rc = ee_build(&E, marked);
    if (rc == EG_OK) rc = ee_saturate_until(&E, rs, NULL, o, same_classes, &p, rounds);
    if (rc == EG_OK) *derived = same_classes(&E, &p);
    if (rc == EG_ENOMEM) eg_errf(err, errlen, rc, "derive: out of memory (%d e-nodes)", E.n_live);
    ee_free(&E);
    eg_free(marked);
    return rc;
}
