/* egraph.c - the e-graph (egraph_int.h): building it from a graph,
 * hash-consed e-nodes, union-find, rebuilding. */
#include "egraph/egraph_int.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* ---- hash-consing ---- */

/* The key of e-node n with kids k: what makes two e-nodes the same. */
static uint64_t key_hash(const ee_node *n, const int *k) {
    int32_t buf[3 + OPS_MAX_PARAMS + 64];
    size_t m = 0;
    buf[m++] = (int32_t)n->kind, buf[m++] = n->kind == EE_OPS ? (int32_t)n->op : n->ref, buf[m++] = n->n_kid;
    for (int i = 0; n->kind == EE_OPS && i < ops_table[n->op].n_params; i++) buf[m++] = n->param[i];
    uint64_t h = XXH3_64bits(buf, sizeof *buf * m);
    if (n->n_kid) h ^= XXH3_64bits_withSeed(k, sizeof *k * (size_t)n->n_kid, h);
    return h;
}

static int same_key(const ee_node *a, const int *ka, const ee_node *b, const int *kb) {
    if (a->kind != b->kind || a->n_kid != b->n_kid) return 0;
    if (a->kind == EE_OPS) {
        if (a->op != b->op) return 0;
        for (int k = 0; k < ops_table[a->op].n_params; k++)
            if (a->param[k] != b->param[k]) return 0;
    } else if (a->ref != b->ref) {
        return 0;
    }
    return a->n_kid == 0 || memcmp(ka, kb, sizeof *ka * (size_t)a->n_kid) == 0;
}

/* The slot of e-node key (n, k) in the table: its e-node or an empty one. */
static size_t hc_slot(const ee_graph *E, const ee_node *n, const int *k) {
    size_t i = (size_t)key_hash(n, k) & (E->hc_cap - 1);
    while (E->hc[i] >= 0 && !same_key(&E->n[E->hc[i]], ee_kids(E, E->hc[i]), n, k)) i = (i + 1) & (E->hc_cap - 1);
    return i;
}

static eg_status hc_grow(ee_graph *E) {
    if (2 * (E->hc_used + 1) <= E->hc_cap) return EG_OK;
    size_t cap = E->hc_cap ? 2 * E->hc_cap : 1024;
    int *t = malloc(sizeof *t * cap), *old = E->hc;
    if (!t) return EG_ENOMEM;
    for (size_t i = 0; i < cap; i++) t[i] = -1;
    size_t old_cap = E->hc_cap;
    E->hc = t, E->hc_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i] >= 0) E->hc[hc_slot(E, &E->n[old[i]], ee_kids(E, old[i]))] = old[i];
    free(old);
    return EG_OK;
}

/* ---- adding ---- */

static int new_class(ee_graph *E) {
    if (E->n_cls == E->cap_cls) {
        int cap = E->cap_cls ? 2 * E->cap_cls : 1024;
        ee_class *t = realloc(E->c, sizeof *t * (size_t)cap);
        if (!t) return -1;
        E->c = t, E->cap_cls = cap;
    }
    ee_class *c = &E->c[E->n_cls];
    memset(c, 0, sizeof *c);
    c->uf = E->n_cls, c->init = -1, c->home = -1;
    return E->n_cls++;
}

/* Append e-node n with kids k (canonical) to class cls (new when -1).
 * @return its id, or -1 when out of memory. */
static int push_node(ee_graph *E, const ee_node *n, const int *k, int cls) {
    if (E->n_nodes == E->cap_nodes) {
        int cap = E->cap_nodes ? 2 * E->cap_nodes : 1024;
        ee_node *t = realloc(E->n, sizeof *t * (size_t)cap);
        if (!t) return -1;
        E->n = t, E->cap_nodes = cap;
    }
    if (E->n_kids + (size_t)n->n_kid > E->cap_kids) {
        size_t cap = E->cap_kids ? 2 * E->cap_kids : 4096;
        while (cap < E->n_kids + (size_t)n->n_kid) cap *= 2;
        int *t = realloc(E->kids, sizeof *t * cap);
        if (!t) return -1;
        E->kids = t, E->cap_kids = cap;
    }
    if (cls < 0 && (cls = new_class(E)) < 0) return -1;
    if (hc_grow(E) != EG_OK) return -1;
    int e = E->n_nodes++;
    E->n[e] = *n;
    E->n[e].kid0 = E->n_kids, E->n[e].cls = cls, E->n[e].dead = 0;
    if (n->n_kid) memcpy(E->kids + E->n_kids, k, sizeof *k * (size_t)n->n_kid);
    E->n_kids += (size_t)n->n_kid;
    E->hc[hc_slot(E, &E->n[e], ee_kids(E, e))] = e;
    E->hc_used++;
    E->n_live++;
    return e;
}

int ee_lookup(ee_graph *E, const ee_node *n, const int *kids) {
    int k[OPS_MAX_ARITY];
    for (int i = 0; i < n->n_kid; i++) k[i] = ee_find(E, kids[i]);
    int f = E->hc_cap ? E->hc[hc_slot(E, n, k)] : -1;
    return f >= 0 ? ee_find(E, E->n[f].cls) : -1;
}

int ee_add(ee_graph *E, const ee_node *n, const int *kids, const ten_shape *shape, int *added) {
    int k[OPS_MAX_ARITY];
    *added = 0;
    for (int i = 0; i < n->n_kid; i++) k[i] = ee_find(E, kids[i]);
    if (E->hc_cap) {
        int f = E->hc[hc_slot(E, n, k)];
        if (f >= 0) return ee_find(E, E->n[f].cls);
    }
    int e = push_node(E, n, k, -1);
    if (e < 0) return -1;
    ee_class *c = &E->c[E->n[e].cls];
    int konst = n->kind == EE_OPS && (ops_table[n->op].flags & OPF_CONST); /* reads shapes alone */
    unsigned weight = n->kind == EE_OPS && n->n_kid > 0 ? EE_WEIGHT : 0;
    for (int i = 0; i < n->n_kid; i++) {
        c->flags |= E->c[k[i]].flags & EE_NONFINITE;
        if (!(E->c[k[i]].flags & EE_WEIGHT) && !konst) weight = 0;
    }
    c->flags |= weight;
    c->shape = *shape, c->shaped = 1;
    *added = 1;
    return E->n[e].cls;
}

/* 1 when tensor t must keep its name (a graph output, or read by name). */
static int named(const eg_graph *g, int t) {
    return t >= 0 && (g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED));
}

int ee_union(ee_graph *E, int a, int b) {
    a = ee_find(E, a), b = ee_find(E, b);
    if (a == b) return 0;
    if (b < a) {
        int t = a;
        a = b, b = t;
    }
    ee_class *r = &E->c[a], *o = &E->c[b];
    o->uf = a;
    r->flags |= o->flags;
    if (!r->shaped && o->shaped) r->shape = o->shape, r->shaped = 1;
    if (r->init < 0) r->init = o->init;
    if (!r->value) r->value = o->value, o->value = NULL;
    free(o->value), o->value = NULL; /* one value a class: the root's */
    if (r->home < 0 || (!named(E->g, r->home) && named(E->g, o->home) && o->home >= 0)) r->home = o->home;
    E->dirty = 1;
    return 1;
}

/* ---- building ---- */

static void tensor_class(ee_graph *E, int t, int cls, int weight);

/* The class of tensor t, a leaf made for it when nothing made one. */
static int leaf_of(ee_graph *E, int t) {
    if (E->tensor_cls[t] >= 0) return E->tensor_cls[t];
    ee_node n = {.kind = EE_LEAF, .ref = t, .rule = -1};
    int e = push_node(E, &n, NULL, -1);
    if (e < 0) return -1;
    const eg_tensor *x = &E->g->tensor[t];
    int cls = E->n[e].cls;
    tensor_class(E, t, cls, (x->flags & EG_TF_INIT) && !(x->flags & EG_TF_INPUT));
    if ((x->flags & EG_TF_INIT) && x->data && x->dtype == EG_DT_FLOAT) E->c[cls].init = t;
    return cls;
}

/* The class fields of tensor t, written by the node just added. */
static void tensor_class(ee_graph *E, int t, int cls, int weight) {
    const eg_tensor *x = &E->g->tensor[t];
    ee_class *c = &E->c[cls];
    E->tensor_cls[t] = cls;
    c->home = t;
    c->shaped = x->dtype == EG_DT_FLOAT && eg_to_ten_shape(&x->shape, &c->shape);
    if (x->flags & EG_TF_NONFINITE) c->flags |= EE_NONFINITE;
    if (weight) c->flags |= EE_WEIGHT;
}

eg_status ee_build(ee_graph *E, const eg_graph *g) {
    memset(E, 0, sizeof *E);
    E->g = g;
    E->tensor_cls = malloc(sizeof *E->tensor_cls * (size_t)(g->n_tensors + 1));
    E->node_en = malloc(sizeof *E->node_en * (size_t)(g->n_nodes + 1));
    unsigned char *wo = malloc((size_t)g->n_nodes + 1);
    int *k = malloc(sizeof *k * (size_t)(eg_max_inputs(g) + 1));
    eg_status rc = E->tensor_cls && E->node_en && wo && k ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) {
        for (int t = 0; t < g->n_tensors; t++) E->tensor_cls[t] = -1;
        eg_mark_weight_only(g, wo);
    }
    for (int j = 0; rc == EG_OK && j < g->n_nodes; j++) {
        const eg_node *nd = &g->node[j];
        ee_node n = {.kind = nd->kind == EG_KIND_OPS ? EE_OPS : EE_NODE, .op = nd->op, .ref = j, .rule = -1};
        n.n_kid = nd->n_in + nd->n_implicit;
        if (n.kind == EE_OPS) memcpy(n.param, nd->param, sizeof n.param), n.ref = nd->out[0];
        for (int i = 0; i < n.n_kid && rc == EG_OK; i++)
            if ((k[i] = nd->in[i] >= 0 ? leaf_of(E, nd->in[i]) : -1) < 0 && nd->in[i] >= 0) rc = EG_ENOMEM;
        int e = rc == EG_OK ? push_node(E, &n, k, -1) : -1;
        if (e < 0) {
            rc = EG_ENOMEM;
            break;
        }
        int cls = E->n[e].cls;
        E->node_en[j] = e;
        if (nd->n_out == 1 && nd->out[0] >= 0) {
            tensor_class(E, nd->out[0], cls, wo[j]);
            continue;
        }
        E->c[cls].flags |= EE_TUPLE;
        for (int q = 0; q < nd->n_out && rc == EG_OK; q++) {
            if (nd->out[q] < 0) continue;
            ee_node p = {.kind = EE_PROJ, .ref = q, .n_kid = 1, .rule = -1};
            int pe = push_node(E, &p, &cls, -1);
            if (pe < 0) rc = EG_ENOMEM;
            else tensor_class(E, nd->out[q], E->n[pe].cls, wo[j]);
        }
    }
    for (int q = 0; rc == EG_OK && q < g->n_outputs; q++)
        if (leaf_of(E, g->output[q]) < 0) rc = EG_ENOMEM;
    free(wo);
    free(k);
    if (rc == EG_OK) rc = ee_rebuild(E);
    return rc;
}

void ee_free(ee_graph *E) {
    for (int c = 0; c < E->n_cls; c++) free(E->c[c].value);
    free(E->n), free(E->kids), free(E->c), free(E->hc), free(E->cnode), free(E->cpar);
    free(E->op_start), free(E->op_list), free(E->tensor_cls), free(E->node_en);
    free(E->price);
    memset(E, 0, sizeof *E);
}

/* ---- rebuilding ---- */

/* One pass: kids canonical, every live e-node into a fresh table, a
 * congruent one merged and marked dead. @return 1 when a class merged,
 * 0 when none did, -1 when out of memory. */
static int congruence_pass(ee_graph *E) {
    int merged = 0;
    for (size_t i = 0; i < E->hc_cap; i++) E->hc[i] = -1;
    E->hc_used = 0;
    for (int e = 0; e < E->n_nodes; e++) {
        ee_node *n = &E->n[e];
        if (n->dead) continue;
        int *k = E->kids ? E->kids + n->kid0 : NULL;
        for (int i = 0; i < n->n_kid; i++)
            if (k[i] >= 0) k[i] = ee_find(E, k[i]);
        size_t s = hc_slot(E, n, k);
        if (E->hc[s] >= 0) {
            merged |= ee_union(E, E->n[E->hc[s]].cls, n->cls);
            n->dead = 1;
            E->n_live--;
            continue;
        }
        E->hc[s] = e;
        E->hc_used++;
    }
    return merged;
}

static _Thread_local ee_graph *sort_E; /* qsort has no context argument in C11; per thread:
                                                prove derives on several */

/* Constant e-nodes x and y in the order of operator, parameters and their
 * classes' shapes: 0 when they are one value. */
static int const_key_cmp(ee_graph *E, int x, int y) {
    const ee_node *a = &E->n[x], *b = &E->n[y];
    if (a->op != b->op) return a->op < b->op ? -1 : 1;
    for (int k = 0; k < ops_table[a->op].n_params; k++)
        if (a->param[k] != b->param[k]) return a->param[k] < b->param[k] ? -1 : 1;
    const ten_shape *sa = &E->c[ee_find(E, a->cls)].shape, *sb = &E->c[ee_find(E, b->cls)].shape;
    if (sa->rank != sb->rank) return sa->rank < sb->rank ? -1 : 1;
    for (int d = 0; d < sa->rank; d++)
        if (sa->dim[d] != sb->dim[d]) return sa->dim[d] < sb->dim[d] ? -1 : 1;
    return 0;
}

static int by_const_key(const void *pa, const void *pb) {
    int x = *(const int *)pa, y = *(const int *)pb, c = const_key_cmp(sort_E, x, y);
    return c ? c : (x > y) - (x < y);
}

/* 1 when e-node e is a live constant whose class has a shape. */
static int shaped_constant(ee_graph *E, int e) {
    const ee_node *d = &E->n[e];
    if (d->dead || d->kind != EE_OPS || !(ops_table[d->op].flags & OPF_CONST)) return 0;
    const ee_class *c = &E->c[ee_find(E, d->cls)];
    return c->shaped && c->shape.rank >= 0;
}

/* A constant operator (OPF_CONST) reads only the shape of its input, and
 * only the part of it that its own output's shape repeats (ones: all of
 * it; imm, iconv, poolk: the channels), so two e-nodes of one such
 * operator and parameters whose classes have one shape are one value:
 * (ones x0) and (ones x1) when x0 and x1 have one shape. Their classes are
 * merged and both e-nodes stay, so a pattern (ewmul x1 (ones x1)) still
 * finds its own. @return 1 when a class merged, 0 when none did, -1 when
 * out of memory. */
static int shape_congruence(ee_graph *E) {
    int n = 0, merged = 0;
    for (int e = 0; e < E->n_nodes; e++) n += shaped_constant(E, e);
    if (n < 2) return 0;
    int *list = malloc(sizeof *list * (size_t)n);
    if (!list) return -1;
    n = 0;
    for (int e = 0; e < E->n_nodes; e++)
        if (shaped_constant(E, e)) list[n++] = e;
    sort_E = E;
    qsort(list, (size_t)n, sizeof *list, by_const_key);
    sort_E = NULL;
    for (int i = 1; i < n; i++)
        if (const_key_cmp(E, list[i - 1], list[i]) == 0) merged |= ee_union(E, E->n[list[i - 1]].cls, E->n[list[i]].cls);
    free(list);
    return merged;
}

/* Value congruence: the classes of shape constants of one value
 * (cvalue.c) merged. @return as shape_congruence. */
static int value_congruence(ee_graph *E) {
    int *pairs, n = ee_equal_values(E, &pairs), merged = 0;
    for (int i = 0; i < n; i++) merged |= ee_union(E, pairs[2 * i], pairs[2 * i + 1]);
    free(pairs);
    return n < 0 ? -1 : merged;
}

/* Shape congruence, then value congruence when it merged nothing.
 * @return as shape_congruence. */
static int constant_congruence(ee_graph *E) {
    int r = shape_congruence(E);
    return r != 0 ? r : value_congruence(E);
}

/* A class becomes weight-only when an operator over weight-only classes
 * is in it; repeated until none changes. */
static void spread_weights(ee_graph *E) {
    for (int changed = 1; changed;) {
        changed = 0;
        for (int e = 0; e < E->n_nodes; e++) {
            const ee_node *n = &E->n[e];
            int c = ee_find(E, n->cls);
            if (n->dead || n->kind != EE_OPS || !n->n_kid || (E->c[c].flags & EE_WEIGHT)) continue;
            int all = 1; /* an OPF_CONST operator reads shapes alone (eg_node_weight_only) */
            for (int i = 0; i < n->n_kid && all && !(ops_table[n->op].flags & OPF_CONST); i++)
                all = (E->c[ee_find(E, ee_kids(E, e)[i])].flags & EE_WEIGHT) != 0;
            if (all) E->c[c].flags |= EE_WEIGHT, changed = 1;
        }
    }
}

/* The order of a class's lists: by operator (opspecs e-nodes first), then
 * e-node id, so a matching step finds the e-nodes of one operator as a
 * run (ee_op_run). */
static int op_key(const ee_graph *E, int e) { return E->n[e].kind == EE_OPS ? (int)E->n[e].op : OP_COUNT + (int)E->n[e].kind; }
static int by_op(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b, kx = op_key(sort_E, x), ky = op_key(sort_E, y);
    if (kx != ky) return kx < ky ? -1 : 1;
    return (x > y) - (x < y);
}

void ee_op_run(const ee_graph *E, const int *list, int n, ops_op op, int *first, int *end) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (op_key(E, list[mid]) < (int)op) lo = mid + 1;
        else hi = mid;
    }
    *first = lo;
    while (hi < n && op_key(E, list[hi]) == (int)op) hi++;
    *end = hi;
}

/* The per-class and per-operator lists, each class's by operator. */
static eg_status lists(ee_graph *E) {
    free(E->cnode), free(E->cpar), free(E->op_start), free(E->op_list);
    size_t n_par = 0;
    for (int e = 0; e < E->n_nodes; e++) n_par += E->n[e].dead ? 0 : (size_t)E->n[e].n_kid;
    E->cnode = malloc(sizeof *E->cnode * (size_t)(E->n_nodes + 1));
    E->cpar = malloc(sizeof *E->cpar * (n_par + 1));
    E->op_start = calloc(OP_COUNT + 1, sizeof *E->op_start);
    E->op_list = malloc(sizeof *E->op_list * (size_t)(E->n_nodes + 1));
    if (!E->cnode || !E->cpar || !E->op_start || !E->op_list) return EG_ENOMEM;
    for (int c = 0; c < E->n_cls; c++) E->c[c].n_node = 0, E->c[c].n_par = 0;
    for (int e = 0; e < E->n_nodes; e++) {
        const ee_node *n = &E->n[e];
        if (n->dead) continue;
        E->c[ee_find(E, n->cls)].n_node++;
        if (n->kind == EE_OPS) E->op_start[n->op + 1]++;
        const int *k = ee_kids(E, e);
        for (int i = 0; i < n->n_kid; i++) {
            int dup = !ee_kid_new(k, i);
            if (!dup) E->c[k[i]].n_par++;
        }
    }
    int on = 0, op = 0;
    for (int c = 0; c < E->n_cls; c++) {
        E->c[c].node0 = on, E->c[c].par0 = op;
        on += E->c[c].n_node, op += E->c[c].n_par;
        E->c[c].n_node = 0, E->c[c].n_par = 0;
    }
    for (int o = 0; o < OP_COUNT; o++) E->op_start[o + 1] += E->op_start[o];
    int *fill = calloc(OP_COUNT, sizeof *fill);
    if (!fill) return EG_ENOMEM;
    for (int e = 0; e < E->n_nodes; e++) {
        const ee_node *n = &E->n[e];
        if (n->dead) continue;
        ee_class *c = &E->c[ee_find(E, n->cls)];
        E->cnode[c->node0 + c->n_node++] = e;
        if (n->kind == EE_OPS) E->op_list[E->op_start[n->op] + fill[n->op]++] = e;
        const int *k = ee_kids(E, e);
        for (int i = 0; i < n->n_kid; i++) {
            int dup = !ee_kid_new(k, i);
            if (!dup) E->cpar[E->c[k[i]].par0 + E->c[k[i]].n_par++] = e;
        }
    }
    free(fill);
    sort_E = E;
    for (int c = 0; c < E->n_cls; c++) {
        if (E->c[c].n_node > 1) qsort(E->cnode + E->c[c].node0, (size_t)E->c[c].n_node, sizeof(int), by_op);
        if (E->c[c].n_par > 1) qsort(E->cpar + E->c[c].par0, (size_t)E->c[c].n_par, sizeof(int), by_op);
    }
    sort_E = NULL;
    return EG_OK;
}

eg_status ee_rebuild(ee_graph *E) {
    int r;
    if (hc_grow(E) != EG_OK) return EG_ENOMEM;
    do { /* congruence closure, then shape and value congruence, until none merges */
        while ((r = congruence_pass(E)) > 0) {
        }
    } while (r == 0 && (r = constant_congruence(E)) > 0);
    spread_weights(E);
    for (int e = 0; e < E->n_nodes; e++) E->n[e].cls = ee_find(E, E->n[e].cls); /* matching reads them as they are */
    E->dirty = 0;
    return r < 0 ? EG_ENOMEM : lists(E);
}

/* ---- walks over picks ---- */

void ee_reached(ee_graph *E, const int *pick, unsigned char *in, int *refs, int *stack) {
    int sp = 0;
    memset(in, 0, (size_t)E->n_cls);
    if (refs) memset(refs, 0, sizeof *refs * (size_t)E->n_cls);
    for (int q = 0; q < E->g->n_outputs; q++) {
        int c = ee_find(E, E->tensor_cls[E->g->output[q]]);
        if (refs) refs[c]++;
        if (!in[c]) in[c] = 1, stack[sp++] = c;
    }
    while (sp) {
        int e = pick[stack[--sp]];
        const int *k = ee_kids(E, e);
        for (int i = 0; e >= 0 && i < E->n[e].n_kid; i++) {
            if (!ee_kid_new(k, i)) continue;
            if (refs) refs[k[i]]++;
            if (!in[k[i]]) in[k[i]] = 1, stack[sp++] = k[i];
        }
    }
}
