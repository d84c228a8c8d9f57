/* extract.c - the cheapest graph an e-graph holds (ee_extract): each
 * e-node priced alone by the user's cost model, one e-node picked per
 * class bottom-up, the graph built from the picks.
 *
 * Prices. An opspecs e-node is costed on a scratch graph with one tensor
 * per class (eg_cost_node reads a node's operator, parameters and shapes),
 * a model or opaque node as it is in the input graph; leaves, outputs of
 * a multi-output node, and e-nodes over weights alone (folded on export)
 * cost 0.
 *
 * Picks. A class's price is the cheapest of its e-nodes' own price plus
 * the prices of the classes it reads (each once), found by passes until
 * nothing changes (greedy, Tensat's first extractor): shared values are
 * counted in each reader, so the pick is not always the cheapest graph;
 * the pipeline compares the result with the graph it started from.
 * Ties go to the e-node whose inputs are shallower (height), so at the
 * fixed point every pick reads only classes of a smaller height: no
 * cycle can be picked, also where weights cost 0.
 */
#include "egraph/egraph_int.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each live e-node's own price into nc[]. @return EG_OK or EG_ENOMEM. */
static eg_status prices(ee_graph *E, eg_cost *c, double *nc) {
    eg_graph *s = eg_graph_new();
    eg_status rc = s ? EG_OK : EG_ENOMEM;
    char name[32];
    for (int k = 0; rc == EG_OK && k < E->n_cls; k++) {
        int t;
        snprintf(name, sizeof name, "c%d", k);
        rc = eg_add_tensor(s, name, &t);
        if (rc != EG_OK) break;
        const ee_class *cl = &E->c[ee_find(E, k)];
        s->tensor[t].dtype = EG_DT_FLOAT;
        s->tensor[t].shape.rank = -1;
        if (cl->shaped) eg_from_ten_shape(&cl->shape, &s->tensor[t].shape);
        if (cl->flags & EE_WEIGHT) s->tensor[t].flags |= EG_TF_INIT;
    }
    for (int e = 0; rc == EG_OK && e < E->n_nodes; e++) {
        const ee_node *n = &E->n[e];
        nc[e] = 0;
        if (n->dead || n->kind == EE_LEAF || n->kind == EE_PROJ) continue;
        if (n->kind == EE_NODE) {
            nc[e] = eg_cost_node(c, E->g, n->ref);
            continue;
        }
        int id;
        if ((rc = eg_add_node(s, EG_KIND_OPS, "", n->n_kid, 0, 1, &id)) != EG_OK) break;
        eg_node *d = &s->node[id];
        d->op = n->op;
        memcpy(d->param, n->param, sizeof d->param);
        for (int k = 0; k < n->n_kid; k++) d->in[k] = ee_find(E, ee_kids(E, e)[k]);
        d->out[0] = ee_find(E, n->cls);
        nc[e] = eg_cost_node(c, s, id);
    }
    eg_free(s);
    return rc;
}

/* The picks: pick[c] the e-node of root class c (-1: none reachable);
 * with_fusion: a bias or relu fused into the conv it reads costs 0. A
 * price that depends on another class's pick is not monotone, so passes
 * with fusion may not settle: they stop at MAX_FUSED_PASSES.
 * @return 1 when the picks settled. */
#define MAX_FUSED_PASSES 256
static int pick_all(ee_graph *E, const double *nc, int with_fusion, double *best, int *height, int *pick) {
    for (int k = 0; k < E->n_cls; k++) best[k] = DBL_MAX, height[k] = INT32_MAX, pick[k] = -1;
    int pass = 0, changed = 1, max_pass = with_fusion ? MAX_FUSED_PASSES : INT32_MAX;
    for (; changed && pass < max_pass; pass++) {
        changed = 0;
        for (int e = 0; e < E->n_nodes; e++) {
            const ee_node *n = &E->n[e];
            if (n->dead) continue;
            const int *k = ee_kids(E, e);
            int c = ee_find(E, n->cls), h = 0, ok = 1;
            double cost = ee_own_price(E, nc, pick, e, with_fusion);
            for (int i = 0; i < n->n_kid && ok; i++) {
                if (k[i] < 0) continue;
                int q = ee_find(E, k[i]), dup = 0;
                if (pick[q] < 0) ok = 0;
                for (int p = 0; p < i && !dup; p++) dup = k[p] >= 0 && ee_find(E, k[p]) == q;
                if (!ok || dup) continue;
                cost += best[q];
                if (height[q] + 1 > h) h = height[q] + 1;
            }
            if (!ok) continue;
            /* exact comparisons: every update lowers (price, height), so the
             * passes end (a tolerance let two picks trade places forever) */
            if (pick[c] < 0 || cost < best[c] || (cost == best[c] && h < height[c])) {
                best[c] = cost, height[c] = h, pick[c] = e;
                changed = 1;
            }
        }
    }
    return !changed;
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

eg_status ee_extract(ee_graph *E, eg_cost *c, size_t n_rules, eg_graph **out, uint32_t *applied, char *err,
                     size_t errlen) {
    const eg_graph *g = E->g;
    size_t nn = (size_t)E->n_nodes + 1, ncl = (size_t)E->n_cls + 1;
    double *nc = malloc(sizeof *nc * nn), *best = malloc(sizeof *best * ncl);
    int *height = malloc(sizeof *height * ncl), *pick = malloc(sizeof *pick * ncl);
    int *tens = malloc(sizeof *tens * ncl), *stack = malloc(sizeof *stack * ncl);
    unsigned char *state = malloc(ncl), *used = malloc((size_t)g->n_tensors + 1);
    builder b = {E, pick, NULL, tens, used, applied, n_rules, 0};
    eg_status rc = nc && best && height && pick && tens && stack && state && used ? EG_OK : EG_ENOMEM;
    *out = NULL;
    if (rc == EG_OK) rc = prices(E, c, nc);
    /* fused groups priced as the export writes them; the context-free
     * prices (monotone: they settle, and no pick then reads a class of a
     * greater height) when those do not settle or read one another */
    for (int with = 1; rc == EG_OK && with >= 0; with--) {
        if (!pick_all(E, nc, with, best, height, pick) && with) continue;
        if ((rc = ee_share(E, nc, with, pick)) != EG_OK) break;
        err[0] = 0;
        rc = build(&b, ncl, state, stack, out, err, errlen);
        if (rc != EG_EGRAPH || !with) break;
        rc = EG_OK;
    }
    if (rc == EG_EGRAPH && err && errlen && !err[0]) eg_errf(err, errlen, rc, "extraction: a cycle");
    if (rc == EG_ENOMEM) eg_errf(err, errlen, rc, "extraction: out of memory");
    free(nc), free(best), free(height), free(pick), free(tens), free(stack), free(state), free(used);
    return rc;
}
