/* egraph_int.h - the e-graph of the saturation search (prefix ee_),
 * private to engine/egraph/. See egraph.h for what it is for.
 *
 * An e-class is a set of e-nodes that compute the same value; an e-node
 * is an operator over e-classes. Four kinds of e-node:
 *   EE_OPS   an opspecs operator with its parameters (what rules match
 *            and write), one output;
 *   EE_LEAF  a tensor of the input graph nothing computes here: a graph
 *            input, an initializer, a value an opaque node reads from
 *            outside (ref: its tensor id);
 *   EE_NODE  a model or opaque node of the input graph, kept as it is
 *            (ref: its node id; kids: its explicit then implicit inputs);
 *            rules never match it but rewrite what it reads. With several
 *            outputs its class is a tuple that EE_PROJ e-nodes read;
 *   EE_PROJ  output ref of the tuple its one kid is.
 *
 * Classes are merged with a union-find (the smaller id is the root, so
 * the result does not depend on the order of equal unions). After a
 * round of merges, ee_rebuild restores the invariants from scratch:
 * every e-node's kids canonical, congruent e-nodes (same operator, same
 * canonical kids) merged until none are left, the duplicates marked dead,
 * and the per-class lists (e-nodes, parent e-nodes) and per-operator
 * lists rebuilt in e-node id order. Rebuilding everything costs a pass
 * over the e-nodes; it keeps the code short and the order deterministic.
 */
#ifndef EG_EGRAPH_INT_H
#define EG_EGRAPH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "egraph/egraph.h"

typedef enum { EE_OPS, EE_LEAF, EE_NODE, EE_PROJ, EE_KIND_COUNT } ee_kind; /* ORDER EEKIND */

#define EE_WEIGHT 1u    /* a value of initializers alone: folded on export, costs 0 */
#define EE_NONFINITE 2u /* may be infinite or NaN (EG_TF_NONFINITE) */
#define EE_TUPLE 4u     /* the outputs of a multi-output node, read by EE_PROJ */

typedef struct {
    ee_kind kind;
    ops_op op;                     /* EE_OPS */
    int32_t param[OPS_MAX_PARAMS]; /* EE_OPS */
    int ref;                       /* EE_LEAF: tensor; EE_NODE: node; EE_PROJ: output;
                                      EE_OPS: the input graph's tensor it wrote, -1 */
    int n_kid;
    size_t kid0;                   /* kids[kid0 .. kid0 + n_kid): classes */
    int cls;                       /* the class it joined (ee_find it) */
    int dead;                      /* a duplicate ee_rebuild found */
    int rule;                      /* the rule that added it as its first output; -1 */
} ee_node;

typedef struct {
    int uf;           /* union-find parent; itself at a root */
    unsigned flags;   /* EE_* */
    int shaped;       /* shape is a valid opspecs shape of float32 values */
    ten_shape shape;
    int init;         /* an initializer of the input graph with its float
                         data in this class (a divisor rule reads it), -1 */
    int home;         /* the input graph's tensor this class writes when it
                         must keep a name (graph output, pinned), else the
                         first tensor of the input graph in it, or -1 */
    float *value;     /* a shape constant's value (cvalue.c), or NULL */
    /* at a root, after ee_rebuild: */
    int n_node, node0; /* its live e-nodes: E->cnode[node0 .. node0 + n_node) */
    int n_par, par0;   /* live e-nodes reading it: E->cpar[par0 .. par0 + n_par) */
} ee_class;

typedef struct {
    const eg_graph *g; /* the input graph (flags marked, eg_mark_nonfinite) */
    ee_node *n;
    int n_nodes, cap_nodes, n_live;
    int *kids;
    size_t n_kids, cap_kids;
    ee_class *c;
    int n_cls, cap_cls;
    int *hc;           /* hash-cons: e-node ids by key, -1 empty */
    size_t hc_cap, hc_used;
    int *cnode, *cpar; /* the per-class lists (ee_class.node0, par0) */
    int *op_start, *op_list; /* live EE_OPS e-nodes by operator */
    int *tensor_cls;   /* the class of each tensor of g (-1: none) */
    int *node_en;      /* the e-node of each node of g */
    int dirty;         /* a union since the last rebuild */
    /* Each e-node's own price as extract.c's prices() last made it, kept
     * while the cost model's estimates stay the same (price_epoch) and
     * the classes it reads and writes have their shapes: every round is
     * extracted, and pricing every e-node anew each time was a third of
     * the search. */
    double *price; /* [e]: its price, < 0 when none is kept */
    int cap_price;
    uint64_t price_epoch;
} ee_graph;

/* The root of class a (path halving). Inline: every file of the e-graph
 * reads it, and cvalue.c must not call back into egraph.c. */
static inline int ee_find(ee_graph *E, int a) {
    while (E->c[a].uf != a) {
        E->c[a].uf = E->c[E->c[a].uf].uf;
        a = E->c[a].uf;
    }
    return a;
}

/* The e-graph of g: every tensor's value a class, every node an e-node.
 * @return EG_OK or EG_ENOMEM. */
eg_status ee_build(ee_graph *E, const eg_graph *g);
void ee_free(ee_graph *E);

/* The class of e-node n (added when new: kids canonical; shape, flags
 * from the caller's proto class fields shape/shaped; rule recorded).
 * *added is 1 when the e-node was new. @return the class, or -1 when out
 * of memory. */
int ee_add(ee_graph *E, const ee_node *n, const int *kids, const ten_shape *shape, int *added);

/* The class of e-node n when the e-graph holds it (kids canonicalized),
 * else -1; adds nothing. */
int ee_lookup(ee_graph *E, const ee_node *n, const int *kids);

/* Merge the classes of a and b. @return 1 when they were apart. */
int ee_union(ee_graph *E, int a, int b);

/* Restore the invariants (see the header comment). @return EG_OK or
 * EG_ENOMEM. */
eg_status ee_rebuild(ee_graph *E);

/* The run of e-nodes of operator op in list[0..n) (a class's e-nodes or
 * parents, sorted so by ee_rebuild): list[*first .. *end). */
void ee_op_run(const ee_graph *E, const int *list, int n, ops_op op, int *first, int *end);

/* The kids of e-node e. */
static inline const int *ee_kids(const ee_graph *E, int e) { return E->kids ? E->kids + E->n[e].kid0 : NULL; }

/* 1 when kid i of the kids k is a class that k[0..i) does not hold
 * already: each class an e-node reads, taken once. */
static inline int ee_kid_new(const int *k, int i) {
    if (k[i] < 0) return 0;
    for (int p = 0; p < i; p++)
        if (k[p] == k[i]) return 0;
    return 1;
}

/* The classes the graph of picks pick reaches from the outputs into in[],
 * and (refs not NULL) how many picked e-nodes and outputs read each, a
 * reader once per class (stack: scratch, a class each). */
void ee_reached(ee_graph *E, const int *pick, unsigned char *in, int *refs, int *stack);

/* ---- cvalue.c ---- */

/* Cells a shape constant may have for its value to be computed. */
#define EE_VALUE_CELLS 4096

/* The shape constants' values: each class that computes a tensor from
 * shapes alone (of at most EE_VALUE_CELLS cells) gets its value (the
 * why: cvalue.c), and *pairs (malloc'd, NULL when none) the pairs of
 * classes of one shape and bitwise-equal value, a pair as two ints, for
 * value congruence to merge. @return the pairs, or -1 out of memory. */
int ee_equal_values(ee_graph *E, int **pairs);

/* ---- saturate.c ---- */

/* 1 when the rounds may stop (checked before each round). */
typedef int (*ee_done_fn)(ee_graph *E, void *arg);

/* The rounds of saturation over E with the rules enabled[] (NULL: all)
 * under o's limits (the time limit a safety net) until done says so, a
 * round changes nothing, or a limit stops them. *rounds: the rounds run
 * (may be NULL). @return EG_OK or EG_ENOMEM. */
eg_status ee_saturate_until(ee_graph *E, const eg_ruleset *rs, const unsigned char *enabled, const eg_search_opts *o,
                           ee_done_fn done, void *arg, int *rounds);

/* ---- ematch.c: rules over classes ---- */

typedef struct {
    uint32_t rule;
    int node[RG_MAX_NODES];   /* e-node of src node j */
    int input[RG_MAX_INPUTS]; /* class of rule input i, -1 unbound */
} ee_match;

typedef struct {
    ee_match *m;
    size_t n, cap;
    uint32_t *count;          /* [rules]: matches this round */
    const uint32_t *limit;    /* [rules]: more than this many and the
                                 rule's matches are dropped this round */
    const unsigned char *off; /* [rules]: banned this round */
    int anchor_from;          /* anchors are the e-nodes from this id on */
    double deadline;          /* eg_now_s() past which matching stops (the
                                 time limit, a safety net): timed_out set */
    int oom, timed_out;
    int cut_nodes;            /* plan-tree nodes cut at EE_TRY_LIMIT */
} ee_matches;

/* E-nodes one plan-tree node may try in one matching, at most. The
 * backoff scheduler counts the matches a rule keeps, but a rule of three
 * chained convs can try hundreds of millions of e-nodes and keep few:
 * on a one-conv block grown by identity kernels, seconds a round. Past
 * the limit the node and the rules below it stop for that matching, so
 * the work, not the clock, ends them (the same result on any machine). */
#define EE_TRY_LIMIT (1u << 16)

/* Every match of the rules whose rule is not off: e-nodes as anchors in
 * id order, the plan tree as eg_match_all walks it. @pre ee_rebuild done.
 * @return EG_OK or EG_ENOMEM. */
eg_status ee_match_all(ee_graph *E, const eg_ruleset *rs, ee_matches *M);

/* Apply match m: add dst's e-nodes, merge each dst output's class with
 * src's. *changed += the e-nodes added and classes merged.
 * @return EG_OK, EG_ESHAPE (a size that does not evaluate: skipped) or
 * EG_ENOMEM. */
eg_status ee_apply(ee_graph *E, const eg_ruleset *rs, const ee_match *m, int *changed);

/* Rule r's dst node j as an e-node with its parameters (free ones from
 * the e-nodes of match m, NULL: from the rule as written; in: the rule
 * inputs' shapes); kids are left to the caller. @return EG_OK or
 * EG_ESHAPE. */
eg_status ee_dst_node(const ee_graph *E, const eg_ruleset *rs, uint32_t rule, int j, const ee_match *m,
                      const ten_shape *in, const ten_shape *shape, ee_node *n);

/* The e-node of node j of a graph g that is no rule's (a pair prove
 * derives), its parameters from the inputs' shapes in and the values'
 * shape; kids are left to the caller. @return EG_OK or EG_ESHAPE. */
eg_status ee_graph_node(const rg_graph *g, int j, const ten_shape *in, const ten_shape *shape, ee_node *n);

/* ---- extract.c ---- */

/* The cheapest graphs, of distinct costs, cheapest first: the result and
 * the runners-up --verify times (eg_search_result.runner). */
#define EE_TOP (1 + EG_SEARCH_RUNNERS)
typedef struct {
    int n;
    eg_graph *g[EE_TOP];
    double cost[EE_TOP];
    long ilp_region; /* the exact extraction's e-nodes, 0: not tried */
    int ilp_solved;  /* ee_ilp's *solved */
    int timed_out;   /* 1: the time limit, not the budget, cut the exact
                        extraction or the local search */
} ee_top;

/* Offer graph h at cost to t: kept when among the EE_TOP cheapest and no
 * graph there has that cost, else freed. @return 1 when h is the
 * cheapest now. */
int ee_top_offer(ee_top *t, eg_graph *h, double cost);
void ee_top_free(ee_top *t);

/* What the exact extractions and the local searches of one search may
 * still spend, in counts of their own work, not seconds: a search that
 * restarts from its result (passes) shares them, so the work, not the
 * clock, bounds a search of many passes and decides its answer on any
 * machine (the time limit stays a safety net). */
typedef struct {
    uint64_t ilp_rlimit; /* Z3 resource units (ilp.c) */
    long polish_built;   /* nodes of the graphs the local searches judge */
} ee_budget;

/* A whole search's extraction budget: one pass's local searches, and
 * the exact extractions' units that solve the bench models' regions but
 * the largest (2.8 M for Inception-v3; PoolFormer's and RepVGG's, 4 to
 * 5 M, took up to 4 s and changed no answer). With the rounds, the
 * slowest bench models search in about half of the default time limit
 * here, so a machine twice as loaded still ends by the work
 * (bench/results/search_work.md). */
#define EE_ILP_BUDGET 3000000u
#define EE_POLISH_BUDGET 600000L

/* The cheapest graphs the e-graph holds for g's outputs by cost c into
 * *out (empty on entry), new graphs that borrow g's data (free them
 * before g); the rules of the cheapest one's new nodes counted into
 * applied[n_rules]. With polish (budget not NULL), the exact extraction
 * and the local search (polish.c) too, their work taken from *budget,
 * deadline (eg_now_s) a safety net. @return EG_OK or EG_ENOMEM, a message
 * in err. */
eg_status ee_extract(ee_graph *E, eg_cost *c, size_t n_rules, ee_budget *budget, double deadline, ee_top *out,
                     uint32_t *applied, char *err, size_t errlen);

/* The greedy picks: pick[c] the e-node of root class c (-1: none
 * reachable), best[c] its price by prices np, a class read by n nodes of
 * the input graph (share[c]) paying 1/n into each reader's price; the
 * classes in paid[] (may be NULL) keep their picks at price 0. No pick
 * reads itself through others. @return EG_OK or EG_ENOMEM. */
eg_status ee_pick_all(ee_graph *E, const double *np, const double *share, const unsigned char *paid, double *best,
                      int *pick);

/* The cost model's word on the picks: judge prices the graph of the
 * current picks (*cost DBL_MAX when they close a cycle; EG_OK or
 * EG_ENOMEM), spent says when the local search must stop. */
typedef struct {
    eg_status (*judge)(void *ctx, double *cost);
    int (*spent)(void *ctx);
    void *ctx;
} ee_judge;

/* ---- polish.c ---- */


/* The picks of the input graph: each class of one of its tensors at the
 * leaf or the first of its nodes that writes it; other classes keep
 * theirs. */
void ee_input_picks(ee_graph *E, int *pick);

/* The local search from picks start (see polish.c), in pick, by prices
 * np and shares share as ee_pick_all takes them; the graphs J judges.
 * @return EG_OK or EG_ENOMEM. */
eg_status ee_polish(ee_graph *E, const ee_judge *J, const double *np, const double *share, const int *start,
                    int *pick);

/* ---- ilp.c ---- */

/* The exact picks over the region of the graphs picks[0..n_picks) compute
 * (see ilp.c) into pick (which holds the picks elsewhere), by prices np;
 * *n_region its e-nodes; *solved 1 when the optimum is proved, 0 when
 * not within *rlimit of the solver's resource units (or, a safety net,
 * seconds_left), -1 when the region is too big to try; *rlimit less the
 * units spent. @return EG_OK or EG_ENOMEM. */
eg_status ee_ilp(ee_graph *E, const double *np, const int *const *picks, int n_picks, uint64_t *rlimit,
                 double seconds_left, int *pick, long *n_region, int *solved);

/* ---- share.c ---- */

/* An e-node's own price in the picked graph: nc[e], or 0 for a value of
 * weights alone or a bias or relu fused into the conv picked below it
 * (pick NULL: none is). */
double ee_own_price(ee_graph *E, const double *nc, const int *pick, int e);

/* 1 when e-node n can run inside a conv before it: a bias on the channels
 * or a relu (ee_own_price's fused groups). */
int ee_fusable(const ee_node *n);

/* 1 when n (may be NULL) is a conv without an activation, what a fusable
 * e-node runs inside. */
int ee_plain_conv(const ee_node *n);

/* Improve the picks where a value read by several picked classes pays
 * once (see share.c), each move kept only when J prices the graph lower
 * than *cost (the picks' price, updated). @return EG_OK or EG_ENOMEM. */
eg_status ee_share(ee_graph *E, const double *nc, int *pick, const ee_judge *J, double *cost);

#endif
