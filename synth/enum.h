/* enum.h - one level of the enumeration by representatives (prefix en_):
 * every graph of `level` nodes that synth builds from the representatives
 * of smaller levels, fingerprinted and added to the table.
 *
 * Three ways to make a graph of n nodes, all from representatives only:
 *  - extend: a representative of n-1 nodes plus one node whose inputs are
 *    its nodes (outputs or inner ones), its variables, or new variables (at
 *    most one new variable per input position, numbered in order);
 *  - join: op(a, b) for two single-output representatives of i and j
 *    nodes, i + j = n - 1 (i >= j), over every way of identifying b's
 *    variables with a's or new ones. This builds relu(x) + relu(y) and
 *    mm(cat(x, z), cat(y, w)) without storing the pair (relu x, relu y):
 *    disconnected two-output graphs are never stored (their classes would
 *    be all pairs of classes, quadratic in memory, and as rules they are two
 *    independent rules side by side);
 *  - split pair: a single-output representative of n-2 nodes whose output
 *    has a split point, plus split0 and split1 of it (TASO's split is one
 *    operator with two outputs; made in one step, the pair does not hang on
 *    which graph represents "x with one half split off").
 * A graph keeps at most two sinks (its outputs); with two, their cones share
 * a node or a variable (a constant's shape reference does not count). A
 * split cuts a value at its split point (sgraph.h).
 * Constants (imm, iconv, poolk, ones) take an existing variable as their
 * shape reference. A node identical to an existing one is never added.
 *
 * Threads take representatives from a shared counter; the table's content
 * does not depend on who adds what first (fptable.h).
 */
#ifndef SYN_ENUM_H
#define SYN_ENUM_H

#include <stdint.h>
#include <stdio.h>

#include "dom.h"
#include "fptable.h"
#include "pool.h"
#include "sgraph.h"

typedef struct {
    const pool *pool;
    const dom *dom;
    fpt *table;
    int level;            /* nodes of the graphs made, >= 1 */
    const sg_graph *prev; /* representatives of level-1 nodes (any outputs) */
    size_t n_prev;
    const sg_graph *const *single; /* single[i]: single-output reps of i nodes */
    const size_t *n_single;        /* for i < level */
    int threads;
    int cuda;
    /* Only the work items of share item_k of item_n (enum.c: by the hash
     * of the item's representative and kind) are run; item_n 0 or 1: all.
     * A synth shard runs its share of the last level this way. */
    uint32_t item_k, item_n;
    /* Only graphs with keep(arg, hash) are added (NULL: all). */
    int (*keep)(void *arg, uint64_t hash);
    void *keep_arg;
    uint64_t mem_budget; /* stop when the table holds more (0: no limit) */
    FILE *progress;      /* a line every ~2 s (NULL: quiet) */
    double t0;           /* run start, for the progress line */
} en_level;

typedef struct {
    uint64_t graphs;  /* generated and fingerprinted */
    uint64_t skipped; /* too large to fingerprint, or too symmetric */
    uint64_t evals;   /* node evaluations */
    int over_budget;  /* stopped at mem_budget: the level is incomplete */
} en_result;

/* Enumerate one level.
 * @return 0; -1 out of memory; -2 the CUDA backend failed. */
int en_run(const en_level *L, en_result *r);

/* Seconds on a monotonic clock. */
double en_now(void);

/* Resident set size in bytes (/proc/self/statm), 0 when unknown. */
uint64_t en_rss(void);

#endif
