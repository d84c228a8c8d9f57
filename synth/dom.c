/* dom.c - synth's parameter combos per operator and the memoised shape
 * check (see dom.h for the domains and why they are restricted). */
#include "dom.h"

#include <assert.h>
#include <string.h>
#include <xxhash.h>

static_assert(OP_COUNT <= 1024, "the memo keeps an operator in 10 bits");

/* synth's values of each parameter kind of op (dom.h). ORDER PKIND */
static int kind_values(ops_op op, ops_pkind k, int groups2, int kernels1x1, int32_t v[DOM_MAX_COMBOS]) {
    switch (k) {
    case PK_AXIS:
        for (int32_t a = 0; a < TEN_MAX_RANK; a++) v[a] = a;
        return TEN_MAX_RANK;
    case PK_STRIDE: v[0] = 1, v[1] = 2; return 2;
    case PK_PAD: v[0] = OPS_PAD_SAME, v[1] = OPS_PAD_VALID; return 2;
    case PK_ACT: v[0] = OPS_ACT_NONE, v[1] = OPS_ACT_RELU; return 2;
    case PK_KERNEL: /* pools also 2x2, the stride-2 downsampling of DenseNet's transitions;
                       with kernels1x1 constant kernels also 1x1 */
        v[0] = OPS_KERNEL(3, 3), v[1] = ops_table[op].form == OPS_FORM_POOL ? OPS_KERNEL(2, 2) : OPS_KERNEL(1, 1);
        return ops_table[op].form == OPS_FORM_POOL || (kernels1x1 && ops_table[op].form == OPS_FORM_CKERNEL) ? 2 : 1;
    case PK_GROUPS: v[0] = 1, v[1] = 2; return groups2 ? 2 : 1;
    case PK_SIZE: v[0] = 0; return 1; /* bound from the concat a split reads */
    case PK_EPS: /* labels: free in rules */
    case PK_HEADS: v[0] = ops_pkind_table[k].values[0]; return 1;
    case PK_PERM:
        for (int i = 0; i < ops_pkind_table[k].n_values; i++) v[i] = ops_pkind_table[k].values[i];
        return ops_pkind_table[k].n_values;
    case PK_COUNT: break;
    }
    return 0;
}

/* The combos of one operator: the product of its parameters' values, the
 * first parameter outermost. */
static void op_combos(dom *d, ops_op op, int groups2, int kernels1x1) {
    const ops_info *o = &ops_table[op];
    int32_t vals[OPS_MAX_PARAMS][DOM_MAX_COMBOS], n[OPS_MAX_PARAMS], at[OPS_MAX_PARAMS] = {0};
    for (int k = 0; k < o->n_params; k++) n[k] = kind_values(op, o->pkind[k], groups2, kernels1x1, vals[k]);
    for (;;) {
        assert(d->n_combo[op] < DOM_MAX_COMBOS);
        int32_t *p = d->combo[op][d->n_combo[op]++];
        for (int k = 0; k < OPS_MAX_PARAMS; k++) p[k] = k < o->n_params ? vals[k][at[k]] : 0;
        int k = o->n_params - 1; /* odometer: the last parameter turns fastest */
        while (k >= 0 && ++at[k] == n[k]) at[k--] = 0;
        if (k < 0) return;
    }
}

void dom_init(dom *d, ops_set ops, int groups2, int kernels1x1) {
    memset(d, 0, sizeof *d);
    d->ops = ops;
    for (int op = 0; op < OP_COUNT; op++)
        if (ops >> op & 1) op_combos(d, (ops_op)op, groups2, kernels1x1);
}

/* From the operator table's kinds column. */
int dom_kind(ops_op op, int k0, int k1) {
    const ops_kinds *t = &ops_table[op].kinds;
    if (k0 < 0 || k0 >= OPS_KIND_COUNT || !(t->in0 >> k0 & 1)) return DOM_NO_KIND;
    if (ops_table[op].arity > 1) {
        if (k1 < 0 || k1 >= OPS_KIND_COUNT) return DOM_NO_KIND;
        if (t->in1 == OPS_KM_SAME ? k1 != k0 : !(t->in1 >> k1 & 1)) return DOM_NO_KIND;
    }
    return t->out == OPS_OUT_IN0 ? k0 : t->out == OPS_OUT_IN1 ? k1 : t->out;
}

uint64_t dom_pack(const ten_shape *s) {
    uint64_t w = (uint64_t)s->rank;
    for (int i = 0; i < TEN_MAX_RANK; i++) {
        int32_t v = i < s->rank ? s->dim[i] : 0;
        if (v < 0 || v > DOM_DIM_MAX) return DOM_BAD;
        w = w << 14 | (uint64_t)v;
    }
    return w;
}

void dom_unpack(uint64_t w, ten_shape *s) {
    for (int i = TEN_MAX_RANK - 1; i >= 0; i--, w >>= 14) s->dim[i] = (int32_t)(w & 0x3fff);
    s->rank = (int)w;
}

int64_t dom_numel(uint64_t w) {
    int rank = (int)(w >> 56);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= (int64_t)(w >> (14 * (3 - i)) & 0x3fff);
    return n;
}

static uint64_t pack_params(const int32_t p[OPS_MAX_PARAMS]) {
    uint64_t w = 0;
    for (int k = 0; k < OPS_MAX_PARAMS; k++) w = w << 16 | (uint16_t)p[k];
    return w;
}

/* The uncached check. */
static uint64_t infer(ops_op op, const int32_t p[OPS_MAX_PARAMS], uint64_t s0, uint64_t s1) {
    ten_shape in[2], out;
    char err[OPS_ERRLEN];
    dom_unpack(s0, &in[0]);
    dom_unpack(s1, &in[1]);
    if (ops_infer_shape(op, p, in, &out, err) != OPS_OK) return DOM_BAD;
    if (ops_table[op].form == OPS_FORM_POOL && (in[0].dim[2] < 2 || in[0].dim[3] < 2))
        return DOM_BAD;
    return dom_pack(&out);
}

void dom_memo_init(dom_memo *m) { memset(m, 0xff, sizeof *m); }

uint64_t dom_infer(dom_memo *m, ops_op op, const int32_t p[OPS_MAX_PARAMS],
                   uint64_t s0, uint64_t s1) {
    if (ops_table[op].arity < 2) s1 = 0;
    /* shape words use 59 bits: the operator's 10 bits go above them, 5 in each */
    uint64_t k0 = s0 | ((uint64_t)op & 31) << 59, k1 = s1 | ((uint64_t)op >> 5) << 59;
    uint64_t par = pack_params(p), key[3] = {k0, k1, par};
    uint64_t h = XXH3_64bits(key, sizeof key) & ((1u << DOM_MEMO_BITS) - 1);
    if (m->e[h].in0 == k0 && m->e[h].in1 == k1 && m->e[h].par == par) return m->e[h].out;
    uint64_t out = infer(op, p, s0, s1);
    m->e[h].in0 = k0, m->e[h].in1 = k1, m->e[h].par = par, m->e[h].out = out;
    return out;
}
