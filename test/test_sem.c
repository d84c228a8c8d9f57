/* test_sem.c - tests of the operator shape rules (shape.c) and the exact
 * reference semantics (sem.c): hand-checked cases, differential tests
 * against a naive int64 reference, shape/parameter errors, and algebraic
 * spot checks of the conventions the axioms depend on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modp.h"
#include "ops.h"
#include "tensor.h"

#define S0 {0, {0}}
#define S1(a) {1, {a}}
#define S2(a, b) {2, {a, b}}
#define S3(a, b, c) {3, {a, b, c}}
#define S4(a, b, c, d) {4, {a, b, c, d}}
#define K(h, w) OPS_KERNEL(h, w)
#define SAME OPS_PAD_SAME
#define VALID OPS_PAD_VALID
#define NONE OPS_ACT_NONE
#define RELU OPS_ACT_RELU
#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ helpers */

static ten_shape shape4(int32_t a, int32_t b, int32_t c, int32_t d) {
    ten_shape s = {4, {a, b, c, d}};
    return s;
}

static ten tnew(ten_shape s) {
    ten t;
    assert_int_equal(ten_alloc(&t, &s), 0);
    return t;
}

/* A tensor from small signed integers (row-major). */
static ten tfrom(ten_shape s, const int64_t *v) {
    ten t = tnew(s);
    for (int64_t i = 0; i < ten_numel(&s); i++) t.data[i] = mp_from_int(v[i]);
    return t;
}

/* Uniform residues: the inputs synth uses. */
static ten trand(ten_shape s, uint64_t *seed) {
    ten t = tnew(s);
    ten_fill_random(&t, seed);
    return t;
}

/* Integers 0..max-1, so integer references cannot wrap modulo p. */
static ten tsmall(ten_shape s, uint64_t *seed, uint64_t max) {
    ten t = tnew(s);
    for (int64_t i = 0; i < ten_numel(&s); i++) t.data[i] = ten_rand_next(seed) % max;
    return t;
}

/* op(a[, b]) with shape inference and evaluation both required to succeed. */
static ten apply(ops_op op, const int32_t *p, const ten *a, const ten *b) {
    ten_shape in[2] = {a->shape, b ? b->shape : a->shape}, out;
    char err[OPS_ERRLEN] = "";
    ops_status rc = ops_infer_shape(op, p, in, &out, err);
    if (rc != OPS_OK) fail_msg("%s: unexpected shape error: %s", ops_table[op].name, err);
    ten t = tnew(out);
    const ten *args[2] = {a, b};
    assert_int_equal(ops_eval(op, p, args, &t), OPS_OK);
    return t;
}

static void assert_ten_equal(const char *what, const ten *a, const ten *b) {
    char sa[64], sb[64];
    if (!ten_shape_eq(&a->shape, &b->shape))
        fail_msg("%s: shapes %s vs %s", what, ten_shape_str(&a->shape, sa),
                 ten_shape_str(&b->shape, sb));
    for (int64_t i = 0; i < ten_numel(&a->shape); i++)
        if (a->data[i] != b->data[i])
            fail_msg("%s: cell %lld differs: %llu vs %llu", what, (long long)i,
                     (unsigned long long)a->data[i], (unsigned long long)b->data[i]);
}

/* ------------------------------------------------------------ (a) hand cases */

/* One hand-checked evaluation: want[i] / den is the expected cell. */
typedef struct {
    const char *id;
    ops_op op;
    int32_t p[OPS_MAX_PARAMS];
    ten_shape in[2];
    int64_t x[40], y[40];
    ten_shape out;
    int64_t want[40];
    int64_t den; /* 0 means 1 */
} sem_case;

#define X123 {1, 2, 3, 4, 5, 6, 7, 8, 9}
#define X1_16 {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
#define X1_25 {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, \
               19, 20, 21, 22, 23, 24, 25}
#define ONES9 {1, 1, 1, 1, 1, 1, 1, 1, 1}
#define HALF ((int64_t)MP_HALF)

static const sem_case sem_cases[] = {
    {"mm.2x2", OP_MATMUL, {0}, {S2(2, 2), S2(2, 2)}, {1, 2, 3, 4}, {5, 6, 7, 8},
     S2(2, 2), {19, 22, 43, 50}, 0},
    {"mm.2x3x1.neg", OP_MATMUL, {0}, {S2(2, 3), S2(3, 1)}, {1, 2, 3, 4, 5, 6},
     {1, -1, 2}, S2(2, 1), {5, 11}, 0},
    /* asymmetric kernel: catches flipped (true) convolution and offsets */
    {"conv.3x3.same", OP_CONV2D, {1, SAME, NONE, 1}, {S4(1, 1, 3, 3), S4(1, 1, 3, 3)},
     X123, {1, 0, 0, 0, 0, 0, 0, 0, 2}, S4(1, 1, 3, 3), {10, 12, 0, 16, 19, 2, 0, 4, 5}, 0},
    {"conv.3x3.valid", OP_CONV2D, {1, VALID, NONE, 1}, {S4(1, 1, 3, 3), S4(1, 1, 3, 3)},
     X123, {1, 0, 0, 0, 0, 0, 0, 0, 2}, S4(1, 1, 1, 1), {19}, 0},
    {"conv.4x4.valid.ones", OP_CONV2D, {1, VALID, NONE, 1},
     {S4(1, 1, 4, 4), S4(1, 1, 3, 3)}, X1_16, ONES9, S4(1, 1, 2, 2), {54, 63, 90, 99}, 0},
    {"conv.4x4.same.s2", OP_CONV2D, {2, SAME, NONE, 1}, {S4(1, 1, 4, 4), S4(1, 1, 3, 3)},
     X1_16, ONES9, S4(1, 1, 2, 2), {14, 30, 57, 99}, 0},
    {"conv.5x5.valid.s2.1x1", OP_CONV2D, {2, VALID, NONE, 1},
     {S4(1, 1, 5, 5), S4(1, 1, 1, 1)}, X1_25, {3}, S4(1, 1, 3, 3),
     {3, 9, 15, 33, 39, 45, 63, 69, 75}, 0},
    {"conv.g1.mix", OP_CONV2D, {1, SAME, NONE, 1}, {S4(1, 2, 2, 2), S4(2, 2, 1, 1)},
     {1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 1, -1}, S4(1, 2, 2, 2),
     {6, 8, 10, 12, -4, -4, -4, -4}, 0},
    {"conv.g2.depthwise", OP_CONV2D, {1, SAME, NONE, 2}, {S4(1, 2, 2, 2), S4(2, 1, 1, 1)},
     {1, 2, 3, 4, 5, 6, 7, 8}, {2, 3}, S4(1, 2, 2, 2), {2, 4, 6, 8, 15, 18, 21, 24}, 0},
    {"conv.g2.offsets", OP_CONV2D, {1, VALID, NONE, 2}, {S4(1, 4, 1, 1), S4(2, 2, 1, 1)},
     {1, 2, 3, 4}, {1, 10, 100, 1000}, S4(1, 2, 1, 1), {21, 4300}, 0},
    {"conv.relu", OP_CONV2D, {1, SAME, RELU, 1}, {S4(1, 1, 1, 2), S4(1, 1, 1, 1)},
     {3, -5}, {1}, S4(1, 1, 1, 2), {3, 0}, 0},
    {"ewadd", OP_EWADD, {0}, {S2(1, 2), S2(1, 2)}, {1, 2}, {3, -5}, S2(1, 2), {4, -3}, 0},
    {"ewadd.rank0", OP_EWADD, {0}, {S0, S0}, {2}, {3}, S0, {5}, 0},
    {"ewmul", OP_EWMUL, {0}, {S1(2), S1(2)}, {2, -3}, {4, 5}, S1(2), {8, -15}, 0},
    {"smul", OP_SMUL, {0}, {S3(1, 1, 3), S0}, {1, 2, 3}, {-2}, S3(1, 1, 3),
     {-2, -4, -6}, 0},
    {"heads.2", OP_HEADS, {2}, {S3(1, 2, 4)}, {1, 2, 3, 4, 5, 6, 7, -8}, {0}, S4(1, 2, 2, 2),
     {1, 2, 3, 4, 5, 6, 7, -8}, 0},
    {"unheads.3", OP_UNHEADS, {3}, {S4(1, 1, 3, 2)}, {1, -2, 3, 4, 5, 6}, {0}, S3(1, 1, 6),
     {1, -2, 3, 4, 5, 6}, 0},
    {"kmul.kernels", OP_KMUL, {0}, {S4(2, 2, 1, 1), S4(2, 3, 1, 1)}, {1, 2, 3, 4},
     {1, 0, -1, 2, 1, 0}, S4(2, 3, 1, 1), {5, 2, -1, 11, 4, -3}, 0},
    {"kmul.3x1", OP_KMUL, {0}, {S4(2, 2, 1, 1), S4(2, 1, 3, 1)}, {1, 2, 3, 4},
     {1, 0, -1, 2, 1, 0}, S4(2, 1, 3, 1), {5, 2, -1, 11, 4, -3}, 0},
    {"kmul.1x2-1x1", OP_KMUL, {0}, {S4(2, 2, 1, 2), S4(2, 1, 1, 1)}, {1, 2, 3, 4, 5, 6, 7, 8},
     {2, 1}, S4(2, 1, 1, 2), {5, 8, 17, 20}, 0},
    {"kmul.vector", OP_KMUL, {0}, {S4(2, 2, 1, 1), S1(2)}, {1, 2, 3, 4}, {1, -1}, S1(2), {-1, -1}, 0},
    {"sadd", OP_SADD, {0}, {S2(1, 3), S0}, {1, 2, 3}, {-2}, S2(1, 3), {-1, 0, 1}, 0},
    {"sdiv", OP_SDIV, {0}, {S2(1, 3), S0}, {6, -4, 0}, {2}, S2(1, 3), {3, -2, 0}, 0},
    {"sdiv.by0", OP_SDIV, {0}, {S1(2), S0}, {6, -4}, {0}, S1(2), {0, 0}, 0},
    {"relu.sign-boundary", OP_RELU, {0}, {S1(5)}, {3, -2, 0, HALF, -HALF}, {0}, S1(5),
     {3, 0, 0, HALF, 0}, 0},
    {"bias.axis1", OP_BIAS, {1}, {S2(2, 3), S1(3)}, {1, 2, 3, 4, 5, 6}, {10, 20, -30}, S2(2, 3),
     {11, 22, -27, 14, 25, -24}, 0},
    {"bias.axis0", OP_BIAS, {0}, {S2(2, 3), S1(2)}, {1, 2, 3, 4, 5, 6}, {10, -20}, S2(2, 3),
     {11, 12, 13, -16, -15, -14}, 0},
    {"scale.axis1.nchw", OP_SCALE, {1}, {S4(1, 2, 1, 2), S1(2)}, {1, 2, 3, 4}, {-1, 3}, S4(1, 2, 1, 2),
     {-1, -2, 9, 12}, 0},
    {"avgpool.same.div9", OP_AVGPOOL, {K(3, 3), 1, SAME}, {S4(1, 1, 3, 3)}, X123, {0},
     S4(1, 1, 3, 3), {12, 21, 16, 27, 45, 33, 24, 39, 28}, 9},
    {"avgpool.valid", OP_AVGPOOL, {K(3, 3), 1, VALID}, {S4(1, 1, 3, 3)}, X123, {0},
     S4(1, 1, 1, 1), {5}, 0},
    {"avgpool.1x3.same", OP_AVGPOOL, {K(1, 3), 1, SAME}, {S4(1, 1, 1, 3)}, {1, 2, 3}, {0},
     S4(1, 1, 1, 3), {3, 6, 5}, 3},
    {"avgpool.same.s2", OP_AVGPOOL, {K(3, 3), 2, SAME}, {S4(1, 1, 4, 4)}, X1_16, {0},
     S4(1, 1, 2, 2), {14, 30, 57, 99}, 9},
    /* all negative: padding must not count as 0 */
    {"maxpool.neg", OP_MAXPOOL, {K(3, 3), 1, SAME}, {S4(1, 1, 3, 3)},
     {-1, -2, -3, -4, -5, -6, -7, -8, -9}, {0}, S4(1, 1, 3, 3),
     {-1, -1, -2, -1, -1, -2, -4, -4, -5}, 0},
    {"maxpool.mixed.s2", OP_MAXPOOL, {K(3, 3), 2, SAME}, {S4(1, 1, 4, 4)},
     {-3, 5, -7, 2, 0, -1, -2, -9, 4, -8, 6, 1, -6, 3, -4, -5}, {0}, S4(1, 1, 2, 2),
     {5, 5, 4, 6}, 0},
    {"maxpool.half", OP_MAXPOOL, {K(1, 3), 1, VALID}, {S4(1, 1, 1, 3)},
     {-HALF, HALF, -1}, {0}, S4(1, 1, 1, 1), {HALF}, 0},
    {"concat.ax1", OP_CONCAT, {1}, {S2(2, 1), S2(2, 2)}, {1, 2}, {3, 4, 5, 6}, S2(2, 3),
     {1, 3, 4, 2, 5, 6}, 0},
    {"concat.ax0", OP_CONCAT, {0}, {S1(2), S1(2)}, {1, 2}, {3, 4}, S1(4), {1, 2, 3, 4}, 0},
    {"concat.ax2.r3", OP_CONCAT, {2}, {S3(2, 1, 1), S3(2, 1, 2)}, {1, 2}, {3, 4, 5, 6},
     S3(2, 1, 3), {1, 3, 4, 2, 5, 6}, 0},
    {"split0.ax1", OP_SPLIT0, {1, 1}, {S2(2, 3)}, {1, 2, 3, 4, 5, 6}, {0}, S2(2, 1),
     {1, 4}, 0},
    {"split1.ax1", OP_SPLIT1, {1, 1}, {S2(2, 3)}, {1, 2, 3, 4, 5, 6}, {0}, S2(2, 2),
     {2, 3, 5, 6}, 0},
    {"split1.ax0", OP_SPLIT1, {0, 2}, {S2(3, 2)}, {1, 2, 3, 4, 5, 6}, {0}, S2(1, 2),
     {5, 6}, 0},
    {"transpose", OP_TRANSPOSE, {0}, {S2(2, 3)}, {1, 2, 3, 4, 5, 6}, {0}, S2(3, 2),
     {1, 4, 2, 5, 3, 6}, 0},
    {"enlarge.1x1-3x3", OP_ENLARGE, {K(3, 3)}, {S4(1, 1, 1, 1)}, {7}, {0},
     S4(1, 1, 3, 3), {0, 0, 0, 0, 7, 0, 0, 0, 0}, 0},
    {"enlarge.1x3-3x3", OP_ENLARGE, {K(3, 3)}, {S4(1, 1, 1, 3)}, {1, 2, 3}, {0},
     S4(1, 1, 3, 3), {0, 0, 0, 1, 2, 3, 0, 0, 0}, 0},
    {"enlarge.3x1-3x3", OP_ENLARGE, {K(3, 3)}, {S4(1, 1, 3, 1)}, {1, 2, 3}, {0},
     S4(1, 1, 3, 3), {0, 1, 0, 0, 2, 0, 0, 3, 0}, 0},
    {"imm", OP_IMM, {0}, {S2(3, 2)}, {9, 9, 9, 9, 9, 9}, {0}, S2(2, 2), {1, 0, 0, 1}, 0},
    {"iconv.3x3", OP_ICONV, {K(3, 3)}, {S4(1, 1, 4, 4)}, X1_16, {0}, S4(1, 1, 3, 3),
     {0, 0, 0, 0, 1, 0, 0, 0, 0}, 0},
    {"iconv.1x3.c2", OP_ICONV, {K(1, 3)}, {S4(1, 2, 1, 1)}, {5, 6}, {0},
     S4(2, 2, 1, 3), {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}, 0},
    {"dwiconv.1x3.c2", OP_DWICONV, {K(1, 3)}, {S4(1, 2, 1, 1)}, {5, 6}, {0},
     S4(2, 1, 1, 3), {0, 1, 0, 0, 1, 0}, 0},
    {"poolk.3x3", OP_POOLK, {K(3, 3)}, {S4(2, 1, 2, 2)}, {0}, {0}, S4(1, 1, 3, 3),
     ONES9, 9},
    {"poolk.1x1.c2", OP_POOLK, {K(1, 1)}, {S4(1, 2, 1, 1)}, {0}, {0}, S4(2, 2, 1, 1),
     {1, 0, 0, 1}, 0},
    {"ones", OP_ONES, {0}, {S2(2, 3)}, {0}, {0}, S2(2, 3), {1, 1, 1, 1, 1, 1}, 0},
};

static void test_sem_case(void **state) {
    const sem_case *c = *state;
    ten a = tfrom(c->in[0], c->x), b = tfrom(c->in[1], c->y);
    ten got = apply(c->op, c->p, &a, ops_table[c->op].arity == 2 ? &b : NULL);
    ten want = tnew(c->out);
    uint64_t inv = mp_inv((uint64_t)(c->den ? c->den : 1));
    for (int64_t i = 0; i < ten_numel(&c->out); i++)
        want.data[i] = mp_mul(mp_from_int(c->want[i]), inv);
    assert_ten_equal(c->id, &got, &want);
    ten_free(&a), ten_free(&b), ten_free(&got), ten_free(&want);
}

/* ------------------------------------------------------------ (b) differential */

/* Naive int64 conv, written independently of sem.c: copy x into an
 * explicitly zero-padded buffer, then run a padding-free strided loop. */
static int64_t *ref_pad(const ten *x, int32_t n, int32_t c, int32_t top, int32_t left,
                        int32_t ph, int32_t pw) {
    const int32_t *d = x->shape.dim;
    int64_t *buf = calloc((size_t)ph * (size_t)pw, sizeof *buf);
    assert_non_null(buf);
    for (int32_t i = 0; i < d[2]; i++)
        for (int32_t j = 0; j < d[3]; j++)
            buf[(i + top) * pw + j + left] =
                (int64_t)x->data[((n * d[1] + c) * d[2] + i) * d[3] + j];
    return buf;
}

typedef struct {
    int32_t s, pad, g, kh, kw;
} win_cfg;

/* Padded-buffer geometry of the centred SAME convention (or none). */
static void ref_geom(const win_cfg *w, int32_t h, int32_t wd, int32_t *top,
                     int32_t *left, int32_t *oh, int32_t *ow) {
    *top = w->pad == SAME ? (w->kh - 1) / 2 : 0;
    *left = w->pad == SAME ? (w->kw - 1) / 2 : 0;
    *oh = w->pad == SAME ? (h + w->s - 1) / w->s : (h - w->kh) / w->s + 1;
    *ow = w->pad == SAME ? (wd + w->s - 1) / w->s : (wd - w->kw) / w->s + 1;
}

static int64_t ref_conv_cell(const ten *x, const ten *w, const win_cfg *cfg, int32_t n,
                             int32_t o, int32_t i, int32_t j) {
    const int32_t *xd = x->shape.dim, *wd = w->shape.dim;
    int32_t top, left, oh, ow, ph = xd[2] + cfg->kh, pw = xd[3] + cfg->kw;
    ref_geom(cfg, xd[2], xd[3], &top, &left, &oh, &ow);
    int32_t per = xd[1] / cfg->g, grp = o / (wd[0] / cfg->g);
    int64_t sum = 0;
    for (int32_t c = 0; c < per; c++) {
        int64_t *buf = ref_pad(x, n, grp * per + c, top, left, ph, pw);
        for (int32_t r = 0; r < cfg->kh; r++)
            for (int32_t q = 0; q < cfg->kw; q++)
                sum += buf[(i * cfg->s + r) * pw + j * cfg->s + q] *
                       (int64_t)w->data[((o * per + c) * cfg->kh + r) * cfg->kw + q];
        free(buf);
    }
    return sum;
}

static const win_cfg conv_cfgs[] = {
    {1, SAME, 1, 3, 3}, {2, SAME, 1, 3, 3}, {1, VALID, 1, 3, 3}, {2, VALID, 1, 3, 3},
    {1, SAME, 2, 3, 3}, {2, VALID, 2, 1, 1}, {1, SAME, 1, 1, 3}, {2, SAME, 2, 3, 1},
    {2, SAME, 1, 1, 1}, {1, VALID, 2, 1, 3},
};

static void test_diff_conv(void **state) {
    (void)state;
    uint64_t seed = 11;
    for (size_t k = 0; k < NCASES(conv_cfgs); k++)
        for (int32_t h = 3; h <= 6; h++) {
            const win_cfg *c = &conv_cfgs[k];
            int32_t cin = 2 * c->g, cout = 2 * c->g, hw = h + (int32_t)k % 2;
            ten x = tsmall(shape4(2, cin, h, hw), &seed, 10);
            ten w = tsmall(shape4(cout, cin / c->g, c->kh, c->kw), &seed, 10);
            int32_t p[4] = {c->s, c->pad, (int32_t)k % 2 ? RELU : NONE, c->g};
            ten y = apply(OP_CONV2D, p, &x, &w);
            int32_t top, left, oh, ow;
            ref_geom(c, h, hw, &top, &left, &oh, &ow);
            assert_true(y.shape.dim[2] == oh && y.shape.dim[3] == ow);
            int64_t cell = 0;
            for (int32_t n = 0; n < 2; n++)
                for (int32_t o = 0; o < cout; o++)
                    for (int32_t i = 0; i < oh; i++)
                        for (int32_t j = 0; j < ow; j++, cell++)
                            if (y.data[cell] != (uint64_t)ref_conv_cell(&x, &w, c, n, o, i, j))
                                fail_msg("conv cfg %zu h %d: cell %lld", k, h, (long long)cell);
            ten_free(&x), ten_free(&w), ten_free(&y);
        }
}

/* Every operator has every column of the operator table: a new
 * operator with a forgotten entry fails here, not silently in synth. */
static void test_table_complete(void **state) {
    (void)state;
    for (int op = 0; op < OP_COUNT; op++) {
        const ops_info *o = &ops_table[op];
        if (!o->name || !o->onnx || o->arity < 1 || o->arity > OPS_MAX_ARITY ||
            o->n_params < 0 || o->n_params > OPS_MAX_PARAMS)
            fail_msg("operator %d: name, onnx, arity or parameter count missing", op);
        for (int k = 0; k < o->n_params; k++)
            if (!o->pname[k] || o->pkind[k] >= PK_COUNT)
                fail_msg("%s: parameter %d has no name or kind", o->name, k);
        const ops_kinds *t = &o->kinds;
        if (!t->in0 || (o->arity > 1 && !t->in1) ||
            (t->out != OPS_OUT_IN0 && t->out != OPS_OUT_IN1 && (t->out < 0 || t->out >= OPS_KIND_COUNT)) ||
            (t->out == OPS_OUT_IN1 && o->arity < 2))
            fail_msg("%s: kinds column incomplete", o->name);
        if ((o->ref != OPS_REF_NONE) != ((o->flags & OPF_CONST) != 0))
            fail_msg("%s: a constant needs a ref column, and only a constant", o->name);
        if (o->form >= OPS_FORM_COUNT)
            fail_msg("%s: no form", o->name);
        /* the element-wise forms have their cell functions, the others none */
        const ops_cells *cl = &ops_cell_table[op];
        int map = o->form == OPS_FORM_MAP, zip = o->form == OPS_FORM_ZIP ||
                  o->form == OPS_FORM_SCALE || o->form == OPS_FORM_CHANNEL;
        int row = o->form == OPS_FORM_ROW;
        if (!cl->cell != !map || !cl->fcell != !map || !cl->cell2 != !zip || !cl->fcell2 != !zip ||
            !cl->row != !row || !cl->frow != !row)
            fail_msg("%s: cells.c has the wrong cell functions for its form", o->name);
        if ((map || zip || row) != (o->flops > 0))
            fail_msg("%s: an element-wise form needs a flops column, and only one", o->name);
        if ((o->form == OPS_FORM_MAP) != (o->arity == 1 && (o->flags & OPF_ELEMENTWISE)))
            fail_msg("%s: a map is unary and element-wise", o->name);
        assert_int_equal(ops_by_name(o->name), op);
    }
}

/* relu6 is exact on residues and floats alike: negatives (the upper half
 * of the residues) give 0, the rest are capped at 6. */
static void test_relu6_cells(void **state) {
    (void)state;
    const ops_cells *c = &ops_cell_table[OP_RELU6];
    static const uint64_t in[] = {0, 5, 6, 7, 1000, MP_HALF, MP_P - 1, MP_P - 7};
    static const uint64_t want[] = {0, 5, 6, 6, 6, 6, 0, 0};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        assert_int_equal(c->cell(in[i]), want[i]);
    assert_true(c->fcell(-1.5f) == 0.0f && c->fcell(2.5f) == 2.5f && c->fcell(7.5f) == 6.0f);
}

/* Residues next to p make the kernels' exact 128-bit sums largest: more
 * than the 60 products a sum holds before it is folded (a 200-long dot
 * product, a conv cell of 8 channels x 3x3 taps). Expected values by
 * plain field arithmetic. */
static void test_sums_near_p(void **state) {
    (void)state;
    ten a, b;
    ten_shape sa = S2(3, 200), sb = S2(200, 3);
    assert_int_equal(ten_alloc(&a, &sa), 0);
    assert_int_equal(ten_alloc(&b, &sb), 0);
    for (int i = 0; i < 600; i++) a.data[i] = b.data[i] = MP_P - 1 - (uint64_t)(i % 3);
    ten y = apply(OP_MATMUL, NULL, &a, &b);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            uint64_t want = 0;
            for (int t = 0; t < 200; t++) want = mp_add(want, mp_mul(a.data[i * 200 + t], b.data[t * 3 + j]));
            assert_true(y.data[i * 3 + j] == want);
        }
    ten_free(&a), ten_free(&b), ten_free(&y);
    ten x, w;
    ten_shape sx = {4, {1, 8, 3, 3}}, sw = {4, {2, 8, 3, 3}};
    int32_t p[OPS_MAX_PARAMS] = {1, OPS_PAD_VALID, OPS_ACT_NONE, 1};
    assert_int_equal(ten_alloc(&x, &sx), 0);
    assert_int_equal(ten_alloc(&w, &sw), 0);
    for (int i = 0; i < 72; i++) x.data[i] = MP_P - 1 - (uint64_t)(i % 5);
    for (int i = 0; i < 144; i++) w.data[i] = MP_P - 2 - (uint64_t)(i % 7);
    y = apply(OP_CONV2D, p, &x, &w);
    for (int o = 0; o < 2; o++) {
        uint64_t want = 0;
        for (int t = 0; t < 72; t++) want = mp_add(want, mp_mul(x.data[t], w.data[o * 72 + t]));
        assert_true(y.data[o] == want);
    }
    ten_free(&x), ten_free(&w), ten_free(&y);
}

static void test_diff_matmul(void **state) {
    (void)state;
    uint64_t seed = 12;
    for (int32_t m = 1; m <= 4; m++)
        for (int32_t k = 1; k <= 5; k++)
            for (int32_t n = 1; n <= 3; n++) {
                ten_shape sa = S2(m, k), sb = S2(k, n);
                ten a = tsmall(sa, &seed, 1000), b = tsmall(sb, &seed, 1000);
                ten y = apply(OP_MATMUL, NULL, &a, &b);
                for (int32_t i = 0; i < m; i++)
                    for (int32_t j = 0; j < n; j++) {
                        int64_t s = 0;
                        for (int32_t t = 0; t < k; t++)
                            s += (int64_t)a.data[i * k + t] * (int64_t)b.data[t * n + j];
                        if (y.data[i * n + j] != (uint64_t)s)
                            fail_msg("matmul %dx%dx%d cell %d,%d", m, k, n, i, j);
                    }
                ten_free(&a), ten_free(&b), ten_free(&y);
            }
}

/* avgpool * (kh*kw) must be the plain integer window sum (padding 0). */
static void test_diff_avgpool(void **state) {
    (void)state;
    static const win_cfg cfgs[] = {{1, SAME, 1, 3, 3}, {2, SAME, 1, 3, 3},
                                   {1, VALID, 1, 3, 3}, {2, VALID, 1, 3, 3},
                                   {1, SAME, 1, 1, 3}, {2, SAME, 1, 3, 1}};
    uint64_t seed = 13;
    for (size_t k = 0; k < NCASES(cfgs); k++)
        for (int32_t h = 3; h <= 7; h++) {
            const win_cfg *c = &cfgs[k];
            ten x = tsmall(shape4(2, 3, h, h + 1), &seed, 100);
            int32_t p[3] = {K(c->kh, c->kw), c->s, c->pad}, top, left, oh, ow;
            ten y = apply(OP_AVGPOOL, p, &x, NULL);
            ref_geom(c, h, h + 1, &top, &left, &oh, &ow);
            int32_t ph = h + c->kh, pw = h + 1 + c->kw;
            int64_t cell = 0;
            for (int32_t n = 0; n < 2; n++)
                for (int32_t ch = 0; ch < 3; ch++) {
                    int64_t *buf = ref_pad(&x, n, ch, top, left, ph, pw);
                    for (int32_t i = 0; i < oh; i++)
                        for (int32_t j = 0; j < ow; j++, cell++) {
                            int64_t s = 0;
                            for (int32_t r = 0; r < c->kh; r++)
                                for (int32_t q = 0; q < c->kw; q++)
                                    s += buf[(i * c->s + r) * pw + j * c->s + q];
                            uint64_t scaled = mp_mul(y.data[cell], (uint64_t)(c->kh * c->kw));
                            if (scaled != (uint64_t)s)
                                fail_msg("avgpool cfg %zu h %d cell %lld", k, h, (long long)cell);
                        }
                    free(buf);
                }
            ten_free(&x), ten_free(&y);
        }
}

/* ------------------------------------------------------------ (c) shapes */

/* One shape-inference case: a status and, when OPS_OK, the output shape. */
typedef struct {
    const char *id;
    ops_op op;
    int32_t p[OPS_MAX_PARAMS];
    ten_shape in[2];
    ops_status want;
    ten_shape out;
} shape_case;

#define BIG 65536
static const shape_case shape_cases[] = {
    {"ok.conv.same.s2", OP_CONV2D, {2, SAME, NONE, 1}, {S4(1, 3, 5, 5), S4(4, 3, 3, 3)},
     OPS_OK, S4(1, 4, 3, 3)},
    {"ok.conv.valid.s2", OP_CONV2D, {2, VALID, RELU, 1}, {S4(1, 3, 5, 6), S4(4, 3, 3, 3)},
     OPS_OK, S4(1, 4, 2, 2)},
    {"ok.conv.g2.1x3", OP_CONV2D, {1, SAME, NONE, 2}, {S4(2, 4, 5, 5), S4(6, 2, 1, 3)},
     OPS_OK, S4(2, 6, 5, 5)},
    {"ok.pool.valid.1x3", OP_MAXPOOL, {K(1, 3), 1, VALID}, {S4(1, 2, 3, 3)}, OPS_OK,
     S4(1, 2, 3, 1)},
    {"ok.concat.ax3", OP_CONCAT, {3}, {S4(1, 2, 3, 4), S4(1, 2, 3, 5)}, OPS_OK,
     S4(1, 2, 3, 9)},
    {"ok.split1.ax2", OP_SPLIT1, {2, 1}, {S3(2, 3, 4)}, OPS_OK, S3(2, 3, 3)},
    {"ok.enlarge.1x3-3x5", OP_ENLARGE, {K(3, 5)}, {S4(2, 3, 1, 3)}, OPS_OK, S4(2, 3, 3, 5)},
    {"ok.iconv", OP_ICONV, {K(3, 3)}, {S4(1, 5, 2, 2)}, OPS_OK, S4(5, 5, 3, 3)},
    {"ok.dwiconv", OP_DWICONV, {K(3, 3)}, {S4(1, 5, 2, 2)}, OPS_OK, S4(5, 1, 3, 3)},
    {"ok.poolk.2x2", OP_POOLK, {K(2, 2)}, {S4(1, 5, 2, 2)}, OPS_OK, S4(5, 5, 2, 2)},
    {"ok.imm", OP_IMM, {0}, {S2(7, 3)}, OPS_OK, S2(3, 3)},
    {"ok.smul.rank0", OP_SMUL, {0}, {S0, S0}, OPS_OK, S0},
    {"ok.relu.max", OP_RELU, {0}, {S2(BIG, BIG)}, OPS_OK, S2(BIG, BIG)},

    {"matmul.inner", OP_MATMUL, {0}, {S2(2, 3), S2(2, 3)}, OPS_ESHAPE, S0},
    {"matmul.rank3", OP_MATMUL, {0}, {S3(1, 2, 3), S2(3, 3)}, OPS_ESHAPE, S0},
    {"bmm.rank", OP_BMM, {0}, {S3(2, 3, 4), S3(2, 4, 3)}, OPS_ESHAPE, S0},
    {"bmm.batch", OP_BMM, {0}, {S4(1, 2, 3, 4), S4(1, 3, 4, 3)}, OPS_ESHAPE, S0},
    {"bmm.inner", OP_BMM, {0}, {S4(1, 2, 3, 4), S4(1, 2, 3, 4)}, OPS_ESHAPE, S0},
    {"linear.rank", OP_LINEAR, {0}, {S4(1, 2, 3, 4), S2(4, 3)}, OPS_ESHAPE, S0},
    {"linear.weight", OP_LINEAR, {0}, {S3(1, 2, 3), S3(1, 3, 3)}, OPS_ESHAPE, S0},
    {"linear.inner", OP_LINEAR, {0}, {S3(1, 2, 3), S2(4, 3)}, OPS_ESHAPE, S0},
    {"conv.rank3", OP_CONV2D, {1, SAME, NONE, 1}, {S3(1, 3, 5), S4(4, 3, 3, 3)},
     OPS_ESHAPE, S0},
    {"conv.cin", OP_CONV2D, {1, SAME, NONE, 1}, {S4(1, 4, 5, 5), S4(2, 3, 3, 3)},
     OPS_ESHAPE, S0},
    {"conv.cin.g2", OP_CONV2D, {1, SAME, NONE, 2}, {S4(1, 4, 5, 5), S4(2, 4, 3, 3)},
     OPS_ESHAPE, S0},
    {"conv.same.even", OP_CONV2D, {1, SAME, NONE, 1}, {S4(1, 1, 5, 5), S4(1, 1, 2, 2)},
     OPS_ESHAPE, S0},
    {"conv.valid.small", OP_CONV2D, {1, VALID, NONE, 1}, {S4(1, 1, 2, 5), S4(1, 1, 3, 3)},
     OPS_ESHAPE, S0},
    {"conv.stride0", OP_CONV2D, {0, SAME, NONE, 1}, {S4(1, 1, 5, 5), S4(1, 1, 3, 3)},
     OPS_EPARAM, S0},
    {"conv.pad2", OP_CONV2D, {1, 2, NONE, 1}, {S4(1, 1, 5, 5), S4(1, 1, 3, 3)},
     OPS_EPARAM, S0},
    {"conv.act5", OP_CONV2D, {1, SAME, 5, 1}, {S4(1, 1, 5, 5), S4(1, 1, 3, 3)},
     OPS_EPARAM, S0},
    {"conv.groups0", OP_CONV2D, {1, SAME, NONE, 0}, {S4(1, 1, 5, 5), S4(1, 1, 3, 3)},
     OPS_EPARAM, S0},
    {"conv.groups.c", OP_CONV2D, {1, SAME, NONE, 3}, {S4(1, 4, 5, 5), S4(3, 1, 3, 3)},
     OPS_EPARAM, S0},
    {"conv.groups.o", OP_CONV2D, {1, SAME, NONE, 2}, {S4(1, 4, 5, 5), S4(3, 2, 3, 3)},
     OPS_EPARAM, S0},
    {"ewadd.shape", OP_EWADD, {0}, {S2(2, 3), S2(3, 2)}, OPS_ESHAPE, S0},
    {"ewmul.rank", OP_EWMUL, {0}, {S1(2), S2(2, 1)}, OPS_ESHAPE, S0},
    {"smul.rank1", OP_SMUL, {0}, {S2(2, 2), S1(1)}, OPS_ESHAPE, S0},
    {"sadd.rank1", OP_SADD, {0}, {S2(2, 2), S1(1)}, OPS_ESHAPE, S0},
    {"sdiv.rank2", OP_SDIV, {0}, {S2(2, 2), S2(1, 1)}, OPS_ESHAPE, S0},
    {"relu.rank5", OP_RELU, {0}, {{5, {1, 1, 1, 1}}}, OPS_ESHAPE, S0},
    {"relu.dim0", OP_RELU, {0}, {S2(2, 0)}, OPS_ESHAPE, S0},
    {"relu.numel-overflow", OP_RELU, {0}, {S4(BIG, BIG, BIG, BIG)}, OPS_ESHAPE, S0},
    {"sigmoid.rank5", OP_SIGMOID, {0}, {{5, {1, 1, 1, 1}}}, OPS_ESHAPE, S0},
    {"tanh.dim0", OP_TANH, {0}, {S2(2, 0)}, OPS_ESHAPE, S0},
    {"erf.dim0", OP_ERF, {0}, {S1(0)}, OPS_ESHAPE, S0},
    {"relu6.dim0", OP_RELU6, {0}, {S3(1, 0, 2)}, OPS_ESHAPE, S0},
    {"hardsigmoid.rank5", OP_HSIGMOID, {0}, {{5, {1, 1, 1, 1}}}, OPS_ESHAPE, S0},
    {"hardswish.dim0", OP_HSWISH, {0}, {S1(0)}, OPS_ESHAPE, S0},
    {"nanzero.dim0", OP_NANZERO, {0}, {S1(0)}, OPS_ESHAPE, S0},
    {"softmax.axis", OP_SOFTMAX, {2}, {S2(3, 4)}, OPS_EPARAM, S0},
    {"layernorm.axis", OP_LAYERNORM, {2, 0x3727c5ac}, {S2(3, 4)}, OPS_EPARAM, S0},
    {"layernorm.eps", OP_LAYERNORM, {1, (int32_t)0xbf800000}, {S2(3, 4)}, OPS_EPARAM, S0},
    {"layernorm.dim0", OP_LAYERNORM, {1, 0x3727c5ac}, {S2(3, 0)}, OPS_ESHAPE, S0},
    {"softmax.dim0", OP_SOFTMAX, {0}, {S2(0, 4)}, OPS_ESHAPE, S0},
    {"bias.vector-dim", OP_BIAS, {1}, {S4(1, 3, 2, 2), S1(2)}, OPS_ESHAPE, S0},
    {"bias.vector-rank", OP_BIAS, {1}, {S4(1, 3, 2, 2), S2(3, 1)}, OPS_ESHAPE, S0},
    {"bias.axis-rank", OP_BIAS, {2}, {S2(3, 2), S1(2)}, OPS_EPARAM, S0},
    {"scale.vector-dim", OP_SCALE, {0}, {S2(3, 2), S1(2)}, OPS_ESHAPE, S0},
    {"scale.axis-negative", OP_SCALE, {-1}, {S2(3, 2), S1(2)}, OPS_EPARAM, S0},
    {"avgpool.rank3", OP_AVGPOOL, {K(3, 3), 1, SAME}, {S3(1, 5, 5)}, OPS_ESHAPE, S0},
    {"avgpool.valid.small", OP_AVGPOOL, {K(3, 3), 1, VALID}, {S4(1, 1, 5, 2)},
     OPS_ESHAPE, S0},
    {"avgpool.valid.small.s2", OP_AVGPOOL, {K(3, 3), 2, VALID}, {S4(1, 1, 2, 5)},
     OPS_ESHAPE, S0},
    {"avgpool.kernel0", OP_AVGPOOL, {0, 1, SAME}, {S4(1, 1, 5, 5)}, OPS_EPARAM, S0},
    {"avgpool.kernel3x0", OP_AVGPOOL, {K(3, 0), 1, VALID}, {S4(1, 1, 5, 5)}, OPS_EPARAM,
     S0},
    {"avgpool.same.even", OP_AVGPOOL, {K(2, 2), 1, SAME}, {S4(1, 1, 5, 5)}, OPS_EPARAM,
     S0},
    {"avgpool.pad7", OP_AVGPOOL, {K(3, 3), 1, 7}, {S4(1, 1, 5, 5)}, OPS_EPARAM, S0},
    {"maxpool.rank2", OP_MAXPOOL, {K(3, 3), 1, SAME}, {S2(5, 5)}, OPS_ESHAPE, S0},
    {"maxpool.stride-1", OP_MAXPOOL, {K(3, 3), -1, SAME}, {S4(1, 1, 5, 5)}, OPS_EPARAM,
     S0},
    {"maxpool.kernel-neg", OP_MAXPOOL, {-5, 1, SAME}, {S4(1, 1, 5, 5)}, OPS_EPARAM, S0},
    {"concat.rank", OP_CONCAT, {0}, {S2(2, 2), S3(2, 2, 1)}, OPS_ESHAPE, S0},
    {"concat.dim", OP_CONCAT, {0}, {S2(2, 2), S2(2, 3)}, OPS_ESHAPE, S0},
    {"concat.too-big", OP_CONCAT, {1}, {S2(1, BIG), S2(1, 1)}, OPS_ESHAPE, S0},
    {"concat.axis2", OP_CONCAT, {2}, {S2(2, 2), S2(2, 2)}, OPS_EPARAM, S0},
    {"concat.axis-1", OP_CONCAT, {-1}, {S2(2, 2), S2(2, 2)}, OPS_EPARAM, S0},
    {"concat.rank0", OP_CONCAT, {0}, {S0, S0}, OPS_EPARAM, S0},
    {"split0.badshape", OP_SPLIT0, {0, 1}, {S2(70000, 2)}, OPS_ESHAPE, S0},
    {"split0.axis3", OP_SPLIT0, {3, 1}, {S2(3, 3)}, OPS_EPARAM, S0},
    {"split0.size0", OP_SPLIT0, {0, 0}, {S2(3, 3)}, OPS_EPARAM, S0},
    {"split0.size-dim", OP_SPLIT0, {1, 3}, {S2(3, 3)}, OPS_EPARAM, S0},
    {"split1.badshape", OP_SPLIT1, {0, 1}, {{-1, {0}}}, OPS_ESHAPE, S0},
    {"split1.size-dim", OP_SPLIT1, {0, 3}, {S2(3, 3)}, OPS_EPARAM, S0},
    {"split1.dim1", OP_SPLIT1, {0, 1}, {S2(1, 3)}, OPS_EPARAM, S0},
    {"transpose.rank3", OP_TRANSPOSE, {0}, {S3(1, 2, 3)}, OPS_ESHAPE, S0},
    {"kmul.3x3-3x3", OP_KMUL, {0}, {S4(2, 2, 3, 3), S4(2, 2, 3, 3)}, OPS_ESHAPE, S0},
    {"kmul.3x3-vector", OP_KMUL, {0}, {S4(2, 2, 3, 3), S1(2)}, OPS_ESHAPE, S0},
    {"kmul.inner", OP_KMUL, {0}, {S4(2, 3, 1, 1), S4(2, 3, 1, 1)}, OPS_ESHAPE, S0},
    {"kmul.matrix", OP_KMUL, {0}, {S4(2, 2, 1, 1), S2(2, 3)}, OPS_ESHAPE, S0},
    {"heads.rank", OP_HEADS, {2}, {S4(1, 2, 4, 1)}, OPS_ESHAPE, S0},
    {"heads.divide", OP_HEADS, {3}, {S3(1, 2, 4)}, OPS_ESHAPE, S0},
    {"heads.zero", OP_HEADS, {0}, {S3(1, 2, 4)}, OPS_EPARAM, S0},
    {"unheads.rank", OP_UNHEADS, {2}, {S3(1, 2, 4)}, OPS_ESHAPE, S0},
    {"unheads.count", OP_UNHEADS, {3}, {S4(1, 2, 2, 4)}, OPS_ESHAPE, S0},
    {"unheads.zero", OP_UNHEADS, {0}, {S4(1, 2, 2, 4)}, OPS_EPARAM, S0},
    {"permute.rank", OP_PERMUTE, {OPS_PERM4(0, 2, 1, 3)}, {S3(1, 2, 3)}, OPS_ESHAPE, S0},
    {"permute.repeat", OP_PERMUTE, {OPS_PERM4(0, 2, 2, 3)}, {S4(1, 2, 3, 4)}, OPS_EPARAM, S0},
    {"permute.unused", OP_PERMUTE, {(3 << 12) | (2 << 9) | (1 << 6) | 1}, {S3(1, 2, 3)}, OPS_EPARAM, S0},
    {"enlarge.rank2", OP_ENLARGE, {K(3, 3)}, {S2(3, 3)}, OPS_ESHAPE, S0},
    {"enlarge.shrink", OP_ENLARGE, {K(1, 1)}, {S4(1, 1, 3, 3)}, OPS_EPARAM, S0},
    {"enlarge.parity", OP_ENLARGE, {K(2, 2)}, {S4(1, 1, 1, 1)}, OPS_EPARAM, S0},
    {"enlarge.parity.h", OP_ENLARGE, {K(2, 3)}, {S4(1, 1, 1, 1)}, OPS_EPARAM, S0},
    {"enlarge.kernel0", OP_ENLARGE, {0}, {S4(1, 1, 1, 1)}, OPS_EPARAM, S0},
    {"imm.rank4", OP_IMM, {0}, {S4(1, 1, 2, 2)}, OPS_ESHAPE, S0},
    {"iconv.rank2", OP_ICONV, {K(3, 3)}, {S2(3, 3)}, OPS_ESHAPE, S0},
    {"iconv.even", OP_ICONV, {K(2, 2)}, {S4(1, 1, 3, 3)}, OPS_EPARAM, S0},
    {"dwiconv.even", OP_DWICONV, {K(3, 2)}, {S4(1, 1, 3, 3)}, OPS_EPARAM, S0},
    {"dwiconv.rank3", OP_DWICONV, {K(3, 3)}, {S3(1, 3, 3)}, OPS_ESHAPE, S0},
    {"poolk.rank3", OP_POOLK, {K(3, 3)}, {S3(1, 3, 3)}, OPS_ESHAPE, S0},
    {"poolk.kernel0x3", OP_POOLK, {K(0, 3)}, {S4(1, 1, 3, 3)}, OPS_EPARAM, S0},
    {"poolk.ref-numel-overflow", OP_POOLK, {K(3, 3)}, {S4(BIG, BIG, BIG, BIG)},
     OPS_ESHAPE, S0},
    {"ones.dim0", OP_ONES, {0}, {S1(0)}, OPS_ESHAPE, S0},
};

static void test_shape_case(void **state) {
    const shape_case *c = *state;
    char err[OPS_ERRLEN] = "", want[64], got[64];
    ten_shape out = {0, {0}};
    ops_status rc = ops_infer_shape(c->op, c->p, c->in, &out, err);
    if (rc != c->want) fail_msg("%s: status %d, want %d (%s)", c->id, rc, c->want, err);
    if (rc == OPS_OK) {
        if (!ten_shape_eq(&out, &c->out))
            fail_msg("%s: shape %s, want %s", c->id, ten_shape_str(&out, got),
                     ten_shape_str(&c->out, want));
        return;
    }
    /* the message is one line and names the operator */
    assert_non_null(strstr(err, ops_table[c->op].name));
    assert_null(strchr(err, '\n'));
}

/* Every operator has both an ESHAPE row and, when it has parameters, an
 * EPARAM row: the table must not silently lose coverage. An element-wise
 * operator without parameters (forms map, zip, scale) that has none gets
 * its form's: rank 5, mismatched shapes, a scalar that is not rank 0. */
static void test_shape_coverage(void **state) {
    (void)state;
    for (int op = 0; op < OP_COUNT; op++) {
        int eshape = 0, eparam = 0;
        for (size_t i = 0; i < NCASES(shape_cases); i++)
            if (shape_cases[i].op == (ops_op)op) {
                eshape |= shape_cases[i].want == OPS_ESHAPE;
                eparam |= shape_cases[i].want == OPS_EPARAM;
            }
        ops_form f = ops_table[op].form;
        if (!eshape && ops_table[op].n_params == 0 &&
            (f == OPS_FORM_MAP || f == OPS_FORM_ZIP || f == OPS_FORM_SCALE)) {
            shape_case c = {ops_table[op].name, (ops_op)op, {0}, {{5, {1, 1, 1, 1}}}, OPS_ESHAPE, S0};
            if (f == OPS_FORM_ZIP) c.in[0] = (ten_shape)S2(2, 3), c.in[1] = (ten_shape)S2(3, 2);
            if (f == OPS_FORM_SCALE) c.in[0] = (ten_shape)S2(2, 2), c.in[1] = (ten_shape)S1(1);
            const shape_case *cp = &c;
            test_shape_case((void **)&cp);
            continue;
        }
        if (!eshape || (ops_table[op].n_params > 0 && !eparam))
            fail_msg("%s lacks an error case: add its rows to shape_cases in test/test_sem.c (element-wise "
                     "rows without parameters come from the operator table)", ops_table[op].name);
    }
}

/* ------------------------------------------------------------ (d) algebra */

/* conv(1, SAME, NONE; x, iconv(k; x)) == x, and with groups C (x's
 * channels), conv(..; x, dwiconv(k; x)) == x */
static void test_conv_identity_kernels(void **state) {
    (void)state;
    static const int32_t ks[] = {K(3, 3), K(1, 1), K(1, 3), K(3, 1)};
    static const struct {
        ops_op op;
        int32_t groups;
    } kinds[] = {{OP_ICONV, 1}, {OP_DWICONV, 3}};
    uint64_t seed = 21;
    for (size_t k = 0; k < NCASES(kinds); k++)
        for (size_t i = 0; i < NCASES(ks); i++) {
            ten x = trand(shape4(2, 3, 5, 4), &seed);
            int32_t kp[1] = {ks[i]}, cp[4] = {1, SAME, NONE, kinds[k].groups};
            ten w = apply(kinds[k].op, kp, &x, NULL);
            ten y = apply(OP_CONV2D, cp, &x, &w);
            assert_ten_equal(ops_table[kinds[k].op].name, &y, &x);
            ten_free(&x), ten_free(&w), ten_free(&y);
        }
}

/* conv(s, p, NONE; x, poolk(k; x)) == avgpool(k, s, p; x) */
static void test_conv_poolk_avgpool(void **state) {
    (void)state;
    static const int32_t ks[] = {K(3, 3), K(1, 3)};
    uint64_t seed = 22;
    for (size_t i = 0; i < NCASES(ks); i++)
        for (int32_t s = 1; s <= 2; s++)
            for (int32_t pad = SAME; pad <= VALID; pad++)
                for (int32_t h = 4; h <= 5; h++) {
                    ten x = trand(shape4(2, 3, h, 5), &seed);
                    int32_t kp[1] = {ks[i]}, cp[4] = {s, pad, NONE, 1};
                    int32_t pp[3] = {ks[i], s, pad};
                    ten w = apply(OP_POOLK, kp, &x, NULL);
                    ten a = apply(OP_CONV2D, cp, &x, &w), b = apply(OP_AVGPOOL, pp, &x, NULL);
                    assert_ten_equal("conv(x, poolk) == avgpool(x)", &a, &b);
                    ten_free(&x), ten_free(&w), ten_free(&a), ten_free(&b);
                }
}

/* conv(s, SAME; x, w) == conv(s, SAME; x, enlarge(K; w)): centred padding
 * keeps the window centre fixed for every stride and input size. */
static void test_conv_enlarge(void **state) {
    (void)state;
    static const struct {
        int32_t kh, kw, big;
    } cases[] = {{1, 1, K(3, 3)}, {1, 3, K(3, 3)}, {3, 1, K(3, 3)}, {1, 1, K(5, 3)}};
    uint64_t seed = 23;
    for (size_t i = 0; i < NCASES(cases); i++)
        for (int32_t s = 1; s <= 2; s++)
            for (int32_t h = 4; h <= 5; h++) {
                ten x = trand(shape4(1, 4, h, h + 2), &seed);
                ten w = trand(shape4(4, 2, cases[i].kh, cases[i].kw), &seed);
                int32_t ep[1] = {cases[i].big}, cp[4] = {s, SAME, (h + s) % 2, 2};
                ten we = apply(OP_ENLARGE, ep, &w, NULL);
                ten a = apply(OP_CONV2D, cp, &x, &w), b = apply(OP_CONV2D, cp, &x, &we);
                assert_ten_equal("conv(x, w) == conv(x, enlarge(w))", &a, &b);
                ten_free(&x), ten_free(&w), ten_free(&we), ten_free(&a), ten_free(&b);
            }
}

/* avgpool(3x3, 1, SAME; iconv(3x3)) == poolk(3x3) */
static void test_avgpool_iconv_poolk(void **state) {
    (void)state;
    uint64_t seed = 24;
    ten x = trand(shape4(1, 3, 4, 4), &seed);
    int32_t kp[1] = {K(3, 3)}, pp[3] = {K(3, 3), 1, SAME};
    ten ic = apply(OP_ICONV, kp, &x, NULL), pk = apply(OP_POOLK, kp, &x, NULL);
    ten a = apply(OP_AVGPOOL, pp, &ic, NULL);
    assert_ten_equal("avgpool(iconv) == poolk", &a, &pk);
    ten_free(&x), ten_free(&ic), ten_free(&pk), ten_free(&a);
}

/* split0/split1 of x, concatenated back, give x on every axis and size. */
static void test_split_concat_roundtrip(void **state) {
    (void)state;
    uint64_t seed = 25;
    ten x = trand(shape4(2, 3, 4, 5), &seed);
    for (int32_t ax = 0; ax < 4; ax++)
        for (int32_t sz = 1; sz < x.shape.dim[ax]; sz++) {
            int32_t sp[2] = {ax, sz}, cp[1] = {ax};
            ten a = apply(OP_SPLIT0, sp, &x, NULL), b = apply(OP_SPLIT1, sp, &x, NULL);
            ten y = apply(OP_CONCAT, cp, &a, &b);
            assert_ten_equal("concat(split0, split1) == x", &y, &x);
            ten a2 = apply(OP_SPLIT0, sp, &y, NULL);
            assert_ten_equal("split0(concat(a, b)) == a", &a2, &a);
            ten_free(&a), ten_free(&b), ten_free(&y), ten_free(&a2);
        }
    ten_free(&x);
}

/* Identities with constants: mm(x, imm) == x, x * ones == x, T T x == x. */
static void test_constant_identities(void **state) {
    (void)state;
    uint64_t seed = 26;
    ten_shape s = S2(3, 5);
    ten x = trand(s, &seed);
    ten i = apply(OP_IMM, NULL, &x, NULL), o = apply(OP_ONES, NULL, &x, NULL);
    ten a = apply(OP_MATMUL, NULL, &x, &i), b = apply(OP_EWMUL, NULL, &x, &o);
    ten t = apply(OP_TRANSPOSE, NULL, &x, NULL), tt = apply(OP_TRANSPOSE, NULL, &t, NULL);
    assert_ten_equal("mm(x, imm) == x", &a, &x);
    assert_ten_equal("x * ones == x", &b, &x);
    assert_ten_equal("T T x == x", &tt, &x);
    ten_free(&x), ten_free(&i), ten_free(&o), ten_free(&a), ten_free(&b);
    ten_free(&t), ten_free(&tt);
}

/* Negative tests from DESIGN.md: relu(x+y) != relu(x)+relu(y),
 * mm(x,y) != mm(y,x), T mm(x,y) != mm(T x, T y) on random inputs. */
static void test_false_identities(void **state) {
    (void)state;
    uint64_t seed = 27;
    ten_shape s = S2(3, 3);
    ten x = trand(s, &seed), y = trand(s, &seed);
    ten sum = apply(OP_EWADD, NULL, &x, &y), l = apply(OP_RELU, NULL, &sum, NULL);
    ten rx = apply(OP_RELU, NULL, &x, NULL), ry = apply(OP_RELU, NULL, &y, NULL);
    ten r = apply(OP_EWADD, NULL, &rx, &ry);
    assert_false(ten_equal(&l, &r));
    ten xy = apply(OP_MATMUL, NULL, &x, &y), yx = apply(OP_MATMUL, NULL, &y, &x);
    assert_false(ten_equal(&xy, &yx));
    ten txy = apply(OP_TRANSPOSE, NULL, &xy, NULL);
    ten tx = apply(OP_TRANSPOSE, NULL, &x, NULL), ty = apply(OP_TRANSPOSE, NULL, &y, NULL);
    ten txty = apply(OP_MATMUL, NULL, &tx, &ty);
    assert_false(ten_equal(&txy, &txty));
    ten_free(&x), ten_free(&y), ten_free(&sum), ten_free(&l), ten_free(&rx);
    ten_free(&ry), ten_free(&r), ten_free(&xy), ten_free(&yx), ten_free(&txy);
    ten_free(&tx), ten_free(&ty), ten_free(&txty);
}

/* cat(1; conv(x, w1), conv(x, w2)) == conv(x, cat(0; w1, w2)) holds for
 * groups 1 and fails for groups 2 (the output channels regroup). */
static void test_grouped_conv_concat(void **state) {
    (void)state;
    uint64_t seed = 28;
    ten x = trand(shape4(1, 4, 3, 3), &seed);
    for (int32_t g = 1; g <= 2; g++) {
        ten w1 = trand(shape4(2, 4 / g, 3, 3), &seed), w2 = trand(shape4(2, 4 / g, 3, 3), &seed);
        int32_t cp[4] = {1, SAME, NONE, g}, c0[1] = {0}, c1[1] = {1};
        ten a1 = apply(OP_CONV2D, cp, &x, &w1), a2 = apply(OP_CONV2D, cp, &x, &w2);
        ten lhs = apply(OP_CONCAT, c1, &a1, &a2);
        ten w = apply(OP_CONCAT, c0, &w1, &w2), rhs = apply(OP_CONV2D, cp, &x, &w);
        if (g == 1) assert_ten_equal("cat(1; convs) == conv(cat(0; w))", &lhs, &rhs);
        else assert_false(ten_equal(&lhs, &rhs));
        ten_free(&w1), ten_free(&w2), ten_free(&a1), ten_free(&a2);
        ten_free(&lhs), ten_free(&w), ten_free(&rhs);
    }
    ten_free(&x);
}

/* ------------------------------------------------------------ main */

int main(void) {
    struct CMUnitTest sem[NCASES(sem_cases)], shp[NCASES(shape_cases)];
    for (size_t i = 0; i < NCASES(sem_cases); i++)
        sem[i] = (struct CMUnitTest){sem_cases[i].id, test_sem_case, NULL, NULL,
                                     (void *)&sem_cases[i]};
    for (size_t i = 0; i < NCASES(shape_cases); i++)
        shp[i] = (struct CMUnitTest){shape_cases[i].id, test_shape_case, NULL, NULL,
                                     (void *)&shape_cases[i]};
    const struct CMUnitTest other[] = {
        cmocka_unit_test(test_diff_conv),
        cmocka_unit_test(test_diff_matmul),
        cmocka_unit_test(test_sums_near_p),
        cmocka_unit_test(test_relu6_cells),
        cmocka_unit_test(test_table_complete),
        cmocka_unit_test(test_diff_avgpool),
        cmocka_unit_test(test_shape_coverage),
        cmocka_unit_test(test_conv_identity_kernels),
        cmocka_unit_test(test_conv_poolk_avgpool),
        cmocka_unit_test(test_conv_enlarge),
        cmocka_unit_test(test_avgpool_iconv_poolk),
        cmocka_unit_test(test_split_concat_roundtrip),
        cmocka_unit_test(test_constant_identities),
        cmocka_unit_test(test_false_identities),
        cmocka_unit_test(test_grouped_conv_concat),
    };
    int failed = _cmocka_run_group_tests("sem_cases", sem, NCASES(sem), NULL, NULL);
    failed += _cmocka_run_group_tests("shape_cases", shp, NCASES(shp), NULL, NULL);
    failed += cmocka_run_group_tests_name("sem_properties", other, NULL, NULL);
    return failed ? 1 : 0;
}
