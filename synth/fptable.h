/* fptable.h - the fingerprint table (prefix fpt_): equivalence classes of
 * aligned graphs keyed by their key bytes (key.h).
 *
 * Buckets by a 64-bit hash of the key bytes (XXH3, replaceable by a test
 * hook) and a 32-bit check hash, then exact comparison of the bytes: a hash
 * collision costs time, never a wrong class. The table does not keep key
 * bytes: a class stores its hashes, its representative (the smallest graph:
 * fewest nodes, then bytes), its members and how many graphs reached it,
 * 56 bytes (36 per member), and the bytes are recomputed from the
 * representative when both hashes match (a per-thread cache keeps recent
 * ones). That is what lets depth 4 fit in memory.
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
    uint32_t check;
    uint32_t count; /* graphs that reached the class */
    sg_graph rep;
    uint32_t head; /* first member + 1; 0: none */
    uint32_t n_members;
} fpt_class;

typedef struct fpt fpt;
typedef struct fpt_mark fpt_mark;
typedef struct fpt_cache fpt_cache; /* recent key bytes, one per thread */

/* A table with 2^stripe_bits stripes; hash NULL means XXH3-64.
 * @return the table or NULL when out of memory. */
fpt *fpt_new(int stripe_bits, fpt_hash_fn hash);
void fpt_free(fpt *t);

/* The table's hash of key bytes. */
uint64_t fpt_hash(const fpt *t, const uint8_t *key, size_t len);

/* A cache of key bytes for one thread. @return it, or NULL (no memory). */
fpt_cache *fpt_cache_new(void);
void fpt_cache_free(fpt_cache *k);

/* Record n aligned forms of one generated graph, all with these key bytes
 * and hash: a new class (the smallest form its representative), or members
 * of the existing one. Thread-safe. c evaluates representatives when their
 * key bytes are needed (kc caches them; one per thread).
 * @return 0, or -1 when out of memory. */
int fpt_add(fpt *t, fpt_cache *kc, key_ctx *c, const uint8_t *key, size_t len, uint64_t hash,
            const sg_graph *g, int n);

/* Bytes the table holds (capacities, not contents). */
uint64_t fpt_bytes(const fpt *t);

/* Classes in the table. */
uint64_t fpt_n_classes(const fpt *t);

int fpt_n_stripes(const fpt *t);

/* The classes of stripe s: *n of them (valid until the next fpt_add). */
const fpt_class *fpt_classes(const fpt *t, int s, size_t *n);

/* Copy class ci of stripe s's members into buf (up to cap).
 * @return the number of members. */
size_t fpt_members(const fpt *t, int s, const fpt_class *c, sg_graph *buf, size_t cap);

/* The key bytes of a class, computed with c into buf.
 * @pre buf has KEY_MAX_BYTES. @return 0, or -1 (evaluation failed). */
int fpt_key(key_ctx *c, const fpt_class *cls, uint8_t *buf, size_t *len);

/* Remember the current content. @return the mark, NULL when out of memory. */
fpt_mark *fpt_mark_new(const fpt *t);

/* Drop everything added since m was made, and release spare memory. */
void fpt_rollback(fpt *t, const fpt_mark *m);
void fpt_mark_free(fpt_mark *m);

/* The count class ci of stripe s had when m was made: the graphs of the
 * levels below the last that reached it (0: the class is newer than m).
 * A synth shard writes it apart from the rest of the count, because every
 * shard sees those graphs and the merge must count them once. */
uint32_t fpt_mark_count(const fpt_mark *m, int s, size_t ci);

#endif
