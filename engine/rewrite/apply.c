/* apply.c - rewriting a match (eg_apply): clone the graph, add dst's
 * nodes, redirect the readers of src's outputs, keep graph output names,
 * drop src nodes nothing reads, toposort. And eg_apply_hash, the
 * structural hash of that graph without building it. (trial.c judges the
 * same rewrite's cost and token hash.) */
#include "rewrite/rules_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Add a tensor with a name no tensor or subgraph uses ("rw<N>"). */
static eg_status add_fresh_tensor(eg_graph *c, int *id) {
    char name[32];
    for (unsigned long i = (unsigned long)c->n_tensors;; i++) {
        snprintf(name, sizeof name, "rw%lu", i);
        if (eg_find_tensor(c, name) == -1) return eg_add_tensor(c, name, id);
    }
}

/* The shape of ref r: a rule input's or a dst node's. */
static const ten_shape *ref_shape(const ten_shape *in, const ten_shape *shape, rg_ref r) {
    return RG_IS_INPUT(r) ? &in[r] : &shape[r];
}

eg_status eg_dst_node_op(const eg_graph *g, const eg_plan *p, const rg_graph *dst, int j,
                         const eg_match *m, const ten_shape *in, const ten_shape *shape, eg_node *n) {
    const rg_node *dn = &dst->node[j];
    n->kind = EG_KIND_OPS;
    n->op = dn->op;
    int32_t value[OPS_MAX_PARAMS], gval[RG_MAX_GSYMS] = {0};
    /* sizes from the inputs' shapes; a group count only dst writes from its
     * conv's input shapes (shape[] holds dst's inputs: rg_infer_shapes) */
    if (rg_node_params(dst, j, in, shape, gval, value) != RG_OK) return EG_ESHAPE;
    for (int k = 0; k < ops_table[dn->op].n_params; k++) /* free: the value the match gave it */
        n->param[k] = p->dst_site[j][k] >= 0 ? eg_site_value(g, m->node, p->dst_site[j][k]) : value[k];
    if (dn->op == OP_CONV2D && eg_kernel_1x1(ref_shape(in, shape, dn->in[1]))) n->param[1] = OPS_PAD_SAME;
    return EG_OK;
}

/* Add dst's nodes to c reading the bound inputs; val[ref] receives the
 * tensor of each dst value. @return EG_OK, EG_ESHAPE or EG_ENOMEM. */
static eg_status add_dst(eg_graph *c, const eg_plan *p, const rg_graph *dst, const eg_match *m,
                         const ten_shape *in, const ten_shape *shape, int val[RG_MAX_REFS]) {
    for (int i = 0; i < RG_MAX_INPUTS; i++) val[RG_IN(i)] = m->input[i];
    for (int j = 0; j < dst->n_nodes; j++) {
        const rg_node *dn = &dst->node[j];
        int t, id;
        eg_status rc = add_fresh_tensor(c, &t);
        if (rc == EG_OK)
            rc = eg_add_node(c, EG_KIND_OPS, c->tensor[t].name, ops_table[dn->op].arity, 0, 1, &id);
        if (rc != EG_OK) return rc;
        c->tensor[t].dtype = EG_DT_FLOAT;
        eg_from_ten_shape(&shape[RG_NODE(j)], &c->tensor[t].shape);
        eg_node *n = &c->node[id];
        rc = eg_dst_node_op(c, p, dst, j, m, in, shape, n);
        if (rc != EG_OK) return rc;
        for (int k = 0; k < ops_table[dn->op].arity; k++) {
            n->in[k] = val[dn->in[k]];
            c->tensor[t].flags |= c->tensor[n->in[k]].flags & EG_TF_NONFINITE;
        }
        n->out[0] = t;
        val[RG_NODE(j)] = t;
    }
    return EG_OK;
}

/* Swap the names of tensors a and b (and their entries in the name map). */
static eg_status swap_names(eg_graph *c, int a, int b) {
    char *tmp = c->tensor[a].name;
    c->tensor[a].name = c->tensor[b].name;
    c->tensor[b].name = tmp;
    if (eg_names_set(c->names, c->tensor[a].name, a) != EG_OK ||
        eg_names_set(c->names, c->tensor[b].name, b) != EG_OK)
        return EG_ENOMEM;
    return EG_OK;
}

/* o (a graph output or pinned name) is replaced by n: give the value n
 * holds o's name, through an Identity node unless n is a fresh dst tensor
 * not renamed yet (renamed[] marks those). */
static eg_status keep_name(eg_graph *c, int o, int n, int n_old_tensors, unsigned char *renamed) {
    int v = n;
    eg_status rc = EG_OK;
    if (n < n_old_tensors || renamed[n - n_old_tensors]) {
        int id;
        rc = add_fresh_tensor(c, &v);
        if (rc == EG_OK) rc = eg_add_node(c, EG_KIND_MODEL, c->tensor[v].name, 1, 0, 1, &id);
        if (rc != EG_OK) return rc;
        c->node[id].mop = EG_MOP_IDENTITY;
        c->node[id].in[0] = n;
        c->node[id].out[0] = v;
        c->tensor[v].dtype = c->tensor[n].dtype;
        c->tensor[v].shape = c->tensor[n].shape;
        c->tensor[v].flags |= c->tensor[n].flags & EG_TF_NONFINITE;
    } else {
        renamed[n - n_old_tensors] = 1;
    }
    unsigned keep = c->tensor[o].flags & (EG_TF_OUTPUT | EG_TF_PINNED);
    c->tensor[o].flags &= ~keep;
    c->tensor[v].flags |= keep;
    for (int q = 0; q < c->n_outputs; q++)
        if (c->output[q] == o) c->output[q] = v;
    return swap_names(c, o, v);
}

/* Readers of o outside the match (old nodes not matched) read n instead. */
static void redirect(eg_graph *c, const eg_match *m, int n_old_nodes, int o, int n) {
    for (int j = 0; j < n_old_nodes; j++) {
        int matched = 0;
        for (int q = 0; q < m->n_nodes && !matched; q++) matched = m->node[q] == j;
        if (matched) continue;
        eg_node *nd = &c->node[j];
        for (int k = 0; k < nd->n_in + nd->n_implicit; k++)
            if (nd->in[k] == o) nd->in[k] = n;
    }
}

/* Drop the matched nodes nothing reads any more, last src node first. */
static eg_status drop_unused(eg_graph *c, const eg_match *m, char *err, size_t errlen) {
    int *uses = malloc(sizeof *uses * (size_t)c->n_tensors);
    unsigned char *drop = calloc((size_t)c->n_nodes, 1);
    eg_status rc = uses && drop ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) {
        eg_count_uses(c, uses);
        for (int j = m->n_nodes - 1; j >= 0; j--) {
            const eg_node *n = &c->node[m->node[j]];
            if (uses[n->out[0]] > 0) continue;
            drop[m->node[j]] = 1;
            for (int k = 0; k < n->n_in; k++) uses[n->in[k]]--;
        }
        rc = eg_remove_nodes(c, drop, err, errlen);
    }
    free(uses);
    free(drop);
    return rc;
}

/* The rewrite itself on the clone c. */
static eg_status rewrite(const rdb_rule *r, const eg_plan *p, const eg_graph *g, const eg_match *m,
                         eg_graph *c, char *err, size_t errlen) {
    ten_shape in[RG_MAX_INPUTS], shape[RG_MAX_REFS];
    int val[RG_MAX_REFS];
    memset(in, 0, sizeof in);
    for (int i = 0; i < r->src.n_inputs; i++) /* unbound: an input no side reads */
        if (m->input[i] >= 0) eg_to_ten_shape(&g->tensor[m->input[i]].shape, &in[i]);
    if (rg_infer_shapes(&r->dst, in, shape, err, errlen) != RG_OK) return EG_ESHAPE;
    eg_status rc = add_dst(c, p, &r->dst, m, in, shape, val);
    if (rc != EG_OK) return eg_errf(err, errlen, rc, "out of memory or a bad size");
    unsigned char renamed[RG_MAX_NODES] = {0};
    for (int k = 0; rc == EG_OK && k < r->src.n_outputs; k++) {
        int o = g->node[m->node[RG_NODE_INDEX(r->src.out[k])]].out[0], n = val[r->dst.out[k]];
        redirect(c, m, g->n_nodes, o, n);
        if (c->tensor[o].flags & (EG_TF_OUTPUT | EG_TF_PINNED))
            rc = keep_name(c, o, n, g->n_tensors, renamed);
    }
    if (rc != EG_OK) return eg_errf(err, errlen, rc, "out of memory");
    /* no shape inference: dst's shapes are the rule's (rg_infer_shapes),
     * which the match checked against src's outputs, and nothing else
     * changed shape */
    rc = drop_unused(c, m, err, errlen);
    if (rc == EG_OK) rc = eg_toposort(c, err, errlen);
    return rc;
}

eg_status eg_apply(const eg_ruleset *rs, const eg_graph *g, const eg_match *m, eg_graph **out,
                   char *err, size_t errlen) {
    *out = NULL;
    eg_status rc = eg_match_check(rs, g, m, err, errlen);
    if (rc != EG_OK) return rc;
    eg_graph *c = eg_graph_clone(g);
    if (!c) return eg_errf(err, errlen, EG_ENOMEM, "out of memory");
    rc = rewrite(&rs->rule[m->rule], &rs->plan[m->rule], g, m, c, err, errlen);
    if (rc != EG_OK) {
        eg_free(c);
        return rc;
    }
    *out = c;
    return EG_OK;
}

/* ================= the hash of a rewrite, predicted ================= */

struct eg_hash_ctx {
    const eg_graph *g;
    uint64_t *th;  /* eg_tensor_hashes of g */
    uint64_t *th2; /* the same after a rewrite (scratch) */
    uint64_t *oh;  /* graph output hashes (scratch) */
    uint64_t *buf; /* a node's input hashes (scratch) */
    unsigned char *changed, *matched;
};

eg_hash_ctx *eg_hash_ctx_new(const eg_graph *g) {
    size_t nt = (size_t)g->n_tensors + 1, nn = (size_t)g->n_nodes + 1, no = (size_t)g->n_outputs + 1;
    size_t max_in = (size_t)eg_max_inputs(g);
    eg_hash_ctx *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->g = g;
    x->th = malloc(sizeof *x->th * (2 * nt + no + max_in));
    x->changed = calloc(nt + nn, 1);
    if (!x->th || !x->changed || eg_tensor_hashes(g, x->th)) {
        eg_hash_ctx_free(x);
        return NULL;
    }
    x->th2 = x->th + nt, x->oh = x->th2 + nt, x->buf = x->oh + no;
    x->matched = x->changed + nt;
    return x;
}

void eg_hash_ctx_free(eg_hash_ctx *x) {
    if (!x) return;
    free(x->th);
    free(x->changed);
    free(x);
}

/* The hash of dst node j given the hashes vh of the values it reads. */
static eg_status dst_hash(const eg_graph *g, const rdb_rule *r, const eg_plan *p, int j, const eg_match *m,
                          const ten_shape *in, const ten_shape *shape, uint64_t vh[RG_MAX_REFS]) {
    const rg_node *dn = &r->dst.node[j];
    eg_node n;
    memset(&n, 0, sizeof n);
    if (eg_dst_node_op(g, p, &r->dst, j, m, in, shape, &n) != EG_OK) return EG_ESHAPE;
    n.n_in = ops_table[dn->op].arity, n.n_out = 1;
    eg_shape s0;
    eg_from_ten_shape(ref_shape(in, shape, dn->in[0]), &s0);
    if (eg_enlarge_is_identity(&n, &s0)) {
        vh[RG_NODE(j)] = vh[dn->in[0]];
        return EG_OK;
    }
    uint64_t ih[OPS_MAX_ARITY];
    for (int k = 0; k < n.n_in; k++) ih[k] = vh[dn->in[k]];
    vh[RG_NODE(j)] = eg_node_hash(&n, ih, 0);
    return EG_OK;
}

/* The hash of the Identity node keep_name adds to give a value a graph
 * output's name. */
static uint64_t identity_hash(uint64_t in) {
    eg_node n;
    memset(&n, 0, sizeof n);
    n.kind = EG_KIND_MODEL, n.mop = EG_MOP_IDENTITY, n.n_in = 1, n.n_out = 1;
    return eg_node_hash(&n, &in, 0);
}

/* Propagate a rewrite through g: src output k's tensor takes hash oh_k
 * and the reach mask omask[k]; every node downstream (matched nodes
 * excepted: they go) gets its hash again and the union of its inputs'
 * masks. x->th2, x->changed hold the result. */
static void propagate(eg_hash_ctx *x, const rdb_rule *r, const eg_match *m, const uint64_t *oh,
                      const unsigned char *omask) {
    const eg_graph *g = x->g;
    memcpy(x->th2, x->th, sizeof *x->th * (size_t)g->n_tensors);
    memset(x->changed, 0, (size_t)g->n_tensors);
    int first = g->n_nodes;
    for (int q = 0; q < m->n_nodes; q++) {
        x->matched[m->node[q]] = 1;
        if (m->node[q] < first) first = m->node[q];
    }
    for (int k = 0; k < r->src.n_outputs; k++) {
        int o = g->node[m->node[RG_NODE_INDEX(r->src.out[k])]].out[0];
        x->th2[o] = oh[k];
        x->changed[o] = omask[k];
    }
    for (int j = first + 1; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        unsigned char mask = 0;
        for (int k = 0; k < n->n_in + n->n_implicit; k++) mask |= n->in[k] >= 0 ? x->changed[n->in[k]] : 0;
        if (x->matched[j] || !mask) continue;
        eg_node_out_hashes(g, n, x->th2, x->buf);
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) x->changed[n->out[k]] = mask;
    }
    for (int q = 0; q < m->n_nodes; q++) x->matched[m->node[q]] = 0;
}

/* A multi-output rule can feed one output's readers into a rule input
 * another dst output reads: then that input's hash changes with the
 * rewrite, and dst's hashes with it. So the hashes are found by rounds:
 * dst from the inputs' hashes, the graph from dst's, until the inputs'
 * hashes settle (each round settles one more output; a DAG settles in at
 * most one round per output). Reach masks (bit k: depends on src output
 * k after the rewrite) go round the same way; dst output k depending on a
 * rule input that output k reaches is a cycle. */
eg_status eg_apply_hash(const eg_ruleset *rs, eg_hash_ctx *x, const eg_match *m, uint64_t *hash) {
    const eg_graph *g = x->g;
    const rdb_rule *r = &rs->rule[m->rule];
    const eg_plan *p = &rs->plan[m->rule];
    ten_shape in[RG_MAX_INPUTS], shape[RG_MAX_REFS];
    uint64_t vh[RG_MAX_REFS], oh[RG_MAX_OUTPUTS];
    unsigned char imask[RG_MAX_INPUTS] = {0}, omask[RG_MAX_OUTPUTS], deps[RG_MAX_REFS] = {0};
    memset(in, 0, sizeof in);
    for (int i = 0; i < r->src.n_inputs; i++) /* a matched node's own output as a rule input */
        for (int q = 0; m->input[i] >= 0 && q < m->n_nodes; q++)
            if (g->node[m->node[q]].out[0] == m->input[i]) return EG_EUNSUPPORTED;
    for (int i = 0; i < RG_MAX_INPUTS; i++) {
        vh[RG_IN(i)] = m->input[i] >= 0 ? x->th[m->input[i]] : (uint64_t)-1;
        deps[RG_IN(i)] = (unsigned char)(1u << i);
        if (i < r->src.n_inputs && m->input[i] >= 0) eg_to_ten_shape(&g->tensor[m->input[i]].shape, &in[i]);
    }
    if (rg_infer_shapes(&r->dst, in, shape, NULL, 0) != RG_OK) return EG_ESHAPE;
    for (int j = 0; j < r->dst.n_nodes; j++) /* deps: the rule inputs each dst value reads */
        for (int k = 0; k < ops_table[r->dst.node[j].op].arity; k++) deps[RG_NODE(j)] |= deps[r->dst.node[j].in[k]];
    for (int round = 0;; round++) {
        for (int j = 0; j < r->dst.n_nodes; j++)
            if (dst_hash(g, r, p, j, m, in, shape, vh) != EG_OK) return EG_ESHAPE;
        for (int k = 0; k < r->src.n_outputs; k++) {
            rg_ref v = r->dst.out[k];
            oh[k] = vh[v];
            omask[k] = (unsigned char)(1u << k);
            for (int i = 0; i < r->src.n_inputs; i++)
                if (deps[v] >> i & 1) omask[k] |= imask[i];
        }
        propagate(x, r, m, oh, omask);
        int settled = 1;
        for (int i = 0; i < r->src.n_inputs; i++) {
            int t = m->input[i];
            if (t < 0 || !x->changed[t]) continue;
            for (int k = 0; k < r->src.n_outputs; k++)
                if ((x->changed[t] >> k & 1) && (deps[r->dst.out[k]] >> i & 1)) return EG_EGRAPH;
            settled &= x->th2[t] == vh[RG_IN(i)] && x->changed[t] == imask[i];
            vh[RG_IN(i)] = x->th2[t], imask[i] = x->changed[t];
        }
        if (settled) break;
        if (round > 2 * RG_MAX_OUTPUTS) return EG_EGRAPH; /* cannot happen in a DAG */
    }

    /* graph outputs: a src output that was one keeps its name (keep_name) */
    for (int q = 0; q < g->n_outputs; q++) x->oh[q] = x->th2[g->output[q]];
    unsigned char renamed[RG_MAX_NODES] = {0};
    for (int k = 0; k < r->src.n_outputs; k++) {
        int o = g->node[m->node[RG_NODE_INDEX(r->src.out[k])]].out[0];
        rg_ref v = r->dst.out[k];
        if (!(g->tensor[o].flags & (EG_TF_OUTPUT | EG_TF_PINNED))) continue;
        uint64_t h = vh[v];
        if (RG_IS_INPUT(v) || renamed[RG_NODE_INDEX(v)]) h = identity_hash(h);
        else renamed[RG_NODE_INDEX(v)] = 1;
        for (int q = 0; q < g->n_outputs; q++)
            if (g->output[q] == o) x->oh[q] = h;
    }
    *hash = eg_outputs_hash(g, x->oh);
    return EG_OK;
}
