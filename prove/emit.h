/* emit.h - rules from proved candidate classes, and keys of a rule under
 * renaming of its inputs (prefix em_).
 *
 * Directions. A class's members are over one set of inputs. Between the
 * representative (member 0) and each other member that was proved equal
 * to it, a rule is emitted in each direction whose destination uses no
 * input its source lacks (the engine binds inputs by matching the source,
 * and a destination input it never bound would be unbound; egg rejects
 * such rules) and whose source outputs are all operator nodes (a bare
 * input as a pattern would match every value: x0 => conv(x0, iconv x0)
 * is true but no rule). Both directions are kept because the engine's
 * search needs to rewrite either way (to undo a rewrite on the way to a
 * better graph).
 *
 * Canonical form: rg_canon_rule (rgraph.h).
 */
#ifndef EMIT_H
#define EMIT_H

#include <stddef.h>
#include <stdint.h>

#include "ruledb.h"

/* The rule key: rg_encode of both graphs, back to back. */
typedef struct {
    uint16_t len;
    uint8_t b[2 * RG_ENC_MAX];
} em_key;

typedef struct {
    rg_graph src, dst;
    size_t cls, member; /* provenance: class index, member paired with 0 */
    int reversed;       /* 0: member 0 -> member; 1: member -> member 0 */
    int guarded;        /* from the pair decided with 1x1-kernel guards */
    rdb_prover prover;
} em_rule;

/* A hash map from rule keys to indices (open addressing, fixed capacity). */
typedef struct {
    em_key *keys;
    size_t *vals;
    size_t n, cap;
    uint32_t *slot; /* key index + 1, or 0 */
    size_t mask;
} em_map;

/* @return 0, or -1 when out of memory (em_map_free is still safe). */
int em_map_init(em_map *m, size_t cap);

void em_map_free(em_map *m);

/* The value stored for k, or SIZE_MAX when absent. */
size_t em_map_get(const em_map *m, const em_key *k);

/* Store k -> v unless k is present. @pre fewer than cap keys stored.
 * @return the value now stored for k (v when it was added). */
size_t em_map_put(em_map *m, const em_key *k, size_t v);

void em_key_of(const rg_graph *src, const rg_graph *dst, em_key *k);

/* The key of the question "a = b?", the same for (b, a) and for any
 * renaming of the inputs: the smaller of the canonical keys of a -> b and
 * b -> a. Z3 and the shape-free checks answer it once for all its pairs. */
void em_pair_key(const rg_graph *a, const rg_graph *b, em_key *k);

/* Append the rules of the proved pairs of class c (index ci) to *rules:
 * proved[m] tells whether member m >= 1 was proved equal to member 0, and
 * pv[m] is its prover record. Identical graphs give no rule.
 * @return 0, or -1 when out of memory. */
int em_class_rules(const rdb_class *c, size_t ci, const uint8_t *proved,
                   const rdb_prover *pv, em_rule **rules, size_t *n, size_t *cap);

#endif
