/* match.c - finding rule matches in a graph (eg_match_all) and checking a
 * given match (eg_match_check): plan-driven backtracking from an anchor
 * node through producers and consumers, then shape and external-use
 * checks. */
#include "rewrite/rules_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* One attempt to match one rule. */
typedef struct {
    const eg_graph *g;
    const rdb_rule *r;
    const eg_plan *p;
    int nm[RG_MAX_NODES];  /* graph node of src node j, -1 unbound */
    int im[RG_MAX_INPUTS]; /* tensor of rule input i, -1 unbound */
    int start;             /* the src node the route starts from */
} mstate;

static void state_init(mstate *s, const eg_ruleset *rs, const eg_graph *g, uint32_t rule) {
    s->g = g;
    s->r = &rs->rule[rule];
    s->p = &rs->plan[rule];
    for (int j = 0; j < RG_MAX_NODES; j++) s->nm[j] = -1;
    for (int i = 0; i < RG_MAX_INPUTS; i++) s->im[i] = -1;
    s->start = 0;
}

/* The tensor graph node c writes (opspecs nodes have one output). */
static int out0(const eg_graph *g, int c) {
    return g->node[c].out[0];
}

/* 1 when graph node n's parameter k may stand for the value v a rule
 * writes: equal, or a pad of a 1x1 conv (SAME and VALID are then one
 * operator, eg_conv_1x1). */
static int param_agrees(const eg_graph *g, const eg_node *n, int k, int32_t v) {
    return n->param[k] == v || (ops_table[n->op].pkind[k] == PK_PAD && eg_conv_1x1(g, n));
}

/* 1 when graph node c can stand for src node j by itself: an opspecs node
 * with j's operator, arity and literal parameters. */
static int node_fits(const mstate *s, int j, int c) {
    if (c < 0 || c >= s->g->n_nodes) return 0;
    const eg_node *n = &s->g->node[c];
    const rg_node *sn = &s->r->src.node[j];
    const ops_info *oi = &ops_table[sn->op];
    if (n->kind != EG_KIND_OPS || n->op != sn->op || n->n_in != oi->arity || n->n_implicit ||
        n->n_out != 1 || n->out[0] < 0)
        return 0;
    for (int k = 0; k < oi->n_params; k++)
        if (!(oi->pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(sn->param[k])) &&
            !eg_param_free(sn->op, k, sn->param[k]) && !param_agrees(s->g, n, k, sn->param[k]))
            return 0;
    return 1;
}

/* Bind src node j to graph node c: c not used by another src node, its
 * inputs agree with bound inputs and nodes (binding new inputs), and bound
 * nodes that read j read c's output. @return 1 when consistent (s->im may
 * be changed either way; callers restore it). */
static int bind_node(mstate *s, int j, int c) {
    const rg_graph *src = &s->r->src;
    const eg_node *n = &s->g->node[c];
    for (int q = 0; q < src->n_nodes; q++)
        if (s->nm[q] == c) return 0;
    for (int k = 0; k < n->n_in; k++) {
        rg_ref r = src->node[j].in[k];
        int t = n->in[k];
        if (t < 0) return 0;
        if (RG_IS_INPUT(r)) {
            if (s->im[r] < 0) s->im[r] = t;
            else if (s->im[r] != t) return 0;
        } else if (s->nm[RG_NODE_INDEX(r)] >= 0 && out0(s->g, s->nm[RG_NODE_INDEX(r)]) != t) {
            return 0;
        }
    }
    int o = out0(s->g, c);
    for (int q = 0; q < src->n_nodes; q++) {
        if (s->nm[q] < 0) continue;
        for (int k = 0; k < ops_table[src->node[q].op].arity; k++)
            if (src->node[q].in[k] == RG_NODE(j) && s->g->node[s->nm[q]].in[k] != o) return 0;
    }
    s->nm[j] = c;
    return 1;
}

/* Readers of t among the matched nodes (with multiplicity). */
static int internal_uses(const mstate *s, int t) {
    int u = 0;
    for (int q = 0; q < s->r->src.n_nodes; q++) {
        const eg_node *n = &s->g->node[s->nm[q]];
        for (int k = 0; k < n->n_in; k++) u += n->in[k] == t;
    }
    return u;
}

/* The checks once every node is bound: symbolic sizes, dst shapes against
 * src output shapes, internal outputs used only inside the match. uses:
 * eg_count_uses of g. @return EG_OK, EG_ESHAPE or EG_EGRAPH. */
/* An initializer whose float32 values are none of them 0. */
static int nonzero_init(const eg_tensor *t) {
    int64_t numel = eg_shape_numel(&t->shape);
    if (!(t->flags & EG_TF_INIT) || !t->data || numel < 1) return 0;
    for (int64_t i = 0; i < numel; i++)
        if (t->data[i] == 0) return 0;
    return 1;
}

static eg_status final_check(const mstate *s, const int *uses, char *err, size_t errlen) {
    const rg_graph *src = &s->r->src, *dst = &s->r->dst;
    ten_shape in[RG_MAX_INPUTS], shape[RG_MAX_REFS], got;
    memset(in, 0, sizeof in);
    for (int i = 0; i < src->n_inputs; i++) {
        if (s->im[i] >= 0 && !eg_to_ten_shape(&s->g->tensor[s->im[i]].shape, &in[i]))
            return eg_errf(err, errlen, EG_ESHAPE, "rule input x%d: shape out of range", i);
        if ((s->p->kernel1 >> i & 1) && !eg_kernel_1x1(&in[i]))
            return eg_errf(err, errlen, EG_ESHAPE, "rule input x%d: not a 1x1 kernel", i);
        /* refused like a shape that does not fit: a property of the bound
         * value that no rewrite elsewhere changes */
        if (s->p->adds_zeros && s->im[i] >= 0 && (s->g->tensor[s->im[i]].flags & EG_TF_NONFINITE))
            return eg_errf(err, errlen, EG_ESHAPE, "rule input x%d may be infinite or NaN: 0 * inf", i);
        if ((s->p->divisors >> i & 1) && s->im[i] >= 0 && !nonzero_init(&s->g->tensor[s->im[i]]))
            return eg_errf(err, errlen, EG_ESHAPE, "rule input x%d may be 0: 0 * (1 / 0)", i);
    }
    for (int j = 0; j < src->n_nodes; j++)
        for (int k = 0; k < ops_table[src->node[j].op].n_params; k++) {
            int32_t v;
            signed char site = s->p->src_site[j][k];
            if (site >= 0) { /* free: one value wherever src writes the same label */
                if (eg_site_value(s->g, s->nm, site) != s->g->node[s->nm[j]].param[k])
                    return eg_errf(err, errlen, EG_ESHAPE, "src node %d: free parameter differs", j);
                continue;
            }
            if (rg_param_value(src, j, k, in, &v) != RG_OK || !param_agrees(s->g, &s->g->node[s->nm[j]], k, v))
                return eg_errf(err, errlen, EG_ESHAPE, "src node %d: size differs", j);
        }
    if (rg_infer_shapes(dst, in, shape, NULL, 0) != RG_OK)
        return eg_errf(err, errlen, EG_ESHAPE, "dst does not fit the shapes (rule input count %d)", src->n_inputs);
    for (int k = 0; k < src->n_outputs; k++) {
        int t = out0(s->g, s->nm[RG_NODE_INDEX(src->out[k])]);
        if (!eg_to_ten_shape(&s->g->tensor[t].shape, &got) ||
            !ten_shape_eq(&got, &shape[dst->out[k]]))
            return eg_errf(err, errlen, EG_ESHAPE, "dst output %d has another shape", k);
    }
    for (int j = 0; j < src->n_nodes; j++) {
        int t = out0(s->g, s->nm[j]);
        if (!s->p->is_out[j] && uses[t] != internal_uses(s, t))
            return eg_errf(err, errlen, EG_EGRAPH, "src node %d is used outside the match", j);
    }
    return EG_OK;
}

eg_status eg_match_check(const eg_ruleset *rs, const eg_graph *g, const eg_match *m, char *err,
                         size_t errlen) {
    if (m->rule >= rs->n) return eg_errf(err, errlen, EG_EGRAPH, "no rule %d", (int)m->rule);
    mstate s;
    state_init(&s, rs, g, m->rule);
    if (m->n_nodes != s.r->src.n_nodes)
        return eg_errf(err, errlen, EG_EGRAPH, "match of %d nodes", m->n_nodes);
    for (int j = 0; j < m->n_nodes; j++)
        if (!node_fits(&s, j, m->node[j]) || !bind_node(&s, j, m->node[j]))
            return eg_errf(err, errlen, EG_EGRAPH, "src node %d does not match its graph node", j);
    for (int i = 0; i < s.r->src.n_inputs; i++)
        if (s.im[i] != m->input[i])
            return eg_errf(err, errlen, EG_EGRAPH, "rule input x%d is bound otherwise", i);
    int *uses = malloc(sizeof *uses * (size_t)(g->n_tensors ? g->n_tensors : 1));
    if (!uses) return eg_errf(err, errlen, EG_ENOMEM, "out of memory (%d tensors)", g->n_tensors);
    eg_count_uses(g, uses);
    eg_status rc = final_check(&s, uses, err, errlen);
    free(uses);
    return rc;
}

/* ================= eg_match_all ================= */

/* A match of a multi-output rule, as a set: rule and sorted node ids. */
typedef struct {
    uint32_t rule;
    int n;
    int node[RG_MAX_NODES];
} seen_key;

/* A match found from the current anchor, reported once the anchor is done
 * in ruleset order (rank), then in the order found (seq). */
typedef struct {
    uint32_t rank;
    size_t seq;
    eg_match m;
} found;

typedef struct {
    const eg_ruleset *rs;
    const eg_tree *tree;            /* rs->tree, or rs->touch */
    const unsigned char *touched;   /* with rs->touch: the nodes to bind */
    const eg_graph *g;
    int *cstart, *clist; /* readers of tensor t: clist[cstart[t] .. cstart[t+1]) */
    int *ostart, *olist; /* opspecs nodes by op: olist[ostart[op] .. ostart[op+1]) */
    int *uses;
    eg_match_fn fn;
    void *arg;
    int stop;
    eg_status rc;
    seen_key *seen; /* open addressing; n == 0 marks an empty slot */
    size_t seen_cap, seen_used;
    found *found;   /* this anchor's matches */
    size_t n_found, cap_found;
} mctx;

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static size_t seen_slot(const seen_key *tab, size_t cap, const seen_key *k) {
    size_t i = (size_t)XXH3_64bits(k, sizeof *k) & (cap - 1);
    while (tab[i].n && memcmp(&tab[i], k, sizeof *k) != 0) i = (i + 1) & (cap - 1);
    return i;
}

/* Record the node set of a multi-output match. @return 1 when it is new. */
static int seen_insert(mctx *c, const eg_match *m) {
    seen_key k;
    memset(&k, 0, sizeof k);
    k.rule = m->rule;
    k.n = m->n_nodes;
    memcpy(k.node, m->node, sizeof(int) * (size_t)k.n);
    qsort(k.node, (size_t)k.n, sizeof(int), cmp_int);
    if (2 * (c->seen_used + 1) > c->seen_cap) {
        size_t nc = c->seen_cap ? 2 * c->seen_cap : 256;
        seen_key *t = calloc(nc, sizeof *t);
        if (!t) {
            c->rc = EG_ENOMEM;
            c->stop = 1;
            return 0;
        }
        for (size_t i = 0; i < c->seen_cap; i++)
            if (c->seen[i].n) t[seen_slot(t, nc, &c->seen[i])] = c->seen[i];
        free(c->seen);
        c->seen = t;
        c->seen_cap = nc;
    }
    size_t i = seen_slot(c->seen, c->seen_cap, &k);
    if (c->seen[i].n) return 0;
    c->seen[i] = k;
    c->seen_used++;
    return 1;
}

/* Keep the match s has bound for rule, when it passes the final checks
 * (and, matching touched nodes, it is found from the first src node that
 * binds one). */
static void keep(mctx *c, const mstate *s, uint32_t rule) {
    for (int q = 0; c->touched && q < s->start; q++)
        if (c->touched[s->nm[q]]) return;
    if (final_check(s, c->uses, NULL, 0) != EG_OK) return;
    if (c->n_found == c->cap_found) {
        size_t cap = c->cap_found ? 2 * c->cap_found : 64;
        found *t = realloc(c->found, cap * sizeof *t);
        if (!t) {
            c->rc = EG_ENOMEM;
            c->stop = 1;
            return;
        }
        c->found = t, c->cap_found = cap;
    }
    found *f = &c->found[c->n_found];
    memset(f, 0, sizeof *f);
    f->rank = c->rs->rank[rule];
    f->seq = c->n_found++;
    f->m.rule = rule;
    f->m.n_nodes = s->r->src.n_nodes;
    memcpy(f->m.node, s->nm, sizeof f->m.node);
    memcpy(f->m.input, s->im, sizeof f->m.input);
}

static int cmp_found(const void *a, const void *b) {
    const found *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Report the anchor's matches in the documented order: rules in ruleset
 * order, a rule's matches in the order found (candidates in graph order). */
static void report_found(mctx *c) {
    if (c->n_found > 1) qsort(c->found, c->n_found, sizeof *c->found, cmp_found);
    for (size_t i = 0; i < c->n_found && !c->stop; i++) {
        const eg_match *m = &c->found[i].m;
        if (!c->touched && c->rs->rule[m->rule].src.n_outputs > 1 && !seen_insert(c, m)) continue;
        if (c->fn(m, c->arg)) c->stop = 1;
    }
    c->n_found = 0;
}

static void tree_step(mctx *c, mstate *s, uint32_t t, int anchor);

/* Try graph node cand for tree node T's step: bound, keep the matches of
 * the rules that end here and go on to T's children. The representative
 * rule stands for all below T in node_fits and bind_node: they bind the
 * same src nodes with the same operators, parameters and inputs so far. */
static void tree_try(mctx *c, mstate *s, const eg_tnode *T, int cand) {
    const eg_ruleset *rs = c->rs;
    int j = T->step.node;
    s->r = &rs->rule[T->rep], s->p = &rs->plan[T->rep];
    if (c->stop || !node_fits(s, j, cand)) return;
    int saved[RG_MAX_INPUTS];
    memcpy(saved, s->im, sizeof saved);
    if (bind_node(s, j, cand)) {
        for (uint32_t e = 0; e < T->n_end && !c->stop; e++) {
            uint32_t rule = c->tree->ends[T->end + e];
            s->r = &rs->rule[rule], s->p = &rs->plan[rule];
            keep(c, s, rule);
        }
        for (uint32_t q = 0; q < T->n_kid && !c->stop; q++) tree_step(c, s, c->tree->kids[T->kid + q], -1);
    }
    s->nm[j] = -1;
    memcpy(s->im, saved, sizeof saved);
}

/* The tensor a bound ref stands for. */
static int ref_tensor(const mstate *s, int ref) {
    if (RG_IS_INPUT(ref)) return s->im[ref];
    int q = s->nm[RG_NODE_INDEX(ref)];
    return q >= 0 ? out0(s->g, q) : -1;
}

/* The candidates for tree node t's step, each tried in graph order. */
static void tree_step(mctx *c, mstate *s, uint32_t t, int anchor) {
    const eg_tnode *T = &c->tree->node[t];
    const eg_step *st = &T->step;
    int x;
    if (c->stop) return;
    switch (st->kind) {
    case EG_STEP_ANCHOR:
        tree_try(c, s, T, anchor);
        break;
    case EG_STEP_PRODUCER:
        x = s->g->node[s->nm[st->from]].in[st->pos];
        if (x >= 0 && s->g->tensor[x].producer >= 0) tree_try(c, s, T, s->g->tensor[x].producer);
        break;
    case EG_STEP_CONSUMER:
        x = ref_tensor(s, st->from);
        for (int i = x >= 0 ? c->cstart[x] : 0; x >= 0 && i < c->cstart[x + 1] && !c->stop; i++)
            tree_try(c, s, T, c->clist[i]);
        break;
    case EG_STEP_SCAN: {
        ops_op op = c->rs->rule[T->rep].src.node[st->node].op;
        for (int i = c->ostart[op]; i < c->ostart[op + 1] && !c->stop; i++) tree_try(c, s, T, c->olist[i]);
        break;
    }
    }
}

/* Build the reader lists (eg_reader_index) and the per-op node lists.
 * @return EG_OK or EG_ENOMEM. */
static eg_status build_index(mctx *c) {
    const eg_graph *g = c->g;
    size_t nt = (size_t)g->n_tensors + 1, nn = (size_t)g->n_nodes + 1;
    c->ostart = calloc(OP_COUNT + 2, sizeof *c->ostart);
    c->olist = malloc(sizeof *c->olist * nn);
    c->uses = malloc(sizeof *c->uses * nt);
    if (!c->ostart || !c->olist || !c->uses || eg_reader_index(g, &c->cstart, &c->clist) != EG_OK)
        return EG_ENOMEM;
    eg_count_uses(g, c->uses);
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].kind == EG_KIND_OPS) c->ostart[g->node[j].op + 1]++;
    for (int op = 0; op < OP_COUNT; op++) c->ostart[op + 1] += c->ostart[op];
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].kind == EG_KIND_OPS) c->olist[c->ostart[g->node[j].op]++] = j;
    memmove(c->ostart + 1, c->ostart, sizeof *c->ostart * OP_COUNT); /* filling advanced each start */
    c->ostart[0] = 0;
    return EG_OK;
}

eg_status eg_match_all(const eg_ruleset *rs, const eg_graph *g, eg_match_fn fn, void *arg) {
    return eg_match_anchored(rs, g, NULL, fn, arg);
}

/* Match from every node a with anchor[a] set (NULL: every node), in
 * order, through c->tree. */
static eg_status match_from(mctx *c, const unsigned char *anchor) {
    const eg_ruleset *rs = c->rs;
    const eg_tree *t = c->tree;
    const eg_graph *g = c->g;
    c->rc = build_index(c);
    for (int a = 0; c->rc == EG_OK && !c->stop && a < g->n_nodes; a++) {
        const eg_node *n = &g->node[a];
        if (n->kind != EG_KIND_OPS || (anchor && !anchor[a])) continue;
        for (uint32_t q = t->root[n->op]; q < t->root[n->op] + t->n_root[n->op] && !c->stop; q++) {
            const eg_tnode *T = &t->node[t->kids[q]];
            mstate s;
            state_init(&s, rs, g, T->rep);
            s.start = T->step.node;
            tree_step(c, &s, t->kids[q], a);
        }
        report_found(c);
    }
    free(c->cstart);
    free(c->clist);
    free(c->ostart);
    free(c->olist);
    free(c->uses);
    free(c->seen);
    free(c->found);
    return c->rc;
}

eg_status eg_match_anchored(const eg_ruleset *rs, const eg_graph *g, const unsigned char *anchor,
                            eg_match_fn fn, void *arg) {
    mctx c;
    memset(&c, 0, sizeof c);
    c.rs = rs, c.tree = &rs->tree, c.g = g, c.fn = fn, c.arg = arg;
    return match_from(&c, anchor);
}

eg_status eg_match_touching(const eg_ruleset *rs, const eg_graph *g, const unsigned char *touched,
                            eg_match_fn fn, void *arg) {
    mctx c;
    memset(&c, 0, sizeof c);
    c.rs = rs, c.tree = &rs->touch, c.touched = touched, c.g = g, c.fn = fn, c.arg = arg;
    return match_from(&c, touched);
}
