/* dom.h - what synth enumerates per operator (prefix dom_): the parameter
 * combinations ("combos") it tries, shapes packed into one word, and a
 * memoised shape check so the hot loop never formats an error message.
 *
 * Parameter domains per parameter kind (ops_pkind_table restricted for
 * synth; see synth.h), and an operator's combos are their product over
 * its parameters, the first parameter outermost:
 *   stride {1,2}; pad {SAME,VALID}; act {NONE,RELU}; kernel 3x3 (pools:
 *   3x3 and 2x2; iconv, dwiconv, poolk: 3x3, and 1x1 with kernels1x1);
 *   groups {1} ({1,2} with dom_init(.., groups2 = 1));
 *   axis {0,1,2,3} (the shape check drops axes >= rank);
 *   size: not enumerated but bound from the concat a split reads
 *   (sgraph.h), one placeholder value.
 * So conv2d has 8 (16) combos, the pools 8, concat and the splits one per
 * axis, operators without parameters one.
 *
 * Kinds: what a value is for, on top of its shape. Activations (NCHW),
 * conv weights (OIHW), matrices, vectors (biases, per-channel scales) and
 * scalars; dom_kind says which kinds an
 * operator takes and makes. It keeps out graphs no model contains and
 * whose equalities are accidents of small shapes: a conv reading a weight
 * tensor as its input, pooling a 1x1 weight, relu of a 1-cell scalar (a coin
 * flip under the fingerprint). Scalars only scale (smul) and multiply
 * (smul of two scalars); relu and pooling take activations (and relu
 * matrices); weights are added, multiplied, scaled, concatenated, split,
 * enlarged, made by iconv/poolk from an activation.
 *
 * A shape word packs rank (3 bits) and four 14-bit dims: it is < 2^59, so
 * it is also a valid residue and goes into fingerprints as is (scalars are
 * word 0). DOM_BAD marks "no shape".
 */
#ifndef SYN_DOM_H
#define SYN_DOM_H

#include <stdint.h>

#include "ops.h"
#include "tensor.h"

#define DOM_MAX_COMBOS 16
#define DOM_BAD UINT64_MAX
#define DOM_DIM_MAX 16383 /* dims must fit 14 bits */

/* The kinds of ops.h (the operator table's kinds column says which an
 * operator takes), plus "none" for an operand synth may not use. */
typedef enum {
    DOM_SCALAR = OPS_KIND_SCALAR,
    DOM_MATRIX = OPS_KIND_MATRIX,
    DOM_ACT = OPS_KIND_ACT,
    DOM_WEIGHT = OPS_KIND_WEIGHT,
    DOM_VECTOR = OPS_KIND_VECTOR,
    DOM_NO_KIND = -1
} dom_kind_t;

typedef struct {
    ops_set ops; /* the operators enumerated */
    int n_combo[OP_COUNT];
    int32_t combo[OP_COUNT][DOM_MAX_COMBOS][OPS_MAX_PARAMS];
} dom;

/* Fill the combos of every operator in ops (bit set over ops_op).
 * @pre ops != 0. */
void dom_init(dom *d, ops_set ops, int groups2, int kernels1x1);

/* The kind op makes from input kinds k0, k1 (k1 ignored for unary
 * operators), or DOM_NO_KIND when it does not take them. */
int dom_kind(ops_op op, int k0, int k1);

/* Pack a shape; DOM_BAD when a dim exceeds DOM_DIM_MAX. */
uint64_t dom_pack(const ten_shape *s);

/* Unpack a word dom_pack made. */
void dom_unpack(uint64_t w, ten_shape *s);

/* Number of cells of a packed shape. */
int64_t dom_numel(uint64_t w);

/* A per-thread memo of shape checks (direct-mapped, overwrites on clash). */
#define DOM_MEMO_BITS 14
typedef struct {
    struct {
        uint64_t in0, in1, par; /* in0 | op << 59; par: 4 x 16-bit params */
        uint64_t out;
    } e[1u << DOM_MEMO_BITS];
} dom_memo;

/* Clear a memo (all entries empty). */
void dom_memo_init(dom_memo *m);

/* Output shape of op with resolved params p on input shapes s0, s1 (s1
 * ignored for unary operators): ops_infer_shape plus synth's own
 * restriction (no pooling of a tensor with H or W of 1, where it would be a
 * copy: an accidental equality of small shapes).
 * @return the packed shape, or DOM_BAD. */
uint64_t dom_infer(dom_memo *m, ops_op op, const int32_t p[OPS_MAX_PARAMS],
                   uint64_t s0, uint64_t s1);

#endif
