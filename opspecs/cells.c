/* cells.c - what each element-wise operator computes on one cell: over
 * residues modulo 2^61-1 (the exact semantics synth fingerprints and the
 * axiom checks evaluate) and over float32 (the engine's evaluator).
 *
 * Non-polynomial functions (sigmoid, tanh, erf, hardsigmoid, hardswish) and
 * nanzero (residues have no NaN, yet nanzero is no identity on floats) have no exact residue
 * counterpart. Their residue semantics is a fixed seeded hash of the cell:
 * a model of the axioms claimed for them (they act cell by cell, so they
 * commute with concat, split and transpose) that satisfies nothing else,
 * so no rule can depend on a property they do not have. Each function has
 * its own seed: sigmoid and tanh must not look equal.
 */
#include <math.h>

#include "modp.h"
#include "ops.h"

/* A fixed pseudo-random function of the cell (splitmix64's finaliser),
 * mapped into [0, p). */
static uint64_t seeded(uint64_t x, uint64_t seed) {
    uint64_t z = x + seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return mp_reduce(z >> 3);
}

static uint64_t r_add(uint64_t a, uint64_t b) { return mp_add(a, b); }
static uint64_t r_mul(uint64_t a, uint64_t b) { return mp_mul(a, b); }
static uint64_t r_sub(uint64_t a, uint64_t b) { return mp_sub(a, b); }
/* division is exact on residues (p is prime); by 0 it gives 0 */
static uint64_t r_div(uint64_t a, uint64_t b) { return mp_mul(a, mp_inv(b)); }
static uint64_t r_relu(uint64_t a) { return mp_relu(a); }
static uint64_t r_sigmoid(uint64_t a) { return seeded(a, 0x5167u); }
static uint64_t r_tanh(uint64_t a) { return seeded(a, 0x7a4bu); }
static uint64_t r_erf(uint64_t a) { return seeded(a, 0xe4fu); }
static uint64_t r_hsigmoid(uint64_t a) { return seeded(a, 0x45c1u); }
static uint64_t r_hswish(uint64_t a) { return seeded(a, 0x4557u); }
static uint64_t r_nanzero(uint64_t a) { return seeded(a, 0x9a70u); }
/* relu6 is piecewise linear, so it has an exact residue form: relu's
 * "non-negative" half, capped at 6; relu6(relu(x)) = relu6(x) holds. */
static uint64_t r_relu6(uint64_t a) {
    uint64_t r = mp_relu(a);
    return r > 6 ? 6 : r;
}

/* A row operator on residues: each cell hashed with the sum of its row's
 * hashed cells, so a cell depends on its whole row and on nothing else
 * (the row is the slice along the axis: the operator commutes with concat
 * and split on the other axes, and nothing more is claimed). seed, seed+1
 * and seed+2 key the three hashes; each operator has its own. */
static void seeded_row(const uint64_t *x, uint64_t *y, int64_t n, int64_t stride, uint64_t seed) {
    uint64_t row = 0;
    for (int64_t i = 0; i < n; i++) row = mp_add(row, seeded(x[i * stride], seed));
    uint64_t key = seeded(row, seed + 1);
    for (int64_t i = 0; i < n; i++) y[i * stride] = seeded(mp_add(x[i * stride], key), seed + 2);
}

static void r_softmax(const uint64_t *x, uint64_t *y, int64_t n, int64_t stride, const int32_t *p) {
    (void)p;
    seeded_row(x, y, n, stride, 0x50f7u);
}

/* eps is not read: no axiom names a value of it, and prove takes it as an
 * unknown, so the residues need not tell two values apart. */
static void r_layernorm(const uint64_t *x, uint64_t *y, int64_t n, int64_t stride, const int32_t *p) {
    (void)p;
    seeded_row(x, y, n, stride, 0x1a70u);
}

static float f_add(float a, float b) { return a + b; }
static float f_mul(float a, float b) { return a * b; }
static float f_sub(float a, float b) { return a - b; }
static float f_div(float a, float b) { return a / b; }
static float f_relu(float a) { return a > 0 ? a : 0.0f; }
static float f_sigmoid(float a) { return 1.0f / (1.0f + expf(-a)); }
static float f_tanh(float a) { return tanhf(a); }
static float f_erf(float a) { return erff(a); }
static float clamp0(float a, float hi) { return a > 0 ? (a < hi ? a : hi) : 0.0f; }
static float f_relu6(float a) { return clamp0(a, 6.0f); }
/* torch's hardsigmoid: clamp(x / 6 + 1/2, 0, 1), as ONNX HardSigmoid with
 * alpha 1/6 and beta 1/2 computes it */
static float f_hsigmoid(float a) { return clamp0(a * (1.0f / 6.0f) + 0.5f, 1.0f); }
static float f_hswish(float a) { return a * f_hsigmoid(a); }
static float f_nanzero(float a) { return isnan(a) ? 0.0f : a; }
/* softmax along a row, shifted by its maximum so no exp overflows */
static void f_softmax(const float *x, float *y, int64_t n, int64_t stride, const int32_t *p) {
    (void)p;
    float top = x[0], sum = 0;
    for (int64_t i = 1; i < n; i++) top = x[i * stride] > top ? x[i * stride] : top;
    for (int64_t i = 0; i < n; i++) sum += y[i * stride] = expf(x[i * stride] - top);
    for (int64_t i = 0; i < n; i++) y[i * stride] /= sum;
}

/* layer normalisation of a row: (x - mean) / sqrt(variance + eps), the
 * population variance, accumulated in double (p[1]: eps's bits) */
static void f_layernorm(const float *x, float *y, int64_t n, int64_t stride, const int32_t *p) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) sum += x[i * stride];
    double mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) sq += (x[i * stride] - mean) * (x[i * stride] - mean);
    double inv = 1.0 / sqrt(sq / (double)n + ops_eps_value(p[1]));
    for (int64_t i = 0; i < n; i++) y[i * stride] = (float)((x[i * stride] - mean) * inv);
}

#define MAP(r, f) {.cell = r, .fcell = f}
#define ZIP(r, f) {.cell2 = r, .fcell2 = f}
#define ROW(r, f) {.row = r, .frow = f}

const ops_cells ops_cell_table[OP_COUNT] = { /* ORDER OP */
    [OP_EWADD] = ZIP(r_add, f_add),
    [OP_EWMUL] = ZIP(r_mul, f_mul),
    [OP_SMUL] = ZIP(r_mul, f_mul),
    [OP_SADD] = ZIP(r_add, f_add),
    [OP_SDIV] = ZIP(r_div, f_div),
    [OP_RELU] = MAP(r_relu, f_relu),
    [OP_SIGMOID] = MAP(r_sigmoid, f_sigmoid),
    [OP_TANH] = MAP(r_tanh, f_tanh),
    [OP_ERF] = MAP(r_erf, f_erf),
    [OP_RELU6] = MAP(r_relu6, f_relu6),
    [OP_HSIGMOID] = MAP(r_hsigmoid, f_hsigmoid),
    [OP_HSWISH] = MAP(r_hswish, f_hswish),
    [OP_NANZERO] = MAP(r_nanzero, f_nanzero),
    [OP_SOFTMAX] = ROW(r_softmax, f_softmax),
    [OP_LAYERNORM] = ROW(r_layernorm, f_layernorm),
    [OP_BIAS] = ZIP(r_add, f_add),
    [OP_SCALE] = ZIP(r_mul, f_mul),
    [OP_EWSUB] = ZIP(r_sub, f_sub),
};
