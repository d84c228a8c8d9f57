/* reduce.h - drop redundant rules, one step at a time, counting each
 * (prefix rd_). Survivors keep their order; every survivor is in
 * canonical form (emit.h) afterwards.
 *
 *  1. exact duplicates: the same (src, dst) graphs, and src == dst;
 *  2. renamings: the same canonical form (emit.h) as an earlier rule;
 *  3. common subgraph at the inputs: src and dst both contain the same
 *     node n (same operator, parameters and input references) whose inputs
 *     are all graph inputs that nothing else in either graph reads (no
 *     other node, symbolic size or output). Then the rule is R'[y := n]
 *     for the rule R' with n replaced by a fresh input y on both sides, and
 *     R' implies it; it is dropped when R' (canonical) is among the rules
 *     that survived step 2. Example: relu(x0) + x1 -> x1 + relu(x0) is
 *     dropped for x0 + x1 -> x1 + x0.
 *  4. common operator at the output: a single-output rule whose src and
 *     dst end in the same operator with the same parameters, and whose
 *     tensor inputs are pairwise equal subgraphs but for exactly one pair
 *     (a, b): the rule is a -> b applied under that operator, and is
 *     dropped when a -> b (canonical) survived step 2. Example:
 *     relu(x0 + x1) -> relu(x1 + x0) is dropped for x0 + x1 -> x1 + x0.
 * Steps 3 and 4 test every rule against the set that survived step 2;
 * the witness is strictly smaller, so by induction on size the rules kept
 * still imply every rule dropped. A witness only counts when it is itself
 * a proved rule in the set, never because it "looks" valid: relu(relu(x0))
 * -> relu(x0) has the common input node relu(x0), but relu(y) -> y is not
 * a rule, so it stays.
 */
#ifndef REDUCE_H
#define REDUCE_H

#include <stddef.h>

#include "emit.h"

typedef struct {
    size_t emitted;      /* before pruning */
    size_t after_dup;    /* after step 1 */
    size_t after_rename; /* after step 2 */
    size_t after_input;  /* after step 3 */
    size_t after_output; /* after step 4: what is written */
} rd_counts;

/* Prune rules[0..*n) in place (above); *n becomes the survivors' count.
 * @return 0, or -1 when out of memory (before any rule was touched). */
int rd_prune(em_rule *rules, size_t *n, rd_counts *counts);

#endif
