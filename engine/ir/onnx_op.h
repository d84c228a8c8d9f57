/* onnx_op.h - the ONNX operators the engine knows by name: one enum, one
 * name table. Every other per-operator table (shape rules and folding in
 * shapes/cnode.c, the model operators in graph.h, the operators that keep
 * values finite in fold/range.c) is indexed by this enum, so an ONNX
 * op_type is spelled once, here. */
#ifndef EG_ONNX_OP_H
#define EG_ONNX_OP_H

#define EG_OPSET_MIN 1  /* default-domain opsets whose operators are understood */
#define EG_OPSET_MAX 28 /* what onnx 1.23 writes by default */

/* ORDER XOP: alphabetical by ONNX name but for a few abbreviations; the
 * name table (onnx_op.c) follows this order. */
typedef enum {
    EG_X_ABS, EG_X_ACOS, EG_X_ACOSH, EG_X_ADD, EG_X_AND, EG_X_ARGMAX, EG_X_ARGMIN, EG_X_ASIN,
    EG_X_ASINH, EG_X_ATAN, EG_X_ATANH, EG_X_AVGPOOL, EG_X_BATCHNORM, EG_X_BERNOULLI, EG_X_BITSHIFT,
    EG_X_BITAND, EG_X_BITNOT, EG_X_BITOR, EG_X_BITXOR, EG_X_CAST, EG_X_CASTLIKE, EG_X_CEIL,
    EG_X_CELU, EG_X_CLIP, EG_X_CONCAT, EG_X_CONSTANT, EG_X_COFS, EG_X_CONV, EG_X_CONVT, EG_X_COS,
    EG_X_COSH, EG_X_CUMSUM, EG_X_D2S, EG_X_DEQUANT, EG_X_DET, EG_X_DIV, EG_X_DROPOUT,
    EG_X_DYNQUANT, EG_X_EINSUM, EG_X_ELU, EG_X_EQUAL, EG_X_ERF, EG_X_EXP, EG_X_EXPAND,
    EG_X_EYELIKE, EG_X_FLATTEN, EG_X_FLOOR, EG_X_GATHER, EG_X_GATHERELEM, EG_X_GATHERND, EG_X_GELU,
    EG_X_GEMM, EG_X_GAVGPOOL, EG_X_GLPPOOL, EG_X_GMAXPOOL, EG_X_GREATER, EG_X_GREATEREQ,
    EG_X_GRIDSAMPLE, EG_X_GROUPNORM, EG_X_GRU, EG_X_HARDMAX, EG_X_HARDSIGMOID, EG_X_HARDSWISH,
    EG_X_IDENTITY, EG_X_INSTNORM, EG_X_ISINF, EG_X_ISNAN, EG_X_LAYERNORM, EG_X_LEAKYRELU,
    EG_X_LESS, EG_X_LESSEQ, EG_X_LOG, EG_X_LOGSOFTMAX, EG_X_LPNORM, EG_X_LPPOOL, EG_X_LRN,
    EG_X_LSTM, EG_X_MATMUL, EG_X_MATMULINT, EG_X_MAX, EG_X_MAXPOOL, EG_X_MEAN, EG_X_MVN, EG_X_MIN,
    EG_X_MISH, EG_X_MOD, EG_X_MUL, EG_X_NEG, EG_X_NMS, EG_X_NONZERO, EG_X_NOT, EG_X_ONEHOT,
    EG_X_OR, EG_X_PAD, EG_X_POW, EG_X_PRELU, EG_X_QUANT, EG_X_RANDNLIKE, EG_X_RANDULIKE,
    EG_X_RANGE, EG_X_RECIPROCAL, EG_X_REDL1, EG_X_REDL2, EG_X_REDLOGSUM, EG_X_REDLOGSUMEXP,
    EG_X_REDMAX, EG_X_REDMEAN, EG_X_REDMIN, EG_X_REDPROD, EG_X_REDSUM, EG_X_REDSUMSQ, EG_X_RELU,
    EG_X_RESHAPE, EG_X_RESIZE, EG_X_REVSEQ, EG_X_RMSNORM, EG_X_RNN, EG_X_ROIALIGN, EG_X_ROUND,
    EG_X_SCATTERELEM, EG_X_SCATTERND, EG_X_SELU, EG_X_SHAPE, EG_X_SHRINK, EG_X_SIGMOID, EG_X_SIGN,
    EG_X_SIN, EG_X_SINH, EG_X_SIZE, EG_X_SLICE, EG_X_SOFTMAX, EG_X_SOFTPLUS, EG_X_SOFTSIGN,
    EG_X_S2D, EG_X_SPLIT, EG_X_SQRT, EG_X_SQUEEZE, EG_X_SUB, EG_X_SUM, EG_X_TAN, EG_X_TANH,
    EG_X_THRESHRELU, EG_X_TILE, EG_X_TOPK, EG_X_TRANSPOSE, EG_X_TRILU, EG_X_UNSQUEEZE,
    EG_X_UPSAMPLE, EG_X_WHERE, EG_X_XOR, EG_X_COUNT
} eg_xop;

/* The ONNX op_type of each operator. */
extern const char *const eg_xop_name[EG_X_COUNT];

/* The operator named op_type (default domain), or EG_X_COUNT. */
eg_xop eg_xop_of(const char *op_type);

#endif
