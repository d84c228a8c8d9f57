/* runfile.h - what the prove pipeline (run.c) shares with the merge of
 * its shards (shard.c): the rules file, counts, summary and digests, so a
 * merged run writes what the undivided run writes, from one code path. */
#ifndef RUNFILE_H
#define RUNFILE_H

#include <stdint.h>

#include "emit.h"
#include "known.h"
#include "prove.h"
#include "reduce.h"

/* The count of pairs --known derived, a note of a run that used it. */
#define PV_DERIVED_NOTE "known derived=%zu"

/* The rules file of a run: the generator (tool, counts, timings, notes
 * from in's generator, o, st and known, the rules of --known or an
 * unopened kn_set) and rules[0..n) in order, ids 0, 1, ...; for a shard
 * (o->shard_n > 1) ids are ps_rule_id and a shard note is added.
 * @return 0, or -1 when out of memory. */
int pv_rules_file(const rdb_file *in, const pv_options *o, const em_rule *rules, size_t n,
                  const pv_stats *st, const kn_set *known, rdb_file **out);

/* The pruning counts into st->prune. */
void pv_copy_counts(const rd_counts *c, pv_stats *st);

/* CPU time and peak RSS of this process so far. */
void pv_resources(uint64_t *cpu_ms, long *rss_kb);

/* The closing summary on o's log. */
void pv_summary(const pv_options *o, const pv_stats *st);

/* XXH64 of a file's bytes (files.c). @return 0, or -1 when unreadable. */
int pv_file_digest(const char *path, uint64_t *h);

#endif
