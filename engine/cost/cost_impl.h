/* cost_impl.h - internal to the cost model (cost.c, cost_cpu.c,
 * cost_cuda.cu / cost_nocuda.c): the kernel descriptor a node is reduced
 * to, and the measuring backends' entry points. Plain C, no graph.h, so
 * the CUDA translation unit can include it. Not installed. */
#ifndef EG_COST_IMPL_H
#define EG_COST_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What kind of kernel a node runs. ORDER KCLASS */
typedef enum {
    EG_KC_FREE,  /* a constant (imm, iconv, poolk, ones): cost 0 */
    EG_KC_CONV,  /* 2-D convolution, NCHW x OIHW, groups */
    EG_KC_GEMM,  /* batch x ([m,k] x [k,n]) */
    EG_KC_POOL,  /* 2-D max / average pooling */
    EG_KC_EWISE, /* element-wise arithmetic (see eg_cost_ew) */
    EG_KC_MOVE,  /* a copy of bytes (concat, reshape, identity, enlarge...) */
    EG_KC_TRANS, /* batch x [m,n] -> [n,m] with strided reads */
    EG_KC_VIEW,  /* split0/split1: a view in a fused runtime */
    EG_KC_COUNT
} eg_cost_kclass;

/* Element-wise flavours (EG_KC_EWISE). ORDER EW */
typedef enum {
    EG_EW_ADD,     /* out = a + b */
    EG_EW_MUL,     /* out = a * b */
    EG_EW_SCALE,   /* out = a * s (scalar) */
    EG_EW_RELU,
    EG_EW_SIGMOID,
    EG_EW_TANH,
    EG_EW_BNORM,   /* out = a * scale[c] + shift[c] */
    EG_EW_SOFTMAX, /* rows of length `inner` */
    EG_EW_GAP,     /* global average pool: mean of each `inner` block */
    EG_EW_COUNT
} eg_cost_ew;

typedef struct {
    eg_cost_kclass cls;
    eg_cost_ew ew;        /* EG_KC_EWISE */
    /* conv and pool: input [n,c,h,w], output [n,o,oh,ow] (pool: o == c),
     * kernel kh x kw, strides, pads top/left/bottom/right, groups. */
    int64_t n, c, h, w, o, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr, group;
    int avg;              /* pool: 0 max, 1 average counting the padding,
                             2 average over in-bounds cells only */
    int bias;             /* conv: a bias is added */
    /* gemm: batch x [m,k] x [k,n] (ta/tb: A stored [k,m], B stored [n,k]);
     * trans: batch x [m,nn] */
    int64_t batch, m, nn, k;
    int ta, tb;
    int64_t out_elems;    /* output elements */
    int64_t in_elems;     /* elements read (all inputs) */
    int64_t inner;        /* softmax row / gap block length */
    double flops;         /* arithmetic operations */
    double bytes;         /* bytes read + written */
    int extra;            /* kernels the export adds around it (a layernorm's
                             two Transposes); their traffic is in bytes */
    int general;          /* trans: a permutation of three blocks or more
                             (0321), not a batched two-block swap (0132,
                             0213, 0231): onnxruntime's slow path */
} eg_cost_kern;

/* The kernel classes analytic-cpu's constants are fitted for, by
 * bench/calibrate.py against onnxruntime (cost_calib.h). ORDER CAL */
typedef enum {
    EG_CAL_CONV1,  /* 1x1 convolution, groups 1 */
    EG_CAL_CONV,   /* a larger kernel, groups 1 */
    EG_CAL_DWCONV, /* depthwise: one group per input channel */
    EG_CAL_GCONV,  /* other grouped convolutions */
    EG_CAL_GEMM,   /* matmul, gemm, batched */
    EG_CAL_POOL,   /* max / average pooling */
    EG_CAL_EW,     /* add, mul, scale, relu */
    EG_CAL_EWMATH, /* sigmoid, tanh */
    EG_CAL_BNORM,  /* per-channel scale and shift */
    EG_CAL_ROWS,   /* softmax, layer norm */
    EG_CAL_GAP,    /* global average pool */
    EG_CAL_MOVE,   /* concat, split, enlarge: bytes copied */
    EG_CAL_TRANS,  /* transposes that swap two blocks (batched) */
    EG_CAL_TRANSN, /* other permutations */
    EG_CAL_VIEW,   /* split0/split1 */
    EG_CAL_COUNT
} eg_cost_cal;

/* One class's constants: us = launch_us + flops * us_per_flop + bytes *
 * us_per_byte. */
typedef struct {
    double launch_us, us_per_flop, us_per_byte;
} eg_cost_calib;

/* k's class, or -1 for a kernel that costs nothing (EG_KC_FREE). */
int eg_cost_cal_of(const eg_cost_kern *k);

/* ---- the cache reader (cost.c), for eg_cost_new and the fuzz target ---- */

struct eg_cost;

/* Add the records of a cache file read from f (see cost.h) to c; name is
 * used in messages ("NAME:LINE: ..."). On an error the records before the
 * bad line may have been added.
 * @return an eg_status: EG_OK, EG_EFORMAT, EG_EIO, EG_ENOMEM, EG_ELIMIT. */
int eg_cost_load_stream(struct eg_cost *c, FILE *f, const char *name, char *err,
                        size_t errlen);

/* ---- CPU backend (cost_cpu.c) ---- */

typedef struct eg_cost_cpu eg_cost_cpu;

/* Set up oneDNN (engine, stream) and OpenBLAS, one thread each.
 * @return 0, or -1 with a message in err. */
int eg_cost_cpu_new(eg_cost_cpu **out, char *err, size_t errlen);
/* Run the kernel on random inputs: warm-up, then the median of repeats.
 * @return microseconds, or -1 when it cannot be run here (allocation,
 *         a shape oneDNN refuses): the caller falls back to analytic. */
double eg_cost_cpu_time(eg_cost_cpu *c, const eg_cost_kern *k);
void eg_cost_cpu_free(eg_cost_cpu *c);
/* The CPU model from /proc/cpuinfo ("unknown-cpu" when absent), spaces
 * kept. @return buf */
const char *eg_cost_cpu_machine(char *buf, size_t len);

/* ---- onnxruntime backend (cost_ort.c) ---- */

struct eg_graph;
typedef struct eg_cost_ort eg_cost_ort;

/* Start the timing helper (engine/cost/ort_cost.py) with `threads` intra-op
 * threads; the interpreter is $TASOC_PYTHON, else python3. machine gets
 * "onnxruntime VERSION, T thread(s), CPU MODEL": the cache file's machine
 * id, since times transfer across none of the three.
 * @return 0, or -1 with the reason in err (no interpreter, no
 *         onnxruntime: how to install it). */
int eg_cost_ort_new(int threads, eg_cost_ort **out, char *machine, size_t mlen, char *err,
                    size_t errlen);
/* Time g's nodes[0..n) (one node, or a node and the nodes onnxruntime
 * fuses into it, each reading the one before) as one small model; wo
 * (eg_mark_weight_only, may be NULL) tells which computed inputs are
 * weights. @return microseconds, or -1 when it cannot be timed (the model
 * cannot be written, onnxruntime refuses it, the helper is gone): the
 * caller falls back to a roofline. */
double eg_cost_ort_time(eg_cost_ort *o, const struct eg_graph *g, const int *nodes, int n,
                        const unsigned char *wo);
void eg_cost_ort_free(eg_cost_ort *o);

/* ---- CUDA backend (cost_cuda.cu, or cost_nocuda.c) ---- */

typedef struct eg_cost_cuda eg_cost_cuda;

/* @return 0 with *out set and the device name in machine; -1 with a
 *         message in err when CUDA is not built in or no device exists. */
int eg_cost_cuda_new(eg_cost_cuda **out, char *machine, size_t mlen, char *err,
                     size_t errlen);
/* @return microseconds on the device, or -1 (fall back to analytic). */
double eg_cost_cuda_time(eg_cost_cuda *c, const eg_cost_kern *k);
void eg_cost_cuda_free(eg_cost_cuda *c);

#ifdef __cplusplus
}
#endif

#endif
