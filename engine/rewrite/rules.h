/* rules.h - rule sets, matching and application (prefix eg_): the engine's
 * use of a proved ruledb.
 *
 * Overview. eg_ruleset_load reads a "rules" ruledb (ruledb.h) and keeps the
 * rules whose prover status is RDB_PROVED and that can be matched (every
 * output of src is a node, every input dst or a symbolic size needs is read
 * by src: egg's "no unbound variable"), each also read right to left where
 * that can be matched (a proved rule is an equation), indexed by the
 * operator of src's first output node. Each rule gets a matching plan: start at an output
 * node, walk to producers of bound nodes' inputs, and find the remaining
 * nodes (another output of a 2-output rule) among the consumers of tensors
 * already bound, so nothing scans all pairs of nodes.
 *
 * A match binds each src node to a distinct EG_KIND_OPS graph node with
 * the same operator and parameters (a symbolic split size must equal the
 * input dimension it names) and each rule input to one tensor, the same
 * everywhere it appears (two rule inputs may bind the same tensor). It is
 * valid when dst shape-infers on the bound input shapes with output k of
 * the shape of src output k, and no internal src node's output (one that is
 * not a rule output) is read outside the match or is a graph output.
 * Opaque and model nodes never match, so they block rewrites through them.
 * A 2-output rule whose outputs can swap roles on the same nodes is
 * reported once per set of nodes.
 *
 * eg_apply rewrites a clone of the graph (eg_graph_clone: payloads are
 * borrowed, so free the result before the graph it came from): dst nodes
 * are added with fresh tensor names, readers of src output k read dst
 * output k instead, a graph output keeps its name (the old tensor is
 * renamed; an Identity node is added when dst output k is a rule input),
 * src nodes nothing reads any more are removed, and the result is
 * toposorted and shape-inferred.
 *
 * Worked example: apply the first match of any rule to a loaded graph g.
 *
 *     static int take_first(const eg_match *m, void *arg) {
 *         *(eg_match *)arg = *m;
 *         return 1;                                    // stop
 *     }
 *     ...
 *     eg_ruleset *rs = NULL;
 *     char err[EG_ERRLEN];
 *     if (eg_ruleset_load("ruledb/default.tasodb", &rs, err, sizeof err) != EG_OK) {
 *         fprintf(stderr, "%s\n", err);
 *         return 2;
 *     }
 *     eg_match m = {.n_nodes = 0};
 *     eg_match_all(rs, g, take_first, &m);             // g sorted, shapes known
 *     eg_graph *h = NULL;
 *     if (m.n_nodes > 0 && eg_apply(rs, g, &m, &h, err, sizeof err) == EG_OK) {
 *         printf("%d nodes\n", h->n_nodes);       // ... cost h, keep it ...
 *         eg_free(h);                                  // before eg_free(g)
 *     }
 *     eg_ruleset_free(rs);
 */
#ifndef EG_RULES_H
#define EG_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "ir/graph.h"
#include "ruledb.h"

typedef struct eg_ruleset eg_ruleset;

/* Load a rules ruledb. Only rules with prover status RDB_PROVED (and that
 * can be matched, see the header comment) are used.
 * @return EG_OK and *out (free with eg_ruleset_free); a wrong digest ->
 *         EG_EUNSUPPORTED "PATH: made from other opspecs (digest ...)";
 *         unreadable -> EG_EIO, corrupt or a candidates file -> EG_EFORMAT,
 *         with the ruledb reader's message; EG_ENOMEM. *out NULL on error. */
eg_status eg_ruleset_load(const char *path, eg_ruleset **out, char *err, size_t errlen);

/* The same from a file in memory (rules are copied; f may be freed after).
 * @return EG_OK; EG_EUNSUPPORTED when f's digest is not this build's;
 *         EG_EFORMAT for a candidates file; EG_ENOMEM. */
eg_status eg_ruleset_from_rdb(const rdb_file *f, eg_ruleset **out, char *err, size_t errlen);

/* Number of rules kept. */
size_t eg_ruleset_count(const eg_ruleset *rs);

/* Rule i (< eg_ruleset_count), valid until eg_ruleset_free. */
const rdb_rule *eg_ruleset_rule(const eg_ruleset *rs, size_t i);

/* The inputs of rule i that must be 1x1 kernels, as a bit mask (bit k:
 * xk). The ruledb writes such an input (enlarge 1x1 xk); rule i as given
 * by eg_ruleset_rule has xk bare instead. */
unsigned eg_ruleset_kernel1(const eg_ruleset *rs, size_t i);

/* Rule i as one line of text, "SRC => DST" with " [xK 1x1]" for each input
 * that must be a 1x1 kernel: what `engine optimize` prints and the C API
 * reports for an applied rule. Truncated to fit len (>= 1). */
void eg_ruleset_rule_text(const eg_ruleset *rs, size_t i, char *buf, size_t len);

/* 1 when rule i's rewrite keeps every path of a graph between the nodes it
 * leaves: each dst output reads every rule input its src output reads. A
 * rewrite then makes no cycle refusal of another match go away (a match
 * whose rewrite would close a cycle still would); (x * 0 => 0) is one that
 * does not keep them. */
int eg_ruleset_keeps_paths(const eg_ruleset *rs, size_t i);

/* A proved rule is an equation, so the ruleset also holds each file rule
 * read right to left, where that is a rule it can match and the file does
 * not hold it already: a file needs one direction of each equation. The
 * reverse comes right after its rule and has its id. eg_ruleset_reversed:
 * 1 when rule i is such a reverse; eg_ruleset_mate: the rule that is rule
 * i's reverse (made so, or in the file), EG_NO_MATE when there is none. */
#define EG_NO_MATE ((size_t)-1)
int eg_ruleset_reversed(const eg_ruleset *rs, size_t i);
size_t eg_ruleset_mate(const eg_ruleset *rs, size_t i);

/* An index of a ruleset's rules, the reverses it made included, by their
 * canonical form: which rule of it covers a rule of another file as the
 * engine reads that rule (its unit enlarges stripped, renamed), needing
 * 1x1 kernels of no input that rule does not (so it applies wherever that
 * rule does). prove --derive counts a rule of FULL so covered by the
 * shipped ruleset as shipped, whatever FULL holds beside it.
 * eg_rule_index_find: the index in rs, or EG_NO_MATE.
 * @return EG_OK and *out (free with eg_rule_index_free, before rs), or
 * EG_ENOMEM. */
typedef struct eg_rule_index eg_rule_index;
eg_status eg_rule_index_new(const eg_ruleset *rs, eg_rule_index **out);
size_t eg_rule_index_find(const eg_rule_index *x, const rdb_rule *r);
void eg_rule_index_free(eg_rule_index *x);

/* Rules of the source file left out (not proved, or not matchable). */
size_t eg_ruleset_skipped(const eg_ruleset *rs);

void eg_ruleset_free(eg_ruleset *rs);

typedef struct {
    uint32_t rule;               /* index in the ruleset */
    int n_nodes;                 /* = src.n_nodes */
    int node[RG_MAX_NODES];      /* graph node id matched by src node j */
    int input[RG_MAX_INPUTS];    /* graph tensor id bound to rule input i */
} eg_match;

/* Called for each match; m is valid during the call only. @return nonzero
 * to stop. */
typedef int (*eg_match_fn)(const eg_match *m, void *arg);

/* Every valid match of every rule in g, in a deterministic order (graph
 * nodes in order as the first output's node, rules in ruleset order, then
 * candidates in graph order).
 * @pre g indexed (eg_index) and topologically sorted, shapes inferred.
 * @return EG_OK (also when fn stopped early) or EG_ENOMEM. */
eg_status eg_match_all(const eg_ruleset *rs, const eg_graph *g, eg_match_fn fn, void *arg);

/* eg_match_all for the matches whose first output is at a node j with
 * anchor[j] set (anchor NULL: every node), in the same order. */
eg_status eg_match_anchored(const eg_ruleset *rs, const eg_graph *g, const unsigned char *anchor,
                            eg_match_fn fn, void *arg);

/* eg_match_anchored(rs, g, anchor) (anchor NULL: every node) less the
 * matches that bind no node j with touched[j] set, in the same order; the
 * work is in proportion to the matches that bind a touched node. */
eg_status eg_match_near(const eg_ruleset *rs, const eg_graph *g, const unsigned char *touched,
                        const unsigned char *anchor, eg_match_fn fn, void *arg);

/* The matches of child, which eg_apply made of a match in parent, from
 * parent's matches pm[n_pm] (every match eg_match_all reports in parent,
 * less any the caller leaves out for a reason that holds in the child as
 * well): those that bind no node the rewrite touched (new nodes, changed
 * inputs, changed readers), in pm's order, with from = their index in pm;
 * then those that bind a touched node (eg_match_near), with
 * from = EG_REMATCH_NEW. The same set as eg_match_all on child,
 * but the order. touched (may be NULL; child->n_nodes entries) receives
 * the touched nodes. A ruleset with a rule whose src is not connected
 * falls back to eg_match_all (every match new, every node touched).
 * @pre child = eg_apply(rs, parent, ...), both unchanged since.
 * @return EG_OK (also when fn stopped early) or EG_ENOMEM. */
#define EG_REMATCH_NEW ((size_t)-1)
typedef int (*eg_rematch_fn)(const eg_match *m, size_t from, void *arg);
eg_status eg_rematch(const eg_ruleset *rs, const eg_graph *parent, const eg_match *pm, size_t n_pm,
                     const eg_graph *child, unsigned char *touched, eg_rematch_fn fn, void *arg);

/* The hash eg_graph_hash would give the graph eg_apply makes of a match,
 * predicted without building it (the search's exact test for a graph met
 * already: token hashes (trial.h) tell apart some graphs equal in
 * structure). A context holds g's tensor hashes and scratch for g's size;
 * make one per graph (eg_hash_ctx_new: NULL when out of memory), use it
 * for every match in g, free it before g. The cost is the size of what
 * lies downstream of the match.
 * @pre m from eg_match_all or eg_match_anchored on g (not checked again).
 * @return EG_OK with *hash; EG_EGRAPH when the rewrite would make a cycle,
 *         EG_ESHAPE when dst's shapes do not fit: eg_apply refuses the
 *         match for the same reasons; EG_EUNSUPPORTED when a rule input is
 *         the output of a matched node (the rewrite then keeps that node for
 *         dst to read while the node's readers move to dst: rare, and not
 *         predicted; build the graph and hash it). */
typedef struct eg_hash_ctx eg_hash_ctx;
eg_hash_ctx *eg_hash_ctx_new(const eg_graph *g);
void eg_hash_ctx_free(eg_hash_ctx *x);
eg_status eg_apply_hash(const eg_ruleset *rs, eg_hash_ctx *x, const eg_match *m, uint64_t *hash);

/* Check that m is a valid match of its rule in g (as eg_match_all would
 * report it, apart from the 2-output de-duplication).
 * @return EG_OK; EG_EGRAPH (message in err) when it does not fit g;
 *         EG_ESHAPE when dst's shapes do not fit; EG_ENOMEM. */
eg_status eg_match_check(const eg_ruleset *rs, const eg_graph *g, const eg_match *m, char *err,
                         size_t errlen);

/* A new graph (a clone of g) with the match rewritten (see the header
 * comment). @pre as eg_match_all; m valid for g (it is checked again).
 * @return EG_OK and *out (free before g); EG_EGRAPH when the rewrite would
 *         create a cycle or m does not fit g, EG_ESHAPE when dst's shapes
 *         do not fit: the caller skips that match; EG_ENOMEM. *out is NULL
 *         on error. */
eg_status eg_apply(const eg_ruleset *rs, const eg_graph *g, const eg_match *m, eg_graph **out,
                   char *err, size_t errlen);

/* The ruledb shipped in ruledb/default.tasodb, linked into the library
 * (ruledb_blob.c). @return as eg_ruleset_from_bytes. */
eg_status eg_ruleset_shipped(eg_ruleset **out, char *err, size_t errlen);

/* The ruleset of a ruledb held in memory, as the built-in one is read.
 * A file made from other opspecs (a researcher edited the operator table
 * and has not run `ninja ruledb` yet) gives an empty ruleset whose
 * eg_ruleset_stale says why: the engine still starts and optimizes with
 * its built-in rewrites alone; a rule file named by the user is refused
 * instead (eg_ruleset_load). @return EG_OK, EG_EFORMAT (a damaged file)
 * or EG_ENOMEM, with a message. */
eg_status eg_ruleset_from_bytes(const uint8_t *bytes, size_t len, eg_ruleset **out, char *err, size_t errlen);

/* Why the ruleset is empty although its file was read (see above), as
 * the warning to give the user, or NULL. */
const char *eg_ruleset_stale(const eg_ruleset *rs);

#endif
