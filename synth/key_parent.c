/* key_parent.c - parents: a graph's node values cached under every
 * assignment and recent bindings, in an arena released by marks. */
#include "key.h"

#include <stdlib.h>
#include <string.h>

#include "key_int.h"

/* ---- arena: bump allocation of cells, released by marks ---- */

#define ARENA_CELLS (1u << 16) /* 512 KB chunks; a value has at most KEY_MAX_CELLS */

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
        key__assign_leaves(c, P->n_slots, P->slot_type, a, leaf);
        for (int j = j0; j < P->g.n_nodes; j++) {
            if (a > 0 && !(P->cone[SG_NODE(j)] & SG_BIT(a - 1))) {
                P->val[a][j] = P->val[0][j];
                continue;
            }
            uint64_t *dst = node_cells(c, P, j);
            if (!dst) return KEY_ENOMEM;
            key_status st = key__eval_at(c, &P->g, P->tshape, P->param, j, leaf, P->val[a], dst);
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
key_status key__labelled(key_ctx *c, key_parent *P, const uint8_t *lab,
                         const uint64_t *val[SG_MAX_NODES]) {
    if (P->base) {
        key_status st = key__labelled(c, P->base, lab, val);
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
    key__label_leaves(c, P->n_slots, lab, leaf);
    key_status st = key__eval_nodes(c, &P->g, P->tshape, P->param, P->first_own, leaf, val,
                                    P->lc[i].val);
    if (st != KEY_OK) return st;
    memcpy(P->lc[i].lab, lab, (size_t)P->n_slots);
    P->lc[i].used = 1;
    return KEY_OK;
}

/* Shapes, tensor shapes, params and cones of P's graph. */
static key_status parent_shapes(key_ctx *c, key_parent *P) {
    gshape gs;
    key_status st = key__graph_shapes(c, &P->g, P->n_slots, P->slot_type, &gs);
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
    if (st == KEY_OK) st = key__labelled(c, P, lab, val); /* the rep's own binding: the usual one */
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
