/* ilp.c - exact extraction over a region of the e-graph (ee_ilp), by Z3's
 * optimizer as a weighted MaxSAT problem.
 *
 * Why. The greedy picks (greedy.c) price a value read by several nodes
 * by a share of it per reader, and the local search (polish.c) moves one
 * class at a time: neither is sure to find the cheapest combination of
 * the choices an e-graph offers. The ILP is: a boolean x_e per e-node
 * ("e is in the graph"); every output class has one; an e-node in the
 * graph has one e-node in the graph in each class it reads; an integer
 * order t_c per class with t_c > t_q whenever an e-node of c in the graph
 * reads q (no cycle: Tensat's formulation); minimise the own prices of
 * the e-nodes in the graph, each paid once however many read it. A bias
 * or relu over a class whose picked e-node is a conv without activation
 * runs inside it (share.c's ee_own_price): it is paid only when no such
 * conv of that class is in the graph.
 *
 * The region. Every e-node is too many for a solver inside the time
 * limit, so the problem is cut to the classes the given graphs compute
 * (the cheapest greedy graph and the input graph), with each such class's
 * e-nodes that read only such classes: every way of combining what those
 * graphs compute. Over MAX_ILP_NODES e-nodes it is not tried.
 *
 * Deterministic: Z3 gets a resource limit (rlimit, a count of its own
 * steps, not the clock): what is left of the search's budget, at most
 * ILP_RLIMIT; without the optimum proved within it the answer is "not
 * solved". The time limit is only a safety net. A unit is not a fixed
 * time: 6 M units took 0.2 to 4.6 s on the bench models' regions.
 */
#include "egraph/egraph_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <z3.h>

#define MAX_ILP_NODES 6000
#define ILP_RLIMIT 6000000u /* one extraction's at most: the bench models' regions solved need up to 5.4 M */

typedef struct {
    Z3_context z;
    Z3_optimize o;
    Z3_ast *x;       /* [e-nodes]: x_e, NULL outside the region */
    Z3_ast *any;     /* [classes]: the or of the class's x_e */
    Z3_ast *conv;    /* [classes]: the or of its plain convs' x_e, or false */
    Z3_ast *t;       /* [classes]: t_c */
} ilp;

static Z3_ast or_of(Z3_context z, Z3_ast *args, unsigned n) {
    return n ? Z3_mk_or(z, n, args) : Z3_mk_false(z);
}

/* The classes' or terms (any, conv) from the e-nodes in the region.
 * @return 0 when out of memory. */
static int class_terms(ee_graph *E, ilp *P, const unsigned char *in) {
    Z3_ast *args = malloc(sizeof *args * (size_t)(E->n_nodes + 1));
    Z3_ast *convs = malloc(sizeof *convs * (size_t)(E->n_nodes + 1));
    if (!args || !convs) return free(args), free(convs), 0;
    for (int c = 0; c < E->n_cls; c++) {
        if (!in[c]) continue;
        unsigned n = 0, nc = 0;
        for (int i = 0; i < E->c[c].n_node; i++) {
            int e = E->cnode[E->c[c].node0 + i];
            if (!P->x[e]) continue;
            args[n++] = P->x[e];
            if (ee_plain_conv(&E->n[e])) convs[nc++] = P->x[e];
        }
        P->any[c] = or_of(P->z, args, n);
        P->conv[c] = or_of(P->z, convs, nc);
        char name[32];
        snprintf(name, sizeof name, "t%d", c);
        P->t[c] = Z3_mk_const(P->z, Z3_mk_string_symbol(P->z, name), Z3_mk_int_sort(P->z));
    }
    free(args), free(convs);
    return 1;
}

/* The weight of a price in microseconds as Z3 reads it: nanoseconds. */
static void weight_of(double us, char *buf, size_t len) {
    snprintf(buf, len, "%lld", (long long)llround(us * 1000.0));
}

/* The constraints and soft goals of e-node e of class c. */
static void node_terms(ee_graph *E, ilp *P, const double *np, int e, int c) {
    Z3_context z = P->z;
    const int *k = ee_kids(E, e);
    for (int i = 0; i < E->n[e].n_kid; i++) {
        int dup = !ee_kid_new(k, i);
        if (dup) continue;
        Z3_ast reads[2] = {P->any[k[i]], Z3_mk_gt(z, P->t[c], P->t[k[i]])};
        Z3_optimize_assert(z, P->o, Z3_mk_implies(z, P->x[e], Z3_mk_and(z, 2, reads)));
    }
    double price = ee_own_price(E, np, NULL, e);
    if (!(price > 0)) return;
    char w[32];
    weight_of(price, w, sizeof w);
    Z3_ast paid = P->x[e];
    if (ee_fusable(&E->n[e]) && k[0] >= 0) { /* paid unless a plain conv of the class it reads is in */
        char name[32];
        snprintf(name, sizeof name, "f%d", e);
        paid = Z3_mk_const(z, Z3_mk_string_symbol(z, name), Z3_mk_bool_sort(z));
        Z3_ast unfused[2] = {P->x[e], Z3_mk_not(z, P->conv[k[0]])};
        Z3_optimize_assert(z, P->o, Z3_mk_implies(z, Z3_mk_and(z, 2, unfused), paid));
    }
    Z3_optimize_assert_soft(z, P->o, Z3_mk_not(z, paid), w, Z3_mk_string_symbol(z, "cost"));
}

/* The region: the classes the picks in picks[0..n_picks) reach (in[]);
 * *n_x: the e-nodes of those classes reading only such classes, marked
 * in take[]. */
static void region(ee_graph *E, const int *const *picks, int n_picks, unsigned char *in, unsigned char *take,
                   int *stack, long *n_x) {
    unsigned char *one = malloc((size_t)E->n_cls + 1);
    memset(in, 0, (size_t)E->n_cls + 1);
    for (int p = 0; one && p < n_picks; p++) {
        ee_reached(E, picks[p], one, NULL, stack);
        for (int c = 0; c < E->n_cls; c++) in[c] |= one[c];
    }
    free(one);
    *n_x = 0;
    for (int e = 0; e < E->n_nodes; e++) {
        const ee_node *n = &E->n[e];
        int c = ee_find(E, n->cls), ok = !n->dead && in[c];
        const int *k = ee_kids(E, e);
        for (int i = 0; ok && i < n->n_kid; i++) ok = k[i] < 0 || (in[k[i]] && k[i] != c);
        take[e] = (unsigned char)ok;
        *n_x += ok;
    }
}

/* The resource units Z3 counted in P's optimizer. */
static uint64_t units_spent(const ilp *P) {
    uint64_t n = 0;
    Z3_stats st = Z3_optimize_get_statistics(P->z, P->o);
    Z3_stats_inc_ref(P->z, st);
    for (unsigned i = 0; i < Z3_stats_size(P->z, st); i++)
        if (!strcmp(Z3_stats_get_key(P->z, st, i), "rlimit count") && Z3_stats_is_uint(P->z, st, i))
            n = Z3_stats_get_uint_value(P->z, st, i);
    Z3_stats_dec_ref(P->z, st);
    return n;
}

eg_status ee_ilp(ee_graph *E, const double *np, const int *const *picks, int n_picks, uint64_t *rlimit,
                 double seconds_left, int *pick, long *n_region, int *solved) {
    size_t ncl = (size_t)E->n_cls + 1, nn = (size_t)E->n_nodes + 1;
    unsigned char *in = malloc(ncl), *take = malloc(nn);
    int *stack = malloc(sizeof *stack * ncl);
    ilp P = {0};
    long n_x = 0;
    eg_status rc = in && take && stack ? EG_OK : EG_ENOMEM;
    *solved = 0;
    if (rc == EG_OK) region(E, picks, n_picks, in, take, stack, &n_x);
    *n_region = n_x;
    if (n_x > MAX_ILP_NODES) *solved = -1;
    unsigned units = *rlimit < ILP_RLIMIT ? (unsigned)*rlimit : ILP_RLIMIT;
    if (rc != EG_OK || n_x > MAX_ILP_NODES || seconds_left <= 0 || units == 0) goto done;
    P.x = calloc(nn, sizeof *P.x), P.any = calloc(ncl, sizeof *P.any);
    P.conv = calloc(ncl, sizeof *P.conv), P.t = calloc(ncl, sizeof *P.t);
    if (!P.x || !P.any || !P.conv || !P.t) {
        rc = EG_ENOMEM;
        goto done;
    }
    Z3_config cfg = Z3_mk_config();
    P.z = Z3_mk_context(cfg);
    Z3_del_config(cfg);
    Z3_set_error_handler(P.z, NULL); /* an error leaves the check undecided */
    P.o = Z3_mk_optimize(P.z);
    Z3_optimize_inc_ref(P.z, P.o);
    Z3_params prm = Z3_mk_params(P.z);
    Z3_params_inc_ref(P.z, prm);
    Z3_params_set_uint(P.z, prm, Z3_mk_string_symbol(P.z, "rlimit"), units);
    unsigned ms = seconds_left * 1000 < 4e9 ? (unsigned)(seconds_left * 1000) + 1 : 4000000000u;
    Z3_params_set_uint(P.z, prm, Z3_mk_string_symbol(P.z, "timeout"), ms); /* the safety net */
    Z3_optimize_set_params(P.z, P.o, prm);
    Z3_params_dec_ref(P.z, prm);
    for (int e = 0; e < E->n_nodes; e++) {
        if (!take[e]) continue;
        char name[32];
        snprintf(name, sizeof name, "x%d", e);
        P.x[e] = Z3_mk_const(P.z, Z3_mk_string_symbol(P.z, name), Z3_mk_bool_sort(P.z));
    }
    if (!class_terms(E, &P, in)) {
        rc = EG_ENOMEM;
        goto done;
    }
    for (int q = 0; q < E->g->n_outputs; q++)
        Z3_optimize_assert(P.z, P.o, P.any[ee_find(E, E->tensor_cls[E->g->output[q]])]);
    for (int e = 0; e < E->n_nodes; e++)
        if (take[e]) node_terms(E, &P, np, e, ee_find(E, E->n[e].cls));
    Z3_lbool sat = Z3_optimize_check(P.z, P.o, 0, NULL);
    uint64_t spent = units_spent(&P);
    *rlimit -= spent < *rlimit ? spent : *rlimit;
    if (sat == Z3_L_TRUE) {
        Z3_model m = Z3_optimize_get_model(P.z, P.o);
        Z3_model_inc_ref(P.z, m);
        for (int c = 0; c < E->n_cls; c++) {
            for (int i = 0; in[c] && i < E->c[c].n_node; i++) { /* the first e-node in the graph */
                int e = E->cnode[E->c[c].node0 + i];
                Z3_ast v;
                if (!take[e] || !Z3_model_eval(P.z, m, P.x[e], true, &v)) continue;
                if (Z3_get_bool_value(P.z, v) == Z3_L_TRUE) {
                    pick[c] = e;
                    break;
                }
            }
        }
        Z3_model_dec_ref(P.z, m);
        *solved = 1;
    }
done:
    if (P.z) {
        Z3_optimize_dec_ref(P.z, P.o);
        Z3_del_context(P.z);
    }
    free(P.x), free(P.any), free(P.conv), free(P.t);
    free(in), free(take), free(stack);
    return rc;
}
