/* ematch.c - the rules over an e-graph (egraph_int.h): matching by the
 * ruleset's plan tree (rewrite/rules_int.h, the plans eg_match_all walks
 * over a graph), with each step's candidates taken from classes, and
 * applying a match. A src node binds an e-node, so its value is its
 * class; a rule input binds a class. The checks are the graph search's
 * (match.c's final_check), on class shapes and flags; there is no check
 * that src's inner values are unread elsewhere: an e-graph keeps them. */
#include "egraph/egraph_int.h"
#include "rewrite/rules_int.h"
#include "sys/sys.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    ee_graph *E;
    const eg_ruleset *rs;
    const rdb_rule *r;
    const eg_plan *p;
    int nm[RG_MAX_NODES];  /* e-node of src node j, -1 unbound */
    int im[RG_MAX_INPUTS]; /* class of rule input i, -1 unbound */
    ee_matches *M;
    unsigned char *alive; /* [tree nodes]: a rule not off ends at or below it */
    unsigned char *cut;   /* [rules]: off, or over its limit this round */
    unsigned long steps;  /* tree steps taken: the clock is read every 4096 */
    uint32_t *tries;      /* [tree nodes]: e-nodes tried for it (EE_TRY_LIMIT) */
    unsigned char anchors[OP_COUNT]; /* operators of the e-nodes the walk anchors at */
    int stop;
} ex;

/* alive[t] for tree node t and those below it. @return alive[t]. */
static int mark_alive(const eg_ruleset *rs, const unsigned char *off, uint32_t t, unsigned char *alive) {
    const eg_tnode *T = &rs->tree.node[t];
    int a = 0;
    for (uint32_t k = 0; k < T->n_end; k++) a |= !off[rs->tree.ends[T->end + k]];
    for (uint32_t q = 0; q < T->n_kid; q++) a |= mark_alive(rs, off, rs->tree.kids[T->kid + q], alive);
    return alive[t] = (unsigned char)a;
}

/* Matching runs between rebuilds: every class and kid is canonical. */
static int cls_of(ex *x, int e) { return x->E->n[e].cls; }
static int kid_of(ex *x, int e, int k) { return ee_kids(x->E, e)[k]; }

/* 1 when e-node e is a conv2d with a 1x1 kernel (SAME and VALID are then
 * one operator: eg_conv_1x1). */
static int conv_1x1(ex *x, int e) {
    const ee_node *n = &x->E->n[e];
    if (n->kind != EE_OPS || n->op != OP_CONV2D) return 0;
    const ee_class *w = &x->E->c[kid_of(x, e, 1)];
    return w->shaped && eg_kernel_1x1(&w->shape);
}

static int param_agrees(ex *x, int e, int k, int32_t v) {
    const ee_node *n = &x->E->n[e];
    return n->param[k] == v || (ops_table[n->op].pkind[k] == PK_PAD && conv_1x1(x, e));
}

/* 1 when e-node e can stand for src node j by itself. */
static int node_fits(ex *x, int j, int e) {
    const ee_node *n = &x->E->n[e];
    const rg_node *sn = &x->r->src.node[j];
    const ops_info *oi = &ops_table[sn->op];
    if (n->dead || n->kind != EE_OPS || n->op != sn->op || n->n_kid != oi->arity) return 0;
    for (int k = 0; k < oi->n_params; k++)
        if (!(oi->pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(sn->param[k])) && !eg_param_free(sn->op, k, sn->param[k]) &&
            !param_agrees(x, e, k, sn->param[k]))
            return 0;
    return 1;
}

/* Bind src node j to e-node e: its kids agree with what is bound
 * (binding new rule inputs), and bound src nodes that read j read e's
 * class. @return 1 when consistent (x->im may change either way). */
static int bind_node(ex *x, int j, int e) {
    const rg_graph *src = &x->r->src;
    for (int k = 0; k < x->E->n[e].n_kid; k++) {
        rg_ref r = src->node[j].in[k];
        int c = kid_of(x, e, k);
        if (RG_IS_INPUT(r)) {
            if (x->im[r] < 0) x->im[r] = c;
            else if (x->im[r] != c) return 0;
        } else if (x->nm[RG_NODE_INDEX(r)] >= 0 && cls_of(x, x->nm[RG_NODE_INDEX(r)]) != c) {
            return 0;
        }
    }
    int o = cls_of(x, e);
    for (int q = 0; q < src->n_nodes; q++) {
        if (x->nm[q] < 0) continue;
        for (int k = 0; k < ops_table[src->node[q].op].arity; k++)
            if (src->node[q].in[k] == RG_NODE(j) && kid_of(x, x->nm[q], k) != o) return 0;
    }
    x->nm[j] = e;
    return 1;
}

/* The rule inputs' shapes into in[]. @return 0 when one is not a known
 * float32 shape. */
static int input_shapes(ee_graph *E, const rg_graph *src, const int *im, ten_shape *in) {
    memset(in, 0, sizeof(ten_shape) * RG_MAX_INPUTS);
    for (int i = 0; i < src->n_inputs; i++) {
        if (im[i] < 0) continue; /* an input no side reads */
        const ee_class *c = &E->c[ee_find(E, im[i])];
        if (!c->shaped) return 0;
        in[i] = c->shape;
    }
    return 1;
}

/* An initializer none of whose float32 values is 0. */
static int nonzero_init(const eg_graph *g, int t) {
    const eg_tensor *x = t >= 0 ? &g->tensor[t] : NULL;
    int64_t numel = x ? eg_shape_numel(&x->shape) : -1;
    if (!x || !x->data || numel < 1) return 0;
    for (int64_t i = 0; i < numel; i++)
        if (x->data[i] == 0) return 0;
    return 1;
}

/* match.c's final checks on classes: rule inputs (1x1 kernels, values
 * that may be infinite against rules that add zeros, divisors), free
 * parameters, symbolic sizes, dst's shapes against src's outputs. */
static int valid(ex *x) {
    const rg_graph *src = &x->r->src, *dst = &x->r->dst;
    ten_shape in[RG_MAX_INPUTS], shape[RG_MAX_REFS];
    if (!input_shapes(x->E, src, x->im, in)) return 0;
    for (int i = 0; i < src->n_inputs; i++) {
        if ((x->p->kernel1 >> i & 1) && !eg_kernel_1x1(&in[i])) return 0;
        if (x->im[i] < 0) continue;
        const ee_class *c = &x->E->c[ee_find(x->E, x->im[i])];
        if (x->p->adds_zeros && (c->flags & EE_NONFINITE)) return 0;
        if ((x->p->divisors >> i & 1) && !nonzero_init(x->E->g, c->init)) return 0;
    }
    for (int j = 0; j < src->n_nodes; j++)
        for (int k = 0; k < ops_table[src->node[j].op].n_params; k++) {
            signed char site = x->p->src_site[j][k];
            int32_t v;
            if (site >= 0) {
                if (x->E->n[x->nm[EG_SITE_NODE(site)]].param[EG_SITE_PARAM(site)] != x->E->n[x->nm[j]].param[k]) return 0;
                continue;
            }
            if (rg_param_value(src, j, k, in, &v) != RG_OK || !param_agrees(x, x->nm[j], k, v)) return 0;
        }
    if (rg_infer_shapes(dst, in, shape, NULL, 0) != RG_OK) return 0;
    for (int k = 0; k < src->n_outputs; k++) {
        const ee_class *c = &x->E->c[cls_of(x, x->nm[RG_NODE_INDEX(src->out[k])])];
        if (!c->shaped || !ten_shape_eq(&c->shape, &shape[dst->out[k]])) return 0;
    }
    return 1;
}

/* alive[] below the roots of the operators the walk anchors at (those
 * of anchors[]; the rest of the tree is never entered: a derivation's
 * e-graph holds a few operators of a ruleset's tree of thousands). */
static void mark_anchored(const eg_ruleset *rs, const unsigned char *cut, const unsigned char *anchors,
                          unsigned char *alive) {
    const eg_tree *t = &rs->tree;
    for (int op = 0; op < OP_COUNT; op++)
        for (uint32_t q = t->root[op]; anchors[op] && q < t->root[op] + t->n_root[op]; q++)
            mark_alive(rs, cut, t->kids[q], alive);
}

/* Rule is over its limit: the walk leaves the tree nodes where only cut
 * rules end, so a banned rule costs no more matching this round. */
static void cut_rule(ex *x, uint32_t rule) {
    x->cut[rule] = 1;
    mark_anchored(x->rs, x->cut, x->anchors, x->alive);
}

/* Record the match x has bound for rule when it passes the checks and
 * binds a value the model computes at run time (not weights alone). */
static void keep(ex *x, uint32_t rule) {
    ee_matches *M = x->M;
    if (M->off[rule] || M->count[rule] > M->limit[rule]) return;
    int all_weights = 1;
    for (int j = 0; j < x->r->src.n_nodes && all_weights; j++)
        all_weights = (x->E->c[cls_of(x, x->nm[j])].flags & EE_WEIGHT) != 0;
    if (all_weights || !valid(x)) return;
    if (++M->count[rule] > M->limit[rule]) { /* dropped with the rest of its round */
        cut_rule(x, rule);
        return;
    }
    if (M->n == M->cap) {
        size_t cap = M->cap ? 2 * M->cap : 1024;
        ee_match *t = realloc(M->m, sizeof *t * cap);
        if (!t) {
            M->oom = 1, x->stop = 1;
            return;
        }
        M->m = t, M->cap = cap;
    }
    ee_match *m = &M->m[M->n++];
    m->rule = rule;
    memcpy(m->node, x->nm, sizeof m->node);
    memcpy(m->input, x->im, sizeof m->input);
}

static void tree_step(ex *x, uint32_t t, int anchor);

/* Try e-node e for tree node T's step (as match.c's tree_try). */
static void tree_try(ex *x, const eg_tnode *T, int e) {
    const eg_ruleset *rs = x->rs;
    int j = T->step.node;
    x->r = &rs->rule[T->rep], x->p = &rs->plan[T->rep];
    if (x->stop || !node_fits(x, j, e)) return;
    int saved[RG_MAX_INPUTS];
    memcpy(saved, x->im, sizeof saved);
    if (bind_node(x, j, e)) {
        for (uint32_t k = 0; k < T->n_end && !x->stop; k++) {
            uint32_t rule = rs->tree.ends[T->end + k];
            x->r = &rs->rule[rule], x->p = &rs->plan[rule];
            keep(x, rule);
        }
        for (uint32_t q = 0; q < T->n_kid && !x->stop; q++)
            if (x->alive[rs->tree.kids[T->kid + q]]) tree_step(x, rs->tree.kids[T->kid + q], -1);
    }
    x->nm[j] = -1;
    memcpy(x->im, saved, sizeof saved);
}

/* The class a bound ref stands for, -1 when unbound. */
static int ref_class(ex *x, int ref) {
    if (RG_IS_INPUT(ref)) return x->im[ref];
    int q = x->nm[RG_NODE_INDEX(ref)];
    return q >= 0 ? cls_of(x, q) : -1;
}

/* Charge n tries to tree node t. @return 0 when that takes it past
 * EE_TRY_LIMIT: it and the rules below it are cut for the rest of this
 * matching, the matches found so far kept. */
static int charge(ex *x, uint32_t t, int n) {
    if (x->tries[t] + (uint32_t)n <= EE_TRY_LIMIT) {
        x->tries[t] += (uint32_t)n;
        return 1;
    }
    x->alive[t] = 0;
    x->M->cut_nodes++;
    return 0;
}

/* The candidates for tree node t's step: a producer step's from the class
 * the bound node reads, a consumer step's among the class's readers. */
static void tree_step(ex *x, uint32_t t, int anchor) {
    const eg_tnode *T = &x->rs->tree.node[t];
    const eg_step *st = &T->step;
    ee_graph *E = x->E;
    ops_op op = x->rs->rule[T->rep].src.node[st->node].op;
    int c, first, end;
    if (x->stop) return;
    if ((++x->steps & 4095) == 0 && eg_now_s() > x->M->deadline) { /* one anchor can match for minutes */
        x->M->timed_out = 1, x->stop = 1;
        return;
    }
    switch (st->kind) {
    case EG_STEP_ANCHOR:
        tree_try(x, T, anchor);
        break;
    case EG_STEP_PRODUCER:
        c = kid_of(x, x->nm[st->from], st->pos);
        ee_op_run(E, E->cnode + E->c[c].node0, E->c[c].n_node, op, &first, &end);
        if (!charge(x, t, end - first)) break;
        for (int i = first; i < end && !x->stop; i++) tree_try(x, T, E->cnode[E->c[c].node0 + i]);
        break;
    case EG_STEP_CONSUMER:
        if ((c = ref_class(x, st->from)) < 0) break;
        ee_op_run(E, E->cpar + E->c[c].par0, E->c[c].n_par, op, &first, &end);
        if (!charge(x, t, end - first)) break;
        for (int i = first; i < end && !x->stop; i++) tree_try(x, T, E->cpar[E->c[c].par0 + i]);
        break;
    case EG_STEP_SCAN:
        if (!charge(x, t, E->op_start[op + 1] - E->op_start[op])) break;
        for (int i = E->op_start[op]; i < E->op_start[op + 1] && !x->stop; i++) tree_try(x, T, E->op_list[i]);
        break;
    }
}

eg_status ee_match_all(ee_graph *E, const eg_ruleset *rs, ee_matches *M) {
    ex x = {.E = E, .rs = rs, .M = M};
    const eg_tree *t = &rs->tree;
    size_t nr = eg_ruleset_count(rs);
    x.alive = calloc(t->n + 1, 1), x.cut = malloc(nr + 1), x.tries = calloc(t->n + 1, sizeof *x.tries);
    if (!x.alive || !x.cut || !x.tries) {
        free(x.alive), free(x.cut), free(x.tries);
        return EG_ENOMEM;
    }
    for (size_t i = 0; i < nr; i++) x.cut[i] = M->off[i] || M->count[i] > M->limit[i];
    for (int a = M->anchor_from; a < E->n_nodes; a++)
        if (!E->n[a].dead && E->n[a].kind == EE_OPS) x.anchors[E->n[a].op] = 1;
    mark_anchored(rs, x.cut, x.anchors, x.alive);
    for (int a = M->anchor_from; a < E->n_nodes && !x.stop; a++) {
        const ee_node *n = &E->n[a];
        if (n->dead || n->kind != EE_OPS) continue;
        for (uint32_t q = t->root[n->op]; q < t->root[n->op] + t->n_root[n->op] && !x.stop; q++) {
            if (!x.alive[t->kids[q]]) continue;
            for (int j = 0; j < RG_MAX_NODES; j++) x.nm[j] = -1;
            for (int i = 0; i < RG_MAX_INPUTS; i++) x.im[i] = -1;
            tree_step(&x, t->kids[q], a);
        }
    }
    free(x.alive), free(x.cut), free(x.tries);
    return M->oom ? EG_ENOMEM : EG_OK;
}

/* A conv with a 1x1 kernel pads SAME, however its pattern wrote it (the
 * two are one operator then), so equal e-nodes hash-cons. */
static void pad_1x1(const rg_node *dn, const ten_shape *in, const ten_shape *shape, ee_node *n) {
    const ten_shape *w = dn->op == OP_CONV2D ? (RG_IS_INPUT(dn->in[1]) ? &in[dn->in[1]] : &shape[dn->in[1]]) : NULL;
    if (w && eg_kernel_1x1(w)) n->param[1] = OPS_PAD_SAME;
}

eg_status ee_graph_node(const rg_graph *g, int j, const ten_shape *in, const ten_shape *shape, ee_node *n) {
    const rg_node *dn = &g->node[j];
    int32_t gval[RG_MAX_GSYMS] = {0};
    *n = (ee_node){.kind = EE_OPS, .op = dn->op, .ref = -1, .n_kid = ops_table[dn->op].arity, .rule = -1};
    /* as eg_dst_node_op: a group count only g writes from the shapes */
    if (rg_node_params(g, j, in, shape, gval, n->param) != RG_OK) return EG_ESHAPE;
    pad_1x1(dn, in, shape, n);
    return EG_OK;
}

eg_status ee_dst_node(const ee_graph *E, const eg_ruleset *rs, uint32_t rule, int j, const ee_match *m,
                      const ten_shape *in, const ten_shape *shape, ee_node *n) {
    const rdb_rule *r = &rs->rule[rule];
    const eg_plan *p = &rs->plan[rule];
    if (ee_graph_node(&r->dst, j, in, shape, n) != EG_OK) return EG_ESHAPE;
    /* the rule is counted once per application: on the node of its first output */
    if (m && r->dst.out[0] == RG_NODE(j)) n->rule = (int)rule;
    for (int k = 0; m && k < ops_table[n->op].n_params; k++) { /* a parameter src matched */
        signed char site = p->dst_site[j][k];
        if (site >= 0) n->param[k] = E->n[m->node[EG_SITE_NODE(site)]].param[EG_SITE_PARAM(site)];
    }
    pad_1x1(&r->dst.node[j], in, shape, n);
    return EG_OK;
}

eg_status ee_apply(ee_graph *E, const eg_ruleset *rs, const ee_match *m, int *changed) {
    const rdb_rule *r = &rs->rule[m->rule];
    ten_shape in[RG_MAX_INPUTS], shape[RG_MAX_REFS];
    int val[RG_MAX_REFS];
    if (!input_shapes(E, &r->src, m->input, in) || rg_infer_shapes(&r->dst, in, shape, NULL, 0) != RG_OK)
        return EG_ESHAPE;
    for (int i = 0; i < RG_MAX_INPUTS; i++) val[RG_IN(i)] = m->input[i];
    for (int j = 0; j < r->dst.n_nodes; j++) {
        const rg_node *dn = &r->dst.node[j];
        ee_node n;
        int kids[OPS_MAX_ARITY], added;
        if (ee_dst_node(E, rs, m->rule, j, m, in, shape, &n) != EG_OK) return EG_ESHAPE;
        for (int k = 0; k < n.n_kid; k++) kids[k] = val[dn->in[k]];
        int c = ee_add(E, &n, kids, &shape[RG_NODE(j)], &added);
        if (c < 0) return EG_ENOMEM;
        val[RG_NODE(j)] = c;
        *changed += added;
    }
    for (int k = 0; k < r->src.n_outputs; k++)
        *changed += ee_union(E, E->n[m->node[RG_NODE_INDEX(r->src.out[k])]].cls, val[r->dst.out[k]]);
    return EG_OK;
}
