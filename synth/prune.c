/* prune.c - candidate pruning without a prover: renamed pairs, common
 * input-side and output-side operators (see prune.h). */
#include "prune.h"

#include <stdlib.h>
#include <string.h>

const char *const pr_step_name[PR_N] = {"found", "renamings", "input-side", "instances",
                                        "output-side"};

static void count(pr_counts *cnt, int step, size_t n) {
    if (n < 2) return;
    cnt->classes[step]++;
    cnt->graphs[step] += n;
}

/* ---- renamings ---- */

#define MAX_RENAMINGS 720

/* A renaming of variables, and for two outputs whether it swaps them. */
typedef struct {
    uint8_t to[POOL_MAX_VARS];
    uint8_t swap;
} renaming;

static void rename_graph(const sg_graph *g, const renaming *r, sg_graph *out) {
    *out = *g;
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < ops_table[g->node[j].op].arity; k++)
            if (!SG_IS_NODE(g->node[j].in[k])) out->node[j].in[k] = r->to[g->node[j].in[k]];
    for (int k = 0; k < g->n_out; k++)
        if (!SG_IS_NODE(g->out[k])) out->out[k] = r->to[g->out[k]];
    if (r->swap) {
        uint8_t t = out->out[0];
        out->out[0] = out->out[1], out->out[1] = t;
    }
    sg_canon(out, 0);
}

/* All renamings of the variables in vars (within each type, and of two
 * outputs) but the identity that leave g unchanged; *n of them (at most
 * MAX_RENAMINGS: the search stops early on huge variable sets). */
static size_t automorphisms(const pool *p, const sg_graph *g, uint32_t vars, renaming *out) {
    uint8_t v[POOL_MAX_VARS], perm[POOL_MAX_VARS];
    int n = 0;
    size_t k = 0, tried = 0;
    for (int i = 0; i < p->n_vars; i++)
        if (vars >> i & 1) v[n] = (uint8_t)i, perm[n++] = (uint8_t)i;
    for (int first = 1;; first = 0) { /* permutations of perm that keep types */
        if (!first) {
            int i = n - 2;
            while (i >= 0 && perm[i] >= perm[i + 1]) i--;
            if (i < 0 || ++tried > MAX_RENAMINGS * 50) break;
            int j = n - 1;
            while (perm[j] <= perm[i]) j--;
            uint8_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
            for (int l = i + 1, r = n - 1; l < r; l++, r--) t = perm[l], perm[l] = perm[r], perm[r] = t;
        }
        int typed = 1;
        for (int q = 0; q < n; q++) typed &= p->type_of[perm[q]] == p->type_of[v[q]];
        for (int swap = 0; typed && swap < g->n_out; swap++) {
            if (first && !swap) continue; /* the identity */
            renaming r = {{0}, (uint8_t)swap};
            sg_graph h;
            for (int q = 0; q < POOL_MAX_VARS; q++) r.to[q] = (uint8_t)q;
            for (int q = 0; q < n; q++) r.to[v[q]] = perm[q];
            rename_graph(g, &r, &h);
            if (sg_compare(&h, g) == 0 && k < MAX_RENAMINGS) out[k++] = r;
        }
    }
    return k;
}

static size_t prune_renamings(const pool *p, renaming *aut, sg_graph *g, size_t n) {
    uint32_t vars = 0;
    for (size_t i = 0; i < n; i++) vars |= sg_vars(&g[i]);
    size_t na = automorphisms(p, &g[0], vars, aut), kept = 1;
    for (size_t i = 1; i < n; i++) {
        int drop = 0;
        for (size_t a = 0; a < na && !drop; a++) {
            sg_graph h;
            rename_graph(&g[i], &aut[a], &h);
            for (size_t j = 1; j < kept && !drop; j++) drop = sg_compare(&h, &g[j]) == 0;
        }
        if (!drop) g[kept++] = g[i];
    }
    return kept;
}

/* ---- common subgraph ---- */

/* 1 when the terms at ra in a and rb in b are the same: operators,
 * parameters and variables, all the way down. */
static int same_term(const sg_graph *a, uint8_t ra, const sg_graph *b, uint8_t rb) {
    if (!SG_IS_NODE(ra) || !SG_IS_NODE(rb)) return ra == rb;
    const sg_node *na = &a->node[SG_NODE_IDX(ra)], *nb = &b->node[SG_NODE_IDX(rb)];
    if (na->op != nb->op || na->combo != nb->combo) return 0;
    for (int k = 0; k < ops_table[na->op].arity; k++)
        if (!same_term(a, na->in[k], b, nb->in[k])) return 0;
    return 1;
}

/* A pool variable of type t that neither graph reads, or -1. */
static int free_var(const pool *p, int t, uint32_t used) {
    for (int v = p->first[t]; v < p->first[t] + p->count_of[t]; v++)
        if (!(used >> v & 1)) return v;
    return -1;
}

/* 1 when a split reads node i (a split must read a concat, not a
 * variable, so the node cannot become one). */
static int split_reads(const sg_graph *g, int i) {
    for (int j = 0; j < g->n_nodes; j++)
        if ((g->node[j].op == OP_SPLIT0 || g->node[j].op == OP_SPLIT1) &&
            g->node[j].in[0] == SG_NODE(i))
            return 1;
    return 0;
}

/* A random tensor of packed shape w (every trial), the same for equal
 * shapes: the fresh variable z of a smaller rule. */
static void fresh_tensor(uint64_t w, uint64_t *out) {
    ten t = {{1, {(int32_t)KEY_CELLS(w)}}, out};
    uint64_t state = w ^ 0x5851F42D4C957F2Dull;
    ten_fill_random(&t, &state);
}

/* 1 when a with node i and b with node j both replaced by the tensor z
 * compute the same outputs. */
static int holds_with(key_ctx *c, const sg_graph *a, int i, const sg_graph *b, int j,
                      const uint64_t *z, uint64_t *store) {
    const uint64_t *val[SG_N_REFS];
    uint64_t shape[SG_N_REFS], sa[SG_MAX_OUT];
    if (key_values_subst(c, a, i, z, val, shape) != KEY_OK) return 0;
    for (int k = 0; k < a->n_out; k++) {
        sa[k] = shape[a->out[k]];
        memcpy(store + k * KEY_MAX_CELLS, val[a->out[k]], (size_t)KEY_CELLS(sa[k]) * 8);
    }
    if (key_values_subst(c, b, j, z, val, shape) != KEY_OK) return 0;
    for (int k = 0; k < a->n_out; k++)
        if (shape[b->out[k]] != sa[k] ||
            memcmp(store + k * KEY_MAX_CELLS, val[b->out[k]], (size_t)KEY_CELLS(sa[k]) * 8))
            return 0;
    return 1;
}

/* Node values of the base graph, computed once per class. */
typedef struct {
    uint64_t shape[SG_MAX_NODES];
    uint64_t *val; /* SG_MAX_NODES * KEY_MAX_CELLS */
} base_values;

static int node_values(key_ctx *c, const sg_graph *a, base_values *bv) {
    const uint64_t *val[SG_N_REFS];
    uint64_t shape[SG_N_REFS];
    if (key_values(c, a, val, shape) != KEY_OK) return -1;
    for (int i = 0; i < a->n_nodes; i++) {
        bv->shape[i] = shape[SG_NODE(i)];
        memcpy(bv->val + (size_t)i * KEY_MAX_CELLS, val[SG_NODE(i)], (size_t)KEY_CELLS(bv->shape[i]) * 8);
    }
    return 0;
}

/* 1 when the subterm at node i is private to it: no node below i is read
 * from outside that subterm or is an output. Only then does replacing i by
 * a fresh variable split the pair into two smaller rules an engine can
 * apply: the merge (matmul x0 x1), (matmul x0 x2) => split0/split1 of one
 * matmul over a concat has split0's subterm equal to (matmul x0 x1) by
 * value, but its matmul and concat are shared with split1, and the
 * "smaller" rule would carry x2 on its right side only. */
static int private_subterm(const sg_graph *g, int i) {
    uint64_t below = 0; /* node bits of the subterm under i, i excluded */
    for (int j = i; j >= 0; j--) {
        if (j != i && !(below >> j & 1)) continue;
        for (int k = 0; k < ops_table[g->node[j].op].arity; k++)
            if (SG_IS_NODE(g->node[j].in[k])) below |= 1ull << SG_NODE_IDX(g->node[j].in[k]);
    }
    for (int j = 0; j < g->n_nodes; j++) {
        if (j == i || (below >> j & 1)) continue;
        for (int k = 0; k < ops_table[g->node[j].op].arity; k++)
            if (SG_IS_NODE(g->node[j].in[k]) && (below >> SG_NODE_IDX(g->node[j].in[k]) & 1)) return 0;
    }
    for (int k = 0; k < g->n_out; k++)
        if (SG_IS_NODE(g->out[k]) && (below >> SG_NODE_IDX(g->out[k]) & 1)) return 0;
    return 1;
}

/* 1 when node i of a and node j of b compute the same value and, turned
 * into one fresh variable z in both, leave a and b equal: the pair follows
 * from two smaller ones, (T_a, T_b) and the pair over z (TASO's common
 * subgraph; the terms may differ, as ewadd(x, y) and ewadd(y, x) do).
 * Replacing the whole of both one-output graphs proves nothing: skipped. */
static int common_subgraph(key_ctx *c, const base_values *bv, const sg_graph *a, const sg_graph *b,
                           uint64_t *store) {
    const uint64_t *val[SG_N_REFS];
    uint64_t shape[SG_N_REFS];
    int pairs[SG_MAX_NODES * SG_MAX_NODES][2], n = 0;
    if (key_values(c, b, val, shape) != KEY_OK) return 0;
    for (int i = 0; i < a->n_nodes; i++)
        for (int j = 0; j < b->n_nodes; j++) {
            int roots = a->n_out == 1 && a->out[0] == SG_NODE(i) && b->out[0] == SG_NODE(j);
            if (roots || split_reads(a, i) || split_reads(b, j) || !private_subterm(a, i) ||
                !private_subterm(b, j) || shape[SG_NODE(j)] != bv->shape[i] ||
                memcmp(val[SG_NODE(j)], bv->val + (size_t)i * KEY_MAX_CELLS,
                       (size_t)KEY_CELLS(bv->shape[i]) * 8))
                continue;
            pairs[n][0] = i, pairs[n++][1] = j;
        }
    uint64_t *z = store + SG_MAX_OUT * KEY_MAX_CELLS;
    for (int k = 0; k < n; k++) {
        fresh_tensor(bv->shape[pairs[k][0]], z);
        if (holds_with(c, a, pairs[k][0], b, pairs[k][1], z, store)) return 1;
    }
    return 0;
}

static size_t prune_input(key_ctx *c, base_values *bv, sg_graph *g, size_t n, uint64_t *store) {
    size_t kept = 1;
    if (node_values(c, &g[0], bv)) return n;
    for (size_t i = 1; i < n; i++)
        if (!common_subgraph(c, bv, &g[0], &g[i], store)) g[kept++] = g[i];
    return kept;
}

/* ---- instances: a variable read in two places that need not be one ---- */

#define MAX_OCCURRENCES 6 /* of one variable in a pair: 2^5 splits to try */

/* Where variable v is read (as a value: constants read only its shape). */
typedef struct {
    uint8_t in_b; /* 0: in a, 1: in b */
    int8_t node;  /* the reading node, or -1: an output */
    uint8_t k;    /* its input (or output) index */
} occurrence;

static int occurrences(const sg_graph *g, uint8_t v, int in_b, occurrence *o, int n) {
    for (int j = 0; j < g->n_nodes; j++) {
        const sg_node *nd = &g->node[j];
        if (ops_table[nd->op].flags & OPF_CONST) continue;
        for (int k = 0; k < ops_table[nd->op].arity; k++)
            if (nd->in[k] == v && n < MAX_OCCURRENCES + 1) o[n++] = (occurrence){(uint8_t)in_b, (int8_t)j, (uint8_t)k};
    }
    for (int k = 0; k < g->n_out; k++)
        if (g->out[k] == v && n < MAX_OCCURRENCES + 1) o[n++] = (occurrence){(uint8_t)in_b, -1, (uint8_t)k};
    return n;
}

static void rename_at(sg_graph *g, const occurrence *o, uint8_t to) {
    if (o->node < 0) g->out[o->k] = to;
    else g->node[o->node].in[o->k] = to;
}

/* 1 when the outputs of a and b are equal on the pool tensors. */
static int equal_graphs(key_ctx *c, const sg_graph *a, const sg_graph *b, uint64_t *store) {
    return holds_with(c, a, -1, b, -1, NULL, store);
}

/* 1 when some split of v's reads between v and a fresh variable w of its
 * type (in a and b together) keeps the pair equal: the pair is an instance
 * (w := v) of that more general pair. */
static int splits_variable(key_ctx *c, const sg_graph *a, const sg_graph *b, uint8_t v, int w,
                           uint64_t *store) {
    occurrence o[MAX_OCCURRENCES + 1];
    int n = occurrences(a, v, 0, o, 0);
    n = occurrences(b, v, 1, o, n);
    if (n < 2 || n > MAX_OCCURRENCES) return 0;
    /* occurrence 0 stays v (the mirror split is the same up to renaming) */
    for (uint32_t m = 1; m < 1u << (n - 1); m++) {
        sg_graph a2 = *a, b2 = *b;
        for (int i = 1; i < n; i++)
            if (m >> (i - 1) & 1) rename_at(o[i].in_b ? &b2 : &a2, &o[i], (uint8_t)w);
        if (equal_graphs(c, &a2, &b2, store)) return 1;
    }
    return 0;
}

static int instance(const pool *p, key_ctx *c, const sg_graph *a, const sg_graph *b, uint64_t *store) {
    uint32_t used = sg_vars(a) | sg_vars(b);
    for (int v = 0; v < p->n_vars; v++) {
        if (!(used >> v & 1)) continue;
        int w = free_var(p, p->type_of[v], used);
        if (w >= 0 && splits_variable(c, a, b, (uint8_t)v, w, store)) return 1;
    }
    return 0;
}

static size_t prune_instances(const pool *p, key_ctx *c, sg_graph *g, size_t n, uint64_t *store) {
    size_t kept = 1;
    for (size_t i = 1; i < n; i++)
        if (!instance(p, c, &g[0], &g[i], store)) g[kept++] = g[i];
    return kept;
}

/* ---- common output-side node ---- */

typedef struct {
    uint64_t shape;
    uint64_t *data; /* NULL: not a node input */
} value;

/* The values of the inputs of each output node of g (shape 0 and no data
 * where an output is a leaf). @return 0, -1 on failure. */
static int output_inputs(key_ctx *c, const sg_graph *g, value in[SG_MAX_OUT][2], uint64_t *store) {
    const uint64_t *val[SG_N_REFS];
    uint64_t shape[SG_N_REFS];
    if (key_values(c, g, val, shape) != KEY_OK) return -1;
    for (int k = 0; k < g->n_out; k++)
        for (int i = 0; i < 2; i++) {
            uint8_t o = g->out[k];
            in[k][i].data = NULL;
            if (!SG_IS_NODE(o) || i >= ops_table[g->node[SG_NODE_IDX(o)].op].arity) continue;
            uint8_t r = g->node[SG_NODE_IDX(o)].in[i];
            in[k][i].shape = shape[r];
            in[k][i].data = store + (k * 2 + i) * KEY_MAX_CELLS;
            memcpy(in[k][i].data, val[r], (size_t)KEY_CELLS(shape[r]) * 8);
        }
    return 0;
}

static int same_value(const value *a, const value *b) {
    return a->data && b->data && a->shape == b->shape &&
           memcmp(a->data, b->data, (size_t)KEY_CELLS(a->shape) * 8) == 0;
}

static int same_output_node(const sg_graph *a, const sg_graph *b, int k, value va[2], value vb[2]) {
    if (!SG_IS_NODE(a->out[k]) || !SG_IS_NODE(b->out[k])) return 0;
    const sg_node *na = &a->node[SG_NODE_IDX(a->out[k])], *nb = &b->node[SG_NODE_IDX(b->out[k])];
    if (na->op != nb->op || na->combo != nb->combo) return 0;
    if (ops_table[na->op].arity == 1) return same_value(&va[0], &vb[0]);
    if (same_value(&va[0], &vb[0]) && same_value(&va[1], &vb[1])) return 1;
    /* swapped: commutativity and smaller rules, unless the inputs are the
     * very same subgraphs, swapped: then the pair is commutativity itself */
    return (ops_table[na->op].flags & OPF_COMMUTATIVE) && same_value(&va[0], &vb[1]) &&
           same_value(&va[1], &vb[0]) &&
           !(same_term(a, na->in[0], b, nb->in[1]) && same_term(a, na->in[1], b, nb->in[0]));
}

/* 1 when the outputs of g share no node. */
static int disjoint_outputs(const sg_graph *g) {
    uint64_t nodes = ~(SG_BIT(SG_NODE_REF) - 1);
    return (sg_cone(g, g->out[0]) & sg_cone(g, g->out[1]) & nodes) == 0;
}

/* 1 when a two-output pair is two one-output rules side by side: neither
 * graph shares a node between its outputs (output k of one equals output k
 * of the other on its own; a bystander, the same subgraph on both sides, is
 * the simplest case). Split of a concat against its parts shares the
 * concat: kept. */
static int juxtaposed(const sg_graph *a, const sg_graph *b) {
    if (a->n_out < 2) return 0;
    for (int k = 0; k < a->n_out; k++) /* a bystander: the same subgraph */
        if (same_term(a, a->out[k], b, b->out[k])) return 1;
    return disjoint_outputs(a) && disjoint_outputs(b);
}

static size_t prune_output(key_ctx *c, sg_graph *g, size_t n, uint64_t *store) {
    value va[SG_MAX_OUT][2], vb[SG_MAX_OUT][2];
    if (output_inputs(c, &g[0], va, store) != 0) return 0;
    size_t kept = 1;
    for (size_t i = 1; i < n; i++) {
        int all = output_inputs(c, &g[i], vb, store + SG_MAX_OUT * 2 * KEY_MAX_CELLS) == 0;
        for (int k = 0; k < g[0].n_out && all; k++) all = same_output_node(&g[0], &g[i], k, va[k], vb[k]);
        if (!all && !juxtaposed(&g[0], &g[i])) g[kept++] = g[i];
    }
    return kept;
}

struct pr_scratch {
    renaming aut[MAX_RENAMINGS];
    uint64_t store[2 * SG_MAX_OUT * 2 * KEY_MAX_CELLS]; /* values of two graphs */
    uint64_t base[SG_MAX_NODES * KEY_MAX_CELLS];         /* the base graph's nodes */
};

pr_scratch *pr_scratch_new(void) { return malloc(sizeof(pr_scratch)); }
void pr_scratch_free(pr_scratch *s) { free(s); }

size_t pr_class(key_ctx *c, pr_scratch *sc, const pool *p, sg_graph *g, size_t n, pr_counts *cnt) {
    uint64_t *store = sc->store;
    count(cnt, PR_FOUND, n);
    n = prune_renamings(p, sc->aut, g, n);
    count(cnt, PR_RENAMING, n);
    base_values bv = {{0}, sc->base};
    n = prune_input(c, &bv, g, n, store);
    count(cnt, PR_INPUT, n);
    n = prune_instances(p, c, g, n, store);
    count(cnt, PR_INSTANCE, n);
    n = n >= 2 ? prune_output(c, g, n, store) : n;
    if (n) count(cnt, PR_OUTPUT, n);
    return n;
}
