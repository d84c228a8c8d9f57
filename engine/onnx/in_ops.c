/* in_ops.c - ONNX import of model operators: which operator a node is, its
 * attributes read and checked against what the model operator covers (in_int.h). */
#include <stdint.h>
#include <string.h>

#include "onnx/in_int.h"

#define ATTR_MAX (1 << 20)         /* kernel, stride, pad values */

/* ================= attributes ================= */


/* Every attribute named in list (NULL-terminated), none a reference to a
 * function attribute. */
static int only_attrs(const Onnx__NodeProto *np, const char *const *list) {
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        int known = 0;
        if (a->ref_attr_name || !a->name) return 0;
        for (int k = 0; list[k] && !known; k++) known = strcmp(list[k], a->name) == 0;
        if (!known) return 0;
    }
    return 1;
}

/* An int attribute in [lo, hi], def when absent. @return 0, or -1. */
static int get_int(const Onnx__NodeProto *np, const char *name, int64_t def, int64_t lo,
                   int64_t hi, int64_t *v) {
    const Onnx__AttributeProto *a = egp_attr(np, name);
    *v = def;
    if (!a) return 0;
    if (!egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) || a->i < lo || a->i > hi) return -1;
    *v = a->i;
    return 0;
}

/* An ints attribute with n entries in [lo, hi] each; *n = -1 when absent
 * (v untouched). @return 0, or -1 when malformed or more than max. */
static int get_ints(const Onnx__NodeProto *np, const char *name, int max, int64_t lo, int64_t hi,
                    int64_t *v, int *n) {
    const Onnx__AttributeProto *a = egp_attr(np, name);
    *n = -1;
    if (!a) return 0;
    if (!egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) || a->n_ints > (size_t)max) return -1;
    for (size_t i = 0; i < a->n_ints; i++)
        if (a->ints[i] < lo || a->ints[i] > hi) return -1;
    if (a->n_ints) memcpy(v, a->ints, sizeof(int64_t) * a->n_ints);
    *n = (int)a->n_ints;
    return 0;
}

static int get_float(const Onnx__NodeProto *np, const char *name, float def, float *v) {
    const Onnx__AttributeProto *a = egp_attr(np, name);
    *v = def;
    if (!a) return 0;
    if (!egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) return -1;
    *v = a->f;
    return 0;
}

/* A string attribute equal to one of the choices: its index, def when
 * absent, -1 otherwise. */
static int get_choice(const Onnx__NodeProto *np, const char *name, int def, const char *const *choice) {
    const Onnx__AttributeProto *a = egp_attr(np, name);
    if (!a) return def;
    if (!egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)) return -1;
    for (int k = 0; choice[k]; k++)
        if (a->s.len == strlen(choice[k]) && (!a->s.len || !memcmp(a->s.data, choice[k], a->s.len)))
            return k;
    return -1;
}

/* ================= model operators ================= */

/* kernel_shape, strides, pads, dilations (all 1), auto_pad of a 2-D window
 * op. @return 1 when understood. */
static int parse_window(const Onnx__NodeProto *np, eg_attrs *a, int need_kernel) {
    static const char *const autopad[] = {"NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER", NULL};
    int64_t v[4];
    int n;
    if (get_ints(np, "kernel_shape", 2, 1, ATTR_MAX, v, &n) || (n >= 0 && n != 2) ||
        (n < 0 && need_kernel))
        return 0;
    if (n == 2) a->kernel[0] = (int32_t)v[0], a->kernel[1] = (int32_t)v[1];
    a->stride[0] = a->stride[1] = 1;
    if (get_ints(np, "strides", 2, 1, ATTR_MAX, v, &n) || (n >= 0 && n != 2)) return 0;
    if (n == 2) a->stride[0] = (int32_t)v[0], a->stride[1] = (int32_t)v[1];
    if (get_ints(np, "pads", 4, 0, ATTR_MAX, v, &n) || (n >= 0 && n != 4)) return 0;
    for (int i = 0; i < 4 && n == 4; i++) a->pad[i] = (int32_t)v[i];
    if (get_ints(np, "dilations", 2, 1, 1, v, &n) || (n >= 0 && n != 2)) return 0;
    int ap = get_choice(np, "auto_pad", 0, autopad);
    if (ap < 0) return 0;
    if (ap >= 2) memset(a->pad, 0, sizeof a->pad);
    if (ap == 3) a->flags |= EG_AF_AUTO_UPPER;
    if (ap == 4) a->flags |= EG_AF_AUTO_LOWER;
    return 1;
}

static int parse_conv(const Onnx__NodeProto *np, eg_attrs *a) {
    static const char *const ok[] = {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad", NULL};
    int64_t group;
    if (!only_attrs(np, ok) || !parse_window(np, a, 0) || get_int(np, "group", 1, 1, ATTR_MAX, &group))
        return 0;
    a->group = (int32_t)group;
    return 1;
}

static int parse_pool(const Onnx__NodeProto *np, eg_attrs *a, int avg) {
    static const char *const okmax[] = {"kernel_shape", "strides", "pads", "dilations", "auto_pad",
                                        "ceil_mode", "storage_order", NULL};
    static const char *const okavg[] = {"kernel_shape", "strides", "pads", "dilations", "auto_pad",
                                        "ceil_mode", "count_include_pad", NULL};
    int64_t ceil, cip, order;
    if (!only_attrs(np, avg ? okavg : okmax) || !parse_window(np, a, 1)) return 0;
    if (get_int(np, "ceil_mode", 0, 0, 1, &ceil) || get_int(np, "storage_order", 0, 0, 1, &order) ||
        get_int(np, "count_include_pad", 0, 0, 1, &cip))
        return 0;
    if (cip) a->flags |= EG_AF_COUNT_PAD;
    if (ceil) a->flags |= EG_AF_CEIL; /* infer.c: modelled only where floor agrees */
    return 1;
}

/* Before opset 7 (Gemm-1, Gemm-6) C is broadcast only with broadcast = 1,
 * in the legacy way (EG_AF_LEGACY_BCAST: infer.c keeps it where that is
 * numpy's broadcast). */
static int parse_gemm(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    static const char *const ok[] = {"alpha", "beta", "transA", "transB", NULL};
    static const char *const ok6[] = {"alpha", "beta", "transA", "transB", "broadcast", NULL};
    int64_t ta, tb, bc;
    if (!only_attrs(np, opset < 7 ? ok6 : ok) || get_int(np, "broadcast", 0, 0, 1, &bc)) return 0;
    if (bc) a->flags |= EG_AF_LEGACY_BCAST;
    if (get_float(np, "alpha", 1.0f, &a->alpha) ||
        get_float(np, "beta", 1.0f, &a->beta) || get_int(np, "transA", 0, 0, 1, &ta) ||
        get_int(np, "transB", 0, 0, 1, &tb))
        return 0;
    a->flags |= (ta ? EG_AF_TRANS_A : 0) | (tb ? EG_AF_TRANS_B : 0);
    return 1;
}

/* An `axis` attribute; required when def is INT64_MIN. */
static int parse_axis(const Onnx__NodeProto *np, eg_attrs *a, int64_t def) {
    static const char *const ok[] = {"axis", NULL};
    int64_t v;
    if (!only_attrs(np, ok) || get_int(np, "axis", def, -EG_MAX_RANK, EG_MAX_RANK, &v) ||
        v == INT64_MIN)
        return 0;
    a->axis = (int32_t)v;
    return 1;
}

/* Add, Mul: before opset 7 numpy broadcasting did not exist; broadcast = 1
 * (with an optional axis) broadcast B to A in the legacy way, which
 * infer.c keeps only where numpy's agrees. consumed_inputs (before 6) is
 * an in-place hint with no meaning. */
static int parse_binary(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    static const char *const ok[] = {"broadcast", "axis", "consumed_inputs", NULL};
    int64_t bc, axis;
    if (opset >= 7) return np->n_attribute == 0;
    if (!only_attrs(np, ok) || (opset >= 6 && egp_attr(np, "consumed_inputs")) ||
        get_int(np, "broadcast", 0, 0, 1, &bc) ||
        get_int(np, "axis", INT64_MIN, -EG_MAX_RANK, EG_MAX_RANK, &axis))
        return 0;
    if (bc) a->flags |= EG_AF_LEGACY_BCAST;
    if (bc && axis != INT64_MIN) a->flags |= EG_AF_HAS_AXIS, a->axis = (int32_t)axis;
    return 1;
}

/* Relu, Sigmoid, Tanh, Sum: consumed_inputs (before opset 6) is ignored. */
static int parse_unary(const Onnx__NodeProto *np, int opset) {
    static const char *const ok[] = {"consumed_inputs", NULL};
    return opset < 6 ? only_attrs(np, ok) : np->n_attribute == 0;
}

static int parse_split(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    static const char *const ok[] = {"axis", "split", "num_outputs", NULL};
    int64_t axis, nout;
    int n;
    if (!only_attrs(np, ok) || np->n_output < 1 || np->n_output > 4096 ||
        get_int(np, "axis", 0, -EG_MAX_RANK, EG_MAX_RANK, &axis) ||
        get_ints(np, "split", EG_MAX_INTS, 0, EG_DIM_MAX, a->ints, &n) ||
        get_int(np, "num_outputs", -1, 1, 4096, &nout))
        return 0;
    if ((n >= 0 && opset >= 13) || (nout >= 0 && (opset < 18 || nout != (int64_t)np->n_output)))
        return 0;
    if (np->n_input > 1 && opset < 13) return 0;
    a->axis = (int32_t)axis;
    if (n >= 0) a->flags |= EG_AF_INTS, a->n_ints = n;
    if (nout >= 0) a->flags |= EG_AF_NUM_OUTPUTS;
    return 1;
}

static int parse_transpose(const Onnx__NodeProto *np, eg_attrs *a) {
    static const char *const ok[] = {"perm", NULL};
    int n;
    if (!only_attrs(np, ok) || get_ints(np, "perm", EG_MAX_RANK, 0, EG_MAX_RANK - 1, a->ints, &n))
        return 0;
    if (n >= 0) a->flags |= EG_AF_INTS, a->n_ints = n;
    return 1;
}

/* Reshape-1 (opsets 1..4) takes the target shape as an attribute (into
 * ints, EG_AF_INTS); from 5 it is the second input. */
static int parse_reshape(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    static const char *const ok[] = {"allowzero", NULL};
    static const char *const ok1[] = {"shape", "consumed_inputs", NULL};
    int64_t z;
    int n;
    if (opset < 5) {
        if (!only_attrs(np, ok1) || get_ints(np, "shape", EG_MAX_RANK, -1, EG_DIM_MAX, a->ints, &n) ||
            n < 0)
            return 0;
        a->flags |= EG_AF_INTS, a->n_ints = n;
        return 1;
    }
    if (!only_attrs(np, ok) || get_int(np, "allowzero", 0, 0, 1, &z)) return 0;
    if (z) a->flags |= EG_AF_ALLOWZERO;
    return 1;
}

/* Inference only: spatial = 1 before opset 9, training_mode = 0, one
 * output; in opset 6 is_test = 1 (its default 0 is training). Opsets 1..5
 * (consumed_inputs required) stay opaque (eg_mop_table's opsets). */
static int parse_batchnorm(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    static const char *const ok[] = {"epsilon", "momentum", "spatial", "training_mode", NULL};
    static const char *const ok6[] = {"epsilon", "momentum", "spatial", "is_test", NULL};
    int64_t spatial, training, is_test;
    float momentum;
    if (opset < 7 && (get_int(np, "is_test", 0, 0, 1, &is_test) || !is_test)) return 0;
    if (!only_attrs(np, opset < 7 ? ok6 : ok) || get_float(np, "epsilon", 1e-5f, &a->epsilon) ||
        get_float(np, "momentum", 0.9f, &momentum) || get_int(np, "spatial", 1, 1, 1, &spatial) ||
        get_int(np, "training_mode", 0, 0, 0, &training))
        return 0;
    return 1;
}

/* LayerNormalization: stash_type 1 (float32 statistics) is what the
 * kernels compute; the Mean and InvStdDev outputs are refused by arity.
 * Any epsilon is read; lowering takes only what opspecs accepts. */
static int parse_layernorm(const Onnx__NodeProto *np, eg_attrs *a) {
    static const char *const ok[] = {"axis", "epsilon", "stash_type", NULL};
    int64_t axis, stash;
    if (!only_attrs(np, ok) || get_int(np, "axis", -1, -EG_MAX_RANK, EG_MAX_RANK, &axis) ||
        get_float(np, "epsilon", 1e-5f, &a->epsilon) || get_int(np, "stash_type", 1, 1, 1, &stash))
        return 0;
    a->axis = (int32_t)axis;
    return 1;
}

static int no_attrs(const Onnx__NodeProto *np) { return np->n_attribute == 0; }


static int parse_attrs(const Onnx__NodeProto *np, int opset, eg_mop mop, eg_attrs *a) {
    switch (mop) {
    case EG_MOP_CONV: return parse_conv(np, a);
    case EG_MOP_MAXPOOL: return parse_pool(np, a, 0);
    case EG_MOP_AVGPOOL: return parse_pool(np, a, 1);
    case EG_MOP_GEMM: return parse_gemm(np, opset, a);
    case EG_MOP_CONCAT: return parse_axis(np, a, opset < 4 ? 1 : INT64_MIN);
    case EG_MOP_SPLIT: return parse_split(np, opset, a);
    case EG_MOP_TRANSPOSE: return parse_transpose(np, a);
    case EG_MOP_RESHAPE: return parse_reshape(np, opset, a);
    case EG_MOP_FLATTEN: return parse_axis(np, a, 1);
    case EG_MOP_BATCHNORM: return parse_batchnorm(np, opset, a);
    case EG_MOP_SOFTMAX: return parse_axis(np, a, opset < 13 ? 1 : -1);
    case EG_MOP_LAYERNORM: return parse_layernorm(np, a);
    case EG_MOP_ADD:
    case EG_MOP_MUL:
    case EG_MOP_DIV: return parse_binary(np, opset, a);
    case EG_MOP_RELU:
    case EG_MOP_SIGMOID:
    case EG_MOP_TANH:
    case EG_MOP_SUM: return parse_unary(np, opset);
    case EG_MOP_GLOBALAVGPOOL:
    case EG_MOP_MATMUL:
    case EG_MOP_IDENTITY: return no_attrs(np);
    case EG_MOP_COUNT: break;
    }
    return 0;
}

/* The input count node np may have as mop in this opset. */
static void arity(eg_mop mop, int opset, int *min_in, int *max_in) {
    *min_in = eg_mop_table[mop].min_in, *max_in = eg_mop_table[mop].max_in;
    if (mop == EG_MOP_RESHAPE && opset < 5) *min_in = *max_in = 1;
}

/* Dropout in inference is an identity of its first input: before opset 7
 * only with is_test = 1 (its default 0 is training); from 7 the runtime
 * decides, and inference is what the engine models; from 12 training_mode
 * (input 2) must be a constant false, which finish_dropouts checks once
 * inputs are resolved, with the mask output unread. */
static eg_mop parse_dropout(const Onnx__NodeProto *np, int opset) {
    static const char *const ok1[] = {"ratio", "is_test", "consumed_inputs", NULL};
    static const char *const ok7[] = {"ratio", NULL};
    static const char *const ok12[] = {"seed", NULL};
    int64_t is_test;
    float ratio;
    if (opset < eg_mop_table[EG_MOP_IDENTITY].opset_lo || opset > eg_mop_table[EG_MOP_IDENTITY].opset_hi ||
        np->n_input < 1 || np->n_input > (opset < 12 ? 1u : 3u) || np->n_output < 1 ||
        np->n_output > 2 || !np->input[0] || !np->input[0][0] || !np->output[0] || !np->output[0][0])
        return EG_MOP_COUNT;
    if (!only_attrs(np, opset < 7 ? ok1 : opset < 12 ? ok7 : ok12) ||
        (opset < 12 && get_float(np, "ratio", 0.5f, &ratio)) ||
        (opset < 7 && (get_int(np, "is_test", 0, 0, 1, &is_test) || !is_test)) ||
        (opset >= 6 && egp_attr(np, "consumed_inputs")))
        return EG_MOP_COUNT;
    return EG_MOP_IDENTITY;
}

/* Which model operator np is, with its attributes; EG_MOP_COUNT when it
 * must stay opaque (unknown op, other domain, an operator version outside
 * eg_mop_table's opsets, attributes or arity outside what the model operator covers). */
eg_mop ei_classify(const Onnx__NodeProto *np, int opset, eg_attrs *a) {
    int min_in, max_in;
    memset(a, 0, sizeof *a);
    if (!eg_default_domain(np->domain) || !np->op_type) return EG_MOP_COUNT;
    if (eg_xop_of(np->op_type) == EG_X_DROPOUT) return parse_dropout(np, opset);
    eg_mop mop = eg_mop_of(np->op_type, opset);
    if (mop == EG_MOP_COUNT) return EG_MOP_COUNT;
    const eg_mop_info *info = &eg_mop_table[mop];
    arity(mop, opset, &min_in, &max_in);
    if (np->n_input < (size_t)min_in || (max_in >= 0 && np->n_input > (size_t)max_in))
        return EG_MOP_COUNT;
    if (info->max_out >= 0 && np->n_output != (size_t)info->max_out) return EG_MOP_COUNT;
    for (int k = 0; k < min_in; k++) /* required inputs cannot be omitted */
        if (!np->input[k] || !np->input[k][0]) return EG_MOP_COUNT;
    for (size_t k = 0; k < np->n_output; k++)
        if (!np->output[k] || !np->output[k][0]) return EG_MOP_COUNT;
    return parse_attrs(np, opset, mop, a) ? mop : EG_MOP_COUNT;
}
