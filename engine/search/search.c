/* search.c - cost-based backtracking search over rule rewrites, and the
 * optimize pipeline around it (see search.h). Phases per expansion: pop
 * the cheapest queued state and build its graph (the parent's graph with
 * one rewrite), match every rule on it, judge each match without building
 * it (trial.c: cost change, token hash, alpha) and queue the survivors as
 * (parent, match) states. */
#include "search/search.h"
#include "sys/sys.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "search/prep.h"
#include "fold/range.h"
#include "rewrite/trial.h"
#include "search/worker.h"

/* One graph the search has met. Kept for every graph (small) so the path
 * to the best graph, and the rules on it, can be read back. A state is a
 * rewrite of its parent (parent, m) until it is built: when it is popped,
 * looked past, or kept as the result. Its graph is kept while it is the
 * best, held, being expanded, or the parent of states not built yet. */
typedef struct {
    eg_graph *g;     /* NULL until built, and once nothing needs it */
    double *node_cost; /* with g: each node's cost (eg_cost_graph_nodes) */
    uint64_t *tok;   /* with g: each tensor's token (trial.h) */
    eg_match *ml;    /* with g once expanded: its matches (eg_rematch uses
                        them for its children) */
    eg_judgment *jl; /* with ml: how each was judged */
    size_t n_ml;
    eg_match *cyc;   /* with ml once expanded: matches refused because
                        their rewrite would close a cycle, left out of ml
                        (with jl). A child made by a rewrite that keeps
                        paths refuses them too, without a look
                        (carry_cycles); another child matches them again. */
    size_t n_cyc;
    eg_match m;      /* the rewrite of the parent's graph that makes it */
    double cost;
    uint64_t hash;   /* its graph's token hash (eg_tok_hash) */
    int64_t parent;  /* state index, -1 for the input */
    uint32_t rule;   /* the rule that made it from its parent */
    int queued;
    int held;        /* a look past it is pending: its graph stays */
    int owes;        /* not built yet: counted in the parent's pending */
    int pending;     /* children not built yet: they need this graph */
} state;

/* The queue is two binary heaps of state indices over the same states:
 * `lo` pops the cheapest (ties: the older), `hi` the dearest (ties: the
 * newer) when the queue is over its cap. A state leaves one heap lazily:
 * an entry whose state is no longer queued is skipped when it surfaces. */
typedef struct {
    int64_t *e;
    size_t n, cap;
} heap;

typedef struct {
    state *s;
    size_t n, cap;
    size_t queued;
    heap lo, hi;
    uint64_t *seen; /* open-addressing set of token hashes (0 = empty) */
    size_t seen_cap, seen_n;
    uint64_t *shape_seen; /* the same for structural hashes (eg_graph_hash)
                             of the graphs queued */
    size_t shape_cap, shape_n;
} search;

static const char *const stop_names[EG_STOP_COUNT] = { /* ORDER STOP */
    [EG_STOP_SATURATED] = "saturated",
    [EG_STOP_BUDGET] = "budget",
    [EG_STOP_TIME] = "time limit",
    [EG_STOP_ITERATIONS] = "iterations",
    [EG_STOP_NODES] = "e-node limit",
};
_Static_assert(sizeof stop_names / sizeof stop_names[0] == EG_STOP_COUNT, "stop names");

const char *eg_stop_name(eg_stop s) {
    return (unsigned)s < EG_STOP_COUNT ? stop_names[s] : "?";
}

void eg_search_opts_init(eg_search_opts *o) {
    o->alpha = 1.05;
    o->budget = 200;
    o->time_limit = 60.0; /* a safety net: the search at its default bounds
                             takes 6 s on the largest bench model, a cold cost
                             cache and a busy machine several times that */
    o->progress = 0;
    o->threads = 2;
    o->second_opinion = 1;
    o->egraph = 0;
    o->iterations = 6;
    o->max_nodes = 100000;
    o->passes = 6;
    o->match_limit = 2000;
    o->ban_rounds = 2;
}

void eg_search_result_free(eg_search_result *r) {
    free(r->applied);
    r->applied = NULL;
    for (int k = 0; k < r->n_runners; k++) eg_free(r->runner[k]);
    r->n_runners = 0;
}

/* ---- the set of graph hashes seen ---- */

/* Add h to the set (*set, *cap slots, *n used).
 * @return 1 when h was new (and is now in), 0 when seen, -1 out of memory. */
static int set_add(uint64_t **set, size_t *cap, size_t *n, uint64_t h) {
    if (h == 0) h = 1; /* 0 marks an empty slot */
    if (2 * (*n + 1) > *cap) {
        size_t nc = *cap ? 2 * *cap : 1024;
        uint64_t *t = calloc(nc, sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < *cap; i++) {
            if (!(*set)[i]) continue;
            size_t k = (*set)[i] & (nc - 1);
            while (t[k]) k = (k + 1) & (nc - 1);
            t[k] = (*set)[i];
        }
        free(*set);
        *set = t, *cap = nc;
    }
    size_t k = h & (*cap - 1);
    while ((*set)[k]) {
        if ((*set)[k] == h) return 0;
        k = (k + 1) & (*cap - 1);
    }
    (*set)[k] = h, (*n)++;
    return 1;
}

static int seen_add(search *S, uint64_t h) { return set_add(&S->seen, &S->seen_cap, &S->seen_n, h); }
static int shape_add(search *S, uint64_t h) { return set_add(&S->shape_seen, &S->shape_cap, &S->shape_n, h); }

/* ---- states and the queue ---- */

/* 1 when state a comes out of heap h before state b: lo, the cheaper
 * (equal costs: the older); hi, the dearer (equal costs: the newer). */
static int heap_before(const search *S, const heap *h, int64_t a, int64_t b) {
    double ca = S->s[a].cost, cb = S->s[b].cost;
    if (h == &S->lo) return ca < cb || (ca == cb && a < b);
    return ca > cb || (ca == cb && a > b);
}

static int heap_push(search *S, heap *h, int64_t i) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 256;
        int64_t *t = realloc(h->e, cap * sizeof *t);
        if (!t) return -1;
        h->e = t, h->cap = cap;
    }
    size_t k = h->n++;
    while (k > 0 && heap_before(S, h, i, h->e[(k - 1) / 2])) {
        h->e[k] = h->e[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h->e[k] = i;
    return 0;
}

/* Put x at slot k of h and move it down to its place (heap order below
 * k holds). */
static void sift_down(const search *S, heap *h, size_t k, int64_t x) {
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && heap_before(S, h, h->e[c + 1], h->e[c])) c++;
        if (!heap_before(S, h, h->e[c], x)) break;
        h->e[k] = h->e[c];
        k = c;
    }
    h->e[k] = x;
}

/* The first queued state of h (stale entries are dropped on the way), or -1. */
static int64_t heap_top(search *S, heap *h) {
    while (h->n && !S->s[h->e[0]].queued) {
        int64_t last = h->e[--h->n];
        if (h->n) sift_down(S, h, 0, last);
    }
    return h->n ? h->e[0] : -1;
}

/* Keep only h's entries still queued, as a heap again: a state leaves
 * the other heap lazily, and the queue turns over many times, so without
 * this both heaps would hold every state ever queued. */
static void heap_compact(search *S, heap *h) {
    size_t n = 0;
    for (size_t i = 0; i < h->n; i++)
        if (S->s[h->e[i]].queued) h->e[n++] = h->e[i];
    h->n = n;
    for (size_t k = n / 2; k-- > 0;) sift_down(S, h, k, h->e[k]); /* bottom up */
}

/* Let state st's graph go. */
static void free_graph(state *st) {
    eg_free(st->g);
    free(st->node_cost);
    free(st->tok);
    free(st->ml);
    free(st->jl);
    free(st->cyc);
    st->g = NULL, st->node_cost = NULL, st->tok = NULL, st->ml = NULL, st->jl = NULL, st->n_ml = 0;
    st->cyc = NULL, st->n_cyc = 0;
}

/* A queued state: built (g, node_cost, tok) or a rewrite m of parent.
 * @return the new state's index, or -1 out of memory (g, node_cost and tok
 * are then freed). */
static int64_t add_state(search *S, eg_graph *g, double *node_cost, uint64_t *tok, const eg_match *m,
                         double cost, int64_t parent, uint32_t rule) {
    if (S->n == S->cap) {
        size_t cap = S->cap ? 2 * S->cap : 256;
        state *t = realloc(S->s, cap * sizeof *t);
        if (!t) {
            eg_free(g);
            free(node_cost);
            free(tok);
            return -1;
        }
        S->s = t, S->cap = cap;
    }
    S->s[S->n] = (state){.g = g, .node_cost = node_cost, .tok = tok, .cost = cost, .parent = parent,
                         .rule = rule, .queued = 1, .owes = !g};
    if (m) S->s[S->n].m = *m;
    if (!g) S->s[parent].pending++;
    if (S->lo.n > 4 * S->queued + 1024) heap_compact(S, &S->lo);
    if (S->hi.n > 4 * S->queued + 1024) heap_compact(S, &S->hi);
    if (heap_push(S, &S->lo, (int64_t)S->n) || heap_push(S, &S->hi, (int64_t)S->n)) {
        free_graph(&S->s[S->n]);
        return -1;
    }
    S->queued++;
    return (int64_t)S->n++;
}

/* Take state i out of the queue. */
static void unqueue(search *S, int64_t i) {
    S->s[i].queued = 0, S->queued--;
}

/* ---- one expansion ---- */

/* How far below a node the rewrite created a match may be rooted and
 * still read it: a rule's left side has at most this many levels. */
#define LOOK_DEPTH 3

/* How many costlier steps in a row the search looks past: SqueezeNet's
 * fire module needs two (its relu, then its bias, moved past the concat of
 * its two convs, each unfusing an epilogue) before the convs merge. */
#define LOOK_STEPS 2

/* Jobs prepared ahead of their state's pop: on the worker (pending or
 * done) or done by this thread; and how many the worker is kept busy with. */
#define N_JOBS 5
#define WORKER_AHEAD 2

typedef struct {
    search S;
    const eg_ruleset *rs;
    eg_cost *c;
    const eg_search_opts *o;
    eg_search_result *r;
    int64_t best;
    int64_t expanding; /* the state whose graph the matches point into */
    double t0, next_progress;
    eg_worker *w;      /* NULL: one thread */
    eg_cost *wc;       /* with w: the worker's fork of c */
    eg_prep job[N_JOBS];      /* jobs prepared ahead (state -1: a free slot) */
    int on_worker[N_JOBS];    /* the job was given to the worker, */
    uint64_t ticket[N_JOBS];  /* as this ticket */
} run;

/* A state's graph goes once nothing needs it: not queued, not the best,
 * not being expanded, not held for a look past it, no child waiting to be
 * built from it. */
static void drop_graph(run *R, int64_t i) {
    state *st = &R->S.s[i];
    if (!st->queued && !st->held && !st->pending && i != R->best && i != R->expanding) free_graph(st);
}

/* State i will not be built from its parent: release the parent. */
static void release_parent(run *R, int64_t i) {
    state *st = &R->S.s[i];
    if (!st->owes) return;
    st->owes = 0;
    R->S.s[st->parent].pending--;
    drop_graph(R, st->parent);
}

/* Take the worst queued state out when the queue is over its cap (its
 * graph stays while it is held; one not built never will be). */
static void trim_queue(run *R) {
    search *S = &R->S;
    if (S->queued <= EG_SEARCH_QUEUE_MAX) return;
    int64_t w = heap_top(S, &S->hi);
    unqueue(S, w);
    if (w != R->best) release_parent(R, w);
    drop_graph(R, w);
}

/* Build state i's graph from its parent's: eg_apply of its match, node
 * costs from the parent's, tokens (eg_tok_child). A rewrite the trial
 * passed and eg_apply refuses (not expected) leaves g NULL: *ok 0. The
 * caller releases the parent (release_parent) when done with it.
 * @return EG_OK or EG_ENOMEM. */
static eg_status build_state(run *R, int64_t i, int *ok) {
    search *S = &R->S;
    state *st = &S->s[i];
    *ok = 1;
    if (st->g) return EG_OK;
    double t = eg_now_s(), cost;
    const state *p = &S->s[st->parent];
    eg_status rc = eg_build_child(R->rs, R->c, p->g, p->tok, p->node_cost, &st->m, &st->g, &st->node_cost, &st->tok,
                                  &cost);
    R->r->t_apply += eg_now_s() - t;
    if (rc == EG_ENOMEM) return rc;
    *ok = rc == EG_OK;
    return EG_OK;
}

/* Judge one rewrite, new (its hash is in the seen set now) and of that
 * cost: under alpha x best? Queue it, as match m of parent's graph (ng
 * NULL: built when needed) or built (ng, nc, tok, which it takes), and
 * drop the worst queued state when the queue is full. *queued_as: its
 * index when it was queued, else -1. @return EG_OK or EG_ENOMEM. */
static eg_status consider(run *R, const eg_match *m, eg_graph *ng, double *nc, uint64_t *tok, double cost,
                          uint64_t h, int64_t parent, int64_t *queued_as) {
    search *S = &R->S;
    *queued_as = -1;
    if (cost >= R->o->alpha * S->s[R->best].cost) {
        R->r->pruned++;
        eg_free(ng);
        free(nc);
        free(tok);
        return EG_OK;
    }
    int64_t i = add_state(S, ng, nc, tok, m, cost, parent, m->rule);
    if (i < 0) return EG_ENOMEM;
    S->s[i].hash = h;
    if (cost < S->s[R->best].cost) {
        int64_t old = R->best;
        R->best = i;
        drop_graph(R, old);
    }
    *queued_as = i;
    trim_queue(R);
    return EG_OK;
}

/* Move the cheapest states still queued, after the best, into r->runner,
 * built (ties to the older, as in the queue). All are built, and held,
 * before any graph is taken: a queued state built early to be looked past
 * may be the parent of another. @return EG_OK or EG_ENOMEM. */
static eg_status keep_runners(run *R, eg_search_result *r) {
    search *S = &R->S;
    int64_t pick[EG_SEARCH_RUNNERS];
    int n = 0;
    while (n < EG_SEARCH_RUNNERS) {
        int64_t p = -1;
        for (size_t i = 0; i < S->n; i++)
            if ((int64_t)i != R->best && S->s[i].queued && (p < 0 || S->s[i].cost < S->s[p].cost))
                p = (int64_t)i;
        if (p < 0) break;
        int ok;
        eg_status rc = build_state(R, p, &ok);
        if (rc != EG_OK) return rc;
        release_parent(R, p);
        unqueue(S, p);
        if (ok) {
            S->s[p].held = 1; /* kept while the others are built */
            pick[n++] = p;
        }
    }
    for (int k = 0; k < n; k++) {
        r->runner[r->n_runners] = S->s[pick[k]].g;
        r->runner_cost[r->n_runners++] = S->s[pick[k]].cost;
        S->s[pick[k]].g = NULL, S->s[pick[k]].held = 0;
        free_graph(&S->s[pick[k]]);
    }
    return EG_OK;
}

/* ---- queueing the judged matches of one graph ---- */

static eg_status look_ahead(run *R, int64_t ci, const eg_graph *p, int level);

/* 1 when a graph of that cost, queued now, would stay queued: the queue
 * has room or a dearer graph (a full queue drops its dearest, ties the
 * newer). Only such a graph needs the structural test: one dropped at once
 * crowds nothing. */
static int would_stay(run *R, double cost) {
    search *S = &R->S;
    if (S->queued < EG_SEARCH_QUEUE_MAX) return 1;
    int64_t w = heap_top(S, &S->hi);
    return w < 0 || cost < S->s[w].cost;
}

/* Phase 1: queue the matches of L in state gi's graph, judged in v
 * (eg_judge_all), that are new and under alpha; one that costs more than
 * gi is built and held when steps past it are to be judged (look_next).
 * Phase 2: judge those steps (look_ahead), then let the held graphs go.
 * Judging all of one level before any of the next keeps a graph's first
 * sighting at its shallowest level, where it is looked past. The graphs v
 * holds are taken. @return EG_OK, EG_ENOMEM. */
static eg_status queue_all(run *R, int64_t gi, const eg_match_list *L, eg_verdict *v, int look_next,
                           int level, int counted_ahead) {
    search *S = &R->S;
    eg_graph *g = S->s[gi].g;
    int64_t *held = NULL;
    size_t n_held = 0;
    eg_status rc = EG_OK;
    eg_hash_ctx *hx = NULL;
    if (look_next && L->n && !(held = malloc(L->n * sizeof *held))) rc = EG_ENOMEM;
    /* the judge phase's time: this loop's, less the graphs built in it
     * (build_state counts theirs as apply) */
    double t = eg_now_s(), applied = R->r->t_apply;
    for (size_t k = 0; k < L->n && rc == EG_OK; k++) {
        const eg_match *m = &L->m[k];
        eg_graph *ng = v[k].ng;
        double *nc = v[k].nc, cost = v[k].cost;
        uint64_t *tok = v[k].tok, h = v[k].h;
        v[k].ng = NULL, v[k].nc = NULL, v[k].tok = NULL; /* taken */
        if (v[k].jr != EG_OK) {
            R->r->rejected++;
            continue;
        }
        R->r->generated++;
        R->r->looked_ahead += counted_ahead;
        /* over alpha: pruned, and not worth remembering (the best only
         * falls, so the same graph met again is over alpha again) */
        if (cost >= R->o->alpha * S->s[R->best].cost) {
            R->r->pruned++;
            eg_free(ng), free(nc), free(tok);
            continue;
        }
        /* a full queue would drop it at once: no state for it (the states
         * are kept for the whole search), and not remembered as seen, so
         * met again when the queue has room, it is queued then */
        if (!would_stay(R, cost)) {
            eg_free(ng), free(nc), free(tok);
            continue;
        }
        int fresh = seen_add(S, h);
        if (fresh <= 0) {
            eg_free(ng), free(nc), free(tok);
            if (fresh < 0) rc = EG_ENOMEM;
            else R->r->duplicates++;
            continue;
        }
        /* new in structure too? Token hashes tell apart some graphs equal
         * in structure (trial.h: a value named on one path as a rewrite's
         * output, on another as its inner value), and queueing such copies
         * crowds the queue: the exact test */
        {
            uint64_t sh = 0;
            if (!ng && !hx && !(hx = eg_hash_ctx_new(g))) { /* made when first needed */
                eg_free(ng), free(nc), free(tok);
                rc = EG_ENOMEM;
                break;
            }
            eg_status hr = ng ? EG_OK : eg_apply_hash(R->rs, hx, m, &sh);
            if (ng) sh = eg_graph_hash(ng);
            int shape_fresh = hr == EG_OK ? shape_add(S, sh) : 0;
            if (hr == EG_ENOMEM || shape_fresh < 0) {
                eg_free(ng), free(nc), free(tok);
                rc = EG_ENOMEM;
                break;
            }
            if (!shape_fresh) {
                R->r->duplicates++;
                eg_free(ng), free(nc), free(tok);
                continue;
            }
        }
        /* a dearer rewrite is looked past, unless it is judged as in the
         * parent: far from the last change, it was looked past there */
        int64_t st;
        rc = consider(R, m, ng, nc, tok, cost, h, gi, &st);
        if (rc == EG_OK && look_next && !v[k].inherited && st >= 0 && S->s[st].queued &&
            S->s[st].cost > S->s[gi].cost) {
            int ok;
            /* the parent stays while st is queued: st's matches, when it
             * is popped, come from the parent's */
            rc = build_state(R, st, &ok);
            if (rc != EG_OK || !ok) release_parent(R, st);
            if (rc == EG_OK && ok) {
                S->s[st].held = 1;
                held[n_held++] = st;
            }
        }
    }
    R->r->t_judge += eg_now_s() - t - (R->r->t_apply - applied);
    eg_hash_ctx_free(hx);
    for (size_t k = 0; k < n_held; k++) {
        if (rc == EG_OK) rc = look_ahead(R, held[k], g, level);
        S->s[held[k]].held = 0;
        drop_graph(R, held[k]);
    }
    free(held);
    return rc;
}

/* ---- steps past a costlier rewrite ---- */

/* A rewrite that costs more than its parent may be the first half of a
 * gain: on ResNet, adding two biased convs as one bias after the add
 * unfuses the biases (dearer), and only then can the two convs become one
 * (cheaper than the start). A best-first search reaches such a second step
 * late or never, behind every graph of the first step's cost. So the
 * search judges the next steps at once: the matches in child c (state ci,
 * held, made from p) that use a node p has not (fresh) and are rooted at
 * most LOOK_DEPTH nodes below one. Their graphs are judged like any other
 * (eg_judge_all, queue_all), with ci as their parent; one that costs more
 * than ci again is looked past in turn, up to LOOK_STEPS levels (level
 * counts from 0). @return EG_OK or EG_ENOMEM. */
static eg_status look_ahead(run *R, int64_t ci, const eg_graph *p, int level) {
    search *S = &R->S;
    const eg_graph *c = S->s[ci].g;
    size_t nn = (size_t)(c->n_nodes ? c->n_nodes : 1);
    unsigned char *fresh = calloc(nn, 3), *near = fresh + nn, *wo = fresh + 2 * nn;
    int *depth = malloc(nn * sizeof *depth);
    eg_match_list L = {.rs = R->rs, .g = c};
    eg_verdict *v = NULL;
    eg_status rc = fresh && depth ? EG_OK : EG_ENOMEM;
    for (int j = 0; rc == EG_OK && j < c->n_nodes; j++) { /* producers come first */
        const eg_node *n = &c->node[j];
        /* a value p has not: a tensor eg_apply added, or one whose name it
         * swapped with an added one (a graph output or pinned name keeps
         * its name, apply.c); any other keeps its id and name */
        for (int k = 0; k < n->n_out && !fresh[j]; k++) {
            int t = n->out[k];
            fresh[j] = t >= 0 && (t >= p->n_tensors || (p->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED))) &&
                       eg_find_tensor(p, c->tensor[t].name) < 0;
        }
        depth[j] = fresh[j] ? 0 : LOOK_DEPTH + 1;
        for (int k = 0; k < n->n_in + n->n_implicit; k++) {
            int t = n->in[k], q = t >= 0 ? c->tensor[t].producer : -1;
            if (q >= 0 && q < j && depth[q] + 1 < depth[j]) depth[j] = depth[q] + 1;
        }
        near[j] = depth[j] <= LOOK_DEPTH;
    }
    if (rc == EG_OK) {
        eg_mark_weight_only(c, wo);
        L.weight_only = wo;
        double t = eg_now_s();
        rc = eg_match_near(R->rs, c, fresh, near, eg_match_list_collect, &L);
        R->r->t_match += eg_now_s() - t;
        if (rc == EG_OK && L.oom) rc = EG_ENOMEM;
    }
    if (rc == EG_OK && !(v = calloc(L.n ? L.n : 1, sizeof *v))) rc = EG_ENOMEM;
    if (rc == EG_OK) {
        const state *st = &S->s[ci];
        eg_judge_in J = {R->rs, R->c, st->g, st->tok, st->node_cost, st->cost, st->hash,
                         eg_ruleset_keeps_paths(R->rs, st->rule), NULL, NULL, 0};
        double t = eg_now_s();
        rc = eg_judge_all(&J, &L, v, NULL);
        R->r->t_apply += J.t_apply;
        R->r->t_judge += eg_now_s() - t - J.t_apply;
    }
    if (rc == EG_OK) rc = queue_all(R, ci, &L, v, level + 1 < LOOK_STEPS, level + 1, 1);
    eg_verdicts_free(v, L.n);
    free(fresh);
    free(depth);
    free(L.m);
    free(L.from);
    return rc;
}

/* Move expanded state st's matches judged to close a cycle from ml (and
 * jl) to cyc, after the ones it carried. @return EG_OK or EG_ENOMEM. */
static eg_status set_aside_cycles(state *st) {
    size_t nc = 0, w = 0;
    for (size_t k = 0; st->jl && k < st->n_ml; k++) nc += st->jl[k].verdict == EG_J_CYCLE;
    if (!nc) return EG_OK;
    eg_match *cyc = realloc(st->cyc, sizeof *cyc * (st->n_cyc + nc));
    if (!cyc) return EG_ENOMEM;
    st->cyc = cyc;
    for (size_t k = 0; k < st->n_ml; k++) {
        if (st->jl[k].verdict == EG_J_CYCLE) {
            cyc[st->n_cyc++] = st->ml[k];
            continue;
        }
        st->ml[w] = st->ml[k], st->jl[w] = st->jl[k];
        w++;
    }
    st->n_ml = w;
    return EG_OK;
}

/* Give built state i, never expanded, its matches (ml) from its
 * parent's, deriving the parent's first the same way when it has none: a
 * graph built to be looked past is matched only near what it changed, and
 * its children, popped later, are matched from its matches.
 * @return EG_OK, also when no ancestor has matches at hand (ml stays NULL),
 * or EG_ENOMEM. */
static eg_status derive_matches(run *R, int64_t i) {
    search *S = &R->S;
    state *st = &S->s[i];
    if (st->ml || !st->g || st->parent < 0 || !S->s[st->parent].g) return EG_OK;
    eg_status rc = derive_matches(R, st->parent);
    const state *p = &S->s[st->parent];
    if (rc != EG_OK || !p->ml) return rc;
    eg_match_list L;
    /* st has no cyc: all of them */
    rc = eg_match_child(R->rs, st->g, p->g, p->ml, p->n_ml, p->cyc, p->n_cyc, 1, NULL, &L);
    if (rc == EG_OK) st->ml = L.m, st->n_ml = L.n;
    else free(L.m);
    free(L.from);
    return rc;
}

/* Fill P's inputs for state i (eg_prep_run then builds, matches and
 * judges it), judging with cost c; the parent is pinned (pending) until
 * the expansion is done with it (expand) or the job is dropped
 * (drop_prep). @return EG_OK or EG_ENOMEM. */
static eg_status prepare(run *R, int64_t i, eg_prep *P, eg_cost *c) {
    search *S = &R->S;
    int64_t pi = S->s[i].parent;
    eg_status rc = pi >= 0 ? derive_matches(R, pi) : EG_OK; /* the one write to another state */
    const state *st = &S->s[i];
    memset(P, 0, sizeof *P);
    P->state = -1;
    if (rc != EG_OK) return rc;
    P->state = i, P->rs = R->rs, P->c = c;
    P->m = st->m, P->cost = st->cost, P->hash = st->hash, P->keeps_paths = eg_ruleset_keeps_paths(R->rs, st->rule);
    P->g = st->g, P->nc = st->node_cost, P->tok = st->tok;
    if (pi < 0) return EG_OK;
    state *p = &S->s[pi];
    p->pending++;
    if (!p->g) return EG_OK;
    P->pg = p->g, P->ptok = p->tok, P->pnc = p->node_cost;
    P->pml = p->ml, P->pn_ml = p->n_ml, P->pcyc = p->cyc, P->pn_cyc = p->n_cyc, P->pjl = p->jl;
    return EG_OK;
}

/* Drop job P unused: free it and unpin its parent. */
static void drop_prep(run *R, eg_prep *P) {
    if (P->state < 0) return;
    int64_t pi = R->S.s[P->state].parent;
    eg_prep_free(P);
    if (pi < 0) return;
    R->S.s[pi].pending--;
    drop_graph(R, pi);
}

/* 1 when the job for queued state i may run on the worker while another
 * state is expanded: i is not built (its graph will be the job's own), and
 * its parent's graph, matches and judgments will not change meanwhile
 * (they change only while it is queued or expanded; derive_matches fills
 * in missing ones, which prepare does first). */
static int can_prepare_ahead(const run *R, int64_t i) {
    const state *st = &R->S.s[i];
    if (st->g || st->parent < 0) return 0;
    return !R->S.s[st->parent].queued && st->parent != R->expanding;
}

/* Expand state i from its job P (done): take its graph and matches, queue
 * the judged matches, look past the dearer ones. */
static eg_status expand(run *R, int64_t i, eg_prep *P, char *err, size_t errlen) {
    search *S = &R->S;
    int64_t pi = S->s[i].parent;
    R->r->t_apply += P->t_apply, R->r->t_match += P->t_match, R->r->t_judge += P->t_judge;
    R->r->rejected += P->carried;
    eg_status rc = P->rc;
    if (rc == EG_OK && !P->ok) { /* not expected: the trial passes what eg_apply refuses */
        R->r->rejected++;
    } else if (rc == EG_OK) {
        state *st = &S->s[i];
        if (P->built) st->g = P->g, st->node_cost = P->nc, st->tok = P->tok;
        P->g = NULL, P->nc = NULL, P->tok = NULL, P->built = 0;
        if (P->cyc_set) {
            free(st->cyc);
            st->cyc = P->cyc, st->n_cyc = P->n_cyc;
            P->cyc = NULL;
        }
        rc = queue_all(R, i, &P->L, P->v, 1, 0, 0);
        if (rc == EG_OK) {
            /* the state keeps its matches and judgments while its graph
             * lives: its children's matches come from them */
            st = &S->s[i]; /* queue_all adds states */
            free(st->ml); /* derived when a child of it was popped (derive_matches) */
            st->ml = P->L.m, st->n_ml = P->L.n, st->jl = P->jl;
            P->L.m = NULL, P->jl = NULL;
            rc = set_aside_cycles(st);
        }
    }
    eg_prep_free(P);
    release_parent(R, i);
    if (pi >= 0) {
        S->s[pi].pending--;
        drop_graph(R, pi);
    }
    if (rc) return eg_errf(err, errlen, rc, "search: %s", rc == EG_ENOMEM ? "out of memory" : eg_status_name(rc));
    return EG_OK;
}

/* Move job *from into *to (from is left empty). */
static void move_job(eg_prep *to, eg_prep *from) {
    *to = *from;
    memset(from, 0, sizeof *from);
    from->state = -1;
}

/* The slot of the job for state i, or -1. */
static int job_of(const run *R, int64_t i) {
    for (int k = 0; k < N_JOBS; k++)
        if (R->job[k].state == i) return k;
    return -1;
}

/* Wait for job k when the worker has it. */
static void job_wait(run *R, int k) {
    if (R->on_worker[k]) eg_worker_wait(R->w, R->ticket[k]);
    R->on_worker[k] = 0;
}

/* The cheapest queued state that has no job and may be prepared ahead
 * (can_prepare_ahead), or -1: the one expected to be popped first. */
static int64_t next_to_prepare(run *R) {
    search *S = &R->S;
    int64_t best = -1;
    for (size_t k = 0; k < S->lo.n; k++) {
        int64_t i = S->lo.e[k];
        if (S->s[i].queued && (best < 0 || heap_before(S, &S->lo, i, best)) && can_prepare_ahead(R, i) &&
            job_of(R, i) < 0)
            best = i;
    }
    return best;
}

/* Prepare the state expected next, with cost c, in a free slot: its slot,
 * or -1 when there is no slot or no such state (*rc: EG_ENOMEM or EG_OK). */
static int prepare_next(run *R, eg_cost *c, eg_status *rc) {
    int k = job_of(R, -1);
    int64_t i = k >= 0 ? next_to_prepare(R) : -1;
    *rc = EG_OK;
    if (i < 0) return -1;
    if ((*rc = prepare(R, i, &R->job[k], c)) != EG_OK) return -1;
    return k;
}

/* Keep the worker WORKER_AHEAD jobs ahead. @return EG_OK or EG_ENOMEM. */
static eg_status feed_worker(run *R) {
    eg_status rc = EG_OK;
    while (R->w && eg_worker_pending(R->w) < WORKER_AHEAD) {
        int k = prepare_next(R, R->wc, &rc);
        if (k < 0) break;
        R->ticket[k] = eg_worker_submit(R->w, eg_prep_run, &R->job[k]);
        R->on_worker[k] = 1;
    }
    return rc;
}

/* The job for popped state i into *P, done. Jobs are prepared ahead for
 * the cheapest queued states that have none (in practice the next ones
 * popped: the queue's order changes little in one expansion): the worker
 * is kept WORKER_AHEAD ahead, and while this thread would wait for it, it
 * prepares more itself. A job whose state is no longer queued is dropped;
 * i with no job is prepared here. @return EG_OK or EG_ENOMEM. */
static eg_status take_job(run *R, int64_t i, eg_prep *P) {
    search *S = &R->S;
    eg_status rc = EG_OK;
    P->state = -1;
    for (int k = 0; k < N_JOBS; k++)
        if (R->job[k].state >= 0 && R->job[k].state != i && !S->s[R->job[k].state].queued) {
            job_wait(R, k);
            drop_prep(R, &R->job[k]);
        }
    int mine = job_of(R, i);
    while (mine >= 0 && R->on_worker[mine] && !eg_worker_done(R->w, R->ticket[mine])) {
        rc = feed_worker(R); /* the worker's: prepare the next ones meanwhile */
        int k = rc == EG_OK ? prepare_next(R, R->c, &rc) : -1;
        if (k < 0) break;
        eg_prep_run(&R->job[k]);
    }
    if (mine >= 0) {
        job_wait(R, mine);
        move_job(P, &R->job[mine]);
    }
    if (rc == EG_OK && mine < 0) rc = prepare(R, i, P, R->c);
    if (rc == EG_OK) rc = feed_worker(R);
    if (rc == EG_OK && mine < 0) eg_prep_run(P);
    if (rc != EG_OK && P->state >= 0) drop_prep(R, P);
    return rc;
}

static void progress(run *R) {
    double t = eg_now_s() - R->t0;
    if (!R->o->progress || t < R->next_progress) return;
    R->next_progress = t + 1.0;
    fprintf(stderr, "engine: search %.0f s, expanded %llu, generated %llu, queued %zu, best %.1f us\n", t,
            (unsigned long long)R->r->expanded, (unsigned long long)R->r->generated, R->S.queued,
            R->S.s[R->best].cost);
}

/* Count the rules on the path from the input to the best graph. */
static eg_status fill_applied(run *R) {
    size_t n = eg_ruleset_count(R->rs);
    R->r->n_rules = n;
    R->r->applied = calloc(n ? n : 1, sizeof *R->r->applied);
    if (!R->r->applied) return EG_ENOMEM;
    for (int64_t i = R->best; R->S.s[i].parent >= 0; i = R->S.s[i].parent) R->r->applied[R->S.s[i].rule]++;
    return EG_OK;
}

eg_status eg_search(const eg_graph *g, const eg_ruleset *rs, eg_cost *c, const eg_search_opts *o,
                    eg_graph **best, eg_search_result *r, char *err, size_t errlen) {
    run R = {.rs = rs, .c = c, .o = o, .r = r, .expanding = -1};
    for (int k = 0; k < N_JOBS; k++) R.job[k].state = -1;
    memset(r, 0, sizeof *r);
    *best = NULL;
    R.t0 = eg_now_s(), R.next_progress = 1.0;
    /* a second thread prepares the next states while one is expanded: on a
     * machine of more than one CPU, and only with a cost that measures
     * nothing (eg_cost_fork), so that a job's answers are the same on either
     * thread; without a second thread, this one does it all */
    if (o->threads > 1 && sysconf(_SC_NPROCESSORS_ONLN) > 1 && eg_cost_fork(c, &R.wc) == EG_OK &&
        eg_worker_new(&R.w) != EG_OK) {
        eg_cost_free(R.wc);
        R.wc = NULL;
    }
    double measured0 = eg_cost_seconds(c);
    eg_status rc = EG_OK;
    eg_graph *g0 = eg_graph_clone(g);
    double *nc0 = g0 ? malloc(sizeof *nc0 * (size_t)(g0->n_nodes ? g0->n_nodes : 1)) : NULL;
    uint64_t *tok0 = g0 ? malloc(sizeof *tok0 * (size_t)(g0->n_tensors ? g0->n_tensors : 1)) : NULL;
    uint64_t h0 = 0;
    /* the values a rewrite must not multiply by zeros (range.h) */
    if (!g0 || !nc0 || !tok0 || eg_mark_nonfinite(g0) || eg_tensor_hashes(g0, tok0) || seen_add(&R.S, h0 = eg_tok_hash(g0, tok0)) < 0 ||
        shape_add(&R.S, eg_graph_hash(g0)) < 0 ||
        add_state(&R.S, g0, nc0, tok0, NULL, eg_cost_graph_nodes(c, g0, NULL, nc0), -1, 0) < 0) {
        if (R.S.n == 0) eg_free(g0), free(nc0), free(tok0);
        rc = eg_errf(err, errlen, EG_ENOMEM, "search: out of memory");
    } else {
        R.S.s[0].hash = h0;
    }
    r->cost_before = R.S.n ? R.S.s[0].cost : 0;
    r->stop = EG_STOP_SATURATED;
    while (rc == EG_OK) {
        if (R.S.queued == 0) break;
        if (r->expanded >= o->budget) {
            r->stop = EG_STOP_BUDGET;
            break;
        }
        /* Measuring a kernel (a measured cost backend) is not search: the
         * clock leaves it out, so a run with a cold cost cache stops where
         * a warm one does. */
        if (eg_now_s() - R.t0 - (eg_cost_seconds(c) - measured0) >= o->time_limit) {
            r->stop = EG_STOP_TIME;
            break;
        }
        int64_t i = heap_top(&R.S, &R.S.lo);
        unqueue(&R.S, i);
        r->expanded++;
        R.expanding = i;
        eg_prep job;
        rc = take_job(&R, i, &job);
        if (rc != EG_OK) eg_errf(err, errlen, rc, "search: out of memory");
        else rc = expand(&R, i, &job, err, errlen);
        R.expanding = -1;
        drop_graph(&R, i);
        progress(&R);
    }
    eg_worker_free(R.w); /* the jobs prepared ahead are not needed now */
    for (int k = 0; k < N_JOBS; k++) R.on_worker[k] = 0, drop_prep(&R, &R.job[k]);
    if (R.w) {
        eg_cost_join_stats(c, R.wc);
        eg_cost_free(R.wc);
    }
    if (rc == EG_OK && fill_applied(&R)) rc = eg_errf(err, errlen, EG_ENOMEM, "search: out of memory");
    int ok = 1;
    if (rc == EG_OK && (rc = build_state(&R, R.best, &ok)) != EG_OK)
        eg_errf(err, errlen, rc, "search: out of memory");
    if (rc == EG_OK) release_parent(&R, R.best);
    if (rc == EG_OK && !ok) /* not expected: tests check the trial against eg_apply */
        rc = eg_errf(err, errlen, EG_EGRAPH, "search: internal error: the best rewrite (rule %u) did not apply", R.S.s[R.best].rule);
    if (rc == EG_OK && (rc = keep_runners(&R, r)) != EG_OK) eg_errf(err, errlen, rc, "search: out of memory");
    if (rc == EG_OK) {
        *best = R.S.s[R.best].g;
        R.S.s[R.best].g = NULL;
        free_graph(&R.S.s[R.best]);
        r->cost_after = R.S.s[R.best].cost;
    }
    r->seconds = eg_now_s() - R.t0;
    for (size_t i = 0; i < R.S.n; i++) free_graph(&R.S.s[i]);
    free(R.S.s);
    free(R.S.seen);
    free(R.S.shape_seen);
    free(R.S.lo.e);
    free(R.S.hi.e);
    if (rc) eg_search_result_free(r);
    return rc;
}
