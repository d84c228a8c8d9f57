/* dom.c - synth's parameter combos per operator and the memoised shape
 * check (see dom.h for the domains and why they are restricted). */
#include "dom.h"

#include <assert.h>
#include <string.h>
#include <xxhash.h>

static_assert(OP_COUNT <= 32, "the memo keeps an operator in 5 bits, op sets in 32");

static void add_combo(dom *d, ops_op op, int32_t a, int32_t b, int32_t c, int32_t e) {
    int k = d->n_combo[op]++;
    int32_t *p = d->combo[op][k];
    p[0] = a, p[1] = b, p[2] = c, p[3] = e;
}

static void conv_combos(dom *d, int groups2) {
    for (int32_t g = 1; g <= (groups2 ? 2 : 1); g++)
        for (int32_t s = 1; s <= 2; s++)
            for (int32_t pad = OPS_PAD_SAME; pad <= OPS_PAD_VALID; pad++)
                for (int32_t act = OPS_ACT_NONE; act <= OPS_ACT_RELU; act++)
                    add_combo(d, OP_CONV2D, s, pad, act, g);
}

static void pool_combos(dom *d, ops_op op) {
    for (int32_t s = 1; s <= 2; s++)
        for (int32_t pad = OPS_PAD_SAME; pad <= OPS_PAD_VALID; pad++)
            add_combo(d, op, OPS_KERNEL(3, 3), s, pad, 0);
}

/* The combos of one operator. ORDER OP: every operator is listed. */
static void op_combos(dom *d, ops_op op, int groups2) {
    switch (op) {
    case OP_CONV2D: conv_combos(d, groups2); return;
    case OP_AVGPOOL:
    case OP_MAXPOOL: pool_combos(d, op); return;
    case OP_CONCAT:
    case OP_SPLIT0:
    case OP_SPLIT1: /* the axis; a split's size is bound from its concat */
        for (int32_t a = 0; a < TEN_MAX_RANK; a++) add_combo(d, op, a, 0, 0, 0);
        return;
    case OP_ENLARGE:
    case OP_ICONV:
    case OP_POOLK: add_combo(d, op, OPS_KERNEL(3, 3), 0, 0, 0); return;
    case OP_MATMUL:
    case OP_EWADD:
    case OP_EWMUL:
    case OP_SMUL:
    case OP_RELU:
    case OP_TRANSPOSE:
    case OP_IMM:
    case OP_ONES: add_combo(d, op, 0, 0, 0, 0); return;
    case OP_COUNT: return;
    }
}

void dom_init(dom *d, uint32_t ops, int groups2) {
    memset(d, 0, sizeof *d);
    d->ops = ops;
    for (int op = 0; op < OP_COUNT; op++)
        if (ops >> op & 1) op_combos(d, (ops_op)op, groups2);
}

/* From the operator table's kinds column. */
int dom_kind(ops_op op, int k0, int k1) {
    const ops_kinds *t = &ops_table[op].kinds;
    if (k0 < 0 || k0 >= OPS_KIND_COUNT || !(t->in0 >> k0 & 1)) return DOM_NO_KIND;
    if (ops_table[op].arity > 1) {
        if (k1 < 0 || k1 >= OPS_KIND_COUNT) return DOM_NO_KIND;
        if (t->in1 == OPS_KM_SAME ? k1 != k0 : !(t->in1 >> k1 & 1)) return DOM_NO_KIND;
    }
    return t->out == OPS_OUT_IN0 ? k0 : t->out;
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
    if ((op == OP_AVGPOOL || op == OP_MAXPOOL) && (in[0].dim[2] < 2 || in[0].dim[3] < 2))
        return DOM_BAD;
    return dom_pack(&out);
}

void dom_memo_init(dom_memo *m) { memset(m, 0xff, sizeof *m); }

uint64_t dom_infer(dom_memo *m, ops_op op, const int32_t p[OPS_MAX_PARAMS],
                   uint64_t s0, uint64_t s1) {
    if (ops_table[op].arity < 2) s1 = 0;
    /* shape words use 59 bits: the operator goes above them */
    uint64_t k0 = s0 | (uint64_t)op << 59, par = pack_params(p);
    uint64_t key[3] = {k0, s1, par};
    uint64_t h = XXH3_64bits(key, sizeof key) & ((1u << DOM_MEMO_BITS) - 1);
    if (m->e[h].in0 == k0 && m->e[h].in1 == s1 && m->e[h].par == par) return m->e[h].out;
    uint64_t out = infer(op, p, s0, s1);
    m->e[h].in0 = k0, m->e[h].in1 = s1, m->e[h].par = par, m->e[h].out = out;
    return out;
}
