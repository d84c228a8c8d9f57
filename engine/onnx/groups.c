/* groups.c - the export's node groups (groups.h), for the export and the
 * cost model alike. */
#include "onnx/groups.h"

/* A value that is not written or read otherwise: one use, not a graph
 * output, not pinned. */
static int internal_once(const eg_graph *g, const int *uses, int t) {
    return uses[t] == 1 && !(g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED));
}

int eg_layernorm_of(const eg_graph *g, const int *uses, int j) {
    const eg_node *n = &g->node[j];
    if (n->kind != EG_KIND_OPS || (n->op != OP_SCALE && n->op != OP_BIAS)) return -1;
    int t = n->in[0], p = t >= 0 ? g->tensor[t].producer : -1;
    if (p < 0 || uses[t] != 1 || n->in[1] == t || (g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED)))
        return -1;
    const eg_node *m = &g->node[p];
    if (m->kind != EG_KIND_OPS || m->param[0] != n->param[0]) return -1;
    if (n->op == OP_SCALE) return m->op == OP_LAYERNORM ? p : -1;
    return m->op == OP_SCALE ? eg_layernorm_of(g, uses, p) : -1;
}

int eg_gemm_of(const eg_graph *g, const int *uses, int j) {
    const eg_node *b = &g->node[j];
    if (g->opset < 7 || b->kind != EG_KIND_OPS || b->op != OP_BIAS || b->param[0] != 1 || b->in[0] < 0) return -1;
    int t = b->in[0], p = g->tensor[t].producer;
    if (p < 0 || g->tensor[t].shape.rank != 2 || !internal_once(g, uses, t) || b->in[1] == t) return -1;
    const eg_node *m = &g->node[p];
    return m->kind == EG_KIND_OPS && m->op == OP_MATMUL && m->in[1] != b->in[1] ? p : -1;
}

int eg_conv_bias_of(const eg_graph *g, const int *uses, int j) {
    const eg_node *b = &g->node[j];
    if (b->kind != EG_KIND_OPS || b->op != OP_BIAS || b->param[0] != 1 || b->in[0] < 0) return -1;
    int t = b->in[0], p = g->tensor[t].producer;
    if (p < 0 || uses[t] != 1 || (g->tensor[t].flags & EG_TF_OUTPUT) || b->in[1] == t) return -1;
    const eg_node *c = &g->node[p];
    return c->kind == EG_KIND_OPS && c->op == OP_CONV2D && c->param[2] == OPS_ACT_NONE ? p : -1;
}

int eg_concat_inside(const eg_graph *g, const int *uses, int o, int k) {
    const eg_node *n = &g->node[o];
    int t = n->in[k], p = t >= 0 ? g->tensor[t].producer : -1;
    return n->kind == EG_KIND_OPS && n->op == OP_CONCAT && p >= 0 && g->node[p].kind == EG_KIND_OPS &&
           g->node[p].op == OP_CONCAT && g->node[p].param[0] == n->param[0] && internal_once(g, uses, t) &&
           n->in[1 - k] != t;
}

/* A constant vector of n floats: an initializer with its data (not a
 * default a caller may replace), or a value the built-ins will fold (wo). */
static int const_vec(const eg_graph *g, const unsigned char *wo, int v, int64_t n) {
    if (v < 0) return 0;
    const eg_tensor *x = &g->tensor[v];
    if (eg_float_vec(g, v, n)) return !eg_replaceable(g, v);
    return wo && x->producer >= 0 && wo[x->producer] && x->shape.rank == 1 && x->shape.dim[0] == n;
}

int eg_bn_pair_of(const eg_graph *g, const int *uses, const unsigned char *wo, int j) {
    const eg_node *b = &g->node[j];
    if (g->opset < 9 || b->kind != EG_KIND_OPS || b->op != OP_BIAS || b->param[0] != 1 || b->in[0] < 0) return -1;
    int t = b->in[0], p = g->tensor[t].producer;
    const eg_node *s = p >= 0 ? &g->node[p] : NULL;
    if (!s || s->kind != EG_KIND_OPS || s->op != OP_SCALE || s->param[0] != 1 || s->in[0] < 0 ||
        !internal_once(g, uses, t) || g->tensor[s->in[0]].shape.rank < 2)
        return -1;
    int64_t n = g->tensor[s->in[0]].shape.dim[1];
    return const_vec(g, wo, s->in[1], n) && const_vec(g, wo, b->in[1], n) ? p : -1;
}
