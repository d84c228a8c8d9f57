/* shard_id.c - the id of a shard's rule (shard.h: ps_rule_id): the rule's
 * place in the undivided run's emission order. Apart from the merge
 * (shard.c) because the run (run.c) names its rules with it, and the merge
 * reuses the run's rules-file writer: one file each way, no circle. */
#include "shard.h"

#define CLS_BITS 40
#define MEMBER_BITS 22

uint64_t ps_rule_id(const em_rule *r) {
    return (uint64_t)r->cls << 24 | (uint64_t)!r->guarded << 23 | (uint64_t)r->member << 1 |
           (uint64_t)(r->reversed != 0);
}

int ps_check_ids(const em_rule *r, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((uint64_t)r[i].cls >> CLS_BITS || (uint64_t)r[i].member >> MEMBER_BITS) return -1;
    return 0;
}
