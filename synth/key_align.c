/* key_align.c - key bytes and variable alignment: signatures, tied-slot
 * orders, the smallest key and its aligned forms; keys and values of graphs
 * already aligned. */
#include "key.h"

#include <string.h>
#include <xxhash.h>

#include "key_int.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "key bytes are written as the host's u64s: a little-endian host is assumed"
#endif

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

key_status key__align(key_ctx *c, src *s, key_result *r) {
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
    key_status st = key__graph_shapes(c, g, c->pool->n_vars, types, gs);
    for (int j = 0; j < g->n_nodes && st == KEY_OK; j++) {
        if (j == subst) val[j] = sv;
        else st = key__eval_at(c, g, gs->tshape, gs->param, j, leaf, val, c->full[j]);
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
