/* lower.c - turn model operators into opspecs operators where the meanings
 * agree exactly (ops.h conventions: centred SAME padding, avg pool
 * dividing by kh*kw with padding counted, split by an explicit size), so
 * rule matching sees as much of the graph as possible. Every candidate is
 * re-checked with ops_infer_shape against the inferred output shape; a
 * node that does not fit stays a model operator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "win.h"

/* A float32 tensor whose shape opspecs can hold. */
static int ops_tensor(const eg_graph *g, int t, ten_shape *s) {
    return t >= 0 && g->tensor[t].dtype == EG_DT_FLOAT && eg_to_ten_shape(&g->tensor[t].shape, s);
}

/* Does op(param; in...) give exactly out's shape? */
static int ops_fits(const eg_graph *g, ops_op op, const int32_t *param, const int *in, int out) {
    ten_shape s[OPS_MAX_ARITY], want, got;
    char err[OPS_ERRLEN];
    for (int k = 0; k < ops_table[op].arity; k++)
        if (!ops_tensor(g, in[k], &s[k])) return 0;
    if (!ops_tensor(g, out, &want)) return 0;
    return ops_infer_shape(op, param, s, &got, err) == OPS_OK && ten_shape_eq(&got, &want);
}

/* Rewrite node n in place as op with the given inputs (a prefix of, or a
 * reordering of, its current ones) and its single output out. */
static void set_ops(eg_node *n, ops_op op, const int32_t *param, const int *in, int out) {
    n->kind = EG_KIND_OPS;
    n->op = op;
    memcpy(n->param, param, sizeof n->param);
    int a = ops_table[op].arity;
    int tmp[OPS_MAX_ARITY];
    memcpy(tmp, in, sizeof(int) * (size_t)a);
    memcpy(n->in, tmp, sizeof(int) * (size_t)a);
    n->n_in = a;
    n->out[0] = out;
    n->n_out = 1;
    memset(&n->attr, 0, sizeof n->attr);
}

/* OPS_PAD_SAME or OPS_PAD_VALID for these pads (win.h), or -1 (the
 * output size is then checked by ops_fits). */
static int pad_kind(const eg_attrs *a, int64_t kh, int64_t kw) {
    if (a->flags & (EG_AF_AUTO_UPPER | EG_AF_AUTO_LOWER) || kh > 255 || kw > 255) return -1;
    return ops_pad_of((int32_t)kh, (int32_t)kw, a->pad);
}

static int lower_conv(const eg_graph *g, eg_node *n) {
    const eg_attrs *a = &n->attr;
    const eg_shape *w = n->in[1] >= 0 ? &g->tensor[n->in[1]].shape : NULL;
    if ((n->n_in > 2 && n->in[2] >= 0) || !w || w->rank != 4 || a->stride[0] != a->stride[1])
        return 0;
    int pad = pad_kind(a, w->dim[2], w->dim[3]);
    int32_t p[OPS_MAX_PARAMS] = {a->stride[0], pad, OPS_ACT_NONE, a->group};
    if (pad < 0 || !ops_fits(g, OP_CONV2D, p, n->in, n->out[0])) return 0;
    set_ops(n, OP_CONV2D, p, n->in, n->out[0]);
    return 1;
}

static int lower_pool(const eg_graph *g, eg_node *n, ops_op op) {
    const eg_attrs *a = &n->attr;
    if (a->stride[0] != a->stride[1] || a->kernel[0] > 255 || a->kernel[1] > 255) return 0;
    int pad = pad_kind(a, a->kernel[0], a->kernel[1]);
    /* opspecs' avg pool always divides by kh*kw */
    if (op == OP_AVGPOOL && pad == OPS_PAD_SAME && !(a->flags & EG_AF_COUNT_PAD)) return 0;
    int32_t p[OPS_MAX_PARAMS] = {OPS_KERNEL(a->kernel[0], a->kernel[1]), a->stride[0], pad, 0};
    if (pad < 0 || !ops_fits(g, op, p, n->in, n->out[0])) return 0;
    set_ops(n, op, p, n->in, n->out[0]);
    return 1;
}

/* Same shapes: ewadd/ewmul; a Mul by a rank-0 tensor: smul(x, s). */
static int lower_binary(const eg_graph *g, eg_node *n, ops_op ew) {
    static const int32_t p[OPS_MAX_PARAMS] = {0};
    if (ops_fits(g, ew, p, n->in, n->out[0])) {
        set_ops(n, ew, p, n->in, n->out[0]);
        return 1;
    }
    if (ew != OP_EWMUL) return 0;
    int swapped[2] = {n->in[1], n->in[0]};
    for (int k = 0; k < 2; k++) {
        const int *in = k ? swapped : n->in;
        if (ops_fits(g, OP_SMUL, p, in, n->out[0])) {
            set_ops(n, OP_SMUL, p, in, n->out[0]);
            return 1;
        }
    }
    return 0;
}

static int lower_simple(const eg_graph *g, eg_node *n, ops_op op, int32_t p0) {
    int32_t p[OPS_MAX_PARAMS] = {p0, 0, 0, 0};
    if (n->n_in != ops_table[op].arity || !ops_fits(g, op, p, n->in, n->out[0])) return 0;
    set_ops(n, op, p, n->in, n->out[0]);
    return 1;
}

static int lower_concat(const eg_graph *g, eg_node *n) {
    int rank = n->in[0] >= 0 ? g->tensor[n->in[0]].shape.rank : -1;
    int32_t axis = n->attr.axis < 0 ? n->attr.axis + rank : n->attr.axis;
    return n->n_in == 2 && rank > 0 && lower_simple(g, n, OP_CONCAT, axis);
}

static int lower_transpose(const eg_graph *g, eg_node *n) {
    const eg_attrs *a = &n->attr;
    if ((a->flags & EG_AF_INTS) && (a->n_ints != 2 || a->ints[0] != 1 || a->ints[1] != 0)) return 0;
    return lower_simple(g, n, OP_TRANSPOSE, 0);
}

/* A 2-way Split becomes split0 (node j, in place) and split1 (appended;
 * eg_toposort puts it back in order). A constant sizes input is absorbed. */
static eg_status lower_split(eg_graph *g, int j, int *done) {
    eg_node *n = &g->node[j];
    int x = n->in[0], o0 = n->out[0], o1 = n->n_out == 2 ? n->out[1] : -1, axis, id;
    *done = 0;
    ten_shape xs, s0;
    if (n->n_out != 2 || o0 < 0 || o1 < 0 || x < 0 || !ops_tensor(g, x, &xs) || !ops_tensor(g, o0, &s0))
        return EG_OK;
    axis = n->attr.axis < 0 ? n->attr.axis + xs.rank : n->attr.axis;
    if (axis < 0 || axis >= xs.rank) return EG_OK;
    int32_t p[OPS_MAX_PARAMS] = {axis, s0.dim[axis], 0, 0};
    if (!ops_fits(g, OP_SPLIT0, p, &x, o0) || !ops_fits(g, OP_SPLIT1, p, &x, o1)) return EG_OK;
    eg_status rc = eg_add_node(g, EG_KIND_OPS, g->node[j].name, 1, 0, 1, &id);
    if (rc != EG_OK) return rc;
    n = &g->node[j]; /* eg_add_node may have moved the array */
    if (n->n_in > 1 && n->in[1] >= 0) g->tensor[n->in[1]].flags |= EG_TF_ABSORBED;
    set_ops(n, OP_SPLIT0, p, &x, o0);
    set_ops(&g->node[id], OP_SPLIT1, p, &x, o1);
    *done = 1;
    return EG_OK;
}

/* A fresh tensor "<base>_sum<k>" of that dtype and shape. */
static eg_status sum_tensor(eg_graph *g, int base, int k, int dtype, const eg_shape *s, int *id) {
    size_t len = strlen(g->tensor[base].name) + 48;
    char *name = malloc(len);
    if (!name) return EG_ENOMEM;
    snprintf(name, len, "%s_sum%d", g->tensor[base].name, k);
    for (int r = 0; eg_find_tensor(g, name) != -1; r++)
        snprintf(name, len, "%s_sum%d_%d", g->tensor[base].name, k, r);
    eg_status rc = eg_add_tensor(g, name, id);
    free(name);
    if (rc == EG_OK) g->tensor[*id].dtype = dtype, g->tensor[*id].shape = *s;
    return rc;
}

/* Sum(x0..xn-1) -> y: one input is an Identity; more become the chain
 * Add(Add(x0, x1), x2)... of model Adds (node j is the first, the others
 * are appended and lowered in turn), each intermediate of the broadcast
 * shape of the inputs so far. */
static eg_status lower_sum(eg_graph *g, int j, int *appended) {
    eg_node *n = &g->node[j];
    int y = n->out[0], m = n->n_in, prev, id;
    eg_shape s;
    if (m == 1) {
        n->mop = EG_MOP_IDENTITY;
        return EG_OK;
    }
    int *in = malloc(sizeof(int) * (size_t)m);
    if (!in) return EG_ENOMEM;
    memcpy(in, n->in, sizeof(int) * (size_t)m);
    s = g->tensor[in[0]].shape;
    prev = in[0];
    eg_status rc = EG_OK;
    for (int k = 1; rc == EG_OK && k < m; k++) {
        int out = y;
        eg_shape prev_s = s;
        if (eg_shape_broadcast(&prev_s, &g->tensor[in[k]].shape, &s)) s.rank = -1; /* inference refused it before */
        if (k < m - 1) rc = sum_tensor(g, y, k, g->tensor[y].dtype, &s, &out);
        if (rc == EG_OK && k > 1) rc = eg_add_node(g, EG_KIND_MODEL, g->node[j].name, 2, 0, 1, &id);
        if (rc != EG_OK) break;
        eg_node *a = &g->node[k > 1 ? id : j]; /* eg_add_node may move the array */
        memset(&a->attr, 0, sizeof a->attr);
        a->mop = EG_MOP_ADD, a->kind = EG_KIND_MODEL;
        a->in[0] = prev, a->in[1] = in[k], a->n_in = 2, a->out[0] = out;
        prev = out;
        *appended = 1;
    }
    free(in);
    return rc;
}

/* Lower node j if it fits. @return EG_OK or EG_ENOMEM; *split set when a
 * node was appended (a Split's second half, a Sum's later Adds). */
static eg_status lower_node(eg_graph *g, int j, int *split) {
    eg_node *n = &g->node[j];
    *split = 0;
    if (n->kind != EG_KIND_MODEL) return EG_OK;
    switch (n->mop) {
    case EG_MOP_CONV: lower_conv(g, n); break;
    case EG_MOP_MAXPOOL: lower_pool(g, n, OP_MAXPOOL); break;
    case EG_MOP_AVGPOOL: lower_pool(g, n, OP_AVGPOOL); break;
    case EG_MOP_MATMUL: lower_simple(g, n, OP_MATMUL, 0); break;
    case EG_MOP_ADD: lower_binary(g, n, OP_EWADD); break;
    case EG_MOP_MUL: lower_binary(g, n, OP_EWMUL); break;
    case EG_MOP_RELU: lower_simple(g, n, OP_RELU, 0); break;
    case EG_MOP_CONCAT: lower_concat(g, n); break;
    case EG_MOP_TRANSPOSE: lower_transpose(g, n); break;
    case EG_MOP_SPLIT: return lower_split(g, j, split);
    case EG_MOP_SUM: {
        eg_status rc = lower_sum(g, j, split);
        if (rc == EG_OK && g->node[j].mop == EG_MOP_ADD) lower_binary(g, &g->node[j], OP_EWADD);
        return rc;
    }
    case EG_MOP_GLOBALAVGPOOL:
    case EG_MOP_GEMM:
    case EG_MOP_SIGMOID:
    case EG_MOP_TANH:
    case EG_MOP_RESHAPE:
    case EG_MOP_FLATTEN:
    case EG_MOP_BATCHNORM:
    case EG_MOP_SOFTMAX:
    case EG_MOP_IDENTITY:
    case EG_MOP_COUNT: break; /* no opspecs operator means the same */
    }
    return EG_OK;
}

eg_status eg_lower(eg_graph *g) {
    int appended = 0;
    for (int j = 0; j < g->n_nodes; j++) { /* appended nodes are lowered too */
        int split;
        eg_status rc = lower_node(g, j, &split);
        if (rc != EG_OK) return rc;
        appended |= split;
    }
    if (!appended) return EG_OK;
    /* the graph was valid before, so only memory can fail here */
    eg_status rc = eg_index(g, NULL, 0);
    return rc == EG_OK ? eg_toposort(g, NULL, 0) : rc;
}
