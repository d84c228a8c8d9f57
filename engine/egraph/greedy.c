/* greedy.c - the greedy picks of an e-graph (ee_pick_all): one e-node
 * per class, bottom-up, by the prices extract.c gives each e-node.
 */
#include "egraph/egraph_int.h"

#include <float.h>
#include <stdlib.h>

/* A candidate pick in the heap: class c by e-node e at cost. */
typedef struct {
    double cost;
    int c, e;
} cand;

static int cand_less(const cand *a, const cand *b) {
    if (a->cost != b->cost) return a->cost < b->cost;
    return a->c != b->c ? a->c < b->c : a->e < b->e;
}

static void heap_push(cand *h, long *n, cand x) {
    long i = (*n)++;
    while (i > 0 && cand_less(&x, &h[(i - 1) / 2])) h[i] = h[(i - 1) / 2], i = (i - 1) / 2;
    h[i] = x;
}

static cand heap_pop(cand *h, long *n) {
    cand top = h[0], x = h[--*n];
    long i = 0;
    for (;;) {
        long l = 2 * i + 1, m = l + 1, s = i;
        const cand *least = &x;
        if (l < *n && cand_less(&h[l], least)) s = l, least = &h[l];
        if (m < *n && cand_less(&h[m], least)) s = m;
        if (s == i) break;
        h[i] = h[s], i = s;
    }
    if (*n) h[i] = x;
    return top;
}

/* The price of e-node e of class c over its kids' final picks: its own
 * price and each class it reads once, divided among that class's readers
 * in the input graph (share): a tree price counts a value read by two
 * once per path, which doubles with each residual block and drowns the
 * differences that matter. */
static double price_of(ee_graph *E, const double *np, const double *share, const double *best, const int *pick,
                       int e) {
    const ee_node *n = &E->n[e];
    const int *k = ee_kids(E, e);
    double cost = ee_own_price(E, np, pick, e);
    for (int i = 0; i < n->n_kid; i++) {
        int dup = !ee_kid_new(k, i);
        if (!dup) cost += best[k[i]] / share[k[i]];
    }
    return cost;
}

/* The picks: pick[c] the e-node of root class c (-1: none reachable),
 * best[c] its price; classes in paid[] (may be NULL) keep their picks at
 * price 0. Knuth's generalization of Dijkstra's algorithm: a class takes
 * its pick when it is the cheapest candidate left, and an e-node becomes a
 * candidate once every class it reads has its pick, so no pick reads a
 * class picked after it: no cycle, and a fused group is priced over the
 * final pick below it (with_fusion). Ties go to the smaller class and
 * e-node ids: deterministic. @return EG_OK or EG_ENOMEM. */
eg_status ee_pick_all(ee_graph *E, const double *np, const double *share, const unsigned char *paid, double *best,
                      int *pick) {
    int *left = malloc(sizeof *left * (size_t)(E->n_nodes + 1));
    int *cls_of = malloc(sizeof *cls_of * (size_t)(E->n_nodes + 1)); /* each e-node's root class: read
                                                                        compactly in the loop below */
    cand *h = malloc(sizeof *h * (size_t)(E->n_nodes + E->n_cls + 1));
    unsigned char *done = calloc((size_t)E->n_cls + 1, 1);
    long nh = 0;
    if (!left || !cls_of || !h || !done) return free(left), free(cls_of), free(h), free(done), EG_ENOMEM;
    for (int c = 0; c < E->n_cls; c++) {
        best[c] = DBL_MAX;
        if (paid && paid[c]) best[c] = 0, done[c] = 1;
        else pick[c] = -1;
    }
    for (int e = 0; e < E->n_nodes; e++) {
        const ee_node *n = &E->n[e];
        const int *k = ee_kids(E, e);
        int c = cls_of[e] = ee_find(E, n->cls);
        left[e] = 0;
        if (n->dead) continue;
        for (int i = 0; i < n->n_kid; i++) {
            int dup = !ee_kid_new(k, i);
            if (!dup && !done[k[i]]) left[e]++;
        }
        if (!left[e] && !done[c]) heap_push(h, &nh, (cand){price_of(E, np, share, best, pick, e), c, e});
    }
    while (nh) {
        cand x = heap_pop(h, &nh);
        if (done[x.c]) continue;
        done[x.c] = 1, pick[x.c] = x.e, best[x.c] = x.cost;
        for (int i = 0; i < E->c[x.c].n_par; i++) {
            int e = E->cpar[E->c[x.c].par0 + i], c = cls_of[e];
            if (--left[e] == 0 && !done[c])
                heap_push(h, &nh, (cand){price_of(E, np, share, best, pick, e), c, e});
        }
    }
    free(left), free(cls_of), free(h), free(done);
    return EG_OK;
}

