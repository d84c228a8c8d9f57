/* fptable.h - the fingerprint table (prefix fpt_): equivalence classes of
 * aligned graphs keyed by their key bytes (key.h).
 *
 * Buckets by a 64-bit hash of the key bytes (XXH3, replaceable by a test
 * hook), then exact comparison of the bytes: a hash collision costs time,
 * never a wrong class. A class stores its hash, its representative (the
 * smallest graph: fewest nodes, then bytes), its members and how many
 * graphs reached it; the key bytes themselves only once a second graph
 * hashes to the class (they are recomputed from the representative then),
 * so classes that stay alone - most of them - cost 72 bytes.
 *
 * Striped: 2^k independent stripes chosen by the hash's top bits, each with
 * its own lock, so threads rarely wait. The final content does not depend
 * on the order of additions: the representative is a minimum, members a
 * set, counts a sum.
 *
 * fpt_mark / fpt_rollback undo everything added since the mark (a memory
 * limit pass that ran out of room).
 */
#ifndef SYN_FPTABLE_H
#define SYN_FPTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "key.h"
#include "sgraph.h"

typedef uint64_t (*fpt_hash_fn)(const void *data, size_t len);

typedef struct {
    uint64_t hash;
    uint64_t count; /* graphs that reached the class */
    uint64_t key_off;
    sg_graph rep;
    uint32_t rep_dups; /* the representative reached again */
    uint32_t head;     /* first member + 1; 0: none */
    uint32_t n_members;
    uint32_t key_len; /* 0 until the key bytes are stored */
} fpt_class;

typedef struct fpt fpt;
typedef struct fpt_mark fpt_mark;

/* A table with 2^stripe_bits stripes; hash NULL means XXH3-64.
 * @return the table or NULL when out of memory. */
fpt *fpt_new(int stripe_bits, fpt_hash_fn hash);
void fpt_free(fpt *t);

/* The table's hash of key bytes. */
uint64_t fpt_hash(const fpt *t, const uint8_t *key, size_t len);

/* Record n aligned forms of one generated graph, all with these key bytes
 * and hash: a new class (the smallest form its representative), or members
 * of the existing one. Thread-safe. c evaluates representatives when their
 * key bytes are needed.
 * @return 0, or -1 when out of memory. */
int fpt_add(fpt *t, key_ctx *c, const uint8_t *key, size_t len, uint64_t hash,
            const sg_graph *g, int n);

/* Bytes the table holds (capacities, not contents). */
uint64_t fpt_bytes(const fpt *t);

int fpt_n_stripes(const fpt *t);

/* The classes of stripe s: *n of them (valid until the next fpt_add). */
const fpt_class *fpt_classes(const fpt *t, int s, size_t *n);

/* Copy class ci of stripe s's members into buf (up to cap).
 * @return the number of members. */
size_t fpt_members(const fpt *t, int s, const fpt_class *c, sg_graph *buf, size_t cap);

/* The key bytes of a class (stored, or computed with c into buf).
 * @pre buf has KEY_MAX_BYTES. @return 0, or -1 (evaluation failed). */
int fpt_key(const fpt *t, key_ctx *c, int s, const fpt_class *cls, uint8_t *buf, size_t *len);

/* Remember the current content. @return the mark, NULL when out of memory. */
fpt_mark *fpt_mark_new(const fpt *t);

/* Drop everything added since m was made, and release spare memory. */
void fpt_rollback(fpt *t, const fpt_mark *m);
void fpt_mark_free(fpt_mark *m);

#endif
