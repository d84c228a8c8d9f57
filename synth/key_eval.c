/* key_eval.c - evaluation for the key: a slot graph's shapes, the leaf
 * tensors of an assignment or binding, and node values on every trial. */
#include "key.h"

#include "gpu.h"
#include "key_int.h"

/* ---- evaluation ---- */

/* One node: out = op(in0, in1) with the reference semantics (or, for
 * element-wise operators on the CUDA backend, the same cell arithmetic on
 * the device). */
static key_status eval_trial(key_ctx *c, ops_op op, const int32_t *p, ten *in0, ten *in1, ten *o) {
    const ten *in[2] = {in0, in1};
    if (c->cuda && gpu_is_ewise(op)) {
        char err[GPU_ERRLEN];
        return gpu_ewise(op, in0->data, in1->data, o->data, ten_numel(&o->shape), err) == GPU_OK
                   ? KEY_OK : KEY_EDEV;
    }
    return ops_eval(op, p, in, o) == OPS_OK ? KEY_OK : KEY_ENOMEM;
}

/* Every trial: the samples lie one after the other. */
key_status key__eval_node(key_ctx *c, ops_op op, const int32_t *p, const ten_shape *s0,
                          const uint64_t *d0, const ten_shape *s1, const uint64_t *d1,
                          const ten_shape *so, uint64_t *out) {
    int64_t n0 = ten_numel(s0), n1 = d1 ? ten_numel(s1) : 0, no = ten_numel(so);
    c->evals++;
    if (c->cuda && gpu_is_ewise(op) && op != OP_SMUL) {
        /* the trials lie one after the other in every operand alike: one
         * device call for all of them (smul's scalar differs per trial) */
        char err[GPU_ERRLEN];
        return gpu_ewise(op, d0, d1, out, no * POOL_TRIALS, err) == GPU_OK ? KEY_OK : KEY_EDEV;
    }
    for (int t = 0; t < POOL_TRIALS; t++) {
        ten in0 = {*s0, (uint64_t *)d0 + t * n0}, in1 = {*s1, d1 ? (uint64_t *)d1 + t * n1 : NULL};
        ten o = {*so, out + t * no};
        key_status st = eval_trial(c, op, p, &in0, &in1, &o);
        if (st != KEY_OK) return st;
    }
    return KEY_OK;
}

const ten_shape *key__type_shape(const key_ctx *c, int t) {
    return &c->pool->var[c->pool->first[t]].shape;
}

/* Leaf tensors of one assignment: 0 = all base, 1 + s = slot s probed. */
void key__assign_leaves(const key_ctx *c, int n_slots, const uint8_t *type, int a,
                        const uint64_t *leaf[SG_NODE_REF]) {
    for (int s = 0; s < n_slots; s++)
        leaf[s] = (a == 1 + s ? c->pool->probe[type[s]] : c->pool->base[type[s]]).data;
}

void key__label_leaves(const key_ctx *c, int n_slots, const uint8_t *lab,
                       const uint64_t *leaf[SG_NODE_REF]) {
    for (int s = 0; s < n_slots; s++) leaf[s] = c->pool->var[lab[s]].data;
}

key_status key__graph_shapes(key_ctx *c, const sg_graph *g, int n_leaves,
                             const uint8_t *leaf_type, gshape *gs) {
    for (int s = 0; s < n_leaves; s++) {
        gs->shape[s] = c->pool->shape[leaf_type[s]];
        gs->tshape[s] = *key__type_shape(c, leaf_type[s]);
    }
    if (sg_shapes(g, c->dom, &c->memo, gs->shape, gs->param, gs->bound) != 0) return KEY_SKIP;
    for (int j = 0; j < g->n_nodes; j++) {
        if (dom_numel(gs->shape[SG_NODE(j)]) > KEY_MAX_NUMEL) return KEY_SKIP;
        dom_unpack(gs->shape[SG_NODE(j)], &gs->tshape[SG_NODE(j)]);
    }
    return KEY_OK;
}

/* Evaluate node j of g into dst; val[] (node values) and leaf[] (leaf
 * values) supply the inputs; val[j] = dst afterwards. */
key_status key__eval_at(key_ctx *c, const sg_graph *g, const ten_shape *tshape,
                        const int32_t (*param)[OPS_MAX_PARAMS], int j,
                        const uint64_t *const *leaf, const uint64_t **val, uint64_t *dst) {
    const sg_node *n = &g->node[j];
    const uint64_t *d[2] = {NULL, NULL};
    for (int k = 0; k < ops_table[n->op].arity; k++)
        d[k] = SG_IS_NODE(n->in[k]) ? val[SG_NODE_IDX(n->in[k])] : leaf[n->in[k]];
    key_status st = key__eval_node(c, (ops_op)n->op, param[j], &tshape[n->in[0]], d[0],
                                   &tshape[n->in[1]], d[1], &tshape[SG_NODE(j)], dst);
    val[j] = dst;
    return st;
}

/* Evaluate nodes j0.. of g into dst[j] (see key__eval_at). */
key_status key__eval_nodes(key_ctx *c, const sg_graph *g, const ten_shape *tshape,
                           const int32_t (*param)[OPS_MAX_PARAMS], int j0,
                           const uint64_t *const *leaf, const uint64_t **val,
                           uint64_t *const *dst) {
    for (int j = j0; j < g->n_nodes; j++) {
        key_status st = key__eval_at(c, g, tshape, param, j, leaf, val, dst[j]);
        if (st != KEY_OK) return st;
    }
    return KEY_OK;
}
