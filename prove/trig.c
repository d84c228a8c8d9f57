/* trig.c - the trigger policy of trig.h: shrinking sides, the feeds graph
 * between axiom directions, and its strongly connected components. */
#include "trig.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static const char *const why_names[TG_WHY_COUNT] = { /* ORDER TGWHY */
    [TG_SHRINKING] = "shrinking",
    [TG_GROWING_OK] = "growing",
    [TG_NOT_APP] = "bare variable",
    [TG_MISSING_VAR] = "lacks a variable",
    [TG_LOOP] = "feeds a loop",
};
static_assert(sizeof why_names / sizeof why_names[0] == TG_WHY_COUNT,
              "why_names needs one entry per tg_why");

int tg_is_trigger(tg_why why) { return why == TG_SHRINKING || why == TG_GROWING_OK; }

const char *tg_why_name(tg_why why) {
    return (unsigned)why < TG_WHY_COUNT ? why_names[why] : "?";
}

/* ---- term measures ---- */

static int side_root(const ax_axiom *a, int d) { return d == 0 ? a->lhs : a->rhs; }

/* Operator nodes of tensor sort under term t. */
static int op_count(const ax_set *s, int t) {
    const ax_term *x = &s->term[t];
    int n = x->kind == AX_TAPP;
    for (int k = 0; k < x->n_args; k++) n += op_count(s, x->arg[k]);
    return n;
}

/* Add each tensor variable occurrence under t to occ[var]. */
static void var_occurrences(const ax_set *s, int t, int occ[AX_MAX_VARS]) {
    const ax_term *x = &s->term[t];
    if (x->kind == AX_TVAR && x->sort == AX_SORT_TENSOR) occ[x->value]++;
    for (int k = 0; k < x->n_args; k++) var_occurrences(s, x->arg[k], occ);
}

static int term_equal(const ax_set *s, int a, int b) {
    const ax_term *x = &s->term[a], *y = &s->term[b];
    if (x->kind != y->kind || x->op != y->op || x->value != y->value ||
        x->n_args != y->n_args)
        return 0;
    for (int k = 0; k < x->n_args; k++)
        if (!term_equal(s, x->arg[k], y->arg[k])) return 0;
    return 1;
}

/* 1 when a term equal to t occurs under root. */
static int occurs_in(const ax_set *s, int t, int root) {
    if (term_equal(s, t, root)) return 1;
    const ax_term *r = &s->term[root];
    for (int k = 0; k < r->n_args; k++)
        if (occurs_in(s, t, r->arg[k])) return 1;
    return 0;
}

/* Shrinking: C no bigger than S and no tensor variable more frequent. */
static int shrinking(const ax_set *s, const ax_axiom *a, int d) {
    int S = side_root(a, d), C = side_root(a, !d);
    int occ_s[AX_MAX_VARS] = {0}, occ_c[AX_MAX_VARS] = {0};
    if (op_count(s, C) > op_count(s, S)) return 0;
    var_occurrences(s, S, occ_s);
    var_occurrences(s, C, occ_c);
    for (int v = 0; v < a->n_vars; v++)
        if (occ_c[v] > occ_s[v]) return 0;
    return 1;
}

static tg_why eligibility(const ax_set *s, const ax_axiom *a, int d) {
    const ax_term *S = &s->term[side_root(a, d)];
    uint32_t all = a->n_vars == 32 ? ~0u : (1u << a->n_vars) - 1;
    if (S->kind != AX_TAPP) return TG_NOT_APP;
    if ((S->vars & all) != all) return TG_MISSING_VAR;
    return shrinking(s, a, d) ? TG_SHRINKING : TG_GROWING_OK;
}

/* ---- the feeds graph ---- */

typedef struct {
    int to;
    int growing;
} edge;

typedef struct {
    const ax_set *s;
    const tg_plan *plan;
    edge **adj; /* per direction node 2*axiom+side */
    int *n_adj, *cap_adj;
    int n_nodes;
    /* Tarjan */
    int *index, *low, *stack, *comp, *on_stack;
    int next_index, sp, n_comp;
    int failed;
} graph;

/* Fresh class: an application under C, not C itself, not occurring in S. */
static int fresh(const ax_set *s, const ax_axiom *a, int d, int t) {
    int S = side_root(a, d), C = side_root(a, !d);
    return t != C && s->term[t].kind == AX_TAPP && !occurs_in(s, t, S);
}

typedef struct {
    const ax_set *s;
    const ax_axiom *a; /* the feeding axiom, its trigger side d */
    int d;
    uint32_t nest;     /* the fed direction's nesting variables */
    int growing;       /* out: a nesting variable bound to a fresh class */
} feed_ctx;

/* Variables of direction (a, d) that its instances nest inside fresh
 * classes: those occurring under a fresh subterm of the created side. Only
 * binding one of these to a fresh class of another direction lets nesting
 * depth grow from one instantiation to the next. */
static uint32_t nesting_vars(const ax_set *s, const ax_axiom *a, int d, int t) {
    const ax_term *T = &s->term[t];
    if (fresh(s, a, d, t)) return T->vars;
    uint32_t m = 0;
    for (int k = 0; k < T->n_args; k++) m |= nesting_vars(s, a, d, T->arg[k]);
    return m;
}

/* Can pattern p (another axiom's trigger) match at term t of the feeding
 * axiom's created side? A variable of t stands for an old class and
 * matches any pattern below it. @return 1 when it can. */
static int pmatch(feed_ctx *f, int p, int t) {
    const ax_term *P = &f->s->term[p], *T = &f->s->term[t];
    switch (P->kind) {
    case AX_TVAR:
        if (P->sort == AX_SORT_TENSOR && (f->nest >> P->value & 1) &&
            fresh(f->s, f->a, f->d, t))
            f->growing = 1;
        return 1;
    case AX_TLIT: return T->kind != AX_TLIT || T->value == P->value;
    case AX_TNUM:
        return T->kind == AX_TVAR ||
               (T->kind == AX_TNUM && T->value == P->value && T->den == P->den);
    case AX_TDIM:
        if (T->kind != AX_TDIM) return 1;
        return pmatch(f, P->arg[0], T->arg[0]) && pmatch(f, P->arg[1], T->arg[1]);
    case AX_TAPP: break;
    }
    if (T->kind == AX_TVAR) return 1;
    if (T->kind != AX_TAPP || T->op != P->op) return 0;
    for (int k = 0; k < P->n_args; k++)
        if (!pmatch(f, P->arg[k], T->arg[k])) return 0;
    return 1;
}

static int add_edge(graph *g, int from, int to, int growing) {
    for (int i = 0; i < g->n_adj[from]; i++)
        if (g->adj[from][i].to == to) {
            g->adj[from][i].growing |= growing;
            return 0;
        }
    if (g->n_adj[from] == g->cap_adj[from]) {
        int nc = g->cap_adj[from] ? 2 * g->cap_adj[from] : 8;
        edge *e = realloc(g->adj[from], (size_t)nc * sizeof *e);
        if (!e) return -1;
        g->adj[from] = e;
        g->cap_adj[from] = nc;
    }
    g->adj[from][g->n_adj[from]++] = (edge){to, growing};
    return 0;
}

/* Edges from direction (ai, d) for subterm t of its created side, then
 * recursively for t's arguments. */
static int feed_edges(graph *g, int ai, int d, int t) {
    const ax_set *s = g->s;
    const ax_term *T = &s->term[t];
    if (T->kind != AX_TAPP) return 0;
    for (int bi = 0; bi < s->n_axioms; bi++)
        for (int e = 0; e < 2; e++) {
            if (g->plan->ax[bi].why[e] != TG_GROWING_OK) continue;
            const ax_axiom *b = &s->axiom[bi];
            feed_ctx f = {s, &s->axiom[ai], d, nesting_vars(s, b, e, side_root(b, !e)), 0};
            if (pmatch(&f, side_root(b, e), t) &&
                add_edge(g, 2 * ai + d, 2 * bi + e, f.growing))
                return -1;
        }
    for (int k = 0; k < T->n_args; k++)
        if (feed_edges(g, ai, d, T->arg[k])) return -1;
    return 0;
}

static void strongconnect(graph *g, int v) {
    g->index[v] = g->low[v] = g->next_index++;
    g->stack[g->sp++] = v;
    g->on_stack[v] = 1;
    for (int i = 0; i < g->n_adj[v]; i++) {
        int w = g->adj[v][i].to;
        if (g->index[w] < 0) {
            strongconnect(g, w);
            if (g->low[w] < g->low[v]) g->low[v] = g->low[w];
        } else if (g->on_stack[w] && g->index[w] < g->low[v]) {
            g->low[v] = g->index[w];
        }
    }
    if (g->low[v] != g->index[v]) return;
    int w;
    do {
        w = g->stack[--g->sp];
        g->on_stack[w] = 0;
        g->comp[w] = g->n_comp;
    } while (w != v);
    g->n_comp++;
}

/* Mark growing directions in a component that holds a growing edge. */
static void mark_loops(graph *g, tg_plan *plan) {
    int *bad = calloc((size_t)g->n_comp + 1, sizeof *bad);
    if (!bad) {
        g->failed = 1;
        return;
    }
    for (int v = 0; v < g->n_nodes; v++)
        for (int i = 0; i < g->n_adj[v]; i++)
            if (g->adj[v][i].growing && g->comp[g->adj[v][i].to] == g->comp[v])
                bad[g->comp[v]] = 1;
    for (int v = 0; v < g->n_nodes; v++)
        if (bad[g->comp[v]] && plan->ax[v / 2].why[v % 2] == TG_GROWING_OK)
            plan->ax[v / 2].why[v % 2] = TG_LOOP;
    free(bad);
}

static int graph_alloc(graph *g, int n) {
    g->n_nodes = n;
    g->adj = calloc((size_t)n, sizeof *g->adj);
    g->n_adj = calloc((size_t)n, sizeof *g->n_adj);
    g->cap_adj = calloc((size_t)n, sizeof *g->cap_adj);
    g->index = malloc((size_t)n * sizeof *g->index);
    g->low = malloc((size_t)n * sizeof *g->low);
    g->stack = malloc((size_t)n * sizeof *g->stack);
    g->comp = malloc((size_t)n * sizeof *g->comp);
    g->on_stack = calloc((size_t)n, sizeof *g->on_stack);
    if (!g->adj || !g->n_adj || !g->cap_adj || !g->index || !g->low || !g->stack ||
        !g->comp || !g->on_stack)
        return -1;
    for (int v = 0; v < n; v++) g->index[v] = -1;
    return 0;
}

static void graph_free(graph *g) {
    for (int v = 0; g->adj && v < g->n_nodes; v++) free(g->adj[v]);
    free(g->adj);
    free(g->n_adj);
    free(g->cap_adj);
    free(g->index);
    free(g->low);
    free(g->stack);
    free(g->comp);
    free(g->on_stack);
}

/* Build the feeds graph over the trigger candidates and drop the growing
 * ones on a growing cycle. @return 0, or -1 when out of memory. */
static int drop_loops(const ax_set *s, tg_plan *plan) {
    graph g;
    memset(&g, 0, sizeof g);
    g.s = s;
    g.plan = plan;
    int rc = graph_alloc(&g, 2 * s->n_axioms);
    for (int ai = 0; ai < s->n_axioms && rc == 0; ai++)
        for (int d = 0; d < 2 && rc == 0; d++)
            if (plan->ax[ai].why[d] == TG_GROWING_OK)
                rc = feed_edges(&g, ai, d, side_root(&s->axiom[ai], !d));
    for (int v = 0; v < g.n_nodes && rc == 0; v++)
        if (g.index[v] < 0) strongconnect(&g, v);
    if (rc == 0) mark_loops(&g, plan);
    if (g.failed) rc = -1;
    graph_free(&g);
    return rc;
}

int tg_plan_axioms(const ax_set *s, tg_plan *plan) {
    plan->n_axioms = s->n_axioms;
    plan->ax = calloc((size_t)s->n_axioms + 1, sizeof *plan->ax);
    if (!plan->ax) return -1;
    for (int i = 0; i < s->n_axioms; i++) {
        const ax_axiom *a = &s->axiom[i];
        for (int d = 0; d < 2; d++) {
            plan->ax[i].why[d] = eligibility(s, a, d);
            plan->ax[i].size[d] = op_count(s, side_root(a, d));
        }
    }
    if (drop_loops(s, plan) != 0) {
        tg_free(plan);
        return -1;
    }
    return 0;
}

void tg_free(tg_plan *plan) {
    free(plan->ax);
    plan->ax = NULL;
    plan->n_axioms = 0;
}
