/* clsout.h - one class as the candidates file holds it (prefix co_): its
 * members over one numbering of at most 8 inputs, sorted by rg_compare,
 * pruned (prune.h), with its fingerprint and count. Used by the unsharded
 * run on the table's classes and by the merge of shards (shard.h) on the
 * classes joined from the shards' files, so both write the same bytes.
 */
#ifndef SYN_CLSOUT_H
#define SYN_CLSOUT_H

#include <stddef.h>
#include <stdint.h>

#include "key.h"
#include "prune.h"
#include "synth.h"

/* One writer per thread: evaluation scratch, a file of classes, counts. */
typedef struct {
    const pool *pool;
    const dom *dom;
    int max_ops, no_prune;
    key_ctx *kc;
    pr_scratch *ps;
    rdb_file *out; /* the classes written, in the order given */
    syn_stats st;  /* classes, class_graphs, level_classes[max_ops],
                      over_inputs, candidates, members, pruning */
    struct co_pair *g;
    sg_graph *sg;
    size_t cap;
    uint8_t *key;
    char err[SYN_ERRLEN];
} co_writer;

/* @return 0, or -1 when out of memory (co_free is still safe). */
int co_init(co_writer *w, const pool *p, const dom *d, int max_ops, int no_prune, int cuda);
void co_free(co_writer *w);

/* Count the class (representative rep, the other members mem[0..n), in
 * any order, distinct and unlike rep; count graphs seen) and append it
 * to w->out when pruning leaves two graphs or more.
 * @return SYN_OK, or an error with a message in w->err. */
syn_status co_class(co_writer *w, const sg_graph *rep, const sg_graph *mem, size_t n,
                    uint64_t count);

/* Add the counts co_class keeps from one writer to another's. */
void co_add_counts(syn_stats *to, const syn_stats *from, int max_ops);

/* Sort a candidates file's classes by fingerprint (the file order). */
void co_sort(rdb_file *f);

#endif
