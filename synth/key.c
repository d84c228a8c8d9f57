/* key.c - the key ctx and the two sources alignment runs on: a whole slot
 * graph (key_graph) and a cached parent plus one node (key_extend); see key.h. */
#include "key.h"

#include <stdlib.h>
#include <string.h>

#include "key_int.h"

/* ---- the ctx ---- */

key_ctx *key_ctx_new(const pool *p, const dom *d, int backend_cuda) {
    key_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->pool = p, c->dom = d, c->cuda = backend_cuda;
    dom_memo_init(&c->memo);
    int ok = 1;
    for (int a = 0; a < KEY_N_ASSIGN; a++) {
        ok &= (c->sig[a] = malloc(KEY_MAX_BYTES)) != NULL;
        ok &= (c->newval[a] = malloc(KEY_MAX_CELLS * 8)) != NULL;
    }
    for (int j = 0; j < SG_MAX_NODES; j++) ok &= (c->full[j] = malloc(KEY_MAX_CELLS * 8)) != NULL;
    ok &= (c->best = malloc(KEY_MAX_BYTES)) != NULL;
    ok &= (c->cur = malloc(KEY_MAX_BYTES)) != NULL;
    ok &= (c->newlab = malloc(KEY_MAX_CELLS * 8)) != NULL;
    if (!ok) {
        key_ctx_free(c);
        return NULL;
    }
    return c;
}

void key_ctx_free(key_ctx *c) {
    if (!c) return;
    for (int a = 0; a < KEY_N_ASSIGN; a++) free(c->sig[a]), free(c->newval[a]);
    for (int j = 0; j < SG_MAX_NODES; j++) free(c->full[j]);
    free(c->best), free(c->cur), free(c->newlab);
    for (size_t i = 0; i < c->ar.n_chunks; i++) free(c->ar.chunk[i]);
    free(c->ar.chunk);
    free(c);
}

dom_memo *key_memo(key_ctx *c) { return &c->memo; }

uint64_t key_node_evals(const key_ctx *c) { return c->evals; }

/* ---- whole-graph source ---- */

typedef struct {
    gshape gs;
    const uint64_t *val[SG_MAX_NODES];
} full_src;

static void full_outputs(key_ctx *c, src *s, const uint64_t *const *leaf,
                         const uint64_t *out[SG_MAX_OUT]) {
    full_src *f = s->impl;
    (void)c;
    for (int k = 0; k < s->g->n_out; k++) {
        uint8_t r = s->g->out[k];
        out[k] = SG_IS_NODE(r) ? f->val[SG_NODE_IDX(r)] : leaf[r];
    }
}

static key_status full_assign(key_ctx *c, src *s, int a, const uint64_t *out[SG_MAX_OUT]) {
    full_src *f = s->impl;
    const uint64_t *leaf[SG_NODE_REF];
    key__assign_leaves(c, s->n_slots, s->slot_type, a, leaf);
    key_status st = key__eval_nodes(c, s->g, f->gs.tshape, f->gs.param, 0, leaf, f->val, c->full);
    if (st == KEY_OK) full_outputs(c, s, leaf, out);
    return st;
}

static key_status full_bind(key_ctx *c, src *s, const uint8_t *lab, const uint64_t *out[SG_MAX_OUT]) {
    full_src *f = s->impl;
    const uint64_t *leaf[SG_NODE_REF];
    key__label_leaves(c, s->n_slots, lab, leaf);
    key_status st = key__eval_nodes(c, s->g, f->gs.tshape, f->gs.param, 0, leaf, f->val, c->full);
    if (st == KEY_OK) full_outputs(c, s, leaf, out);
    return st;
}

key_status key_graph(key_ctx *c, const sg_graph *g, int n_slots, const uint8_t *slot_type,
                     key_result *r) {
    full_src f;
    src s = {g, n_slots, slot_type, {0, 0}, full_assign, full_bind, &f};
    key_status st = key__graph_shapes(c, g, n_slots, slot_type, &f.gs);
    if (st != KEY_OK) return st;
    for (int k = 0; k < g->n_out; k++) s.out_shape[k] = f.gs.shape[g->out[k]];
    return key__align(c, &s, r);
}

/* ---- incremental source: a parent plus one node ---- */

typedef struct {
    key_parent *P;
    const key_ext *e;
    int idx;       /* the new node's index */
    uint64_t cone; /* leaves and nodes it reads */
    ten_shape ts;
} ext_src;

static const ten_shape *ext_tshape(key_ctx *c, const ext_src *x, uint8_t r) {
    return SG_IS_NODE(r) ? &x->P->tshape[r] : key__type_shape(c, x->e->slot_type[r]);
}

static key_status ext_eval(key_ctx *c, const ext_src *x, const uint64_t *const *leaf,
                           const uint64_t *const *nodeval, uint64_t *dst) {
    const sg_node *n = &x->e->n;
    const uint64_t *d[2] = {NULL, NULL};
    for (int k = 0; k < ops_table[n->op].arity; k++)
        d[k] = SG_IS_NODE(n->in[k]) ? nodeval[SG_NODE_IDX(n->in[k])] : leaf[n->in[k]];
    return key__eval_node(c, (ops_op)n->op, x->e->param, ext_tshape(c, x, n->in[0]), d[0],
                          ext_tshape(c, x, n->in[1]), d[1], &x->ts, dst);
}

static void ext_outputs(const ext_src *x, const uint64_t *const *nodeval, const uint64_t *newv,
                        const uint64_t *out[SG_MAX_OUT]) {
    for (int k = 0; k < x->e->n_sinks; k++) {
        uint8_t r = x->e->sink[k];
        out[k] = SG_NODE_IDX(r) == x->idx ? newv : nodeval[SG_NODE_IDX(r)];
    }
}

static key_status ext_assign(key_ctx *c, src *s, int a, const uint64_t *out[SG_MAX_OUT]) {
    ext_src *x = s->impl;
    int pa = a > 0 && a - 1 >= x->P->n_slots ? 0 : a; /* new slots: parent at base */
    const uint64_t *const *nodeval = x->P->val[pa];
    if (a == 0 || (x->cone & SG_BIT(a - 1))) {
        const uint64_t *leaf[SG_NODE_REF];
        key__assign_leaves(c, x->e->n_slots, x->e->slot_type, a, leaf);
        key_status st = ext_eval(c, x, leaf, nodeval, c->newval[a]);
        if (st != KEY_OK) return st;
        ext_outputs(x, nodeval, c->newval[a], out);
    } else {
        ext_outputs(x, nodeval, c->newval[0], out);
    }
    return KEY_OK;
}

static key_status ext_bind(key_ctx *c, src *s, const uint8_t *lab, const uint64_t *out[SG_MAX_OUT]) {
    ext_src *x = s->impl;
    const uint64_t *nodeval[SG_MAX_NODES], *leaf[SG_NODE_REF];
    key_status st = key__labelled(c, x->P, lab, nodeval);
    if (st != KEY_OK) return st;
    key__label_leaves(c, x->e->n_slots, lab, leaf);
    if ((st = ext_eval(c, x, leaf, nodeval, c->newlab)) != KEY_OK) return st;
    ext_outputs(x, nodeval, c->newlab, out);
    return KEY_OK;
}

key_status key_extend(key_ctx *c, key_parent *P, const key_ext *e, key_result *r) {
    int idx = P->g.n_nodes;
    if (idx >= SG_MAX_NODES || dom_numel(e->shape) > KEY_MAX_NUMEL) return KEY_SKIP;
    sg_graph g = P->g;
    g.node[idx] = e->n;
    g.n_nodes = (uint8_t)(idx + 1), g.n_out = (uint8_t)e->n_sinks;
    ext_src x = {P, e, idx, 0, {0, {0}}};
    src s = {&g, e->n_slots, e->slot_type, {0, 0}, ext_assign, ext_bind, &x};
    dom_unpack(e->shape, &x.ts);
    for (int k = 0; k < ops_table[e->n.op].arity; k++) {
        uint8_t in = e->n.in[k];
        x.cone |= SG_IS_NODE(in) ? P->cone[in] : SG_BIT(in);
    }
    for (int k = 0; k < e->n_sinks; k++) {
        g.out[k] = e->sink[k];
        s.out_shape[k] = SG_NODE_IDX(e->sink[k]) == idx ? e->shape : P->shape[e->sink[k]];
    }
    return key__align(c, &s, r);
}
