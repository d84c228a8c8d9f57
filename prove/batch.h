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
 *  3. stages 2 and 3 once per group, on BT_LANES lanes: group g belongs to
 *     lane g % BT_LANES, a lane's groups are decided in order by one thread
 *     with one Z3 context (z3enc.h: a check may depend on the context's
 *     history, so the lanes, not the threads, fix that history); threads
 *     take whole lanes.
 * So the verdicts depend on the pairs, seeds and limits, never on the
 * number of threads. Every pair of a group gets the group's verdict.
 */
#ifndef BATCH_H
#define BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "decide.h"

#define BT_LANES 16

typedef struct {
    const rg_graph *a, *b;
    const ten_shape *shapes; /* NULL: no stage 1 (a rule has no shapes) */
    int n_shapes;
    uint64_t seed;
} bt_pair;

typedef struct {
    size_t distinct; /* groups decided by stages 2 and 3 */
    size_t errors;   /* decisions an internal error prevented (UNKNOWN) */
} bt_stats;

/* Called from the calling thread every interval while a phase runs:
 * phase "shapes" or "proving", items done and total in that phase, and
 * the verdicts so far by rdb_proof (groups in the proving phase). */
typedef void (*bt_progress)(void *arg, const char *phase, size_t done, size_t total,
                            const size_t by[RDB_PROOF_COUNT]);

/* Decide pairs[0..n) into res[0..n) (the phases above) on `jobs` threads
 * (< 1: one per core). progress may be NULL.
 * @return 0, or -1 when out of memory (res is then incomplete). */
int bt_decide(const dc_config *cfg, const bt_pair *pairs, size_t n, int jobs,
              bt_progress progress, void *arg, unsigned interval_ms, dc_result *res,
              bt_stats *st);

#endif
