/* gpu.h - the CUDA backend of the reference semantics.
 *
 * Element-wise operators evaluated on a device. The cell arithmetic is
 * gpu_cell below, compiled for host and device from this one header, so
 * the CPU tests exercise exactly what the kernels compute. Without a
 * device (or without nvcc at build time) every entry point returns a
 * status and a message instead of failing later: callers select this
 * backend at run time, only when gpu_device_count says a device exists.
 *
 * Example:
 *     int n; char err[GPU_ERRLEN];
 *     if (gpu_device_count(&n, err) != GPU_OK || n == 0) use the CPU;
 *     else gpu_ewise(OP_EWADD, a, b, out, cells, err);
 */
#ifndef GPU_H
#define GPU_H

#include <stdint.h>

#include "modp.h"
#include "ops.h"

#define GPU_ERRLEN 160

typedef enum {
    GPU_OK = 0,
    GPU_ENOTBUILT, /* compiled without CUDA */
    GPU_ENODEV,    /* no CUDA device, or the driver is missing */
    GPU_EOP,       /* the operator is not element-wise */
    GPU_EFAIL      /* a CUDA call failed; err says which */
} gpu_status;

/* 1 when gpu_cell computes op (element-wise ops with one or two inputs). */
MP_FN int gpu_is_ewise(int op) {
    return op == OP_EWADD || op == OP_EWMUL || op == OP_SMUL || op == OP_RELU;
}

/* One output cell of an element-wise operator; b is the second input's
 * cell (the scalar for smul) and is ignored by unary operators.
 * @pre gpu_is_ewise(op) */
MP_FN uint64_t gpu_cell(int op, uint64_t a, uint64_t b) {
    if (op == OP_EWADD) return mp_add(a, b);
    if (op == OP_RELU) return mp_relu(a);
    return mp_mul(a, b); /* OP_EWMUL, OP_SMUL */
}

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this build has the CUDA backend compiled in. */
int gpu_built(void);

/* Number of usable CUDA devices.
 * @return GPU_OK with *n >= 1; GPU_ENODEV / GPU_ENOTBUILT with *n = 0 and
 *         a message in err. */
gpu_status gpu_device_count(int *n, char err[GPU_ERRLEN]);

/* out[i] = gpu_cell(op, a[i], b[smul ? 0 : i]) for i < n, on the device.
 * b may be NULL for unary operators.
 * @return GPU_OK, or an error status with a message in err. */
gpu_status gpu_ewise(ops_op op, const uint64_t *a, const uint64_t *b,
                     uint64_t *out, int64_t n, char err[GPU_ERRLEN]);

#ifdef __cplusplus
}
#endif

#endif
