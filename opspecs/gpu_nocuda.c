/* gpu_nocuda.c - the CUDA backend's entry points in a build without nvcc:
 * each reports that the backend is not built (see gpu.h). */
#include <stdio.h>

#include "gpu.h"

int gpu_built(void) { return 0; }

gpu_status gpu_device_count(int *n, char err[GPU_ERRLEN]) {
    *n = 0;
    snprintf(err, GPU_ERRLEN, "built without CUDA (re-run ./configure where nvcc exists)");
    return GPU_ENOTBUILT;
}

gpu_status gpu_ewise(ops_op op, const uint64_t *a, const uint64_t *b,
                     uint64_t *out, int64_t n, char err[GPU_ERRLEN]) {
    (void)op, (void)a, (void)b, (void)out, (void)n;
    int devices;
    return gpu_device_count(&devices, err);
}
