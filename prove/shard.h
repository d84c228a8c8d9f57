/* shard.h - prove divided between machines (prefix ps_).
 *
 * The unit of division is the lane (batch.h): a pair's lane is a hash of
 * its question, and everything that decides a pair (its seed, its group's
 * first pair, the Z3 context history of its lane, the 1x1-kernel retry,
 * which inherits the lane) depends only on the pairs of that lane. So
 * `prove --shard K/N` reads the whole candidates file, keeps the pairs of
 * lanes l with l % N == K (N <= BT_LANES), and decides each exactly as the
 * undivided run does. A shard writes its rules unpruned, each with the id
 * ps_rule_id: the rule's place in the undivided run's emission order
 * (class, guarded rules first, member, direction). The merge
 * (pv_merge_shards_file) sorts the shards' rules by id, which is that
 * order, and runs the final pruning once over all of them: pruning keeps
 * a rule implied by smaller rules only if those are absent, which only the
 * whole set tells.
 *
 * A shard's notes say which shard it is (PS_SHARD_NOTE) and which
 * candidates file it read (PS_INPUT_NOTE, XXH64 of its bytes); its counts
 * are in the notes the undivided run writes, which the merge adds up.
 */
#ifndef SHARD_H
#define SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "emit.h"

#define PS_SHARD_NOTE "shard=%u/%u"
#define PS_INPUT_NOTE "candidates_xxh64=%016llx"

/* The id of a shard's rule: class << 24 | (not guarded) << 23 |
 * member << 1 | reversed. @pre ps_check_ids passed. */
uint64_t ps_rule_id(const em_rule *r);

/* @return 0 when every rule's class and member fit ps_rule_id, else -1. */
int ps_check_ids(const em_rule *r, size_t n);

#endif
