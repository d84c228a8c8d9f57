/* derive.h - the bounds of a derivation, shared by the pruning
 * (derive.c) and prove --known (known.c). */
#ifndef PROVE_DERIVE_H
#define PROVE_DERIVE_H

#include "egraph/egraph.h"
#include "prove.h"

/* d with its bounds and mode not given (0, -1) filled: the most a note of
 * f (may be NULL) says the file was pruned with and the last note's mode,
 * else the defaults. */
pv_derive_options pv_derive_bounds(const pv_derive_options *d, const rdb_file *f);

/* The engine's options for a derivation within d's rounds and e-nodes. */
void pv_derive_engine_opts(const pv_derive_options *d, eg_search_opts *o);

#endif
