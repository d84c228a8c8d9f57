/* gpu.cu - CUDA kernels of the reference semantics (see gpu.h). Built only
 * when configure finds nvcc; gpu_nocuda.c stands in otherwise. */
#include <stdio.h>

#include <cuda_runtime.h>

#include "gpu.h"

__global__ static void ewise_kernel(int op, const uint64_t *a, const uint64_t *b,
                                    uint64_t *out, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t bv = b ? b[op == OP_SMUL ? 0 : i] : 0;
    out[i] = gpu_cell(op, a[i], bv);
}

/* Record a failed CUDA call in err; @return GPU_EFAIL or GPU_OK. */
static gpu_status check(cudaError_t e, const char *what, char *err) {
    if (e == cudaSuccess) return GPU_OK;
    snprintf(err, GPU_ERRLEN, "%s: %s", what, cudaGetErrorString(e));
    return GPU_EFAIL;
}

extern "C" int gpu_built(void) { return 1; }

extern "C" gpu_status gpu_device_count(int *n, char *err) {
    *n = 0;
    cudaError_t e = cudaGetDeviceCount(n);
    if (e != cudaSuccess || *n == 0) {
        *n = 0;
        snprintf(err, GPU_ERRLEN, "no CUDA device: %s",
                 e == cudaSuccess ? "none found" : cudaGetErrorString(e));
        return GPU_ENODEV;
    }
    return GPU_OK;
}

/* Device buffers of one host thread, grown as needed and kept: synth calls
 * gpu_ewise for each node it evaluates (hundreds of thousands of calls at
 * depth 3), and a cudaMalloc/cudaFree pair per call would cost more than
 * the kernel. Freed when the process ends. */
struct dev_bufs {
    uint64_t *a, *b, *out;
    size_t cap; /* bytes of each */
};
static thread_local dev_bufs bufs;

static gpu_status reserve(size_t bytes, char *err) {
    if (bytes <= bufs.cap) return GPU_OK;
    cudaFree(bufs.a), cudaFree(bufs.b), cudaFree(bufs.out);
    bufs = dev_bufs{};
    size_t cap = bytes < 4096 ? 4096 : bytes;
    gpu_status rc = check(cudaMalloc(&bufs.a, cap), "cudaMalloc", err);
    if (!rc) rc = check(cudaMalloc(&bufs.b, cap), "cudaMalloc", err);
    if (!rc) rc = check(cudaMalloc(&bufs.out, cap), "cudaMalloc", err);
    if (!rc) bufs.cap = cap;
    return rc;
}

extern "C" gpu_status gpu_ewise(ops_op op, const uint64_t *a, const uint64_t *b,
                                uint64_t *out, int64_t n, char *err) {
    int devices;
    gpu_status rc = gpu_device_count(&devices, err);
    if (rc != GPU_OK) return rc;
    if (!gpu_is_ewise(op)) {
        snprintf(err, GPU_ERRLEN, "operator %d is not element-wise", (int)op);
        return GPU_EOP;
    }
    if (n <= 0) return GPU_OK;
    size_t bytes = (size_t)n * sizeof(uint64_t);
    size_t bbytes = op == OP_SMUL ? sizeof(uint64_t) : bytes;
    rc = reserve(bytes, err);
    if (!rc) rc = check(cudaMemcpy(bufs.a, a, bytes, cudaMemcpyHostToDevice), "copy in", err);
    if (!rc && b) rc = check(cudaMemcpy(bufs.b, b, bbytes, cudaMemcpyHostToDevice), "copy in", err);
    if (!rc) {
        int threads = 256;
        int blocks = (int)((n + threads - 1) / threads);
        ewise_kernel<<<blocks, threads>>>(op, bufs.a, b ? bufs.b : NULL, bufs.out, n);
        rc = check(cudaGetLastError(), "kernel launch", err);
    }
    if (!rc) rc = check(cudaMemcpy(out, bufs.out, bytes, cudaMemcpyDeviceToHost), "copy out", err);
    return rc;
}
