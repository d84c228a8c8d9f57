/* derive.c - whether the other rules derive a rule (egraph.h,
 * eg_derive_rule), and a ruleset pruned of the rules the rest derive
 * (eg_prune_derivable): what prove's pruning by derivability runs.
 *
 * Why. synth and prove keep every proved pair of graphs that is not a
 * renaming of another, so most shipped rules are another rule applied in
 * a context, twice, or reordered (Quartz's ECC simplification and TASO's
 * "same via substitution" remove those). A rule is redundant when the
 * rules kept derive it: its left side alone in an e-graph, saturated with
 * them, holds its right side in the class of its left (the right side is
 * looked up, never added, so the rule's reverse is not assumed).
 *
 * Shapes. Rules are symbolic and the e-graph is not: an instance gives
 * every rule input a shape, the first in a small pool (synth's own input
 * types: matrices, NCHW activations, 3x3 and 1x1 kernels, vectors, token
 * sequences, scalars, a depthwise kernel) that makes both sides well
 * shaped, found by backtracking over the inputs with each node checked as
 * soon as what it reads is bound. A derivation at one instance may use a coincidence of
 * its dims (square matrices, equal channel counts), so the rule must also
 * be derived at DERIVE_VARIANTS more instances whose distinct dims were
 * given other values (prove's stage 2 does the same to refute). A rule
 * with no instance, or one not derived at every instance within the
 * bounds, is kept: the bounds make the answer "not derived", never
 * "not derivable". Each derivation runs first under the rules over the
 * equation's own operators (the bound is not spent on rules that bring
 * in others), then under all the rules it may use. Deterministic: the pool, the variants' values and the
 * rounds depend on nothing but the rule and the options.
 */
#include "egraph/egraph_int.h"
#include "fold/range.h"
#include "rewrite/rules_int.h"
#include "shapes/infer.h"
#include "sys/sys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DERIVE_VARIANTS 2 /* instances at other shapes beyond the first */
#define DERIVE_TRIES 64   /* remappings tried for them */
#define DERIVE_STEPS 20000 /* shapes tried in the search for the first */

static const ten_shape pool[] = {
    {2, {3, 3}},       {4, {1, 2, 4, 4}}, {4, {2, 2, 3, 3}}, {4, {2, 2, 1, 1}}, {3, {1, 2, 3}},
    {1, {2}},          {1, {3}},          {0, {0}},          {4, {2, 2, 1, 3}}, {4, {2, 2, 3, 1}},
    {4, {2, 1, 3, 3}}, /* last: a depthwise kernel, for the rules no dense one fits */
};
#define N_POOL ((int)(sizeof pool / sizeof pool[0]))

/* ---- an instance ---- */

/* 0 when the inputs bound so far (bit i of bound) make a node of g
 * ill-shaped; nodes reading an unbound value are skipped. */
static int fits_so_far(const rg_graph *g, const ten_shape *in, uint32_t bound) {
    ten_shape shape[RG_MAX_REFS];
    int32_t gval[RG_MAX_GSYMS] = {0};
    uint32_t known = bound;
    for (int i = 0; i < g->n_inputs; i++) shape[RG_IN(i)] = in[i];
    for (int j = 0; j < g->n_nodes; j++) {
        const rg_node *n = &g->node[j];
        const ops_info *o = &ops_table[n->op];
        int ready = 1;
        for (int k = 0; k < o->arity; k++) ready &= (int)(known >> n->in[k] & 1);
        for (int k = 0; k < o->n_params; k++)
            if (o->pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(n->param[k])) ready &= (int)(bound >> RG_SYM_INPUT(n->param[k]) & 1);
        if (!ready) continue;
        int32_t p[OPS_MAX_PARAMS];
        ten_shape ins[OPS_MAX_ARITY];
        if (rg_node_params(g, j, in, shape, gval, p) != RG_OK) return 0;
        for (int k = 0; k < o->arity; k++) ins[k] = shape[n->in[k]];
        if (ops_infer_shape(n->op, p, ins, &shape[RG_NODE(j)], NULL) != OPS_OK) return 0;
        known |= 1u << RG_NODE(j);
    }
    return 1;
}

typedef struct {
    const rg_graph *src, *dst;
    unsigned kernel1; /* inputs that must be 1x1 kernels */
    int n_in;
    uint32_t used; /* the inputs either side reads (synth numbers a class's
                      inputs over all its members, so a pair may skip some) */
    ten_shape in[RG_MAX_INPUTS];
    long steps;
} search;

static int is_1x1(const ten_shape *s) { return s->rank == 4 && s->dim[2] == 1 && s->dim[3] == 1; }

/* Inputs i.. bound from the pool, depth first. @return 1 when found. */
static int bind_from(search *s, int i) {
    if (i == s->n_in) {
        ten_shape a[RG_MAX_REFS], b[RG_MAX_REFS];
        return rg_infer_shapes(s->src, s->in, a, NULL, 0) == RG_OK && rg_infer_shapes(s->dst, s->in, b, NULL, 0) == RG_OK;
    }
    uint32_t bound = (2u << i) - 1;
    if (!(s->used >> i & 1)) { /* read by neither side: any shape, no choice to backtrack over */
        s->in[i] = pool[0];
        return bind_from(s, i + 1);
    }
    for (int q = 0; q < N_POOL && s->steps < DERIVE_STEPS; q++) {
        s->steps++;
        s->in[i] = pool[q];
        if ((s->kernel1 >> i & 1) && !is_1x1(&s->in[i])) continue;
        if (fits_so_far(s->src, s->in, bound) && fits_so_far(s->dst, s->in, bound) && bind_from(s, i + 1)) return 1;
    }
    return 0;
}

static uint64_t next_rand(uint64_t *x) { /* xorshift64* */
    *x ^= *x >> 12, *x ^= *x << 25, *x ^= *x >> 27;
    return *x * 2685821657736338717ull;
}

/* A variant of base: each distinct dim value kept or given another value
 * (equal dims stay equal), both sides well shaped, not base. @return 1
 * when found. */
static int variant(const search *s, const ten_shape *base, uint64_t *rng, ten_shape *out) {
    int32_t from[RG_MAX_INPUTS * TEN_MAX_RANK], to[RG_MAX_INPUTS * TEN_MAX_RANK];
    int m = 0, same = 1;
    memcpy(out, base, sizeof *out * (size_t)s->n_in);
    for (int i = 0; i < s->n_in; i++)
        for (int a = 0; a < out[i].rank; a++) {
            int k = 0;
            while (k < m && from[k] != out[i].dim[a]) k++;
            if (k == m) from[m] = out[i].dim[a], to[m++] = next_rand(rng) & 1 ? 2 + (int32_t)(next_rand(rng) % 8) : from[k];
            if ((s->kernel1 >> i & 1) && a >= 2) continue; /* a 1x1 kernel stays one */
            out[i].dim[a] = to[k];
            same &= to[k] == from[k];
        }
    ten_shape a[RG_MAX_REFS], b[RG_MAX_REFS];
    return !same && rg_infer_shapes(s->src, out, a, NULL, 0) == RG_OK && rg_infer_shapes(s->dst, out, b, NULL, 0) == RG_OK;
}

/* ---- the left side as a graph ---- */

static eg_status new_tensor(eg_graph *g, const char *prefix, int k, const ten_shape *shape, unsigned flags, int *t) {
    char name[32];
    snprintf(name, sizeof name, "%s%d", prefix, k);
    eg_status rc = eg_add_tensor(g, name, t);
    if (rc != EG_OK) return rc;
    g->tensor[*t].dtype = EG_DT_FLOAT;
    g->tensor[*t].flags |= flags;
    if (shape) eg_from_ten_shape(shape, &g->tensor[*t].shape);
    return EG_OK;
}

static eg_status push_int(int **a, int *n, int v) {
    int *t = realloc(*a, sizeof *t * (size_t)(*n + 1));
    if (!t) return EG_ENOMEM;
    t[(*n)++] = v, *a = t;
    return EG_OK;
}

/* The sides[0..n_sides) as one graph over inputs x0.. of shapes in (the
 * inputs in `divisors` initializers of nonzero values, as a rule that
 * divides needs): in_t[i] the tensor of input i, out_t[s][k] that of
 * output k of side s. @return EG_OK, EG_ENOMEM or the graph checks' error
 * (a rule the IR cannot hold). */
static eg_status sides_graph(const rg_graph *const *sides, int n_sides, int n_in, const ten_shape *in, unsigned divisors,
                             eg_graph **out, int *in_t, int (*out_t)[RG_MAX_OUTPUTS], char *err, size_t errlen) {
    eg_graph *g = eg_graph_new();
    eg_status rc = g ? EG_OK : EG_ENOMEM;
    for (int i = 0; rc == EG_OK && i < n_in; i++) {
        int init = divisors >> i & 1;
        rc = new_tensor(g, "x", i, &in[i], init ? EG_TF_INIT : EG_TF_INPUT, &in_t[i]);
        if (rc == EG_OK && !init) rc = push_int(&g->input, &g->n_inputs, in_t[i]);
        if (rc == EG_OK && init) {
            eg_tensor *t = &g->tensor[in_t[i]];
            int64_t numel = eg_shape_numel(&t->shape);
            if (!(t->data = malloc(sizeof *t->data * (size_t)(numel > 0 ? numel : 1)))) rc = EG_ENOMEM;
            for (int64_t c = 0; rc == EG_OK && c < numel; c++) t->data[c] = 1.5f;
        }
    }
    for (int sd = 0; rc == EG_OK && sd < n_sides; sd++) {
        const rg_graph *src = sides[sd];
        int val[RG_MAX_REFS];
        ten_shape shape[RG_MAX_REFS];
        int32_t gval[RG_MAX_GSYMS] = {0};
        if (rg_infer_shapes(src, in, shape, NULL, 0) != RG_OK) rc = EG_ESHAPE;
        for (int i = 0; i < n_in; i++) val[RG_IN(i)] = in_t[i];
        for (int j = 0; rc == EG_OK && j < src->n_nodes; j++) {
            const rg_node *n = &src->node[j];
            int id, t;
            char name[16];
            snprintf(name, sizeof name, "s%d_%d", sd, j);
            rc = new_tensor(g, name, 0, NULL, 0, &t);
            if (rc == EG_OK) rc = eg_add_node(g, EG_KIND_OPS, name, ops_table[n->op].arity, 0, 1, &id);
            if (rc != EG_OK) break;
            eg_node *d = &g->node[id];
            d->op = n->op;
            if (rg_node_params(src, j, in, shape, gval, d->param) != RG_OK) rc = EG_ESHAPE;
            for (int k = 0; k < ops_table[n->op].arity; k++) d->in[k] = val[n->in[k]];
            d->out[0] = val[RG_NODE(j)] = t;
        }
        for (int k = 0; rc == EG_OK && k < src->n_outputs; k++) {
            out_t[sd][k] = val[src->out[k]];
            g->tensor[out_t[sd][k]].flags |= EG_TF_OUTPUT;
            rc = push_int(&g->output, &g->n_outputs, out_t[sd][k]);
        }
    }
    if (rc == EG_OK) rc = eg_index(g, err, errlen);
    if (rc == EG_OK) rc = eg_toposort(g, err, errlen);
    if (rc == EG_OK) rc = eg_infer_all(g, err, errlen);
    if (rc == EG_OK) rc = eg_mark_nonfinite(g); /* as eg_saturate: rules that add zeros refuse them */
    if (rc != EG_OK) eg_free(g), g = NULL;
    *out = g;
    return rc;
}

/* ---- one instance: the right side looked up after each round ---- */

/* rule of a probe, an equation: none, a pair of graphs prove derives */
#define NO_RULE SIZE_MAX

typedef struct {
    const eg_ruleset *rs;
    size_t rule;          /* the rule whose right side is looked up, or NO_RULE */
    const rg_graph *dst;  /* that right side */
    const ten_shape *in;
    ten_shape shape[RG_MAX_REFS]; /* dst's */
    const int *in_t;
    int (*out_t)[RG_MAX_OUTPUTS]; /* [side][output] */
    int n_in, n_out;
} probe;

/* Both sides in the graph: 1 when each output's two classes are one. */
static int sides_met(ee_graph *E, void *arg) {
    const probe *p = arg;
    for (int k = 0; k < p->n_out; k++)
        if (ee_find(E, E->tensor_cls[p->out_t[0][k]]) != ee_find(E, E->tensor_cls[p->out_t[1][k]])) return 0;
    return 1;
}

/* 1 when the e-graph holds dst with each output in the class of src's. */
static int right_side_there(ee_graph *E, void *arg) {
    const probe *p = arg;
    const rg_graph *dst = p->dst;
    int val[RG_MAX_REFS];
    for (int i = 0; i < p->n_in; i++) val[RG_IN(i)] = E->tensor_cls[p->in_t[i]];
    for (int j = 0; j < dst->n_nodes; j++) {
        ee_node n;
        int kids[OPS_MAX_ARITY];
        eg_status rc = p->rule == NO_RULE ? ee_graph_node(dst, j, p->in, p->shape, &n)
                                          : ee_dst_node(E, p->rs, (uint32_t)p->rule, j, NULL, p->in, p->shape, &n);
        if (rc != EG_OK) return 0;
        for (int k = 0; k < n.n_kid; k++)
            if ((kids[k] = val[dst->node[j].in[k]]) < 0) return 0;
        if ((val[RG_NODE(j)] = ee_lookup(E, &n, kids)) < 0) return 0;
    }
    for (int k = 0; k < dst->n_outputs; k++)
        if (ee_find(E, val[dst->out[k]]) != ee_find(E, E->tensor_cls[p->out_t[0][k]])) return 0;
    return 1;
}

/* What is derived: sides[0] => sides[1], rule `rule` of rs or a pair of
 * graphs that is no rule of it (NO_RULE); two-sided, the two sides meet. */
typedef struct {
    const eg_ruleset *rs;
    size_t rule;
    const rg_graph *sides[2];
    unsigned divisors, kernel1;
    int two_sided;
} equation;

static eg_status derived_at(const equation *q, int n_in, const ten_shape *in, const unsigned char *first,
                            const unsigned char *enabled, const eg_search_opts *o, int *derived, char *err,
                            size_t errlen) {
    int in_t[RG_MAX_INPUTS], out_t[2][RG_MAX_OUTPUTS];
    eg_graph *g = NULL;
    ee_graph E;
    probe p = {q->rs, q->rule, q->sides[1], in, {{0}}, in_t, out_t, n_in, q->sides[1]->n_outputs};
    ee_done_fn done = q->two_sided ? sides_met : right_side_there;
    memset(&E, 0, sizeof E);
    *derived = 0;
    if (rg_infer_shapes(q->sides[1], in, p.shape, NULL, 0) != RG_OK) return EG_OK;
    eg_status rc = sides_graph(q->sides, q->two_sided ? 2 : 1, n_in, in, q->divisors, &g, in_t, out_t, err, errlen);
    if (rc == EG_ESHAPE || rc == EG_EFORMAT) return EG_OK; /* not an instance after all: not derived */
    if (rc == EG_OK) rc = ee_build(&E, g);
    if (rc == EG_OK && first) rc = ee_saturate_until(&E, q->rs, first, o, done, &p, NULL);
    if (rc == EG_OK) rc = ee_saturate_until(&E, q->rs, enabled, o, done, &p, NULL);
    if (rc == EG_OK) *derived = done(&E, &p);
    ee_free(&E);
    eg_free(g);
    return rc;
}

/* q derived at an instance and DERIVE_VARIANTS more, from a variant
 * stream of its own (salt). */
static eg_status derived_everywhere(const equation *q, uint64_t salt, const unsigned char *first,
                                    const unsigned char *enabled, const eg_search_opts *o, int *derived, char *err,
                                    size_t errlen) {
    const rg_graph *a = q->sides[0], *b = q->sides[1];
    search s = {a, b, q->kernel1, a->n_inputs > b->n_inputs ? a->n_inputs : b->n_inputs,
                rg_used_inputs(a) | rg_used_inputs(b), {{0}}, 0};
    *derived = 0;
    if (!bind_from(&s, 0)) return EG_OK; /* no instance: kept */
    ten_shape base[RG_MAX_INPUTS], v[RG_MAX_INPUTS];
    memcpy(base, s.in, sizeof base);
    eg_status rc = derived_at(q, s.n_in, base, first, enabled, o, derived, err, errlen);
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ salt;
    for (int t = 0, found = 0; rc == EG_OK && *derived && found < DERIVE_VARIANTS && t < DERIVE_TRIES; t++) {
        if (!variant(&s, base, &rng, v)) continue;
        found++;
        rc = derived_at(q, s.n_in, v, first, enabled, o, derived, err, errlen);
    }
    return rc;
}

/* Rule i of rs as an equation. */
static equation rule_equation(const eg_ruleset *rs, size_t i, int two_sided) {
    const rdb_rule *r = eg_ruleset_rule(rs, i);
    return (equation){rs, i, {&r->src, &r->dst}, rs->plan[i].divisors, eg_ruleset_kernel1(rs, i), two_sided};
}

/* The variant stream of q: of its two sides, not of where the rule sits
 * in rs. A rule is pruned in a ruleset read from one file and checked in
 * one read from another (the rules kept, then the rest), where its index
 * differs and moves with every rule kept: a verdict that read the index
 * would change from one check to the next with nothing derived changed. */
static uint64_t salt_of(const equation *q) {
    uint64_t a = rg_hash(q->sides[0]), b = rg_hash(q->sides[1]);
    return a ^ (b << 31 | b >> 33);
}

eg_status eg_derive_rule(const eg_ruleset *rs, size_t i, const unsigned char *first, const unsigned char *enabled,
                         const eg_search_opts *o, int two_sided, int *derived, char *err, size_t errlen) {
    equation q = rule_equation(rs, i, two_sided);
    return derived_everywhere(&q, salt_of(&q), first, enabled, o, derived, err, errlen);
}

static int is_split(ops_op op) { return op == OP_SPLIT0 || op == OP_SPLIT1; }

/* 1 when rule r removes a detour through an operator: its left side a
 * split of what reads a concat, (split0 0 (dim 0 x0) (sadd (concat 0 x0
 * x1) x2)) => (sadd x0 x2), its right side smaller and with no split. */
static int removes_detour(const rdb_rule *r) {
    const rg_graph *a = &r->src, *b = &r->dst;
    if (a->n_outputs != 1 || RG_IS_INPUT(a->out[0]) || !is_split(a->node[RG_NODE_INDEX(a->out[0])].op) ||
        b->n_nodes >= a->n_nodes)
        return 0;
    int concat = 0;
    for (int j = 0; j < a->n_nodes; j++) concat |= a->node[j].op == OP_CONCAT;
    for (int j = 0; j < b->n_nodes; j++)
        if (is_split(b->node[j].op)) return 0;
    return concat;
}

/* 1 when each split in g is the only reader of what it splits: a detour
 * there computes a part nothing uses. A split that shares what it reads
 * (the two halves of one product, two outputs of a merge) is a merge,
 * which the search pays for and erasing would undo. */
static int detours_unshared(const rg_graph *g) {
    for (int j = 0; j < g->n_nodes; j++) {
        if (!is_split(g->node[j].op)) continue;
        rg_ref x = g->node[j].in[0];
        int readers = 0;
        for (int k = 0; k < g->n_outputs; k++) readers += g->out[k] == x;
        for (int i = 0; i < g->n_nodes; i++)
            for (int k = 0; k < ops_table[g->node[i].op].arity; k++) readers += g->node[i].in[k] == x;
        if (readers > 1) return 0;
    }
    return 1;
}

/* EG_DERIVE_EQUATION's rule sets over enabled[] (NULL: all): both_ways[]
 * the rules with a reverse in rs (a search walks them either way),
 * erase[] (with detours, else all 0) the identity detours, rules whose
 * right side is an input, and, when `through` (an equation whose
 * detours are unshared), the rules that remove a detour through an
 * operator. */
static void derive_sets(const eg_ruleset *rs, const unsigned char *enabled, int detours, int through,
                        unsigned char *both_ways, unsigned char *erase) {
    for (size_t k = 0, n = eg_ruleset_count(rs); k < n; k++) {
        int on = !enabled || enabled[k];
        const rdb_rule *r = eg_ruleset_rule(rs, k);
        both_ways[k] = on && eg_ruleset_mate(rs, k) != EG_NO_MATE;
        erase[k] = detours && on && (r->dst.n_nodes == 0 || (through && removes_detour(r)));
    }
}

/* q two-sided under EG_DERIVE_EQUATION or _DETOURS (eg_derive_equation's
 * first test): the sides meet under the enabled rules that have a
 * reverse, with DETOURS after the identity detours ran alone. */
static eg_status meet_both_ways(const equation *q, uint64_t salt, const unsigned char *enabled,
                                const eg_search_opts *o, eg_derive_mode mode, int *derived, char *err, size_t errlen) {
    size_t n = eg_ruleset_count(q->rs);
    unsigned char *both_ways = malloc(2 * n + 1), *erase = both_ways + n;
    *derived = 0;
    if (!both_ways) return eg_errf(err, errlen, EG_ENOMEM, "derive: out of memory");
    int through = detours_unshared(q->sides[0]) && detours_unshared(q->sides[1]);
    derive_sets(q->rs, enabled, mode == EG_DERIVE_DETOURS, through, both_ways, erase);
    eg_status rc = derived_everywhere(q, salt, mode == EG_DERIVE_DETOURS ? erase : NULL, both_ways, o, derived, err,
                                      errlen);
    free(both_ways);
    return rc;
}

static eg_status pair_under(const eg_ruleset *rs, const rg_graph *a, const rg_graph *b, const unsigned char *enabled,
                            const eg_search_opts *o, eg_derive_mode mode, int *derived, char *err, size_t errlen) {
    equation meet = {rs, NO_RULE, {a, b}, 0, 0, 1};
    eg_status rc = EG_OK;
    *derived = 0;
    if (a->n_outputs != b->n_outputs) return EG_OK;
    if (mode == EG_DERIVE_MEET) return derived_everywhere(&meet, salt_of(&meet), NULL, enabled, o, derived, err, errlen);
    if (mode != EG_DERIVE_REACH) { /* as eg_derive_equation: the sides meet */
        rc = meet_both_ways(&meet, salt_of(&meet), enabled, o, mode, derived, err, errlen);
        if (rc != EG_OK || *derived) return rc;
    }
    /* else each way the engine could apply as a rule reaches the other side */
    const rg_graph *side[2] = {a, b};
    int ways = 0;
    *derived = 1;
    for (int d = 0; rc == EG_OK && *derived && d < 2; d++) {
        if (!rg_can_rewrite(side[d], side[1 - d])) continue;
        equation q = {rs, NO_RULE, {side[d], side[1 - d]}, 0, 0, 0};
        ways++;
        rc = derived_everywhere(&q, salt_of(&q), NULL, enabled, o, derived, err, errlen);
    }
    if (!ways) *derived = 0; /* no rule either way: nothing to derive */
    return rc;
}

/* ---- the pruning ---- */

typedef struct {
    int size, inputs;
    size_t i;
} by_size;

/* Smallest first; of equal size, the one with more inputs first: a rule
 * of the same size with fewer inputs is at most an instance of it (two
 * inputs made one, as `(concat (ewadd x0 x1) (ewadd x0 x1))` is of
 * `(concat (ewadd x0 x1) (ewadd x2 x3))`), which the general rule derives
 * in one step and never the reverse. */
static int size_cmp(const void *a, const void *b) {
    const by_size *x = a, *y = b;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    if (x->inputs != y->inputs) return x->inputs > y->inputs ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The other rule of i's equation (its reverse in rs), or i itself. */
static size_t mate_of(const eg_ruleset *rs, size_t i) {
    size_t m = eg_ruleset_mate(rs, i);
    return m == EG_NO_MATE ? i : m;
}

static eg_status equation_under(const eg_ruleset *rs, size_t i, const unsigned char *enabled,
                                const eg_search_opts *o, eg_derive_mode mode, int with_mate, int *derived, char *err,
                                size_t errlen) {
    size_t m = mate_of(rs, i);
    eg_status rc = EG_OK;
    *derived = 0;
    if (mode == EG_DERIVE_EQUATION || mode == EG_DERIVE_DETOURS) {
        /* both sides saturated with the enabled rules the engine also
         * reads backwards: where they meet, every step on the right side's
         * way back to the meeting point has its reverse, so the left side
         * reaches the right (and the right the left). With DETOURS, before
         * that, the identity detours written in the two sides are erased (a split
         * of a concat, a product with ones: enabled rules whose right side
         * is an input), so a rule that differs from a derived one only by
         * a detour it writes is derived too; a detour is never cheaper
         * than what it computes. Only the detours as written: erasing
         * during the saturation would let a derivation insert a detour
         * backwards, and that is how a merge of two convs is made */
        equation q = rule_equation(rs, i, 1);
        rc = meet_both_ways(&q, salt_of(&q), enabled, o, mode, derived, err, errlen);
        if (rc != EG_OK || *derived) return rc;
    }
    int two_sided = mode == EG_DERIVE_MEET;
    rc = eg_derive_rule(rs, i, NULL, enabled, o, two_sided, derived, err, errlen);
    if (rc == EG_OK && *derived && with_mate && m != i)
        rc = eg_derive_rule(rs, m, NULL, enabled, o, two_sided, derived, err, errlen);
    return rc;
}

/* ---- first under the rules over the equation's own operators ---- */

/* enabled[] (NULL: all) narrowed to the rules that write no operator
 * outside ops, in *narrow (NULL when that leaves out no enabled rule).
 * Why: a bounded saturation under every rule spends its e-nodes where
 * rules bring in operators neither side writes (a sum as a matmul of
 * concats, a product through ones), and each of those opens more rules;
 * a derivation that needs none of them is cut by the bound before it
 * ends. Narrowed, every e-node is over the equation's own operators.
 * @return EG_OK or EG_ENOMEM with a message. */
static eg_status narrowed(const eg_ruleset *rs, const unsigned char *enabled, ops_set ops, unsigned char **narrow,
                          char *err, size_t errlen) {
    size_t n = eg_ruleset_count(rs);
    int fewer = 0;
    *narrow = malloc(n + 1);
    if (!*narrow) return eg_errf(err, errlen, EG_ENOMEM, "derive: out of memory");
    for (size_t k = 0; k < n; k++) {
        int on = !enabled || enabled[k];
        (*narrow)[k] = on && !(rs->plan[k].ops & ~ops);
        fewer |= on && !(*narrow)[k];
    }
    if (!fewer) free(*narrow), *narrow = NULL;
    return EG_OK;
}

/* A rule or pair is derived under the narrowed rules or, failing that,
 * under all enabled[]: either is a derivation from the rules kept. */
eg_status eg_derive_equation(const eg_ruleset *rs, size_t i, const unsigned char *enabled, const eg_search_opts *o,
                             eg_derive_mode mode, int with_mate, int *derived, char *err, size_t errlen) {
    unsigned char *narrow = NULL;
    *derived = 0;
    eg_status rc = narrowed(rs, enabled, rs->plan[i].ops, &narrow, err, errlen);
    if (rc == EG_OK && narrow) rc = equation_under(rs, i, narrow, o, mode, with_mate, derived, err, errlen);
    if (rc == EG_OK && *derived) *derived = EG_DERIVED_OWN;
    if (rc == EG_OK && !*derived) {
        rc = equation_under(rs, i, enabled, o, mode, with_mate, derived, err, errlen);
        if (*derived) *derived = narrow ? EG_DERIVED_ALL : EG_DERIVED_OWN; /* none left out: all are its own */
    }
    free(narrow);
    return rc;
}

eg_status eg_derive_pair(const eg_ruleset *rs, const rg_graph *a, const rg_graph *b, const unsigned char *enabled,
                         const eg_search_opts *o, eg_derive_mode mode, int *derived, char *err, size_t errlen) {
    unsigned char *narrow = NULL;
    *derived = 0;
    eg_status rc = narrowed(rs, enabled, rg_ops_written(a) | rg_ops_written(b), &narrow, err, errlen);
    if (rc == EG_OK && narrow) rc = pair_under(rs, a, b, narrow, o, mode, derived, err, errlen);
    if (rc == EG_OK && !*derived) rc = pair_under(rs, a, b, enabled, o, mode, derived, err, errlen);
    free(narrow);
    return rc;
}

eg_status eg_prune_derivable(const eg_ruleset *rs, const eg_search_opts *o, eg_derive_mode mode,
                             const unsigned char *candidates, unsigned char *keep, eg_prune_stats *st,
                             eg_prune_progress progress, void *arg, char *err, size_t errlen) {
    size_t n = eg_ruleset_count(rs), units = 0;
    by_size *order = malloc(sizeof *order * (n + 1));
    double t0 = eg_now_s();
    memset(st, 0, sizeof *st);
    if (!order) return eg_errf(err, errlen, EG_ENOMEM, "prune: out of memory");
    /* a unit is an equation: a rule and its reverse, kept or dropped
     * together, named by the first of the two */
    for (size_t i = 0; i < n; i++) {
        const rdb_rule *r = eg_ruleset_rule(rs, i);
        keep[i] = 0;
        if (mate_of(rs, i) >= i)
            order[units++] = (by_size){r->src.n_nodes + r->dst.n_nodes, r->src.n_inputs, i};
    }
    st->rules = units;
    qsort(order, units, sizeof *order, size_cmp);
    eg_status rc = EG_OK;
    for (size_t q = 0; rc == EG_OK && q < units; q++) {
        size_t i = order[q].i;
        int derived = candidates && !candidates[i] && !candidates[mate_of(rs, i)]; /* dropped unchecked */
        if (!derived) rc = eg_derive_equation(rs, i, keep, o, mode, 1, &derived, err, errlen);
        keep[i] = keep[mate_of(rs, i)] = !derived;
        st->kept += !derived, st->derived += derived != 0;
        if (progress) progress(q + 1, units, st, arg);
    }
    st->seconds = eg_now_s() - t0;
    free(order);
    return rc;
}
