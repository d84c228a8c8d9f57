/* z3shape.c - the shape function of every operator as Z3 terms (see
 * z3shape.h): output dims from input dims, and well-shapedness. */
#include "z3shape.h"

int zs_same_shape_input(ops_op op) { return ops_shape_of_in0(op) ? 0 : -1; }

/* ---- terms ---- */

Z3_ast zs_num(const zs_syms *z, int64_t v) { return Z3_mk_int64(z->c, v, z->I); }

Z3_ast zs_shape(const zs_syms *z, Z3_ast t) { return Z3_mk_app(z->c, z->shape, 1, &t); }

Z3_ast zs_sdim(const zs_syms *z, Z3_ast axis, Z3_ast shape) {
    Z3_ast a[2] = {axis, shape};
    return Z3_mk_app(z->c, z->sdim, 2, a);
}

Z3_ast zs_dim(const zs_syms *z, int a, Z3_ast t) {
    return zs_sdim(z, zs_num(z, a), zs_shape(z, t));
}

static Z3_ast add2(const zs_syms *z, Z3_ast a, Z3_ast b) {
    Z3_ast x[2] = {a, b};
    return Z3_mk_add(z->c, 2, x);
}

static Z3_ast sub2(const zs_syms *z, Z3_ast a, Z3_ast b) {
    Z3_ast x[2] = {a, b};
    return Z3_mk_sub(z->c, 2, x);
}

/* ---- shape rules (ORDER OP via the switches) ---- */

/* Output size of a conv/pool window along one axis: SAME is centred,
 * ceil(h/s); VALID is (h-k) div s + 1 (shape.c). */
static Z3_ast window(const zs_syms *z, Z3_ast h, Z3_ast k, int32_t stride, int32_t pad) {
    if (pad == OPS_PAD_SAME)
        return stride == 1 ? h
                           : Z3_mk_div(z->c, add2(z, h, zs_num(z, stride - 1)), zs_num(z, stride));
    Z3_ast span = sub2(z, h, k);
    if (stride != 1) span = Z3_mk_div(z->c, span, zs_num(z, stride));
    return add2(z, span, zs_num(z, 1));
}

static Z3_ast kernel_dim(const zs_syms *z, int32_t kernel, int a) {
    return zs_num(z, a == 2 ? OPS_KERNEL_H(kernel) : OPS_KERNEL_W(kernel));
}

static Z3_ast pool_dim(const zs_syms *z, const zs_params *p, zs_dims *d, int a) {
    if (a < 2) return d->get(d, 0, a);
    if (!zs_lit(p, 0) || !zs_lit(p, 1) || !zs_lit(p, 2)) return NULL;
    return window(z, d->get(d, 0, a), kernel_dim(z, p->lit[0], a), p->lit[1], p->lit[2]);
}

static Z3_ast conv_dim(const zs_syms *z, const zs_params *p, zs_dims *d, int a) {
    if (a < 2) return d->get(d, a, 0); /* N from x, O from w */
    if (!zs_lit(p, 0) || !zs_lit(p, 1)) return NULL;
    return window(z, d->get(d, 0, a), d->get(d, 1, a), p->lit[0], p->lit[1]);
}

/* split0/split1 (axis, size; x) along the axis: size, or the rest. */
static Z3_ast split_dim(const zs_syms *z, ops_op op, const zs_params *p, zs_dims *d, int a) {
    if (!zs_lit(p, 0)) return NULL;
    if (a != p->lit[0]) return d->get(d, 0, a);
    return op == OP_SPLIT0 ? p->ast[1] : sub2(z, d->get(d, 0, a), p->ast[1]);
}

/* heads(h; [b,m,k]) -> [b,m,h,k div h]; unheads(h; [b,m,h,d]) -> [b,m,h*d]
 * (axis 3 of a rank-3 result reads as 1). h may be an unknown (free):
 * the terms are then nonlinear, which Z3's arithmetic takes. */
static Z3_ast heads_dim(const zs_syms *z, ops_op op, const zs_params *p, zs_dims *d, int a) {
    if (a < 2) return d->get(d, 0, a);
    if (op == OP_HEADS) return a == 2 ? p->ast[0] : Z3_mk_div(z->c, d->get(d, 0, 2), p->ast[0]);
    Z3_ast m[2] = {p->ast[0], d->get(d, 0, 3)};
    return a == 2 ? Z3_mk_mul(z->c, 2, m) : zs_num(z, 1);
}

/* Dim a of op's output from its inputs' dims; NULL when the rule needs a
 * parameter that is not a literal. The missing axes of a rank-2 result
 * read as 1 (z3shape.h), so transposes and products of matrices can meet
 * the off-axis conditions of a concat or an ewadd. */
Z3_ast zs_rule_dim(const zs_syms *z, ops_op op, const zs_params *p, zs_dims *d, int a) {
    switch (ops_table[op].form) {
    case OPS_FORM_MATMUL: return a == 0 ? d->get(d, 0, 0) : a == 1 ? d->get(d, 1, 1) : zs_num(z, 1);
    case OPS_FORM_KMUL: { /* [O,M,a,b] x [M,I,c,d] or [M] (its axes 1.. read as 1), one side 1x1 */
        if (a < 2) return d->get(d, a, a);
        Z3_ast va = d->get(d, 0, a); /* the side that is not 1 there (linear: no product) */
        return Z3_mk_ite(z->c, Z3_mk_eq(z->c, va, zs_num(z, 1)), d->get(d, 1, a), va);
    }
    case OPS_FORM_BMM: return d->get(d, a == 3, a);
    case OPS_FORM_LINEAR: return a == 2 ? d->get(d, 1, 1) : d->get(d, 0, a);
    case OPS_FORM_CONV: return conv_dim(z, p, d, a);
    case OPS_FORM_MAP:
    case OPS_FORM_ZIP:
    case OPS_FORM_SCALE:
    case OPS_FORM_CHANNEL:
    case OPS_FORM_ROW:
    case OPS_FORM_ONES: return d->get(d, 0, a);
    case OPS_FORM_POOL: return pool_dim(z, p, d, a);
    case OPS_FORM_CONCAT:
        if (!zs_lit(p, 0)) return NULL;
        return a == p->lit[0] ? add2(z, d->get(d, 0, a), d->get(d, 1, a)) : d->get(d, 0, a);
    case OPS_FORM_SPLIT: return split_dim(z, op, p, d, a);
    case OPS_FORM_TRANSPOSE: return a < 2 ? d->get(d, 0, 1 - a) : zs_num(z, 1);
    case OPS_FORM_PERMUTE:
        if (!zs_lit(p, 0)) return NULL;
        return a < OPS_PERM_RANK(p->lit[0]) ? d->get(d, 0, OPS_PERM_AT(p->lit[0], a)) : zs_num(z, 1);
    case OPS_FORM_HEADS: return heads_dim(z, op, p, d, a);
    case OPS_FORM_ENLARGE:
        if (a < 2) return d->get(d, 0, a);
        return zs_lit(p, 0) ? kernel_dim(z, p->lit[0], a) : NULL;
    case OPS_FORM_IMM: return a < 2 ? d->get(d, 0, 1) : zs_num(z, 1);
    case OPS_FORM_CKERNEL:
        if (a == 1 && ops_ckernel_depthwise(op)) return zs_num(z, 1);
        if (a < 2) return d->get(d, 0, 1);
        return zs_lit(p, 0) ? kernel_dim(z, p->lit[0], a) : NULL;
    case OPS_FORM_COUNT: break;
    }
    return NULL;
}

/* ---- well-shapedness (shape.c's checks, over dims) ---- */

static void need(zs_fits *f, Z3_ast c) {
    if (f->n < ZS_MAX_FITS) f->c[f->n++] = c;
}

static Z3_ast eq2(const zs_syms *z, Z3_ast a, Z3_ast b) { return Z3_mk_eq(z->c, a, b); }

static Z3_ast odd(const zs_syms *z, Z3_ast v) {
    return eq2(z, Z3_mk_mod(z->c, v, zs_num(z, 2)), zs_num(z, 1));
}

/* Parameter k is value v: true, false or a formula when symbolic. */
static Z3_ast is(const zs_syms *z, const zs_params *p, int k, int32_t v) {
    if (zs_lit(p, k)) return p->lit[k] == v ? Z3_mk_true(z->c) : Z3_mk_false(z->c);
    return eq2(z, p->ast[k], zs_num(z, v));
}

/* Height (a = 2) or width (a = 3) of a packed kernel parameter. */
static Z3_ast kernel_size(const zs_syms *z, const zs_params *p, int k, int a) {
    if (zs_lit(p, k)) return kernel_dim(z, p->lit[k], a);
    return (a == 2 ? Z3_mk_div : Z3_mk_mod)(z->c, p->ast[k], zs_num(z, 256));
}

/* A window of kh x kw under pad parameter k: SAME needs an odd kernel,
 * VALID an input at least as large. */
static void window_fits(const zs_syms *z, zs_fits *f, const zs_params *p, int k, Z3_ast h, Z3_ast w,
                        Z3_ast kh, Z3_ast kw) {
    Z3_ast same[2] = {odd(z, kh), odd(z, kw)};
    Z3_ast valid[2] = {Z3_mk_ge(z->c, h, kh), Z3_mk_ge(z->c, w, kw)};
    need(f, Z3_mk_implies(z->c, is(z, p, k, OPS_PAD_SAME), Z3_mk_and(z->c, 2, same)));
    need(f, Z3_mk_implies(z->c, is(z, p, k, OPS_PAD_VALID), Z3_mk_and(z->c, 2, valid)));
}

/* conv2d: C = groups * I, groups divides O, the window fits. groups is
 * any value >= 1 (ops.h, positive): a literal in a rule, a term in an
 * axiom, where the product is nonlinear, which Z3's arithmetic takes. */
static void conv_fits(const zs_syms *z, zs_fits *f, const zs_params *p, zs_dims *d) {
    Z3_ast g = p->ast[3], m[2] = {g, d->get(d, 1, 1)};
    need(f, Z3_mk_ge(z->c, g, zs_num(z, 1)));
    need(f, eq2(z, d->get(d, 0, 1), Z3_mk_mul(z->c, 2, m)));
    need(f, eq2(z, Z3_mk_mod(z->c, d->get(d, 1, 0), g), zs_num(z, 0)));
    window_fits(z, f, p, 1, d->get(d, 0, 2), d->get(d, 0, 3), d->get(d, 1, 2), d->get(d, 1, 3));
}

/* enlarge: the kernel covers the weights with an even margin. */
static void enlarge_fits(const zs_syms *z, zs_fits *f, const zs_params *p, zs_dims *d) {
    for (int a = 2; a < 4; a++) {
        Z3_ast k = kernel_size(z, p, 0, a), w = d->get(d, 0, a);
        need(f, Z3_mk_ge(z->c, k, w));
        need(f, eq2(z, Z3_mk_mod(z->c, sub2(z, k, w), zs_num(z, 2)), zs_num(z, 0)));
    }
}

/* concat: equal dims off the axis. split: 1 <= size < dim on the axis. */
static void axis_fits(const zs_syms *z, zs_fits *f, ops_op op, const zs_params *p, const Z3_ast *in,
                      zs_dims *d) {
    if (ops_table[op].form == OPS_FORM_CONCAT) {
        for (int a = 0; a < ZS_AXES; a++)
            need(f, Z3_mk_or(z->c, 2, (Z3_ast[]){is(z, p, 0, a),
                                                 eq2(z, d->get(d, 0, a), d->get(d, 1, a))}));
        return;
    }
    Z3_ast dim = zs_lit(p, 0) ? d->get(d, 0, p->lit[0]) : zs_sdim(z, p->ast[0], zs_shape(z, in[0]));
    need(f, Z3_mk_ge(z->c, p->ast[1], zs_num(z, 1)));
    need(f, Z3_mk_lt(z->c, p->ast[1], dim));
}

/* Everything op(p; in) needs of its inputs to be well shaped. Ranks are
 * not encoded: the axioms and candidates are rank-consistent by
 * construction, and every fact below is true at any rank (z3shape.h). */
void zs_op_fits(const zs_syms *z, zs_fits *f, ops_op op, const zs_params *p, const Z3_ast *in,
                zs_dims *d) {
    switch (ops_table[op].form) {
    case OPS_FORM_MATMUL: need(f, eq2(z, d->get(d, 0, 1), d->get(d, 1, 0))); break;
    case OPS_FORM_KMUL:
        need(f, eq2(z, d->get(d, 0, 1), d->get(d, 1, 0)));
        { /* one side 1x1 */
            Z3_ast side[2];
            for (int k = 0; k < 2; k++) {
                Z3_ast one[2] = {eq2(z, d->get(d, k, 2), zs_num(z, 1)), eq2(z, d->get(d, k, 3), zs_num(z, 1))};
                side[k] = Z3_mk_and(z->c, 2, one);
            }
            need(f, Z3_mk_or(z->c, 2, side));
        }
        break;
    case OPS_FORM_BMM:
        for (int a = 0; a < 2; a++) need(f, eq2(z, d->get(d, 0, a), d->get(d, 1, a)));
        need(f, eq2(z, d->get(d, 0, 3), d->get(d, 1, 2)));
        break;
    case OPS_FORM_LINEAR: /* x of rank 3: its missing axis 3 reads as 1 */
        need(f, eq2(z, d->get(d, 0, 2), d->get(d, 1, 0)));
        need(f, eq2(z, d->get(d, 0, 3), zs_num(z, 1)));
        break;
    case OPS_FORM_CONV: conv_fits(z, f, p, d); break;
    case OPS_FORM_ZIP:
        for (int a = 0; a < ZS_AXES; a++) need(f, eq2(z, d->get(d, 0, a), d->get(d, 1, a)));
        break;
    case OPS_FORM_CHANNEL: /* the vector's one dim is the axis's */
        if (zs_lit(p, 0)) need(f, eq2(z, d->get(d, 1, 0), d->get(d, 0, p->lit[0])));
        else need(f, eq2(z, d->get(d, 1, 0), zs_sdim(z, p->ast[0], zs_shape(z, in[0]))));
        break;
    case OPS_FORM_POOL:
        window_fits(z, f, p, 2, d->get(d, 0, 2), d->get(d, 0, 3), kernel_size(z, p, 0, 2),
                    kernel_size(z, p, 0, 3));
        break;
    case OPS_FORM_CONCAT:
    case OPS_FORM_SPLIT: axis_fits(z, f, op, p, in, d); break;
    case OPS_FORM_ENLARGE: enlarge_fits(z, f, p, d); break;
    case OPS_FORM_HEADS: /* heads: x of rank 3 (axis 3 reads as 1), h divides k */
        need(f, Z3_mk_ge(z->c, p->ast[0], zs_num(z, 1)));
        if (op == OP_UNHEADS) {
            need(f, eq2(z, d->get(d, 0, 2), p->ast[0]));
            break;
        }
        need(f, eq2(z, d->get(d, 0, 3), zs_num(z, 1)));
        need(f, eq2(z, Z3_mk_mod(z->c, d->get(d, 0, 2), p->ast[0]), zs_num(z, 0)));
        break;
    case OPS_FORM_MAP:
    case OPS_FORM_ROW: /* the axis is within the rank by construction */
    case OPS_FORM_SCALE:
    case OPS_FORM_TRANSPOSE:
    case OPS_FORM_PERMUTE:
    case OPS_FORM_IMM:
    case OPS_FORM_CKERNEL:
    case OPS_FORM_ONES:
    case OPS_FORM_COUNT: break;
    }
}

unsigned zs_rule_params(ops_op op) {
    unsigned m = 0;
    for (int k = 0; k < ops_table[op].n_params; k++)
        m |= (unsigned)ops_pkind_table[ops_table[op].pkind[k]].shape_literal << k;
    return m;
}

