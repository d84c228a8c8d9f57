/* z3shape.h - the shape function of every operator as Z3 terms (prefix
 * zs_): the dims of an application's result from its inputs' dims, and the
 * conditions under which the application is well shaped (shape.c's checks,
 * over dims). z3enc.c uses them three ways: as facts about the nodes of a
 * candidate pair, as quantified shape rules for the terms Z3 creates, and
 * as the guards of the axioms.
 *
 * Dims. Every tensor has ZS_AXES dims, zs_dim(a, t) = sdim(a, shape(t)):
 * tensors of one shape share their dims by congruence. A missing axis of a
 * lower-rank tensor reads as 1; every rule and condition here stays true
 * under that reading at any rank, so ranks need no encoding.
 *
 * Example: the dims of matmul(x, y) and its condition.
 *
 *     zs_params p = {{0}, {0}, 0};          // matmul has no parameters
 *     zs_fits f = {{0}, 0};
 *     Z3_ast in[2] = {x, y};
 *     Z3_ast rows = zs_rule_dim(s, OP_MATMUL, &p, dims_of_inputs, 0);
 *     zs_op_fits(s, &f, OP_MATMUL, &p, in, dims_of_inputs);
 *     // rows is dim(0, x); f.c[0] is dim(1, x) = dim(0, y)
 */
#ifndef Z3SHAPE_H
#define Z3SHAPE_H

#include <stdint.h>
#include <z3.h>

#include "ops.h"

#define ZS_AXES TEN_MAX_RANK
#define ZS_MAX_FITS 160 /* an axiom's guard collects those of all its terms */

/* The symbols a Z3 context needs for shapes. */
typedef struct {
    Z3_context c;
    Z3_sort T, S, I;          /* tensors, shapes, Int */
    Z3_func_decl shape, sdim; /* T -> S, Int x S -> Int */
} zs_syms;

/* Parameters of one application: terms, and literal values where known. */
typedef struct {
    Z3_ast ast[OPS_MAX_PARAMS];
    int32_t lit[OPS_MAX_PARAMS];
    unsigned is_lit; /* bit k: parameter k is the literal lit[k] */
} zs_params;

static inline int zs_lit(const zs_params *p, int k) { return p->is_lit >> k & 1; }

/* The dims of an application's inputs, produced on demand (in a quantified
 * axiom a dim is itself simplified by these rules). */
typedef struct zs_dims {
    Z3_ast (*get)(struct zs_dims *self, int input, int axis);
} zs_dims;

/* Conditions for well-shapedness, one formula each. */
typedef struct {
    Z3_ast c[ZS_MAX_FITS];
    int n;
} zs_fits;

/* The input whose shape the result has whatever the parameters
 * (element-wise operators, ones: the table's shape_of_in0), or -1. */
int zs_same_shape_input(ops_op op);

/* The parameters zs_rule_dim needs as literals (bit k = parameter k):
 * those whose kind is shape_literal in ops_pkind_table (conv stride and
 * pad, pool kernel, stride and pad, an axis, a kernel). */
unsigned zs_rule_params(ops_op op);

/* Dim `axis` of op's result from its inputs' dims d.
 * @return the term, or NULL when a parameter the rule needs is symbolic. */
Z3_ast zs_rule_dim(const zs_syms *s, ops_op op, const zs_params *p, zs_dims *d, int axis);

/* Append to f what op(p; in) needs of its inputs to be well shaped:
 * matmul inner dims, element-wise dims equal, concat off-axis dims, conv
 * C = groups * I with groups dividing O, SAME windows odd and VALID ones
 * no larger than the input, 1 <= split size < dim, enlarge's kernel
 * covering w with an even margin. Symbolic parameters give implications
 * over their values. in[k] is input k's term (a split on a symbolic axis
 * reads sdim(axis, shape(in[0]))). Stops adding at ZS_MAX_FITS. */
void zs_op_fits(const zs_syms *s, zs_fits *f, ops_op op, const zs_params *p, const Z3_ast *in,
                zs_dims *d);

/* Terms: an Int numeral, shape(t), sdim(axis, shape), dim(a, t). */
Z3_ast zs_num(const zs_syms *s, int64_t v);
Z3_ast zs_shape(const zs_syms *s, Z3_ast t);
Z3_ast zs_sdim(const zs_syms *s, Z3_ast axis, Z3_ast shape);
Z3_ast zs_dim(const zs_syms *s, int a, Z3_ast t);

#endif
