/* known.h - prove --known: the candidate pairs a ruledb's rules already
 * derive (prefix kn_), decided in the engine's e-graph instead of by Z3.
 *
 * Why. A depth-4 run over every operator pairs 2.5 M candidates, most of
 * them the shipped depth-3 rules applied twice or in a context, and every
 * rule they give would be pruned again, by derivability over a union of
 * hundreds of thousands of rules. Tested once Z3 has proved it, such a
 * pair needs no rule: it is counted as derived and written nowhere, and
 * the file holds only what may say something new. That is the depth-3
 * set's pruning applied to the candidates as they come. (Only the pairs
 * Z3 proved are tested: the rest give no rule anyway, and at depth 4 most
 * are pairs Z3 cannot prove, whose derivations run to the bound.)
 *
 * A pair is derived as prove --prune-derivable derives a rule and its
 * reverse (eg_derive_pair), under the bounds and the mode of
 * pv_derive_options. Deterministic: it depends on the pair, the file and
 * the bounds only, so a prove run stays independent of --jobs and of the
 * machine's load.
 */
#ifndef KNOWN_H
#define KNOWN_H

#include <stddef.h>
#include <stdint.h>

#include "egraph/egraph.h"
#include "prove.h"

typedef struct {
    eg_ruleset *rs;         /* the file as the engine reads it */
    eg_search_opts o;
    pv_derive_options bounds; /* as used: none left 0 */
    uint64_t digest;        /* XXH64 of the file's bytes */
} kn_set;

/* Read the rules file at path for kn_derives, with d's bounds and mode
 * (those not given: from the file's notes, as prove --derive reads a
 * pruned file).
 * @return PV_OK, PV_EINPUT (unreadable, not a rules file, other opspecs)
 *         with a message naming the file, or PV_ENOMEM. */
int kn_open(const char *path, const pv_derive_options *d, kn_set *k, char *err, size_t errlen);

/* dc_known_fn (decide.h) over a kn_set: 1 when its rules derive a = b. */
int kn_derives(const void *k, const rg_graph *a, const rg_graph *b);

/* The note a rules file proved with k carries ("known xxh64=... rounds=R
 * nodes=N by=MODE"), for the merge of a divided run to compare. */
void kn_note(const kn_set *k, char *buf, size_t len);

void kn_close(kn_set *k);

#endif
