/* key_int.h - private to key.c, key_eval.c, key_align.c and key_parent.c:
 * the ctx's layout and the helpers they share (prefix key__). Not part of the public API. */
#ifndef SYN_KEY_INT_H
#define SYN_KEY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "key.h"

/* ---- the ctx ---- */

/* Cells bump-allocated in chunks, released by marks (key_parent.c). */
typedef struct {
    uint64_t **chunk;
    size_t n_chunks, cur, off;
} arena;

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

/* ---- evaluation (key_eval.c) ---- */

/* Shapes, params and tensor shapes of a slot graph's refs. */
typedef struct {
    uint64_t shape[SG_N_REFS];
    ten_shape tshape[SG_N_REFS];
    int32_t param[SG_MAX_NODES][OPS_MAX_PARAMS];
    sg_bound bound[SG_N_REFS];
} gshape;

/* One node on every trial: out = op(d0, d1), the samples one after the other. */
key_status key__eval_node(key_ctx *c, ops_op op, const int32_t *p, const ten_shape *s0,
                          const uint64_t *d0, const ten_shape *s1, const uint64_t *d1,
                          const ten_shape *so, uint64_t *out);

/* The tensor shape of pool type t. */
const ten_shape *key__type_shape(const key_ctx *c, int t);

/* Leaf tensors of one assignment: 0 = all base, 1 + s = slot s probed. */
void key__assign_leaves(const key_ctx *c, int n_slots, const uint8_t *type, int a,
                        const uint64_t *leaf[SG_NODE_REF]);

/* Leaf tensors of a binding: slot s is pool variable lab[s]. */
void key__label_leaves(const key_ctx *c, int n_slots, const uint8_t *lab,
                       const uint64_t *leaf[SG_NODE_REF]);

/* gs = g's shapes over leaves of these types. @return KEY_OK or KEY_SKIP */
key_status key__graph_shapes(key_ctx *c, const sg_graph *g, int n_leaves,
                             const uint8_t *leaf_type, gshape *gs);

/* Evaluate node j of g into dst; val[j] = dst afterwards. */
key_status key__eval_at(key_ctx *c, const sg_graph *g, const ten_shape *tshape,
                        const int32_t (*param)[OPS_MAX_PARAMS], int j,
                        const uint64_t *const *leaf, const uint64_t **val, uint64_t *dst);

/* Evaluate nodes j0.. of g into dst[j] (see key__eval_at). */
key_status key__eval_nodes(key_ctx *c, const sg_graph *g, const ten_shape *tshape,
                           const int32_t (*param)[OPS_MAX_PARAMS], int j0,
                           const uint64_t *const *leaf, const uint64_t **val,
                           uint64_t *const *dst);

/* ---- alignment (key_align.c) ---- */

/* What key__align needs from a graph: its outputs under an assignment or a
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

/* r = the smallest key of s over its bindings and every aligned form reaching it. */
key_status key__align(key_ctx *c, src *s, key_result *r);

/* ---- parents (key_parent.c) ---- */

/* P's node values under binding lab: from P's cache, or evaluated into it. */
key_status key__labelled(key_ctx *c, key_parent *P, const uint8_t *lab,
                         const uint64_t *val[SG_MAX_NODES]);

#endif
