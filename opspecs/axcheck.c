/* axcheck.c - instantiate an axiom on random well-shaped tensors and
 * compare both sides under the reference semantics (see axcheck.h). */
#include "axcheck.h"
#include "modp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Candidate shapes: rank 0, rank 1 in [1..5] (biases, per-channel
 * scales), rank 2 in [1..4]^2, rank 3 in [1..3]x[1..4]x{1,2,3,4,6} (token
 * sequences; 6 features split into 2 or 3 heads), rank 4 in [1..4]x[1..4]x[1..5]x[1..5]
 * (spatial dims up to 5 so that 1x1, 3x3 and 5x5 kernels, strides and
 * VALID windows all get exercised). */
#define N_RANK1 5
#define N_RANK2 16
#define N_RANK3 (3 * 4 * 5)
#define N_RANK4 (4 * 4 * 5 * 5)
#define N_CAND (1 + N_RANK1 + N_RANK2 + N_RANK3 + N_RANK4)

static ten_shape cand_shape(int i) {
    ten_shape s = {0, {0, 0, 0, 0}};
    if (i-- == 0) return s;
    if (i < N_RANK1) {
        s.rank = 1;
        s.dim[0] = 1 + i;
        return s;
    }
    i -= N_RANK1;
    if (i < N_RANK2) {
        s.rank = 2;
        s.dim[0] = 1 + i / 4;
        s.dim[1] = 1 + i % 4;
        return s;
    }
    i -= N_RANK2;
    if (i < N_RANK3) {
        static const int32_t features[5] = {1, 2, 3, 4, 6};
        s.rank = 3;
        s.dim[2] = features[i % 5], i /= 5;
        s.dim[1] = 1 + i % 4, i /= 4;
        s.dim[0] = 1 + i;
        return s;
    }
    i -= N_RANK3;
    s.rank = 4;
    s.dim[3] = 1 + i % 5, i /= 5;
    s.dim[2] = 1 + i % 5, i /= 5;
    s.dim[1] = 1 + i % 4, i /= 4;
    s.dim[0] = 1 + i;
    return s;
}

typedef struct {
    const ax_set *set;
    const ax_axiom *ax;
    int t0, nt;                           /* the axiom's term range */
    ten_shape shape[AX_MAX_AXIOM_TERMS];  /* per term, tensor sort */
    int32_t val[AX_MAX_AXIOM_TERMS];      /* per term, parameter sorts */
    int32_t pval[AX_MAX_VARS];            /* parameter variables */
    ten_shape vshape[AX_MAX_VARS];        /* tensor variables */
    int order[AX_MAX_VARS], n_order;      /* tensor variables, first occurrence */
    uint32_t pmask;                       /* parameter variables' bits */
    long nodes, budget;
    uint64_t rng;
} axc_ctx;

static int local(const axc_ctx *c, int term) { return term - c->t0; }

/* Shape (or parameter value) of term i from its children's.
 * @return 0, or -1 when the term is ill-shaped. */
static int term_shape(axc_ctx *c, const ax_term *t, int i) {
    int32_t param[OPS_MAX_PARAMS] = {0};
    ten_shape in[OPS_MAX_ARITY];
    char err[OPS_ERRLEN];
    switch (t->kind) {
    case AX_TVAR:
        if (t->sort == AX_SORT_TENSOR) c->shape[i] = c->vshape[t->value];
        else c->val[i] = c->pval[t->value];
        return 0;
    case AX_TLIT: c->val[i] = t->value; return 0;
    case AX_TNUM: c->shape[i] = (ten_shape){0, {0}}; return 0;
    case AX_TDIM: {
        int32_t a = c->val[local(c, t->arg[0])];
        const ten_shape *s = &c->shape[local(c, t->arg[1])];
        if (a < 0 || a >= s->rank) return -1;
        c->val[i] = s->dim[a];
        return 0;
    }
    case AX_TAPP: break;
    }
    int np = ops_table[t->op].n_params;
    for (int k = 0; k < np; k++) param[k] = c->val[local(c, t->arg[k])];
    for (int k = np; k < t->n_args; k++) in[k - np] = c->shape[local(c, t->arg[k])];
    if (ops_infer_shape((ops_op)t->op, param, in, &c->shape[i], err) != OPS_OK) return -1;
    return ten_numel(&c->shape[i]) <= AXC_MAX_CELLS ? 0 : -1;
}

/* Infer every term whose variables are all in `assigned` (children come
 * first in the pool). @return 0, or -1 at the first ill-shaped term. */
static int propagate(axc_ctx *c, uint32_t assigned) {
    for (int i = 0; i < c->nt; i++) {
        const ax_term *t = &c->set->term[c->t0 + i];
        if ((t->vars & ~assigned) == 0 && term_shape(c, t, i) != 0) return -1;
    }
    return 0;
}

static void shuffle(int *a, int n, uint64_t *rng) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(ten_rand_next(rng) % (uint64_t)(i + 1));
        int tmp = a[i];
        a[i] = a[j];
        a[j] = tmp;
    }
}

/* A random visiting order of the candidates that draws the rank first
 * (weights 1:2:2:2:3 for ranks 0, 1, 2, 3, 4 among ranks with candidates left),
 * then a shape of that rank: a scalar or a matrix comes up early although
 * the set holds 400 rank-4 shapes and one scalar. */
static void candidate_order(int *perm, uint64_t *rng) {
    enum { NR = 5 };
    static const int start[NR] = {0, 1, 1 + N_RANK1, 1 + N_RANK1 + N_RANK2,
                                  1 + N_RANK1 + N_RANK2 + N_RANK3};
    static const int count[NR] = {1, N_RANK1, N_RANK2, N_RANK3, N_RANK4};
    static const int weight[NR] = {1, 2, 2, 2, 3};
    int cls[NR][N_RANK4], left[NR];
    for (int r = 0; r < NR; r++) {
        for (int i = 0; i < count[r]; i++) cls[r][i] = start[r] + i;
        shuffle(cls[r], count[r], rng);
        left[r] = count[r];
    }
    for (int i = 0; i < N_CAND; i++) {
        int total = 0, r = 0;
        for (int k = 0; k < NR; k++) total += left[k] ? weight[k] : 0;
        int pick = (int)(ten_rand_next(rng) % (uint64_t)total);
        while (left[r] == 0 || (pick -= weight[r]) >= 0) r++;
        perm[i] = cls[r][--left[r]];
    }
}

/* Bind tensor variables order[k..] by backtracking.
 * @return 1 when all are bound well-shaped, 0 when no completion exists,
 *         -1 when the node budget ran out. */
static int search(axc_ctx *c, int k, uint32_t assigned) {
    int perm[N_CAND];
    if (k == c->n_order) return 1;
    int v = c->order[k];
    uint32_t m = assigned | 1u << v;
    candidate_order(perm, &c->rng);
    for (int i = 0; i < N_CAND; i++) {
        if (++c->nodes > c->budget) return -1;
        c->vshape[v] = cand_shape(perm[i]);
        if (propagate(c, m) != 0) continue;
        int r = search(c, k + 1, m);
        if (r != 0) return r;
    }
    return 0;
}

/* One attempt: random parameters, then a budgeted shape search.
 * @return 1 with every term's shape set, or 0. */
static int attempt(axc_ctx *c) {
    for (int v = 0; v < c->ax->n_vars; v++) {
        int s = c->ax->var[v].sort;
        if (s == AX_SORT_TENSOR) continue;
        const ops_pkind_info *d = &ops_pkind_table[s];
        c->pval[v] = d->values[ten_rand_next(&c->rng) % (uint64_t)d->n_values];
    }
    c->budget = c->nodes + AXC_NODE_BUDGET;
    if (search(c, 0, c->pmask) != 1) return 0;
    return propagate(c, ~0u) == 0; /* the final shapes of every term */
}

static void ctx_init(axc_ctx *c, const ax_set *set, int axiom, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->set = set;
    c->ax = &set->axiom[axiom];
    c->t0 = c->ax->first_term;
    c->nt = c->ax->end_term - c->ax->first_term;
    c->rng = seed;
    uint32_t seen = 0;
    for (int i = 0; i < c->nt; i++) { /* leaves appear in textual order */
        const ax_term *t = &set->term[c->t0 + i];
        if (t->kind != AX_TVAR || (seen & (1u << t->value))) continue;
        seen |= 1u << t->value;
        if (t->sort == AX_SORT_TENSOR) c->order[c->n_order++] = t->value;
        else c->pmask |= 1u << t->value;
    }
}

/* "s=1 p=SAME x=[1,2,3,3] w=[2,2,1,1]": parameters, then tensors. */
static void describe(const axc_ctx *c, char *buf, size_t n) {
    size_t len = 0;
    char v[64];
    buf[0] = '\0';
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < c->ax->n_vars && len < n; i++) {
            const ax_var *var = &c->ax->var[i];
            if ((var->sort == AX_SORT_TENSOR) != pass) continue;
            if (pass) ten_shape_str(&c->vshape[i], v);
            else ops_param_str((ops_pkind)var->sort, c->pval[i], v);
            int k = snprintf(buf + len, n - len, "%s%s=%s", len ? " " : "", var->name, v);
            len += k > 0 ? (size_t)k : 0;
        }
}

/* Evaluate tensor term i into vals[i] (inputs already evaluated).
 * @return 0, or -1 when out of memory. */
static int eval_term(const axc_ctx *c, int i, ten *vars, ten *own, const ten **vals) {
    const ax_term *t = &c->set->term[c->t0 + i];
    const ten *in[OPS_MAX_ARITY];
    int32_t param[OPS_MAX_PARAMS] = {0};
    if (t->kind == AX_TVAR) {
        vals[i] = &vars[t->value];
        return 0;
    }
    if (t->kind == AX_TNUM) { /* value / den in the field */
        if (ten_alloc(&own[i], &c->shape[i]) != 0) return -1;
        own[i].data[0] = mp_mul(mp_from_int(t->value), mp_inv(mp_from_int(t->den)));
        vals[i] = &own[i];
        return 0;
    }
    int np = ops_table[t->op].n_params;
    for (int k = 0; k < np; k++) param[k] = c->val[local(c, t->arg[k])];
    for (int k = np; k < t->n_args; k++) in[k - np] = vals[local(c, t->arg[k])];
    if (ten_alloc(&own[i], &c->shape[i]) != 0) return -1;
    vals[i] = &own[i];
    return ops_eval((ops_op)t->op, param, in, &own[i]) == OPS_OK ? 0 : -1;
}

/* Fill the tensor variables at random, evaluate both sides, compare.
 * @return AXC_OK with *equal set, or AXC_EEVAL. */
static int eval_instance(const axc_ctx *c, uint64_t *fill, int *equal) {
    ten vars[AX_MAX_VARS], own[AX_MAX_AXIOM_TERMS];
    const ten *vals[AX_MAX_AXIOM_TERMS];
    int rc = AXC_OK;
    memset(vars, 0, sizeof vars);
    memset(own, 0, sizeof own);
    for (int v = 0; v < c->ax->n_vars && rc == AXC_OK; v++) {
        if (c->ax->var[v].sort != AX_SORT_TENSOR) continue;
        if (ten_alloc(&vars[v], &c->vshape[v]) != 0) rc = AXC_EEVAL;
        else ten_fill_random(&vars[v], fill);
    }
    for (int i = 0; i < c->nt && rc == AXC_OK; i++)
        if (c->set->term[c->t0 + i].sort == AX_SORT_TENSOR &&
            eval_term(c, i, vars, own, vals) != 0)
            rc = AXC_EEVAL;
    if (rc == AXC_OK)
        *equal = ten_equal(vals[local(c, c->ax->lhs)], vals[local(c, c->ax->rhs)]);
    for (int i = 0; i < c->nt; i++) ten_free(&own[i]);
    for (int v = 0; v < c->ax->n_vars; v++) ten_free(&vars[v]);
    return rc;
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Count distinct instances by the hash of their description. */
static void note_distinct(uint64_t *seen, int n_seen, axc_result *out) {
    uint64_t h = fnv1a(out->instance);
    for (int i = 0; i < n_seen; i++)
        if (seen[i] == h) return;
    seen[out->distinct++] = h;
}

static int report(const axc_ctx *c, axc_result *out, int rc, const char *fmt, ...) {
    int n = snprintf(out->msg, sizeof out->msg, "%s:%d: axiom %s: ", c->set->file,
                     c->ax->line, c->ax->name);
    if (n < 0 || (size_t)n >= sizeof out->msg) return rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->msg + n, sizeof out->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return rc;
}

/* The instance loop; seen has n_instances slots. */
static int run(axc_ctx *c, int n_instances, uint64_t *seen, axc_result *out) {
    uint64_t fill = ten_rand_next(&c->rng);
    int equal = 1;
    while (out->found < n_instances && out->attempts < n_instances * AXC_ATTEMPTS) {
        out->attempts++;
        if (!attempt(c)) continue;
        describe(c, out->instance, sizeof out->instance);
        if (eval_instance(c, &fill, &equal) != AXC_OK)
            return report(c, out, AXC_EEVAL, "evaluation failed (out of memory)");
        out->found++;
        note_distinct(seen, out->distinct, out);
        if (!equal)
            return report(c, out, AXC_EMISMATCH, "sides differ on %s", out->instance);
    }
    if (out->found > 0) return AXC_OK;
    return report(c, out, AXC_ENOINSTANCE,
                  "no well-shaped instance in %d attempts of %d nodes (mis-typed axiom?)",
                  out->attempts, AXC_NODE_BUDGET);
}

int axc_check(const ax_set *set, int axiom, int n_instances, uint64_t seed,
              axc_result *out) {
    memset(out, 0, sizeof *out);
    if (!set || axiom < 0 || axiom >= set->n_axioms || n_instances < 1 ||
        n_instances > 1000000) {
        snprintf(out->msg, sizeof out->msg, "axc_check: bad axiom %d or count %d",
                 axiom, n_instances);
        return AXC_EARG;
    }
    axc_ctx *c = malloc(sizeof *c);
    uint64_t *seen = malloc((size_t)n_instances * sizeof *seen);
    int rc = AXC_EEVAL;
    if (!c || !seen) {
        snprintf(out->msg, sizeof out->msg, "axc_check: out of memory");
        goto cleanup;
    }
    ctx_init(c, set, axiom, seed);
    rc = run(c, n_instances, seen, out);
    out->nodes = c->nodes;
cleanup:
    free(seen);
    free(c);
    return rc;
}
