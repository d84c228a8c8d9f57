/* out_ops.c - ONNX export of opspecs operators: each becomes the ONNX nodes
 * the model's opset expects, fused with its neighbours where planned (out_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/out_int.h"
#include "onnx/groups.h"
#include "fold/fold.h"
#include "win.h"

/* ================= opspecs operators ================= */

static void window_attrs(nbuild *b, int64_t kh, int64_t kw, int32_t stride, int32_t pad) {
    int64_t k[2] = {kh, kw}, s[2] = {stride, stride};
    int64_t ph = ops_pad_begin((int32_t)kh, pad), pw = ops_pad_begin((int32_t)kw, pad);
    int64_t p[4] = {ph, pw, ph, pw};
    eo_nb_ints(b, "kernel_shape", k, 2);
    eo_nb_ints(b, "strides", s, 2);
    eo_nb_ints(b, "pads", p, 4);
}

/* conv2d; a fused RELU becomes Conv into a fresh tensor, then Relu; a
 * bias node (eo_plan_channels) becomes the Conv's third input and output. */
static eg_status emit_conv2d(octx *c, const eg_node *n, const eg_node *bias) {
    nbuild b;
    const eg_shape *w = &c->g->tensor[n->in[1]].shape;
    const char *y = eo_tname(c, (bias ? bias : n)->out[0]);
    eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_CONV], 3, 1);
    if (rc == EG_OK && n->param[2] == OPS_ACT_RELU && !(y = eo_nb_own(&b, eo_fresh_name(c, y, "conv"))))
        rc = EG_ENOMEM;
    if (rc == EG_OK) {
        eo_nb_in(&b, eo_tname(c, n->in[0])), eo_nb_in(&b, eo_tname(c, n->in[1])), eo_nb_out(&b, y);
        if (bias) eo_nb_in(&b, eo_tname(c, bias->in[1]));
        window_attrs(&b, w->dim[2], w->dim[3], n->param[0], n->param[1]);
        eo_nb_int(&b, "group", n->param[3]);
        rc = eo_nb_emit(c, &b, n->name);
    }
    nbuild r;
    if (rc == EG_OK && n->param[2] == OPS_ACT_RELU && (rc = eo_nb_init(&r, eg_xop_name[EG_X_RELU], 1, 1)) == EG_OK) {
        eo_nb_in(&r, y), eo_nb_out(&r, eo_tname(c, n->out[0]));
        rc = eo_nb_emit(c, &r, n->name);
        eo_nb_free(&r);
    }
    eo_nb_free(&b);
    return rc;
}

/* Pad(x) -> y with zeros, pads[8] in ONNX order, as the opset spells it:
 * attribute "paddings" (Pad-1), "pads" (2..10), an input (11 on). */
static eg_status emit_pad(octx *c, const char *x, const char *y, const int64_t *pads, const char *name) {
    nbuild b;
    eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_PAD], 2, 1);
    if (rc == EG_OK) {
        eo_nb_in(&b, x), eo_nb_out(&b, y);
        if (c->g->opset < 11) eo_nb_ints(&b, c->g->opset < 2 ? "paddings" : "pads", pads, 8);
        else if (!eo_nb_in_owned(&b, eo_put_ints(c, y, "pads", pads, 8))) rc = EG_ENOMEM;
        if (rc == EG_OK) rc = eo_nb_emit(c, &b, name);
    }
    eo_nb_free(&b);
    return rc;
}

/* maxpool/avgpool. An avgpool with SAME padding counts the pads; before
 * opset 7 AveragePool has no count_include_pad and never counts them, so
 * the zeros are padded on by a Pad in front. */
/* An average pool whose one VALID window is the whole plane: what a
 * GlobalAveragePool becomes on import (lower.c), written back as one. */
static int global_pool(const octx *c, const eg_node *n) {
    const eg_shape *x = &c->g->tensor[n->in[0]].shape;
    return n->op == OP_AVGPOOL && n->param[1] == 1 && n->param[2] == OPS_PAD_VALID &&
           x->rank == 4 && OPS_KERNEL_H(n->param[0]) == x->dim[2] &&
           OPS_KERNEL_W(n->param[0]) == x->dim[3];
}

static eg_status emit_pool(octx *c, const eg_node *n) {
    nbuild b;
    if (global_pool(c, n)) {
        eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_GAVGPOOL], 1, 1);
        if (rc != EG_OK) return rc;
        eo_nb_in(&b, eo_tname(c, n->in[0])), eo_nb_out(&b, eo_tname(c, n->out[0]));
        rc = eo_nb_emit(c, &b, n->name);
        eo_nb_free(&b);
        return rc;
    }
    int32_t k = n->param[0], pad = n->param[2];
    int64_t kh = OPS_KERNEL_H(k), kw = OPS_KERNEL_W(k);
    int64_t ph = ops_same_pad((int32_t)kh), pw = ops_same_pad((int32_t)kw);
    int64_t pads[8] = {0, 0, ph, pw, 0, 0, ph, pw};
    int pre_pad = n->op == OP_AVGPOOL && pad == OPS_PAD_SAME && c->g->opset < 7 && (kh > 1 || kw > 1);
    const char *x = eo_tname(c, n->in[0]);
    eg_status rc = eo_nb_init(&b, eg_xop_name[n->op == OP_AVGPOOL ? EG_X_AVGPOOL : EG_X_MAXPOOL], 1, 1);
    if (rc == EG_OK && pre_pad && !(x = eo_nb_own(&b, eo_fresh_name(c, eo_tname(c, n->out[0]), "pad"))))
        rc = EG_ENOMEM;
    if (rc == EG_OK && pre_pad && !(c->pad_name[n - c->g->node] = strdup(x))) rc = EG_ENOMEM;
    if (rc == EG_OK && pre_pad) rc = emit_pad(c, eo_tname(c, n->in[0]), x, pads, n->name);
    if (rc == EG_OK) {
        eo_nb_in(&b, x), eo_nb_out(&b, eo_tname(c, n->out[0]));
        window_attrs(&b, kh, kw, n->param[1], pre_pad ? OPS_PAD_VALID : pad);
        if (n->op == OP_AVGPOOL && pad == OPS_PAD_SAME && !pre_pad && c->g->opset >= 7)
            eo_nb_int(&b, "count_include_pad", 1);
        rc = eo_nb_emit(c, &b, n->name);
    }
    eo_nb_free(&b);
    return rc;
}

/* ---- Add and Mul before opset 7: legacy broadcasting ---- */

/* Where b, aligned to a's last dims, has its dims other than 1: [*lo, *hi).
 * @return 1 when those equal a's dims there (b broadcasts to a as a's
 *         dims lo..hi, which legacy broadcasting with axis lo writes). */
static int legacy_core(const eg_shape *a, const eg_shape *b, int *lo, int *hi) {
    int off = a->rank - b->rank;
    if (!eg_shape_known(a) || !eg_shape_known(b) || off < 0) return 0;
    *lo = a->rank, *hi = 0;
    for (int i = 0; i < b->rank; i++)
        if (b->dim[i] != 1) {
            if (*lo > off + i) *lo = off + i;
            *hi = off + i + 1;
        }
    if (*hi == 0) *lo = *hi = a->rank; /* one element */
    for (int i = *lo; i < *hi; i++)
        if (b->dim[i - off] != a->dim[i]) return 0;
    return 1;
}

/* The value the importer reshaped into v ("<name>_bcast", onnx_in.c's
 * legacy_channel): a float value of that name holding v's elements in the
 * core shape, so the export writes it back under its own name (revived
 * when nothing else reads it). @return its id, or -1. */
static int legacy_source(octx *c, const eg_tensor *v, const eg_shape *core) {
    size_t len = strlen(v->name);
    int64_t numel = eg_shape_numel(core);
    if (len <= 6 || strcmp(v->name + len - 6, "_bcast")) return -1;
    char *name = strndup(v->name, len - 6);
    int id = name ? eg_find_tensor(c->g, name) : -1;
    free(name);
    if (id < 0) return -1;
    const eg_tensor *t = &c->g->tensor[id];
    if (!(t->flags & EG_TF_INIT) || !t->data || t->shape.rank != core->rank ||
        memcmp(t->shape.dim, core->dim, sizeof(int64_t) * (size_t)core->rank) ||
        memcmp(t->data, v->data, sizeof(float) * (size_t)numel))
        return -1;
    if (!eo_value_live(c, id)) c->revived[id] = 1;
    return id;
}

/* Write the broadcast of inputs 0 and 1 (already in b) as opset < 7
 * spells it: nothing for equal shapes; broadcast = 1 (with axis) when the
 * second is the first's dims lo..hi plus leading or trailing 1s, the
 * inputs swapped when it is the other way round (Add and Mul commute),
 * and, when the 1s would be in the way, a float value rewritten without
 * them. @return EG_OK, EG_ENOMEM, or EG_EFORMAT when the opset cannot say it. */
eg_status eo_legacy_broadcast(octx *c, const eg_node *n, nbuild *b) {
    char sa[160], sb[160];
    int t[2] = {n->in[0], n->in[1]}, lo, hi, swap;
    const eg_shape *s0 = &c->g->tensor[t[0]].shape, *s1 = &c->g->tensor[t[1]].shape;
    /* the importer lowers a legacy broadcast=1 only between known shapes,
     * so an unknown one comes from broadcast=0: equal shapes, no attribute */
    if (!eg_shape_known(s0) || !eg_shape_known(s1)) return EG_OK;
    if (s0->rank == s1->rank && !memcmp(s0->dim, s1->dim, sizeof(int64_t) * (size_t)s0->rank))
        return EG_OK;
    swap = !legacy_core(s0, s1, &lo, &hi);
    if (swap && !legacy_core(s1, s0, &lo, &hi))
        return eo_fail(c, EG_EFORMAT, "node '%s' (%s): broadcasting %s with %s cannot be written in "
                       "opset %d", n->name, b->np.op_type, eg_shape_str(s0, NULL, sa, sizeof sa),
                       eg_shape_str(s1, NULL, sb, sizeof sb), c->g->opset);
    const eg_tensor *a = &c->g->tensor[t[swap]], *v = &c->g->tensor[t[!swap]];
    b->in[0] = a->name, b->in[1] = v->name;
    eo_nb_int(b, "broadcast", 1);
    if (hi == lo || (hi - lo == v->shape.rank && hi == a->shape.rank)) return EG_OK; /* suffix */
    if (hi - lo != v->shape.rank) { /* 1s to drop: only a value can be rewritten */
        eg_shape core = {hi - lo, {0}};
        memcpy(core.dim, a->shape.dim + lo, sizeof(int64_t) * (size_t)(hi - lo));
        if (!v->data || !(v->flags & EG_TF_INIT))
            return eo_fail(c, EG_EFORMAT, "node '%s' (%s): broadcasting %s with %s cannot be written "
                           "in opset %d", n->name, b->np.op_type, eg_shape_str(&a->shape, NULL, sa, sizeof sa),
                           eg_shape_str(&v->shape, NULL, sb, sizeof sb), c->g->opset);
        int src = legacy_source(c, v, &core);
        char *name = src >= 0 ? NULL : eo_nb_own(b, eo_fresh_name(c, v->name, "legacy"));
        if (src < 0 && (!name || eo_put_value(c, name, EG_DT_FLOAT, &core, v->data,
                                              sizeof(float) * (size_t)eg_shape_numel(&core), 1, -1) != EG_OK))
            return EG_ENOMEM;
        b->in[1] = src >= 0 ? c->g->tensor[src].name : name;
        c->uses[t[!swap]]--; /* read here no more: dropped if absorbed and unread */
    }
    if (hi > lo) eo_nb_int(b, "axis", lo);
    return EG_OK;
}

/* An op with the node's inputs and output and at most one int attribute. */
static eg_status emit_plain(octx *c, const eg_node *n, const char *op_type, const char *attr,
                            int64_t v) {
    nbuild b;
    eg_status rc = eo_nb_init(&b, op_type, n->n_in, 1);
    if (rc == EG_OK) {
        for (int k = 0; k < n->n_in; k++) eo_nb_in(&b, eo_tname(c, n->in[k]));
        eo_nb_out(&b, eo_tname(c, n->out[0]));
        if (attr) eo_nb_int(&b, attr, v);
        if (c->g->opset < 7 && (eg_xop_of(op_type) == EG_X_ADD || eg_xop_of(op_type) == EG_X_MUL))
            rc = eo_legacy_broadcast(c, n, &b);
        if (rc == EG_OK) rc = eo_nb_emit(c, &b, n->name);
    }
    eo_nb_free(&b);
    return rc;
}

/* A map whose ONNX spelling carries constants (ops_info.onnx_const): as
 * scalar inputs after x from the opset the table names, else as float
 * attributes. */
/* nanzero: IsNaN(x) into a fresh tensor, then Where(it, 0, x). */
static eg_status emit_nanzero(octx *c, const eg_node *n) {
    static const eg_shape scalar = {0, {0}};
    const char *x = eo_tname(c, n->in[0]), *y = eo_tname(c, n->out[0]);
    nbuild b, w;
    eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_ISNAN], 1, 1);
    if (rc != EG_OK) return rc;
    const char *isnan = eo_nb_own(&b, eo_fresh_name(c, y, "isnan"));
    if (!isnan) rc = EG_ENOMEM;
    if (rc == EG_OK) { /* the Where keeps the node's name, so reading the file back and
                          writing it again gives the same names */
        size_t len = strlen(n->name) + 8;
        char *name = malloc(len);
        eo_nb_in(&b, x), eo_nb_out(&b, isnan);
        if (name) snprintf(name, len, "%s_isnan", n->name);
        rc = name ? eo_nb_emit(c, &b, name) : EG_ENOMEM;
        free(name);
    }
    if (rc == EG_OK && (rc = eo_nb_init(&w, eg_xop_name[EG_X_WHERE], 3, 1)) == EG_OK) {
        eo_nb_in(&w, isnan);
        if (!eo_nb_in_owned(&w, eo_put_fill(c, y, "zero", 0.0f, &scalar))) rc = EG_ENOMEM;
        eo_nb_in(&w, x), eo_nb_out(&w, y);
        if (rc == EG_OK) rc = eo_nb_emit(c, &w, n->name);
        eo_nb_free(&w);
    }
    eo_nb_free(&b);
    return rc;
}

static eg_status emit_map(octx *c, const eg_node *n) {
    const ops_info *o = &ops_table[n->op];
    if (n->op == OP_NANZERO) return emit_nanzero(c, n);
    int as_inputs = o->onnx_const_inputs_since > 0 && c->g->opset >= o->onnx_const_inputs_since;
    static const eg_shape scalar = {0, {0}};
    nbuild b;
    eg_status rc = eo_nb_init(&b, o->onnx, 3, 1);
    if (rc != EG_OK) return rc;
    eo_nb_in(&b, eo_tname(c, n->in[0])), eo_nb_out(&b, eo_tname(c, n->out[0]));
    for (int k = 0; k < 2 && o->onnx_const[k].name && rc == EG_OK; k++) {
        if (!as_inputs) {
            if (!o->onnx_const[k].is_default) eo_nb_float(&b, o->onnx_const[k].name, o->onnx_const[k].value);
        } else if (!eo_nb_in_owned(&b, eo_put_fill(c, eo_tname(c, n->in[0]), o->onnx_const[k].name,
                                           o->onnx_const[k].value, &scalar)))
            rc = EG_ENOMEM;
    }
    if (rc == EG_OK) rc = eo_nb_emit(c, &b, n->name);
    eo_nb_free(&b);
    return rc;
}

/* transpose, or permute with its perm: one Transpose. */
static eg_status emit_transpose(octx *c, const eg_node *n) {
    int64_t perm[TEN_MAX_RANK] = {1, 0};
    int r = 2;
    if (n->op == OP_PERMUTE)
        for (r = 0; r < OPS_PERM_RANK(n->param[0]); r++) perm[r] = OPS_PERM_AT(n->param[0], r);
    if (c->unit_moved[n->in[0]]) /* its input's axes 0 and 1 are swapped */
        for (int a = 0; a < r; a++) perm[a] = perm[a] < 2 ? 1 - perm[a] : perm[a];
    nbuild b;
    eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_TRANSPOSE], 1, 1);
    if (rc == EG_OK) {
        eo_nb_in(&b, eo_tname(c, n->in[0])), eo_nb_out(&b, eo_tname(c, n->out[0]));
        eo_nb_ints(&b, "perm", perm, r);
        rc = eo_nb_emit(c, &b, n->name);
    }
    eo_nb_free(&b);
    return rc;
}

/* split0 + split1 on the same input and parameters: one Split. */
static eg_status emit_split_pair(octx *c, const eg_node *s0, const eg_node *s1) {
    nbuild b;
    int64_t d = c->g->tensor[s0->in[0]].shape.dim[s0->param[0]];
    int64_t sizes[2] = {s0->param[1], d - s0->param[1]};
    eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_SPLIT], 2, 2);
    if (rc == EG_OK) {
        eo_nb_in(&b, eo_tname(c, s0->in[0]));
        eo_nb_out(&b, eo_tname(c, s0->out[0])), eo_nb_out(&b, eo_tname(c, s1->out[0]));
        eo_nb_int(&b, "axis", s0->param[0]);
        if (c->g->opset < 13) eo_nb_ints(&b, "split", sizes, 2);
        else if (!eo_nb_in_owned(&b, eo_put_ints(c, eo_tname(c, s0->out[0]), "split", sizes, 2))) rc = EG_ENOMEM;
        if (rc == EG_OK) rc = eo_nb_emit(c, &b, s0->name);
    }
    eo_nb_free(&b);
    return rc;
}

/* An unpaired split0/split1: a Slice of [0, size) or [size, d). */
static eg_status emit_slice(octx *c, const eg_node *n) {
    nbuild b;
    int64_t axis = n->param[0], size = n->param[1];
    int64_t d = c->g->tensor[n->in[0]].shape.dim[axis];
    int64_t start = n->op == OP_SPLIT0 ? 0 : size, end = n->op == OP_SPLIT0 ? size : d;
    const char *y = eo_tname(c, n->out[0]);
    eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_SLICE], 4, 1);
    if (rc == EG_OK) {
        eo_nb_in(&b, eo_tname(c, n->in[0])), eo_nb_out(&b, y);
        if (c->g->opset < 10) {
            eo_nb_ints(&b, "starts", &start, 1), eo_nb_ints(&b, "ends", &end, 1), eo_nb_ints(&b, "axes", &axis, 1);
        } else if (!eo_nb_in_owned(&b, eo_put_ints(c, y, "starts", &start, 1)) ||
                   !eo_nb_in_owned(&b, eo_put_ints(c, y, "ends", &end, 1)) ||
                   !eo_nb_in_owned(&b, eo_put_ints(c, y, "axes", &axis, 1)))
            rc = EG_ENOMEM;
        if (rc == EG_OK) rc = eo_nb_emit(c, &b, n->name);
    }
    eo_nb_free(&b);
    return rc;
}

/* heads, unheads: one Reshape to the output's shape (an attribute before
 * opset 5, then an int64 input). */
static eg_status reshape_to(octx *c, const char *x, const char *y, const eg_shape *s, const char *name) {
    nbuild b;
    eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_RESHAPE], 2, 1);
    if (rc == EG_OK) {
        eo_nb_in(&b, x), eo_nb_out(&b, y);
        if (c->g->opset < 5) eo_nb_ints(&b, "shape", s->dim, s->rank);
        else if (!eo_nb_in_owned(&b, eo_put_ints(c, y, "shape", s->dim, s->rank))) rc = EG_ENOMEM;
        if (rc == EG_OK) rc = eo_nb_emit(c, &b, name);
    }
    eo_nb_free(&b);
    return rc;
}

/* The shape a unit_moved tensor is written with: its first two axes
 * swapped. */
eg_shape eo_written_shape(const octx *c, int t) {
    eg_shape s = c->g->tensor[t].shape;
    if (c->unit_moved[t]) s.dim[0] = s.dim[1], s.dim[1] = 1;
    return s;
}

static eg_status emit_reshape(octx *c, const eg_node *n) {
    eg_shape s = eo_written_shape(c, n->out[0]);
    return reshape_to(c, eo_tname(c, n->in[0]), eo_tname(c, n->out[0]), &s, n->name);
}

/* y = x with its first two axes swapped (a kernel's O and I). */
static eg_status swap01_to(octx *c, const char *x, const char *y, const char *name) {
    static const int64_t swap01[4] = {1, 0, 2, 3};
    nbuild b;
    eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_TRANSPOSE], 1, 1);
    if (rc == EG_OK) {
        eo_nb_in(&b, x), eo_nb_out(&b, y), eo_nb_ints(&b, "perm", swap01, 4);
        rc = eo_nb_emit(c, &b, name);
    }
    eo_nb_free(&b);
    return rc;
}

/* y = Conv(x, w), stride 1, no padding, no bias. */
static eg_status conv_to(octx *c, const char *x, const char *w, const char *y, const char *name) {
    nbuild b;
    eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_CONV], 2, 1);
    if (rc == EG_OK) {
        eo_nb_in(&b, x), eo_nb_in(&b, w), eo_nb_out(&b, y);
        rc = eo_nb_emit(c, &b, name);
    }
    eo_nb_free(&b);
    return rc;
}

/* kmul(v, w) with v 1x1: w's kernel transposed to [I,M,kh,kw] (a vector:
 * reshaped to [1,M,1,1]) is a batch of images, so it is Conv(w', v),
 * turned back. With w 1x1 and v kxk, v is the batch: Conv(v, w
 * transposed) is [O,I,kh,kw] as it stands. (It reads weights only, so the
 * export has usually folded it.) */
static eg_status emit_kmul(octx *c, const eg_node *n) {
    const eg_shape *v = &c->g->tensor[n->in[0]].shape, *w = &c->g->tensor[n->in[1]].shape;
    const char *y = eo_tname(c, n->out[0]);
    char *t1 = eo_fresh_name(c, y, "kin"), *t2 = eo_fresh_name(c, y, "kconv");
    eg_status rc = t1 && t2 ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK && v->rank == 4 && v->dim[2] * v->dim[3] != 1) { /* w 1x1 */
        rc = swap01_to(c, eo_tname(c, n->in[1]), t1, t1);
        if (rc == EG_OK) rc = conv_to(c, eo_tname(c, n->in[0]), t1, y, n->name);
    } else if (rc == EG_OK && w->rank == 4) {
        rc = swap01_to(c, eo_tname(c, n->in[1]), t1, t1);
        if (rc == EG_OK) rc = conv_to(c, t1, eo_tname(c, n->in[0]), t2, t2);
        if (rc == EG_OK) rc = swap01_to(c, t2, y, n->name);
    } else if (rc == EG_OK) { /* [M] -> [1,M,1,1] and [1,O,1,1] -> [O] */
        eg_shape s = {4, {1, w->dim[0], 1, 1}};
        rc = reshape_to(c, eo_tname(c, n->in[1]), t1, &s, t1);
        if (rc == EG_OK) rc = conv_to(c, t1, eo_tname(c, n->in[0]), t2, t2);
        if (rc == EG_OK) rc = reshape_to(c, t2, y, &c->g->tensor[n->out[0]].shape, n->name);
    }
    free(t1), free(t2);
    return rc;
}

/* enlarge: zero-pad the kernel's spatial dims, centred. */
static eg_status emit_enlarge(octx *c, const eg_node *n) {
    const eg_shape *w = &c->g->tensor[n->in[0]].shape;
    int64_t ph = (OPS_KERNEL_H(n->param[0]) - w->dim[2]) / 2, pw = (OPS_KERNEL_W(n->param[0]) - w->dim[3]) / 2;
    int64_t pads[8] = {0, 0, ph, pw, 0, 0, ph, pw};
    return emit_pad(c, eo_tname(c, n->in[0]), eo_tname(c, n->out[0]), pads, n->name);
}

static eg_status emit_constant(octx *c, const eg_node *n) {
    const eg_tensor *t = &c->g->tensor[n->out[0]];
    int64_t numel = eg_shape_numel(&t->shape);
    if (numel < 0 || numel > ((int64_t)1 << 30))
        return eo_fail(c, EG_ELIMIT, "node '%s' (%s): constant of shape too large to write",
                       n->name, ops_table[n->op].name);
    float *v = malloc(sizeof(float) * (size_t)(numel ? numel : 1));
    if (!v) return EG_ENOMEM;
    const float *in[EG_MAX_INTS] = {NULL}; /* a constant reads its reference's shape alone */
    float *out[1] = {v};
    char err[256];
    eg_status rc = eg_fkern_node(c->g, n, in, out, err, sizeof err);
    if (rc != EG_OK) {
        free(v);
        return eo_fail(c, rc, "%s", err);
    }
    rc = eo_put_value(c, t->name, EG_DT_FLOAT, &t->shape, v, sizeof(float) * (size_t)numel, 1,
                                n->out[0]);
    free(v);
    return rc;
}

/* bias/scale (axis; x, v) as Add/Mul: numpy aligns trailing dims, so v
 * needs a 1 for each dim after the axis. A value only such nodes read is
 * written in that shape (eo_plan_channels); otherwise a Reshape makes it. */
/* scale(1; x, s) then bias(1; ., b) as BatchNormalization(x, s, b, 0, 1)
 * with epsilon 0: x * s / sqrt(1) + b, one pass. */
static eg_status emit_batchnorm(octx *c, const eg_node *s, const eg_node *b) {
    const eg_shape *vs = &c->g->tensor[s->in[1]].shape;
    nbuild nb;
    eg_status rc = eo_nb_init(&nb, eg_xop_name[EG_X_BATCHNORM], 5, 1);
    if (rc != EG_OK) return rc;
    eo_nb_in(&nb, eo_tname(c, s->in[0])), eo_nb_in(&nb, eo_tname(c, s->in[1])), eo_nb_in(&nb, eo_tname(c, b->in[1]));
    if (!eo_nb_in_owned(&nb, eo_put_fill(c, eo_tname(c, b->out[0]), "mean", 0.0f, vs)) ||
        !eo_nb_in_owned(&nb, eo_put_fill(c, eo_tname(c, b->out[0]), "var", 1.0f, vs)))
        rc = EG_ENOMEM;
    eo_nb_out(&nb, eo_tname(c, b->out[0]));
    eo_nb_float(&nb, "epsilon", 0.0f);
    if (rc == EG_OK) rc = eo_nb_emit(c, &nb, s->name);
    eo_nb_free(&nb);
    return rc;
}

/* matmul(a, w) then bias(1; ., v) as Gemm(a, w, v); w read through a
 * transpose that eo_plan_gemms fused becomes transB = 1 of its input. */
static eg_status emit_gemm(octx *c, const eg_node *m, const eg_node *b) {
    const eg_graph *g = c->g;
    int w = m->in[1], t = g->tensor[w].producer, trans = 0;
    if (t >= 0 && g->node[t].kind == EG_KIND_OPS && g->node[t].op == OP_TRANSPOSE &&
        c->fuse[t] == (int)(b - g->node))
        w = g->node[t].in[0], trans = 1;
    nbuild nb;
    eg_status rc = eo_nb_init(&nb, eg_xop_name[EG_X_GEMM], 3, 1);
    if (rc != EG_OK) return rc;
    eo_nb_in(&nb, eo_tname(c, m->in[0])), eo_nb_in(&nb, eo_tname(c, w)), eo_nb_in(&nb, eo_tname(c, b->in[1]));
    eo_nb_out(&nb, eo_tname(c, b->out[0]));
    if (trans) eo_nb_int(&nb, "transB", 1);
    rc = eo_nb_emit(c, &nb, m->name);
    eo_nb_free(&nb);
    return rc;
}

static eg_status emit_channel(octx *c, int j) {
    const eg_node *n = &c->g->node[j];
    const eg_tensor *x = &c->g->tensor[n->in[0]], *v = &c->g->tensor[n->in[1]];
    int trail = x->shape.rank - 1 - n->param[0];
    if (c->fuse[j] >= 0 && n->op == OP_BIAS && c->g->node[c->fuse[j]].kind == EG_KIND_OPS &&
        c->g->node[c->fuse[j]].op == OP_SCALE)
        return emit_batchnorm(c, &c->g->node[c->fuse[j]], n);
    if (c->fuse[j] >= 0 && n->op == OP_BIAS && c->g->node[c->fuse[j]].kind == EG_KIND_OPS &&
        c->g->node[c->fuse[j]].op == OP_MATMUL)
        return emit_gemm(c, &c->g->node[c->fuse[j]], n);
    if (c->fuse[j] >= 0) return EG_OK; /* the Conv's bias, or the BatchNormalization's scale */
    if (c->g->opset < 7 && trail > 0) { /* the legacy form says it directly */
        nbuild b;
        eg_status rc = eo_nb_init(&b, ops_table[n->op].onnx, 2, 1);
        if (rc == EG_OK) {
            eo_nb_in(&b, x->name), eo_nb_in(&b, v->name), eo_nb_out(&b, eo_tname(c, n->out[0]));
            eo_nb_int(&b, "broadcast", 1), eo_nb_int(&b, "axis", n->param[0]);
            rc = eo_nb_emit(c, &b, n->name);
        }
        eo_nb_free(&b);
        return rc;
    }
    if (trail == 0 || c->vtrail[n->in[1]] == trail)
        return emit_plain(c, n, ops_table[n->op].onnx, NULL, 0);
    int64_t shape[EG_MAX_RANK] = {v->shape.dim[0]};
    for (int k = 1; k <= trail; k++) shape[k] = 1;
    nbuild r, b;
    char *vr = eo_fresh_name(c, v->name, "bcast");
    eg_status rc = vr ? eo_nb_init(&r, eg_xop_name[EG_X_RESHAPE], 2, 1) : EG_ENOMEM;
    if (rc != EG_OK) return free(vr), rc;
    eo_nb_in(&r, v->name), eo_nb_out(&r, eo_nb_own(&r, vr));
    if (c->g->opset < 5) eo_nb_ints(&r, "shape", shape, trail + 1);
    else if (!eo_nb_in_owned(&r, eo_put_ints(c, v->name, "shape", shape, trail + 1))) rc = EG_ENOMEM;
    if (rc == EG_OK) rc = eo_nb_emit(c, &r, n->name);
    if (rc == EG_OK && (rc = eo_nb_init(&b, ops_table[n->op].onnx, 2, 1)) == EG_OK) {
        eo_nb_in(&b, x->name), eo_nb_in(&b, vr), eo_nb_out(&b, eo_tname(c, n->out[0]));
        rc = eo_nb_emit(c, &b, n->name);
        eo_nb_free(&b);
    }
    eo_nb_free(&r);
    return rc;
}

/* layernorm and the scale and bias eg_layernorm_of says belong to it: one
 * LayerNormalization (lower.c's lower_layernorm reads it back the same
 * way). fuse[layernorm] = the last of them, fuse[scale] = fuse[bias] = the
 * layernorm. Runs first. */
static void plan_layernorms(octx *c) {
    for (int j = 0; j < c->g->n_nodes; j++) {
        int l = eg_layernorm_of(c->g, c->uses, j);
        if (l < 0) continue;
        c->fuse[j] = l;
        if (c->g->node[j].op == OP_BIAS || c->fuse[l] < 0) c->fuse[l] = j;
    }
}

/* The name of vector v ([C]) as the scale or bias of a LayerNormalization
 * over the last `trail` + 1 dims: v itself when trail is 0, else v
 * reshaped to [C, 1, ..., 1] (a Reshape of a constant, which the runtime
 * folds), as ONNX wants them of the normalised shape. */
static char *ln_vector(octx *c, int v, int trail, const char *node) {
    const eg_shape *vs = &c->g->tensor[v].shape;
    char *y = NULL;
    if (!trail) return strdup(eo_tname(c, v));
    eg_shape s = {1 + trail, {vs->rank == 1 ? vs->dim[0] : -1}};
    for (int k = 1; k <= trail; k++) s.dim[k] = 1;
    if (!(y = eo_fresh_name(c, eo_tname(c, v), "ln"))) return NULL;
    if (reshape_to(c, eo_tname(c, v), y, &s, node) != EG_OK) {
        free(y);
        return NULL;
    }
    return y;
}

/* 1 when a dim of s after axis is not 1: a row operator along axis then
 * differs from ONNX's LayerNormalization (and Softmax before opset 13),
 * which take every dim from the axis on. */
static int rows_differ(const eg_shape *s, int axis) {
    for (int k = axis + 1; k < s->rank; k++)
        if (s->dim[k] != 1) return 1;
    return 0;
}

/* A Transpose of tensor name x by perm into a fresh name *y (tag'ed). */
static eg_status emit_perm(octx *c, const char *x, char **y, const char *tag, const int64_t *perm, int rank,
                           const char *node) {
    nbuild b;
    *y = eo_fresh_name(c, x, tag);
    eg_status rc = *y ? eo_nb_init(&b, eg_xop_name[EG_X_TRANSPOSE], 1, 1) : EG_ENOMEM;
    if (rc != EG_OK) return rc;
    eo_nb_in(&b, x), eo_nb_out(&b, *y), eo_nb_ints(&b, "perm", perm, rank);
    rc = eo_nb_emit(c, &b, node);
    eo_nb_free(&b);
    return rc;
}

/* Row operator n along its axis, written as ONNX op_type with the axis
 * last: x is moved there by a Transpose into *x, and *y is the name the
 * operator writes, moved back into n's output by finish_moved. perm and
 * inv get the permutation and its inverse. */
static eg_status start_moved(octx *c, const eg_node *n, const eg_node *last, char **x, char **y, int64_t *perm,
                             int64_t *inv) {
    int axis = n->param[0], rank = c->g->tensor[n->in[0]].shape.rank;
    for (int k = 0, q = 0; k < rank; k++)
        if (k != axis) perm[q++] = k;
    perm[rank - 1] = axis;
    for (int k = 0; k < rank; k++) inv[perm[k]] = k;
    *y = NULL;
    eg_status rc = emit_perm(c, eo_tname(c, n->in[0]), x, "last", perm, rank, n->name);
    if (rc == EG_OK && !(*y = eo_fresh_name(c, eo_tname(c, last->out[0]), "last"))) rc = EG_ENOMEM;
    return rc;
}

static eg_status finish_moved(octx *c, const eg_node *n, const eg_node *last, const char *y, const int64_t *inv) {
    nbuild b;
    eg_status rc = eo_nb_init(&b, eg_xop_name[EG_X_TRANSPOSE], 1, 1);
    if (rc != EG_OK) return rc;
    eo_nb_in(&b, y), eo_nb_out(&b, eo_tname(c, last->out[0]));
    eo_nb_ints(&b, "perm", inv, c->g->tensor[n->in[0]].shape.rank);
    rc = eo_nb_emit(c, &b, n->name);
    eo_nb_free(&b);
    return rc;
}

/* softmax(axis): Softmax; before opset 13 ONNX's Softmax flattens every
 * dim from its axis on, so an axis with other dims after it is moved last
 * and back. */
static eg_status emit_softmax(octx *c, const eg_node *n) {
    const eg_shape *xs = &c->g->tensor[n->in[0]].shape;
    if (c->g->opset >= 13 || !rows_differ(xs, n->param[0])) return emit_plain(c, n, eg_xop_name[EG_X_SOFTMAX], "axis", n->param[0]);
    int64_t perm[EG_MAX_RANK], inv[EG_MAX_RANK];
    char *x = NULL, *y = NULL;
    nbuild b;
    eg_status rc = start_moved(c, n, n, &x, &y, perm, inv);
    if (rc == EG_OK && (rc = eo_nb_init(&b, eg_xop_name[EG_X_SOFTMAX], 1, 1)) == EG_OK) {
        eo_nb_in(&b, x), eo_nb_out(&b, y), eo_nb_int(&b, "axis", xs->rank - 1);
        rc = eo_nb_emit(c, &b, n->name);
        eo_nb_free(&b);
    }
    if (rc == EG_OK) rc = finish_moved(c, n, n, y, inv);
    free(x), free(y);
    return rc;
}

/* layernorm(axis), with the scale and bias plan_layernorms fused into it
 * (without a fused scale its Scale is ones), as one ONNX
 * LayerNormalization. The opspecs layernorm normalises along its axis
 * alone, ONNX's over every dim from its axis on: the same when the dims
 * after the axis are all 1 (a channel norm of a pooled [N, C, 1, 1]; the
 * scale and bias then get those 1s too), and otherwise the axis is moved
 * last by a Transpose and back after. */
static eg_status emit_layernorm(octx *c, int j) {
    const eg_graph *g = c->g;
    const eg_node *n = &g->node[j];
    const eg_node *last = c->fuse[j] >= 0 ? &g->node[c->fuse[j]] : n;
    const eg_node *b = last != n && last->op == OP_BIAS ? last : NULL;
    const eg_node *s = b ? &g->node[g->tensor[b->in[0]].producer] : last != n ? last : NULL;
    const eg_shape *xs = &g->tensor[n->in[0]].shape;
    int axis = n->param[0], rank = xs->rank, moved = rows_differ(xs, axis);
    int trail = moved ? 0 : rank - 1 - axis;
    eg_shape vs = {1 + trail, {xs->dim[axis]}};
    for (int k = 1; k <= trail; k++) vs.dim[k] = 1;
    int64_t perm[EG_MAX_RANK], inv[EG_MAX_RANK];
    char *x = NULL, *y = NULL;
    eg_status rc = EG_OK;
    if (moved) {
        rc = start_moved(c, n, last, &x, &y, perm, inv);
    } else {
        x = strdup(eo_tname(c, n->in[0])), y = strdup(eo_tname(c, last->out[0]));
        if (!x || !y) rc = EG_ENOMEM;
    }
    nbuild nb;
    if (rc == EG_OK) rc = eo_nb_init(&nb, eg_xop_name[EG_X_LAYERNORM], 3, 1);
    if (rc != EG_OK) {
        free(x), free(y);
        return rc;
    }
    eo_nb_in(&nb, x);
    if (s) {
        if (!eo_nb_in_owned(&nb, ln_vector(c, s->in[1], trail, n->name))) rc = EG_ENOMEM;
    } else if (!eo_nb_in_owned(&nb, eo_put_fill(c, eo_tname(c, n->out[0]), "scale", 1.0f, &vs))) {
        rc = EG_ENOMEM;
    }
    if (b && rc == EG_OK && !eo_nb_in_owned(&nb, ln_vector(c, b->in[1], trail, n->name))) rc = EG_ENOMEM;
    eo_nb_out(&nb, y);
    eo_nb_int(&nb, "axis", moved ? rank - 1 : axis);
    eo_nb_float(&nb, "epsilon", ops_eps_value(n->param[1]));
    if (rc == EG_OK) rc = eo_nb_emit(c, &nb, n->name);
    eo_nb_free(&nb);
    if (rc == EG_OK && moved) rc = finish_moved(c, n, last, y, inv);
    free(x), free(y);
    return rc;
}

/* A conv2d without a fused relu whose output only a bias on its channels
 * reads is written as one Conv with that bias (what the runtimes fuse);
 * a value read only by bias/scale nodes needing the same trailing 1s is
 * written in that shape, so an imported [C,1,1] bias goes back as it came. */
eg_status eo_plan_channels(octx *c) {
    const eg_graph *g = c->g;
    int *reads = calloc((size_t)g->n_tensors + 1, sizeof *reads);
    if (!reads) return EG_ENOMEM;
    for (int j = 0; j < g->n_nodes; j++) c->fuse[j] = -1;
    for (int i = 0; i < g->n_tensors; i++) c->vtrail[i] = -1;
    plan_layernorms(c);
    for (int j = 0, p; j < g->n_nodes; j++) /* scale + bias: BatchNormalization (opset 9 on) */
        if (c->fuse[j] < 0 && (p = eg_bn_pair_of(g, c->uses, NULL, j)) >= 0 && c->fuse[p] < 0)
            c->fuse[j] = p, c->fuse[p] = j;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *b = &g->node[j];
        if (b->kind != EG_KIND_OPS || ops_table[b->op].form != OPS_FORM_CHANNEL) continue;
        int t = b->in[0], p = g->tensor[t].producer, trail = g->tensor[t].shape.rank - 1 - b->param[0];
        if (c->fuse[j] >= 0) trail = 0; /* a BatchNormalization's [C] */
        if (c->fuse[j] < 0 && p >= 0 && eg_conv_bias_of(g, c->uses, j) == p && c->fuse[p] < 0)
            c->fuse[p] = j, c->fuse[j] = p, trail = 0;
        int v = b->in[1];
        if (g->opset < 7) trail = 0; /* emit_channel's legacy form reads [d] */
        if (c->vtrail[v] == -1) c->vtrail[v] = (signed char)trail;
        else if (c->vtrail[v] != trail) c->vtrail[v] = -2;
        reads[v]++;
    }
    for (int i = 0; i < g->n_tensors; i++) {
        const eg_tensor *t = &g->tensor[i];
        if (c->vtrail[i] <= 0 || reads[i] != c->uses[i] || !t->data || !(t->flags & EG_TF_INIT) ||
            (t->flags & (EG_TF_INPUT | EG_TF_OUTPUT)) || t->shape.rank != 1)
            c->vtrail[i] = 0;
    }
    free(reads);
    return EG_OK;
}

/* A concat whose output only one concat along the same axis reads (the
 * importer's chain for an n-input Concat, or what rules made) is written
 * inside that one: fuse[inner] = outer. Runs after eo_plan_channels. */
void eo_plan_concats(octx *c) {
    const eg_graph *g = c->g;
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < 2 && g->node[j].kind == EG_KIND_OPS && g->node[j].op == OP_CONCAT; k++)
            if (eg_concat_inside(g, c->uses, j, k)) c->fuse[g->tensor[g->node[j].in[k]].producer] = j;
}

/* The single-use producer of t when it is an opspecs op, else -1. */
static int only_producer(const octx *c, int t, ops_op op) {
    const eg_graph *g = c->g;
    int p = t >= 0 ? g->tensor[t].producer : -1;
    if (p < 0 || g->node[p].kind != EG_KIND_OPS || g->node[p].op != op || c->uses[t] != 1 ||
        (g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED)) || c->fuse[p] >= 0)
        return -1;
    return p;
}

/* A bias on the columns of a matmul's only output is written with it as
 * one Gemm (the importer's form of a Gemm, lower.c), the matmul's right
 * operand read through a transpose as transB: fuse[bias] = matmul,
 * fuse[matmul] = bias, fuse[transpose] = bias. Runs after eo_plan_channels. */
void eo_plan_gemms(octx *c) {
    const eg_graph *g = c->g;
    for (int j = 0; j < g->n_nodes; j++) {
        int m = c->fuse[j] < 0 ? eg_gemm_of(g, c->uses, j) : -1;
        if (m < 0 || c->fuse[m] >= 0) continue;
        c->fuse[j] = m, c->fuse[m] = j;
        int t = only_producer(c, g->node[m].in[1], OP_TRANSPOSE);
        if (t >= 0) c->fuse[t] = j;
    }
}

/* Attention's heads, [1,m,k] -> [1,m,h,d] read by one permute that keeps
 * the unit axis first ([1,h,m,d], or [1,h,d,m] for the keys), are written
 * as [m,1,h,d] and the permute's perm adjusted to match: the same values
 * in the same memory order, but now the permute moves the leading axis
 * behind the batch axes, the form onnxruntime folds into the batched
 * MatMul reading it (FusedMatMul transBatchA/transBatchB), so no copy is
 * made. With a batch of 1 the two spellings are equal. */
void eo_plan_batch_transposes(octx *c) {
    const eg_graph *g = c->g;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        if (n->kind != EG_KIND_OPS || n->op != OP_PERMUTE || OPS_PERM_RANK(n->param[0]) != 4 ||
            OPS_PERM_AT(n->param[0], 0) != 0)
            continue;
        int t = n->in[0], p = g->tensor[t].producer;
        const eg_shape *s = &g->tensor[t].shape;
        if (p >= 0 && g->node[p].kind == EG_KIND_OPS && g->node[p].op == OP_HEADS && c->uses[t] == 1 &&
            !(g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED)) && s->rank == 4 && s->dim[0] == 1)
            c->unit_moved[t] = 1;
    }
}

static int inner_concat(const octx *c, int t) {
    int p = t >= 0 ? c->g->tensor[t].producer : -1;
    return p >= 0 && c->g->node[p].kind == EG_KIND_OPS && c->g->node[p].op == OP_CONCAT &&
           c->fuse[p] >= 0;
}

/* Grow a malloc'd array of n elements of size sz to hold one more. */
static int grow(void **a, int n, int *cap, size_t sz) {
    if (n < *cap) return 1;
    void *b = realloc(*a, sz * (size_t)(*cap * 2));
    if (!b) return 0;
    *a = b, *cap *= 2;
    return 1;
}

/* Node j's concat chain as one Concat of its leaves, in order (a
 * depth-first walk with an explicit stack: a chain may be long). */
static eg_status emit_concat(octx *c, int j) {
    const eg_node *n = &c->g->node[j];
    if (c->fuse[j] >= 0) return EG_OK; /* written inside its outer concat */
    int n_leaves = 0, cap = 8, sp = 0, scap = 8;
    const char **names = malloc(sizeof *names * (size_t)cap);
    int *stack = malloc(sizeof *stack * (size_t)scap);
    eg_status rc = names && stack ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) stack[sp++] = n->in[1], stack[sp++] = n->in[0];
    while (rc == EG_OK && sp > 0) {
        int t = stack[--sp];
        if (inner_concat(c, t)) {
            const eg_node *p = &c->g->node[c->g->tensor[t].producer];
            if (!grow((void **)&stack, sp + 1, &scap, sizeof *stack)) rc = EG_ENOMEM;
            else stack[sp++] = p->in[1], stack[sp++] = p->in[0];
        } else if (!grow((void **)&names, n_leaves, &cap, sizeof *names)) {
            rc = EG_ENOMEM;
        } else {
            names[n_leaves++] = eo_tname(c, t);
        }
    }
    nbuild b;
    if (rc == EG_OK && (rc = eo_nb_init(&b, eg_xop_name[EG_X_CONCAT], n_leaves, 1)) == EG_OK) {
        for (int k = 0; k < n_leaves; k++) eo_nb_in(&b, names[k]);
        eo_nb_out(&b, eo_tname(c, n->out[0]));
        eo_nb_int(&b, "axis", n->param[0]);
        rc = eo_nb_emit(c, &b, n->name);
        eo_nb_free(&b);
    }
    free(names), free(stack);
    return rc;
}

eg_status eo_emit_ops(octx *c, int j) {
    const eg_node *n = &c->g->node[j];
    const ops_info *o = &ops_table[n->op];
    switch (o->form) {
    case OPS_FORM_MAP: return emit_map(c, n);
    case OPS_FORM_MATMUL:
        if (c->fuse[j] >= 0) return EG_OK; /* inside the Gemm its bias writes */
        return emit_plain(c, n, o->onnx, NULL, 0);
    case OPS_FORM_BMM:
    case OPS_FORM_LINEAR:
    case OPS_FORM_ZIP:
    case OPS_FORM_SCALE: return emit_plain(c, n, o->onnx, NULL, 0);
    case OPS_FORM_CHANNEL: return emit_channel(c, j);
    case OPS_FORM_CONV: return emit_conv2d(c, n, c->fuse[j] >= 0 ? &c->g->node[c->fuse[j]] : NULL);
    case OPS_FORM_POOL: return emit_pool(c, n);
    case OPS_FORM_CONCAT: return emit_concat(c, j);
    case OPS_FORM_ROW:
        return n->op == OP_LAYERNORM ? emit_layernorm(c, j) : emit_softmax(c, n);
    case OPS_FORM_SPLIT:
        if (c->partner[j] < 0) return emit_slice(c, n);
        if (c->partner[j] < j) return EG_OK; /* written with its partner */
        return n->op == OP_SPLIT0 ? emit_split_pair(c, n, &c->g->node[c->partner[j]])
                                  : emit_split_pair(c, &c->g->node[c->partner[j]], n);
    case OPS_FORM_TRANSPOSE:
        if (c->fuse[j] >= 0) return EG_OK; /* a Gemm's transB */
        return emit_transpose(c, n);
    case OPS_FORM_PERMUTE: return emit_transpose(c, n);
    case OPS_FORM_HEADS: return emit_reshape(c, n);
    case OPS_FORM_ENLARGE: return emit_enlarge(c, n);
    case OPS_FORM_IMM:
    case OPS_FORM_CKERNEL:
    case OPS_FORM_ONES: return emit_constant(c, n);
    case OPS_FORM_KMUL: return emit_kmul(c, n);
    case OPS_FORM_COUNT: break;
    }
    return eo_fail(c, EG_EFORMAT, "node '%s': unknown opspecs operator %d", n->name, (int)n->op);
}

/* Pair each split1 with a split0 of the same input and parameters. */
void eo_pair_splits(const eg_graph *g, int *partner) {
    for (int j = 0; j < g->n_nodes; j++) partner[j] = -1;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *a = &g->node[j];
        if (a->kind != EG_KIND_OPS || a->op != OP_SPLIT1) continue;
        for (int i = 0; i < g->n_nodes; i++) {
            const eg_node *b = &g->node[i];
            if (b->kind == EG_KIND_OPS && b->op == OP_SPLIT0 && partner[i] < 0 &&
                b->in[0] == a->in[0] && b->param[0] == a->param[0] && b->param[1] == a->param[1]) {
                partner[i] = j, partner[j] = i;
                break;
            }
        }
    }
}
