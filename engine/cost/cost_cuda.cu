/* cost_cuda.cu - the measured CUDA backend of the cost model (cost_impl.h):
 * cuDNN convolution, cuBLAS sgemm and a copy kernel for everything else,
 * timed with cudaEvents (median of repeats). split0/split1 are views in
 * the runtimes the result runs in (torch's split; onnxruntime writes a
 * Split's outputs in one kernel), so a view is charged its copy less the
 * time of an empty launch: charged a launch each, the splits a merge adds
 * cost more on an H200 than the launches it saves, and BERT's Q/K/V
 * projections stayed apart although merged they run 1.11x faster in a
 * CUDA graph (bench/results/gpu-rerun.md). Built when configure finds
 * nvcc; cost_nocuda.c stands in otherwise. cuDNN / cuBLAS parts compile
 * only with EG_COST_CUDNN / EG_COST_CUBLAS (set by configure when the
 * libraries exist); without them those kernels fall back to analytic. */
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#ifdef EG_COST_CUBLAS
#include <cublas_v2.h>
#endif
#ifdef EG_COST_CUDNN
#include <cudnn.h>
#endif

#include "cost/cost_impl.h"

#define REPS 15

struct eg_cost_cuda {
    cudaEvent_t t0, t1;
    double launch_us; /* the time of an empty launch (a one-element copy) */
#ifdef EG_COST_CUBLAS
    cublasHandle_t blas;
#endif
#ifdef EG_COST_CUDNN
    cudnnHandle_t dnn;
#endif
};

__global__ static void copy_kernel(const float *a, float *y, int64_t na, int64_t ny) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < ny) y[i] = a[i % na];
}

extern "C" int eg_cost_cuda_new(eg_cost_cuda **out, char *machine, size_t mlen, char *err,
                                size_t errlen) {
    int n = 0;
    *out = NULL;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(err, errlen, "no CUDA device: use --cost analytic or cpu (%s)",
                 e == cudaSuccess ? "none found" : cudaGetErrorString(e));
        return -1;
    }
    cudaDeviceProp prop;
    /* The machine id names the way views are timed too: a cache file of
     * the times before views were charged without a launch is refused
     * (and rewritten), not read as this backend's. */
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        snprintf(machine, mlen, "%s, views without a launch", prop.name);
    eg_cost_cuda *c = (eg_cost_cuda *)calloc(1, sizeof *c);
    int bad = !c || cudaEventCreate(&c->t0) != cudaSuccess ||
              cudaEventCreate(&c->t1) != cudaSuccess;
#ifdef EG_COST_CUBLAS
    bad = bad || cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS;
#endif
#ifdef EG_COST_CUDNN
    bad = bad || cudnnCreate(&c->dnn) != CUDNN_STATUS_SUCCESS;
#endif
    if (bad) {
        snprintf(err, errlen, "no CUDA device: use --cost analytic or cpu (set-up failed)");
        eg_cost_cuda_free(c); /* calloc'd: what was not created is NULL */
        return -1;
    }
    eg_cost_kern empty = {};
    empty.cls = EG_KC_MOVE, empty.in_elems = 1, empty.out_elems = 1;
    c->launch_us = std::max(eg_cost_cuda_time(c, &empty), 0.0);
    *out = c;
    return 0;
}

extern "C" void eg_cost_cuda_free(eg_cost_cuda *c) {
    if (!c) return;
#ifdef EG_COST_CUBLAS
    cublasDestroy(c->blas);
#endif
#ifdef EG_COST_CUDNN
    cudnnDestroy(c->dnn);
#endif
    cudaEventDestroy(c->t0);
    cudaEventDestroy(c->t1);
    free(c);
}

/* One launch of the kernel under test: 0 ok. */
struct launch {
    eg_cost_cuda *c;
    const eg_cost_kern *k;
    float *a, *b, *y, *ws;
    size_t ws_bytes;
    /* A conv with uneven pads: cuDNN pads evenly, so the launch copies the
     * input into a padded buffer first (what a runtime does) and the conv
     * reads that with no padding of its own. */
    float *unpadded;
    int64_t unpadded_elems, padded_elems;
#ifdef EG_COST_CUDNN
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t algo;
#endif
};

static int run(struct launch *l) {
    const eg_cost_kern *k = l->k;
    switch (k->cls) {
    case EG_KC_GEMM: {
#ifdef EG_COST_CUBLAS
        const float one = 1, zero = 0;
        /* row-major C = A B is column-major C^T = B^T A^T */
        return cublasSgemmStridedBatched(l->c->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)k->nn,
                                         (int)k->m, (int)k->k, &one, l->b, (int)k->nn,
                                         k->k * k->nn, l->a, (int)k->k, k->m * k->k, &zero, l->y,
                                         (int)k->nn, k->m * k->nn,
                                         (int)k->batch) != CUBLAS_STATUS_SUCCESS;
#else
        return 1;
#endif
    }
    case EG_KC_CONV: {
#ifdef EG_COST_CUDNN
        const float one = 1, zero = 0;
        if (l->unpadded) {
            int threads = 256;
            copy_kernel<<<(unsigned)((l->padded_elems + threads - 1) / threads), threads>>>(
                l->unpadded, l->a, l->unpadded_elems, l->padded_elems);
            if (cudaGetLastError() != cudaSuccess) return 1;
        }
        return cudnnConvolutionForward(l->c->dnn, &one, l->xd, l->a, l->wd, l->b, l->cd, l->algo,
                                       l->ws, l->ws_bytes, &zero, l->yd,
                                       l->y) != CUDNN_STATUS_SUCCESS;
#else
        return 1;
#endif
    }
    case EG_KC_FREE:
    case EG_KC_POOL:
    case EG_KC_EWISE:
    case EG_KC_MOVE:
    case EG_KC_TRANS:
    case EG_KC_VIEW:
    case EG_KC_COUNT: {
        int64_t na = k->in_elems < 1 ? 1 : k->in_elems, ny = k->out_elems < 1 ? 1 : k->out_elems;
        int threads = 256;
        copy_kernel<<<(unsigned)((ny + threads - 1) / threads), threads>>>(l->a, l->y, na, ny);
        return cudaGetLastError() != cudaSuccess;
    }
    }
    return 1;
}

static int uneven_pads(const eg_cost_kern *k) { return k->pt != k->pb || k->pl != k->pr; }

/* The input as the conv reads it: padded beforehand where the pads are uneven. */
static void conv_input(const eg_cost_kern *k, int64_t *h, int64_t *w, int *ph, int *pw) {
    int uneven = uneven_pads(k);
    *h = k->h + (uneven ? k->pt + k->pb : 0), *w = k->w + (uneven ? k->pl + k->pr : 0);
    *ph = uneven ? 0 : (int)k->pt, *pw = uneven ? 0 : (int)k->pl;
}

#ifdef EG_COST_CUDNN
static int conv_setup(struct launch *l) {
    const eg_cost_kern *k = l->k;
    int64_t h, w;
    int ph, pw;
    conv_input(k, &h, &w, &ph, &pw);
    if (uneven_pads(k)) {
        l->unpadded_elems = k->n * k->c * k->h * k->w, l->padded_elems = k->n * k->c * h * w;
        if (cudaMalloc(&l->unpadded, (size_t)std::max<int64_t>(l->unpadded_elems, 1) * 4) !=
            cudaSuccess)
            return 1;
    }
    int bad = cudnnCreateTensorDescriptor(&l->xd) || cudnnCreateTensorDescriptor(&l->yd) ||
              cudnnCreateFilterDescriptor(&l->wd) || cudnnCreateConvolutionDescriptor(&l->cd);
    bad = bad || cudnnSetTensor4dDescriptor(l->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)k->n,
                                            (int)k->c, (int)h, (int)w);
    bad = bad || cudnnSetTensor4dDescriptor(l->yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)k->n,
                                            (int)k->o, (int)k->oh, (int)k->ow);
    bad = bad || cudnnSetFilter4dDescriptor(l->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)k->o,
                                            (int)(k->c / k->group), (int)k->kh, (int)k->kw);
    bad = bad || cudnnSetConvolution2dDescriptor(l->cd, ph, pw, (int)k->sh,
                                                 (int)k->sw, 1, 1, CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT);
    bad = bad || cudnnSetConvolutionGroupCount(l->cd, (int)k->group);
    /* The fastest algorithm by trying each, as a runtime does that searches
     * (onnxruntime's CUDA provider by default, torch with cudnn.benchmark):
     * the heuristic's first pick can be several times slower for one shape
     * and not another, which made a 1x1 conv look dearer than its 3x3
     * enlargement on an H200. */
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0, best = -1;
    bad = bad || cudnnFindConvolutionForwardAlgorithm(l->c->dnn, l->xd, l->wd, l->cd, l->yd,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got,
                                                      perf);
    for (int i = 0; !bad && i < got && best < 0; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) best = i; /* sorted fastest first */
    if (bad || best < 0) return 1;
    l->algo = perf[best].algo;
    l->ws_bytes = perf[best].memory;
    return l->ws_bytes && cudaMalloc(&l->ws, l->ws_bytes) != cudaSuccess;
}

static void conv_teardown(struct launch *l) {
    if (l->xd) cudnnDestroyTensorDescriptor(l->xd);
    if (l->yd) cudnnDestroyTensorDescriptor(l->yd);
    if (l->wd) cudnnDestroyFilterDescriptor(l->wd);
    if (l->cd) cudnnDestroyConvolutionDescriptor(l->cd);
}
#endif

extern "C" double eg_cost_cuda_time(eg_cost_cuda *c, const eg_cost_kern *k) {
    struct launch l = {};
    float t[REPS], ms = 0;
    double us = -1;
    l.c = c, l.k = k;
    int64_t na = k->in_elems, nb = k->in_elems, ny = k->out_elems;
    if (k->cls == EG_KC_GEMM) na = k->batch * k->m * k->k, nb = k->batch * k->k * k->nn;
    if (k->cls == EG_KC_CONV) {
        int64_t h, w;
        int ph, pw;
        conv_input(k, &h, &w, &ph, &pw);
        na = k->n * k->c * h * w, nb = k->o * (k->c / k->group) * k->kh * k->kw;
    }
    int bad = cudaMalloc(&l.a, (size_t)std::max<int64_t>(na, 1) * 4) != cudaSuccess ||
              cudaMalloc(&l.b, (size_t)std::max<int64_t>(nb, 1) * 4) != cudaSuccess ||
              cudaMalloc(&l.y, (size_t)std::max<int64_t>(ny, 1) * 4) != cudaSuccess;
#ifdef EG_COST_CUDNN
    if (!bad && k->cls == EG_KC_CONV) bad = conv_setup(&l);
#endif
    for (int i = 0; i < 2 && !bad; i++) bad = run(&l); /* warm-up */
    for (int i = 0; i < REPS && !bad; i++) {
        bad = cudaEventRecord(c->t0) != cudaSuccess || run(&l) ||
              cudaEventRecord(c->t1) != cudaSuccess || cudaEventSynchronize(c->t1) != cudaSuccess ||
              cudaEventElapsedTime(&ms, c->t0, c->t1) != cudaSuccess;
        t[i] = ms;
    }
    if (!bad) {
        std::sort(t, t + REPS);
        us = (double)t[REPS / 2] * 1000.0;
        if (k->cls == EG_KC_VIEW) us = std::max(us - c->launch_us, 0.0);
    }
#ifdef EG_COST_CUDNN
    conv_teardown(&l);
#endif
    cudaFree(l.a), cudaFree(l.b), cudaFree(l.y), cudaFree(l.ws), cudaFree(l.unpadded);
    return us;
}
