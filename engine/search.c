/* search.c - cost-based backtracking search over rule rewrites, and the
 * optimize pipeline around it (see search.h). Phases per expansion: pop
 * the cheapest queued state and build its graph (the parent's graph with
 * one rewrite), match every rule on it, judge each match without building
 * it (trial.c: cost change, token hash, alpha) and queue the survivors as
 * (parent, match) states. */
#include "search.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trial.h"

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
    struct judgment *jl; /* with ml: how each was judged */
    size_t n_ml;
    eg_match *cyc;   /* with ml once expanded: matches refused because
                        their rewrite would close a cycle, left out of ml
                        (with jl). A child made by a rewrite that keeps
                        paths refuses them too, without a look
                        (carry_cycles); another child matches them again. */
    size_t n_cyc;
    eg_match m;      /* the rewrite of the parent's graph that makes it */
    double cost;
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
};
_Static_assert(sizeof stop_names / sizeof stop_names[0] == EG_STOP_COUNT, "stop names");

const char *eg_stop_name(eg_stop s) {
    return (unsigned)s < EG_STOP_COUNT ? stop_names[s] : "?";
}

void eg_search_opts_init(eg_search_opts *o) {
    o->alpha = 1.05;
    o->budget = 200;
    o->time_limit = 10.0;
    o->progress = 0;
}

void eg_search_result_free(eg_search_result *r) {
    free(r->applied);
    r->applied = NULL;
    for (int k = 0; k < r->n_runners; k++) eg_free(r->runner[k]);
    r->n_runners = 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static eg_status fail(char *err, size_t errlen, eg_status rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
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

typedef struct {
    const eg_ruleset *rs;
    const eg_graph *g;
    const unsigned char *weight_only; /* per node of g (eg_mark_weight_only) */
    eg_match *m;
    size_t *from; /* [n]: the parent's match it is (eg_rematch), or EG_REMATCH_NEW */
    size_t n, cap;
    int oom;
} match_list;

/* How a match was judged, kept with a graph's matches so the same match in
 * a child, far from what the child's rewrite touched, is judged alike
 * without a trial (eg_trial_reach). */
enum { J_OK, J_SHAPE, J_CYCLE, J_OTHER };
typedef struct judgment {
    double delta; /* cost change (J_OK) */
    uint64_t dh;  /* token hash change (J_OK) */
    int verdict;  /* J_OK; J_SHAPE: eg_apply refuses its shapes (they are
                     the match's own: it holds in any graph the match is
                     in); J_CYCLE: its rewrite would close a cycle (it
                     holds after a rewrite that keeps paths,
                     eg_ruleset_keeps_paths); J_OTHER: not judged by the
                     trial, or unknown: judge it again */
} judgment;

/* The verdict for a trial's status. */
static int verdict_of(eg_status jr) {
    return jr == EG_OK ? J_OK : jr == EG_ESHAPE ? J_SHAPE : jr == EG_EGRAPH ? J_CYCLE : J_OTHER;
}

/* Collect a match, unless it rewrites only weight-only nodes: such an
 * expression is folded into initializers on export, so all its rewrites
 * cost the same, and there are endless ones ((ones x) => (relu (ones x)),
 * a new bias vector (ewadd b1 b2) written another way ...): a plateau the
 * budget would be spent on. */
static int collect_from(const eg_match *m, size_t from, void *arg) {
    match_list *L = arg;
    int all_weights = 1;
    for (int j = 0; j < m->n_nodes; j++) all_weights &= L->weight_only[m->node[j]];
    if (all_weights) return 0;
    if (L->n == L->cap) {
        size_t cap = L->cap ? 2 * L->cap : 64;
        eg_match *t = realloc(L->m, cap * sizeof *t);
        size_t *f = t ? realloc(L->from, cap * sizeof *f) : NULL;
        if (t) L->m = t;
        if (!f) {
            L->oom = 1;
            return 1;
        }
        L->from = f, L->cap = cap;
    }
    L->from[L->n] = from;
    L->m[L->n++] = *m;
    return 0;
}

static int collect_match(const eg_match *m, void *arg) {
    return collect_from(m, EG_REMATCH_NEW, arg);
}

/* How far below a node the rewrite created a match may be rooted and
 * still read it: a rule's left side has at most this many levels. */
#define LOOK_DEPTH 3

/* How many costlier steps in a row the search looks past: SqueezeNet's
 * fire module needs two (its relu, then its bias, moved past the concat of
 * its two convs, each unfusing an epilogue) before the convs merge. */
#define LOOK_STEPS 2

typedef struct {
    search S;
    const eg_ruleset *rs;
    eg_cost *c;
    const eg_search_opts *o;
    eg_search_result *r;
    int64_t best;
    int64_t expanding; /* the state whose graph the matches point into */
    const judgment *inherit;       /* the parent's judgments of its matches,
                                      while an expansion judges its own */
    const unsigned char *touched;  /* with inherit: nodes its rewrite touched */
    double t0, next_progress;
    match_list L;
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
    double t = now_s();
    const state *p = &S->s[st->parent];
    eg_graph *g = NULL;
    char aerr[EG_ERRLEN];
    eg_status rc = eg_apply(R->rs, p->g, &st->m, &g, aerr, sizeof aerr);
    if (rc == EG_OK) {
        st->node_cost = malloc(sizeof *st->node_cost * (size_t)(g->n_nodes ? g->n_nodes : 1));
        st->tok = malloc(sizeof *st->tok * (size_t)(g->n_tensors ? g->n_tensors : 1));
        st->g = g;
        if (!st->node_cost || !st->tok) rc = EG_ENOMEM;
        else if (eg_tok_child(R->rs, p->g, p->tok, &st->m, g, st->tok) != EG_OK) rc = EG_EGRAPH;
        else eg_cost_graph_nodes(R->c, g, p->node_cost, st->node_cost);
        if (rc != EG_OK) free_graph(st);
    }
    R->r->t_apply += now_s() - t;
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
                          int64_t parent, int64_t *queued_as) {
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

/* ---- rewriting the matches of one graph ---- */

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

/* 1 when m binds no node near what the last rewrite touched (dirty) and
 * no rule input comes after its first node (so no cycle can close through
 * it): then a judgment of m in the parent holds here. */
static int far_from(const eg_graph *g, const eg_match *m, const unsigned char *dirty) {
    int first = g->n_nodes;
    for (int j = 0; j < m->n_nodes; j++) {
        if (dirty[m->node[j]]) return 0;
        if (m->node[j] < first) first = m->node[j];
    }
    for (int i = 0; i < RG_MAX_INPUTS; i++)
        if (m->input[i] >= 0 && g->tensor[m->input[i]].producer > first) return 0;
    return 1;
}

/* A match the trial cannot judge (EG_EUNSUPPORTED): build the graph and
 * judge that. @return as eg_apply, with *ng, *nc, *tok, *cost, *h set on
 * EG_OK. */
static eg_status judge_built(run *R, int64_t gi, const eg_match *m, eg_graph **ng, double **nc, uint64_t **tok,
                             double *cost, uint64_t *h) {
    const state *st = &R->S.s[gi];
    char aerr[EG_ERRLEN];
    *nc = NULL, *tok = NULL;
    eg_status rc = eg_apply(R->rs, st->g, m, ng, aerr, sizeof aerr);
    if (rc != EG_OK) return rc;
    *nc = malloc(sizeof **nc * (size_t)((*ng)->n_nodes ? (*ng)->n_nodes : 1));
    *tok = malloc(sizeof **tok * (size_t)((*ng)->n_tensors ? (*ng)->n_tensors : 1));
    if (!*nc || !*tok) rc = EG_ENOMEM;
    else if (eg_tok_child(R->rs, st->g, st->tok, m, *ng, *tok) != EG_OK) rc = EG_EGRAPH;
    if (rc == EG_OK) {
        *cost = eg_cost_graph_nodes(R->c, *ng, st->node_cost, *nc);
        *h = eg_tok_hash(*ng, *tok);
        return EG_OK;
    }
    eg_free(*ng), free(*nc), free(*tok);
    *ng = NULL, *nc = NULL, *tok = NULL;
    return rc;
}

/* Phase 1: judge every match of L in state gi's graph (trial.c) and queue
 * the new ones under alpha; a result that costs more than gi is built and
 * held when steps past it are to be judged (look_next). Phase 2: judge
 * those steps (look_ahead), then let the held graphs go. Judging all of one
 * level before any of the next keeps a graph's first sighting at its
 * shallowest level, where it is looked past.
 * @return EG_OK, EG_ENOMEM. */
static eg_status rewrite_all(run *R, int64_t gi, const match_list *L, int look_next, int level,
                             int counted_ahead) {
    search *S = &R->S;
    eg_graph *g = S->s[gi].g;
    int64_t *held = NULL;
    size_t n_held = 0;
    eg_status rc = EG_OK;
    eg_trial *tr = NULL;
    eg_hash_ctx *hx = NULL;
    judgment *jl = NULL;            /* an expansion keeps its judgments */
    unsigned char *dirty = NULL;    /* nodes whose matches are judged again */
    const judgment *inherit = level == 0 ? R->inherit : NULL;
    int keeps_paths = eg_ruleset_keeps_paths(R->rs, S->s[gi].rule); /* gi's own rewrite */
    if (look_next && L->n && !(held = malloc(L->n * sizeof *held))) rc = EG_ENOMEM;
    if (rc == EG_OK && level == 0 && L->n && !(jl = malloc(L->n * sizeof *jl))) rc = EG_ENOMEM;
    /* the judge phase's time: this loop's, less the graphs built in it
     * (judge_built, build_state count theirs as apply) */
    double t = now_s(), applied = R->r->t_apply;
    if (rc == EG_OK && L->n) rc = eg_trial_new(R->rs, R->c, g, S->s[gi].tok, S->s[gi].node_cost, &tr);
    if (rc == EG_OK && inherit) {
        if ((dirty = malloc((size_t)g->n_nodes + 1))) eg_trial_near(tr, R->touched, eg_trial_reach(R->c), dirty);
        else rc = EG_ENOMEM;
    }
    for (size_t k = 0; k < L->n && rc == EG_OK; k++) {
        const eg_match *m = &L->m[k];
        eg_graph *ng = NULL;
        double *nc = NULL, delta = 0, cost;
        uint64_t *tok = NULL, h = 0;
        const judgment *pj = inherit && L->from[k] != EG_REMATCH_NEW ? &inherit[L->from[k]] : NULL;
        eg_status jr;
        int inherited = 0;
        if (pj && (pj->verdict == J_SHAPE || (pj->verdict == J_CYCLE && keeps_paths))) {
            jr = pj->verdict == J_SHAPE ? EG_ESHAPE : EG_EGRAPH; /* refused as in the parent */
        } else if (pj && pj->verdict == J_OK && far_from(g, m, dirty)) { /* judged as in the parent */
            jr = EG_OK, inherited = 1;
            delta = pj->delta, h = eg_trial_hash(tr) + pj->dh;
        } else {
            jr = eg_trial_judge(tr, m, &delta, &h);
        }
        if (jl) jl[k] = (judgment){delta, h - eg_trial_hash(tr), verdict_of(jr)};
        cost = S->s[gi].cost + delta;
        if (jr == EG_EUNSUPPORTED) {
            double t1 = now_s();
            jr = judge_built(R, gi, m, &ng, &nc, &tok, &cost, &h);
            R->r->t_apply += now_s() - t1;
            /* the built graph's judgment is kept like a trial's */
            if (jl) jl[k] = (judgment){cost - S->s[gi].cost, h - eg_trial_hash(tr), verdict_of(jr)};
        }
        if (jr == EG_ENOMEM) {
            rc = EG_ENOMEM;
            break;
        }
        if (jr != EG_OK) {
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
        rc = consider(R, m, ng, nc, tok, cost, gi, &st);
        if (rc == EG_OK && look_next && !inherited && st >= 0 && S->s[st].queued && S->s[st].cost > S->s[gi].cost) {
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
    R->r->t_judge += now_s() - t - (R->r->t_apply - applied);
    eg_trial_free(tr);
    eg_hash_ctx_free(hx);
    free(dirty);
    if (rc == EG_OK && jl) S->s[gi].jl = jl; /* with ml, set by expand */
    else free(jl);
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
 * (consider), with ci as their parent; one that costs more than ci again is
 * looked past in turn, up to LOOK_STEPS levels (level counts from 0).
 * @return EG_OK or EG_ENOMEM. */
static eg_status look_ahead(run *R, int64_t ci, const eg_graph *p, int level) {
    search *S = &R->S;
    const eg_graph *c = S->s[ci].g;
    size_t nn = (size_t)(c->n_nodes ? c->n_nodes : 1);
    unsigned char *fresh = calloc(nn, 3), *near = fresh + nn, *wo = fresh + 2 * nn;
    int *depth = malloc(nn * sizeof *depth);
    match_list L = {.rs = R->rs, .g = c};
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
        double t = now_s();
        rc = eg_match_near(R->rs, c, fresh, near, collect_match, &L);
        R->r->t_match += now_s() - t;
        if (rc == EG_OK && L.oom) rc = EG_ENOMEM;
    }
    if (rc == EG_OK) rc = rewrite_all(R, ci, &L, level + 1 < LOOK_STEPS, level + 1, 1);
    free(fresh);
    free(depth);
    free(L.m);
    free(L.from);
    return rc;
}

/* Parent p's matches, for eg_rematch: ml, and cyc after them (in
 * *joined, to free) when all. */
static eg_status parent_matches(const state *p, int all, eg_match **joined, const eg_match **pm, size_t *n) {
    *joined = NULL, *pm = p->ml, *n = p->n_ml;
    if (!all || !p->n_cyc) return EG_OK;
    if (!(*joined = malloc(sizeof **joined * (p->n_ml + p->n_cyc)))) return EG_ENOMEM;
    if (p->n_ml) memcpy(*joined, p->ml, sizeof **joined * p->n_ml);
    memcpy(*joined + p->n_ml, p->cyc, sizeof **joined * p->n_cyc);
    *pm = *joined, *n = p->n_ml + p->n_cyc;
    return EG_OK;
}

/* State st, made of its parent p by a rewrite that keeps paths, refuses
 * p's cyc as p did: each that binds no node the rewrite touched (touched:
 * st's nodes) becomes one of st's, in st's node ids, counted as refused.
 * @return EG_OK or EG_ENOMEM. */
static eg_status carry_cycles(run *R, const state *p, state *st, const unsigned char *touched) {
    if (!p->n_cyc) return EG_OK;
    const eg_graph *pg = p->g, *cg = st->g;
    int *p2c = malloc(sizeof *p2c * (size_t)(pg->n_nodes ? pg->n_nodes : 1));
    eg_match *cyc = malloc(sizeof *cyc * p->n_cyc);
    if (!p2c || !cyc) {
        free(p2c), free(cyc);
        return EG_ENOMEM;
    }
    for (int j = 0; j < pg->n_nodes; j++) p2c[j] = -1;
    for (int q = 0; q < cg->n_nodes; q++) {
        int o = cg->node[q].origin - 1;
        if (o >= 0 && o < pg->n_nodes) p2c[o] = q;
    }
    size_t n = 0;
    for (size_t k = 0; k < p->n_cyc; k++) {
        eg_match m = p->cyc[k];
        int keep = 1;
        for (int j = 0; j < m.n_nodes && keep; j++) {
            int q = p2c[m.node[j]];
            keep = q >= 0 && !touched[q];
            m.node[j] = q;
        }
        if (keep) cyc[n++] = m;
    }
    free(p2c);
    free(st->cyc);
    st->cyc = cyc, st->n_cyc = n;
    R->r->rejected += n;
    return EG_OK;
}

/* Move expanded state st's matches judged to close a cycle from ml (and
 * jl) to cyc, after the ones it carried. @return EG_OK or EG_ENOMEM. */
static eg_status set_aside_cycles(state *st) {
    size_t nc = 0, w = 0;
    for (size_t k = 0; st->jl && k < st->n_ml; k++) nc += st->jl[k].verdict == J_CYCLE;
    if (!nc) return EG_OK;
    eg_match *cyc = realloc(st->cyc, sizeof *cyc * (st->n_cyc + nc));
    if (!cyc) return EG_ENOMEM;
    st->cyc = cyc;
    for (size_t k = 0; k < st->n_ml; k++) {
        if (st->jl[k].verdict == J_CYCLE) {
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
    unsigned char *wo = malloc((size_t)(st->g->n_nodes ? st->g->n_nodes : 1));
    match_list L = {.rs = R->rs, .g = st->g, .weight_only = wo};
    if (!wo) return EG_ENOMEM;
    eg_mark_weight_only(st->g, wo);
    eg_match *joined;
    const eg_match *pm;
    size_t n_pm;
    rc = parent_matches(p, 1, &joined, &pm, &n_pm); /* st has no cyc: all of them */
    if (rc == EG_OK) rc = eg_rematch(R->rs, p->g, pm, n_pm, st->g, NULL, collect_from, &L);
    free(joined);
    if (rc == EG_OK && L.oom) rc = EG_ENOMEM;
    if (rc == EG_OK) st->ml = L.m, st->n_ml = L.n;
    else free(L.m);
    free(L.from);
    free(wo);
    return rc;
}

/* Find every match in state i's graph: from its parent's matches when the
 * parent is still at hand (eg_rematch), else all anew. After a rewrite
 * that keeps paths, the parent's cyc are carried over as i's; after
 * another, they are matched again, to be judged anew. */
static eg_status match_state(run *R, int64_t i, unsigned char *touched) {
    search *S = &R->S;
    state *st = &S->s[i];
    eg_status rc = st->parent >= 0 ? derive_matches(R, st->parent) : EG_OK;
    const state *p = st->parent >= 0 ? &S->s[st->parent] : NULL;
    if (rc != EG_OK) return rc;
    if (!p || !p->g || !p->ml) return eg_match_all(R->rs, st->g, collect_match, &R->L);
    int keeps = eg_ruleset_keeps_paths(R->rs, st->rule), joined_in = !keeps && p->n_cyc;
    eg_match *joined;
    const eg_match *pm;
    size_t n_pm;
    rc = parent_matches(p, !keeps, &joined, &pm, &n_pm);
    if (rc == EG_OK) rc = eg_rematch(R->rs, p->g, pm, n_pm, st->g, touched, collect_from, &R->L);
    free(joined);
    if (rc == EG_OK && keeps) rc = carry_cycles(R, p, st, touched);
    /* one of p's cyc has no judgment in p's jl to inherit */
    for (size_t k = 0; rc == EG_OK && joined_in && k < R->L.n; k++)
        if (R->L.from[k] != EG_REMATCH_NEW && R->L.from[k] >= p->n_ml) R->L.from[k] = EG_REMATCH_NEW;
    return rc;
}

static eg_status expand(run *R, int64_t i, char *err, size_t errlen) {
    search *S = &R->S;
    int ok;
    eg_status rc = build_state(R, i, &ok);
    if (rc) return fail(err, errlen, rc, "search: out of memory");
    if (!ok) { /* not expected: the trial passes what eg_apply refuses */
        release_parent(R, i);
        R->r->rejected++;
        return EG_OK;
    }
    eg_graph *g = S->s[i].g;
    R->L.n = 0;
    unsigned char *wo = malloc((size_t)(g->n_nodes ? g->n_nodes : 1));
    unsigned char *touched = calloc((size_t)g->n_nodes + 1, 1);
    if (!wo || !touched) {
        free(wo), free(touched);
        return fail(err, errlen, EG_ENOMEM, "matching rules: out of memory");
    }
    eg_mark_weight_only(g, wo);
    R->L.weight_only = wo;
    R->L.g = g;
    /* the parent's graph, matches and judgments are read until the
     * expansion ends: pinned like a child waiting for it (a state built
     * early, to be looked past, no longer holds it) */
    int64_t pi = S->s[i].parent;
    if (pi >= 0) S->s[pi].pending++;
    double t = now_s();
    rc = match_state(R, i, touched);
    R->r->t_match += now_s() - t;
    free(wo);
    /* the parent's judgments hold for its matches far from the rewrite */
    const state *p = S->s[i].parent >= 0 ? &S->s[S->s[i].parent] : NULL;
    R->inherit = p && p->g && p->jl ? p->jl : NULL;
    R->touched = touched;
    if (rc == EG_OK && R->L.oom) rc = EG_ENOMEM;
    if (rc == EG_OK) rc = rewrite_all(R, i, &R->L, 1, 0, 0);
    R->inherit = NULL, R->touched = NULL;
    free(touched);
    release_parent(R, i);
    if (pi >= 0) {
        S->s[pi].pending--;
        drop_graph(R, pi);
    }
    if (rc) return fail(err, errlen, rc, "search: %s", rc == EG_ENOMEM ? "out of memory" : eg_status_name(rc));
    /* the state keeps its matches while its graph lives: its children's
     * matches come from them */
    free(S->s[i].ml); /* derived when a child of it was popped (derive_matches) */
    S->s[i].ml = R->L.m, S->s[i].n_ml = R->L.n;
    R->L.m = NULL, R->L.n = R->L.cap = 0;
    if (set_aside_cycles(&S->s[i]) != EG_OK) return fail(err, errlen, EG_ENOMEM, "search: out of memory");
    return EG_OK;
}

static void progress(run *R) {
    double t = now_s() - R->t0;
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
    memset(r, 0, sizeof *r);
    *best = NULL;
    R.t0 = now_s(), R.next_progress = 1.0;
    double measured0 = eg_cost_seconds(c);
    eg_status rc = EG_OK;
    eg_graph *g0 = eg_graph_clone(g);
    double *nc0 = g0 ? malloc(sizeof *nc0 * (size_t)(g0->n_nodes ? g0->n_nodes : 1)) : NULL;
    uint64_t *tok0 = g0 ? malloc(sizeof *tok0 * (size_t)(g0->n_tensors ? g0->n_tensors : 1)) : NULL;
    if (!g0 || !nc0 || !tok0 || eg_tensor_hashes(g0, tok0) || seen_add(&R.S, eg_tok_hash(g0, tok0)) < 0 ||
        shape_add(&R.S, eg_graph_hash(g0)) < 0 ||
        add_state(&R.S, g0, nc0, tok0, NULL, eg_cost_graph_nodes(c, g0, NULL, nc0), -1, 0) < 0) {
        if (R.S.n == 0) eg_free(g0), free(nc0), free(tok0);
        rc = fail(err, errlen, EG_ENOMEM, "search: out of memory");
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
        if (now_s() - R.t0 - (eg_cost_seconds(c) - measured0) >= o->time_limit) {
            r->stop = EG_STOP_TIME;
            break;
        }
        int64_t i = heap_top(&R.S, &R.S.lo);
        unqueue(&R.S, i);
        r->expanded++;
        R.expanding = i;
        rc = expand(&R, i, err, errlen);
        R.expanding = -1;
        drop_graph(&R, i);
        progress(&R);
    }
    if (rc == EG_OK && fill_applied(&R)) rc = fail(err, errlen, EG_ENOMEM, "search: out of memory");
    int ok = 1;
    if (rc == EG_OK && (rc = build_state(&R, R.best, &ok)) != EG_OK)
        fail(err, errlen, rc, "search: out of memory");
    if (rc == EG_OK) release_parent(&R, R.best);
    if (rc == EG_OK && !ok) /* not expected: tests check the trial against eg_apply */
        rc = fail(err, errlen, EG_EGRAPH, "search: internal error: the best rewrite (rule %u) did not apply",
                  R.S.s[R.best].rule);
    if (rc == EG_OK && (rc = keep_runners(&R, r)) != EG_OK) fail(err, errlen, rc, "search: out of memory");
    if (rc == EG_OK) {
        *best = R.S.s[R.best].g;
        R.S.s[R.best].g = NULL;
        free_graph(&R.S.s[R.best]);
        r->cost_after = R.S.s[R.best].cost;
    }
    r->seconds = now_s() - R.t0;
    for (size_t i = 0; i < R.S.n; i++) free_graph(&R.S.s[i]);
    free(R.S.s);
    free(R.S.seen);
    free(R.S.shape_seen);
    free(R.S.lo.e);
    free(R.S.hi.e);
    free(R.L.m);
    free(R.L.from);
    if (rc) eg_search_result_free(r);
    return rc;
}

/* The cheaper of the search's result (out) and the built-ins alone
 * (plain), both cloned from pre; the other is freed. A measured gain within
 * the backend's noise is no gain: the rules then go. */
static eg_graph *pick(eg_cost *c, eg_graph *out, eg_graph *plain, eg_search_result *r) {
    double cost_out = eg_cost_graph(c, out), cost_plain = eg_cost_graph(c, plain);
    if (cost_out < cost_plain * (1 - eg_cost_noise(c))) {
        eg_free(plain);
        r->cost_after = cost_out;
        return out;
    }
    eg_free(out);
    r->rules_dropped = 1, r->cost_after = cost_plain;
    return plain;
}

eg_status eg_optimize(const eg_graph *g, const eg_ruleset *rs, eg_cost *c, const eg_search_opts *o,
                      eg_graph **best, eg_search_result *r, char *err, size_t errlen) {
    eg_builtin_stats pre_st = {0}, post_st = {0}, plain_st = {0};
    eg_graph *pre = eg_graph_clone(g), *out = NULL, *plain = NULL;
    double cost_in = eg_cost_graph(c, g);
    eg_status rc = pre ? EG_OK : fail(err, errlen, EG_ENOMEM, "optimize: out of memory");
    *best = NULL;
    memset(r, 0, sizeof *r);
    if (rc == EG_OK) rc = eg_builtin_pre(pre, &pre_st, err, errlen);
    if (rc == EG_OK && !(plain = eg_graph_clone(pre))) rc = fail(err, errlen, EG_ENOMEM, "optimize: out of memory");
    if (rc == EG_OK) rc = eg_builtin_post(plain, &plain_st, err, errlen);
    if (rc == EG_OK) rc = eg_spell(plain, c, &plain_st.sum_spelled, err, errlen);
    if (rc == EG_OK) rc = eg_search(pre, rs, c, o, &out, r, err, errlen);
    if (rc == EG_OK) rc = eg_builtin_post(out, &post_st, err, errlen);
    if (rc == EG_OK) rc = eg_spell(out, c, &post_st.sum_spelled, err, errlen);
    for (int k = 0; k < r->n_runners && rc == EG_OK; k++) {
        eg_builtin_stats st = {0};
        rc = eg_builtin_post(r->runner[k], &st, err, errlen);
        if (rc == EG_OK) rc = eg_spell(r->runner[k], c, &st.sum_spelled, err, errlen);
        if (rc == EG_OK) r->runner_cost[k] = eg_cost_graph(c, r->runner[k]);
    }
    if (rc == EG_OK) {
        r->pre = pre_st, r->cost_before = cost_in;
        out = pick(c, out, plain, r);
        plain = NULL;
        r->post = r->rules_dropped ? plain_st : post_st;
        /* out borrows from pre: pre now lives as long as out does */
        eg_graph_set_base(out, pre);
        pre = NULL;
        if (!(r->cost_after < cost_in * (1 - eg_cost_noise(c)))) {
            uint32_t *applied = r->applied;
            r->applied = NULL;
            eg_search_result_free(r); /* the runners-up, before the graph they borrow from */
            r->applied = applied;
            eg_free(out);
            out = eg_graph_clone(g);
            r->kept_input = 1, r->cost_after = cost_in;
            memset(&r->pre, 0, sizeof r->pre); /* none of them is in the result */
            memset(&r->post, 0, sizeof r->post);
            if (!out) rc = fail(err, errlen, EG_ENOMEM, "optimize: out of memory");
        }
    }
    if (rc) {
        eg_search_result_free(r); /* before out: the runners-up borrow from pre */
        eg_free(out);
        out = NULL;
    }
    eg_free(plain); /* clones of pre: before it */
    eg_free(pre);
    *best = out;
    return rc;
}
