/* kernel1.c - 1x1-kernel guards on rules (see kernel1.h). */
#include "kernel1.h"

#include <string.h>

static int reads_as_weight(const rg_graph *g, int i) {
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].op == OP_CONV2D && g->node[j].in[1] == RG_IN(i)) return 1;
    return 0;
}

uint32_t k1_inputs(const rdb_class *c) {
    uint32_t mask = 0;
    for (int i = 0; i < c->n_shapes && i < RG_MAX_INPUTS; i++) {
        const ten_shape *s = &c->shapes[i];
        if (s->rank != 4 || s->dim[2] != 1 || s->dim[3] != 1) continue;
        for (size_t m = 0; m < c->n_members; m++)
            if (reads_as_weight(&c->members[m], i)) {
                mask |= 1u << i;
                break;
            }
    }
    return mask;
}

/* The new reference of old reference r: a wrapped input's enlarge node,
 * a node shifted past the new ones, or an input as it was. */
static rg_ref moved(rg_ref r, const int *wrap_node, int shift) {
    if (!RG_IS_INPUT(r)) return RG_NODE(RG_NODE_INDEX(r) + shift);
    return wrap_node[r] >= 0 ? RG_NODE(wrap_node[r]) : r;
}

int k1_wrap(const rg_graph *g, uint32_t mask, rg_graph *out) {
    uint32_t read = 0;
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < ops_table[g->node[j].op].arity; k++)
            if (RG_IS_INPUT(g->node[j].in[k])) read |= 1u << g->node[j].in[k];
    for (int k = 0; k < g->n_outputs; k++)
        if (RG_IS_INPUT(g->out[k])) read |= 1u << g->out[k];
    mask &= read;
    *out = *g;
    if (!mask) return 0;
    int wrap_node[RG_MAX_INPUTS], u = 0;
    for (int i = 0; i < RG_MAX_INPUTS; i++) wrap_node[i] = mask >> i & 1 ? u++ : -1;
    if (g->n_nodes + u > RG_MAX_NODES) return -1;
    memset(out->node, 0, sizeof out->node);
    for (int i = 0; i < RG_MAX_INPUTS; i++) {
        if (wrap_node[i] < 0) continue;
        rg_node *e = &out->node[wrap_node[i]];
        e->op = OP_ENLARGE;
        e->param[0] = OPS_KERNEL(1, 1);
        e->in[0] = RG_IN(i);
    }
    for (int j = 0; j < g->n_nodes; j++) {
        rg_node *n = &out->node[j + u];
        *n = g->node[j];
        for (int k = 0; k < ops_table[n->op].arity; k++) n->in[k] = moved(n->in[k], wrap_node, u);
    }
    out->n_nodes = g->n_nodes + u;
    for (int k = 0; k < g->n_outputs; k++) out->out[k] = moved(g->out[k], wrap_node, u);
    return 1;
}
