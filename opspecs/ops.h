/* ops.h - the operator table: one enum shared by synth, prove and engine.
 *
 * Every per-operator fact lives in an array indexed by ops_op (ORDER OP):
 * name, arity, parameters and their kinds, flags, the ONNX ops it maps to.
 * Shape rules (ops_infer_shape, shape.c) and the exact reference semantics
 * over integers modulo 2^61-1 (ops_eval, sem.c) switch on the same enum
 * without a default case, so adding an operator makes the compiler list
 * every place to update.
 *
 * Example: the shape and value of relu(conv2d(x, w)) with stride 1, SAME
 * padding and no fused activation:
 *
 *     int32_t p[OPS_MAX_PARAMS] = {1, OPS_PAD_SAME, OPS_ACT_NONE, 1};
 *     ten_shape in[2] = {x.shape, w.shape}, out;
 *     char err[OPS_ERRLEN];
 *     if (ops_infer_shape(OP_CONV2D, p, in, &out, err) != OPS_OK)
 *         fprintf(stderr, "%s\n", err);
 *
 * Conventions that make the axioms hold exactly (see DESIGN.md):
 * - tensors are row-major; activations are NCHW, conv weights OIHW with
 *   I = C / groups;
 * - SAME padding is centred: pad_begin = (k-1)/2 and out = ceil(H/s), so a
 *   1x1 kernel and its enlarged 3x3 version look at the same centre for
 *   every stride (ONNX's SAME_UPPER does not have that property);
 * - avg pool divides by kh*kw, padding included;
 * - constants (imm, iconv, dwiconv, poolk, ones) take one "reference" input whose
 *   shape, never its values, fixes their own shape;
 * - split0/split1 carry their split point as an explicit size parameter.
 */
#ifndef OPS_H
#define OPS_H

#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

/* Bump when any operator's meaning changes: it is part of the digest, so
 * every ruledb made before the change is refused. */
#define OPS_SEMANTICS_VERSION 1

#define OPS_MAX_ARITY 2
#define OPS_MAX_PARAMS 4
#define OPS_ERRLEN 160

typedef enum { /* ORDER OP */
    OP_MATMUL,    /* [m,k] x [k,n] -> [m,n] */
    OP_BMM,       /* [b,h,m,k] x [b,h,k,n] -> [b,h,m,n]: a matmul per (b, h), the
                     batched MatMul of attention */
    OP_LINEAR,    /* [b,m,k] x [k,n] -> [b,m,n]: every [m,k] block by one matrix, the
                     projections of a transformer (ONNX MatMul of rank 3 by rank 2) */
    OP_CONV2D,    /* (stride, pad, act, groups; x NCHW, w OIHW) */
    OP_EWADD,     /* x + y, same shapes */
    OP_EWMUL,     /* x * y, same shapes */
    OP_SMUL,      /* x * s, s a rank-0 scalar tensor */
    OP_SADD,      /* x + s, s a rank-0 scalar tensor */
    OP_SDIV,      /* x / s, s a rank-0 scalar tensor; on residues x times the inverse
                     of s (of 0: 0) */
    OP_RELU,      /* elementwise: v if v is "non-negative" (v <= (p-1)/2) else 0 */
    OP_SIGMOID,   /* elementwise; on residues a fixed seeded function (cells.c) */
    OP_TANH,      /* elementwise; on residues a fixed seeded function */
    OP_ERF,       /* elementwise; on residues a fixed seeded function */
    OP_RELU6,     /* elementwise: relu, then at most 6 (ONNX Clip 0..6) */
    OP_HSIGMOID,  /* elementwise; torch's hardsigmoid; seeded on residues */
    OP_HSWISH,    /* elementwise; hardswish; seeded on residues */
    OP_NANZERO,   /* elementwise: 0 where x is NaN, else x (ONNX Where(IsNaN(x), 0, x),
                     the guard exporters put after attention's softmax); seeded on
                     residues, which have no NaN */
    OP_SOFTMAX,   /* (axis; x): each slice along axis as a whole; seeded on residues */
    OP_LAYERNORM, /* (axis, eps; x): each slice along axis to mean 0 and variance 1,
                     eps added to the variance (ONNX LayerNormalization without its
                     scale and bias); seeded on residues */
    OP_BIAS,      /* (axis; x, v): x + v broadcast along axis, v [x.dim[axis]] */
    OP_SCALE,     /* (axis; x, v): x * v broadcast along axis */
    OP_AVGPOOL,   /* (kernel, stride, pad; x NCHW) */
    OP_MAXPOOL,   /* (kernel, stride, pad; x NCHW), max over in-bounds cells */
    OP_CONCAT,    /* (axis; x, y) */
    OP_SPLIT0,    /* (axis, size; x): the first `size` slices along axis */
    OP_SPLIT1,    /* (axis, size; x): the rest */
    OP_TRANSPOSE, /* rank 2: [m,n] -> [n,m] */
    OP_PERMUTE,   /* (perm; x): the axes of x in the order perm names (ONNX
                     Transpose of rank 3 or 4; rank 2 is transpose) */
    OP_HEADS,     /* (heads; x [b,m,k]) -> [b,m,heads,k/heads], the same cells
                     (ONNX Reshape): attention's split of features into heads */
    OP_UNHEADS,   /* (heads; x [b,m,heads,d]) -> [b,m,heads*d], the same cells
                     (ONNX Reshape): the merge of the heads back */
    OP_ENLARGE,   /* (kernel; w OIHW): zero-pad kh x kw to the kernel size, centred */
    OP_IMM,       /* (; ref [m,n]): identity matrix [n,n] */
    OP_ICONV,     /* (kernel; ref NCHW): identity conv kernel [C,C,kh,kw] */
    OP_POOLK,     /* (kernel; ref NCHW): avg-pool kernel [C,C,kh,kw], 1/(kh*kw) on o==i */
    OP_ONES,      /* (; ref): all ones, the shape of ref */
    OP_KMUL,      /* (; v [O,M,a,b], w [M,I,c,d] or [M]) -> [O,I,kh,kw] or [O],
                     one of v and w 1x1 (v, for a vector w) and kh x kw the
                     other's: sum over m of v[o,m,..] w[m,..]: two convs in a
                     row, one of them 1x1, as one kernel; a bias moved through
                     a 1x1 conv */
    OP_EWSUB,     /* x - y, same shapes */
    OP_DWICONV,   /* (kernel; ref NCHW): depthwise identity conv kernel [C,1,kh,kw]
                     (a conv with groups C): 1 at the centre tap */
    OP_COUNT
} ops_op;

/* Parameter kinds; each has a value domain used by synth and by the
 * axiom checks (ops_pkind_domain). */
typedef enum { /* ORDER PKIND */
    PK_AXIS,   /* 0..rank-1 */
    PK_STRIDE, /* 1 or 2, both spatial dims */
    PK_PAD,    /* OPS_PAD_SAME or OPS_PAD_VALID */
    PK_ACT,    /* OPS_ACT_NONE or OPS_ACT_RELU */
    PK_KERNEL, /* OPS_KERNEL(kh, kw) */
    PK_GROUPS, /* conv groups, divides C and O */
    PK_SIZE,   /* a split point, bound from shapes */
    PK_EPS,    /* a float32 constant, held as its bits; free in rules */
    PK_PERM,   /* a permutation of the axes, packed (OPS_PERM) */
    PK_HEADS,  /* attention heads, >= 1; free in rules */
    PK_COUNT
} ops_pkind;

enum { OPS_PAD_SAME = 0, OPS_PAD_VALID = 1 };
enum { OPS_ACT_NONE = 0, OPS_ACT_RELU = 1 };

/* A permutation of rank r <= 4 packed in one parameter: r, then perm[a] in
 * three bits each, perm[0] highest; written as its digits ("0213"). */
#define OPS_PERM_RANK(v) ((int)((v) >> 12))
#define OPS_PERM_AT(v, a) ((int)(((v) >> (9 - 3 * (a))) & 7))
#define OPS_PERM4(a, b, c, d) ((4 << 12) | ((a) << 9) | ((b) << 6) | ((c) << 3) | (d))

/* A kernel size packed in one parameter: kh in the high byte. */
#define OPS_KERNEL(kh, kw) (((kh) << 8) | (kw))
#define OPS_KERNEL_H(k) ((k) >> 8)
#define OPS_KERNEL_W(k) ((k) & 0xff)

/* Operator flags. */
#define OPF_CONST 1u       /* reads only the shape of its input */
#define OPF_ELEMENTWISE 2u /* output cell i depends on input cells i only */
#define OPF_COMMUTATIVE 4u /* f(x, y) == f(y, x) */

/* What a value is, for synth's typed enumeration (a weight never meets an
 * activation in an ewadd): the `kinds` column says which kinds an
 * operator takes and which it makes. Not part of the digest: kinds steer
 * enumeration, never a rule's meaning. */
typedef enum { /* ORDER KIND */
    OPS_KIND_SCALAR,
    OPS_KIND_MATRIX, /* [m,n] */
    OPS_KIND_ACT,    /* NCHW activation */
    OPS_KIND_WEIGHT, /* OIHW conv weight */
    OPS_KIND_VECTOR, /* [n]: a bias or a per-channel scale */
    OPS_KIND_COUNT
} ops_kind;

#define OPS_KM(k) (1u << (k))
#define OPS_KM_TENSOR                                                                      \
    (OPS_KM(OPS_KIND_MATRIX) | OPS_KM(OPS_KIND_ACT) | OPS_KM(OPS_KIND_WEIGHT) |             \
     OPS_KM(OPS_KIND_VECTOR))
#define OPS_KM_ANY (OPS_KM_TENSOR | OPS_KM(OPS_KIND_SCALAR))
#define OPS_KM_SAME 0x80u /* in1: exactly input 0's kind */
#define OPS_OUT_IN0 (-1)  /* out: input 0's kind */
#define OPS_OUT_IN1 (-2)  /* out: input 1's kind */

typedef struct {
    unsigned in0, in1; /* masks of OPS_KM(kind); in1 unused by unary operators */
    int out;           /* an ops_kind, OPS_OUT_IN0 or OPS_OUT_IN1 */
} ops_kinds;

/* The family an operator belongs to: its shape rule, its kernel, its Z3
 * shape encoding, synth's split-point bookkeeping, its cost class and its
 * ONNX export form are decided per form, not per operator, so a new
 * operator of an existing form (another activation, another element-wise
 * product) needs no code outside its table row and its cell functions. */
typedef enum { /* ORDER FORM */
    OPS_FORM_MAP,       /* unary element-wise: y[i] = cell(x[i]), any shape */
    OPS_FORM_ZIP,       /* binary element-wise over equal shapes: cell2(x[i], y[i]) */
    OPS_FORM_SCALE,     /* cell2(x[i], s), s a rank-0 scalar */
    OPS_FORM_CHANNEL,   /* (axis; x, v): cell2(x[.., c, ..], v[c]), v [x.dim[axis]] */
    OPS_FORM_ROW,       /* (axis; x): row(the slice of x along axis), x's shape */
    OPS_FORM_MATMUL,    /* [m,k] x [k,n] */
    OPS_FORM_BMM,       /* [b,h,m,k] x [b,h,k,n] */
    OPS_FORM_LINEAR,    /* [b,m,k] x [k,n] */
    OPS_FORM_CONV,      /* conv2d */
    OPS_FORM_POOL,      /* avgpool, maxpool */
    OPS_FORM_CONCAT,    /* (axis; x, y) */
    OPS_FORM_SPLIT,     /* split0, split1 */
    OPS_FORM_TRANSPOSE, /* rank 2 */
    OPS_FORM_PERMUTE,   /* (perm; x): axis a of the result is axis perm[a] of x */
    OPS_FORM_HEADS,     /* heads, unheads: x's cells in a new shape (a reshape) */
    OPS_FORM_ENLARGE,   /* zero-pad a conv kernel */
    OPS_FORM_IMM,       /* identity matrix from a [m,n] reference */
    OPS_FORM_CKERNEL,   /* [C,C,kh,kw] ([C,1,kh,kw] depthwise) constant kernels from an NCHW reference */
    OPS_FORM_ONES,      /* all ones, the shape of the reference */
    OPS_FORM_KMUL,      /* a 1x1 kernel [O,M,1,1] x [M,I,1,1] or [M] */
    OPS_FORM_COUNT
} ops_form;

/* The cell functions of the element-wise forms (MAP: cell; ZIP, SCALE,
 * CHANNEL: cell2) and the row functions of ROW (n cells, `stride` apart,
 * into y at the same places; p: the operator's parameters), once over residues modulo 2^61-1 (the exact
 * semantics) and once over float32 (the engine's evaluator). Defined in
 * cells.c, the one file that holds what these operators compute. */
typedef struct {
    uint64_t (*cell)(uint64_t x);
    uint64_t (*cell2)(uint64_t x, uint64_t y);
    void (*row)(const uint64_t *x, uint64_t *y, int64_t n, int64_t stride, const int32_t *p);
    float (*fcell)(float x);
    float (*fcell2)(float x, float y);
    void (*frow)(const float *x, float *y, int64_t n, int64_t stride, const int32_t *p);
} ops_cells;

extern const ops_cells ops_cell_table[OP_COUNT];

/* What a constant operator (OPF_CONST) reads of its reference input:
 * prove encodes it as a function of exactly that. */
typedef enum { OPS_REF_NONE, OPS_REF_DIM1, OPS_REF_SHAPE } ops_ref;

/* A float constant the ONNX spelling of an operator carries: Clip's min
 * and max, HardSigmoid's alpha and beta. */
typedef struct {
    const char *name; /* the attribute name; NULL ends the list */
    float value;
    int is_default;   /* 1: ONNX's default for the attribute is this value, so
                         an absent attribute means it (torch omits beta 0.5) */
} ops_onnx_const;

typedef struct {
    const char *name;                   /* as written in axioms and ruledb dumps */
    int arity;                          /* tensor inputs */
    int n_params;
    ops_pkind pkind[OPS_MAX_PARAMS];
    const char *pname[OPS_MAX_PARAMS];
    unsigned flags;
    const char *onnx;                   /* the ONNX op(s) it maps to */
    ops_kinds kinds;                    /* what synth may feed it and gets back */
    ops_ref ref;                        /* constants: what they read of input 0 */
    ops_form form;                      /* the family: shape rule, kernel, export */
    double flops;                       /* element-wise forms: cost per output cell */
    ops_onnx_const onnx_const[2];       /* maps: the ONNX node's float constants,
                                           which import requires exactly */
    int onnx_const_inputs_since;        /* from this opset the constants are
                                           inputs after x, in order, not
                                           attributes (Clip: 11); 0: never */
} ops_info;

extern const ops_info ops_table[OP_COUNT];

/* The constant kernels (OPS_FORM_CKERNEL) differ in two ways: depthwise
 * ([C,1,kh,kw], read by a conv with groups C) or dense ([C,C,kh,kw]); an
 * identity (1 at the centre tap, so the kernel must have a centre) or the
 * average pool's 1/(kh*kw) on every tap. */
static inline int ops_ckernel_depthwise(ops_op op) { return op == OP_DWICONV; }
static inline int ops_ckernel_identity(ops_op op) { return op == OP_ICONV || op == OP_DWICONV; }

/* A set of operators, one bit each (synth's --ops, a ruledb's generator). */
typedef uint64_t ops_set;
#define OPS_SET_BIT(op) ((ops_set)1 << (op))
#define OPS_SET_ALL ((ops_set)(((ops_set)1 << (OP_COUNT - 1)) * 2 - 1))
/* ops.c asserts OP_COUNT <= 64 (this header is also read by nvcc). */

/* 1 when op's output always has input 0's shape (from its form). */
int ops_shape_of_in0(ops_op op);

typedef struct {
    const char *name;
    const int32_t *values;  /* the domain synth enumerates and tests sample */
    int n_values;
    int shape_literal;      /* 1: shape rules depend on its value, so prove
                               writes one shape axiom per value of the domain */
    int free;               /* 1: a rule holds for every value (no axiom or
                               shape rule names one): prove takes each value a
                               rule writes as an unknown constant, and the
                               engine matches any value, the same wherever the
                               rule writes the same one, and copies it into
                               the replacement. The domain is one value, a
                               label, and the digest leaves it out. */
    int positive;           /* 1: prove takes any value >= 1, the domain being
                               only what synth enumerates and tests sample
                               (groups: an axiom proved for groups g holds
                               for 4, 32 or a depthwise conv's channels) */
} ops_pkind_info;

extern const ops_pkind_info ops_pkind_table[PK_COUNT];

/* Status codes; OPS_OK is 0. */
typedef enum {
    OPS_OK = 0,
    OPS_ESHAPE,  /* input shapes invalid for the operator */
    OPS_EPARAM,  /* a parameter outside its domain */
    OPS_ENOMEM
} ops_status;

/* Look an operator up by name.
 * @return the operator, or OP_COUNT when the name is unknown. */
ops_op ops_by_name(const char *name);

/* Render a parameter value for humans and for the axiom syntax:
 * "SAME", "RELU", "3x1", or the decimal number.
 * @pre buf has at least 16 bytes. @return buf */
const char *ops_param_str(ops_pkind kind, int32_t value, char *buf);

/* A PK_EPS parameter's float and back (its bits, so any float32 is exact). */
float ops_eps_value(int32_t v);
int32_t ops_eps_param(float f);
/* 1 when v is an eps opspecs accepts: a finite float >= 0. */
int ops_eps_ok(int32_t v);
/* 1 when v is a packed permutation of rank 2..4 (OPS_PERM_RANK). */
int ops_perm_ok(int32_t v);

/* Parse what ops_param_str writes. @return OPS_OK or OPS_EPARAM */
ops_status ops_param_parse(ops_pkind kind, const char *s, int32_t *value);

/* The digest of the operator table and OPS_SEMANTICS_VERSION: XXH3-128 of
 * a canonical description, big-endian. A ruledb records it; a reader
 * refuses a file whose digest differs. Parameter domains are left out:
 * widening one changes no rule's meaning. */
void ops_digest(uint8_t out[16]);

/* Shape function (shape.c).
 * @pre param has ops_table[op].n_params meaningful entries, in has arity
 *      entries.
 * @return OPS_OK and *out set; or OPS_ESHAPE / OPS_EPARAM with a one-line
 *         message in err (names the operator and the offending dims); err
 *         may be NULL (no message: the engine's matcher asks only yes or
 *         no, tens of thousands of times a second). */
ops_status ops_infer_shape(ops_op op, const int32_t *param,
                           const ten_shape *in, ten_shape *out,
                           char err[OPS_ERRLEN]);

/* Reference semantics (sem.c): exact arithmetic modulo MP_P.
 * @pre ops_infer_shape succeeded for these inputs and out->shape is its
 *      result; out->data has ten_numel(&out->shape) cells and overlaps no
 *      input's data.
 * @return OPS_OK, or OPS_ENOMEM if scratch space could not be allocated. */
ops_status ops_eval(ops_op op, const int32_t *param,
                    const ten *const *in, ten *out);

#endif
