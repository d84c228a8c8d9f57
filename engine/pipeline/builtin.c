/* builtin.c - the engine's few built-in rewrites around the rule-driven
 * search (fold.h): before it, Identity removal, BatchNormalization folding,
 * Conv bias split, ReLU fusion, NaN guards on finite values and CSE;
 * after it, weight
 * folding, Conv bias fusion and Reshape-pair removal. Each pass marks the
 * nodes it replaces, appends the new ones, then the graph is rebuilt
 * (drop, index, sort, infer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold/fold.h"
#include "shapes/infer.h"
#include "proto/attr.h"
#include "pipeline/pipeline.h"
#include "fold/range.h"
#include "win.h"

/* ================= helpers ================= */

static int float_init(const eg_graph *g, int t) {
    return t >= 0 && (g->tensor[t].flags & EG_TF_INIT) && g->tensor[t].dtype == EG_DT_FLOAT &&
           g->tensor[t].data && eg_shape_known(&g->tensor[t].shape);
}

/* Names may be rewired only when no subgraph refers to them by name. */
static int movable(const eg_graph *g, int t) {
    return t >= 0 && !(g->tensor[t].flags & (EG_TF_PINNED | EG_TF_OUTPUT | EG_TF_INPUT | EG_TF_INIT));
}

static int shape_eq(const eg_shape *a, const eg_shape *b) {
    if (!eg_shape_known(a) || !eg_shape_known(b) || a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return 0;
    return 1;
}

/* A fresh intermediate float tensor "<base>_<tag>[N]" of shape s. */
static eg_status new_tensor(eg_graph *g, int base, const char *tag, const eg_shape *s, int *id) {
    const char *b = g->tensor[base].name;
    size_t len = strlen(b) + strlen(tag) + 24;
    char *name = malloc(len);
    if (!name) return EG_ENOMEM;
    snprintf(name, len, "%s_%s", b, tag);
    for (int k = 0; eg_find_tensor(g, name) != -1; k++) snprintf(name, len, "%s_%s%d", b, tag, k);
    eg_status rc = eg_add_tensor(g, name, id);
    free(name);
    if (rc == EG_OK) g->tensor[*id].dtype = EG_DT_FLOAT, g->tensor[*id].shape = *s;
    return rc;
}

/* Append a node with inputs in[0..n_in) and output out. */
static eg_status add_node(eg_graph *g, eg_kind kind, const char *name, const int *in, int n_in,
                          int out, int *id) {
    char *copy = strdup(name);
    if (!copy) return EG_ENOMEM;
    eg_status rc = eg_add_node(g, kind, copy, n_in, 0, 1, id);
    free(copy);
    if (rc != EG_OK) return rc;
    memcpy(g->node[*id].in, in, sizeof(int) * (size_t)n_in);
    g->node[*id].out[0] = out;
    return EG_OK;
}

/* A per-node drop mask that grows with the node array. */
typedef struct {
    unsigned char *drop;
    int cap;
} dropset;

static eg_status drop_node(dropset *d, int j) {
    if (j >= d->cap) {
        int nc = (j + 1) * 2;
        unsigned char *p = realloc(d->drop, (size_t)nc);
        if (!p) return EG_ENOMEM;
        memset(p + d->cap, 0, (size_t)(nc - d->cap));
        d->drop = p, d->cap = nc;
    }
    d->drop[j] = 1;
    return EG_OK;
}

static int dropped(const dropset *d, int j) { return j < d->cap && d->drop[j]; }

/* Remove the dropped nodes and rebuild. */
static eg_status rebuild(eg_graph *g, dropset *d, char *err, size_t errlen) {
    eg_status rc = drop_node(d, g->n_nodes); /* room for every node */
    if (rc == EG_OK) rc = eg_remove_nodes(g, d->drop, err, errlen);
    if (rc == EG_OK) rc = eg_resolve(g, err, errlen);
    free(d->drop);
    d->drop = NULL, d->cap = 0;
    return rc;
}

/* ================= conv forms ================= */

/* The conv2d parameters of a model Conv (x, w) -> y when they mean the
 * same: equal strides, no padding or centred SAME, and the output shape
 * ops_infer_shape gives. @return 1 when p was set. */
static int conv2d_of(const eg_graph *g, const eg_attrs *a, int x, int w, int y, int32_t *p) {
    ten_shape s[2], want, got;
    char oerr[OPS_ERRLEN];
    if (!eg_to_ten_shape(&g->tensor[x].shape, &s[0]) || !eg_to_ten_shape(&g->tensor[w].shape, &s[1]) ||
        !eg_to_ten_shape(&g->tensor[y].shape, &want) || s[1].rank != 4)
        return 0;
    if ((a->flags & (EG_AF_AUTO_UPPER | EG_AF_AUTO_LOWER)) || a->stride[0] != a->stride[1]) return 0;
    int pad = ops_pad_of(s[1].dim[2], s[1].dim[3], a->pad);
    int32_t q[OPS_MAX_PARAMS] = {a->stride[0], pad, OPS_ACT_NONE, a->group};
    if (pad < 0 || ops_infer_shape(OP_CONV2D, q, s, &got, oerr) != OPS_OK || !ten_shape_eq(&got, &want))
        return 0;
    memcpy(p, q, sizeof q);
    return 1;
}

/* The model Conv attributes of a conv2d node with weights of shape ws. */
static void attrs_of_conv2d(const int32_t *p, const eg_shape *ws, eg_attrs *a) {
    memset(a, 0, sizeof *a);
    a->kernel[0] = (int32_t)ws->dim[2], a->kernel[1] = (int32_t)ws->dim[3];
    a->stride[0] = a->stride[1] = p[0];
    a->pad[0] = a->pad[2] = ops_pad_begin((int32_t)ws->dim[2], p[1]);
    a->pad[1] = a->pad[3] = ops_pad_begin((int32_t)ws->dim[3], p[1]);
    a->group = p[3];
    a->alpha = 1.0f, a->beta = 1.0f;
}

/* y = Conv(x, w) + bias (O floats, owned): conv2d + bias(1; ., [O]) when
 * the conv fits conv2d (the importer's form of a Conv with a bias, which
 * rules see and the export writes as one Conv), else a model Conv with
 * bias.
 * @return EG_OK with *split set to 1 for the first form; EG_ENOMEM. */
static eg_status emit_conv_bias(eg_graph *g, const eg_attrs *a, int x, int w, float *bias, int y,
                                const char *name, int *split) {
    int64_t o = g->tensor[w].shape.dim[0];
    int32_t p[OPS_MAX_PARAMS];
    int b, tmp = -1, id;
    eg_shape bs = {1, {o}};
    *split = conv2d_of(g, a, x, w, y, p);
    eg_status rc = eg_add_float_init(g, g->tensor[y].name, "bias", &bs, bias, &b);
    if (rc != EG_OK) return rc;
    if (!*split) {
        int in[3] = {x, w, b};
        rc = add_node(g, EG_KIND_MODEL, name, in, 3, y, &id);
        if (rc == EG_OK) g->node[id].mop = EG_MOP_CONV, g->node[id].attr = *a;
        return rc;
    }
    rc = new_tensor(g, y, "nobias", &g->tensor[y].shape, &tmp);
    int cin[2] = {x, w}, ain[2] = {tmp, b};
    if (rc == EG_OK) rc = add_node(g, EG_KIND_OPS, name, cin, 2, tmp, &id);
    if (rc == EG_OK) {
        g->node[id].op = OP_CONV2D;
        memcpy(g->node[id].param, p, sizeof p);
        rc = add_node(g, EG_KIND_OPS, name, ain, 2, y, &id);
    }
    if (rc == EG_OK) g->node[id].op = OP_BIAS, g->node[id].param[0] = 1;
    return rc;
}

/* ================= before the search ================= */

/* 1 when t is a float initializer whose every value is v (not a graph
 * input's default, which a feed may replace). */
static int all_values(const eg_graph *g, int t, float v) {
    if (!float_init(g, t) || (g->tensor[t].flags & EG_TF_INPUT)) return 0;
    int64_t n = eg_shape_numel(&g->tensor[t].shape);
    for (int64_t i = 0; i < n; i++)
        if (g->tensor[t].data[i] != v) return 0;
    return 1;
}

/* The input x of an arithmetic node that gives x back: x + 0, 0 + x,
 * x - 0, x * 1, 1 * x or x / 1 by a float constant, whichever form the
 * import left it in (MobileOne's branches start their sum from the
 * Python literal 0, so every block of its export adds a constant zero).
 * Adding zero turns -0 into +0 and nothing else. The rules cannot say
 * it: they have no constants. The caller checks that the shape is x's
 * (a zero of a larger shape broadcasts). Else -1. */
static int neutral_input(const eg_graph *g, const eg_node *n) {
    if (n->n_in != 2 || n->in[1] < 0) return -1;
    int a = n->in[0], b = n->in[1];
    int add = 0, mul = 0, both = 0; /* what it is; both: either side may be the constant */
    if (n->kind == EG_KIND_OPS) {
        add = n->op == OP_SADD || n->op == OP_EWADD, mul = n->op == OP_SMUL || n->op == OP_SDIV || n->op == OP_EWMUL;
        both = n->op == OP_EWADD || n->op == OP_EWMUL;
    } else if (n->kind == EG_KIND_MODEL) {
        add = n->mop == EG_MOP_ADD, mul = n->mop == EG_MOP_MUL || n->mop == EG_MOP_DIV;
        both = n->mop != EG_MOP_DIV;
    } else if (n->kind == EG_KIND_OPAQUE && !n->n_implicit && eg_default_domain(n->domain)) {
        eg_xop op = eg_xop_of(n->op_type);
        add = op == EG_X_ADD || op == EG_X_SUB, mul = op == EG_X_MUL || op == EG_X_DIV;
        both = op == EG_X_ADD || op == EG_X_MUL;
    }
    if (!add && !mul) return -1;
    float v = add ? 0.0f : 1.0f;
    return all_values(g, b, v) ? a : both && all_values(g, a, v) ? b : -1;
}

/* The input whose value node n's one output is: an Identity's, an
 * arithmetic node's by a neutral constant (neutral_input), or an
 * opaque node's that moves nothing (exports write them where a size
 * happens to need no change: a Swin window that divides the image): a
 * Cast to the same type, a Pad by zeros, a Slice with steps forward or an
 * Expand that keeps the shape. Else -1. */
static int noop_input(const eg_graph *g, const eg_node *n) {
    if (n->n_out != 1 || n->out[0] < 0 || n->n_in < 1 || n->in[0] < 0) return -1;
    int kept = neutral_input(g, n);
    if (kept >= 0) {
        const eg_tensor *tk = &g->tensor[kept], *ty = &g->tensor[n->out[0]];
        return tk->dtype && tk->dtype == ty->dtype && shape_eq(&tk->shape, &ty->shape) ? kept : -1;
    }
    if (n->kind == EG_KIND_MODEL) return n->mop == EG_MOP_IDENTITY ? n->in[0] : -1;
    if (n->kind != EG_KIND_OPAQUE || n->n_implicit || !eg_default_domain(n->domain)) return -1;
    const eg_tensor *x = &g->tensor[n->in[0]], *y = &g->tensor[n->out[0]];
    if (!x->dtype || x->dtype != y->dtype || !shape_eq(&x->shape, &y->shape)) return -1;
    int64_t v[2 * EG_MAX_RANK];
    int k = -1;
    for (int i = 1; i < n->n_in; i++) /* a feed could replace a graph input's default */
        if (n->in[i] >= 0 && (g->tensor[n->in[i]].flags & EG_TF_INPUT)) return -1;
    eg_xop op = eg_xop_of(n->op_type);
    if (op == EG_X_CAST || op == EG_X_EXPAND) return n->in[0];
    if (op == EG_X_PAD) { /* opset >= 11: pads is an input */
        if (n->n_in < 2 || n->in[1] < 0 || (k = eg_const_ints(&g->tensor[n->in[1]], v, 2 * EG_MAX_RANK)) < 0)
            return -1;
        for (int i = 0; i < k; i++)
            if (v[i]) return -1;
        return n->in[0];
    }
    if (op == EG_X_SLICE) { /* the same shape, forward: all of it */
        if (n->n_in >= 5 && n->in[4] >= 0 && (k = eg_const_ints(&g->tensor[n->in[4]], v, EG_MAX_RANK)) < 0)
            return -1;
        for (int i = 0; i < k; i++)
            if (v[i] <= 0) return -1;
        return n->in[0];
    }
    return -1;
}

/* Identity(x) -> y (or a node that moves nothing, noop_input): readers
 * of y read x; or, when y is a graph output, x's producer writes y
 * directly. */
static eg_status remove_identities(eg_graph *g, dropset *d, eg_builtin_stats *st) {
    for (int j = 0; j < g->n_nodes; j++) {
        eg_node *n = &g->node[j];
        int x = noop_input(g, n);
        if (x < 0) continue;
        int y = n->out[0], p = g->tensor[x].producer;
        eg_tensor *ty = &g->tensor[y];
        if (!(ty->flags & (EG_TF_OUTPUT | EG_TF_PINNED))) {
            eg_replace_uses(g, y, x);
        } else if (!(ty->flags & EG_TF_PINNED) && movable(g, x) && p >= 0 && !dropped(d, p)) {
            eg_node *pn = &g->node[p];
            for (int k = 0; k < pn->n_out; k++)
                if (pn->out[k] == x) pn->out[k] = y;
            eg_replace_uses(g, x, y);
            ty->producer = p;
        } else {
            continue;
        }
        if (drop_node(d, j) != EG_OK) return EG_ENOMEM;
        st->identity_removed++;
    }
    return EG_OK;
}

/* The conv node producing BN input x, usable for folding, or -1. */
static int bn_conv(const eg_graph *g, const int *uses, const dropset *d, int x) {
    int p = x >= 0 ? g->tensor[x].producer : -1;
    if (p < 0 || dropped(d, p) || uses[x] != 1 || !movable(g, x)) return -1;
    const eg_node *c = &g->node[p];
    int is_conv = (c->kind == EG_KIND_MODEL && c->mop == EG_MOP_CONV) ||
                  (c->kind == EG_KIND_OPS && c->op == OP_CONV2D && c->param[2] == OPS_ACT_NONE);
    if (!is_conv || !float_init(g, c->in[1]) || g->tensor[c->in[1]].shape.rank != 4) return -1;
    int64_t o = g->tensor[c->in[1]].shape.dim[0];
    if (c->kind == EG_KIND_MODEL && c->n_in > 2 && c->in[2] >= 0 && !eg_float_vec(g, c->in[2], o))
        return -1;
    return p;
}

/* W' = W * s[o], b' = (b - mean) * s + B, s = scale / sqrt(var + eps).
 * @return EG_OK with *w2 a new initializer and *bias (O floats, malloc'd). */
static eg_status bn_weights(eg_graph *g, const eg_node *c, int bias_t, const eg_node *bn, int *w2,
                            float **bias) {
    const eg_tensor *w = &g->tensor[c->in[1]];
    int64_t o = w->shape.dim[0], per = eg_shape_numel(&w->shape) / (o ? o : 1);
    const float *b = bias_t >= 0 ? g->tensor[bias_t].data : NULL;
    const float *sc = g->tensor[bn->in[1]].data, *bb = g->tensor[bn->in[2]].data;
    const float *mean = g->tensor[bn->in[3]].data, *var = g->tensor[bn->in[4]].data;
    float *nw = malloc(sizeof *nw * (size_t)(o * per + 1)), *nb = malloc(sizeof *nb * (size_t)(o + 1));
    if (!nw || !nb) {
        free(nw), free(nb);
        return EG_ENOMEM;
    }
    for (int64_t i = 0; i < o; i++) {
        double s = sc[i] / sqrt((double)var[i] + bn->attr.epsilon);
        for (int64_t k = 0; k < per; k++) nw[i * per + k] = (float)(w->data[i * per + k] * s);
        nb[i] = (float)(((b ? b[i] : 0.0) - mean[i]) * s + bb[i]);
    }
    eg_shape ws = w->shape;
    eg_status rc = eg_add_float_init(g, w->name, "bn", &ws, nw, w2);
    if (rc != EG_OK) free(nb);
    else *bias = nb;
    return rc;
}

/* Fold BatchNormalization j into conv p, through the bias node bnode
 * (bias(1; conv, b), the importer's form of a Conv with a bias) or -1. */
static eg_status fold_one_bn(eg_graph *g, dropset *d, int j, int p, int bnode, eg_builtin_stats *st) {
    int w2, split;
    float *bias;
    eg_attrs a;
    const eg_node *cv = &g->node[p];
    int bias_t = bnode >= 0 ? g->node[bnode].in[1]
                            : cv->kind == EG_KIND_MODEL && cv->n_in > 2 ? cv->in[2] : -1;
    eg_status rc = bn_weights(g, cv, bias_t, &g->node[j], &w2, &bias);
    if (rc != EG_OK) return rc;
    const eg_node *c = &g->node[p];
    if (c->kind == EG_KIND_OPS) attrs_of_conv2d(c->param, &g->tensor[c->in[1]].shape, &a);
    else a = c->attr;
    int x = c->in[0], y = g->node[j].out[0];
    char *name = strdup(c->name);
    if (!name) {
        free(bias);
        return EG_ENOMEM;
    }
    rc = emit_conv_bias(g, &a, x, w2, bias, y, name, &split);
    free(name);
    if (rc == EG_OK) rc = drop_node(d, p);
    if (rc == EG_OK && bnode >= 0) rc = drop_node(d, bnode);
    if (rc == EG_OK) rc = drop_node(d, j);
    if (rc == EG_OK) st->bn_folded++, st->bias_split += split;
    return rc;
}

static eg_status fold_batchnorms(eg_graph *g, dropset *d, eg_builtin_stats *st) {
    int *uses = malloc(sizeof *uses * (size_t)(g->n_tensors + 1));
    eg_status rc = uses ? EG_OK : EG_ENOMEM;
    if (uses) eg_count_uses(g, uses);
    int n = g->n_nodes;
    for (int j = 0; rc == EG_OK && j < n; j++) {
        const eg_node *bn = &g->node[j];
        if (dropped(d, j) || bn->kind != EG_KIND_MODEL || bn->mop != EG_MOP_BATCHNORM ||
            bn->n_in != 5 || bn->out[0] < 0 || bn->n_out != 1)
            continue;
        int x = bn->in[0], bnode = x >= 0 ? g->tensor[x].producer : -1;
        const eg_node *b = bnode >= 0 ? &g->node[bnode] : NULL;
        if (b && !dropped(d, bnode) && b->kind == EG_KIND_OPS && b->op == OP_BIAS && b->param[0] == 1 &&
            uses[x] == 1 && movable(g, x))
            x = b->in[0];
        else
            bnode = -1;
        int p = bn_conv(g, uses, d, x), ok = p >= 0;
        int64_t o = ok ? g->tensor[g->node[p].in[1]].shape.dim[0] : 0;
        for (int k = 1; k < 5 && ok; k++) ok = eg_float_vec(g, bn->in[k], o);
        if (ok && bnode >= 0) ok = eg_float_vec(g, g->node[bnode].in[1], o);
        if (ok) rc = fold_one_bn(g, d, j, p, bnode, st);
    }
    free(uses);
    return rc;
}

/* A model Conv with a float bias that fits conv2d: conv2d + Add. */
static eg_status split_biases(eg_graph *g, dropset *d, eg_builtin_stats *st) {
    int n = g->n_nodes;
    for (int j = 0; j < n; j++) {
        const eg_node *c = &g->node[j];
        int32_t p[OPS_MAX_PARAMS];
        if (dropped(d, j) || c->kind != EG_KIND_MODEL || c->mop != EG_MOP_CONV || c->n_in < 3 ||
            c->in[2] < 0 || c->out[0] < 0 || !float_init(g, c->in[1]) ||
            !eg_float_vec(g, c->in[2], g->tensor[c->in[1]].shape.dim[0]) ||
            !conv2d_of(g, &c->attr, c->in[0], c->in[1], c->out[0], p))
            continue;
        int64_t o = g->tensor[c->in[2]].shape.dim[0];
        float *bias = malloc(sizeof *bias * (size_t)o);
        char *name = strdup(c->name);
        eg_attrs a = c->attr;
        int x = c->in[0], w = c->in[1], y = c->out[0], split;
        eg_status rc = bias && name ? EG_OK : EG_ENOMEM;
        if (rc == EG_OK) {
            memcpy(bias, g->tensor[c->in[2]].data, sizeof *bias * (size_t)o);
            rc = emit_conv_bias(g, &a, x, w, bias, y, name, &split);
            bias = NULL;
        }
        free(bias), free(name);
        if (rc == EG_OK) rc = drop_node(d, j);
        if (rc != EG_OK) return rc;
        st->bias_split += split;
    }
    return EG_OK;
}

/* relu(conv2d(x, w)) with act NONE, the relu the conv's only reader:
 * conv2d with act RELU writing the relu's output (one kernel instead of
 * two; the export writes Conv + Relu again, which runtimes fuse). */
static eg_status fuse_relus(eg_graph *g, dropset *d, eg_builtin_stats *st) {
    int *uses = calloc((size_t)g->n_tensors + 1, sizeof *uses);
    if (!uses) return EG_ENOMEM;
    eg_count_uses(g, uses);
    for (int j = 0; j < g->n_nodes; j++) {
        eg_node *r = &g->node[j];
        if (r->kind != EG_KIND_OPS || r->op != OP_RELU || dropped(d, j)) continue;
        int x = r->in[0], p = g->tensor[x].producer;
        if (p < 0 || dropped(d, p) || uses[x] != 1 || !movable(g, x) ||
            (g->tensor[x].flags & (EG_TF_OUTPUT | EG_TF_PINNED)))
            continue;
        eg_node *c = &g->node[p];
        if (c->kind != EG_KIND_OPS || c->op != OP_CONV2D || c->param[2] != OPS_ACT_NONE) continue;
        c->param[2] = OPS_ACT_RELU;
        c->out[0] = r->out[0];
        r->out[0] = -1;
        if (drop_node(d, j) != EG_OK) {
            free(uses);
            return EG_ENOMEM;
        }
        st->relu_fused++;
    }
    free(uses);
    return EG_OK;
}

/* ================= NaN guards ================= */

/* nanzero(x) with x finite for every input (range.h): its readers read x.
 * The ranges read every weight, so a graph without a guard skips them. */
static eg_status drop_nan_guards(eg_graph *g, dropset *d, eg_builtin_stats *st) {
    int guards = 0;
    for (int j = 0; j < g->n_nodes; j++) guards += g->node[j].kind == EG_KIND_OPS && g->node[j].op == OP_NANZERO;
    if (!guards) return EG_OK;
    eg_range *r = malloc(sizeof *r * (size_t)(g->n_tensors + 1));
    if (!r) return EG_ENOMEM;
    eg_ranges(g, r);
    eg_status rc = EG_OK;
    for (int j = 0; j < g->n_nodes && rc == EG_OK; j++) {
        const eg_node *n = &g->node[j];
        if (dropped(d, j) || n->kind != EG_KIND_OPS || n->op != OP_NANZERO) continue;
        int x = n->in[0], y = n->out[0];
        if (x < 0 || y < 0 || !movable(g, y) || !eg_range_finite(r[x])) continue;
        eg_replace_uses(g, y, x);
        rc = drop_node(d, j);
        st->nan_guards_dropped++;
    }
    free(r);
    return rc;
}

/* ================= common subexpressions ================= */

static int same_attrs(const eg_attrs *a, const eg_attrs *b) {
    if (memcmp(a->kernel, b->kernel, sizeof a->kernel) || memcmp(a->stride, b->stride, sizeof a->stride) ||
        memcmp(a->pad, b->pad, sizeof a->pad) || a->group != b->group || a->axis != b->axis ||
        a->flags != b->flags || a->n_ints != b->n_ints)
        return 0;
    if (memcmp(&a->alpha, &b->alpha, sizeof(float)) || memcmp(&a->beta, &b->beta, sizeof(float)) ||
        memcmp(&a->epsilon, &b->epsilon, sizeof(float)))
        return 0;
    for (int i = 0; i < a->n_ints && i < EG_MAX_INTS; i++)
        if (a->ints[i] != b->ints[i]) return 0;
    return 1;
}

/* The same tensor, or two constants holding the same bytes (exported
 * models repeat a constant per layer: a mask's fill value, a shape). A
 * graph input's initializer is only a default, which a feed replaces. */
static int same_input(const eg_graph *g, int s, int t) {
    if (s == t) return 1;
    if (s < 0 || t < 0) return 0;
    const eg_tensor *a = &g->tensor[s], *b = &g->tensor[t];
    if (!(a->flags & EG_TF_INIT) || !(b->flags & EG_TF_INIT) || ((a->flags | b->flags) & EG_TF_INPUT) ||
        a->dtype != b->dtype || !a->dtype || !shape_eq(&a->shape, &b->shape))
        return 0;
    int64_t n = eg_shape_numel(&a->shape);
    if (a->data && b->data) return n >= 0 && memcmp(a->data, b->data, sizeof(float) * (size_t)n) == 0;
    return !a->data && !b->data && a->raw && b->raw && a->raw_len == b->raw_len &&
           memcmp(a->raw, b->raw, a->raw_len) == 0;
}

static int same_node(const eg_graph *g, const eg_node *a, const eg_node *b) {
    if (a->kind != b->kind || a->n_in != b->n_in || a->n_out != b->n_out || a->n_implicit || b->n_implicit)
        return 0;
    if (a->kind == EG_KIND_OPS &&
        (a->op != b->op || memcmp(a->param, b->param, sizeof(int32_t) * (size_t)ops_table[a->op].n_params)))
        return 0;
    if (a->kind == EG_KIND_MODEL && (a->mop != b->mop || !same_attrs(&a->attr, &b->attr))) return 0;
    for (int k = 0; k < a->n_in; k++)
        if (!same_input(g, a->in[k], b->in[k])) return 0;
    for (int k = 0; k < a->n_out; k++)
        if ((a->out[k] < 0) != (b->out[k] < 0) || (b->out[k] >= 0 && !movable(g, b->out[k]))) return 0;
    /* last: it reads both node protos */
    return a->kind != EG_KIND_OPAQUE || eg_opaque_same(a, b);
}

static eg_status merge_common(eg_graph *g, dropset *d, eg_builtin_stats *st) {
    for (int j = 0; j < g->n_nodes; j++)
        for (int i = 0; i < j; i++) {
            if (dropped(d, i) || !same_node(g, &g->node[i], &g->node[j])) continue;
            for (int k = 0; k < g->node[j].n_out; k++)
                if (g->node[j].out[k] >= 0) eg_replace_uses(g, g->node[j].out[k], g->node[i].out[k]);
            if (drop_node(d, j) != EG_OK) return EG_ENOMEM;
            st->cse_merged++;
            break;
        }
    return EG_OK;
}

/* ================= after the search ================= */

static int is_reshape(const eg_graph *g, int j) {
    return j >= 0 && g->node[j].kind == EG_KIND_MODEL && g->node[j].mop == EG_MOP_RESHAPE;
}

/* Reshape(x) of x's shape, or Reshape(Reshape(x)) back to x's shape:
 * readers of the result read x. */
static eg_status cancel_reshapes(eg_graph *g, dropset *d, eg_builtin_stats *st) {
    for (int j = 0; j < g->n_nodes; j++) {
        if (dropped(d, j) || !is_reshape(g, j)) continue;
        int src = g->node[j].in[0], y = g->node[j].out[0];
        if (src < 0 || y < 0 || !movable(g, y)) continue;
        const eg_shape *ys = &g->tensor[y].shape;
        int p = g->tensor[src].producer, x = -1;
        if (shape_eq(ys, &g->tensor[src].shape)) x = src;
        else if (is_reshape(g, p) && g->node[p].in[0] >= 0 && shape_eq(ys, &g->tensor[g->node[p].in[0]].shape))
            x = g->node[p].in[0];
        if (x < 0 || g->tensor[x].dtype != g->tensor[y].dtype) continue;
        eg_replace_uses(g, y, x);
        if (drop_node(d, j) != EG_OK) return EG_ENOMEM;
        st->reshapes_cancelled++;
    }
    return EG_OK;
}

/* ================= the two entry points ================= */

/* Reader counts before a pipeline, to tell the values it made unused. */
static int *snapshot_uses(const eg_graph *g, int *n0) {
    int *uses = malloc(sizeof *uses * (size_t)(g->n_tensors + 1));
    if (uses) eg_count_uses(g, uses);
    *n0 = g->n_tensors;
    return uses;
}

/* Initializers the rewrites left unread (read before, or made here) are
 * flagged absorbed, so export leaves them out. */
static eg_status absorb_unread(eg_graph *g, const int *uses0, int n0) {
    int *uses = malloc(sizeof *uses * (size_t)(g->n_tensors + 1));
    if (!uses) return EG_ENOMEM;
    eg_count_uses(g, uses);
    for (int i = 0; i < g->n_tensors; i++) {
        eg_tensor *t = &g->tensor[i];
        int was_read = i >= n0 || uses0[i] > 0;
        if ((t->flags & EG_TF_INIT) && was_read && !uses[i] &&
            !(t->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED | EG_TF_SPARSE)))
            t->flags |= EG_TF_ABSORBED;
    }
    free(uses);
    return EG_OK;
}

static eg_status finish(eg_graph *g, dropset *d, eg_builtin_stats *st, const int *uses0, int n0,
                        char *err, size_t errlen) {
    int dead = 0;
    eg_status rc = rebuild(g, d, err, errlen);
    if (rc == EG_OK) rc = eg_drop_dead(g, &dead, err, errlen);
    if (rc == EG_OK) rc = eg_resolve(g, err, errlen);
    if (rc == EG_OK) rc = absorb_unread(g, uses0, n0);
    st->dead_removed += dead;
    return rc;
}

static eg_status report(eg_status rc, char *err, size_t errlen) {
    if (rc == EG_ENOMEM && err && errlen && !err[0]) snprintf(err, errlen, "out of memory in a built-in rewrite");
    return rc;
}

/* The built-in rewrites, in the order they run: each marks what it drops
 * in d and counts in st; rebuild: the graph is rebuilt (nodes dropped,
 * sorted, shapes inferred) before the next pass reads it. The post phase
 * runs after eg_fold_weights. */
typedef struct {
    const char *name;
    int post; /* 0: eg_builtin_pre, 1: eg_builtin_post */
    eg_status (*apply)(eg_graph *g, dropset *d, eg_builtin_stats *st);
    int rebuild;
} pass;

static const pass passes[] = {
    {"identities", 0, remove_identities, 1},
    {"batchnorms into convs", 0, fold_batchnorms, 0},
    {"biases split", 0, split_biases, 1},
    {"relus into convs", 0, fuse_relus, 1},
    {"NaN guards", 0, drop_nan_guards, 0},
    {"common subexpressions", 0, merge_common, 0},
    {"reshapes cancelled", 1, cancel_reshapes, 0},
};

/* The passes of one phase, then dead nodes dropped. */
static eg_status run_passes(eg_graph *g, int post, eg_builtin_stats *st, const int *uses0, int n0, char *err,
                            size_t errlen) {
    dropset d = {NULL, 0};
    eg_status rc = EG_OK;
    for (size_t i = 0; i < sizeof passes / sizeof passes[0] && rc == EG_OK; i++) {
        if (passes[i].post != post) continue;
        rc = passes[i].apply(g, &d, st);
        if (rc == EG_ENOMEM && err && errlen) /* the passes leave messages to their caller */
            snprintf(err, errlen, "out of memory in the built-in pass '%s'", passes[i].name);
        if (rc == EG_OK && passes[i].rebuild) rc = rebuild(g, &d, err, errlen);
    }
    if (rc == EG_OK) rc = finish(g, &d, st, uses0, n0, err, errlen);
    free(d.drop);
    return rc;
}

eg_status eg_builtin_pre(eg_graph *g, eg_builtin_stats *st, char *err, size_t errlen) {
    eg_builtin_stats local = {0};
    int n0, *uses0 = snapshot_uses(g, &n0);
    if (!st) st = &local;
    eg_status rc = uses0 ? run_passes(g, 0, st, uses0, n0, err, errlen) : EG_ENOMEM;
    free(uses0);
    return report(rc, err, errlen);
}

eg_status eg_builtin_post(eg_graph *g, eg_builtin_stats *st, char *err, size_t errlen) {
    eg_builtin_stats local = {0};
    int folded = 0, n0, *uses0 = snapshot_uses(g, &n0);
    if (!st) st = &local;
    eg_status rc = uses0 ? eg_fold_weights(g, &folded, err, errlen) : EG_ENOMEM;
    st->weights_folded += folded;
    if (rc == EG_OK) rc = run_passes(g, 1, st, uses0, n0, err, errlen);
    free(uses0);
    return report(rc, err, errlen);
}
