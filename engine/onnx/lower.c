/* lower.c - turn model operators into opspecs operators where the meanings
 * agree exactly (ops.h conventions: centred SAME padding, avg pool
 * dividing by kh*kw with padding counted, split by an explicit size), so
 * rule matching sees as much of the graph as possible. Every candidate is
 * re-checked with ops_infer_shape against the inferred output shape; a
 * node that does not fit stays a model operator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/engine.h"
#include "onnx/lower.h"
#include "shapes/infer.h"
#include "fold/fold.h"
#include "proto/attr.h"
#include "ir/graph.h"
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

/* A fresh tensor "<base>_<tag><k>" of that dtype and shape. */
static eg_status new_tensor(eg_graph *g, int base, const char *tag, int k, int dtype,
                            const eg_shape *s, int *id) {
    size_t len = strlen(g->tensor[base].name) + strlen(tag) + 48;
    char *name = malloc(len);
    if (!name) return EG_ENOMEM;
    snprintf(name, len, "%s_%s%d", g->tensor[base].name, tag, k);
    for (int r = 0; eg_find_tensor(g, name) != -1; r++)
        snprintf(name, len, "%s_%s%d_%d", g->tensor[base].name, tag, k, r);
    eg_status rc = eg_add_tensor(g, name, id);
    free(name);
    if (rc == EG_OK) g->tensor[*id].dtype = dtype, g->tensor[*id].shape = *s;
    return rc;
}

/* Node j (a model op writing y) becomes `first` writing a fresh tensor t
 * of y's shape, and an appended node becomes op(param; t, v) -> y. The
 * caller sets node j's operator. @return EG_OK or EG_ENOMEM; *t set. */
static eg_status append_after(eg_graph *g, int j, const char *tag, ops_op op, int32_t p0, int v,
                              int *t) {
    int y = g->node[j].out[0], id;
    eg_shape ys = g->tensor[y].shape; /* a copy: adding a tensor moves the array */
    eg_status rc = new_tensor(g, y, tag, 0, g->tensor[y].dtype, &ys, t);
    if (rc == EG_OK) rc = eg_add_node(g, EG_KIND_OPS, g->node[j].name, 2, 0, 1, &id);
    if (rc != EG_OK) return rc;
    int32_t p[OPS_MAX_PARAMS] = {p0, 0, 0, 0};
    int in[2] = {*t, v};
    set_ops(&g->node[id], op, p, in, y);
    return EG_OK;
}

/* Conv(x, w) -> conv2d; Conv(x, w, b) -> conv2d then bias(1; ., b), which
 * the export writes back as one Conv. */
static eg_status lower_conv(eg_graph *g, int j, int *appended) {
    eg_node *n = &g->node[j];
    const eg_attrs *a = &n->attr;
    const eg_shape *w = n->in[1] >= 0 ? &g->tensor[n->in[1]].shape : NULL;
    int b = n->n_in > 2 ? n->in[2] : -1, y = n->out[0], t;
    if (!w || w->rank != 4 || a->stride[0] != a->stride[1]) return EG_OK;
    int pad = pad_kind(a, w->dim[2], w->dim[3]);
    if (pad >= 0 && w->dim[2] == 1 && w->dim[3] == 1) pad = OPS_PAD_SAME; /* eg_conv_1x1 */
    int32_t p[OPS_MAX_PARAMS] = {a->stride[0], pad, OPS_ACT_NONE, a->group}, bp[OPS_MAX_PARAMS] = {1};
    if (pad < 0 || !ops_fits(g, OP_CONV2D, p, n->in, y)) return EG_OK;
    if (b < 0) {
        set_ops(n, OP_CONV2D, p, n->in, y);
        return EG_OK;
    }
    int bin[2] = {y, b};
    if (!ops_fits(g, OP_BIAS, bp, bin, y)) return EG_OK;
    eg_status rc = append_after(g, j, "conv", OP_BIAS, 1, b, &t);
    if (rc != EG_OK) return rc;
    n = &g->node[j];
    set_ops(n, OP_CONV2D, p, n->in, t);
    *appended = 1;
    return EG_OK;
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

/* numpy's broadcast of v [d, 1, ..., 1] against y along the axis where
 * d sits: a per-channel vector. @return the axis, or -1. A value read
 * only here with 1s around d may be viewed as [d] (*view 1: the caller
 * does it with view_vector once it lowers; export puts the trailing 1s
 * back, out_ops.c's eo_plan_channels); one read elsewhere too is copied
 * to a vector of the reader's own (*view 2: vector_copy); anything else
 * must be rank 1. */
typedef struct {
    int *of; /* readers per tensor, counted before lowering */
    int n;   /* tensors then: later ones are the lowering's own */
} uses_t;

/* 1 when v's shape may be changed in place: an initializer with data that
 * only the node being lowered reads, named nowhere else (no value info, no
 * graph input or output). */
static int viewable(const eg_graph *g, int v, const uses_t *uses) {
    const eg_tensor *t = &g->tensor[v];
    return t->data && (t->flags & EG_TF_INIT) && v < uses->n && uses->of[v] == 1 && !t->vinfo && !t->dim_name &&
           !(t->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED | EG_TF_BORROWED));
}

/* v's shape without its 1s: [d]. */
static void view_vector(eg_graph *g, int v) {
    eg_shape *s = &g->tensor[v].shape;
    int64_t d = 1;
    for (int k = 0; k < s->rank; k++)
        if (s->dim[k] != 1) d = s->dim[k];
    s->dim[0] = d, s->rank = 1;
}

/* 1 when v is a float initializer with data that no name outside the
 * graph's nodes pins: readers beyond one (torch shares a layer scale of
 * equal values across blocks through Identity nodes) then get a copy of
 * their own to view. */
static int copyable(const eg_graph *g, int v) {
    const eg_tensor *t = &g->tensor[v];
    return t->data && (t->flags & EG_TF_INIT) && !t->dim_name &&
           !(t->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED));
}

/* A fresh initializer "<v>_vec<k>" holding v's values as a vector [d]
 * (v is [.., d, 1, ..]: a per-channel vector some other node reads too). */
static eg_status vector_copy(eg_graph *g, int v, int *id) {
    eg_shape s = g->tensor[v].shape;
    int64_t numel = eg_shape_numel(&s);
    float *data = malloc(sizeof(float) * (size_t)(numel > 0 ? numel : 1));
    if (!data) return EG_ENOMEM;
    eg_status rc = new_tensor(g, v, "vec", 0, EG_DT_FLOAT, &s, id);
    if (rc != EG_OK) {
        free(data);
        return rc;
    }
    eg_tensor *t = &g->tensor[*id];
    memcpy(data, g->tensor[v].data, sizeof(float) * (size_t)numel);
    t->data = data, t->flags |= EG_TF_INIT;
    view_vector(g, *id);
    return EG_OK;
}

static int channel_axis(const eg_graph *g, int v, int y, const uses_t *uses, int *view) {
    const eg_tensor *t = &g->tensor[v];
    *view = 0;
    const eg_shape *ys = &g->tensor[y].shape;
    if (t->shape.rank < 1 || t->shape.rank > ys->rank || t->dtype != EG_DT_FLOAT) return -1;
    int f = 0; /* leading 1s are numpy's padding too */
    while (f < t->shape.rank - 1 && t->shape.dim[f] == 1) f++;
    int axis = ys->rank - t->shape.rank + f;
    if (t->shape.dim[f] != ys->dim[axis]) return -1;
    for (int k = f + 1; k < t->shape.rank; k++)
        if (t->shape.dim[k] != 1) return -1;
    if (t->shape.rank == 1) return axis;
    if (viewable(g, v, uses)) {
        *view = 1;
        return axis;
    }
    if (!copyable(g, v)) return -1;
    *view = 2;
    return axis;
}

/* 1 when v, a float initializer of one element and rank 1..rank(y), is
 * read only by the node making y, so it may be viewed as a scalar. */
static int one_element_view(const eg_graph *g, int v, int y, const uses_t *uses) {
    const eg_tensor *t = &g->tensor[v];
    return t->shape.rank >= 1 && t->shape.rank <= g->tensor[y].shape.rank && t->dtype == EG_DT_FLOAT &&
           eg_shape_numel(&t->shape) == 1 && viewable(g, v, uses);
}

/* Same shapes: ewadd/ewmul; an Add or a Mul by a rank-0 tensor: sadd or
 * smul(x, s); a per-channel vector: bias/scale. */
static int lower_binary(eg_graph *g, eg_node *n, ops_op ew, const uses_t *uses) {
    static const int32_t p[OPS_MAX_PARAMS] = {0};
    if (ops_fits(g, ew, p, n->in, n->out[0])) {
        set_ops(n, ew, p, n->in, n->out[0]);
        return 1;
    }
    ops_op ch = ew == OP_EWADD ? OP_BIAS : OP_SCALE;
    /* before opset 7 broadcasting is the importer's reading of the legacy
     * form, written back as it came (onnx_out.c): left to it */
    for (int k = 0; k < 2 && g->opset >= 7 && n->n_in == 2 && n->in[0] >= 0 && n->in[1] >= 0; k++) {
        int in[2] = {n->in[k], n->in[1 - k]}, y = n->out[0];
        if (!eg_shape_known(&g->tensor[y].shape) || !eg_shape_known(&g->tensor[in[1]].shape) ||
            g->tensor[in[0]].shape.rank != g->tensor[y].shape.rank ||
            memcmp(g->tensor[in[0]].shape.dim, g->tensor[y].shape.dim,
                   sizeof(int64_t) * (size_t)g->tensor[y].shape.rank))
            continue;
        eg_shape keep = g->tensor[in[1]].shape;
        int view;
        int32_t cp[OPS_MAX_PARAMS] = {channel_axis(g, in[1], y, uses, &view)};
        if (cp[0] < 0) continue;
        if (view) view_vector(g, in[1]); /* view 2: in place only to try the fit, then put back */
        int fits = ops_fits(g, ch, cp, in, y);
        if (view == 2) g->tensor[in[1]].shape = keep;
        if (fits && view == 2 && vector_copy(g, in[1], &in[1]) != EG_OK) fits = 0; /* left a model op */
        if (fits) {
            set_ops(n, ch, cp, in, y);
            return 1;
        }
        g->tensor[in[1]].shape = keep;
    }
    /* by a scalar, on either side; a one-element constant read only here
     * ([1], [1,1,1,1]: a learnable affine's scale) is one, viewed as rank 0
     * (numpy broadcasts both alike onto an operand of the result's shape) */
    ops_op sc = ew == OP_EWADD ? OP_SADD : OP_SMUL;
    int swapped[2] = {n->in[1], n->in[0]};
    for (int k = 0; k < 2; k++) {
        int *in = k ? swapped : n->in;
        int v = in[1];
        eg_shape keep = v >= 0 ? g->tensor[v].shape : (eg_shape){0};
        if (v >= 0 && one_element_view(g, v, n->out[0], uses)) g->tensor[v].shape.rank = 0;
        if (ops_fits(g, sc, p, in, n->out[0])) {
            set_ops(n, sc, p, in, n->out[0]);
            return 1;
        }
        if (v >= 0) g->tensor[v].shape = keep;
    }
    return 0;
}

static int lower_simple(const eg_graph *g, eg_node *n, ops_op op, int32_t p0) {
    int32_t p[OPS_MAX_PARAMS] = {p0, 0, 0, 0};
    if (n->n_in != ops_table[op].arity || !ops_fits(g, op, p, n->in, n->out[0])) return 0;
    set_ops(n, op, p, n->in, n->out[0]);
    return 1;
}

/* Concat(x0..xn-1) -> concat(...concat(concat(x0, x1), x2)..., xn-1):
 * node j is the first, the others are appended, each intermediate of the
 * concatenated shape so far. Export writes a chain whose inner results
 * nothing else reads as one Concat again (out_ops.c, eo_plan_concats). */
static eg_status lower_concat(eg_graph *g, int j, int *appended) {
    eg_node *n = &g->node[j];
    int m = n->n_in, y = n->out[0], rank = n->in[0] >= 0 ? g->tensor[n->in[0]].shape.rank : -1;
    int32_t axis = n->attr.axis < 0 ? n->attr.axis + rank : n->attr.axis;
    int32_t p[OPS_MAX_PARAMS] = {axis, 0, 0, 0};
    ten_shape xs, ks, ys;
    if (m < 2 || rank <= 0 || axis < 0 || axis >= rank || !ops_tensor(g, y, &ys) ||
        !ops_tensor(g, n->in[0], &xs))
        return EG_OK;
    int64_t total = xs.dim[axis];
    for (int k = 1; k < m; k++) { /* every operand fits before anything changes */
        if (!ops_tensor(g, n->in[k], &ks) || ks.rank != xs.rank) return EG_OK;
        for (int d = 0; d < ks.rank; d++)
            if (d != axis && ks.dim[d] != xs.dim[d]) return EG_OK;
        total += ks.dim[axis];
    }
    if (ys.rank != xs.rank || total != ys.dim[axis]) return EG_OK;
    if (m == 2) {
        if (ops_fits(g, OP_CONCAT, p, n->in, y)) set_ops(n, OP_CONCAT, p, n->in, y);
        return EG_OK;
    }
    int *in = malloc(sizeof(int) * (size_t)m);
    if (!in) return EG_ENOMEM;
    memcpy(in, n->in, sizeof(int) * (size_t)m);
    eg_shape s = g->tensor[in[0]].shape;
    int prev = in[0], id;
    eg_status rc = EG_OK;
    for (int k = 1; rc == EG_OK && k < m; k++) {
        int out = y;
        s.dim[axis] += g->tensor[in[k]].shape.dim[axis];
        if (k < m - 1) rc = new_tensor(g, y, "cat", k, g->tensor[y].dtype, &s, &out);
        if (rc == EG_OK && k > 1) rc = eg_add_node(g, EG_KIND_OPS, g->node[j].name, 2, 0, 1, &id);
        if (rc != EG_OK) break;
        int two[2] = {prev, in[k]};
        set_ops(&g->node[k > 1 ? id : j], OP_CONCAT, p, two, out); /* the array may have moved */
        prev = out;
        *appended = 1;
    }
    free(in);
    return rc;
}

/* Transpose of rank 2 -> transpose; of rank 3 or 4 -> permute(perm) (no
 * perm: the axes reversed). */
static int lower_transpose(const eg_graph *g, eg_node *n) {
    const eg_attrs *a = &n->attr;
    int rank = n->in[0] >= 0 ? g->tensor[n->in[0]].shape.rank : -1;
    if (rank < 2 || rank > TEN_MAX_RANK || ((a->flags & EG_AF_INTS) && a->n_ints != rank)) return 0;
    int32_t perm = rank << 12;
    for (int k = 0; k < rank; k++) {
        int64_t v = a->flags & EG_AF_INTS ? a->ints[k] : rank - 1 - k;
        if (v < 0 || v >= rank) return 0;
        perm |= (int32_t)v << (9 - 3 * k);
    }
    if (rank == 2) return perm == (2 << 12 | 1 << 9) && lower_simple(g, n, OP_TRANSPOSE, 0);
    return ops_perm_ok(perm) && lower_simple(g, n, OP_PERMUTE, perm);
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
        if (k < m - 1) rc = new_tensor(g, y, "sum", k, g->tensor[y].dtype, &s, &out);
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

/* Is t written by a convolution (a model Conv, conv2d, or conv2d's
 * bias)? Batch normalization there is folded into the weights later
 * (builtin.c), which beats a scale and a bias. */
static int conv_output(const eg_graph *g, int t) {
    int p = g->tensor[t].producer;
    const eg_node *n = p >= 0 ? &g->node[p] : NULL;
    if (n && n->kind == EG_KIND_OPS && n->op == OP_BIAS && n->in[0] >= 0)
        p = g->tensor[n->in[0]].producer, n = p >= 0 ? &g->node[p] : NULL;
    return n && ((n->kind == EG_KIND_MODEL && n->mop == EG_MOP_CONV) ||
                 (n->kind == EG_KIND_OPS && n->op == OP_CONV2D));
}

/* BatchNormalization(x, scale, B, mean, var) not after a convolution it
 * can be folded into (one whose output the batchnorm alone reads) ->
 * scale(1; x, s) then bias(1; ., b), s = scale / sqrt(var + eps),
 * b = B - mean * s. A batchnorm-only branch beside other readers of a
 * conv's output (RepGhost's fusion_bn) is lowered, so the rules may merge
 * it with the branch's convs. When mean is 0 and var + eps is 1 (what the
 * export writes for such a pair, onnx_out.c) scale and B serve as they
 * are. */
static eg_status lower_batchnorm(eg_graph *g, int j, const uses_t *uses, int *appended) {
    eg_node *n = &g->node[j];
    int x = n->in[0], y = n->out[0], t, sv, bv;
    if (n->n_in != 5 || n->n_out != 1 || x < 0 || g->tensor[x].shape.rank < 2 ||
        (conv_output(g, x) && (x >= uses->n || uses->of[x] == 1)) ||
        g->opset < 9) /* before BatchNormalization-9 the export could not write it back as one */
        return EG_OK;
    int64_t c = g->tensor[x].shape.dim[1];
    for (int k = 1; k < 5; k++)
        if (!eg_float_vec(g, n->in[k], c)) return EG_OK;
    int32_t p[OPS_MAX_PARAMS] = {1, 0, 0, 0};
    int in[2] = {x, n->in[1]};
    if (!ops_fits(g, OP_SCALE, p, in, y)) return EG_OK;
    const float *sc = g->tensor[n->in[1]].data, *bb = g->tensor[n->in[2]].data;
    const float *mean = g->tensor[n->in[3]].data, *var = g->tensor[n->in[4]].data;
    float eps = n->attr.epsilon;
    int plain = 1;
    for (int64_t i = 0; i < c; i++) plain &= mean[i] == 0 && var[i] + eps == 1.0f;
    sv = n->in[1], bv = n->in[2];
    if (!plain) {
        float *s2 = malloc(sizeof *s2 * (size_t)c), *b2 = malloc(sizeof *b2 * (size_t)c);
        if (!s2 || !b2) return free(s2), free(b2), EG_ENOMEM;
        for (int64_t i = 0; i < c; i++) {
            double f = sc[i] / sqrt((double)var[i] + eps);
            s2[i] = (float)f, b2[i] = (float)(bb[i] - mean[i] * f);
        }
        eg_shape vs = g->tensor[n->in[1]].shape;
        char *base = strdup(n->name ? n->name : g->tensor[y].name);
        eg_status rc = base ? eg_add_float_init(g, base, "scale", &vs, s2, &sv) : EG_ENOMEM;
        if (!base) free(s2);
        if (rc == EG_OK) rc = eg_add_float_init(g, base, "shift", &vs, b2, &bv);
        else free(b2);
        free(base);
        if (rc != EG_OK) return rc;
    }
    n = &g->node[j];
    for (int k = 1; k < 5; k++) g->tensor[n->in[k]].flags |= EG_TF_ABSORBED;
    eg_status rc = append_after(g, j, "bn", OP_BIAS, 1, bv, &t);
    if (rc != EG_OK) return rc;
    n = &g->node[j];
    in[1] = sv;
    set_ops(n, OP_SCALE, p, in, t);
    *appended = 1;
    return EG_OK;
}

/* Gemm(A, B, C) with alpha = beta = 1 and A not transposed: matmul of A
 * and B (B through a transpose when transB), then bias(1; ., C) for a
 * [N] bias. */
static eg_status lower_gemm(eg_graph *g, int j, const uses_t *uses, int *appended) {
    eg_node *n = &g->node[j];
    const eg_attrs *a = &n->attr;
    int x = n->in[0], w = n->in[1], c = n->n_in > 2 ? n->in[2] : -1, y = n->out[0], t = y, id;
    static const int32_t p0[OPS_MAX_PARAMS] = {0};
    if (a->alpha != 1.0f || (c >= 0 && a->beta != 1.0f) || (a->flags & (EG_AF_TRANS_A | EG_AF_LEGACY_BCAST)) ||
        x < 0 || w < 0 || g->tensor[w].dtype != EG_DT_FLOAT || /* opspecs values are float32 */
        !eg_shape_known(&g->tensor[w].shape) || g->tensor[w].shape.rank != 2 ||
        !eg_shape_known(&g->tensor[y].shape))
        return EG_OK;
    if (c >= 0) { /* the bias must be a per-column vector already */
        int32_t bp[OPS_MAX_PARAMS] = {1};
        int bin[2] = {y, c}, view;
        if (channel_axis(g, c, y, uses, &view) != 1 || view || !ops_fits(g, OP_BIAS, bp, bin, y))
            return EG_OK;
    }
    eg_shape ws = g->tensor[w].shape, wt = {2, {ws.dim[1], ws.dim[0]}};
    int trans = (a->flags & EG_AF_TRANS_B) != 0, b = w, in[2] = {x, w};
    eg_status rc = EG_OK;
    if (trans) { /* a check on shapes before anything is added */
        ten_shape xs, bs = {2, {(int32_t)wt.dim[0], (int32_t)wt.dim[1]}}, os;
        char err[OPS_ERRLEN];
        if (!ops_tensor(g, x, &xs) || ops_infer_shape(OP_MATMUL, p0, (ten_shape[]){xs, bs}, &os, err) != OPS_OK)
            return EG_OK;
        rc = new_tensor(g, w, "t", 0, EG_DT_FLOAT, &wt, &b);
        if (rc == EG_OK) rc = eg_add_node(g, EG_KIND_OPS, g->node[j].name, 1, 0, 1, &id);
        if (rc != EG_OK) return rc;
        set_ops(&g->node[id], OP_TRANSPOSE, p0, &w, b);
        in[1] = b, *appended = 1;
    } else if (!ops_fits(g, OP_MATMUL, p0, in, y))
        return EG_OK;
    if (c >= 0 && (rc = append_after(g, j, "gemm", OP_BIAS, 1, c, &t)) != EG_OK) return rc;
    *appended |= c >= 0;
    set_ops(&g->node[j], OP_MATMUL, p0, in, t);
    return EG_OK;
}

/* Does node n carry exactly the float constants of op's ONNX spelling
 * (ops_info.onnx_const): as scalar initializer inputs after x from the
 * opset the table names, else as attributes (one left out where the
 * table says its value is ONNX's default)? */
static int consts_match(const eg_graph *g, const eg_node *n, const ops_info *o) {
    int count = 0;
    while (count < 2 && o->onnx_const[count].name) count++;
    if (o->onnx_const_inputs_since > 0 && g->opset >= o->onnx_const_inputs_since) {
        if (n->n_in != 1 + count) return 0;
        for (int k = 0; k < count; k++) {
            const eg_tensor *t = n->in[1 + k] >= 0 ? &g->tensor[n->in[1 + k]] : NULL;
            if (!t || !(t->flags & EG_TF_INIT) || !t->data || eg_shape_numel(&t->shape) != 1 ||
                t->data[0] != o->onnx_const[k].value)
                return 0;
        }
        return 1;
    }
    return n->n_in == 1 && eg_opaque_consts_are(n, o->onnx_const, count);
}

/* 1 when the operator of form ZIP or SCALE (arity 2) fits node n as
 * written: two inputs, x then y (or the scalar), no broadcasting beyond
 * what its form allows (ops_fits). */
static int binary_fits(const eg_graph *g, const eg_node *n, ops_op op) {
    static const int32_t p[OPS_MAX_PARAMS] = {0};
    return n->n_in == 2 && ops_table[op].arity == 2 && ops_fits(g, op, p, n->in, n->out[0]);
}

/* An opaque node spelled as an element-wise operator's ONNX op becomes it,
 * found by its name in the operator table, so a new row needs no code
 * here: a map with exactly its constants (Erf; Clip 0..6 as relu6;
 * torch's HardSigmoid; the constant inputs it drops are absorbed), a
 * binary one of equal shapes (ZIP) or by a rank-0 scalar (SCALE). The ONNX
 * ops the importer reads itself (Add, Mul, Div: lower_binary's bias,
 * scale and scalar forms) are left to it. */
static void lower_map(eg_graph *g, eg_node *n) {
    static const int32_t p[OPS_MAX_PARAMS] = {0};
    if (!n->op_type || !eg_default_domain(n->domain) ||
        n->n_in < 1 || n->n_out != 1 || n->n_implicit || g->opset > EG_OPSET_MAX)
        return;
    eg_xop x = eg_xop_of(n->op_type);
    for (int m = 0; m < EG_MOP_COUNT; m++) /* a model op left opaque stays so */
        if (eg_mop_table[m].xop == x) return;
    for (int op = 0; op < OP_COUNT; op++) {
        const ops_info *o = &ops_table[op];
        if (!o->onnx || strcmp(o->onnx, n->op_type) != 0) continue;
        if ((o->form == OPS_FORM_ZIP || o->form == OPS_FORM_SCALE) && binary_fits(g, n, (ops_op)op)) {
            set_ops(n, (ops_op)op, p, n->in, n->out[0]);
            return;
        }
        if (o->form != OPS_FORM_MAP || !ops_fits(g, (ops_op)op, p, n->in, n->out[0]) || !consts_match(g, n, o))
            continue;
        for (int k = 1; k < n->n_in; k++) g->tensor[n->in[k]].flags |= EG_TF_ABSORBED;
        set_ops(n, (ops_op)op, p, n->in, n->out[0]);
        return;
    }
}

/* An Identity of a value (torch writes one per duplicated weight), or a
 * one-input Sum (lower_sum's Identity), is no operation at all: its readers read the value itself, so the weight is
 * visible to rules as a weight. @return 1 when node n can go. */
static int alias_identity(eg_graph *g, const eg_node *n) {
    int x = n->in[0], y = n->out[0];
    if (n->n_in != 1 || n->n_out != 1 || x < 0 || y < 0 || !(g->tensor[x].flags & EG_TF_INIT) ||
        (g->tensor[y].flags & (EG_TF_OUTPUT | EG_TF_PINNED)))
        return 0;
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < g->node[j].n_in + g->node[j].n_implicit; k++)
            if (g->node[j].in[k] == y) g->node[j].in[k] = x;
    return 1;
}

/* A Reshape or Flatten to its input's own shape (attention's head merge
 * after a fused kernel keeps one): readers read the input instead, as
 * for an Identity. */
static int alias_noop_reshape(eg_graph *g, const eg_node *n) {
    if (n->kind != EG_KIND_MODEL || (n->mop != EG_MOP_RESHAPE && n->mop != EG_MOP_FLATTEN) ||
        n->n_out != 1 || n->n_in < 1 || n->in[0] < 0 || n->out[0] < 0)
        return 0;
    const eg_tensor *x = &g->tensor[n->in[0]], *y = &g->tensor[n->out[0]];
    if (!eg_shape_known(&x->shape) || !eg_shape_known(&y->shape) || x->shape.rank != y->shape.rank ||
        x->dtype != y->dtype || (y->flags & (EG_TF_OUTPUT | EG_TF_PINNED)))
        return 0;
    for (int a = 0; a < x->shape.rank; a++)
        if (x->shape.dim[a] != y->shape.dim[a]) return 0;
    int from = n->in[0], to = n->out[0];
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < g->node[j].n_in + g->node[j].n_implicit; k++)
            if (g->node[j].in[k] == to) g->node[j].in[k] = from;
    return 1;
}

/* Reshape [b,m,k] -> [b,m,h,k/h] -> heads(h); [b,m,h,d] -> [b,m,h*d] ->
 * unheads(h): attention's split of the features into heads and the merge
 * back. The target shape (input 1 or an attribute) is no longer read. */
static void lower_reshape(const eg_graph *g, eg_node *n) {
    const eg_shape *x = n->in[0] >= 0 ? &g->tensor[n->in[0]].shape : NULL;
    const eg_shape *y = n->out[0] >= 0 ? &g->tensor[n->out[0]].shape : NULL;
    if (!x || !y || !eg_shape_known(x) || !eg_shape_known(y) || x->dim[0] != y->dim[0] ||
        x->rank < 2 || y->rank < 2 || x->dim[1] != y->dim[1])
        return;
    int32_t p[OPS_MAX_PARAMS] = {0};
    ops_op op;
    if (x->rank == 3 && y->rank == 4) op = OP_HEADS, p[0] = (int32_t)y->dim[2];
    else if (x->rank == 4 && y->rank == 3) op = OP_UNHEADS, p[0] = (int32_t)x->dim[2];
    else return;
    if (ops_fits(g, op, p, n->in, n->out[0])) set_ops(n, op, p, n->in, n->out[0]);
}

/* Initializers read before lowering and by nothing after it (a Reshape's
 * target shape): absorbed, so export writes them only where a node needs
 * them again (onnx_out.c's eo_put_ints finds them by value). */
static void absorb_unread(eg_graph *g, const uses_t *before) {
    int *now = malloc(sizeof(int) * ((size_t)g->n_tensors + 1));
    if (!now) return; /* they stay written: a larger file, nothing wrong */
    eg_count_uses(g, now);
    for (int t = 0; t < before->n && t < g->n_tensors; t++) {
        eg_tensor *x = &g->tensor[t];
        if (before->of[t] > 0 && now[t] == 0 && (x->flags & EG_TF_INIT) &&
            !(x->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED)))
            x->flags |= EG_TF_ABSORBED;
    }
    free(now);
}

/* GlobalAveragePool over an H x W plane (at most 255 x 255) -> avgpool
 * with that kernel, stride 1, VALID: the same one window per channel. */
static void lower_global_pool(const eg_graph *g, eg_node *n) {
    const eg_shape *x = n->in[0] >= 0 ? &g->tensor[n->in[0]].shape : NULL;
    if (!x || x->rank != 4 || x->dim[2] < 1 || x->dim[3] < 1 || x->dim[2] > 255 || x->dim[3] > 255)
        return;
    int32_t p[OPS_MAX_PARAMS] = {OPS_KERNEL((int32_t)x->dim[2], (int32_t)x->dim[3]), 1,
                                 OPS_PAD_VALID, 0};
    if (ops_fits(g, OP_AVGPOOL, p, n->in, n->out[0])) set_ops(n, OP_AVGPOOL, p, n->in, n->out[0]);
}

/* Softmax (the importer keeps only the opset-13 meaning: one axis) ->
 * softmax on that axis. */
static void lower_softmax(const eg_graph *g, eg_node *n) {
    int rank = n->in[0] >= 0 ? g->tensor[n->in[0]].shape.rank : -1;
    int32_t axis = n->attr.axis < 0 ? n->attr.axis + rank : n->attr.axis;
    if (rank > 0 && axis >= 0 && axis < rank) lower_simple(g, n, OP_SOFTMAX, axis);
}

/* LayerNormalization over the last axis only -> layernorm(axis, eps), then
 * scale(axis; ., Scale), then bias(axis; ., B) when B is given: the rules
 * see the normalisation and the affine part apart; the export writes the
 * three back as one LayerNormalization (the export: out_ops.c). */
static eg_status lower_layernorm(eg_graph *g, int j, int *appended) {
    eg_node *n = &g->node[j];
    int x = n->in[0], y = n->out[0], sv = n->in[1], bv = n->n_in > 2 ? n->in[2] : -1, t;
    int rank = x >= 0 ? g->tensor[x].shape.rank : -1;
    int32_t axis = n->attr.axis < 0 ? n->attr.axis + rank : n->attr.axis;
    if (rank < 1 || axis != rank - 1 || n->n_out != 1) return EG_OK;
    int32_t p[OPS_MAX_PARAMS] = {axis, ops_eps_param(n->attr.epsilon), 0, 0};
    int32_t cp[OPS_MAX_PARAMS] = {axis, 0, 0, 0};
    int sin[2] = {y, sv}, bin[2] = {y, bv};
    if (!ops_fits(g, OP_LAYERNORM, p, n->in, y) || !ops_fits(g, OP_SCALE, cp, sin, y) ||
        (bv >= 0 && !ops_fits(g, OP_BIAS, cp, bin, y)))
        return EG_OK;
    eg_status rc = EG_OK;
    if (bv >= 0) { /* bias last: node j writes its input until set_ops below */
        if ((rc = append_after(g, j, "ln", OP_BIAS, axis, bv, &t)) != EG_OK) return rc;
        g->node[j].out[0] = t;
    }
    if ((rc = append_after(g, j, "ln", OP_SCALE, axis, sv, &t)) != EG_OK) return rc;
    n = &g->node[j];
    set_ops(n, OP_LAYERNORM, p, n->in, t);
    *appended = 1;
    return EG_OK;
}

static int opaque_is(const eg_node *n, eg_xop op, int n_in) {
    return n->kind == EG_KIND_OPAQUE && eg_xop_of(n->op_type) == op &&
           eg_default_domain(n->domain) && n->n_in == n_in &&
           n->n_out == 1 && !n->n_implicit;
}

/* Where(IsNaN(x), 0, x), the IsNaN read by nothing else: nanzero(x); the
 * IsNaN node is marked in drop and the zero constant absorbed. */
static void lower_nanzero(eg_graph *g, eg_node *n, const uses_t *uses, unsigned char *drop) {
    static const int32_t p[OPS_MAX_PARAMS] = {0};
    if (!drop || !opaque_is(n, EG_X_WHERE, 3) || n->in[0] < 0 || n->in[1] < 0 || n->in[2] < 0 || n->out[0] < 0 ||
        n->in[0] >= uses->n || n->in[1] >= uses->n)
        return;
    int c = n->in[0], zero = n->in[1], x = n->in[2], isnan_j = g->tensor[c].producer;
    const eg_tensor *z = &g->tensor[zero];
    if (isnan_j < 0 || !opaque_is(&g->node[isnan_j], EG_X_ISNAN, 1) || g->node[isnan_j].in[0] != x ||
        uses->of[c] != 1 || (g->tensor[c].flags & (EG_TF_OUTPUT | EG_TF_PINNED)) ||
        !(z->flags & EG_TF_INIT) || !z->data || eg_shape_numel(&z->shape) != 1 || z->data[0] != 0.0f ||
        signbit(z->data[0]) || !ops_fits(g, OP_NANZERO, p, &x, n->out[0]))
        return;
    if (uses->of[zero] == 1) g->tensor[zero].flags |= EG_TF_ABSORBED;
    set_ops(n, OP_NANZERO, p, &x, n->out[0]);
    drop[isnan_j] = 1;
}

/* ReduceMean over H and W of [N, C, H, W] with the dims kept (torch's
 * adaptive average pool to 1 x 1 as its dynamo exporter writes it): the
 * avgpool GlobalAveragePool lowers to (the export writes it as one); the
 * axes input it no longer reads (opset 18) is absorbed. */
static void lower_reduce_mean(eg_graph *g, eg_node *n, const uses_t *uses) {
    enum { AXES, KEEPDIMS, NOOP, N_ATTRS, MAX = 4 };
    static const char *const names[N_ATTRS] = {"axes", "keepdims", "noop_with_empty_axes"};
    int64_t v[N_ATTRS * MAX], ax[MAX];
    int nv[N_ATTRS], n_ax;
    if (!opaque_is(n, EG_X_REDMEAN, g->opset >= 18 ? 2 : 1) || n->in[0] < 0 || n->out[0] < 0 ||
        eg_opaque_int_attrs(n, names, N_ATTRS, v, nv, MAX) || (nv[KEEPDIMS] == 1 && v[KEEPDIMS * MAX] != 1) ||
        (nv[NOOP] == 1 && v[NOOP * MAX] != 0))
        return;
    const eg_shape *x = &g->tensor[n->in[0]].shape;
    const eg_tensor *at = g->opset >= 18 && n->in[1] >= 0 ? &g->tensor[n->in[1]] : NULL;
    if (g->opset >= 18) n_ax = at && !(at->flags & EG_TF_INPUT) && nv[AXES] < 0 ? eg_const_ints(at, ax, MAX) : -1;
    else n_ax = nv[AXES], memcpy(ax, v + AXES * MAX, sizeof ax);
    if (x->rank != 4 || n_ax != 2 || x->dim[2] < 1 || x->dim[3] < 1 || x->dim[2] > 255 || x->dim[3] > 255) return;
    int hw = 0;
    for (int k = 0; k < 2; k++) {
        int64_t a = ax[k] < 0 ? ax[k] + 4 : ax[k];
        if (a == 2 || a == 3) hw |= 1 << (a - 2);
    }
    int32_t p[OPS_MAX_PARAMS] = {OPS_KERNEL((int32_t)x->dim[2], (int32_t)x->dim[3]), 1, OPS_PAD_VALID, 0};
    if (hw != 3 || !ops_fits(g, OP_AVGPOOL, p, n->in, n->out[0])) return;
    if (at && n->in[1] < uses->n && uses->of[n->in[1]] == 1 &&
        !(at->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED)))
        g->tensor[n->in[1]].flags |= EG_TF_ABSORBED;
    set_ops(n, OP_AVGPOOL, p, n->in, n->out[0]);
}

/* Lower node j if it fits. @return EG_OK or EG_ENOMEM; *appended set when
 * a node was appended (a Split's second half, a Sum's later Adds, a bias). */
static eg_status lower_node(eg_graph *g, int j, const uses_t *uses, unsigned char *drop,
                            int *appended) {
    eg_node *n = &g->node[j];
    *appended = 0;
    if (n->kind == EG_KIND_OPAQUE) lower_map(g, n);
    if (n->kind == EG_KIND_OPAQUE) lower_nanzero(g, n, uses, drop);
    if (n->kind == EG_KIND_OPAQUE) lower_reduce_mean(g, n, uses);
    if (n->kind != EG_KIND_MODEL) return EG_OK;
    switch (n->mop) {
    case EG_MOP_CONV: return lower_conv(g, j, appended);
    case EG_MOP_MAXPOOL: lower_pool(g, n, OP_MAXPOOL); break;
    case EG_MOP_AVGPOOL: lower_pool(g, n, OP_AVGPOOL); break;
    case EG_MOP_MATMUL: /* rank 2 x rank 2, rank 4 x rank 4 of equal batch dims, rank 3 x rank 2 */
        if (!lower_simple(g, n, OP_MATMUL, 0) && !lower_simple(g, n, OP_BMM, 0)) lower_simple(g, n, OP_LINEAR, 0);
        break;
    case EG_MOP_ADD: lower_binary(g, n, OP_EWADD, uses); break;
    case EG_MOP_MUL: lower_binary(g, n, OP_EWMUL, uses); break;
    case EG_MOP_DIV: lower_simple(g, n, OP_SDIV, 0); break; /* by a scalar */
    case EG_MOP_RELU: lower_simple(g, n, OP_RELU, 0); break;
    case EG_MOP_SIGMOID: lower_simple(g, n, OP_SIGMOID, 0); break;
    case EG_MOP_TANH: lower_simple(g, n, OP_TANH, 0); break;
    case EG_MOP_CONCAT: return lower_concat(g, j, appended);
    case EG_MOP_TRANSPOSE: lower_transpose(g, n); break;
    case EG_MOP_SPLIT: return lower_split(g, j, appended);
    case EG_MOP_GEMM: return lower_gemm(g, j, uses, appended);
    case EG_MOP_SUM: {
        eg_status rc = lower_sum(g, j, appended);
        if (rc == EG_OK && g->node[j].mop == EG_MOP_ADD) lower_binary(g, &g->node[j], OP_EWADD, uses);
        return rc;
    }
    case EG_MOP_BATCHNORM: return lower_batchnorm(g, j, uses, appended);
    case EG_MOP_SOFTMAX: lower_softmax(g, n); break;
    case EG_MOP_LAYERNORM: return lower_layernorm(g, j, appended);
    case EG_MOP_GLOBALAVGPOOL: lower_global_pool(g, n); break;
    case EG_MOP_RESHAPE: lower_reshape(g, n); break;
    case EG_MOP_FLATTEN:
    case EG_MOP_IDENTITY:
    case EG_MOP_COUNT: break; /* no opspecs operator means the same */
    }
    return EG_OK;
}

/* Put each appended node (n0 and on) right after the node it came of
 * (anchor[k - n0], an original node), in the order appended: the node
 * order then follows the file's, so the export, read and lowered again,
 * writes the same order (eg_toposort keeps an order that is already
 * topological, and a lowering's pieces read only what the node read or
 * its earlier pieces). @return EG_OK or EG_ENOMEM. */
static eg_status place_appended(eg_graph *g, int n0, const int *anchor) {
    int n = g->n_nodes, at = 0;
    eg_node *to = malloc(sizeof *to * (size_t)n);
    int *first = malloc(sizeof *first * (size_t)(n0 + 1)), *next = malloc(sizeof *next * (size_t)(n - n0 + 1));
    if (!to || !first || !next) {
        free(to), free(first), free(next);
        return EG_ENOMEM;
    }
    for (int j = 0; j < n0; j++) first[j] = -1;
    for (int k = n - 1; k >= n0; k--) { /* lists in the order appended */
        next[k - n0] = first[anchor[k - n0]];
        first[anchor[k - n0]] = k;
    }
    for (int j = 0; j < n0; j++) {
        to[at++] = g->node[j];
        for (int k = first[j]; k >= 0; k = next[k - n0]) to[at++] = g->node[k];
    }
    memcpy(g->node, to, sizeof *to * (size_t)n);
    free(to), free(first), free(next);
    return EG_OK;
}

eg_status eg_lower(eg_graph *g) {
    int any = 0, dropped = 0;
    unsigned char *drop = calloc((size_t)g->n_nodes + 1, 1);
    if (!drop) return EG_ENOMEM;
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].kind == EG_KIND_MODEL &&
            (g->node[j].mop == EG_MOP_IDENTITY || (g->node[j].mop == EG_MOP_SUM && g->node[j].n_in == 1)) &&
            alias_identity(g, &g->node[j]))
            drop[j] = 1, dropped = 1;
        else if (alias_noop_reshape(g, &g->node[j]))
            drop[j] = 1, dropped = 1;
    eg_status rc = dropped ? eg_remove_nodes(g, drop, NULL, 0) : EG_OK;
    free(drop);
    if (rc != EG_OK) return rc;
    uses_t uses = {malloc(sizeof(int) * ((size_t)g->n_tensors + 1)), g->n_tensors};
    int n0 = g->n_nodes;
    drop = calloc((size_t)n0 + 1, 1); /* nodes a lowering absorbed (IsNaN) */
    if (!uses.of || !drop) {
        free(uses.of), free(drop);
        return EG_ENOMEM;
    }
    eg_count_uses(g, uses.of);
    int *anchor = NULL, n_anchor = 0; /* appended node n0 + i came of node anchor[i] */
    for (int j = 0; rc == EG_OK && j < g->n_nodes; j++) { /* appended nodes are lowered too */
        int appended, before = g->n_nodes;
        rc = lower_node(g, j, &uses, j < n0 ? drop : NULL, &appended);
        any |= appended;
        if (rc == EG_OK && g->n_nodes > before) {
            int *a = realloc(anchor, sizeof *a * (size_t)(g->n_nodes - n0));
            if (!a) rc = EG_ENOMEM;
            else anchor = a;
            for (int k = before; rc == EG_OK && k < g->n_nodes; k++)
                anchor[n_anchor++] = j < n0 ? j : anchor[j - n0];
        }
    }
    if (rc == EG_OK) absorb_unread(g, &uses);
    free(uses.of);
    int absorbed = 0;
    for (int j = 0; j < n0; j++) absorbed |= drop[j];
    if (rc == EG_OK && absorbed) { /* drop covers the nodes before the appended ones */
        unsigned char *all = calloc((size_t)g->n_nodes + 1, 1);
        if (all) memcpy(all, drop, (size_t)n0);
        rc = all ? eg_remove_nodes(g, all, NULL, 0) : EG_ENOMEM;
        free(all);
    }
    if (rc == EG_OK && n_anchor) { /* the removal kept the order: renumber the anchors */
        int kept = 0, *pos = malloc(sizeof *pos * (size_t)(n0 + 1));
        for (int j = 0; pos && j < n0; j++) /* a dropped node: the one before it */
            pos[j] = drop[j] ? (kept > 0 ? kept - 1 : 0) : kept++;
        for (int i = 0; pos && i < n_anchor; i++) anchor[i] = pos[anchor[i]];
        rc = pos ? place_appended(g, kept, anchor) : EG_ENOMEM;
        free(pos);
    }
    free(anchor);
    free(drop);
    if (rc != EG_OK || !(any || dropped || absorbed)) return rc;
    /* the graph was valid before, so only memory can fail here */
    rc = eg_index(g, NULL, 0);
    return rc == EG_OK ? eg_toposort(g, NULL, 0) : rc;
}
