/* modp.h - element arithmetic of the fingerprint semantics: integers
 * modulo the Mersenne prime p = 2^61 - 1.
 *
 * One header for the CPU and CUDA code (MP_FN expands to
 * __host__ __device__ under nvcc), so both backends compute the same
 * values bit for bit. Exact arithmetic is the point: floats round, and two
 * equal graphs would then look different.
 *
 * Values are canonical: always in [0, p). The "sign" used by relu and max
 * pool reads v <= (p-1)/2 as non-negative, anything above as negative; any
 * fixed order works as long as the axioms stay true (they do: relu and max
 * are elementwise / per-window and commute with concat, transpose, split).
 */
#ifndef MODP_H
#define MODP_H

#include <stdint.h>

#if defined(__CUDACC__)
#define MP_FN static inline __host__ __device__
#else
#define MP_FN static inline
#endif

#define MP_P ((uint64_t)0x1FFFFFFFFFFFFFFFull) /* 2^61 - 1 */
#define MP_HALF (MP_P >> 1)                    /* (p-1)/2 */

/* Reduce any 64-bit value below 2^62 into [0, p). */
MP_FN uint64_t mp_reduce(uint64_t v) {
    v = (v & MP_P) + (v >> 61);
    return v >= MP_P ? v - MP_P : v;
}

MP_FN uint64_t mp_add(uint64_t a, uint64_t b) {
    uint64_t s = a + b; /* < 2^62, no overflow */
    return s >= MP_P ? s - MP_P : s;
}

MP_FN uint64_t mp_sub(uint64_t a, uint64_t b) {
    return a >= b ? a - b : a + MP_P - b;
}

MP_FN uint64_t mp_neg(uint64_t a) { return a ? MP_P - a : 0; }

MP_FN uint64_t mp_mul(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
    uint64_t lo = a * b, hi = __umul64hi(a, b);
#else
    unsigned __int128 t = (unsigned __int128)a * b;
    uint64_t lo = (uint64_t)t, hi = (uint64_t)(t >> 64);
#endif
    /* a*b = hi*2^64 + lo = (hi*8 + lo>>61)*2^61 + (lo & p) */
    uint64_t r = (lo & MP_P) + ((lo >> 61) | (hi << 3));
    return mp_reduce(r);
}

/* a^e mod p by squaring. */
MP_FN uint64_t mp_pow(uint64_t a, uint64_t e) {
    uint64_t r = 1;
    while (e) {
        if (e & 1) r = mp_mul(r, a);
        a = mp_mul(a, a);
        e >>= 1;
    }
    return r;
}

/* Multiplicative inverse (Fermat); @pre a != 0. */
MP_FN uint64_t mp_inv(uint64_t a) { return mp_pow(a, MP_P - 2); }

/* The field element of a small signed integer. */
MP_FN uint64_t mp_from_int(int64_t v) {
    return v >= 0 ? mp_reduce((uint64_t)v) : mp_neg(mp_reduce((uint64_t)-v));
}

MP_FN int mp_is_nonneg(uint64_t a) { return a <= MP_HALF; }

MP_FN uint64_t mp_relu(uint64_t a) { return mp_is_nonneg(a) ? a : 0; }

/* Max under the signed reading: non-negatives above negatives. */
MP_FN uint64_t mp_max(uint64_t a, uint64_t b) {
    int an = mp_is_nonneg(a), bn = mp_is_nonneg(b);
    if (an != bn) return an ? a : b;
    return a > b ? a : b; /* same sign: order as residues agrees */
}

#endif
