/* extract.c - the cheapest graphs an e-graph holds (ee_extract): each
 * e-node priced by the user's cost model, picks made and improved, each
 * candidate graph built from its picks and priced whole by the cost
 * model, the cheapest kept (ee_top).
 *
 * Prices. An opspecs e-node is costed on a scratch graph with one tensor
 * per class (eg_cost_node reads a node's operator, parameters and shapes),
 * a model or opaque node as it is in the input graph; leaves, outputs of
 * a multi-output node, and e-nodes over weights alone (folded on export)
 * cost 0. The cost model prices a node in its graph, though (fused
 * groups run as one kernel, a concat inside a concat is written once):
 * the e-nodes of the input graph start at their price there, and each
 * candidate graph gives its e-nodes the price they have in it.
 *
 * Candidates, each judged by the cost model on the whole graph:
 *   - the greedy picks (greedy.c) by those prices, made again while a
 *     graph changes a price (MAX_REPRICE), improved by shared values
 *     (share.c);
 *   - the greedy picks by tree prices (every reader pays a value whole);
 *   - with polish, the local search (polish.c) from the cheapest picks
 *     and from the input graph's, within a budget of nodes built.
 * The input graph is one of the e-graph's graphs, so the result is never
 * dearer than it by the cost model.
 */
#include "egraph/egraph_int.h"
#include "sys/sys.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room in E's price memo for every e-node (a price < 0: none kept), the
 * memo emptied when the cost model's estimates moved.
 * @return EG_OK or EG_ENOMEM. */
static eg_status price_memo(ee_graph *E, eg_cost *c) {
    uint64_t epoch = eg_cost_estimate_epoch(c);
    if (E->cap_price < E->n_nodes) {
        int cap = E->n_nodes + E->n_nodes / 2 + 16;
        double *p = realloc(E->price, sizeof *p * (size_t)cap);
        if (!p) return EG_ENOMEM;
        for (int e = E->cap_price; e < cap; e++) p[e] = -1;
        E->price = p, E->cap_price = cap;
    }
    if (epoch != E->price_epoch)
        for (int e = 0; e < E->cap_price; e++) E->price[e] = -1;
    E->price_epoch = epoch;
    return EG_OK;
}

/* 1 when e-node e's class and the classes it reads have their shapes (its
 * price no longer changes with them). */
static int shapes_known(ee_graph *E, int e) {
    const ee_node *n = &E->n[e];
    if (!E->c[ee_find(E, n->cls)].shaped) return 0;
    for (int k = 0; k < n->n_kid; k++)
        if (ee_kids(E, e)[k] >= 0 && !E->c[ee_find(E, ee_kids(E, e)[k])].shaped) return 0;
    return 1;
}

/* The tensor of class k in the scratch graph s, made at first use
 * (cls_ten[k] < 0). @return EG_OK or EG_ENOMEM. */
static eg_status scratch_tensor(ee_graph *E, eg_graph *s, int *cls_ten, int k, int *t) {
    if (cls_ten[k] >= 0) return *t = cls_ten[k], EG_OK;
    char name[32];
    snprintf(name, sizeof name, "c%d", k);
    eg_status rc = eg_add_tensor(s, name, t);
    if (rc != EG_OK) return rc;
    const ee_class *cl = &E->c[k];
    s->tensor[*t].dtype = EG_DT_FLOAT;
    s->tensor[*t].shape.rank = -1;
    if (cl->shaped) eg_from_ten_shape(&cl->shape, &s->tensor[*t].shape);
    if (cl->flags & EE_WEIGHT) s->tensor[*t].flags |= EG_TF_INIT;
    cls_ten[k] = *t;
    return EG_OK;
}

/* Each live e-node's own price into nc[], from E's memo where it holds.
 * @return EG_OK or EG_ENOMEM. */
static eg_status prices(ee_graph *E, eg_cost *c, double *nc) {
    eg_graph *s = eg_graph_new();
    int *cls_ten = malloc(sizeof *cls_ten * (size_t)(E->n_cls + 1));
    eg_status rc = s && cls_ten ? price_memo(E, c) : EG_ENOMEM;
    for (int k = 0; rc == EG_OK && k < E->n_cls; k++) cls_ten[k] = -1;
    for (int e = 0; rc == EG_OK && e < E->n_nodes; e++) {
        const ee_node *n = &E->n[e];
        nc[e] = 0;
        if (n->dead || n->kind == EE_LEAF || n->kind == EE_PROJ) continue;
        if (E->price[e] >= 0) {
            nc[e] = E->price[e];
            continue;
        }
        if (n->kind == EE_NODE) {
            nc[e] = eg_cost_node(c, E->g, n->ref);
        } else {
            int id, t;
            if ((rc = eg_add_node(s, EG_KIND_OPS, "", n->n_kid, 0, 1, &id)) != EG_OK) break;
            s->node[id].op = n->op;
            memcpy(s->node[id].param, n->param, sizeof s->node[id].param);
            for (int k = 0; rc == EG_OK && k < n->n_kid; k++) { /* a kid < 0: an input left out */
                int kid = ee_kids(E, e)[k];
                s->node[id].in[k] = -1;
                if (kid >= 0 && (rc = scratch_tensor(E, s, cls_ten, ee_find(E, kid), &t)) == EG_OK) s->node[id].in[k] = t;
            }
            if (rc == EG_OK && (rc = scratch_tensor(E, s, cls_ten, ee_find(E, n->cls), &t)) == EG_OK) s->node[id].out[0] = t;
            if (rc != EG_OK) break;
            nc[e] = eg_cost_node_estimate(c, s, id);
        }
        if (eg_cost_estimate_epoch(c) == E->price_epoch && shapes_known(E, e))
            E->price[e] = nc[e];
    }
    eg_free(s);
    free(cls_ten);
    return rc;
}

/* ---- building the graph ---- */

typedef struct {
    ee_graph *E;
    const int *pick;
    eg_graph *out;
    int *tens;           /* [classes]: the tensor written for the class, -1 */
    unsigned char *used; /* [input graph tensors]: written by a node already */
    uint32_t *applied;   /* [n_rules] */
    size_t n_rules;
    unsigned long fresh;
    int *en_of;          /* [nodes of out]: the e-node each wrote, -1 (an Identity) */
} builder;

/* A new tensor for class c (a name no tensor uses: "egN"). */
static eg_status fresh_tensor(builder *b, int c, int *t) {
    char name[32];
    eg_status rc;
    do snprintf(name, sizeof name, "eg%lu", b->fresh++);
    while (eg_find_tensor(b->out, name) != -1);
    if ((rc = eg_add_tensor(b->out, name, t)) != EG_OK) return rc;
    const ee_class *cl = &b->E->c[c];
    b->out->tensor[*t].dtype = EG_DT_FLOAT;
    b->out->tensor[*t].shape.rank = -1;
    if (cl->shaped) eg_from_ten_shape(&cl->shape, &b->out->tensor[*t].shape);
    return EG_OK;
}

/* 1 when tensor t of the input graph can be written by a node here. */
static int writable(const builder *b, int t) {
    return t >= 0 && t < b->E->g->n_tensors && !b->used[t] &&
           !(b->E->g->tensor[t].flags & (EG_TF_INPUT | EG_TF_INIT));
}

/* An Identity node y = x (a name kept for a value written under another). */
static eg_status identity(builder *b, int x, int y) {
    int id;
    eg_status rc = eg_add_node(b->out, EG_KIND_MODEL, b->out->tensor[y].name, 1, 0, 1, &id);
    if (rc != EG_OK) return rc;
    b->out->node[id].mop = EG_MOP_IDENTITY;
    b->out->node[id].in[0] = x, b->out->node[id].out[0] = y;
    b->en_of[id] = -1;
    b->used[y] = 1;
    return EG_OK;
}

/* Write picked e-node e of class c, its kids written already. */
static eg_status emit(builder *b, int c, int e) {
    ee_graph *E = b->E;
    const ee_node *n = &E->n[e];
    const eg_graph *g = E->g;
    const int *k = ee_kids(E, e);
    eg_status rc = EG_OK;
    int t = -1, id;
    switch (n->kind) {
    case EE_LEAF: t = n->ref; break;
    case EE_PROJ: t = g->node[E->n[b->pick[ee_find(E, k[0])]].ref].out[n->ref]; break;
    case EE_NODE: {
        const eg_node *o = &g->node[n->ref];
        if ((rc = eg_add_node(b->out, o->kind, o->name, o->n_in, o->n_implicit, o->n_out, &id)) != EG_OK) return rc;
        eg_node *d = &b->out->node[id];
        b->en_of[id] = e;
        d->op = o->op, d->mop = o->mop, d->attr = o->attr;
        memcpy(d->param, o->param, sizeof d->param);
        d->op_type = o->op_type, d->domain = o->domain, d->proto = o->proto, d->proto_len = o->proto_len;
        d->borrowed = 1;
        for (int i = 0; i < n->n_kid; i++) d->in[i] = k[i] >= 0 ? b->tens[ee_find(E, k[i])] : -1;
        for (int q = 0; q < o->n_out; q++) {
            d->out[q] = o->out[q];
            if (o->out[q] >= 0) b->used[o->out[q]] = 1;
        }
        t = o->n_out == 1 ? o->out[0] : -1;
        break;
    }
    case EE_OPS: {
        int home = E->c[c].home;
        if (writable(b, home) && (g->tensor[home].flags & (EG_TF_OUTPUT | EG_TF_PINNED))) t = home;
        else if (writable(b, n->ref)) t = n->ref;
        else if ((rc = fresh_tensor(b, c, &t)) != EG_OK) return rc;
        if (t < g->n_tensors) {
            b->used[t] = 1;
            b->out->tensor[t].dtype = EG_DT_FLOAT;
            eg_from_ten_shape(&E->c[c].shape, &b->out->tensor[t].shape);
        }
        if ((rc = eg_add_node(b->out, EG_KIND_OPS, b->out->tensor[t].name, n->n_kid, 0, 1, &id)) != EG_OK) return rc;
        eg_node *d = &b->out->node[id];
        b->en_of[id] = e;
        d->op = n->op;
        memcpy(d->param, n->param, sizeof d->param);
        for (int i = 0; i < n->n_kid; i++) d->in[i] = b->tens[ee_find(E, k[i])];
        d->out[0] = t;
        if (n->rule >= 0) b->applied[n->rule]++;
        break;
    }
    case EE_KIND_COUNT: break;
    }
    int home = E->c[c].home;
    if (n->kind != EE_NODE || t >= 0) { /* a tuple has no tensor */
        if (t != home && writable(b, home) && (g->tensor[home].flags & (EG_TF_OUTPUT | EG_TF_PINNED))) {
            if ((rc = identity(b, t, home)) != EG_OK) return rc;
            t = home;
        }
    }
    b->tens[c] = t;
    return EG_OK;
}

/* Write class c and everything it reads, depth first without recursion
 * (state[c]: 0 new, 1 on the stack, 2 written). @return EG_OK, EG_EGRAPH
 * on a cycle (not expected: see the header comment), EG_ENOMEM. */
static eg_status write_class(builder *b, int root, unsigned char *state, int *stack) {
    ee_graph *E = b->E;
    int sp = 0;
    if (state[root] == 2) return EG_OK;
    stack[sp++] = root, state[root] = 1;
    while (sp) {
        int c = stack[sp - 1], e = b->pick[c], pending = 0;
        if (e < 0) return EG_EGRAPH;
        const int *k = ee_kids(E, e);
        for (int i = 0; i < E->n[e].n_kid && !pending; i++) {
            if (k[i] < 0) continue;
            int q = ee_find(E, k[i]);
            if (state[q] == 1) return EG_EGRAPH;
            if (state[q] == 0) stack[sp++] = q, state[q] = 1, pending = 1;
        }
        if (pending) continue;
        eg_status rc = emit(b, c, e);
        if (rc != EG_OK) return rc;
        state[c] = 2, sp--;
    }
    return EG_OK;
}

/* The graph of the picks into *out (applied counted). @return EG_OK,
 * EG_EGRAPH on a cycle among the picks, EG_ENOMEM. */
static eg_status build(builder *b, size_t ncl, unsigned char *state, int *stack, eg_graph **out, char *err,
                       size_t errlen) {
    ee_graph *E = b->E;
    const eg_graph *g = E->g;
    eg_status rc = EG_OK;
    memset(state, 0, ncl);
    memset(b->used, 0, (size_t)g->n_tensors + 1);
    memset(b->applied, 0, sizeof *b->applied * b->n_rules);
    for (size_t k = 0; k < ncl; k++) b->tens[k] = -1;
    if (!(b->out = eg_graph_clone(g))) return EG_ENOMEM;
    b->out->n_nodes = 0; /* the clone's nodes live in its arena */
    for (int q = 0; rc == EG_OK && q < g->n_outputs; q++) {
        int o = g->output[q], cl = ee_find(E, E->tensor_cls[o]);
        rc = write_class(b, cl, state, stack);
        if (rc == EG_OK && b->tens[cl] != o && writable(b, o)) rc = identity(b, b->tens[cl], o);
    }
    if (rc == EG_OK) rc = eg_index(b->out, err, errlen);
    if (rc == EG_OK) rc = eg_toposort(b->out, err, errlen);
    if (rc == EG_OK) *out = b->out;
    else eg_free(b->out);
    b->out = NULL;
    return rc;
}

/* ---- judging picks by the cost model ---- */

#define MAX_BUILT 300000 /* nodes of the graphs the local search judges, per start at most */

typedef struct {
    builder b;
    eg_cost *c;
    size_t ncl;
    unsigned char *state;
    int *stack;
    double *hc;         /* node costs of the graph judged last */
    int hc_nodes;       /* its node count */
    ee_top top;         /* the cheapest graphs judged so far */
    int *best_pick;     /* the picks of the cheapest */
    uint32_t *applied;  /* its rules: the caller's */
    long judged;        /* graphs built and priced */
    long built;         /* their nodes, all told */
    long max_built;     /* polishing stops there */
    const double *share; /* [classes]: readers of the class in the input graph, at least 1 */
    ee_judge J;         /* judge_cb, spent_cb and this */
    double deadline;    /* the time limit (a safety net): polishing stops */
    char *err;
    size_t errlen;
} extractor;

/* The cost of the graph of the picks b.pick as the cost model prices it
 * (*cost DBL_MAX when the picks close a cycle); the cheapest graph kept.
 * @return EG_OK or EG_ENOMEM. */
static eg_status judge(extractor *x, double *cost) {
    eg_graph *h = NULL;
    x->judged++;
    x->err[0] = 0;
    eg_status rc = build(&x->b, x->ncl, x->state, x->stack, &h, x->err, x->errlen);
    *cost = DBL_MAX;
    x->hc_nodes = 0;
    if (rc != EG_OK) return rc == EG_ENOMEM ? rc : EG_OK;
    *cost = eg_cost_graph_nodes(x->c, h, NULL, x->hc);
    x->hc_nodes = h->n_nodes;
    x->built += h->n_nodes;
    if (ee_top_offer(&x->top, h, *cost)) {
        memcpy(x->best_pick, x->b.pick, sizeof *x->best_pick * x->ncl);
        memcpy(x->applied, x->b.applied, sizeof *x->applied * x->b.n_rules);
    }
    return EG_OK;
}

static eg_status judge_cb(void *ctx, double *cost) { return judge(ctx, cost); }

/* 1 when the local search has built its budget of nodes, or (a safety
 * net, which the result then says) the time limit has passed. */
static int spent_cb(void *ctx) {
    extractor *x = ctx;
    if (x->built >= x->max_built) return 1;
    if (eg_now_s() > x->deadline) x->top.timed_out = 1;
    return x->top.timed_out;
}

/* Prices in context: each e-node of the graph judged last at what it
 * costs there (a node run inside another, or written inside its reader,
 * at 0). @return 1 when a price changed. */
#define MAX_REPRICE 4 /* extractions with prices in context (ee_extract) */
static int reprice(const extractor *x, double *np) {
    int changed = 0;
    for (int j = 0; j < x->hc_nodes; j++) {
        int e = x->b.en_of[j];
        double us = x->hc[j] < 0 ? 0 : x->hc[j];
        if (e >= 0 && np[e] != us) np[e] = us, changed = 1;
    }
    return changed;
}

/* Greedy picks by prices np, improved by shared values (share.c), judged.
 * @return EG_OK or EG_ENOMEM. */
static eg_status extract_once(extractor *x, const double *np, double *best, int *pick) {
    ee_graph *E = x->b.E;
    double cost = DBL_MAX;
    eg_status rc = ee_pick_all(E, np, x->share, NULL, best, pick);
    if (rc == EG_OK) rc = judge(x, &cost);
    if (rc == EG_OK && cost < DBL_MAX) rc = ee_share(E, np, pick, &x->J, &cost);
    if (rc == EG_OK) rc = judge(x, &cost); /* the node costs of the picks, for reprice */
    return rc;
}

int ee_top_offer(ee_top *t, eg_graph *h, double cost) {
    int k = 0;
    while (k < t->n && t->cost[k] < cost) k++;
    if (k == EE_TOP || (k < t->n && t->cost[k] == cost)) { /* not among them, or a cost they have */
        eg_free(h);
        return 0;
    }
    if (t->n == EE_TOP) eg_free(t->g[--t->n]);
    for (int i = t->n; i > k; i--) t->g[i] = t->g[i - 1], t->cost[i] = t->cost[i - 1];
    t->g[k] = h, t->cost[k] = cost, t->n++;
    return k == 0;
}

void ee_top_free(ee_top *t) {
    for (int k = 0; k < t->n; k++) eg_free(t->g[k]);
    t->n = 0;
}

/* x's local search from start, its nodes built taken from *budget.
 * @return EG_OK or EG_ENOMEM. */
static eg_status polish_from(extractor *x, ee_budget *budget, const double *np, const int *start, int *pick) {
    long before = x->built, room = budget->polish_built < MAX_BUILT ? budget->polish_built : MAX_BUILT;
    if (room <= 0) return EG_OK;
    x->max_built = x->built + room;
    eg_status rc = ee_polish(x->b.E, &x->J, np, x->share, start, pick);
    budget->polish_built -= x->built - before < room ? x->built - before : room;
    return rc;
}

eg_status ee_extract(ee_graph *E, eg_cost *c, size_t n_rules, ee_budget *budget, double deadline, ee_top *out,
                     uint32_t *applied, char *err, size_t errlen) {
    const eg_graph *g = E->g;
    size_t nn = (size_t)E->n_nodes + 1, ncl = (size_t)E->n_cls + 1;
    size_t nout = 2 * ncl + (size_t)g->n_outputs + (size_t)g->n_nodes + 1; /* nodes a build writes, at most */
    double *nc = malloc(sizeof *nc * nn), *np = malloc(sizeof *np * nn), *best = malloc(sizeof *best * ncl);
    double *hc = malloc(sizeof *hc * nout), *share = malloc(sizeof *share * ncl), *ones = malloc(sizeof *ones * ncl);
    int *pick = malloc(sizeof *pick * ncl);
    int *best_pick = malloc(sizeof *best_pick * ncl);
    int *tens = malloc(sizeof *tens * ncl), *stack = malloc(sizeof *stack * ncl), *en_of = malloc(sizeof *en_of * nout);
    unsigned char *state = malloc(ncl), *used = malloc((size_t)g->n_tensors + 1);
    uint32_t *app = malloc(sizeof *app * (n_rules + 1));
    extractor x = {.b = {E, pick, NULL, tens, used, app, n_rules, 0, en_of}, .c = c, .ncl = ncl, .state = state,
                   .stack = stack, .hc = hc, .share = share, .best_pick = best_pick, .applied = applied, .deadline = deadline,
                   .err = err, .errlen = errlen};
    eg_status rc = nc && np && best && hc && share && ones && pick && best_pick && tens && stack && en_of && state &&
                           used && app ? EG_OK : EG_ENOMEM;
    x.J = (ee_judge){judge_cb, spent_cb, &x};
    out->n = 0;
    if (rc == EG_OK) rc = prices(E, c, nc);
    int *rstart = NULL, *rlist = NULL;
    if (rc == EG_OK) rc = eg_reader_index(g, &rstart, &rlist);
    if (rc == EG_OK) { /* a value read by n nodes (or outputs) pays 1/n in each reader's price */
        for (size_t k = 0; k < ncl; k++) share[k] = 0, ones[k] = 1;
        for (int t = 0; t < g->n_tensors; t++)
            if (E->tensor_cls[t] >= 0) share[ee_find(E, E->tensor_cls[t])] += rstart[t + 1] - rstart[t];
        for (int q = 0; q < g->n_outputs; q++) share[ee_find(E, E->tensor_cls[g->output[q]])] += 1;
        for (size_t k = 0; k < ncl; k++) share[k] = share[k] < 1 ? 1 : share[k];
    }
    free(rstart), free(rlist);
    if (rc == EG_OK) { /* the input graph's nodes at their price there */
        memcpy(np, nc, sizeof *np * nn);
        eg_cost_graph_nodes(c, g, NULL, hc);
        for (int j = 0; j < g->n_nodes; j++) {
            int e = E->node_en[j];
            if (!E->n[e].dead && hc[j] < np[e]) np[e] = hc[j] < 0 ? 0 : hc[j];
        }
    }
    /* Greedy picks price each e-node alone, the cost model a node in its
     * graph: the graph of the picks takes the prices the cost model gives
     * its nodes there, and the picks are made again while that changes a
     * price (the cheapest graph kept) */
    for (int round = 0; rc == EG_OK && round < MAX_REPRICE; round++) {
        if ((rc = extract_once(&x, np, best, pick)) != EG_OK || !reprice(&x, np)) break;
    }
    /* and the tree prices (each value paid by each reader), which keep
     * apart what the shared prices let merge */
    if (rc == EG_OK) {
        const double *shared = x.share;
        x.share = ones;
        rc = extract_once(&x, np, best, pick);
        x.share = shared;
    }
    /* the exact picks over what the cheapest graph and the input graph
     * compute, then the local search from the cheapest picks and from the
     * input graph's, each with a budget of nodes built (deterministic) */
    if (rc == EG_OK && budget && x.top.n) {
        int *greedy = malloc(sizeof *greedy * ncl), *input = malloc(sizeof *input * ncl), solved = 0;
        if (!greedy || !input) rc = EG_ENOMEM;
        if (rc == EG_OK) {
            memcpy(greedy, best_pick, sizeof *greedy * ncl);
            memcpy(input, best_pick, sizeof *input * ncl);
            ee_input_picks(E, input);
            const int *both[2] = {greedy, input};
            memcpy(pick, greedy, sizeof *pick * ncl);
            rc = ee_ilp(E, np, both, 2, &budget->ilp_rlimit, deadline - eg_now_s(), pick, &x.top.ilp_region,
                        &solved);
            x.top.ilp_solved = solved;
            if (solved == 0 && eg_now_s() > deadline) x.top.timed_out = 1;
        }
        double cost;
        if (rc == EG_OK && solved > 0) rc = judge(&x, &cost);
        if (rc == EG_OK) {
            memcpy(greedy, best_pick, sizeof *greedy * ncl); /* the cheapest so far: the ILP's, maybe */
            rc = polish_from(&x, budget, np, greedy, pick);
        }
        if (rc == EG_OK) { /* the input graph's picks with the merges that pay there (the
                              projections of one input into one matmul, then the third) */
            memcpy(pick, input, sizeof *pick * ncl);
            rc = judge(&x, &cost);
            if (rc == EG_OK && cost < DBL_MAX) rc = ee_share(E, np, pick, &x.J, &cost);
            if (rc == EG_OK) memcpy(input, pick, sizeof *input * ncl);
        }
        if (rc == EG_OK) rc = polish_from(&x, budget, np, input, pick);
        free(greedy), free(input);
    }
    if (rc == EG_OK && !x.top.n) rc = EG_EGRAPH;
    if (rc == EG_OK) *out = x.top, x.top.n = 0;
    out->ilp_region = x.top.ilp_region, out->ilp_solved = x.top.ilp_solved, out->timed_out = x.top.timed_out;
    ee_top_free(&x.top);
    if (rc == EG_EGRAPH && err && errlen && !err[0]) eg_errf(err, errlen, rc, "extraction: a cycle");
    if (rc == EG_ENOMEM) eg_errf(err, errlen, rc, "extraction: out of memory");
    free(nc), free(np), free(best), free(hc), free(share), free(ones), free(pick), free(best_pick), free(tens), free(stack);
    free(en_of), free(state), free(used), free(app);
    return rc;
}
