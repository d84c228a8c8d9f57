/* batch.h - decide many candidate pairs on worker threads (prefix bt_).
 *
 * Phases:
 *  1. stage 1 (decide.h) for every pair that has shapes, spread over the
 *     threads item by item (no Z3, nothing shared);
 *  2. the pairs that pass are grouped by question (em_pair_key: the same
 *     pair up to renaming and order): synth makes one class per input
 *     shapes, so the same identity often comes several times, and a
 *     verdict on it is a verdict on all (stage 2 starts from the shapes of
 *     the group's first pair; any refutation refutes the rule);
 *  3. stages 2 and 3 once per group, on BT_LANES lanes: every pair carries
 *     its lane (the caller's choice: bt_lane of its question, so a
 *     question's pairs share a lane), groups are formed within a lane, and
 *     a lane's groups are decided in order of their first pair by one
 *     thread with one Z3 context (z3enc.h: a check may depend on the
 *     context's history, so the lanes, not the threads, fix that history);
 *     threads take whole lanes.
 * So the verdicts depend on the pairs, seeds and limits, never on the
 * number of threads; and a lane's verdicts only on the pairs in that lane,
 * which is what lets `prove --shard` divide the lanes between machines and
 * still decide every pair as the undivided run does. Every pair of a group
 * gets the group's verdict.
 */
#ifndef BATCH_H
#define BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "decide.h"
#include "emit.h"

#define BT_LANES 16

typedef struct {
    const rg_graph *a, *b;
    const ten_shape *shapes; /* NULL: no stage 1 (a rule has no shapes) */
    int n_shapes;
    uint64_t seed;
    uint8_t lane; /* < BT_LANES */
} bt_pair;

/* The lane of a question (em_pair_key): a hash of its bytes. */
unsigned bt_lane(const em_key *k);

typedef struct {
    size_t distinct; /* groups decided by stages 2 and 3 */
    size_t errors;   /* decisions an internal error prevented (UNKNOWN) */
} bt_stats;

/* Called from the calling thread every interval while a phase runs:
 * phase "shapes" or "proving", items done and total in that phase, the
 * verdicts so far by rdb_proof (groups in the proving phase), and the
 * first pair (in time: which one depends on the threads) that ran out of
 * budget, or NULL, for a progress report to look into. */
typedef void (*bt_progress)(void *arg, const char *phase, size_t done, size_t total,
                            const size_t by[RDB_PROOF_COUNT], const bt_pair *budget);

/* Decide pairs[0..n) into res[0..n) (the phases above) on `jobs` threads
 * (< 1: one per core). progress may be NULL.
 * @return 0, or -1 when out of memory (res is then incomplete). */
int bt_decide(const dc_config *cfg, const bt_pair *pairs, size_t n, int jobs,
              bt_progress progress, void *arg, unsigned interval_ms, dc_result *res,
              bt_stats *st);

#endif
