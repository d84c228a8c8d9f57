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

extern "C" gpu_status gpu_ewise(ops_op op, const uint64_t *a, const uint64_t *b,
                                uint64_t *out, int64_t n, char *err) {
    int devices;
    gpu_status rc = gpu_device_count(&devices, err);
    if (rc != GPU_OK) return rc;
    if (!gpu_is_ewise(op)) {
        snprintf(err, GPU_ERRLEN, "operator %d is not element-wise", (int)op);
        return GPU_EOP;
    }
    size_t bytes = (size_t)n * sizeof(uint64_t);
    size_t bbytes = op == OP_SMUL ? sizeof(uint64_t) : bytes;
    uint64_t *da = NULL, *db = NULL, *dout = NULL;
    rc = check(cudaMalloc(&da, bytes), "cudaMalloc", err);
    if (!rc && b) rc = check(cudaMalloc(&db, bbytes), "cudaMalloc", err);
    if (!rc) rc = check(cudaMalloc(&dout, bytes), "cudaMalloc", err);
    if (!rc) rc = check(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice), "copy in", err);
    if (!rc && b) rc = check(cudaMemcpy(db, b, bbytes, cudaMemcpyHostToDevice), "copy in", err);
    if (!rc) {
        int threads = 256;
        int blocks = (int)((n + threads - 1) / threads);
        ewise_kernel<<<blocks, threads>>>(op, da, db, dout, n);
        rc = check(cudaGetLastError(), "kernel launch", err);
    }
    if (!rc) rc = check(cudaMemcpy(out, dout, bytes, cudaMemcpyDeviceToHost), "copy out", err);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dout);
    return rc;
}
