/* prune.h - redundancy pruning of a candidate class without a prover
 * (prefix pr_). A class is a base graph g[0] and members g[1..]; each pair
 * (g[0], g[i]) is a candidate rule. Steps, in order:
 *
 *  renaming  drop g[i] when a renaming s of the variables (and maybe a swap
 *            of the two outputs) keeps g[0] as it is and turns g[i] into some
 *            kept g[j], j < i: the pair is the earlier pair renamed;
 *  input     drop g[i] when a node of g[0] and a node of g[i] compute the
 *            same value T and both graphs stay equal with those nodes
 *            replaced by one fresh random tensor z: the pair follows from
 *            two smaller ones, (T in g[0], T in g[i]) and the pair over z
 *            (TASO's common input-side subgraph, by value: ewadd(x, y) and
 *            ewadd(y, x) are one T). The check matters: relu(x) and
 *            relu(relu(x)) share relu(x), yet z = relu(z) is false;
 *  instances drop g[i] when a variable v read in several places can be
 *            replaced by a fresh pool variable w in some of them (constants'
 *            shape references aside) and the pair stays equal: the pair is
 *            the more general one with w := v (concat(x, concat(x, x)) and
 *            concat(concat(x, x), x) are associativity, already found over
 *            three variables);
 *  output    drop g[i] when every output of g[0] and of g[i] is the same
 *            operator with the same parameters over inputs that are pairwise
 *            equal (in either order for a commutative operator): the pair
 *            is smaller rules (between the inputs) under a common node; or,
 *            with two outputs, when neither graph shares a node between its
 *            outputs: two one-output rules side by side.
 *
 * Members that are renamings of g[0] are kept: ewadd(x0, x1) and
 * ewadd(x1, x0) in one class is commutativity, a rule.
 */
#ifndef SYN_PRUNE_H
#define SYN_PRUNE_H

#include <stddef.h>
#include <stdint.h>

#include "key.h"
#include "pool.h"
#include "sgraph.h"

enum { PR_FOUND, PR_RENAMING, PR_INPUT, PR_INSTANCE, PR_OUTPUT, PR_N };

/* Per step (PR_FOUND: before any), classes with two or more graphs left
 * and the graphs in them. */
typedef struct {
    uint64_t classes[PR_N], graphs[PR_N];
} pr_counts;

extern const char *const pr_step_name[PR_N];

/* Scratch of pr_class, one per thread. @return it, or NULL (no memory). */
typedef struct pr_scratch pr_scratch;
pr_scratch *pr_scratch_new(void);
void pr_scratch_free(pr_scratch *s);

/* Prune the class g[0..n-1] in place (kept graphs stay in order, g[0]
 * always), adding to cnt.
 * @pre g are aligned, canonical, distinct and of equal value.
 * @return the number kept, or 0 when evaluation failed. */
size_t pr_class(key_ctx *c, pr_scratch *sc, const pool *p, sg_graph *g, size_t n, pr_counts *cnt);

#endif
