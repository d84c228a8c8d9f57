/* apply.c - rewriting a match (eg_apply): clone the graph, add dst's
 * nodes, redirect the readers of src's outputs, keep graph output names,
 * drop src nodes nothing reads, toposort. (trial.c judges the same
 * rewrite without building it.) */
#include "rules_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static eg_status a_fail(eg_status rc, char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return rc;
}

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
    for (int k = 0; k < ops_table[dn->op].n_params; k++) {
        if (p->dst_site[j][k] >= 0) { /* free: the value the match gave it */
            n->param[k] = eg_site_value(g, m->node, p->dst_site[j][k]);
            continue;
        }
        if (rg_param_value(dst, j, k, in, &n->param[k]) != RG_OK) return EG_ESHAPE;
    }
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
        for (int k = 0; k < ops_table[dn->op].arity; k++) n->in[k] = val[dn->in[k]];
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
    if (rc != EG_OK) return a_fail(rc, err, errlen, "out of memory or a bad size");
    unsigned char renamed[RG_MAX_NODES] = {0};
    for (int k = 0; rc == EG_OK && k < r->src.n_outputs; k++) {
        int o = g->node[m->node[RG_NODE_INDEX(r->src.out[k])]].out[0], n = val[r->dst.out[k]];
        redirect(c, m, g->n_nodes, o, n);
        if (c->tensor[o].flags & (EG_TF_OUTPUT | EG_TF_PINNED))
            rc = keep_name(c, o, n, g->n_tensors, renamed);
    }
    if (rc != EG_OK) return a_fail(rc, err, errlen, "out of memory");
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
    if (!c) return a_fail(EG_ENOMEM, err, errlen, "out of memory");
    rc = rewrite(&rs->rule[m->rule], &rs->plan[m->rule], g, m, c, err, errlen);
    if (rc != EG_OK) {
        eg_free(c);
        return rc;
    }
    *out = c;
    return EG_OK;
}
