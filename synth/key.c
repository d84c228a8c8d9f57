/* key.c - fingerprints and variable alignment: signatures, tied-slot
 * orders, the smallest key, aligned forms; whole-graph and incremental
 * evaluation (see key.h). */
#include "key.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "gpu.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "key bytes are written as the host's u64s: a little-endian host is assumed"
#endif

/* ---- arena: bump allocation of cells, released by marks ---- */

#define ARENA_CELLS (1u << 16) /* 512 KB chunks; a value has at most KEY_MAX_CELLS */

typedef struct {
    uint64_t **chunk;
    size_t n_chunks, cur, off;
} arena;

_Static_assert(KEY_MAX_CELLS <= ARENA_CELLS, "a value must fit one chunk");

static uint64_t *arena_alloc(arena *a, int64_t n) {
    if (a->off + (size_t)n > ARENA_CELLS) a->cur++, a->off = 0;
    if (a->cur == a->n_chunks) {
        uint64_t **nc = realloc(a->chunk, (a->n_chunks + 1) * sizeof *nc);
        if (!nc) return NULL;
        a->chunk = nc;
        if (!(nc[a->n_chunks] = malloc(ARENA_CELLS * sizeof(uint64_t)))) return NULL;
        a->n_chunks++;
    }
    uint64_t *p = a->chunk[a->cur] + a->off;
    a->off += (size_t)n;
    return p;
}

/* ---- the ctx ---- */

typedef struct {
    uint8_t lab[KEY_MAX_SLOTS];
    uint8_t swapped, tie;
} binding;

struct key_ctx {
    const pool *pool;
    const dom *dom;
    int cuda;
    uint64_t evals;
    dom_memo memo;
    arena ar;
    uint8_t *sig[KEY_N_ASSIGN]; /* key bytes per assignment */
    size_t sig_len;
    uint64_t sig_hash[KEY_N_ASSIGN];
    uint8_t *best, *cur;       /* key bytes of bindings */
    uint64_t *newval[KEY_N_ASSIGN], *newlab; /* the added node's values */
    uint64_t *full[SG_MAX_NODES];            /* whole-graph evaluation */
    binding ach[KEY_MAX_BINDINGS];           /* bindings reaching the best key */
    int n_ach;
};

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
static key_status eval_node(key_ctx *c, ops_op op, const int32_t *p, const ten_shape *s0,
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

static const ten_shape *type_shape(const key_ctx *c, int t) {
    return &c->pool->var[c->pool->first[t]].shape;
}

/* Leaf tensors of one assignment: 0 = all base, 1 + s = slot s probed. */
static void assign_leaves(const key_ctx *c, int n_slots, const uint8_t *type, int a,
                          const uint64_t *leaf[SG_NODE_REF]) {
    for (int s = 0; s < n_slots; s++)
        leaf[s] = (a == 1 + s ? c->pool->probe[type[s]] : c->pool->base[type[s]]).data;
}

static void label_leaves(const key_ctx *c, int n_slots, const uint8_t *lab,
                         const uint64_t *leaf[SG_NODE_REF]) {
    for (int s = 0; s < n_slots; s++) leaf[s] = c->pool->var[lab[s]].data;
}

/* Shapes, params and tensor shapes of a slot graph's refs. */
typedef struct {
    uint64_t shape[SG_N_REFS];
    ten_shape tshape[SG_N_REFS];
    int32_t param[SG_MAX_NODES][OPS_MAX_PARAMS];
    sg_bound bound[SG_N_REFS];
} gshape;

static key_status graph_shapes(key_ctx *c, const sg_graph *g, int n_leaves,
                               const uint8_t *leaf_type, gshape *gs) {
    for (int s = 0; s < n_leaves; s++) {
        gs->shape[s] = c->pool->shape[leaf_type[s]];
        gs->tshape[s] = *type_shape(c, leaf_type[s]);
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
static key_status eval_at(key_ctx *c, const sg_graph *g, const ten_shape *tshape,
                          const int32_t (*param)[OPS_MAX_PARAMS], int j,
                          const uint64_t *const *leaf, const uint64_t **val, uint64_t *dst) {
    const sg_node *n = &g->node[j];
    const uint64_t *d[2] = {NULL, NULL};
    for (int k = 0; k < ops_table[n->op].arity; k++)
        d[k] = SG_IS_NODE(n->in[k]) ? val[SG_NODE_IDX(n->in[k])] : leaf[n->in[k]];
    key_status st = eval_node(c, (ops_op)n->op, param[j], &tshape[n->in[0]], d[0],
                              &tshape[n->in[1]], d[1], &tshape[SG_NODE(j)], dst);
    val[j] = dst;
    return st;
}

/* Evaluate nodes j0.. of g into dst[j] (see eval_at). */
static key_status eval_nodes(key_ctx *c, const sg_graph *g, const ten_shape *tshape,
                             const int32_t (*param)[OPS_MAX_PARAMS], int j0,
                             const uint64_t *const *leaf, const uint64_t **val,
                             uint64_t *const *dst) {
    for (int j = j0; j < g->n_nodes; j++) {
        key_status st = eval_at(c, g, tshape, param, j, leaf, val, dst[j]);
        if (st != KEY_OK) return st;
    }
    return KEY_OK;
}

/* ---- key bytes ---- */

static int out_cmp(uint64_t sa, const uint64_t *a, uint64_t sb, const uint64_t *b) {
    if (sa != sb) return sa < sb ? -1 : 1;
    return memcmp(a, b, (size_t)KEY_CELLS(sa) * 8);
}

static size_t put_out(uint8_t *buf, uint64_t shape, const uint64_t *v) {
    size_t n = (size_t)KEY_CELLS(shape) * 8;
    memcpy(buf, &shape, 8);
    memcpy(buf + 8, v, n);
    return 8 + n;
}

/* Outputs in increasing (shape, data) order; *swapped when output 1 comes
 * first, *tie when both are equal. @return the length */
static size_t build_key(uint8_t *buf, int n_out, const uint64_t *shape,
                        const uint64_t *const *v, uint8_t *swapped, uint8_t *tie) {
    *swapped = *tie = 0;
    if (n_out == 1) return put_out(buf, shape[0], v[0]);
    int c = out_cmp(shape[0], v[0], shape[1], v[1]);
    int f = c > 0;
    *swapped = (uint8_t)f, *tie = c == 0;
    size_t n = put_out(buf, shape[f], v[f]);
    return n + put_out(buf + n, shape[!f], v[!f]);
}

/* ---- alignment ---- */

/* What align needs from a graph: its outputs under an assignment or a
 * binding of slots to pool variables. */
typedef struct src src;
struct src {
    const sg_graph *g; /* slot graph; its outputs are the graph's */
    int n_slots;
    const uint8_t *slot_type;
    uint64_t out_shape[SG_MAX_OUT];
    key_status (*assign)(key_ctx *, src *, int a, const uint64_t *out[SG_MAX_OUT]);
    key_status (*bind)(key_ctx *, src *, const uint8_t *lab, const uint64_t *out[SG_MAX_OUT]);
    void *impl;
};

/* Slots by type, influential ones first in signature order; groups of
 * positions whose slots may be permuted. */
typedef struct {
    uint8_t order[KEY_MAX_SLOTS], label[KEY_MAX_SLOTS];
    int n_groups, start[KEY_MAX_SLOTS], len[KEY_MAX_SLOTS];
} slot_order;

static int sig_cmp(const key_ctx *c, int s, int t) {
    if (c->sig_hash[1 + s] != c->sig_hash[1 + t])
        return c->sig_hash[1 + s] < c->sig_hash[1 + t] ? -1 : 1;
    return memcmp(c->sig[1 + s], c->sig[1 + t], c->sig_len);
}

static void add_group(slot_order *o, int start, int len) {
    if (len < 2) return;
    o->start[o->n_groups] = start, o->len[o->n_groups++] = len;
}

/* Order the slots of type t from position p; @return the next position. */
static int order_type(const key_ctx *c, const src *s, const uint8_t *dep, int t, int p,
                      slot_order *o) {
    int p0 = p, nd;
    for (int k = 0; k < s->n_slots; k++) /* influential: insertion by signature */
        if (s->slot_type[k] == t && dep[k]) {
            int q = p++;
            while (q > p0 && sig_cmp(c, k, o->order[q - 1]) < 0) o->order[q] = o->order[q - 1], q--;
            o->order[q] = (uint8_t)k;
        }
    nd = p;
    for (int k = 0; k < s->n_slots; k++)
        if (s->slot_type[k] == t && !dep[k]) o->order[p++] = (uint8_t)k;
    for (int q = p0; q < p; q++) o->label[q] = (uint8_t)(c->pool->first[t] + q - p0);
    for (int q = p0, r; q < nd; q = r) {
        for (r = q + 1; r < nd && sig_cmp(c, o->order[q], o->order[r]) == 0; r++) continue;
        add_group(o, q, r - q);
    }
    add_group(o, nd, p - nd);
    return p;
}

static int next_perm(uint8_t *a, int n) {
    int i = n - 2;
    while (i >= 0 && a[i] >= a[i + 1]) i--;
    if (i < 0) {
        for (int l = 0, r = n - 1; l < r; l++, r--) { uint8_t t = a[l]; a[l] = a[r]; a[r] = t; }
        return 0;
    }
    int j = n - 1;
    while (a[j] <= a[i]) j--;
    uint8_t t = a[i]; a[i] = a[j]; a[j] = t;
    for (int l = i + 1, r = n - 1; l < r; l++, r--) { t = a[l]; a[l] = a[r]; a[r] = t; }
    return 1;
}

/* Odometer over the groups' permutations. @return 0 after the last. */
static int next_binding(slot_order *o) {
    for (int g = 0; g < o->n_groups; g++)
        if (next_perm(o->order + o->start[g], o->len[g])) return 1;
    return 0;
}

static long count_bindings(const slot_order *o) {
    long n = 1;
    for (int g = 0; g < o->n_groups; g++)
        for (int k = 2; k <= o->len[g]; k++) n *= k;
    return n;
}

/* Signatures: key bytes under the base and each probed assignment. Only
 * slots sharing their type with another slot need one (a slot alone in its
 * type takes that type's first variable whatever it does); the others keep
 * dep 0 and are never compared. */
static key_status signatures(key_ctx *c, src *s, uint8_t dep[KEY_MAX_SLOTS]) {
    const uint64_t *out[SG_MAX_OUT];
    uint8_t sw, tie, need[KEY_MAX_SLOTS] = {0};
    int per_type[POOL_MAX_TYPES] = {0}, any = 0;
    for (int k = 0; k < s->n_slots; k++) per_type[s->slot_type[k]]++;
    for (int k = 0; k < s->n_slots; k++) any |= need[k] = per_type[s->slot_type[k]] > 1;
    for (int a = 0; any && a <= s->n_slots; a++) {
        if (a > 0 && !need[a - 1]) continue;
        key_status st = s->assign(c, s, a, out);
        if (st != KEY_OK) return st;
        c->sig_len = build_key(c->sig[a], s->g->n_out, s->out_shape, out, &sw, &tie);
        if (a == 0) continue;
        c->sig_hash[a] = XXH3_64bits(c->sig[a], c->sig_len);
        dep[a - 1] = memcmp(c->sig[a], c->sig[0], c->sig_len) != 0;
    }
    return KEY_OK;
}

/* Evaluate one binding; keep it when its key is the smallest so far. */
static key_status try_binding(key_ctx *c, src *s, const slot_order *o, size_t *len) {
    uint8_t lab[KEY_MAX_SLOTS];
    const uint64_t *out[SG_MAX_OUT];
    binding b;
    for (int p = 0; p < s->n_slots; p++) lab[o->order[p]] = o->label[p];
    key_status st = s->bind(c, s, lab, out);
    if (st != KEY_OK) return st;
    size_t n = build_key(c->cur, s->g->n_out, s->out_shape, out, &b.swapped, &b.tie);
    int cmp = c->n_ach ? memcmp(c->cur, c->best, n) : -1;
    if (cmp > 0) return KEY_OK;
    if (cmp < 0) {
        uint8_t *t = c->best; c->best = c->cur; c->cur = t;
        c->n_ach = 0, *len = n;
    }
    memcpy(b.lab, lab, sizeof lab);
    c->ach[c->n_ach++] = b;
    return KEY_OK;
}

/* Insert g into the sorted, duplicate-free r->aligned, keeping the
 * KEY_MAX_ALIGNED smallest. */
static void add_aligned(key_result *r, const sg_graph *g) {
    int i = r->n_aligned;
    while (i > 0 && sg_compare(g, &r->aligned[i - 1]) < 0) i--;
    if ((i > 0 && sg_compare(g, &r->aligned[i - 1]) == 0) || i == KEY_MAX_ALIGNED) return;
    int n = r->n_aligned < KEY_MAX_ALIGNED ? r->n_aligned : KEY_MAX_ALIGNED - 1;
    memmove(&r->aligned[i + 1], &r->aligned[i], (size_t)(n - i) * sizeof *r->aligned);
    r->aligned[i] = *g;
    r->n_aligned = n + 1;
}

/* The slot graph with slots renamed to their bound pool variables. */
static void aligned_form(const sg_graph *g, const binding *b, sg_graph *out) {
    *out = *g;
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < ops_table[g->node[j].op].arity; k++)
            if (!SG_IS_NODE(g->node[j].in[k])) out->node[j].in[k] = b->lab[g->node[j].in[k]];
    for (int k = 0; k < g->n_out; k++)
        if (!SG_IS_NODE(g->out[k])) out->out[k] = b->lab[g->out[k]];
    if (b->swapped) { uint8_t t = out->out[0]; out->out[0] = out->out[1]; out->out[1] = t; }
    sg_canon(out, b->tie);
}

static key_status align(key_ctx *c, src *s, key_result *r) {
    uint8_t dep[KEY_MAX_SLOTS] = {0};
    slot_order o;
    size_t len = 0;
    key_status st = signatures(c, s, dep);
    if (st != KEY_OK) return st;
    o.n_groups = 0;
    for (int t = 0, p = 0; t < c->pool->n_types; t++) p = order_type(c, s, dep, t, p, &o);
    if (count_bindings(&o) > KEY_MAX_BINDINGS) return KEY_SKIP;
    c->n_ach = 0;
    do {
        if ((st = try_binding(c, s, &o, &len)) != KEY_OK) return st;
    } while (next_binding(&o));
    r->key = c->best, r->len = len, r->n_aligned = 0;
    for (int i = 0; i < c->n_ach; i++) {
        sg_graph g;
        aligned_form(s->g, &c->ach[i], &g);
        add_aligned(r, &g);
    }
    return KEY_OK;
}

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
    assign_leaves(c, s->n_slots, s->slot_type, a, leaf);
    key_status st = eval_nodes(c, s->g, f->gs.tshape, f->gs.param, 0, leaf, f->val, c->full);
    if (st == KEY_OK) full_outputs(c, s, leaf, out);
    return st;
}

static key_status full_bind(key_ctx *c, src *s, const uint8_t *lab, const uint64_t *out[SG_MAX_OUT]) {
    full_src *f = s->impl;
    const uint64_t *leaf[SG_NODE_REF];
    label_leaves(c, s->n_slots, lab, leaf);
    key_status st = eval_nodes(c, s->g, f->gs.tshape, f->gs.param, 0, leaf, f->val, c->full);
    if (st == KEY_OK) full_outputs(c, s, leaf, out);
    return st;
}

key_status key_graph(key_ctx *c, const sg_graph *g, int n_slots, const uint8_t *slot_type,
                     key_result *r) {
    full_src f;
    src s = {g, n_slots, slot_type, {0, 0}, full_assign, full_bind, &f};
    key_status st = graph_shapes(c, g, n_slots, slot_type, &f.gs);
    if (st != KEY_OK) return st;
    for (int k = 0; k < g->n_out; k++) s.out_shape[k] = f.gs.shape[g->out[k]];
    return align(c, &s, r);
}

/* ---- aligned graphs ---- */

/* Evaluate an aligned graph on the pool tensors; node subst (if >= 0)
 * takes the value sv instead. */
static key_status aligned_eval(key_ctx *c, const sg_graph *g, gshape *gs, int subst,
                               const uint64_t *sv, const uint64_t *leaf[SG_NODE_REF],
                               const uint64_t *val[SG_MAX_NODES]) {
    uint8_t types[POOL_MAX_VARS];
    memset(gs, 0, sizeof *gs);
    for (int v = 0; v < c->pool->n_vars; v++) {
        types[v] = (uint8_t)c->pool->type_of[v];
        leaf[v] = c->pool->var[v].data;
    }
    key_status st = graph_shapes(c, g, c->pool->n_vars, types, gs);
    for (int j = 0; j < g->n_nodes && st == KEY_OK; j++) {
        if (j == subst) val[j] = sv;
        else st = eval_at(c, g, gs->tshape, gs->param, j, leaf, val, c->full[j]);
    }
    return st;
}

key_status key_of_aligned(key_ctx *c, const sg_graph *g, uint8_t *buf, size_t *len) {
    gshape gs;
    const uint64_t *leaf[SG_NODE_REF], *val[SG_MAX_NODES];
    key_status st = aligned_eval(c, g, &gs, -1, NULL, leaf, val);
    if (st != KEY_OK) return st;
    *len = 0;
    for (int k = 0; k < g->n_out; k++) {
        uint8_t r = g->out[k];
        *len += put_out(buf + *len, gs.shape[r], SG_IS_NODE(r) ? val[SG_NODE_IDX(r)] : leaf[r]);
    }
    return KEY_OK;
}

key_status key_values_subst(key_ctx *c, const sg_graph *g, int node, const uint64_t *subst,
                            const uint64_t *val[SG_N_REFS], uint64_t shape[SG_N_REFS]) {
    gshape gs;
    const uint64_t *leaf[SG_NODE_REF], *nv[SG_MAX_NODES];
    key_status st = aligned_eval(c, g, &gs, node, subst, leaf, nv);
    if (st != KEY_OK) return st;
    for (int r = 0; r < SG_N_REFS; r++) {
        val[r] = r < SG_NODE_REF ? (r < c->pool->n_vars ? leaf[r] : NULL)
                                 : (r - SG_NODE_REF < g->n_nodes ? nv[r - SG_NODE_REF] : NULL);
        shape[r] = gs.shape[r];
    }
    return KEY_OK;
}

key_status key_values(key_ctx *c, const sg_graph *g, const uint64_t *val[SG_N_REFS],
                      uint64_t shape[SG_N_REFS]) {
    return key_values_subst(c, g, -1, NULL, val, shape);
}

/* ---- parents ---- */

void key_parent_release(key_ctx *c, key_parent *P) {
    c->ar.cur = P->mark[0], c->ar.off = P->mark[1];
}

static uint64_t *node_cells(key_ctx *c, const key_parent *P, int j) {
    return arena_alloc(&c->ar, KEY_CELLS(P->shape[SG_NODE(j)]));
}

/* Values of nodes j0.. under every assignment; a node outside slot s's
 * cone keeps its base value (no evaluation). */
static key_status cache_assignments(key_ctx *c, key_parent *P, int j0) {
    for (int a = 0; a <= P->n_slots; a++) {
        const uint64_t *leaf[SG_NODE_REF];
        assign_leaves(c, P->n_slots, P->slot_type, a, leaf);
        for (int j = j0; j < P->g.n_nodes; j++) {
            if (a > 0 && !(P->cone[SG_NODE(j)] & SG_BIT(a - 1))) {
                P->val[a][j] = P->val[0][j];
                continue;
            }
            uint64_t *dst = node_cells(c, P, j);
            if (!dst) return KEY_ENOMEM;
            key_status st = eval_at(c, &P->g, P->tshape, P->param, j, leaf, P->val[a], dst);
            if (st != KEY_OK) return st;
        }
    }
    return KEY_OK;
}

static key_status alloc_lc(key_ctx *c, key_parent *P) {
    for (int i = 0; i < KEY_LC; i++) {
        P->lc[i].used = 0;
        for (int j = P->first_own; j < P->g.n_nodes; j++)
            if (!(P->lc[i].val[j] = node_cells(c, P, j))) return KEY_ENOMEM;
    }
    P->lc_next = 0;
    return KEY_OK;
}

/* P's node values with slot s bound to pool variable lab[s]: from the
 * cache, or evaluated into its oldest entry. */
static key_status labelled(key_ctx *c, key_parent *P, const uint8_t *lab,
                           const uint64_t *val[SG_MAX_NODES]) {
    if (P->base) {
        key_status st = labelled(c, P->base, lab, val);
        if (st != KEY_OK) return st;
    }
    for (int i = 0; i < KEY_LC; i++)
        if (P->lc[i].used && memcmp(P->lc[i].lab, lab, (size_t)P->n_slots) == 0) {
            for (int j = P->first_own; j < P->g.n_nodes; j++) val[j] = P->lc[i].val[j];
            return KEY_OK;
        }
    int i = P->lc_next;
    const uint64_t *leaf[SG_NODE_REF];
    P->lc_next = (i + 1) % KEY_LC;
    P->lc[i].used = 0;
    label_leaves(c, P->n_slots, lab, leaf);
    key_status st = eval_nodes(c, &P->g, P->tshape, P->param, P->first_own, leaf, val, P->lc[i].val);
    if (st != KEY_OK) return st;
    memcpy(P->lc[i].lab, lab, (size_t)P->n_slots);
    P->lc[i].used = 1;
    return KEY_OK;
}

/* Shapes, tensor shapes, params and cones of P's graph. */
static key_status parent_shapes(key_ctx *c, key_parent *P) {
    gshape gs;
    key_status st = graph_shapes(c, &P->g, P->n_slots, P->slot_type, &gs);
    if (st != KEY_OK) return st;
    memcpy(P->shape, gs.shape, sizeof P->shape);
    memcpy(P->tshape, gs.tshape, sizeof P->tshape);
    memcpy(P->param, gs.param, sizeof P->param);
    memcpy(P->bound, gs.bound, sizeof P->bound);
    for (int s = 0; s < P->n_slots; s++) P->cone[s] = SG_BIT(s);
    for (int j = 0; j < P->g.n_nodes; j++) P->cone[SG_NODE(j)] = sg_cone(&P->g, SG_NODE(j));
    return KEY_OK;
}

/* Rename leaf r of a rep to its slot, making a new slot on first use. */
static uint8_t slot_of(key_ctx *c, key_parent *P, int8_t map[POOL_MAX_VARS], uint8_t lab[KEY_MAX_SLOTS],
                       uint8_t r) {
    if (SG_IS_NODE(r)) return r;
    if (map[r] < 0) {
        map[r] = (int8_t)P->n_slots;
        lab[P->n_slots] = r;
        P->slot_type[P->n_slots++] = (uint8_t)c->pool->type_of[r];
    }
    return (uint8_t)map[r];
}

key_status key_parent_from_rep(key_ctx *c, const sg_graph *rep, key_parent *P) {
    int8_t map[POOL_MAX_VARS];
    uint8_t lab[KEY_MAX_SLOTS];
    const uint64_t *val[SG_MAX_NODES];
    memset(P, 0, sizeof *P);
    memset(map, -1, sizeof map);
    P->mark[0] = c->ar.cur, P->mark[1] = c->ar.off;
    P->g = *rep;
    for (int j = 0; j < rep->n_nodes; j++)
        for (int k = 0; k < ops_table[rep->node[j].op].arity; k++)
            P->g.node[j].in[k] = slot_of(c, P, map, lab, rep->node[j].in[k]);
    for (int k = 0; k < rep->n_out; k++) P->g.out[k] = slot_of(c, P, map, lab, rep->out[k]);
    key_status st = parent_shapes(c, P);
    if (st == KEY_OK) st = cache_assignments(c, P, 0);
    if (st == KEY_OK) st = alloc_lc(c, P);
    if (st == KEY_OK) st = labelled(c, P, lab, val); /* the rep's own binding: the usual one */
    return st;
}

/* P = base's copy with room for `extra` more nodes, owning the arena from
 * here; P->n_slots and the new nodes are the caller's to fill. */
static key_status grow_parent(key_ctx *c, key_parent *base, int extra, key_parent *P) {
    int nb = base->g.n_nodes;
    size_t m0 = c->ar.cur, m1 = c->ar.off;
    if (nb + extra <= SG_MAX_NODES) *P = *base;
    P->mark[0] = m0, P->mark[1] = m1;
    if (nb + extra > SG_MAX_NODES) return KEY_SKIP;
    P->base = base, P->first_own = nb;
    P->g.n_out = 0;
    return KEY_OK;
}

/* Values of P's own nodes (P->first_own on) after they were added. */
static key_status finish_parent(key_ctx *c, key_parent *P) {
    for (int a = P->base->n_slots + 1; a <= P->n_slots; a++)
        for (int j = 0; j < P->first_own; j++) P->val[a][j] = P->val[0][j];
    key_status st = parent_shapes(c, P);
    if (st == KEY_OK) st = cache_assignments(c, P, P->first_own);
    if (st == KEY_OK) st = alloc_lc(c, P);
    return st;
}

key_status key_parent_join(key_ctx *c, key_parent *base, const sg_graph *r2,
                           const int8_t map[POOL_MAX_VARS], key_parent *P) {
    int nb = base->g.n_nodes;
    key_status st = grow_parent(c, base, r2->n_nodes, P);
    if (st != KEY_OK) return st;
    for (int j = 0; j < r2->n_nodes; j++) {
        sg_node n = r2->node[j];
        for (int k = 0; k < ops_table[n.op].arity; k++) {
            uint8_t r = n.in[k];
            if (SG_IS_NODE(r)) { n.in[k] = SG_NODE(nb + SG_NODE_IDX(r)); continue; }
            n.in[k] = (uint8_t)map[r];
            P->slot_type[map[r]] = (uint8_t)c->pool->type_of[r];
            if (map[r] >= P->n_slots) P->n_slots = map[r] + 1;
        }
        P->g.node[nb + j] = n;
    }
    P->g.n_nodes = (uint8_t)(nb + r2->n_nodes);
    return finish_parent(c, P);
}

key_status key_parent_push(key_ctx *c, key_parent *base, const sg_node *n, key_parent *P) {
    key_status st = grow_parent(c, base, 1, P);
    if (st != KEY_OK) return st;
    P->g.node[P->g.n_nodes++] = *n;
    return finish_parent(c, P);
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
    return SG_IS_NODE(r) ? &x->P->tshape[r] : type_shape(c, x->e->slot_type[r]);
}

static key_status ext_eval(key_ctx *c, const ext_src *x, const uint64_t *const *leaf,
                           const uint64_t *const *nodeval, uint64_t *dst) {
    const sg_node *n = &x->e->n;
    const uint64_t *d[2] = {NULL, NULL};
    for (int k = 0; k < ops_table[n->op].arity; k++)
        d[k] = SG_IS_NODE(n->in[k]) ? nodeval[SG_NODE_IDX(n->in[k])] : leaf[n->in[k]];
    return eval_node(c, (ops_op)n->op, x->e->param, ext_tshape(c, x, n->in[0]), d[0],
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
        assign_leaves(c, x->e->n_slots, x->e->slot_type, a, leaf);
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
    key_status st = labelled(c, x->P, lab, nodeval);
    if (st != KEY_OK) return st;
    label_leaves(c, x->e->n_slots, lab, leaf);
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
    return align(c, &s, r);
}
