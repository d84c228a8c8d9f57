/* gsym.h - rules proved for any group count (prefix gs_).
 *
 * synth enumerates convs with groups 1 (and 2 with --groups2), so every
 * candidate writes a literal count and a proof of it holds for that count
 * only: a rule that merges two convs would never see a depthwise conv
 * (groups = channels). Most conv rules do not depend on the count (a sum
 * of convs of one input with one count is a conv of the summed kernels,
 * whatever the count); those that mix channels across groups do (a concat
 * or split on the channel axis, a composition of 1x1 kernels, an identity
 * kernel).
 *
 * gs_generalize tries each proved rule again with its literal counts
 * replaced by group-count symbols (rgraph.h: the same literal becomes the
 * same symbol; a count the destination writes and the source does not
 * stays literal, since nothing would bind it). The generalized pair is
 * decided as any candidate pair (batch.h), first evaluated at shapes where
 * every symbol is 2 (a variant of the class shapes: a weight's input
 * channels halved, or an output count doubled), so a rule that needs one
 * group is refuted there without Z3, then proved by Z3 with each symbol
 * an unknown count >= 1. A proved generalization replaces the rule; any
 * other verdict keeps the literal rule. Deterministic: the pairs, seeds
 * and lanes are fixed by the rules, and each pair is decided in the lane
 * of the candidate pair its rule came from, so a shard (prove --shard)
 * decides the same pairs in the same order as the undivided run.
 */
#ifndef GSYM_H
#define GSYM_H

#include <stddef.h>

#include "batch.h"
#include "emit.h"

typedef struct {
    size_t tried;       /* rules with a literal count and shapes at count 2 */
    size_t generalized; /* of them, proved for any count */
} gs_stats;

/* Generalize rules[0..n) in place (above); cands gives each rule's class
 * shapes (rules as emitted: class input numbering).
 * @return 0, or -1 when out of memory (rules are then unchanged). */
int gs_generalize(const dc_config *cfg, const rdb_file *cands, em_rule *rules, size_t n, int jobs,
                  bt_progress progress, void *arg, unsigned interval_ms, gs_stats *st);

#endif
