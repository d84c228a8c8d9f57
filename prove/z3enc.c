/* z3enc.c - Z3 encoding of operators, shape facts, quantified axioms and
 * candidate pairs (see z3enc.h for the encoding and why it is so). */
#include "z3enc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <z3.h>

#include "z3shape.h"

#define ZE_MAX_SHAPE_AXIOMS 256

struct ze_ctx {
    zs_syms s; /* the context, sorts, shape() and sdim() */
    Z3_func_decl op[OP_COUNT];
    Z3_func_decl num; /* num : Real -> T, the axioms' numbers (axparse.h) */
    const ax_set *set;
    Z3_ast *axiom;     /* one formula per axiom of set, NULL when unused */
    uint8_t *pattern;  /* 2 per axiom: that side became a pattern */
    Z3_ast shape_ax[ZE_MAX_SHAPE_AXIOMS]; /* the shape rules, quantified */
    int n_shape_ax;
    Z3_solver main; /* axioms at its base level; a candidate per push/pop */
    Z3_solver prof_solver; /* between ze_profile_begin and _end: the
                              solver every check goes to, profiled */
    ze_profile *prof;      /* where its counts go */
};

/* ---- declarations ---- */

static Z3_func_decl declare_op(ze_ctx *z, ops_op op) {
    const ops_info *o = &ops_table[op];
    Z3_sort dom[OPS_MAX_PARAMS + OPS_MAX_ARITY];
    unsigned n = 0;
    for (int k = 0; k < o->n_params; k++) dom[n++] = z->s.I;
    switch (ops_table[op].ref) {
    case OPS_REF_DIM1: dom[n++] = z->s.I; break;
    case OPS_REF_SHAPE: dom[n++] = z->s.S; break;
    case OPS_REF_NONE:
        for (int k = 0; k < o->arity; k++) dom[n++] = z->s.T;
        break;
    }
    return Z3_mk_func_decl(z->s.c, Z3_mk_string_symbol(z->s.c, o->name), n, dom, z->s.T);
}

static void declare_all(ze_ctx *z) {
    Z3_context c = z->s.c;
    z->s.T = Z3_mk_uninterpreted_sort(c, Z3_mk_string_symbol(c, "T"));
    z->s.S = Z3_mk_uninterpreted_sort(c, Z3_mk_string_symbol(c, "S"));
    z->s.I = Z3_mk_int_sort(c);
    z->s.shape = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, "shape"), 1, &z->s.T, z->s.S);
    Z3_sort sd[2] = {z->s.I, z->s.S};
    z->s.sdim = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, "sdim"), 2, sd, z->s.I);
    for (int op = 0; op < OP_COUNT; op++) z->op[op] = declare_op(z, (ops_op)op);
    Z3_sort real = Z3_mk_real_sort(c);
    z->num = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, "num"), 1, &real, z->s.T);
}

/* A number of the axiom file as a tensor term: num(value / den). */
static Z3_ast mk_num(ze_ctx *z, const ax_term *x) {
    Z3_ast v = Z3_mk_real(z->s.c, x->value, x->den);
    return Z3_mk_app(z->s.c, z->num, 1, &v);
}

/* op(params; inputs) as a term. For a constant the reference input is
 * replaced by what it reads: dim 1 of it (d) or its shape (shape0). */
static Z3_ast mk_app(ze_ctx *z, ops_op op, const zs_params *p, const Z3_ast *in,
                     zs_dims *d, Z3_ast shape0) {
    const ops_info *o = &ops_table[op];
    Z3_ast args[OPS_MAX_PARAMS + OPS_MAX_ARITY];
    unsigned n = 0;
    for (int k = 0; k < o->n_params; k++) args[n++] = p->ast[k];
    switch (ops_table[op].ref) {
    case OPS_REF_DIM1: args[n++] = d->get(d, 0, 1); break;
    case OPS_REF_SHAPE: args[n++] = shape0; break;
    case OPS_REF_NONE:
        for (int k = 0; k < o->arity; k++) args[n++] = in[k];
        break;
    }
    return Z3_mk_app(z->s.c, z->op[op], n, args);
}

/* ---- parameter domains ---- */

/* The domain of a parameter kind as a formula over v. */
static Z3_ast domain(ze_ctx *z, ops_pkind kind, Z3_ast v) {
    if (kind == PK_SIZE || ops_pkind_table[kind].positive) return Z3_mk_ge(z->s.c, v, zs_num(&z->s, 1));
    if (ops_pkind_table[kind].free) return Z3_mk_true(z->s.c); /* any value */
    const ops_pkind_info *d = &ops_pkind_table[kind];
    Z3_ast alt[16];
    int n = d->n_values < 16 ? d->n_values : 16;
    for (int i = 0; i < n; i++) alt[i] = Z3_mk_eq(z->s.c, v, zs_num(&z->s, d->values[i]));
    return n == 1 ? alt[0] : Z3_mk_or(z->s.c, (unsigned)n, alt);
}

/* ---- quantified axioms ---- */

typedef struct {
    zs_dims base;
    ze_ctx *z;
    const ax_axiom *a;
    const Z3_ast *vars;
    const int *in_terms; /* the application's tensor argument term ids */
} qdims;

static Z3_ast q_term(ze_ctx *z, const ax_axiom *a, int t, const Z3_ast *vars);
static Z3_ast q_dim(ze_ctx *z, const ax_axiom *a, int axis, int t, const Z3_ast *vars);

static Z3_ast qdims_get(zs_dims *self, int input, int axis) {
    qdims *q = (qdims *)self;
    return q_dim(q->z, q->a, axis, q->in_terms[input], q->vars);
}

/* 1 when e is a term a pattern may hold: an uninterpreted application or
 * a numeral (the shape rules may produce +, - or div, which may not). */
static int pattern_safe(ze_ctx *z, Z3_ast e) {
    if (Z3_is_numeral_ast(z->s.c, e)) return 1;
    if (Z3_get_ast_kind(z->s.c, e) != Z3_APP_AST) return 0;
    Z3_func_decl f = Z3_get_app_decl(z->s.c, Z3_to_app(z->s.c, e));
    return Z3_get_decl_kind(z->s.c, f) == Z3_OP_UNINTERPRETED;
}

static void q_params(ze_ctx *z, const ax_axiom *a, const ax_term *x, const Z3_ast *vars,
                     zs_params *p) {
    memset(p, 0, sizeof *p);
    for (int k = 0; k < ops_table[x->op].n_params; k++) {
        const ax_term *pt = &z->set->term[x->arg[k]];
        p->ast[k] = q_term(z, a, x->arg[k], vars);
        if (pt->kind == AX_TLIT) {
            p->lit[k] = pt->value;
            p->is_lit |= 1u << k;
        }
    }
}

/* Dim `axis` of tensor term t, simplified by the shape rules when that
 * gives a pattern-safe term (z3enc.h). */
static Z3_ast q_dim(ze_ctx *z, const ax_axiom *a, int axis, int t, const Z3_ast *vars) {
    const ax_term *x = &z->set->term[t];
    if (x->kind == AX_TNUM) return zs_num(&z->s, 1); /* rank 0: every dim reads 1 */
    if (x->kind == AX_TAPP) {
        zs_params p;
        qdims d = {{qdims_get}, z, a, vars, x->arg + ops_table[x->op].n_params};
        q_params(z, a, x, vars, &p);
        Z3_ast r = zs_rule_dim(&z->s, (ops_op)x->op, &p, &d.base, axis);
        if (r && pattern_safe(z, r)) return r;
    }
    return zs_dim(&z->s, axis, q_term(z, a, t, vars));
}

static Z3_ast q_shape(ze_ctx *z, const ax_axiom *a, int t, const Z3_ast *vars) {
    const ax_term *x = &z->set->term[t];
    if (x->kind == AX_TAPP && zs_same_shape_input((ops_op)x->op) >= 0)
        return q_shape(z, a, x->arg[ops_table[x->op].n_params + zs_same_shape_input((ops_op)x->op)],
                       vars);
    return zs_shape(&z->s, q_term(z, a, t, vars));
}

/* Term t of axiom a over the bound variables vars. */
static Z3_ast q_term(ze_ctx *z, const ax_axiom *a, int t, const Z3_ast *vars) {
    const ax_term *x = &z->set->term[t];
    switch (x->kind) {
    case AX_TVAR: return vars[x->value];
    case AX_TLIT: return zs_num(&z->s, x->value);
    case AX_TNUM: return mk_num(z, x);
    case AX_TDIM:
        if (z->set->term[x->arg[0]].kind == AX_TLIT)
            return q_dim(z, a, z->set->term[x->arg[0]].value, x->arg[1], vars);
        return zs_sdim(&z->s, q_term(z, a, x->arg[0], vars),
                        q_shape(z, a, x->arg[1], vars));
    case AX_TAPP: break;
    }
    ops_op op = (ops_op)x->op;
    int np = ops_table[op].n_params;
    zs_params p;
    Z3_ast in[OPS_MAX_ARITY] = {0}, shape0 = NULL;
    qdims d = {{qdims_get}, z, a, vars, x->arg + np};
    q_params(z, a, x, vars, &p);
    if (ops_table[op].ref == OPS_REF_SHAPE) shape0 = q_shape(z, a, x->arg[np], vars);
    if (ops_table[op].ref == OPS_REF_NONE)
        for (int k = 0; k < ops_table[op].arity; k++) in[k] = q_term(z, a, x->arg[np + k], vars);
    return mk_app(z, op, &p, in, &d.base, shape0);
}

/* Append the well-shapedness of every application under term t. */
static void q_guard(ze_ctx *z, const ax_axiom *a, int t, const Z3_ast *vars, zs_fits *f) {
    const ax_term *x = &z->set->term[t];
    for (int k = 0; k < x->n_args; k++) q_guard(z, a, x->arg[k], vars, f);
    if (x->kind != AX_TAPP) return;
    ops_op op = (ops_op)x->op;
    int np = ops_table[op].n_params;
    zs_params p;
    Z3_ast in[OPS_MAX_ARITY] = {0};
    qdims d = {{qdims_get}, z, a, vars, x->arg + np};
    q_params(z, a, x, vars, &p);
    for (int k = 0; k < ops_table[op].arity; k++) in[k] = q_term(z, a, x->arg[np + k], vars);
    zs_op_fits(&z->s, f, op, &p, in, &d.base);
}

/* 1 when the term e mentions the constant v. */
static int mentions(Z3_context c, Z3_ast e, Z3_ast v) {
    if (Z3_is_eq_ast(c, e, v)) return 1;
    if (Z3_get_ast_kind(c, e) != Z3_APP_AST) return 0;
    Z3_app app = Z3_to_app(c, e);
    unsigned n = Z3_get_app_num_args(c, app);
    for (unsigned i = 0; i < n; i++)
        if (mentions(c, Z3_get_app_arg(c, app, i), v)) return 1;
    return 0;
}

static int mentions_all(Z3_context c, Z3_ast e, const Z3_ast *vars, int n) {
    for (int i = 0; i < n; i++)
        if (!mentions(c, e, vars[i])) return 0;
    return 1;
}

/* The formula of axiom i: forall vars. domains => lhs = rhs, with the
 * plan's trigger sides as patterns; NULL when no side can be a pattern
 * (Z3 would then choose its own, possibly looping, triggers). */
static Z3_ast encode_axiom(ze_ctx *z, const tg_plan *plan, int i) {
    Z3_context c = z->s.c;
    const ax_axiom *a = &z->set->axiom[i];
    Z3_ast vars[AX_MAX_VARS] = {0}, guard[AX_MAX_VARS + ZS_MAX_FITS], side[2];
    Z3_app bound[AX_MAX_VARS];
    Z3_pattern pats[2];
    unsigned n_guard = 0, n_pat = 0;
    for (int v = 0; v < a->n_vars; v++) {
        char name[2 * AX_MAX_NAME + 4];
        snprintf(name, sizeof name, "%s!%s", a->name, a->var[v].name);
        int sort = a->var[v].sort;
        Z3_sort so = sort == AX_SORT_TENSOR ? z->s.T : z->s.I;
        vars[v] = Z3_mk_const(c, Z3_mk_string_symbol(c, name), so);
        bound[v] = Z3_to_app(c, vars[v]);
        if (sort != AX_SORT_TENSOR) guard[n_guard++] = domain(z, (ops_pkind)sort, vars[v]);
    }
    side[0] = q_term(z, a, a->lhs, vars);
    side[1] = q_term(z, a, a->rhs, vars);
    /* The axiom holds where both sides are well shaped (axioms.ax): an
     * instance outside that may equate terms of different shapes and
     * "prove" false rules, e.g. conv(cat(x0,x1), cat(x2,x3)) with x0 and x2
     * of different channel counts as the sum of two ill-shaped convs. */
    zs_fits wf = {{0}, 0};
    q_guard(z, a, a->lhs, vars, &wf);
    q_guard(z, a, a->rhs, vars, &wf);
    for (int k = 0; k < wf.n; k++) guard[n_guard++] = wf.c[k];
    Z3_ast body = Z3_mk_eq(c, side[0], side[1]);
    if (n_guard) body = Z3_mk_implies(c, Z3_mk_and(c, n_guard, guard), body);
    if (a->n_vars == 0) return body;
    for (int d = 0; d < 2; d++)
        if (tg_is_trigger(plan->ax[i].why[d]) && mentions_all(c, side[d], vars, a->n_vars)) {
            pats[n_pat++] = Z3_mk_pattern(c, 1, &side[d]);
            z->pattern[2 * i + d] = 1;
        }
    if (n_pat == 0) return NULL;
    /* named by the axiom, so Z3's instance profile can say which it is */
    return Z3_mk_quantifier_const_ex(c, 1, 0, Z3_mk_string_symbol(c, a->name),
                                     Z3_mk_string_symbol(c, ""), (unsigned)a->n_vars, bound,
                                     n_pat, pats, 0, NULL, body);
}

/* ---- shape rules as axioms ---- */

/* Dims of the inputs of a quantified application: tensor inputs read
 * through shape(); a constant's reference is its Int or S argument. */
typedef struct {
    zs_dims base;
    ze_ctx *z;
    ops_ref ref;
    const Z3_ast *in; /* tensor variables, or the constant's one argument */
} sdims;

static Z3_ast sdims_get(zs_dims *self, int input, int axis) {
    sdims *d = (sdims *)self;
    if (d->ref == OPS_REF_DIM1) return d->in[0]; /* the only dim a constant reads */
    if (d->ref == OPS_REF_SHAPE) return zs_sdim(&d->z->s, zs_num(&d->z->s, axis), d->in[0]);
    return zs_dim(&d->z->s, axis, d->in[input]);
}

/* forall (other params, inputs). dims of op(lit params, ...) by the rule,
 * and its shape = its first input's for element-wise operators. The
 * application is the pattern: it adds only Int terms, so it cannot loop. */
static Z3_ast shape_axiom(ze_ctx *z, ops_op op, const zs_params *fixed) {
    Z3_context c = z->s.c;
    const ops_info *o = &ops_table[op];
    zs_params p = *fixed;
    Z3_ast var[OPS_MAX_PARAMS + OPS_MAX_ARITY], in[OPS_MAX_ARITY] = {0}, conj[ZS_AXES + 1];
    Z3_app bound[OPS_MAX_PARAMS + OPS_MAX_ARITY];
    unsigned nv = 0, nc = 0;
    ops_ref ref = ops_table[op].ref;
    for (int k = 0; k < o->n_params; k++)
        if (!zs_lit(&p, k)) var[nv++] = p.ast[k] = Z3_mk_fresh_const(c, "p", z->s.I);
    int n_in = ref == OPS_REF_NONE ? o->arity : 1;
    Z3_sort so = ref == OPS_REF_NONE ? z->s.T : ref == OPS_REF_DIM1 ? z->s.I : z->s.S;
    for (int k = 0; k < n_in; k++) var[nv++] = in[k] = Z3_mk_fresh_const(c, "x", so);
    sdims d = {{sdims_get}, z, ref, in};
    Z3_ast app = mk_app(z, op, &p, in, &d.base, in[0]);
    for (int a = 0; a < ZS_AXES; a++) {
        Z3_ast r = zs_rule_dim(&z->s, op, &p, &d.base, a);
        if (r) conj[nc++] = Z3_mk_eq(c, zs_dim(&z->s, a, app), r);
    }
    if (ref == OPS_REF_SHAPE) conj[nc++] = Z3_mk_eq(c, zs_shape(&z->s, app), in[0]);
    else if (zs_same_shape_input(op) >= 0)
        conj[nc++] =
            Z3_mk_eq(c, zs_shape(&z->s, app), zs_shape(&z->s, in[zs_same_shape_input(op)]));
    if (nc == 0) return NULL;
    for (unsigned i = 0; i < nv; i++) bound[i] = Z3_to_app(c, var[i]);
    Z3_pattern pat = Z3_mk_pattern(c, 1, &app);
    char qid[64];
    snprintf(qid, sizeof qid, "%s%s", ZE_SHAPE_QID, o->name);
    return Z3_mk_quantifier_const_ex(c, 1, 0, Z3_mk_string_symbol(c, qid),
                                     Z3_mk_string_symbol(c, ""), nv, bound, 1, &pat, 0, NULL,
                                     Z3_mk_and(c, nc, conj));
}

/* One shape axiom per combination of the literal parameters the rule
 * needs, from their domains (conv: stride x pad, pools: kernel x stride x
 * pad, concat/split: axis ...). */
static void shape_axioms_for(ze_ctx *z, ops_op op, zs_params *p, int k) {
    const ops_info *o = &ops_table[op];
    if (k == o->n_params) {
        Z3_ast f = shape_axiom(z, op, p);
        if (f && z->n_shape_ax < ZE_MAX_SHAPE_AXIOMS) z->shape_ax[z->n_shape_ax++] = f;
        return;
    }
    if (!(zs_rule_params(op) >> k & 1)) {
        shape_axioms_for(z, op, p, k + 1);
        return;
    }
    const ops_pkind_info *dom = &ops_pkind_table[o->pkind[k]];
    for (int i = 0; i < dom->n_values; i++) {
        p->lit[k] = dom->values[i];
        p->ast[k] = zs_num(&z->s, dom->values[i]);
        p->is_lit |= 1u << k;
        shape_axioms_for(z, op, p, k + 1);
    }
    p->is_lit &= ~(1u << k);
}

/* forall r. every dim of num(r) is 1 (a rank-0 tensor), so the guards can
 * read the dims of a number an axiom's instance brings in. Only for a set
 * that writes numbers: a quantifier more changes Z3's search elsewhere. */
static void number_shape_axiom(ze_ctx *z) {
    Z3_context c = z->s.c;
    int any = 0;
    for (int t = 0; t < z->set->n_terms; t++) any |= z->set->term[t].kind == AX_TNUM;
    if (!any || z->n_shape_ax == ZE_MAX_SHAPE_AXIOMS) return;
    Z3_ast r = Z3_mk_fresh_const(c, "r", Z3_mk_real_sort(c)), conj[ZS_AXES];
    Z3_ast app = Z3_mk_app(c, z->num, 1, &r);
    for (int a = 0; a < ZS_AXES; a++) conj[a] = Z3_mk_eq(c, zs_dim(&z->s, a, app), zs_num(&z->s, 1));
    Z3_app bound = Z3_to_app(c, r);
    Z3_pattern pat = Z3_mk_pattern(c, 1, &app);
    z->shape_ax[z->n_shape_ax++] = Z3_mk_quantifier_const_ex(
        c, 1, 0, Z3_mk_string_symbol(c, ZE_SHAPE_QID "num"), Z3_mk_string_symbol(c, ""), 1,
        &bound, 1, &pat, 0, NULL, Z3_mk_and(c, ZS_AXES, conj));
}

static void encode_shape_axioms(ze_ctx *z) {
    for (int op = 0; op < OP_COUNT; op++) {
        zs_params p;
        memset(&p, 0, sizeof p);
        shape_axioms_for(z, (ops_op)op, &p, 0);
    }
    number_shape_axiom(z);
}

/* ---- context ---- */

const char *ze_version(void) {
    static char v[32];
    unsigned major, minor, build, rev;
    if (!v[0]) {
        Z3_get_version(&major, &minor, &build, &rev);
        snprintf(v, sizeof v, "%u.%u.%u.%u", major, minor, build, rev);
    }
    return v;
}

int ze_pattern_used(const ze_ctx *z, int axiom, int side) {
    return axiom >= 0 && axiom < z->set->n_axioms && (side == 0 || side == 1) &&
           z->pattern[2 * axiom + side];
}

static int z3_failed(ze_ctx *z, char *err, size_t errlen, const char *what) {
    Z3_error_code e = Z3_get_error_code(z->s.c);
    if (e == Z3_OK) return 0;
    snprintf(err, errlen, "z3: %s: %s", what, Z3_get_error_msg(z->s.c, e));
    return 1;
}

int ze_open(const ax_set *s, const tg_plan *plan, ze_ctx **out, char *err, size_t errlen) {
    ze_ctx *z = calloc(1, sizeof *z);
    Z3_config cfg = Z3_mk_config();
    *out = NULL;
    if (!z || !cfg) goto nomem;
    z->set = s;
    z->axiom = calloc((size_t)s->n_axioms + 1, sizeof *z->axiom);
    z->pattern = calloc(2 * (size_t)s->n_axioms + 1, 1);
    z->s.c = Z3_mk_context(cfg);
    Z3_del_config(cfg);
    cfg = NULL;
    if (!z->axiom || !z->pattern || !z->s.c) goto nomem;
    Z3_set_error_handler(z->s.c, NULL); /* errors are recorded, checked below */
    declare_all(z);
    encode_shape_axioms(z);
    if (z3_failed(z, err, errlen, "shape rules")) goto fail;
    for (int i = 0; i < s->n_axioms; i++) {
        z->axiom[i] = encode_axiom(z, plan, i);
        if (z3_failed(z, err, errlen, s->axiom[i].name)) goto fail;
    }
    *out = z;
    return 0;
nomem:
    snprintf(err, errlen, "z3: out of memory");
fail:
    if (cfg) Z3_del_config(cfg);
    ze_close(z);
    return -1;
}

void ze_close(ze_ctx *z) {
    if (!z) return;
    if (z->main) Z3_solver_dec_ref(z->s.c, z->main);
    ze_profile_end(z);
    if (z->s.c) Z3_del_context(z->s.c);
    free(z->axiom);
    free(z->pattern);
    free(z);
}

/* ---- ground terms with shape facts ---- */

typedef struct {
    ze_ctx *z;
    Z3_ast *fact;
    int n_facts, cap_facts;
    int oom;
} ground;

static void fact(ground *g, Z3_ast f) {
    if (g->n_facts == g->cap_facts) {
        int nc = g->cap_facts ? 2 * g->cap_facts : 64;
        Z3_ast *p = realloc(g->fact, (size_t)nc * sizeof *p);
        if (!p) {
            g->oom = 1;
            return;
        }
        g->fact = p;
        g->cap_facts = nc;
    }
    g->fact[g->n_facts++] = f;
}

static void eq_fact(ground *g, Z3_ast a, Z3_ast b) { fact(g, Z3_mk_eq(g->z->s.c, a, b)); }

/* Every dim of a ground tensor is >= 1. */
static void positive_dims(ground *g, Z3_ast t) {
    const zs_syms *s = &g->z->s;
    for (int a = 0; a < ZS_AXES; a++) fact(g, Z3_mk_ge(s->c, zs_dim(s, a, t), zs_num(s, 1)));
}

typedef struct {
    zs_dims base;
    ze_ctx *z;
    const Z3_ast *in;
} gdims;

static Z3_ast gdims_get(zs_dims *self, int input, int axis) {
    gdims *d = (gdims *)self;
    return zs_dim(&d->z->s, axis, d->in[input]);
}

/* What a well-shaped application says about how its inputs fit; for
 * binary element-wise operators (the table's flag, so a new one needs no
 * edit here) also that both inputs have one shape (ones() reads them). */
static void input_facts(ground *g, ops_op op, const zs_params *p, const Z3_ast *in, zs_dims *d) {
    zs_fits f = {{0}, 0};
    zs_op_fits(&g->z->s, &f, op, p, in, d);
    for (int i = 0; i < f.n; i++) fact(g, f.c[i]);
    if ((ops_table[op].flags & OPF_ELEMENTWISE) && ops_table[op].arity == 2)
        eq_fact(g, zs_shape(&g->z->s, in[0]), zs_shape(&g->z->s, in[1]));
}

/* The application as a ground term, with its shape facts. */
static Z3_ast g_apply(ground *g, ops_op op, const zs_params *p, const Z3_ast *in) {
    ze_ctx *z = g->z;
    gdims d = {{gdims_get}, z, in};
    Z3_ast out = mk_app(z, op, p, in, &d.base, zs_shape(&z->s, in[0]));
    int si = zs_same_shape_input(op);
    input_facts(g, op, p, in, &d.base);
    if (si >= 0) eq_fact(g, zs_shape(&z->s, out), zs_shape(&z->s, in[si]));
    for (int a = 0; a < ZS_AXES; a++) {
        Z3_ast r = zs_rule_dim(&z->s, op, p, &d.base, a);
        if (r) eq_fact(g, zs_dim(&z->s, a, out), r);
    }
    positive_dims(g, out);
    return out;
}

static Z3_ast input_const(ground *g, int i) {
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    Z3_ast x = Z3_mk_const(g->z->s.c, Z3_mk_string_symbol(g->z->s.c, name), g->z->s.T);
    positive_dims(g, x);
    return x;
}

/* A free parameter's value v (ops.h: free) as an unknown Int named by its
 * kind and value: the same in both graphs of a pair, and nothing is known
 * of it, so what is proved holds for every value. */
static Z3_ast free_const(ground *g, ops_pkind kind, int32_t v) {
    char name[48];
    snprintf(name, sizeof name, "%s_%ld", ops_pkind_table[kind].name, (long)v);
    return Z3_mk_const(g->z->s.c, Z3_mk_string_symbol(g->z->s.c, name), g->z->s.I);
}

/* Every value of graph gr as a ground term; inputs are x0.. shared by
 * every graph of the same call. */
static void g_graph(ground *g, const rg_graph *gr, Z3_ast val[RG_MAX_REFS]) {
    for (int i = 0; i < gr->n_inputs; i++) val[RG_IN(i)] = input_const(g, i);
    for (int j = 0; j < gr->n_nodes; j++) {
        const rg_node *n = &gr->node[j];
        const ops_info *o = &ops_table[n->op];
        zs_params p;
        Z3_ast in[OPS_MAX_ARITY] = {0};
        memset(&p, 0, sizeof p);
        for (int k = 0; k < o->n_params; k++) {
            int32_t v = n->param[k];
            if (o->pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(v)) {
                p.ast[k] = zs_dim(&g->z->s, RG_SYM_AXIS(v), val[RG_IN(RG_SYM_INPUT(v))]);
                continue;
            }
            if (ops_pkind_table[o->pkind[k]].free || RG_IS_SYM_GROUPS(o->pkind[k], v)) {
                /* an unknown: proved for every value (a group count: every
                 * count >= 1 the conv's shape facts allow) */
                p.ast[k] = free_const(g, o->pkind[k], v);
                continue;
            }
            p.ast[k] = zs_num(&g->z->s, v);
            p.lit[k] = v;
            p.is_lit |= 1u << k;
        }
        for (int k = 0; k < o->arity; k++) in[k] = val[n->in[k]];
        val[RG_NODE(j)] = g_apply(g, n->op, &p, in);
    }
}

/* Ground term t of an identity whose variables are the constants vars. */
static Z3_ast g_term(ground *g, const ax_set *s, int t, const Z3_ast *vars) {
    const ax_term *x = &s->term[t];
    switch (x->kind) {
    case AX_TVAR: return vars[x->value];
    case AX_TLIT: return zs_num(&g->z->s, x->value);
    case AX_TNUM: return mk_num(g->z, x);
    case AX_TDIM:
        return zs_sdim(&g->z->s, g_term(g, s, x->arg[0], vars),
                        zs_shape(&g->z->s, g_term(g, s, x->arg[1], vars)));
    case AX_TAPP: break;
    }
    ops_op op = (ops_op)x->op;
    int np = ops_table[op].n_params;
    zs_params p;
    Z3_ast in[OPS_MAX_ARITY] = {0};
    memset(&p, 0, sizeof p);
    for (int k = 0; k < np; k++) {
        p.ast[k] = g_term(g, s, x->arg[k], vars);
        if (s->term[x->arg[k]].kind == AX_TLIT) {
            p.lit[k] = s->term[x->arg[k]].value;
            p.is_lit |= 1u << k;
        }
    }
    for (int k = 0; k < ops_table[op].arity; k++) in[k] = g_term(g, s, x->arg[np + k], vars);
    return g_apply(g, op, &p, in);
}

/* ---- solving ---- */

const char *ze_verdict_name(ze_verdict v) {
    switch (v) {
    case ZE_PROVED: return "proved";
    case ZE_UNKNOWN: return "unknown";
    case ZE_BUDGET: return "budget";
    case ZE_TIMEOUT: return "timeout";
    case ZE_ILLSHAPED: return "ill-shaped";
    case ZE_ERROR: return "error";
    }
    return "?";
}

static void set_limits(ze_ctx *z, Z3_solver s, const ze_limits *lim) {
    Z3_context c = z->s.c;
    Z3_params p = Z3_mk_params(c);
    Z3_params_inc_ref(c, p);
    Z3_params_set_uint(c, p, Z3_mk_string_symbol(c, "timeout"),
                       lim->timeout_ms ? lim->timeout_ms : UINT32_MAX);
    Z3_params_set_uint(c, p, Z3_mk_string_symbol(c, "qi.max_instances"),
                       lim->max_instances ? lim->max_instances : UINT32_MAX);
    Z3_params_set_uint(c, p, Z3_mk_string_symbol(c, "rlimit"), lim->rlimit);
    Z3_params_set_bool(c, p, Z3_mk_string_symbol(c, "mbqi"), 0);
    Z3_solver_set_params(c, s, p);
    Z3_params_dec_ref(c, p);
}

static Z3_solver new_solver(ze_ctx *z, const ze_limits *lim) {
    Z3_solver s = Z3_mk_simple_solver(z->s.c);
    Z3_solver_inc_ref(z->s.c, s);
    set_limits(z, s, lim);
    return s;
}

/* A counter of the solver's statistics ("quant instantiations", "rlimit
 * count"); they add up over checks, so callers take differences. */
static unsigned counter(ze_ctx *z, Z3_solver s, const char *key) {
    Z3_stats st = Z3_solver_get_statistics(z->s.c, s);
    unsigned n = 0;
    Z3_stats_inc_ref(z->s.c, st);
    for (unsigned i = 0; i < Z3_stats_size(z->s.c, st); i++)
        if (!strcmp(Z3_stats_get_key(z->s.c, st, i), key) && Z3_stats_is_uint(z->s.c, st, i))
            n = Z3_stats_get_uint_value(z->s.c, st, i);
    Z3_stats_dec_ref(z->s.c, st);
    return n;
}

ze_verdict ze_classify_undecided(const char *reason, unsigned n, unsigned units,
                                 const ze_limits *lim, char why[ZE_WHYLEN]) {
    const char *r = reason ? reason : "unknown";
    if (lim->rlimit && units >= lim->rlimit) {
        snprintf(why, ZE_WHYLEN, "resource limit of %u units spent (--rlimit)", lim->rlimit);
        return ZE_BUDGET;
    }
    if (lim->timeout_ms && (strstr(r, "timeout") || strstr(r, "cancel"))) {
        snprintf(why, ZE_WHYLEN,
                 "wall-clock limit of %u ms reached (--timeout; a faster or idler machine "
                 "may decide it)",
                 lim->timeout_ms);
        return ZE_TIMEOUT;
    }
    if (lim->max_instances && n >= lim->max_instances / 2) {
        snprintf(why, ZE_WHYLEN, "instance budget spent (%u of %u kept; --max-instances)", n,
                 lim->max_instances);
        return ZE_BUDGET;
    }
    snprintf(why, ZE_WHYLEN, "%s after %u instances", r, n);
    return ZE_UNKNOWN;
}

/* The shape facts alone, in a solver of their own (no quantifiers: fast).
 * @return 1 when they are contradictory. */
static int vacuous(ze_ctx *z, ground *g, const ze_limits *lim) {
    Z3_solver s = new_solver(z, lim);
    for (int i = 0; i < g->n_facts; i++) Z3_solver_assert(z->s.c, s, g->fact[i]);
    Z3_lbool r = Z3_solver_check(z->s.c, s);
    Z3_solver_dec_ref(z->s.c, s);
    return r == Z3_L_FALSE;
}

/* The solver holding every axiom, made on first use: internalising ~200
 * quantifiers costs several times a typical proof, so a context keeps
 * them and each candidate lives in a push/pop scope of its own. */
static Z3_solver main_solver(ze_ctx *z, const ze_limits *lim) {
    if (z->main) return z->main;
    z->main = new_solver(z, lim);
    for (int i = 0; i < z->n_shape_ax; i++) Z3_solver_assert(z->s.c, z->main, z->shape_ax[i]);
    for (int i = 0; i < z->set->n_axioms; i++)
        if (z->axiom[i]) Z3_solver_assert(z->s.c, z->main, z->axiom[i]);
    return z->main;
}

/* Shape facts first (vacuity guard), then facts and goal in a scope of
 * the axiom solver. */
static ze_verdict solve(ze_ctx *z, ground *g, Z3_ast goal, const ze_limits *lim, char *why) {
    Z3_context c = z->s.c;
    ze_verdict v;
    if (vacuous(z, g, lim)) {
        snprintf(why, ZE_WHYLEN, "the shape facts are contradictory");
        v = ZE_ILLSHAPED;
        goto done;
    }
    /* the profiling solver between ze_profile_begin and _end */
    Z3_solver s = z->prof_solver ? z->prof_solver : main_solver(z, lim);
    set_limits(z, s, lim);
    unsigned inst0 = counter(z, s, "quant instantiations"), units0 = counter(z, s, "rlimit count");
    Z3_solver_push(c, s);
    for (int i = 0; i < g->n_facts; i++) Z3_solver_assert(c, s, g->fact[i]);
    Z3_solver_assert(c, s, goal);
    Z3_lbool r = Z3_solver_check(c, s);
    unsigned units = counter(z, s, "rlimit count") - units0;
    if (r == Z3_L_FALSE) v = ZE_PROVED;
    else if (r == Z3_L_TRUE) v = ZE_UNKNOWN, snprintf(why, ZE_WHYLEN, "sat");
    else
        v = ze_classify_undecided(Z3_solver_get_reason_unknown(c, s),
                                  counter(z, s, "quant instantiations") - inst0, units, lim, why);
    Z3_solver_pop(c, s, 1);
    if (z->prof_solver) {
        z->prof->units += units;
        z->prof->checks++;
        z->prof->budget += v == ZE_BUDGET;
    }
done:
    if (Z3_get_error_code(c) != Z3_OK) {
        snprintf(why, ZE_WHYLEN, "z3: %s", Z3_get_error_msg(c, Z3_get_error_code(c)));
        v = ZE_ERROR;
    }
    return v;
}

/* ---- the instance profile ---- */

/* Add the lines "[quantifier_instances] NAME : N : ..." of t to p. */
static void read_profile(ze_ctx *z, FILE *t, ze_profile *p) {
    char line[512], name[256];
    unsigned long long n;
    rewind(t);
    while (fgets(line, sizeof line, t)) {
        if (sscanf(line, " [quantifier_instances] %255s : %llu", name, &n) != 2) continue;
        char *q = name;
        size_t len = strlen(q);
        if (len >= 2 && q[0] == '|' && q[len - 1] == '|') q[len - 1] = '\0', q++; /* Z3's quoting */
        if (!strncmp(q, ZE_SHAPE_QID, strlen(ZE_SHAPE_QID))) {
            p->shape += n;
            continue;
        }
        for (int i = 0; i < z->set->n_axioms; i++)
            if (!strcmp(z->set->axiom[i].name, q)) {
                p->instances[i] += n;
                break;
            }
    }
}

/* Delete solver s, reading the profile Z3 prints then (z3enc.h) into p. */
static void delete_profiled(ze_ctx *z, Z3_solver s, ze_profile *p) {
    FILE *t = tmpfile();
    int saved = t ? dup(2) : -1;
    fflush(stderr);
    if (saved >= 0 && dup2(fileno(t), 2) < 0) close(saved), saved = -1;
    Z3_solver_dec_ref(z->s.c, s);
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
        read_profile(z, t, p);
    }
    if (t) fclose(t);
}

void ze_profile_begin(ze_ctx *z, const ze_limits *lim, int skip, ze_profile *p) {
    Z3_context c = z->s.c;
    Z3_solver s = new_solver(z, lim);
    Z3_params prm = Z3_mk_params(c);
    Z3_params_inc_ref(c, prm);
    Z3_params_set_bool(c, prm, Z3_mk_string_symbol(c, "qi.profile"), 1);
    Z3_solver_set_params(c, s, prm);
    Z3_params_dec_ref(c, prm);
    for (int i = 0; i < z->n_shape_ax; i++) Z3_solver_assert(c, s, z->shape_ax[i]);
    for (int i = 0; i < z->set->n_axioms; i++)
        if (z->axiom[i] && i != skip) Z3_solver_assert(c, s, z->axiom[i]);
    z->prof_solver = s;
    z->prof = p;
}

void ze_profile_end(ze_ctx *z) {
    if (!z->prof_solver) return;
    delete_profiled(z, z->prof_solver, z->prof);
    z->prof_solver = NULL;
    z->prof = NULL;
}

static ze_verdict finish(ze_ctx *z, ground *g, Z3_ast goal, const ze_limits *lim, char *why) {
    ze_verdict v;
    why[0] = '\0';
    if (g->oom) {
        snprintf(why, ZE_WHYLEN, "out of memory");
        v = ZE_ERROR;
    } else if (Z3_get_error_code(z->s.c) != Z3_OK) {
        snprintf(why, ZE_WHYLEN, "z3: %s", Z3_get_error_msg(z->s.c, Z3_get_error_code(z->s.c)));
        v = ZE_ERROR;
    } else {
        v = solve(z, g, goal, lim, why);
    }
    free(g->fact);
    return v;
}

ze_verdict ze_prove_graphs(ze_ctx *z, const rg_graph *a, const rg_graph *b,
                           const ze_limits *lim, char why[ZE_WHYLEN]) {
    ground g = {z, NULL, 0, 0, 0};
    Z3_ast va[RG_MAX_REFS], vb[RG_MAX_REFS], diff[RG_MAX_OUTPUTS];
    g_graph(&g, a, va);
    g_graph(&g, b, vb);
    int n = a->n_outputs < b->n_outputs ? a->n_outputs : b->n_outputs;
    for (int k = 0; k < n; k++)
        diff[k] = Z3_mk_not(z->s.c, Z3_mk_eq(z->s.c, va[a->out[k]], vb[b->out[k]]));
    Z3_ast goal = n == 1 ? diff[0] : Z3_mk_or(z->s.c, (unsigned)n, diff);
    return finish(z, &g, goal, lim, why);
}

ze_verdict ze_prove_identity(ze_ctx *z, const ax_set *set, int axiom, const ze_limits *lim,
                             char why[ZE_WHYLEN]) {
    ground g = {z, NULL, 0, 0, 0};
    const ax_axiom *a = &set->axiom[axiom];
    Z3_ast vars[AX_MAX_VARS] = {0};
    for (int v = 0; v < a->n_vars; v++) {
        char name[AX_MAX_NAME + 8];
        snprintf(name, sizeof name, "sk!%s", a->var[v].name);
        int sort = a->var[v].sort;
        vars[v] = Z3_mk_const(z->s.c, Z3_mk_string_symbol(z->s.c, name),
                              sort == AX_SORT_TENSOR ? z->s.T : z->s.I);
        if (sort == AX_SORT_TENSOR) positive_dims(&g, vars[v]);
        else fact(&g, domain(z, (ops_pkind)sort, vars[v]));
    }
    Z3_ast l = g_term(&g, set, a->lhs, vars), r = g_term(&g, set, a->rhs, vars);
    return finish(z, &g, Z3_mk_not(z->s.c, Z3_mk_eq(z->s.c, l, r)), lim, why);
}
