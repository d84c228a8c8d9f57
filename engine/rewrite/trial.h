/* trial.h - judging a rewrite before it is built (prefix eg_trial, eg_tok):
 * the cost and the hash of the graph eg_apply would make of a match,
 * computed from the match and the nodes around it, so the search builds
 * only the graphs it expands (TASO builds every rewrite; egg-style engines
 * judge a rewrite first).
 *
 * Tokens. Every tensor of a graph in the search carries a 64-bit token,
 * which names the value it computes: in the input graph, its structural
 * hash (eg_tensor_hashes: the operator and the inputs' hashes, bottom up).
 * A rewrite keeps every existing tensor's token; the values it adds get
 * one each: a dst output takes the token of the src output whose readers
 * it takes over (it computes that value), an internal dst value the hash
 * of its node over its inputs' tokens. A graph's hash is the sum of its
 * nodes' shares (eg_node_share: operator, input and output tokens) and the
 * hash of its output tokens. So a rewrite changes the hash by the shares
 * of the nodes it adds and removes (and of the readers of a src output
 * whose token moves: a dst output that is a rule input), wherever it is in
 * the graph; a structural (Merkle) hash would change for everything
 * downstream. Rewrites in different places commute: A then B hashes as B
 * then A, and a rewrite undone by its inverse hashes as before. Two paths
 * to the same graph that name an added value differently (an internal
 * value on one path, an output on the other) hash apart: the search then
 * meets that graph twice, no worse than that.
 *
 * Cost. A node's charge depends on its operator and shapes and on the
 * graph within a few edges of it (eg_cost_ctx: fusions, weight-only
 * inputs, uses). A trial makes the rewrite in place on the graph itself
 * (dst nodes in scratch slots past its counts, readers redirected, src
 * nodes dead), charges the nodes within EG_TRIAL_RADIUS edges of what changed
 * before and after, and undoes it. The difference is the cost change of
 * the rewrite exactly (test_engine_rules checks it against the built
 * graph for every match of the corpus).
 *
 * Worked example (judge every match of g, given its tokens):
 *
 *     uint64_t *tok = malloc(...n_tensors...);  eg_tensor_hashes(g, tok);
 *     eg_trial *t;
 *     if (eg_trial_new(rs, c, g, tok, NULL, &t) == EG_OK) {
 *         double d; uint64_t h;
 *         if (eg_trial_judge(t, &m, &d, &h) == EG_OK)
 *             printf("%.1f us -> %.1f us\n", eg_trial_cost(t), eg_trial_cost(t) + d);
 *         eg_trial_free(t);
 *     }
 */
#ifndef EG_TRIAL_H
#define EG_TRIAL_H

#include <stdint.h>

#include "cost/cost.h"
#include "ir/graph.h"
#include "rewrite/rules.h"

/* How far (edges, either way) a rewrite can change a node's charge: the
 * fusions look two nodes up (relu after bias after conv; a layer norm's
 * scale and shift); the ort backend's groups run up to three nodes down
 * from their head. */
#define EG_TRIAL_RADIUS 3
#define EG_TRIAL_RADIUS_ORT 6

typedef struct eg_trial eg_trial;

/* The token hash of g whose tensors carry the tokens tok[n_tensors]. */
uint64_t eg_tok_hash(const eg_graph *g, const uint64_t *tok);

/* The tokens of child = eg_apply(rs, parent, m) from the parent's ptok:
 * the parent's tensors keep theirs (eg_apply keeps tensor ids), the ones
 * the rewrite added get theirs as the header comment says.
 * ctok has room for child->n_tensors.
 * @return EG_OK; EG_EGRAPH when child is not what eg_apply makes of m. */
eg_status eg_tok_child(const eg_ruleset *rs, const eg_graph *parent, const uint64_t *ptok,
                       const eg_match *m, const eg_graph *child, uint64_t *ctok);

/* A trial context for graph g with tokens tok (both must outlive it, and
 * nothing else may change them meanwhile): g's cost context and scratch
 * slots past its counts (its arrays may move once, here). A judgment makes
 * its rewrite on g itself and undoes it before it returns. known (may be
 * NULL): g's node costs as eg_cost_graph_nodes writes them (out), reused.
 * hash (may be NULL): g's token hash (eg_tok_hash) when the caller knows it
 * (a judgment gave it), so the nodes' shares are worked out only for the
 * nodes judgments ask about.
 * @pre g indexed, toposorted, shapes inferred. @return EG_OK or EG_ENOMEM. */
eg_status eg_trial_new(const eg_ruleset *rs, eg_cost *c, eg_graph *g, const uint64_t *tok,
                       const double *known, const uint64_t *hash, eg_trial **out);

/* g's cost, charged node by node as eg_cost_graph_nodes charges it. */
double eg_trial_cost(const eg_trial *t);

/* g's token hash (eg_tok_hash). */
uint64_t eg_trial_hash(const eg_trial *t);

/* Judge match m of g (from eg_match_all or eg_match_anchored on g).
 * @return EG_OK with *delta = cost(eg_apply(g, m)) - cost(g) and *hash its
 *         token hash; EG_ESHAPE or EG_EGRAPH (a cycle) when eg_apply
 *         refuses it; EG_EUNSUPPORTED when the trial cannot tell (a rule
 *         input that is a matched node's own output, which eg_apply keeps;
 *         a dst output weight-only where the src output was not): build
 *         the graph to judge it; EG_ENOMEM. */
eg_status eg_trial_judge(eg_trial *t, const eg_match *m, double *delta, uint64_t *hash);

/* How far (edges) a change to the graph can move a judgment: a match whose
 * nodes are all further from every node a rewrite touched is judged the
 * same before and after it (cost change, hash change, shape refusal; not
 * a cycle, which depends on paths). */
int eg_trial_reach(const eg_cost *c);

/* Mark into near[n_nodes of g] every node at most radius edges (producers,
 * readers) from a node with seed[j] set. */
void eg_trial_near(eg_trial *t, const unsigned char *seed, int radius, unsigned char *near);

void eg_trial_free(eg_trial *t);

#endif
