/* key.h - fingerprints and variable alignment (prefix key_).
 *
 * A graph is generated over *slots* (abstract variables with a type). Its
 * key is its outputs evaluated with each slot bound to a pool variable of
 * its type, under the *alignment*: the binding chosen from what the graph
 * computes, so that graphs equal up to renaming get equal keys and their
 * aligned forms are over the same variables. That is what makes
 * mm(a, mm(b, c)) and mm(mm(a, b), c) meet although their slots are
 * numbered differently, and what makes a graph and its renaming one graph.
 *
 * Alignment: evaluate the graph once with every slot bound to its type's
 * "base" tensor, and once per slot s with s bound to the type's "probe"
 * tensor (the others at base): slot s's *signature*. A slot whose
 * signature equals the base outputs does not influence the outputs (the x
 * of split1(concat(x, y)), the reference of ones(x)). Per type, the
 * influential slots take the pool's variables 0, 1, ... in signature order,
 * the others the next ones. Slots with equal signatures (x and y of
 * ewadd(x, y)) are permuted: every order is evaluated on the pool tensors
 * and the smallest output bytes win; every binding reaching them gives an
 * aligned graph (ewadd(v0, v1) and ewadd(v1, v0): the commutativity pair).
 * Signatures are properties of the function, not of the graph's wording, so
 * equal functions get equal alignments.
 *
 * Key bytes: per output, in increasing (shape, data) order, the packed
 * shape word then the residues on every trial (pool.h), little-endian u64
 * (the ruledb fingerprint).
 *
 * Two ways to compute a key: key_graph evaluates a whole slot graph
 * (level 0, tests); key_extend evaluates only the node added to a parent
 * whose values under every binding are cached (the hot path). They give the
 * same result (tested).
 *
 * Example: the key of relu(x) and the aligned form relu(v_act0):
 *     key_ctx *c = key_ctx_new(&pool, &dom, 0);
 *     sg_graph g = {1, 1, {SG_NODE(0)}, {{OP_RELU, 0, {0, 0}}}};
 *     uint8_t types[1] = {2};          // slot 0 is an activation
 *     key_result r;
 *     if (key_graph(c, &g, 1, types, &r) == KEY_OK) use r.key, r.len, r.aligned[0];
 */
#ifndef SYN_KEY_H
#define SYN_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "dom.h"
#include "pool.h"
#include "sgraph.h"

#define KEY_MAX_SLOTS RG_MAX_INPUTS
#define KEY_N_ASSIGN (1 + KEY_MAX_SLOTS) /* 0: base; 1 + s: slot s probed */
#define KEY_MAX_NUMEL 4096               /* larger values: the graph is skipped */
#define KEY_MAX_CELLS (KEY_MAX_NUMEL * POOL_TRIALS)
#define KEY_MAX_BYTES (SG_MAX_OUT * (1 + KEY_MAX_CELLS) * 8)
/* Cells a value of packed shape w occupies: every trial's sample. */
#define KEY_CELLS(w) (dom_numel(w) * POOL_TRIALS)
#define KEY_MAX_ALIGNED 32   /* aligned forms kept per graph (the smallest) */
#define KEY_MAX_BINDINGS 720 /* more tied orders than this: skipped */
#define KEY_LC 4             /* labelled evaluations cached per parent */

typedef enum {
    KEY_OK = 0,
    KEY_SKIP,  /* a value too large, or too many tied slots: not enumerated */
    KEY_ENOMEM,
    KEY_EDEV   /* the CUDA backend failed */
} key_status;

typedef struct key_ctx key_ctx;

typedef struct {
    const uint8_t *key; /* owned by the ctx, valid until its next call */
    size_t len;
    int n_aligned;                     /* distinct aligned forms, sorted */
    sg_graph aligned[KEY_MAX_ALIGNED]; /* canonical, over pool variables */
} key_result;

/* A graph whose node values are cached under every binding: the rep being
 * extended, or a rep joined with a second one (key_parent_join). */
typedef struct key_parent {
    sg_graph g; /* slot graph */
    int n_slots;
    uint8_t slot_type[KEY_MAX_SLOTS];
    uint64_t shape[SG_N_REFS];
    ten_shape tshape[SG_N_REFS];
    int32_t param[SG_MAX_NODES][OPS_MAX_PARAMS];
    sg_bound bound[SG_N_REFS]; /* split points */
    uint64_t cone[SG_N_REFS];
    const uint64_t *val[KEY_N_ASSIGN][SG_MAX_NODES];
    /* labelled values: entry i holds the nodes from first_own on */
    struct {
        int used;
        uint8_t lab[KEY_MAX_SLOTS];
        uint64_t *val[SG_MAX_NODES];
    } lc[KEY_LC];
    int lc_next;
    struct key_parent *base; /* joined parents: the first rep's parent */
    int first_own;           /* nodes below this belong to base */
    size_t mark[2];          /* arena position before this parent */
} key_parent;

/* The node a key_extend adds and the resulting graph's outputs (its shape
 * and params from sg_node_shape over the parent). */
typedef struct {
    sg_node n; /* inputs: SG_NODE(j) of the parent, or slots < n_slots */
    int32_t param[OPS_MAX_PARAMS];
    uint64_t shape;
    int n_slots; /* parent's slots plus new ones */
    uint8_t slot_type[KEY_MAX_SLOTS];
    int n_sinks; /* outputs: parent nodes, or SG_NODE(parent n_nodes) */
    uint8_t sink[SG_MAX_OUT];
} key_ext;

/* Scratch for one thread. backend_cuda routes element-wise operators to
 * gpu_ewise. @return the ctx, or NULL when out of memory. */
key_ctx *key_ctx_new(const pool *p, const dom *d, int backend_cuda);
void key_ctx_free(key_ctx *c);

/* The ctx's shape memo. */
dom_memo *key_memo(key_ctx *c);

/* The key and aligned forms of a slot graph (outputs: g->out).
 * @pre g has valid shapes for these slot types; n_slots <= KEY_MAX_SLOTS
 *      and at most the pool's count of each type.
 * @return KEY_OK, KEY_SKIP, KEY_ENOMEM or KEY_EDEV */
key_status key_graph(key_ctx *c, const sg_graph *g, int n_slots,
                     const uint8_t *slot_type, key_result *r);

/* Make P the parent of an aligned graph (a rep): slots in order of first
 * use, values cached. Allocates from the ctx arena: release P (and every
 * parent made after it) with key_parent_release, last made first.
 * @return KEY_OK, KEY_SKIP, KEY_ENOMEM or KEY_EDEV */
key_status key_parent_from_rep(key_ctx *c, const sg_graph *rep, key_parent *P);

/* P = base plus the nodes of the aligned graph r2 (disjoint from base),
 * whose pool variable v becomes slot map[v] (a slot of base or a new one
 * numbered from base->n_slots; types as in the pool). r2's outputs are not
 * P's outputs: P only offers its nodes to key_extend.
 * @return as key_parent_from_rep */
key_status key_parent_join(key_ctx *c, key_parent *base, const sg_graph *r2,
                           const int8_t map[POOL_MAX_VARS], key_parent *P);

/* P = base plus node n, whose inputs are base's nodes or slots (no new
 * slot). Like a join, P only offers its nodes to key_extend.
 * @return as key_parent_from_rep */
key_status key_parent_push(key_ctx *c, key_parent *base, const sg_node *n, key_parent *P);

/* Give P's arena space back (P must be the newest parent alive). */
void key_parent_release(key_ctx *c, key_parent *P);

/* The key and aligned forms of P plus the node e->n.
 * @pre e's shape and params are dom_infer's; its refs exist.
 * @return as key_graph */
key_status key_extend(key_ctx *c, key_parent *P, const key_ext *e, key_result *r);

/* Key bytes of an aligned graph, outputs in its stored order (for an
 * aligned form that is the key). @return KEY_OK, KEY_SKIP, ... */
key_status key_of_aligned(key_ctx *c, const sg_graph *g, uint8_t *buf, size_t *len);

/* Values of every node of an aligned graph on the pool tensors: val[r] for
 * node refs r (valid until the ctx's next call); leaves are c's pool.
 * @return as key_of_aligned */
key_status key_values(key_ctx *c, const sg_graph *g, const uint64_t *val[SG_N_REFS],
                      uint64_t shape[SG_N_REFS]);

/* key_values with node `node` of g taking the value `subst` (a tensor of
 * its shape, POOL_TRIALS samples) instead of being evaluated: g with that
 * node turned into a variable. */
key_status key_values_subst(key_ctx *c, const sg_graph *g, int node, const uint64_t *subst,
                            const uint64_t *val[SG_N_REFS], uint64_t shape[SG_N_REFS]);

/* Node evaluations so far (for the statistics). */
uint64_t key_node_evals(const key_ctx *c);

#endif
