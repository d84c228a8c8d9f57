/* share.c - the price of the picked graph: an e-node's own price there
 * (ee_own_price: weights and fused groups at 0), and the picks improved
 * where a new value pays once for several readers (ee_share).
 *
 * Why. The greedy picks (extract.c) price a class as its e-node plus the
 * classes it reads, so a value read by two picked classes is paid twice.
 * The merge TASO is known for has exactly that shape: two convs of one
 * input, A and B, are also split0 and split1 of one conv K over their
 * weights concatenated; priced alone, each split pays the whole of K and
 * loses to its small conv. Here the picked graph is priced as a graph:
 * for each class K outside it whose picked e-node reads only classes in
 * it (or weights), the classes R of the graph that have an e-node reading
 * K and otherwise only classes of the graph switch to those e-nodes
 * together when that lowers the graph's price: K's price and theirs
 * against what their old picks alone kept alive (reference counts). A
 * move that would close a cycle is undone. Classes in id order, once:
 * deterministic.
 */
#include "egraph/egraph_int.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

/* ---- an e-node's own price in the picked graph ---- */

/* 1 when e-node e reads weights alone (an opspecs operator folded on
 * export). */
static int weight_node(ee_graph *E, int e) {
    const ee_node *n = &E->n[e];
    if (n->kind != EE_OPS || !n->n_kid) return 0;
    if (ops_table[n->op].flags & OPF_CONST) return 1; /* reads shapes alone */
    for (int k = 0; k < n->n_kid; k++)
        if (!(E->c[ee_find(E, ee_kids(E, e)[k])].flags & EE_WEIGHT)) return 0;
    return 1;
}

/* The opspecs e-node picked for class c, or NULL. */
static const ee_node *picked_ops(const ee_graph *E, const int *pick, int c) {
    return pick && c >= 0 && pick[c] >= 0 && E->n[pick[c]].kind == EE_OPS ? &E->n[pick[c]] : NULL;
}

int ee_fusable(const ee_node *n) {
    return n->kind == EE_OPS && ((n->op == OP_BIAS && n->param[0] == 1) || n->op == OP_RELU);
}

int ee_plain_conv(const ee_node *n) {
    return n && n->kind == EE_OPS && n->op == OP_CONV2D && n->param[2] == OPS_ACT_NONE;
}

/* 1 when e-node e runs inside the conv picked below it, as the export and
 * the runtime write them (groups.h, cost.c's fused_into_conv): a bias on
 * the channels of a conv without an activation (the Conv's B), a relu of
 * such a conv or conv + bias (FusedConv). */
static int fused(const ee_graph *E, const int *pick, int e) {
    const ee_node *n = &E->n[e];
    if (!ee_fusable(n)) return 0;
    const ee_node *p = picked_ops(E, pick, ee_kids(E, e)[0]);
    if (p && n->op == OP_RELU && p->op == OP_BIAS && ee_fusable(p))
        p = picked_ops(E, pick, ee_kids(E, pick[ee_kids(E, e)[0]])[0]);
    return ee_plain_conv(p);
}

double ee_own_price(ee_graph *E, const double *nc, const int *pick, int e) {
    return weight_node(E, e) || fused(E, pick, e) ? 0 : nc[e];
}


typedef struct {
    ee_graph *E;
    const double *nc;
    int *pick, *refs, *refs2, *stack;
    unsigned char *in, *state;
    const ee_judge *J;
    double *cost; /* the cost model's price of the picks */
} sharer;

/* in[] and refs[] of the picked graph (ee_reached). */
static void count(sharer *s) { ee_reached(s->E, s->pick, s->in, s->refs, s->stack); }

/* Drop one reference to class c in refs2: when none is left, the price
 * of its pick and of what only it kept. @return the price freed. */
static double release(sharer *s, int c) {
    ee_graph *E = s->E;
    double freed = 0;
    int sp = 0;
    if (--s->refs2[c] > 0) return 0;
    s->stack[sp++] = c;
    while (sp) {
        int d = s->stack[--sp], e = s->pick[d];
        freed += ee_own_price(E, s->nc, s->pick, e);
        const int *k = ee_kids(E, e);
        for (int i = 0; i < E->n[e].n_kid; i++) {
            int dup = !ee_kid_new(k, i);
            if (!dup && --s->refs2[k[i]] == 0) s->stack[sp++] = k[i];
        }
    }
    return freed;
}

/* 1 when every kid of e-node e is in the picked graph, a weight, or k. */
static int reads_graph(sharer *s, int e, int k) {
    const int *kid = ee_kids(s->E, e);
    for (int i = 0; i < s->E->n[e].n_kid; i++)
        if (kid[i] >= 0 && kid[i] != k && !s->in[kid[i]] && !(s->E->c[kid[i]].flags & EE_WEIGHT)) return 0;
    return 1;
}

/* 1 when the picks reachable from the outputs form no cycle. */
static int acyclic(sharer *s) {
    ee_graph *E = s->E;
    memset(s->state, 0, (size_t)E->n_cls);
    for (int q = 0; q < E->g->n_outputs; q++) {
        int root = ee_find(E, E->tensor_cls[E->g->output[q]]), sp = 0;
        if (s->state[root] == 2) continue;
        s->stack[sp++] = root, s->state[root] = 1;
        while (sp) {
            int c = s->stack[sp - 1], e = s->pick[c], pending = 0;
            const int *k = ee_kids(E, e);
            for (int i = 0; i < E->n[e].n_kid && !pending; i++) {
                if (k[i] < 0) continue;
                if (s->state[k[i]] == 1) return 0;
                if (s->state[k[i]] == 0) s->stack[sp++] = k[i], s->state[k[i]] = 1, pending = 1;
            }
            if (!pending) s->state[c] = 2, sp--;
        }
    }
    return 1;
}

/* Try class K as a shared value (see the header comment). @return 1 when
 * the move was made, 0 when not, -1 when out of memory. */
static int try_share(sharer *s, int K, int *alt, int *cls) {
    ee_graph *E = s->E;
    int pk = s->pick[K], n = 0;
    if (pk < 0 || s->in[K] || (E->c[K].flags & EE_WEIGHT) || !reads_graph(s, pk, -1)) return 0;
    for (int i = 0; i < E->c[K].n_par; i++) { /* the cheapest reader of K per class of the graph */
        int e = E->cpar[E->c[K].par0 + i], r = E->n[e].cls;
        if (!s->in[r] || s->pick[r] == e || !reads_graph(s, e, K)) continue;
        int q = 0;
        while (q < n && cls[q] != r) q++;
        if (q == n) cls[n] = r, alt[n++] = e;
        else if (ee_own_price(E, s->nc, s->pick, e) < ee_own_price(E, s->nc, s->pick, alt[q]))
            alt[q] = e;
    }
    if (n < 2) return 0;
    memcpy(s->refs2, s->refs, sizeof *s->refs * (size_t)E->n_cls);
    double delta = ee_own_price(E, s->nc, s->pick, pk);
    const int *kk = ee_kids(E, pk);
    for (int i = 0; i < E->n[pk].n_kid; i++) if (kk[i] >= 0) s->refs2[kk[i]]++;
    for (int q = 0; q < n; q++) { /* the new readers first: what they read stays */
        const int *k = ee_kids(E, alt[q]);
        for (int i = 0; i < E->n[alt[q]].n_kid; i++) if (k[i] >= 0 && k[i] != K) s->refs2[k[i]]++;
        delta += ee_own_price(E, s->nc, s->pick, alt[q]);
    }
    for (int q = 0; q < n; q++) {
        int old = s->pick[cls[q]];
        const int *k = ee_kids(E, old);
        delta -= ee_own_price(E, s->nc, s->pick, old);
        for (int i = 0; i < E->n[old].n_kid; i++) {
            int dup = !ee_kid_new(k, i);
            if (!dup) delta -= release(s, k[i]);
        }
    }
    if (!(delta < 0)) return 0;
    int saved[RG_MAX_NODES * 8];
    if (n > (int)(sizeof saved / sizeof saved[0])) return 0;
    for (int q = 0; q < n; q++) saved[q] = s->pick[cls[q]], s->pick[cls[q]] = alt[q];
    double cost = DBL_MAX;
    if (acyclic(s)) { /* the own prices said lower; the cost model decides */
        if (s->J->judge(s->J->ctx, &cost) != EG_OK) return -1;
        if (cost < *s->cost) {
            *s->cost = cost;
            return 1;
        }
    }
    for (int q = 0; q < n; q++) s->pick[cls[q]] = saved[q];
    return 0;
}

eg_status ee_share(ee_graph *E, const double *nc, int *pick, const ee_judge *J, double *cost) {
    size_t ncl = (size_t)E->n_cls + 1;
    sharer s = {E, nc, pick, malloc(sizeof(int) * ncl), malloc(sizeof(int) * ncl),
                malloc(sizeof(int) * ncl), malloc(ncl), malloc(ncl), J, cost};
    int alt[RG_MAX_NODES * 8], cls[RG_MAX_NODES * 8];
    eg_status rc = s.refs && s.refs2 && s.stack && s.in && s.state ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) count(&s);
    for (int K = 0; rc == EG_OK && K < E->n_cls; K++) {
        if (E->c[K].uf != K || E->c[K].n_par < 2 || E->c[K].n_par > (int)(sizeof alt / sizeof alt[0])) continue;
        int moved = try_share(&s, K, alt, cls);
        if (moved < 0) rc = EG_ENOMEM;
        if (moved > 0) count(&s);
    }
    free(s.refs), free(s.refs2), free(s.stack), free(s.in), free(s.state);
    return rc;
}
