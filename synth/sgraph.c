/* sgraph.c - compact graphs: cones, sinks, shapes, canonical order and the
 * conversion to rule graphs (see sgraph.h). */
#include "sgraph.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

int sg_compare(const sg_graph *a, const sg_graph *b) { return memcmp(a, b, sizeof *a); }

uint32_t sg_vars(const sg_graph *g) {
    uint32_t m = 0;
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < ops_table[g->node[j].op].arity; k++)
            if (!SG_IS_NODE(g->node[j].in[k])) m |= 1u << g->node[j].in[k];
    for (int k = 0; k < g->n_out; k++)
        if (!SG_IS_NODE(g->out[k])) m |= 1u << g->out[k];
    return m;
}

uint64_t sg_hash(const sg_graph *g) { return XXH3_64bits(g, sizeof *g); }

uint64_t sg_cone(const sg_graph *g, uint8_t r) {
    if (!SG_IS_NODE(r)) return SG_BIT(r);
    const sg_node *n = &g->node[SG_NODE_IDX(r)];
    uint64_t m = SG_BIT(r);
    for (int k = 0; k < ops_table[n->op].arity; k++) m |= sg_cone(g, n->in[k]);
    return m;
}

/* ---- split points ---- */

static void no_bound(sg_bound *b) {
    for (int a = 0; a < TEN_MAX_RANK; a++) b->size[a] = 0, b->leaf[a] = -1, b->axis[a] = 0;
}

static void take(sg_bound *out, int to, const sg_bound *in, int from) {
    out->size[to] = in->size[from], out->leaf[to] = in->leaf[from], out->axis[to] = in->axis[from];
}

/* The split points of op's output, per form. */
static void propagate(const sg_node *n, const int32_t *p, const uint64_t *shape,
                      const sg_bound *b0, const sg_bound *b1, sg_bound *out) {
    no_bound(out);
    switch (ops_table[n->op].form) {
    case OPS_FORM_MATMUL:
    case OPS_FORM_KMUL: take(out, 0, b0, 0), take(out, 1, b1, 1); return;
    case OPS_FORM_BMM:
        for (int a = 0; a < 3; a++) take(out, a, b0, a);
        take(out, 3, b1, 3);
        return;
    case OPS_FORM_LINEAR: take(out, 0, b0, 0), take(out, 1, b0, 1), take(out, 2, b1, 1); return;
    case OPS_FORM_CONV: take(out, 0, b0, 0), take(out, 1, b1, 0); return;
    case OPS_FORM_ZIP:
        for (int a = 0; a < TEN_MAX_RANK; a++) take(out, a, b0->size[a] ? b0 : b1, a);
        return;
    case OPS_FORM_MAP:
    case OPS_FORM_SCALE:
    case OPS_FORM_CHANNEL:
    case OPS_FORM_ROW: *out = *b0; return;
    case OPS_FORM_POOL:
    case OPS_FORM_ENLARGE: take(out, 0, b0, 0), take(out, 1, b0, 1); return;
    case OPS_FORM_CONCAT: {
        ten_shape s;
        dom_unpack(shape[n->in[0]], &s);
        *out = *b0;
        out->size[p[0]] = s.dim[p[0]];
        out->leaf[p[0]] = (int8_t)(SG_IS_NODE(n->in[0]) ? -1 : n->in[0]);
        out->axis[p[0]] = (int8_t)p[0];
        return;
    }
    case OPS_FORM_SPLIT:
        *out = *b0;
        out->size[p[0]] = 0, out->leaf[p[0]] = -1;
        return;
    case OPS_FORM_TRANSPOSE: take(out, 0, b0, 1), take(out, 1, b0, 0); return;
    case OPS_FORM_PERMUTE:
        for (int a = 0; a < OPS_PERM_RANK(p[0]); a++) take(out, a, b0, OPS_PERM_AT(p[0], a));
        return;
    case OPS_FORM_HEADS: take(out, 0, b0, 0), take(out, 1, b0, 1); return; /* batch, tokens */
    case OPS_FORM_IMM:
    case OPS_FORM_CKERNEL:
    case OPS_FORM_ONES:
    case OPS_FORM_COUNT: return;
    }
}

uint64_t sg_node_shape(const sg_node *n, const dom *d, dom_memo *m, const uint64_t *shape,
                       const sg_bound *bound, int32_t p[OPS_MAX_PARAMS], sg_bound *out) {
    static const sg_bound none = {{0}, {-1, -1, -1, -1}, {0}};
    const sg_bound *b0 = SG_IS_NODE(n->in[0]) ? &bound[n->in[0]] : &none;
    const sg_bound *b1 = ops_table[n->op].arity > 1 && SG_IS_NODE(n->in[1]) ? &bound[n->in[1]] : &none;
    memcpy(p, d->combo[n->op][n->combo], OPS_MAX_PARAMS * sizeof *p);
    if (ops_table[n->op].form == OPS_FORM_SPLIT) {
        p[1] = b0->size[p[0]];
        if (p[1] <= 0) return DOM_BAD;
    }
    uint64_t s = dom_infer(m, (ops_op)n->op, p, shape[n->in[0]],
                           ops_table[n->op].arity > 1 ? shape[n->in[1]] : 0);
    if (s != DOM_BAD && out) propagate(n, p, shape, b0, b1, out);
    return s;
}

int sg_shapes(const sg_graph *g, const dom *d, dom_memo *m, uint64_t shape[SG_N_REFS],
              int32_t param[][OPS_MAX_PARAMS], sg_bound bound[SG_N_REFS]) {
    for (int j = 0; j < g->n_nodes; j++) {
        int32_t p[OPS_MAX_PARAMS];
        uint64_t s = sg_node_shape(&g->node[j], d, m, shape, bound, p, &bound[SG_NODE(j)]);
        if (s == DOM_BAD) return -1;
        shape[SG_NODE(j)] = s;
        if (param) memcpy(param[j], p, sizeof p);
    }
    return 0;
}

/* ---- canonical order ---- */

/* A node's sort key under the canonical positions known so far. */
static uint32_t node_key(const sg_node *n, const int pos[SG_MAX_NODES]) {
    uint32_t k = (uint32_t)n->op << 24 | (uint32_t)n->combo << 16;
    for (int i = 0; i < 2; i++) {
        uint8_t r = n->in[i];
        if (i < ops_table[n->op].arity && SG_IS_NODE(r)) r = SG_NODE(pos[SG_NODE_IDX(r)]);
        k |= (uint32_t)r << (8 * (1 - i));
    }
    return k;
}

static int node_height(const sg_graph *g, int j) {
    int h = 0;
    for (int k = 0; k < ops_table[g->node[j].op].arity; k++) {
        uint8_t r = g->node[j].in[k];
        if (SG_IS_NODE(r)) {
            int hk = node_height(g, SG_NODE_IDX(r));
            if (hk > h) h = hk;
        }
    }
    return h + 1;
}

/* Canonical positions: by height, then by key; pos[old] = new. */
static void canon_positions(const sg_graph *g, int pos[SG_MAX_NODES]) {
    int h[SG_MAX_NODES], placed = 0, max_h = 0;
    for (int j = 0; j < g->n_nodes; j++) {
        h[j] = node_height(g, j);
        if (h[j] > max_h) max_h = h[j];
    }
    for (int level = 1; level <= max_h; level++) {
        int ids[SG_MAX_NODES], n = 0;
        uint32_t key[SG_MAX_NODES];
        for (int j = 0; j < g->n_nodes; j++)
            if (h[j] == level) key[n] = node_key(&g->node[j], pos), ids[n++] = j;
        for (int a = 1; a < n; a++) /* insertion sort: n <= 6 */
            for (int b = a; b > 0 && key[b] < key[b - 1]; b--) {
                uint32_t tk = key[b]; key[b] = key[b - 1]; key[b - 1] = tk;
                int ti = ids[b]; ids[b] = ids[b - 1]; ids[b - 1] = ti;
            }
        for (int i = 0; i < n; i++) pos[ids[i]] = placed++;
    }
}

static uint8_t remap(uint8_t r, const int pos[SG_MAX_NODES]) {
    return SG_IS_NODE(r) ? SG_NODE(pos[SG_NODE_IDX(r)]) : r;
}

void sg_canon(sg_graph *g, int out_tie) {
    int pos[SG_MAX_NODES];
    sg_graph c;
    memset(&c, 0, sizeof c);
    canon_positions(g, pos);
    c.n_nodes = g->n_nodes, c.n_out = g->n_out;
    for (int j = 0; j < g->n_nodes; j++) {
        sg_node n = g->node[j];
        for (int k = 0; k < ops_table[n.op].arity; k++) n.in[k] = remap(n.in[k], pos);
        c.node[pos[j]] = n;
    }
    for (int k = 0; k < g->n_out; k++) c.out[k] = remap(g->out[k], pos);
    if (out_tie && c.n_out == 2 && c.out[1] < c.out[0]) {
        uint8_t t = c.out[0]; c.out[0] = c.out[1]; c.out[1] = t;
    }
    *g = c;
}

/* ---- rule graphs ---- */

static rg_ref rg_of(uint8_t r, const int8_t var_index[POOL_MAX_VARS]) {
    return SG_IS_NODE(r) ? RG_NODE(SG_NODE_IDX(r)) : RG_IN(var_index[r]);
}

rg_status sg_to_rg(const sg_graph *g, const dom *d, const pool *p, dom_memo *m,
                   const int8_t var_index[POOL_MAX_VARS], rg_graph *out) {
    uint64_t shape[SG_N_REFS] = {0};
    int32_t param[SG_MAX_NODES][OPS_MAX_PARAMS];
    sg_bound bound[SG_N_REFS];
    memset(out, 0, sizeof *out);
    for (int v = 0; v < p->n_vars; v++) shape[v] = p->shape[p->type_of[v]];
    if (sg_shapes(g, d, m, shape, param, bound) != 0) return RG_ESHAPE;
    int max_in = -1;
    for (int j = 0; j < g->n_nodes; j++) {
        const sg_node *n = &g->node[j];
        rg_node *o = &out->node[j];
        o->op = (ops_op)n->op;
        memcpy(o->param, param[j], sizeof o->param);
        if (n->op == OP_SPLIT0 || n->op == OP_SPLIT1) { /* symbolic when it can be */
            const sg_bound *b = &bound[n->in[0]];
            int a = param[j][0];
            if (b->leaf[a] >= 0) o->param[1] = RG_SYM_SIZE(var_index[b->leaf[a]], b->axis[a]);
        }
        for (int k = 0; k < ops_table[n->op].arity; k++) {
            o->in[k] = rg_of(n->in[k], var_index);
            if (!SG_IS_NODE(n->in[k]) && var_index[n->in[k]] > max_in) max_in = var_index[n->in[k]];
        }
    }
    for (int k = 0; k < g->n_out; k++) {
        out->out[k] = rg_of(g->out[k], var_index);
        if (!SG_IS_NODE(g->out[k]) && var_index[g->out[k]] > max_in) max_in = var_index[g->out[k]];
    }
    out->n_nodes = g->n_nodes, out->n_outputs = g->n_out, out->n_inputs = max_in + 1;
    return RG_OK;
}

static size_t fmt_ref(const sg_graph *g, const dom *d, uint8_t r, char *buf, size_t len) {
    if (!SG_IS_NODE(r)) return (size_t)snprintf(buf, len, "v%d", (int)r);
    const sg_node *n = &g->node[SG_NODE_IDX(r)];
    size_t k = (size_t)snprintf(buf, len, "(%s", ops_table[n->op].name);
    const ops_info *o = &ops_table[n->op];
    for (int i = 0; i < o->n_params && k < len; i++) {
        char pb[16];
        if ((n->op == OP_SPLIT0 || n->op == OP_SPLIT1) && i == 1)
            k += (size_t)snprintf(buf + k, len - k, " *");
        else
            k += (size_t)snprintf(buf + k, len - k, " %s",
                                  ops_param_str(o->pkind[i], d->combo[n->op][n->combo][i], pb));
    }
    for (int i = 0; i < o->arity && k < len; i++) {
        if (k < len) buf[k++] = ' ';
        if (k < len) k += fmt_ref(g, d, n->in[i], buf + k, len - k);
    }
    if (k < len) k += (size_t)snprintf(buf + k, len - k, ")");
    return k;
}

char *sg_format(const sg_graph *g, const dom *d, char *buf, size_t len) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < g->n_out && k < len; i++) {
        if (i) k += (size_t)snprintf(buf + k, len - k, ", ");
        if (k < len) k += fmt_ref(g, d, g->out[i], buf + k, len - k);
    }
    return buf;
}
