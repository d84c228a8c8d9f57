/* rgraph.h - the small graphs of rules and candidates (prefix rg_).
 *
 * A rule graph is a fixed-size value with no pointers: it can be copied with
 * `=`, stored in arrays, hashed and compared. Nodes are in topological order;
 * each names an operator of opspecs, its parameters, and references to its
 * inputs, which are graph inputs or earlier nodes. Up to RG_MAX_OUTPUTS refs
 * are the graph's outputs, so a rule can rewrite several values at once.
 *
 * References (rg_ref) index one value space of RG_MAX_REFS entries:
 *
 *     0 .. RG_MAX_INPUTS-1                       graph input i   (RG_IN(i))
 *     RG_MAX_INPUTS .. RG_MAX_INPUTS+RG_MAX_NODES-1  node j      (RG_NODE(j))
 *
 * so an evaluator can keep one array `ten val[RG_MAX_REFS]` indexed by ref.
 *
 * Parameters are the operator's int32 values (ops_table[op].pkind). A
 * PK_SIZE parameter (a split point) may be *symbolic* in rule graphs: it then
 * stands for "dimension a of graph input i", the split point of a rule that
 * holds for every shape. Encoding: literal sizes are >= 1; a symbolic size is
 * RG_SYM_SIZE(i, a) = -(1 + i*TEN_MAX_RANK + a) < 0; 0 is invalid. Printed
 * and parsed as `(dim a xi)`.
 *
 * A PK_GROUPS parameter (a conv's group count) may be a *symbol* too: a
 * rule proved for any group count (prove generalizes the literal groups of
 * synth's candidates where the proof allows) writes RG_SYM_GROUPS(s) =
 * -(1 + s), s < RG_MAX_GSYMS, the same symbol wherever the same count is
 * meant. Its value at given shapes is the one the first conv writing it
 * has: input channels over the weight's input channels (C = groups * I).
 * The engine matches any count there, the same wherever the rule writes the
 * same symbol, and copies it into the replacement. Printed and parsed as
 * `gS`.
 *
 * The text form (rg_format, rg_parse) is the axioms' s-expression syntax:
 * parameters first, then inputs; graph inputs are x0..x7; several outputs
 * are separated by ", ". Example: matmul associativity and a 2-output graph
 *
 *     rg_graph g; char err[RG_ERRLEN], buf[256];
 *     rg_parse("(matmul x0 (matmul x1 x2))", &g, err, sizeof err);
 *     // g: 3 inputs, node 0 = matmul(x1, x2), node 1 = matmul(x0, node 0)
 *     rg_parse("(split0 1 (dim 1 x0) (concat 1 x0 x1)), "
 *              "(split1 1 (dim 1 x0) (concat 1 x0 x1))", &g, err, sizeof err);
 *     // g: the concat node is shared; 2 outputs
 *     rg_format(&g, buf, sizeof buf);   // prints the same text back
 *
 * Equality and hashing look only at the fields in use (n_params parameters,
 * arity inputs of each node), never at padding or unused slots.
 */
#ifndef RGRAPH_H
#define RGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"
#include "tensor.h"

#define RG_MAX_NODES 8
#define RG_MAX_INPUTS 8
#define RG_MAX_OUTPUTS 4
#define RG_MAX_REFS (RG_MAX_INPUTS + RG_MAX_NODES)
#define RG_ERRLEN 192
/* Bytes of the longest canonical encoding (rg_encode). */
#define RG_ENC_MAX (3 + RG_MAX_NODES * (1 + 4 * OPS_MAX_PARAMS + OPS_MAX_ARITY) + RG_MAX_OUTPUTS)

/* A reference to a graph input or a node; see the header comment. */
typedef uint8_t rg_ref;

#define RG_IN(i) ((rg_ref)(i))
#define RG_NODE(j) ((rg_ref)(RG_MAX_INPUTS + (j)))
#define RG_IS_INPUT(r) ((r) < RG_MAX_INPUTS)
#define RG_NODE_INDEX(r) ((int)(r) - RG_MAX_INPUTS)

/* Symbolic sizes: "dim a of graph input i" as a PK_SIZE parameter value. */
#define RG_SYM_SIZE(i, a) ((int32_t)-(1 + (i) * TEN_MAX_RANK + (a)))
#define RG_IS_SYM_SIZE(v) ((v) < 0)
#define RG_SYM_INPUT(v) ((-(v) - 1) / TEN_MAX_RANK)
#define RG_SYM_AXIS(v) ((-(v) - 1) % TEN_MAX_RANK)

/* Group-count symbols: "group count s of the rule" as a PK_GROUPS value. */
#define RG_MAX_GSYMS 4
#define RG_SYM_GROUPS(s) ((int32_t)-(1 + (s)))
#define RG_IS_SYM_GROUPS(kind, v) ((kind) == PK_GROUPS && (v) < 0)
#define RG_GSYM_INDEX(v) ((int)(-(v) - 1))

typedef struct {
    ops_op op;
    int32_t param[OPS_MAX_PARAMS]; /* ops_table[op].n_params used */
    rg_ref in[OPS_MAX_ARITY];      /* ops_table[op].arity used */
} rg_node;

typedef struct {
    int n_inputs;  /* 0..RG_MAX_INPUTS */
    int n_nodes;   /* 0..RG_MAX_NODES */
    int n_outputs; /* 1..RG_MAX_OUTPUTS */
    rg_node node[RG_MAX_NODES];
    rg_ref out[RG_MAX_OUTPUTS];
} rg_graph;

/* Status codes; RG_OK is 0. */
typedef enum {
    RG_OK = 0,
    RG_EINVAL, /* structurally invalid graph, or a parse error */
    RG_ESHAPE, /* shapes do not fit the operators (or a bad symbolic size) */
    RG_ENOMEM
} rg_status;

/* Check the structure of a graph: counts in range, op < OP_COUNT, every
 * parameter valid for its kind (it round-trips through ops_param_str and
 * ops_param_parse; a symbolic size names an existing input and an axis <
 * TEN_MAX_RANK), every ref in range and naming an input < n_inputs or an
 * earlier node (so no cycles), every node used by a later node or an
 * output, every output in range.
 * @return RG_OK, or RG_EINVAL with a message naming the node or output in
 *         err (may be NULL). */
rg_status rg_validate(const rg_graph *g, char *err, size_t errlen);

/* The graph inputs node n reads, as a bit mask (bit i: input i): its input
 * references and the inputs its symbolic sizes name (a split point "dim a
 * of xi" reads xi's shape). @pre n is a node of a valid graph. */
uint32_t rg_node_inputs(const rg_node *n);

/* The graph inputs g reads: from node inputs, outputs and symbolic sizes. */
uint32_t rg_used_inputs(const rg_graph *g);

/* The operators g's nodes write. */
ops_set rg_ops_written(const rg_graph *g);

/* 1 when src => dst is a rewrite the engine can apply: every output of src
 * is an operator node (a bare input as a pattern would match every value
 * of every graph) and dst reads no input src lacks (egg's rule). */
int rg_can_rewrite(const rg_graph *src, const rg_graph *dst);

/* The concrete value of parameter k of node j given the input shapes:
 * itself, or the input dimension a symbolic size names.
 * @pre g is valid. @return RG_OK, or RG_ESHAPE when the named axis is not
 *      below that input's rank, or for a group-count symbol (its value
 *      needs the shapes of the conv's inputs: rg_node_params). */
rg_status rg_param_value(const rg_graph *g, int j, int k, const ten_shape *in,
                         int32_t *value);

/* Every parameter of node j with its symbols resolved: sizes from the
 * graph inputs' shapes in[], group counts from gval[s] when set (> 0),
 * else from the shapes of the node's inputs, shape[ref] (and then stored
 * in gval[s]). gval starts zeroed for a graph and is shared along its
 * nodes in order. @pre g is valid; shape[] holds the node's inputs.
 * @return RG_OK, or RG_ESHAPE when a size names a missing axis or a group
 *         count does not divide or differs from the symbol's value. */
rg_status rg_node_params(const rg_graph *g, int j, const ten_shape *in,
                         const ten_shape shape[RG_MAX_REFS], int32_t gval[RG_MAX_GSYMS],
                         int32_t p[OPS_MAX_PARAMS]);

/* 1 when g writes a group-count symbol. */
int rg_has_gsym(const rg_graph *g);

/* Infer the shape of every value: shape[RG_IN(i)] = in[i], shape[RG_NODE(j)]
 * from ops_infer_shape with symbolic sizes resolved. Output k has shape
 * shape[g->out[k]].
 * @pre g is valid; in has g->n_inputs shapes.
 * @return RG_OK, or RG_ESHAPE with "node j (op): ..." in err. */
rg_status rg_infer_shapes(const rg_graph *g, const ten_shape *in,
                          ten_shape shape[RG_MAX_REFS], char *err,
                          size_t errlen);

/* Evaluate every node into caller-allocated tensors: val[RG_IN(i)] are the
 * inputs, val[RG_NODE(j)] receive node j. No allocation beyond ops_eval's
 * scratch, so synth can reuse buffers.
 * @pre g valid; val[RG_NODE(j)].shape is what rg_infer_shapes returned and
 *      its data has room for it.
 * @return RG_OK or RG_ENOMEM. */
rg_status rg_eval_values(const rg_graph *g, ten val[RG_MAX_REFS]);

/* Evaluate the graph on inputs in[0..n_inputs-1] into out[0..n_outputs-1],
 * which this function allocates (free each with ten_free; on failure none
 * is left allocated).
 * @pre g is valid. @return RG_OK, RG_ESHAPE (message in err) or RG_ENOMEM. */
rg_status rg_eval(const rg_graph *g, const ten *in, ten *out, char *err,
                  size_t errlen);

/* Write output k as an s-expression (shared nodes are printed at every use).
 * @pre g valid. @return the length of the full text, like snprintf: the
 *      output was truncated when the result is >= len. */
size_t rg_format_output(const rg_graph *g, int k, char *buf, size_t len);

/* All outputs, separated by ", ". @return as rg_format_output. */
size_t rg_format(const rg_graph *g, char *buf, size_t len);

/* Parse the text rg_format writes. Identical subterms become one node, so
 * the result is canonical for its text; n_inputs is the highest xi used +1.
 * @return RG_OK and *g valid, or RG_EINVAL with the offending column in
 *         err. */
rg_status rg_parse(const char *text, rg_graph *g, char *err, size_t errlen);

/* Canonical byte encoding of the fields in use (at most RG_ENC_MAX bytes):
 * n_nodes, n_inputs, n_outputs, then per node op, params (big-endian with
 * the sign bit flipped, so bytes order like numbers), refs; then outputs.
 * Smaller graphs sort first under memcmp.
 * @pre g valid. @return the number of bytes written. */
size_t rg_encode(const rg_graph *g, uint8_t buf[RG_ENC_MAX]);

/* A total order consistent with rg_equal (memcmp of rg_encode).
 * @return <0, 0, >0. */
int rg_compare(const rg_graph *a, const rg_graph *b);

/* 1 when the graphs are the same (same fields in use), else 0. */
int rg_equal(const rg_graph *a, const rg_graph *b);

/* XXH3-64 of rg_encode: equal graphs hash equal. */
uint64_t rg_hash(const rg_graph *g);

/* The canonical form of the rule src -> dst under renaming of its inputs.
 * A rule holds for every input shape (prove's z3enc.h), so input
 * names and shapes are not part of its identity: the canonical form renames
 * inputs x0, x1, ... in order of first appearance in the source's text then
 * the destination's (rg_format order, a symbolic size (dim a xi) counting
 * as an appearance), group-count symbols g0, g1, ... in the same order,
 * and orders nodes as rg_parse does for that text (post-order from the
 * outputs, equal nodes merged, dead nodes dropped). Two rules that differ
 * only by a renaming of inputs have the same canonical form. Both graphs
 * get the source's input count. @pre both graphs valid. */
void rg_canon_rule(const rg_graph *src, const rg_graph *dst, rg_graph *csrc, rg_graph *cdst);

/* The renaming of inputs rg_canon_rule applies to src -> dst: map[i] is
 * input i's canonical index, -1 when neither side reads it. */
void rg_canon_inputs(const rg_graph *src, const rg_graph *dst, int map[RG_MAX_INPUTS]);

#endif
