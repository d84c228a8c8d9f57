/* cost_cpu.c - the measured CPU backend of the cost model (cost.h): runs
 * each kernel on random float inputs, convolutions and pools through
 * oneDNN's C API (v2.x), GEMMs through OpenBLAS, the rest through plain C
 * loops here, one thread each, and reports the median time. */
#define _GNU_SOURCE /* dlsym(RTLD_DEFAULT) */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include "cost/cost.h"
#include "cost/cost_impl.h"

#define WARMUP 2
#define MIN_REPS 5
#define MAX_REPS 25
#define BUDGET_US 20000.0

struct eg_cost_cpu {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    uint64_t rng;
};

/* ================= set-up ================= */

/* oneDNN here uses OpenMP: hold the calling thread's team to one thread.
 * Looked up at run time, so a oneDNN built on TBB or a threadpool (no
 * OpenMP symbol) is simply left alone. */
static void omp_one_thread(void) {
    void (*set)(int) = (void (*)(int))(uintptr_t)dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (set) set(1);
}

int eg_cost_cpu_new(eg_cost_cpu **out, char *err, size_t errlen) {
    eg_cost_cpu *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    openblas_set_num_threads(1);
    omp_one_thread();
    if (dnnl_engine_create(&c->eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&c->stream, c->eng, dnnl_stream_default_flags) != dnnl_success) {
        snprintf(err, errlen, "oneDNN: cannot create a CPU engine and stream");
        eg_cost_cpu_free(c);
        return -1;
    }
    c->rng = 0x9e3779b97f4a7c15ull;
    *out = c;
    return 0;
}

void eg_cost_cpu_free(eg_cost_cpu *c) {
    if (!c) return;
    if (c->stream) dnnl_stream_destroy(c->stream);
    if (c->eng) dnnl_engine_destroy(c->eng);
    free(c);
}

const char *eg_cost_cpu_machine(char *buf, size_t len) {
    char line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(buf, len, "unknown-cpu");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon++;
        while (*colon == ' ') colon++;
        colon[strcspn(colon, "\n")] = '\0';
        if (*colon) snprintf(buf, len, "%s", colon);
        break;
    }
    if (f) fclose(f);
    return buf;
}

/* ================= timing ================= */

/* This thread's CPU time: every kernel runs on the calling thread (one
 * thread), so time other processes take from a shared machine is left
 * out; stalls on memory still count. */
static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef int (*run_fn)(void *ctx); /* one run; 0 ok */

/* Warm up, then repeat until BUDGET_US or MAX_REPS (at least MIN_REPS).
 * @return the median run in microseconds, or -1 when a run failed. */
static double median_time(run_fn run, void *ctx) {
    double t[MAX_REPS], spent = 0;
    int n = 0;
    for (int i = 0; i < WARMUP; i++)
        if (run(ctx)) return -1;
    while (n < MAX_REPS && (n < MIN_REPS || spent < BUDGET_US)) {
        double t0 = now_us();
        if (run(ctx)) return -1;
        t[n] = now_us() - t0;
        spent += t[n++];
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* Random floats in [-1, 1) (xorshift64). @return a malloc'd array or NULL */
static float *rand_floats(eg_cost_cpu *c, int64_t n) {
    if (n < 1) n = 1;
    float *p = malloc((size_t)n * sizeof *p);
    for (int64_t i = 0; p && i < n; i++) {
        c->rng ^= c->rng << 13, c->rng ^= c->rng >> 7, c->rng ^= c->rng << 17;
        p[i] = (float)((double)(c->rng >> 40) / (double)(1ull << 23) - 1.0);
    }
    return p;
}

/* ================= oneDNN: conv and pool ================= */

struct dnnl_run {
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    int nargs;
    dnnl_exec_arg_t args[4];
};

static int run_dnnl(void *ctx) {
    struct dnnl_run *r = ctx;
    if (dnnl_primitive_execute(r->prim, r->stream, r->nargs, r->args) != dnnl_success) return 1;
    return dnnl_stream_wait(r->stream) != dnnl_success;
}

/* Create memories for the primitive's chosen layouts, fill them, time it.
 * @return microseconds or -1 */
static double time_pd(eg_cost_cpu *c, dnnl_primitive_desc_t pd, const int *arg,
                      const dnnl_query_t *what, const int *idx, int nargs) {
    struct dnnl_run r = {.stream = c->stream, .nargs = nargs};
    float *buf[4] = {0};
    double us = -1;
    double total = 0;
    for (int i = 0; i < nargs; i++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what[i], idx[i]);
        total += md ? (double)dnnl_memory_desc_get_size(md) : 0;
    }
    if (total > EG_COST_MAX_MEASURE) return -1; /* blocked layouts pad channels */
    if (dnnl_primitive_create(&r.prim, pd) != dnnl_success) return -1;
    for (int i = 0; i < nargs; i++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what[i], idx[i]);
        size_t sz = md ? dnnl_memory_desc_get_size(md) : 0;
        r.args[i].arg = arg[i];
        r.args[i].memory = NULL;
        if (!sz || !(buf[i] = rand_floats(c, (int64_t)(sz / sizeof(float)) + 1))) goto cleanup;
        if (dnnl_memory_create(&r.args[i].memory, md, c->eng, buf[i]) != dnnl_success) goto cleanup;
    }
    us = median_time(run_dnnl, &r);
cleanup:
    for (int i = 0; i < nargs; i++) {
        if (r.args[i].memory) dnnl_memory_destroy(r.args[i].memory);
        free(buf[i]);
    }
    dnnl_primitive_destroy(r.prim);
    return us;
}

static double time_conv(eg_cost_cpu *c, const eg_cost_kern *k) {
    dnnl_memory_desc_t src, wei, bia, dst;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    int64_t g = k->group;
    dnnl_dims_t sd = {k->n, k->c, k->h, k->w}, dd = {k->n, k->o, k->oh, k->ow};
    dnnl_dims_t wd = {g, k->o / g, k->c / g, k->kh, k->kw}, bd = {k->o};
    dnnl_dims_t st = {k->sh, k->sw}, pl = {k->pt, k->pl}, pr = {k->pb, k->pr};
    if (g < 1 || k->o % g || k->c % g) return -1;
    if (g == 1) wd[0] = k->o, wd[1] = k->c, wd[2] = k->kh, wd[3] = k->kw;
    if (dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&wei, g == 1 ? 4 : 5, wd, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&bia, 1, bd, dnnl_f32, dnnl_x) ||
        dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
                                           &src, &wei, k->bias ? &bia : NULL, &dst, st, pl, pr) ||
        dnnl_primitive_desc_create(&pd, &cd, NULL, c->eng, NULL))
        return -1;
    const int arg[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    const dnnl_query_t what[] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md,
                                 dnnl_query_weights_md};
    const int idx[] = {0, 0, 0, 1}; /* the bias is weights #1 */
    double us = time_pd(c, pd, arg, what, idx, k->bias ? 4 : 3);
    dnnl_primitive_desc_destroy(pd);
    return us;
}

static double time_pool(eg_cost_cpu *c, const eg_cost_kern *k) {
    dnnl_memory_desc_t src, dst;
    dnnl_pooling_v2_desc_t pdsc;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_dims_t sd = {k->n, k->c, k->h, k->w}, dd = {k->n, k->c, k->oh, k->ow};
    dnnl_dims_t st = {k->sh, k->sw}, ker = {k->kh, k->kw}, dil = {0, 0};
    dnnl_dims_t pl = {k->pt, k->pl}, pr = {k->pb, k->pr};
    if (dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, dnnl_nchw) ||
        dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_nchw) ||
        dnnl_pooling_v2_forward_desc_init(&pdsc, dnnl_forward_inference,
                                          k->avg == 1   ? dnnl_pooling_avg_include_padding
                                          : k->avg == 2 ? dnnl_pooling_avg_exclude_padding
                                                        : dnnl_pooling_max,
                                          &src, &dst, st, ker, dil, pl, pr) ||
        dnnl_primitive_desc_create(&pd, &pdsc, NULL, c->eng, NULL))
        return -1;
    const int arg[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    const dnnl_query_t what[] = {dnnl_query_src_md, dnnl_query_dst_md};
    const int idx[] = {0, 0};
    double us = time_pd(c, pd, arg, what, idx, 2);
    dnnl_primitive_desc_destroy(pd);
    return us;
}

/* ================= OpenBLAS and plain loops ================= */

struct loop_run {
    const eg_cost_kern *k;
    float *a, *b, *y;
    int64_t na, nb, ny;
};

static int run_gemm(void *ctx) {
    struct loop_run *r = ctx;
    const eg_cost_kern *k = r->k;
    int lda = (int)(k->ta ? k->m : k->k), ldb = (int)(k->tb ? k->k : k->nn);
    for (int64_t i = 0; i < k->batch; i++)
        cblas_sgemm(CblasRowMajor, k->ta ? CblasTrans : CblasNoTrans,
                    k->tb ? CblasTrans : CblasNoTrans, (int)k->m, (int)k->nn, (int)k->k, 1.0f,
                    r->a + i * k->m * k->k, lda, r->b + i * k->k * k->nn, ldb, 0.0f,
                    r->y + i * k->m * k->nn, (int)k->nn);
    return 0;
}

/* Copy the input (repeated when the output is larger) into the output. */
static int run_copy(void *ctx) {
    struct loop_run *r = ctx;
    for (int64_t off = 0; off < r->ny; off += r->na) {
        int64_t n = r->ny - off < r->na ? r->ny - off : r->na;
        memcpy(r->y + off, r->a, (size_t)n * sizeof *r->y);
    }
    return 0;
}

static int run_trans(void *ctx) {
    struct loop_run *r = ctx;
    int64_t m = r->k->m, n = r->k->nn;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) r->y[j * m + i] = r->a[i * n + j];
    return 0;
}

/* y = a + b or a * b over n cells, b read with wrap-around (broadcasting
 * a smaller operand) without a division per cell, as a runtime's
 * broadcasting kernels do: a division per cell would make an Add of a
 * scalar look ten times dearer than it is and steer the search. */
static void ewise_binary(float *y, const float *a, int64_t na, const float *b, int64_t nb,
                         int64_t n, int mul) {
    if (na != n) { /* the bigger operand first */
        const float *t = a;
        a = b, b = t, nb = na;
    }
    if (nb == n) {
        if (mul) for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i];
        else for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
    } else if (nb == 1) {
        float s = b[0];
        if (mul) for (int64_t i = 0; i < n; i++) y[i] = a[i] * s;
        else for (int64_t i = 0; i < n; i++) y[i] = a[i] + s;
    } else {
        for (int64_t i0 = 0; i0 < n; i0 += nb) {
            int64_t m = n - i0 < nb ? n - i0 : nb;
            if (mul) for (int64_t i = 0; i < m; i++) y[i0 + i] = a[i0 + i] * b[i];
            else for (int64_t i = 0; i < m; i++) y[i0 + i] = a[i0 + i] + b[i];
        }
    }
}

/* relu without a branch: on random signs a compare-and-jump (what gcc
 * makes of v > 0 ? v : 0, and fmaxf is a libm call) mispredicts half the
 * time and costs ten times a runtime's vector loop. Clearing the bits of
 * negative numbers with their own sign mask is exact (-0 becomes +0). */
static void relu_loop(float *y, const float *a, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &a[i], sizeof u);
        u &= ~(uint32_t)((int32_t)u >> 31);
        memcpy(&y[i], &u, sizeof u);
    }
}

/* Element-wise loops; a smaller operand is read with wrap-around. */
static int run_ewise(void *ctx) {
    struct loop_run *r = ctx;
    const eg_cost_kern *k = r->k;
    float *y = r->y, *a = r->a, *b = r->b;
    int64_t n = r->ny, na = r->na, nb = r->nb, in = k->inner < 1 ? 1 : k->inner;
    switch (k->ew) {
    case EG_EW_ADD: ewise_binary(y, a, na, b, nb, n, 0); break;
    case EG_EW_MUL: ewise_binary(y, a, na, b, nb, n, 1); break;
    case EG_EW_SCALE: for (int64_t i = 0; i < n && na == n; i++) y[i] = a[i] * b[0]; break;
    case EG_EW_RELU: relu_loop(y, a, n); break;
    case EG_EW_SIGMOID: for (int64_t i = 0; i < n; i++) y[i] = 1 / (1 + expf(-a[i])); break;
    case EG_EW_TANH: for (int64_t i = 0; i < n; i++) y[i] = tanhf(a[i]); break;
    case EG_EW_BNORM: /* per channel plane: scale and shift, no division per cell */
        for (int64_t i0 = 0, ch = 0; i0 < n && nb >= 2; i0 += in, ch = ch + 1 < nb - 1 ? ch + 1 : 0) {
            float sc = b[ch], sh = b[ch + 1];
            int64_t m = n - i0 < in ? n - i0 : in;
            for (int64_t i = 0; i < m; i++) y[i0 + i] = a[i0 + i] * sc + sh;
        }
        break;
    case EG_EW_SOFTMAX:
        for (int64_t r0 = 0; r0 + in <= n; r0 += in) {
            float mx = a[r0], s = 0;
            for (int64_t i = r0; i < r0 + in; i++) mx = a[i] > mx ? a[i] : mx;
            for (int64_t i = r0; i < r0 + in; i++) s += (y[i] = expf(a[i] - mx));
            for (int64_t i = r0; i < r0 + in; i++) y[i] /= s;
        }
        break;
    case EG_EW_GAP:
        for (int64_t o = 0; o < n; o++) {
            float s = 0;
            for (int64_t i = 0; i < in; i++) s += a[(o * in + i) % na];
            y[o] = s / (float)in;
        }
        break;
    case EG_EW_COUNT: return 1;
    }
    return 0;
}

/* Allocate the inputs (a: na, b: nb) and the output (ny), time run. */
static double time_loop(eg_cost_cpu *c, const eg_cost_kern *k, run_fn run, int64_t na,
                        int64_t nb, int64_t ny) {
    struct loop_run r = {k, NULL, NULL, NULL, na < 1 ? 1 : na, nb < 1 ? 1 : nb, ny};
    double us = -1;
    if ((double)(r.na + r.nb + ny) * sizeof(float) > EG_COST_MAX_MEASURE) return -1;
    r.a = rand_floats(c, r.na), r.b = rand_floats(c, r.nb), r.y = rand_floats(c, ny);
    if (r.a && r.b && r.y) us = median_time(run, &r);
    free(r.a), free(r.b), free(r.y);
    return us;
}

double eg_cost_cpu_time(eg_cost_cpu *c, const eg_cost_kern *k) {
    int64_t out = k->out_elems, in = k->in_elems;
    switch (k->cls) {
    case EG_KC_FREE: return 0;
    case EG_KC_CONV: return time_conv(c, k);
    case EG_KC_POOL: return time_pool(c, k);
    case EG_KC_GEMM:
        if (k->m < 1 || k->nn < 1 || k->k < 1 || k->m > INT32_MAX || k->nn > INT32_MAX ||
            k->k > INT32_MAX)
            return -1;
        return time_loop(c, k, run_gemm, k->batch * k->m * k->k, k->batch * k->k * k->nn,
                         k->batch * k->m * k->nn);
    case EG_KC_EWISE: {
        int64_t nb = k->ew == EG_EW_BNORM ? k->c + 1 : in - out > 0 ? in - out : 1;
        if ((k->ew == EG_EW_ADD || k->ew == EG_EW_MUL) && in == out) nb = out; /* op(x, x) */
        int64_t na = k->ew == EG_EW_GAP || k->ew == EG_EW_SOFTMAX ? in : out;
        if (k->ew == EG_EW_ADD || k->ew == EG_EW_MUL) na = out;
        return time_loop(c, k, run_ewise, na, nb, out);
    }
    case EG_KC_MOVE:
    case EG_KC_VIEW: return time_loop(c, k, run_copy, in, 1, out);
    case EG_KC_TRANS: return time_loop(c, k, run_trans, k->m * k->nn, 1, k->m * k->nn);
    case EG_KC_COUNT: break;
    }
    return -1;
}
