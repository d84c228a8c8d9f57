/* onnx_out.c - ONNX export: an eg_graph becomes a ModelProto again.
 *
 * The model is assembled on the wire: the model shell the importer kept
 * (everything but the graph), then the graph field, itself the graph shell
 * followed by nodes, initializers, inputs, outputs and value_info. Nodes
 * are written in the graph's topological order: opspecs and model
 * operators from the IR (in the form the model's opset expects), opaque
 * nodes from their original bytes (re-packed only when their input or
 * output names changed). Graph inputs and outputs keep their original
 * ValueInfoProto; value_info is generated for every other tensor whose
 * type and shape are known.
 *
 * The opspecs operators are written by out_ops.c, names, values and nodes
 * built by out_build.c (out_int.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/out_int.h"
#include "shapes/infer.h"

/* ================= model operators ================= */

static void model_window(nbuild *b, const eg_attrs *a) {
    int64_t k[2] = {a->kernel[0], a->kernel[1]}, s[2] = {a->stride[0], a->stride[1]};
    int64_t p[4] = {a->pad[0], a->pad[1], a->pad[2], a->pad[3]};
    if (k[0] > 0) eo_nb_ints(b, "kernel_shape", k, 2);
    eo_nb_ints(b, "strides", s, 2);
    if (a->flags & EG_AF_AUTO_UPPER) eo_nb_str(b, "auto_pad", "SAME_UPPER");
    else if (a->flags & EG_AF_AUTO_LOWER) eo_nb_str(b, "auto_pad", "SAME_LOWER");
    else eo_nb_ints(b, "pads", p, 4);
}

/* Split: sizes as the opset expects them (attribute before 13, input
 * after; num_outputs from 18 when there are no sizes). */
static eg_status split_attrs(octx *c, const eg_node *n, nbuild *b) {
    const eg_attrs *a = &n->attr;
    eo_nb_int(b, "axis", a->axis);
    if ((a->flags & EG_AF_INTS) && c->g->opset < 13) eo_nb_ints(b, "split", a->ints, a->n_ints);
    else if ((a->flags & EG_AF_INTS) && b->np.n_input == 1) {
        if (!eo_nb_in_owned(b, eo_put_ints(c, eo_tname(c, n->out[0]), "split", a->ints, a->n_ints)))
            return EG_ENOMEM;
    } else if (c->g->opset >= 18 && b->np.n_input == 1)
        eo_nb_int(b, "num_outputs", n->n_out);
    return EG_OK;
}

/* Reshape: the target an input from opset 5, the attribute "shape" before
 * (Reshape-1), whichever form the node holds it in. */
static eg_status reshape_attrs(octx *c, const eg_node *n, nbuild *b) {
    const eg_attrs *a = &n->attr;
    int64_t t[EG_MAX_RANK];
    int k = a->flags & EG_AF_INTS ? a->n_ints : -1;
    if (k >= 0) memcpy(t, a->ints, sizeof(int64_t) * (size_t)k);
    else if (c->g->opset < 5 && (k = eg_const_ints(&c->g->tensor[n->in[1]], t, EG_MAX_RANK)) < 0)
        return eo_fail(c, EG_EFORMAT, "node '%s' (Reshape): opset %d needs a constant target shape",
                       n->name, c->g->opset);
    if (c->g->opset < 5) {
        b->np.n_input = 1;
        eo_nb_ints(b, "shape", t, k);
    } else if (a->flags & EG_AF_INTS) {
        if (!eo_nb_in_owned(b, eo_put_ints(c, eo_tname(c, n->out[0]), "shape", t, k))) return EG_ENOMEM;
    }
    if (a->flags & EG_AF_ALLOWZERO) eo_nb_int(b, "allowzero", 1);
    return EG_OK;
}

static eg_status model_attrs(octx *c, const eg_node *n, nbuild *b) {
    const eg_attrs *a = &n->attr;
    switch (n->mop) {
    case EG_MOP_CONV: model_window(b, a); eo_nb_int(b, "group", a->group); break;
    case EG_MOP_MAXPOOL: model_window(b, a); break;
    case EG_MOP_AVGPOOL: /* count_include_pad exists from opset 7 */
        model_window(b, a);
        if (c->g->opset >= 7) eo_nb_int(b, "count_include_pad", (a->flags & EG_AF_COUNT_PAD) != 0);
        break;
    case EG_MOP_GEMM:
        eo_nb_float(b, "alpha", a->alpha), eo_nb_float(b, "beta", a->beta);
        eo_nb_int(b, "transA", (a->flags & EG_AF_TRANS_A) != 0);
        eo_nb_int(b, "transB", (a->flags & EG_AF_TRANS_B) != 0);
        if (c->g->opset < 7 && n->n_in > 2 && n->in[2] >= 0 &&
            !eg_shape_equal(&c->g->tensor[n->in[2]].shape, &c->g->tensor[n->out[0]].shape))
            eo_nb_int(b, "broadcast", 1); /* a C other than [M, N] (numpy-equal: infer.c) */
        break;
    case EG_MOP_CONCAT:
    case EG_MOP_FLATTEN:
    case EG_MOP_SOFTMAX: eo_nb_int(b, "axis", a->axis); break;
    case EG_MOP_LAYERNORM: eo_nb_int(b, "axis", a->axis), eo_nb_float(b, "epsilon", a->epsilon); break;
    case EG_MOP_SPLIT: return split_attrs(c, n, b);
    case EG_MOP_TRANSPOSE:
        if (a->flags & EG_AF_INTS) eo_nb_ints(b, "perm", a->ints, a->n_ints);
        break;
    case EG_MOP_RESHAPE: return reshape_attrs(c, n, b);
    case EG_MOP_BATCHNORM:
        eo_nb_float(b, "epsilon", a->epsilon);
        if (c->g->opset < 7) eo_nb_int(b, "is_test", 1); /* opset 6 (1..5 are never lowered) */
        break;
    case EG_MOP_ADD:
    case EG_MOP_MUL:
    case EG_MOP_DIV: return c->g->opset < 7 ? eo_legacy_broadcast(c, n, b) : EG_OK;
    case EG_MOP_GLOBALAVGPOOL:
    case EG_MOP_MATMUL:
    case EG_MOP_RELU:
    case EG_MOP_SIGMOID:
    case EG_MOP_TANH:
    case EG_MOP_IDENTITY:
    case EG_MOP_SUM: /* lowered on import; written as is when met */
    case EG_MOP_COUNT: break;
    }
    return EG_OK;
}

static eg_status emit_model(octx *c, int j) {
    const eg_node *n = &c->g->node[j];
    nbuild b;
    int n_in = n->n_in;
    while (n_in > 0 && n->in[n_in - 1] < 0) n_in--; /* trailing omitted inputs */
    eg_status rc = eo_nb_init(&b, eg_mop_name(n->mop), n_in + 1, n->n_out);
    if (rc == EG_OK) {
        for (int k = 0; k < n_in; k++) eo_nb_in(&b, eo_tname(c, n->in[k]));
        for (int k = 0; k < n->n_out; k++) eo_nb_out(&b, eo_tname(c, n->out[k]));
        rc = model_attrs(c, n, &b);
    }
    if (rc == EG_OK) rc = eo_nb_emit(c, &b, n->name);
    eo_nb_free(&b);
    return rc;
}

/* ================= opaque nodes ================= */

static int same_names(const octx *c, char *const *names, size_t n, const int *ids, int n_ids) {
    if (n != (size_t)n_ids) return 0;
    for (size_t k = 0; k < n; k++)
        if (strcmp(names[k] ? names[k] : "", eo_tname(c, ids[k])) != 0) return 0;
    return 1;
}

/* The original bytes, unless the IR renamed an input or output: then the
 * node is re-packed with the new names and everything else as it was. */
static eg_status emit_opaque(octx *c, int j) {
    const eg_node *n = &c->g->node[j];
    uint32_t field = eo_field_id(&onnx__graph_proto__descriptor, "node");
    Onnx__NodeProto *np;
    egp_alloc a;
    char msg[EG_ERRLEN];
    egp_alloc_init(&a, n->proto_len * 8 + (64u << 20));
    if (egp_unpack(&onnx__node_proto__descriptor, &a, 1 << 16, n->proto, n->proto_len,
                   (ProtobufCMessage **)&np, msg, sizeof msg) != EG_OK)
        return eo_fail(c, EG_EFORMAT, "node '%s': its stored bytes do not decode: %s", n->name, msg);
    eg_status rc = EG_OK;
    if (same_names(c, np->input, np->n_input, n->in, n->n_in) &&
        same_names(c, np->output, np->n_output, n->out, n->n_out)) {
        egp_buf_field(&c->nodes, field, n->proto, n->proto_len);
    } else {
        nbuild b;
        char **in = np->input, **out = np->output;
        size_t nin = np->n_input, nout = np->n_output;
        if ((rc = eo_nb_init(&b, "", n->n_in, n->n_out)) == EG_OK) {
            for (int k = 0; k < n->n_in; k++) eo_nb_in(&b, eo_tname(c, n->in[k]));
            for (int k = 0; k < n->n_out; k++) eo_nb_out(&b, eo_tname(c, n->out[k]));
            np->input = b.in, np->n_input = b.np.n_input;
            np->output = b.out, np->n_output = b.np.n_output;
            egp_buf_message(&c->nodes, field, &np->base);
            np->input = in, np->n_input = nin, np->output = out, np->n_output = nout;
        }
        eo_nb_free(&b);
    }
    protobuf_c_message_free_unpacked(&np->base, &a.pc);
    return rc != EG_OK ? rc : eo_oom(c) ? EG_ENOMEM : EG_OK;
}

static eg_status emit_nodes(octx *c) {
    eg_status rc = EG_OK;
    for (int j = 0; j < c->g->n_nodes && rc == EG_OK; j++) {
        switch (c->g->node[j].kind) {
        case EG_KIND_OPS: rc = eo_emit_ops(c, j); break;
        case EG_KIND_MODEL: rc = emit_model(c, j); break;
        case EG_KIND_OPAQUE: rc = emit_opaque(c, j); break;
        case EG_KIND_COUNT: rc = eo_fail(c, EG_EFORMAT, "node %d has no kind", j); break;
        }
    }
    return rc;
}

/* ================= values, inputs, outputs, value_info ================= */

static eg_status emit_values(octx *c) {
    uint32_t field = eo_field_id(&onnx__graph_proto__descriptor, "initializer");
    for (int i = 0; i < c->g->n_tensors; i++) {
        const eg_tensor *t = &c->g->tensor[i];
        eg_status rc = EG_OK;
        int added = !(t->flags & EG_TF_INPUT);
        if (!eo_value_live(c, i)) continue;
        eg_shape ws = t->shape; /* a channel vector gets its trailing 1s */
        for (int k = 0; k < c->vtrail[i] && ws.rank < EG_MAX_RANK; k++) ws.dim[ws.rank++] = 1;
        if (t->data)
            rc = eo_put_value(c, t->name, EG_DT_FLOAT, &ws, t->data,
                              sizeof(float) * (size_t)eg_shape_numel(&t->shape), added, i);
        else if (t->proto) {
            egp_buf_field(&c->inits, field, t->proto, t->proto_len);
            if (added) rc = eo_note_added(c, t->name, t->dtype, &t->shape, i);
        } else if (t->raw)
            rc = eo_put_value(c, t->name, t->dtype, &t->shape, t->raw, t->raw_len, added, i);
        if (rc != EG_OK) return rc;
    }
    return eo_oom(c) ? EG_ENOMEM : EG_OK;
}

/* A ValueInfoProto for a tensor type with as much shape as is known. */
static void gen_vinfo(octx *c, uint32_t field, const char *name, int dtype, const eg_shape *s,
                      char *const *dim_name) {
    Onnx__ValueInfoProto vi;
    Onnx__TypeProto tp;
    Onnx__TypeProto__Tensor tt;
    Onnx__TensorShapeProto sp;
    Onnx__TensorShapeProto__Dimension d[EG_MAX_RANK], *dp[EG_MAX_RANK];
    onnx__value_info_proto__init(&vi);
    onnx__type_proto__init(&tp);
    onnx__type_proto__tensor__init(&tt);
    onnx__tensor_shape_proto__init(&sp);
    vi.name = (char *)name;
    vi.type = &tp;
    tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp.tensor_type = &tt;
    tt.has_elem_type = 1, tt.elem_type = dtype;
    if (s->rank >= 0) tt.shape = &sp;
    for (int i = 0; i < s->rank; i++) {
        onnx__tensor_shape_proto__dimension__init(&d[i]);
        dp[i] = &d[i];
        if (s->dim[i] >= 0)
            d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE, d[i].dim_value = s->dim[i];
        else if (dim_name && dim_name[i])
            d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM, d[i].dim_param = dim_name[i];
    }
    sp.n_dim = (size_t)(s->rank > 0 ? s->rank : 0), sp.dim = dp;
    egp_buf_message(&c->ios, field, &vi.base);
}

/* A graph input or output: its original entry, else a generated one. */
static void emit_io(octx *c, uint32_t field, const eg_tensor *t) {
    if (t->vinfo) egp_buf_field(&c->ios, field, t->vinfo, t->vinfo_len);
    else gen_vinfo(c, field, t->name, t->dtype, &t->shape, t->dim_name);
}

/* value_info for a node output: an opaque node's original entry; else
 * generated when dtype and shape are known; else the original, if any. */
static void emit_value_info(octx *c, uint32_t field, const eg_tensor *t) {
    int opaque = t->producer >= 0 && c->g->node[t->producer].kind == EG_KIND_OPAQUE;
    if (t->vinfo && (opaque || !t->dtype || !eg_shape_known(&t->shape)))
        egp_buf_field(&c->ios, field, t->vinfo, t->vinfo_len);
    else if (t->dtype && eg_shape_known(&t->shape)) {
        eg_shape s = eo_written_shape(c, (int)(t - c->g->tensor));
        gen_vinfo(c, field, t->name, t->dtype, &s, NULL);
    }
}

/* The value_info of the Pad output emit_pool put in front of node j, so
 * that a re-import, which sees a real tensor there, exports the same. */
static void emit_pad_vinfo(octx *c, uint32_t field, int j) {
    const eg_node *n = &c->g->node[j];
    const eg_tensor *x = &c->g->tensor[n->in[0]];
    eg_shape s = x->shape;
    if (!x->dtype || !eg_shape_known(&s) || s.rank != 4) return;
    s.dim[2] += OPS_KERNEL_H(n->param[0]) - 1;
    s.dim[3] += OPS_KERNEL_W(n->param[0]) - 1;
    gen_vinfo(c, field, c->pad_name[j], x->dtype, &s, NULL);
}

static eg_status emit_ios(octx *c) {
    const eg_graph *g = c->g;
    uint32_t fin = eo_field_id(&onnx__graph_proto__descriptor, "input");
    uint32_t fout = eo_field_id(&onnx__graph_proto__descriptor, "output");
    uint32_t fvi = eo_field_id(&onnx__graph_proto__descriptor, "value_info");
    for (int k = 0; k < g->n_inputs; k++) emit_io(c, fin, &g->tensor[g->input[k]]);
    /* IR < 4: every initializer is an input; a graph output's declaration
     * serves for it when there is one (one entry per tensor, as on import) */
    for (int k = 0; k < c->n_added; k++) {
        const new_value *v = &c->added[k];
        if (v->tensor >= 0 && g->tensor[v->tensor].vinfo) emit_io(c, fin, &g->tensor[v->tensor]);
        else gen_vinfo(c, fin, v->name, v->dtype, &v->shape, NULL);
    }
    for (int k = 0; k < g->n_outputs; k++) emit_io(c, fout, &g->tensor[g->output[k]]);
    /* in node order, which a re-import keeps (tensor ids it does not) */
    for (int j = 0; j < g->n_nodes; j++) {
        if (c->pad_name[j]) emit_pad_vinfo(c, fvi, j);
        if (g->node[j].kind == EG_KIND_OPS &&
            (g->node[j].op == OP_CONV2D || g->node[j].op == OP_CONCAT || g->node[j].op == OP_SCALE ||
             g->node[j].op == OP_MATMUL || g->node[j].op == OP_TRANSPOSE ||
             g->node[j].op == OP_LAYERNORM) &&
            c->fuse[j] >= 0)
            continue; /* its output is the fused bias's, inside a Concat or a BatchNormalization */
        for (int k = 0; k < g->node[j].n_out; k++) {
            int i = g->node[j].out[k];
            if (i >= 0 && !(g->tensor[i].flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_INIT)))
                emit_value_info(c, fvi, &g->tensor[i]);
        }
    }
    return eo_oom(c) ? EG_ENOMEM : EG_OK;
}

/* ================= assembly ================= */

static eg_status octx_init(octx *c, const eg_graph *g, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->g = g, c->err = err, c->errlen = errlen;
    c->uses = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
    c->partner = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    c->fuse = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    c->vtrail = malloc((size_t)g->n_tensors + 1);
    c->revived = calloc((size_t)g->n_tensors + 1, 1);
    c->unit_moved = calloc((size_t)g->n_tensors + 1, 1);
    c->pad_name = calloc((size_t)g->n_nodes + 1, sizeof *c->pad_name);
    c->node_names = eg_names_new();
    c->new_names = eg_names_new();
    if (!c->uses || !c->partner || !c->fuse || !c->vtrail || !c->revived || !c->unit_moved || !c->pad_name ||
        !c->node_names || !c->new_names)
        return EG_ENOMEM;
    eg_count_uses(g, c->uses);
    eo_pair_splits(g, c->partner);
    if (eo_plan_channels(c) != EG_OK) return EG_ENOMEM;
    eo_plan_concats(c);
    eo_plan_gemms(c);
    eo_plan_batch_transposes(c);
    /* opaque nodes keep their names, so the generated ones avoid them */
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].kind == EG_KIND_OPAQUE && g->node[j].name[0] &&
            eg_names_put(c->node_names, g->node[j].name, 0) == EG_ENOMEM)
            return EG_ENOMEM;
    return EG_OK;
}

static void octx_free(octx *c) {
    free(c->nodes.p), free(c->inits.p), free(c->ios.p), free(c->ext.p);
    free(c->uses), free(c->partner), free(c->fuse), free(c->vtrail), free(c->revived), free(c->unit_moved);
    for (int j = 0; c->pad_name && j < c->g->n_nodes; j++) free(c->pad_name[j]);
    free(c->pad_name);
    eg_names_free(c->node_names), eg_names_free(c->new_names);
    for (int k = 0; k < c->n_added; k++) free(c->added[k].name);
    free(c->added);
    for (int k = 0; k < c->n_ints; k++) free(c->ints[k].name);
    for (int k = 0; k < c->n_fills; k++) free(c->fills[k].name);
    free(c->fills);
    free(c->ints);
}

/* model shell + graph field (graph shell + nodes + values + ios), written
 * straight into one buffer: the graph's length is the sum of its parts. */
static eg_status assemble(octx *c, uint8_t **buf, size_t *len) {
    egp_buf mb = {0};
    size_t glen = c->g->graph_shell_len + c->nodes.len + c->inits.len + c->ios.len;
    egp_buf_put(&mb, c->g->model_shell, c->g->model_shell_len);
    egp_buf_varint(&mb, (uint64_t)eo_field_id(&onnx__model_proto__descriptor, "graph") << 3 | 2);
    egp_buf_varint(&mb, glen);
    egp_buf_put(&mb, c->g->graph_shell, c->g->graph_shell_len);
    egp_buf_put(&mb, c->nodes.p, c->nodes.len);
    free(c->nodes.p), c->nodes.p = NULL;
    egp_buf_put(&mb, c->inits.p, c->inits.len);
    free(c->inits.p), c->inits.p = NULL;
    egp_buf_put(&mb, c->ios.p, c->ios.len);
    if (mb.oom) {
        free(mb.p);
        return EG_ENOMEM;
    }
    *buf = mb.p;
    *len = mb.len;
    return EG_OK;
}

/* The model into *buf; with ext_loc, its large values into *ext (see
 * octx.ext_loc). */
static eg_status save_model(const eg_graph *g, const char *ext_loc, uint8_t **buf, size_t *len, egp_buf *ext,
                            char *err, size_t errlen) {
    octx c;
    *buf = NULL, *len = 0;
    if (!g->model_shell) {
        snprintf(err, errlen, "the graph has no model shell (not loaded from ONNX)");
        return EG_EFORMAT;
    }
    eg_status rc = octx_init(&c, g, err, errlen);
    c.ext_loc = ext_loc;
    if (rc == EG_OK) rc = emit_nodes(&c);
    if (rc == EG_OK) rc = emit_values(&c);
    if (rc == EG_OK) rc = emit_ios(&c);
    if (rc == EG_OK) rc = assemble(&c, buf, len);
    if (rc == EG_ENOMEM) snprintf(err, errlen, "out of memory writing the model");
    if (rc == EG_OK && ext) *ext = c.ext, c.ext = (egp_buf){0};
    octx_free(&c);
    return rc;
}

eg_status eg_save_mem(const eg_graph *g, uint8_t **buf, size_t *len, char *err, size_t errlen) {
    return save_model(g, NULL, buf, len, NULL, err, errlen);
}

eg_status eg_save(const char *path, const eg_graph *g, char *err, size_t errlen) {
    uint8_t *buf;
    size_t len, n = strlen(path) + 8;
    char msg[EG_ERRLEN];
    egp_buf ext = {0};
    char *data_path = g->external ? malloc(n) : NULL;
    if (g->external && !data_path) {
        snprintf(err, errlen, "%s: out of memory", path);
        return EG_ENOMEM;
    }
    const char *base = strrchr(path, '/');
    if (data_path) snprintf(data_path, n, "%s.data", path);
    /* the model names its data file relative to itself: PATH's name + .data */
    eg_status rc = save_model(g, data_path ? data_path + (base ? base + 1 - path : 0) : NULL, &buf, &len,
                              &ext, msg, sizeof msg);
    if (rc != EG_OK) {
        snprintf(err, errlen, "%s: %s", path, msg);
        free(data_path);
        return rc;
    }
    if (data_path) rc = egp_write_file(data_path, ext.p ? ext.p : (uint8_t *)"", ext.len, err, errlen);
    if (rc == EG_OK) rc = egp_write_file(path, buf, len, err, errlen);
    free(buf), free(ext.p), free(data_path);
    return rc;
}

void eg_remove_saved(const char *path, const eg_graph *g) {
    size_t n = strlen(path) + 8;
    char *data = g->external ? malloc(n) : NULL;
    remove(path);
    if (data) {
        snprintf(data, n, "%s.data", path);
        remove(data);
    }
    free(data);
}
