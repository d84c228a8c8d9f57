/* sgraph.h - synth's compact graphs (prefix sg_): 28 bytes, no pointers,
 * compared with memcmp, so millions of them fit in the class table.
 *
 * A ref below SG_NODE_REF is a leaf: a pool variable in an *aligned* graph
 * (the form stored in the table and written out), or a slot 0..7 in a
 * *slot* graph (the form being extended, before its variables get pool
 * names, key.h). SG_NODE(j) is node j. A node stores its operator, an index
 * into dom's combos and its inputs; unused input bytes are 0.
 *
 * Split points (TASO's "split tree"): every value carries, per axis, the
 * boundary of the concat it came from, if any: concat(a; x, y) has one on
 * axis a at x's extent, and operators that commute with splitting pass
 * boundaries on (element-wise ones on every axis, conv from the weights' O
 * axis to the output's C axis and from the input's N axis to N, matmul from
 * x's rows and y's columns, transpose swapping them, pools on N and C). A
 * split node's combo is its axis; it may cut only a value with a boundary
 * there, at that boundary, written symbolically, "(dim a xi)", when the
 * concat's first operand was a graph input. So split0(conv(x, cat(0; w1,
 * w2))) is conv(x, w1), TASO's rule for merging two convolutions.
 *
 * Canonical form (sg_canon): nodes ordered by height (leaves 0), then by
 * (op, combo, inputs) with inputs named by leaf index or by the canonical
 * position of the node; graphs have no two identical nodes, so the order is
 * total and two node orders of one graph give the same bytes.
 */
#ifndef SYN_SGRAPH_H
#define SYN_SGRAPH_H

#include <stdint.h>

#include "dom.h"
#include "pool.h"
#include "rgraph.h"

#define SG_MAX_NODES 6
#define SG_MAX_OUT 2
#define SG_NODE_REF 32
#define SG_N_REFS (SG_NODE_REF + SG_MAX_NODES)
#define SG_NODE(j) ((uint8_t)(SG_NODE_REF + (j)))
#define SG_IS_NODE(r) ((r) >= SG_NODE_REF)
#define SG_NODE_IDX(r) ((int)(r) - SG_NODE_REF)
#define SG_BIT(r) (1ull << (r)) /* cone masks: one bit per ref */

typedef struct {
    uint8_t op, combo, in[2];
} sg_node;

typedef struct {
    uint8_t n_nodes, n_out;
    uint8_t out[SG_MAX_OUT];
    sg_node node[SG_MAX_NODES];
} sg_graph;

/* The split points of a value: size[a] > 0 is a boundary on axis a; when
 * leaf[a] >= 0 it is dim axis[a] of that leaf. */
typedef struct {
    int32_t size[TEN_MAX_RANK];
    int8_t leaf[TEN_MAX_RANK], axis[TEN_MAX_RANK];
} sg_bound;

/* memcmp order: fewer nodes first. @return <0, 0, >0 */
int sg_compare(const sg_graph *a, const sg_graph *b);

/* The leaves (pool variables or slots) g reads, one bit each. */
uint32_t sg_vars(const sg_graph *g);

/* XXH3-64 of the bytes. */
uint64_t sg_hash(const sg_graph *g);

/* Mask of the refs in the cone of ref r (r itself, its inputs, ...). */
uint64_t sg_cone(const sg_graph *g, uint8_t r);

/* Params, shape and split points of node n (in any graph) from those of
 * its inputs (indexed by ref); a split reads its size from its input's
 * split point. @return the packed shape, or DOM_BAD (no shape, or no split
 * point where a split needs one). */
uint64_t sg_node_shape(const sg_node *n, const dom *d, dom_memo *m, const uint64_t *shape,
                       const sg_bound *bound, int32_t p[OPS_MAX_PARAMS], sg_bound *out);

/* Shapes, params and split points of every node given the leaves' shapes
 * in shape[0..31] (leaves have no split points).
 * @return 0, or -1 when a node's shape check fails. */
int sg_shapes(const sg_graph *g, const dom *d, dom_memo *m, uint64_t shape[SG_N_REFS],
              int32_t param[][OPS_MAX_PARAMS], sg_bound bound[SG_N_REFS]);

/* Reorder nodes canonically (see above). Output order is kept, except that
 * when out_tie is set (both outputs have equal values) they are sorted by
 * ref. */
void sg_canon(sg_graph *g, int out_tie);

/* The rule graph of an aligned graph: pool variable v becomes input
 * xi with i = var_index[v] (>= 0 for every variable g uses); n_inputs is
 * the highest input used + 1.
 * @return RG_OK, or RG_ESHAPE when a shape check fails. */
rg_status sg_to_rg(const sg_graph *g, const dom *d, const pool *p, dom_memo *m,
                   const int8_t var_index[POOL_MAX_VARS], rg_graph *out);

/* One line of text ("(relu v3), (ewadd v3 v4)") for tests and debugging.
 * @return buf */
char *sg_format(const sg_graph *g, const dom *d, char *buf, size_t len);

#endif
