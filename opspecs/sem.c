/* sem.c - the exact reference semantics of every operator (ops_eval):
 * integers modulo 2^61-1, the values synth fingerprints and the axiom
 * checks test. The kernels are kern.h's, instantiated here over residues;
 * engine/fkern.c instantiates the same loops over floats. No allocation,
 * so OPS_ENOMEM never happens. */
#include "modp.h"
#include "ops.h"

/* v mod p for any v < 2^128: 2^61 = 1 (mod p), so add the 61-bit digits. */
static inline uint64_t red128(unsigned __int128 v) {
    uint64_t a0 = (uint64_t)v & MP_P, a1 = (uint64_t)(v >> 61) & MP_P, a2 = (uint64_t)(v >> 122);
    return mp_reduce(a0 + a1 + a2); /* < 2^62 */
}

/* Sums of products are kept exactly in 128 bits and reduced once per
 * output cell: products are < 2^122, so 60 of them fit before a fold. */
#define KN(name) kmp_##name
#define KT uint64_t
#define KACC unsigned __int128
#define K_ZERO_ACC ((unsigned __int128)0)
#define K_MAC(acc, a, b) ((acc) + (unsigned __int128)(a) * (b))
#define K_FOLD_EVERY 60
#define K_FOLD(acc) ((unsigned __int128)red128(acc))
#define K_OUT(acc) red128(acc)
#define K_AVG(acc, n, r) ((void)(n), mp_mul(red128(acc), r)) /* ops_eval counts padding */
#define K_CELL(op, a) ops_cell_table[op].cell(a)
#define K_CELL2(op, a, b) ops_cell_table[op].cell2(a, b)
#define K_ROW(op, x, y, n, stride, p) ops_cell_table[op].row(x, y, n, stride, p)
#define K_MAX(a, b) mp_max(a, b)
#define K_RELU(a) mp_relu(a)
#define K_ZERO ((uint64_t)0)
#define K_ONE ((uint64_t)1)
#define K_RECIP(n) mp_inv((uint64_t)(n))
#include "kern.h"

ops_status ops_eval(ops_op op, const int32_t *param, const ten *const *in, ten *out) {
    ten_shape s[OPS_MAX_ARITY];
    const uint64_t *data[OPS_MAX_ARITY] = {0};
    if (op >= OP_COUNT) return OPS_EPARAM; /* excluded by the precondition */
    for (int k = 0; k < ops_table[op].arity; k++) s[k] = in[k]->shape, data[k] = in[k]->data;
    kmp_ops(op, param, s, &out->shape, data, out->data);
    return OPS_OK;
}
