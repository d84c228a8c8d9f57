/* polish.c - a local search over the picks of an e-graph (ee_polish),
 * judged by the cost model on the whole graph.
 *
 * Why. The greedy picks (extract.c) price each e-node alone, while the
 * cost model prices a node in its graph: a node can run inside its
 * neighbour (a bias or relu in the conv before it, a scale in a matmul,
 * a layer norm's scale and shift in the layer norm, the GELU chain in
 * one kernel) or be written inside its reader (a concat in a concat, a
 * scale and bias as one BatchNormalization). Greedy prices cannot see
 * those, nor that a merge's splits cost more than the kernel launch it
 * saves. Here a move switches one class to another of its e-nodes, what
 * that one reads taken at the greedy picks made with the graph's own
 * classes paid for (it reuses what the graph computes) or at the plain
 * greedy picks (what it lets go of the graph is not read again), and the
 * graph is built and priced by the cost model: kept when it is cheaper.
 */
#include "egraph/egraph_int.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

/* 1 when the picks from e-node e's kids reach class c (e in c would
 * close a cycle). mark[]/epoch: the classes seen. */
static int reaches(ee_graph *E, const int *pick, int e, int c, int *mark, int epoch, int *stack) {
    int sp = 0;
    const int *k = ee_kids(E, e);
    for (int q = 0; q < E->n[e].n_kid; q++)
        if (k[q] >= 0 && mark[k[q]] != epoch) mark[k[q]] = epoch, stack[sp++] = k[q];
    while (sp) {
        int d = stack[--sp];
        if (d == c) return 1;
        const int *kd = ee_kids(E, pick[d]);
        for (int q = 0; q < E->n[pick[d]].n_kid; q++)
            if (kd[q] >= 0 && mark[kd[q]] != epoch) mark[kd[q]] = epoch, stack[sp++] = kd[q];
    }
    return 0;
}

/* A move of the local search: class c to e-node e, est its greedy price
 * change (what e and the classes it adds cost, less what the old pick
 * and the classes only it read cost), the order moves are judged in. */
typedef struct {
    double est;
    int c, e;
    int v; /* what it brings in: 0 the greedy picks with the graph's classes paid, 1 the plain greedy picks */
} move;

static int move_cmp(const void *pa, const void *pb) {
    const move *a = pa, *b = pb;
    if (a->est != b->est) return a->est < b->est ? -1 : 1;
    if (a->c != b->c) return a->c < b->c ? -1 : 1;
    return a->e != b->e ? (a->e > b->e) - (a->e < b->e) : a->v - b->v;
}

/* The own prices of the picked readers of class c that may run inside
 * its pick (a bias or relu over it, a relu over such a bias: ee_own_price
 * in share.c), with c at its present pick. */
static double fusable_readers(ee_graph *E, const double *np, const int *pick, const unsigned char *in, int c) {
    double sum = 0;
    for (int i = 0; i < E->c[c].n_par; i++) {
        int p = E->cpar[E->c[c].par0 + i], cp = ee_find(E, E->n[p].cls);
        if (E->n[p].dead || !in[cp] || pick[cp] != p || !ee_fusable(&E->n[p]) || ee_kids(E, p)[0] != c) continue;
        sum += ee_own_price(E, np, pick, p);
        for (int j = 0; E->n[p].op == OP_BIAS && j < E->c[cp].n_par; j++) { /* a relu over that bias */
            int q = E->cpar[E->c[cp].par0 + j], cq = ee_find(E, E->n[q].cls);
            if (!E->n[q].dead && in[cq] && pick[cq] == q && E->n[q].op == OP_RELU && ee_kids(E, q)[0] == cp)
                sum += ee_own_price(E, np, pick, q);
        }
    }
    return sum;
}

/* What the graph of picks gains in greedy prices when class c switches
 * to e-node e: the own prices of e and of the classes it brings in, less
 * those of the old pick and of the classes only it read (followed while
 * a class has one reader), and less what its readers save by running
 * inside e (a BatchNormalization's scale as a depthwise conv takes the
 * bias and relu over it in: DenseNet's, under the GPU-like cost, where
 * that move alone costs more and came too late for the budget).
 * mark[]/epoch: the classes seen. pick is restored before it returns. */
static double move_est(ee_graph *E, const double *np, int *pick, const unsigned char *in, const int *refs, int c,
                       int e, int *mark, int epoch, int *stack) {
    double est = ee_own_price(E, np, pick, e) - ee_own_price(E, np, pick, pick[c]);
    if (ee_plain_conv(&E->n[e]) != ee_plain_conv(&E->n[pick[c]])) {
        int old = pick[c];
        est -= fusable_readers(E, np, pick, in, c);
        pick[c] = e;
        est += fusable_readers(E, np, pick, in, c);
        pick[c] = old;
    }
    int sp = 0;
    const int *k = ee_kids(E, e);
    for (int q = 0; q < E->n[e].n_kid; q++) /* what e reads stays */
        if (k[q] >= 0 && mark[k[q]] != epoch) mark[k[q]] = epoch, stack[sp++] = k[q];
    while (sp) { /* the classes e brings in */
        int d = stack[--sp];
        if (in[d]) continue;
        est += ee_own_price(E, np, pick, pick[d]);
        const int *kd = ee_kids(E, pick[d]);
        for (int q = 0; q < E->n[pick[d]].n_kid; q++)
            if (kd[q] >= 0 && mark[kd[q]] != epoch) mark[kd[q]] = epoch, stack[sp++] = kd[q];
    }
    const int *ko = ee_kids(E, pick[c]);
    for (int q = 0; q < E->n[pick[c]].n_kid; q++)
        if (ko[q] >= 0 && mark[ko[q]] != epoch && refs[ko[q]] == 1) mark[ko[q]] = epoch, stack[sp++] = ko[q];
    while (sp) { /* the classes only the old pick kept */
        int d = stack[--sp];
        est -= ee_own_price(E, np, pick, pick[d]);
        const int *kd = ee_kids(E, pick[d]);
        for (int q = 0; q < E->n[pick[d]].n_kid; q++)
            if (kd[q] >= 0 && mark[kd[q]] != epoch && refs[kd[q]] == 1) mark[kd[q]] = epoch, stack[sp++] = kd[q];
    }
    return est;
}

/* The moves from the picks (classes reached in in[], read refs[] times,
 * the others at the picks of variant v) appended to *mv (*n of *cap).
 * @return 0, or -1 when out of memory. */
static int moves_of(ee_graph *E, const double *np, int *pick, const unsigned char *in, const int *refs,
                    int *mark, int *stack, int v, move **mv, long *n, long *cap) {
    int epoch = 0;
    for (int c = 0; c < E->n_cls; c++) mark[c] = 0;
    for (int c = 0; c < E->n_cls; c++) {
        if (!in[c] || E->c[c].uf != c || E->c[c].n_node < 2 || (E->c[c].flags & EE_WEIGHT)) continue;
        for (int i = 0; i < E->c[c].n_node; i++) {
            int e = E->cnode[E->c[c].node0 + i], ok = e != pick[c];
            const int *k = ee_kids(E, e);
            for (int q = 0; ok && q < E->n[e].n_kid; q++) ok = k[q] < 0 || pick[k[q]] >= 0;
            if (!ok) continue;
            if (*n == *cap) {
                move *m = realloc(*mv, sizeof *m * (size_t)(*cap = *cap ? 2 * *cap : 256));
                if (!m) return -1;
                *mv = m;
            }
            (*mv)[(*n)++] = (move){move_est(E, np, pick, in, refs, c, e, mark, ++epoch, stack), c, e, v};
        }
    }
    return 0;
}

/* ee_polish (egraph_int.h). Moves in the order of their estimated greedy
 * price change, then class and e-node id; the first that the cost model
 * prices lower is taken (an e-node refused once is not judged again);
 * passes until none lowers or J says the budget is spent: deterministic,
 * the time limit stopping it only as a safety net. mark[] holds positive
 * epochs in moves_of, negative ones here. */
#define MAX_POLISH_PASSES 4
/* The picks a variant-v move is judged with: the graph's own (cur) where
 * it reaches (in), the variant's elsewhere. */
static void compose(const ee_graph *E, const int *cur, const unsigned char *in, const int *var, int *out) {
    for (int c = 0; c < E->n_cls; c++) out[c] = in[c] ? cur[c] : var[c];
}

eg_status ee_polish(ee_graph *E, const ee_judge *J, const double *np, const double *share, const int *start,
                    int *pick) {
    size_t ncl = (size_t)E->n_cls + 1, nn = (size_t)E->n_nodes + 1;
    double cost = DBL_MAX, *best = malloc(sizeof *best * ncl);
    int *refs = malloc(sizeof *refs * ncl), *mark = calloc(ncl, sizeof *mark), *stack = malloc(sizeof *stack * ncl);
    int *cur = malloc(sizeof *cur * ncl), *var[2] = {malloc(sizeof(int) * ncl), malloc(sizeof(int) * ncl)};
    int *comp[2] = {malloc(sizeof(int) * ncl), malloc(sizeof(int) * ncl)};
    unsigned char *in = malloc(ncl), *tried = calloc(nn, 1); /* tried: bit v, e-node refused here as variant v */
    eg_status rc = best && refs && mark && stack && cur && var[0] && var[1] && comp[0] && comp[1] && in && tried
                       ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) memcpy(cur, start, sizeof *cur * ncl), memcpy(pick, start, sizeof *pick * ncl);
    if (rc == EG_OK) rc = J->judge(J->ctx, &cost);
    if (rc == EG_OK) rc = ee_pick_all(E, np, share, NULL, best, var[1]); /* the plain greedy picks */
    for (int pass = 0, better = 1; rc == EG_OK && cost < DBL_MAX && better && pass < MAX_POLISH_PASSES; pass++) {
        move *mv = NULL;
        long n = 0, cap = 0;
        int epoch = 0; /* negative: moves_of counts up from 0 */
        better = 0;
        ee_reached(E, cur, in, refs, stack);
        /* the greedy picks with the graph's classes paid for already, so a
         * move reads what the graph has; or the plain greedy picks, where
         * what the graph has is what the move lets go */
        memcpy(var[0], cur, sizeof *cur * ncl);
        rc = ee_pick_all(E, np, share, in, best, var[0]);
        for (int v = 0; rc == EG_OK && v < 2; v++) {
            compose(E, cur, in, var[v], comp[v]);
            if (moves_of(E, np, comp[v], in, refs, mark, stack, v, &mv, &n, &cap)) rc = EG_ENOMEM;
        }
        if (rc == EG_OK && n) qsort(mv, (size_t)n, sizeof *mv, move_cmp);
        for (long i = 0; rc == EG_OK && i < n; i++) {
            int c = mv[i].c, e = mv[i].e, v = mv[i].v;
            if (!in[c] || e == cur[c] || (tried[e] >> v & 1)) continue; /* an earlier move took it out */
            memcpy(pick, comp[v], sizeof *pick * ncl);
            pick[c] = e;
            if (reaches(E, pick, e, c, mark, --epoch, stack)) continue;
            if (J->spent(J->ctx)) break;
            double got;
            if ((rc = J->judge(J->ctx, &got)) != EG_OK) break;
            if (got < cost) {
                cost = got, better = 1;
                ee_reached(E, pick, in, NULL, stack);
                memcpy(cur, pick, sizeof *cur * ncl);
                for (int w = 0; w < 2; w++) compose(E, cur, in, var[w], comp[w]);
            } else {
                tried[e] |= (unsigned char)(1u << v);
            }
        }
        free(mv);
    }
    if (rc == EG_OK) memcpy(pick, cur, sizeof *pick * ncl);
    free(best), free(refs), free(mark), free(stack), free(cur), free(var[0]), free(var[1]);
    free(comp[0]), free(comp[1]), free(in), free(tried);
    return rc;
}

/* The picks of the input graph: each class of a tensor of g at the leaf
 * or the first node (in g's order: what it reads comes before) that
 * writes a tensor of the class; other classes keep their picks. */
void ee_input_picks(ee_graph *E, int *pick) {
    const eg_graph *g = E->g;
    unsigned char *set = calloc((size_t)E->n_cls + 1, 1);
    if (!set) return; /* the given picks, which are picks too */
    for (int e = 0; e < E->n_nodes; e++) {
        const ee_node *n = &E->n[e];
        int c = ee_find(E, n->cls);
        if (n->kind == EE_LEAF && !n->dead && !set[c]) pick[c] = e, set[c] = 1;
    }
    for (int j = 0; j < g->n_nodes; j++) {
        int e = E->node_en[j], c = ee_find(E, E->n[e].cls);
        if (E->n[e].dead || set[c]) continue;
        pick[c] = e, set[c] = 1;
        for (int p = 0; E->n[e].kind == EE_NODE && p < E->c[c].n_par; p++) { /* its outputs */
            int q = E->cpar[E->c[c].par0 + p], pc = ee_find(E, E->n[q].cls);
            if (E->n[q].kind == EE_PROJ && !E->n[q].dead && !set[pc]) pick[pc] = q, set[pc] = 1;
        }
    }
    free(set);
}

