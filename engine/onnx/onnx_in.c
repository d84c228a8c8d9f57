/* onnx_in.c - ONNX import: a ModelProto (decoded by protobuf-c under the
 * limits of onnx_pb.c) becomes an eg_graph. Order of work: opset and
 * shells, graph inputs, initializers, nodes (Constant nodes become values,
 * known ops model operators, the rest opaque), inputs resolved by name,
 * value_info, structure and topological order, shape inference (a model
 * node that turns out to be outside what its model op covers is kept
 * opaque) in one pass with cfold.c's shape rules for opaque nodes and
 * constant folding, lowering to opspecs operators.
 *
 * The top-level graph must keep the structural rules onnx.checker checks
 * (check_model, full_check=False), or the model is refused with EG_EGRAPH
 * and a message naming the node (its index in graph.node, name and op)
 * and the tensor: every name defined once (graph inputs, initializers,
 * node outputs; an initializer may share a graph input's name, and below
 * IR version 4 it must), every node input ("" is an omitted optional
 * input) and graph output defined, no cycle. Nodes out of order are
 * sorted, not refused. Inside an opaque node's subgraphs only a name
 * defined in no scope at all is refused; the rest is passed through.
 *
 * Values, external data, graph inputs and initializers are read by
 * in_values.c, attributes and model operators by in_ops.c (in_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shapes/cfold.h"
#include "onnx/lower.h"
#include "shapes/infer.h"
#include "onnx/in_int.h"

#define NREF_LEN 160

/* How messages name node i of the file: "node 3 'conv1' (Conv)", or
 * "node 3 (com.example:Foo)" when it has no name; 3 is its index in
 * graph.node. @return buf. */
static const char *node_ref(const Onnx__NodeProto *np, size_t i, char *buf, size_t len) {
    const char *name = np->name ? np->name : "", *dom = eg_default_domain(np->domain) ? "" : np->domain;
    snprintf(buf, len, "node %zu%s%.64s%s (%.40s%s%.40s)", i, name[0] ? " '" : "", name,
             name[0] ? "'" : "", dom, dom[0] ? ":" : "", np->op_type ? np->op_type : "");
    return buf;
}

/* ================= model header ================= */

/* The IR version and the default-domain opset. Any opset is read: one
 * past EG_OPSET_MAX (or no default-domain opset at all, which a valid
 * model has only when it uses no default-domain operator) leaves every
 * node opaque (ei_classify); below IR 3 a model without one is opset 1. */
static eg_status check_versions(ictx *c) {
    const Onnx__ModelProto *m = c->m;
    int opset = -1;
    if (!m->has_ir_version || m->ir_version < 1 || m->ir_version > EG_IR_MAX)
        return ei_fail(c, EG_EOPSET, "IR version %lld is not supported (1..%d)",
                       (long long)m->ir_version, EG_IR_MAX);
    for (size_t i = 0; i < m->n_opset_import && opset < 0; i++) {
        const Onnx__OperatorSetIdProto *os = m->opset_import[i];
        if (!eg_default_domain(os->domain)) continue;
        opset = !os->has_version || os->version < 0 ? 0 : os->version > 1000 ? 1000 : (int)os->version;
    }
    if (opset < 0) opset = m->ir_version < 3 && !m->n_opset_import ? 1 : 0;
    if (!m->graph) return ei_fail(c, EG_EFORMAT, "the model has no graph");
    c->g->opset = opset;
    c->g->ir_version = m->ir_version;
    return EG_OK;
}

static char *join2(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s%s", a, a[0] && b[0] ? " " : "", b);
    return s;
}

/* The model without its graph, and the graph without the parts the writer
 * regenerates: everything else (metadata, functions, sparse initializers,
 * quantization annotations, fields newer than our onnx.proto) is re-emitted
 * from these bytes. */
static eg_status make_shells(ictx *c) {
    Onnx__GraphProto *gp = c->gp, saved = *gp;
    eg_status rc;
    c->m->graph = NULL;
    rc = egp_pack(&c->m->base, &c->g->model_shell, &c->g->model_shell_len);
    c->m->graph = gp;
    gp->n_node = gp->n_initializer = gp->n_input = gp->n_output = gp->n_value_info = 0;
    if (rc == EG_OK) rc = egp_pack(&gp->base, &c->g->graph_shell, &c->g->graph_shell_len);
    *gp = saved;
    c->g->producer = join2(ei_str(c->m->producer_name), ei_str(c->m->producer_version));
    c->g->graph_name = strdup(ei_str(gp->name));
    if (rc == EG_OK && (!c->g->producer || !c->g->graph_name)) rc = EG_ENOMEM;
    return rc == EG_OK ? EG_OK : ei_fail(c, rc, "out of memory");
}

/* ================= nodes ================= */

static int is_graph_output(const ictx *c, const char *name) {
    for (size_t i = 0; i < c->gp->n_output; i++)
        if (c->gp->output[i]->name && strcmp(c->gp->output[i]->name, name) == 0) return 1;
    return 0;
}

/* The one tensor-valued attribute of a Constant we can hold as a value;
 * builds the TensorProto for the scalar/list forms into *tmp. */
static const Onnx__TensorProto *const_value(const Onnx__NodeProto *np, Onnx__TensorProto *tmp,
                                            int64_t *dim) {
    if (np->n_attribute != 1 || np->attribute[0]->ref_attr_name || !np->attribute[0]->name) return NULL;
    const Onnx__AttributeProto *a = np->attribute[0];
    const char *n = a->name;
    onnx__tensor_proto__init(tmp);
    tmp->has_data_type = 1;
    tmp->dims = dim;
    if (!strcmp(n, "value") && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR) && a->t)
        return eg_dtype_size(a->t->has_data_type ? a->t->data_type : 0) ? a->t : NULL;
    if (!strcmp(n, "value_float") && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) {
        tmp->data_type = EG_DT_FLOAT, tmp->n_float_data = 1, tmp->float_data = (float *)&a->f;
        return tmp;
    }
    if (!strcmp(n, "value_int") && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)) {
        tmp->data_type = EG_DT_INT64, tmp->n_int64_data = 1, tmp->int64_data = (int64_t *)&a->i;
        return tmp;
    }
    *dim = 0;
    tmp->n_dims = 1;
    if (!strcmp(n, "value_floats") && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS)) {
        tmp->data_type = EG_DT_FLOAT, *dim = (int64_t)a->n_floats;
        tmp->n_float_data = a->n_floats, tmp->float_data = a->floats;
        return tmp;
    }
    if (!strcmp(n, "value_ints") && egp_attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)) {
        tmp->data_type = EG_DT_INT64, *dim = (int64_t)a->n_ints;
        tmp->n_int64_data = a->n_ints, tmp->int64_data = a->ints;
        return tmp;
    }
    return NULL;
}

/* What defined `name` before node i's output of that name (node i itself
 * when it writes the name twice), for a message. @return a phrase. */
static const char *first_definition(const ictx *c, const char *name, size_t i, char *buf, size_t len) {
    int id = eg_find_tensor(c->g, name);
    unsigned f = id >= 0 ? c->g->tensor[id].flags : 0;
    if (f & EG_TF_INPUT) return "a graph input";
    if (f & EG_TF_SPARSE) return "a sparse initializer";
    if ((f & EG_TF_INIT) && !(f & EG_TF_CONST)) return "an initializer";
    for (size_t k = 0; k <= i; k++) {
        const Onnx__NodeProto *np = c->gp->node[k];
        for (size_t q = 0; q < np->n_output; q++)
            if (np->output[q] && strcmp(np->output[q], name) == 0) {
                int w = snprintf(buf, len, "an output of ");
                node_ref(np, k, buf + w, len - (size_t)w);
                return buf;
            }
    }
    return "defined";
}

/* Node i writes a name something defined already. */
static eg_status defined_twice(const ictx *c, size_t i, const char *name) {
    char at[NREF_LEN], first[NREF_LEN + 16];
    return ei_fail(c, EG_EGRAPH, "%s: output '%s' is already %s",
                   node_ref(c->gp->node[i], i, at, sizeof at), name,
                   first_definition(c, name, i, first, sizeof first));
}

/* A Constant node whose value we can hold becomes a value (exported as an
 * initializer). *taken = 0 when it must stay an (opaque) node. */
static eg_status take_constant(ictx *c, size_t i, int *taken) {
    const Onnx__NodeProto *np = c->gp->node[i];
    Onnx__TensorProto tmp;
    int64_t dim;
    int id;
    *taken = 0;
    if (!eg_default_domain(np->domain) || !np->op_type || strcmp(np->op_type, "Constant") ||
        c->g->opset < EG_OPSET_MIN || c->g->opset > EG_OPSET_MAX ||
        np->n_output != 1 || !np->output[0] || !np->output[0][0] || np->n_input ||
        is_graph_output(c, np->output[0]))
        return EG_OK;
    const Onnx__TensorProto *tp = const_value(np, &tmp, &dim);
    if (!tp) return EG_OK;
    eg_status rc = eg_add_tensor(c->g, np->output[0], &id);
    if (rc == EG_EGRAPH) return defined_twice(c, i, np->output[0]);
    if (rc != EG_OK) return ei_fail(c, rc, "out of memory");
    c->g->tensor[id].flags |= EG_TF_CONST;
    *taken = 1;
    return ei_load_value(c, tp, "Constant", &c->g->tensor[id], 0);
}

/* Opaque identity of a node, its bytes and output tensors. */
static eg_status node_identity(ictx *c, const Onnx__NodeProto *np, eg_node *n) {
    n->op_type = strdup(ei_str(np->op_type));
    n->domain = strdup(ei_str(np->domain));
    if (!n->op_type || !n->domain || egp_pack(&np->base, &n->proto, &n->proto_len) != EG_OK)
        return ei_fail(c, EG_ENOMEM, "out of memory");
    return EG_OK;
}

static eg_status node_outputs(ictx *c, size_t i, int id) {
    const Onnx__NodeProto *np = c->gp->node[i];
    for (size_t k = 0; k < np->n_output; k++) {
        int t;
        if (!np->output[k] || !np->output[k][0]) continue;
        eg_status rc = eg_add_tensor(c->g, np->output[k], &t);
        if (rc == EG_EGRAPH) return defined_twice(c, i, np->output[k]);
        if (rc != EG_OK) return ei_fail(c, rc, "out of memory");
        c->g->node[id].out[k] = t;
    }
    return EG_OK;
}

static eg_status add_node(ictx *c, size_t i) {
    const Onnx__NodeProto *np = c->gp->node[i];
    eg_attrs a;
    char at[NREF_LEN];
    int id, taken;
    eg_status rc = take_constant(c, i, &taken);
    c->node_of[i] = -1;
    if (rc != EG_OK || taken) return rc;
    if (np->n_input > (1 << 20) || np->n_output > (1 << 20))
        return ei_fail(c, EG_ELIMIT, "%s has too many inputs or outputs", node_ref(np, i, at, sizeof at));
    eg_mop mop = ei_classify(np, c->g->opset, &a);
    rc = eg_add_node(c->g, mop == EG_MOP_COUNT ? EG_KIND_OPAQUE : EG_KIND_MODEL, ei_str(np->name),
                     (int)np->n_input, 0, (int)np->n_output, &id);
    if (rc != EG_OK) return ei_fail(c, rc, "out of memory");
    c->node_of[i] = id;
    eg_node *n = &c->g->node[id];
    n->mop = mop == EG_MOP_COUNT ? (eg_mop)0 : mop;
    n->attr = a;
    rc = node_identity(c, np, n);
    return rc == EG_OK ? node_outputs(c, i, id) : rc;
}

/* ---- inputs, including names read inside subgraph attributes ---- */

typedef struct {
    int *id;
    int n, cap;
    int stamp; /* mark[t] == stamp: already listed */
    int *mark;
    const char *undefined; /* EG_EGRAPH: a name no scope defines */
    const char *graph;     /* the subgraph that reads it */
} refs;

static eg_status refs_add(refs *r, int t) {
    if (t < 0 || r->mark[t] == r->stamp) return EG_OK;
    if (r->n == r->cap) {
        int nc = r->cap ? 2 * r->cap : 8;
        int *p = realloc(r->id, sizeof(int) * (size_t)nc);
        if (!p) return EG_ENOMEM;
        r->id = p, r->cap = nc;
    }
    r->mark[t] = r->stamp;
    r->id[r->n++] = t;
    return EG_OK;
}

static eg_status scan_graph(const ictx *c, const Onnx__GraphProto *sg, refs *r);

static eg_status scan_attrs(const ictx *c, const Onnx__NodeProto *np, refs *r) {
    eg_status rc = EG_OK;
    for (size_t k = 0; rc == EG_OK && k < np->n_attribute; k++) {
        const Onnx__AttributeProto *a = np->attribute[k];
        if (a->g) rc = scan_graph(c, a->g, r);
        for (size_t q = 0; rc == EG_OK && q < a->n_graphs; q++) rc = scan_graph(c, a->graphs[q], r);
    }
    return rc;
}

/* Names a subgraph defines: taken, so the writer's new names avoid them. */
static eg_status reserve_names(const ictx *c, const Onnx__GraphProto *sg) {
    eg_status rc = EG_OK;
    for (size_t k = 0; rc == EG_OK && k < sg->n_input; k++)
        if (sg->input[k]->name) rc = eg_reserve_name(c->g, sg->input[k]->name);
    for (size_t k = 0; rc == EG_OK && k < sg->n_initializer; k++)
        if (sg->initializer[k]->name) rc = eg_reserve_name(c->g, sg->initializer[k]->name);
    for (size_t j = 0; rc == EG_OK && j < sg->n_node; j++)
        for (size_t k = 0; rc == EG_OK && k < sg->node[j]->n_output; k++)
            if (sg->node[j]->output[k] && sg->node[j]->output[k][0])
                rc = eg_reserve_name(c->g, sg->node[j]->output[k]);
    return rc;
}

/* A name subgraph sg reads: an outer-scope tensor to list, a name some
 * subgraph defines (reserved), or, found nowhere, an undefined name: every
 * enclosing scope's names are known by now (the top level's all, and each
 * subgraph's before its nodes are scanned). */
static eg_status read_name(const ictx *c, const Onnx__GraphProto *sg, const char *name, refs *r) {
    int t = eg_find_tensor(c->g, name);
    if (t != -1) return refs_add(r, t);
    r->undefined = name, r->graph = ei_str(sg->name);
    return EG_EGRAPH;
}

/* Outer-scope tensors a subgraph reads (nesting is bounded by the wire
 * check's depth limit). */
static eg_status scan_graph(const ictx *c, const Onnx__GraphProto *sg, refs *r) {
    eg_status rc = reserve_names(c, sg);
    for (size_t j = 0; rc == EG_OK && j < sg->n_node; j++) {
        const Onnx__NodeProto *np = sg->node[j];
        for (size_t k = 0; rc == EG_OK && k < np->n_input; k++)
            if (np->input[k] && np->input[k][0]) rc = read_name(c, sg, np->input[k], r);
        if (rc == EG_OK) rc = scan_attrs(c, np, r);
    }
    for (size_t k = 0; rc == EG_OK && k < sg->n_output; k++)
        if (sg->output[k]->name && sg->output[k]->name[0])
            rc = read_name(c, sg, sg->output[k]->name, r);
    return rc;
}

static eg_status implicit_inputs(ictx *c, size_t i, int id, refs *r) {
    const Onnx__NodeProto *np = c->gp->node[i];
    char at[NREF_LEN];
    r->n = 0;
    r->stamp = id + 1;
    eg_status rc = scan_attrs(c, np, r);
    if (rc == EG_EGRAPH)
        return ei_fail(c, rc, "%s: its subgraph '%.64s' reads '%s', which no enclosing graph defines",
                       node_ref(np, i, at, sizeof at), r->graph, r->undefined);
    if (rc != EG_OK) return ei_fail(c, EG_ENOMEM, "out of memory");
    if (r->n == 0) return EG_OK;
    eg_node *n = &c->g->node[id];
    int *in = realloc(n->in, sizeof(int) * (size_t)(n->n_in + r->n + 1));
    if (!in) return ei_fail(c, EG_ENOMEM, "out of memory");
    n->in = in;
    for (int k = 0; k < r->n; k++) {
        in[n->n_in + k] = r->id[k];
        c->g->tensor[r->id[k]].flags |= EG_TF_PINNED;
    }
    n->n_implicit = r->n;
    return EG_OK;
}

static eg_status resolve_inputs(ictx *c, size_t i, refs *r) {
    const Onnx__NodeProto *np = c->gp->node[i];
    int id = c->node_of[i];
    if (id < 0) return EG_OK;
    for (size_t k = 0; k < np->n_input; k++) {
        if (!np->input[k] || !np->input[k][0]) continue;
        int t = eg_find_tensor(c->g, np->input[k]);
        char at[NREF_LEN];
        if (t < 0)
            return ei_fail(c, EG_EGRAPH, "%s: input '%s' is not defined (no initializer, graph "
                           "input or node output)", node_ref(np, i, at, sizeof at), np->input[k]);
        c->g->node[id].in[k] = t;
    }
    return c->g->node[id].kind == EG_KIND_OPAQUE ? implicit_inputs(c, i, id, r) : EG_OK;
}

static eg_status add_nodes(ictx *c) {
    refs r = {0};
    eg_status rc = EG_OK;
    c->node_of = malloc(sizeof(int) * (c->gp->n_node + 1));
    if (!c->node_of) return ei_fail(c, EG_ENOMEM, "out of memory");
    for (size_t i = 0; rc == EG_OK && i < c->gp->n_node; i++) rc = add_node(c, i);
    if (rc == EG_OK && !(r.mark = calloc((size_t)c->g->n_tensors + 1, sizeof(int))))
        rc = ei_fail(c, EG_ENOMEM, "out of memory");
    for (size_t i = 0; rc == EG_OK && i < c->gp->n_node; i++) rc = resolve_inputs(c, i, &r);
    free(r.id);
    free(r.mark);
    return rc;
}

/* ================= outputs, value_info ================= */

/* The shape a ValueInfoProto declares (rank -1 when none). */
static eg_shape declared_shape(const Onnx__ValueInfoProto *vi) {
    eg_tensor t;
    memset(&t, 0, sizeof t);
    t.shape.rank = -1;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
        !tp->tensor_type->shape || tp->tensor_type->shape->n_dim > EG_MAX_RANK)
        return t.shape;
    t.shape.rank = (int)tp->tensor_type->shape->n_dim;
    for (int i = 0; i < t.shape.rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tp->tensor_type->shape->dim[i];
        t.shape.dim[i] = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                                 d->dim_value >= 0 && d->dim_value <= EG_DIM_MAX
                             ? d->dim_value : -1;
    }
    return t.shape;
}

/* A graph output that is a graph input or a value has a shape already;
 * its declaration must agree (the writer keeps only one of the two). */
static eg_status check_output_decl(const ictx *c, const Onnx__ValueInfoProto *vi, const eg_tensor *t) {
    char a[160], b[160];
    eg_shape decl = declared_shape(vi);
    const Onnx__TypeProto *tp = vi->type;
    int dtype = tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type &&
                        tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0;
    if (dtype && t->dtype && dtype != t->dtype)
        return ei_fail(c, EG_EFORMAT, "graph output '%s' is declared %s but is %s", t->name,
                       eg_dtype_name(dtype), eg_dtype_name(t->dtype));
    if (!ei_shapes_conflict(&decl, &t->shape)) return EG_OK;
    return ei_fail(c, EG_ESHAPE, "graph output '%s' is declared %s but is %s %s", t->name,
                   eg_shape_str(&decl, NULL, a, sizeof a),
                   t->flags & EG_TF_INPUT ? "the graph input" : "a value of shape",
                   eg_shape_str(&t->shape, NULL, b, sizeof b));
}

static eg_status add_outputs(ictx *c) {
    eg_graph *g = c->g;
    g->output = malloc(sizeof(int) * (c->gp->n_output + 1));
    if (!g->output) return ei_fail(c, EG_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = c->gp->output[i];
        int id = vi->name ? eg_find_tensor(g, vi->name) : -1;
        if (id < 0)
            return ei_fail(c, EG_EGRAPH, "graph output '%s' is not defined (no node writes it, "
                           "and it is no graph input or initializer)", ei_str(vi->name));
        if (g->tensor[id].flags & EG_TF_OUTPUT)
            return ei_fail(c, EG_EGRAPH, "graph output '%s' is listed twice", vi->name);
        g->tensor[id].flags |= EG_TF_OUTPUT;
        g->output[g->n_outputs++] = id;
        eg_status rc = EG_OK;
        if (g->tensor[id].flags & (EG_TF_INPUT | EG_TF_INIT | EG_TF_SPARSE))
            rc = check_output_decl(c, vi, &g->tensor[id]);
        if (rc != EG_OK) return rc;
        if (g->tensor[id].vinfo) continue; /* a graph input too: one entry serves */
        rc = ei_keep_vinfo(c, vi, &g->tensor[id]);
        if (rc != EG_OK) return rc;
        if (!(g->tensor[id].flags & (EG_TF_INIT | EG_TF_SPARSE))) c->vshape[id] = g->tensor[id].shape;
    }
    return EG_OK;
}

/* value_info of intermediate tensors: kept for export, and the shape an
 * opaque node's output gets. Entries for unknown names are dropped. */
static eg_status add_value_info(ictx *c) {
    for (size_t i = 0; i < c->gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = c->gp->value_info[i];
        int id = vi->name ? eg_find_tensor(c->g, vi->name) : -1;
        if (id < 0 || (c->g->tensor[id].flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_INIT | EG_TF_SPARSE)))
            continue;
        eg_status rc = ei_keep_vinfo(c, vi, &c->g->tensor[id]);
        if (rc != EG_OK) return rc;
        c->vshape[id] = c->g->tensor[id].shape;
    }
    return EG_OK;
}

/* ================= structure, shapes ================= */

/* The file position of node id j (ids follow the file's order until the
 * nodes are sorted; Constants taken as values have none). */
static size_t file_index(const ictx *c, int j) {
    size_t i = 0;
    while (i + 1 < c->gp->n_node && c->node_of[i] != j) i++;
    return i;
}

/* A node on a cycle: its input that depends on its own output. */
static eg_status cycle(const ictx *c, int j, int k) {
    char at[NREF_LEN];
    const eg_node *n = &c->g->node[j];
    size_t i = file_index(c, j);
    node_ref(c->gp->node[i], i, at, sizeof at);
    if (k < n->n_in)
        return ei_fail(c, EG_EGRAPH, "%s: input '%s' depends on the node's own output (the graph has "
                       "a cycle)", at, c->g->tensor[n->in[k]].name);
    return ei_fail(c, EG_EGRAPH, "%s: '%s', which its subgraph reads, depends on the node's own "
                   "output (the graph has a cycle)", at, c->g->tensor[n->in[k]].name);
}

static eg_status structure(ictx *c) {
    char msg[EG_ERRLEN];
    int j, k;
    eg_status rc = eg_index(c->g, msg, sizeof msg);
    if (rc == EG_OK && (rc = eg_toposort_at(c->g, &j, &k)) == EG_EGRAPH) return cycle(c, j, k);
    if (rc == EG_ENOMEM) return ei_fail(c, rc, "out of memory");
    return rc == EG_OK ? EG_OK : ei_fail(c, rc, "%s", msg);
}

/* An inferred shape must agree with the file's value_info where both know. */
static eg_status check_vinfo(const ictx *c, const eg_node *n) {
    char a[160], b[160];
    for (int k = 0; k < n->n_out; k++) {
        int t = n->out[k];
        if (t < 0) continue;
        const eg_shape *got = &c->g->tensor[t].shape, *file = &c->vshape[t];
        if (file->rank != -2 && ei_shapes_conflict(got, file))
            return ei_fail(c, EG_ESHAPE, "node '%s' (%s): output '%s' has shape %s but the file's "
                           "value_info says %s", n->name, eg_mop_name(n->mop),
                           c->g->tensor[t].name, eg_shape_str(got, NULL, a, sizeof a),
                           eg_shape_str(file, NULL, b, sizeof b));
    }
    return EG_OK;
}

/* Keep a model node opaque after all: its outputs go back to the file's
 * value_info shapes (or unknown). */
static void demote(ictx *c, eg_node *n) {
    n->kind = EG_KIND_OPAQUE;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && c->vshape[n->out[k]].rank != -2)
            c->g->tensor[n->out[k]].shape = c->vshape[n->out[k]];
        else if (n->out[k] >= 0)
            c->g->tensor[n->out[k]].shape.rank = -1;
}

/* Does float value b sit in a at axis ax, with dims of a after it (the
 * opset < 7 conv-bias form: A [N,C,H,W], B [C], axis 1)? */
static int channel_value(const eg_graph *g, const eg_tensor *a, int v, int ax) {
    const eg_tensor *b = &g->tensor[v];
    if (eg_replaceable(g, v)) return 0;
    if (!eg_shape_known(&a->shape) || !eg_shape_known(&b->shape) || b->dtype != EG_DT_FLOAT ||
        !b->data || !(b->flags & EG_TF_INIT) || ax < 0 ||
        ax + b->shape.rank >= a->shape.rank)
        return 0;
    for (int i = 0; i < b->shape.rank; i++)
        if (b->shape.dim[i] != a->shape.dim[ax + i]) return 0;
    return 1;
}

/* Before opset 7, Add/Mul(A, B) with broadcast = 1 and an axis that leaves
 * dims of A after B's (a constant [C] on NCHW at axis 1) reads B as B
 * with trailing 1s ([C,1,1]) in numpy's broadcasting: node j then reads
 * such a new value instead and is an ordinary numpy Add/Mul (the export
 * writes it back as broadcast = 1, axis, the [C] value). */
static eg_status legacy_channel(ictx *c, int j) {
    eg_node *n = &c->g->node[j];
    int id;
    if ((n->mop != EG_MOP_ADD && n->mop != EG_MOP_MUL && n->mop != EG_MOP_DIV) || n->in[0] < 0 || n->in[1] < 0 ||
        (n->attr.flags & (EG_AF_LEGACY_BCAST | EG_AF_HAS_AXIS)) != (EG_AF_LEGACY_BCAST | EG_AF_HAS_AXIS))
        return EG_OK;
    const eg_tensor *a = &c->g->tensor[n->in[0]], *b = &c->g->tensor[n->in[1]];
    int ax = n->attr.axis < 0 ? n->attr.axis + a->shape.rank : n->attr.axis;
    if (!channel_value(c->g, a, n->in[1], ax)) return EG_OK;
    eg_shape s = b->shape;
    int64_t numel = eg_shape_numel(&s);
    while (s.rank < a->shape.rank - ax) s.dim[s.rank++] = 1;
    size_t len = strlen(b->name) + 32;
    char *name = malloc(len);
    float *data = malloc(sizeof(float) * (size_t)(numel ? numel : 1));
    eg_status rc = name && data ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) {
        memcpy(data, b->data, sizeof(float) * (size_t)numel);
        snprintf(name, len, "%s_bcast", b->name);
        for (int k = 0; eg_find_tensor(c->g, name) != -1; k++) snprintf(name, len, "%s_bcast%d", b->name, k);
        rc = eg_add_tensor(c->g, name, &id); /* moves c->g->tensor */
    }
    free(name);
    if (rc != EG_OK) {
        free(data);
        return ei_fail(c, EG_ENOMEM, "out of memory");
    }
    eg_tensor *t = &c->g->tensor[id], *old = &c->g->tensor[n->in[1]];
    t->dtype = EG_DT_FLOAT, t->shape = s, t->data = data, t->flags = EG_TF_INIT | EG_TF_ABSORBED;
    if (!(old->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED))) old->flags |= EG_TF_ABSORBED;
    n->in[1] = id;
    n->attr.flags &= ~(EG_AF_LEGACY_BCAST | EG_AF_HAS_AXIS);
    return EG_OK;
}

/* Before opset 7 an Add/Mul/Div without broadcast = 1 reads equal shapes
 * (the export writes no attribute then). Known shapes that differ (a file
 * not valid there) keep the node opaque, as the file wrote it. */
static int legacy_unequal(const eg_graph *g, const eg_node *n) {
    if (g->opset >= 7 || (n->attr.flags & EG_AF_LEGACY_BCAST) || n->n_in != 2 || n->in[0] < 0 || n->in[1] < 0 ||
        (n->mop != EG_MOP_ADD && n->mop != EG_MOP_MUL && n->mop != EG_MOP_DIV))
        return 0;
    const eg_shape *a = &g->tensor[n->in[0]].shape, *b = &g->tensor[n->in[1]].shape;
    return eg_shape_known(a) && eg_shape_known(b) && !eg_shape_equal(a, b);
}

/* Model node j's shapes, kept opaque when outside its model op. */
static eg_status infer_model(ictx *c, int j, char *msg, size_t len) {
    eg_node *n = &c->g->node[j];
    if (n->kind != EG_KIND_MODEL) return EG_OK;
    if (legacy_unequal(c->g, n)) {
        demote(c, n);
        return EG_OK;
    }
    eg_status rc = legacy_channel(c, j);
    if (rc != EG_OK) return rc;
    rc = eg_infer_node(c->g, j, msg, len);
    if (rc == EG_EUNSUPPORTED) {
        demote(c, n);
        return EG_OK;
    }
    if (rc != EG_OK) return ei_fail(c, rc, "%s", msg);
    return check_vinfo(c, n);
}

/* One pass in order: model-op inference, then (cfold.c) the shape rules
 * of opaque nodes and constant folding, so a Reshape whose target the
 * pass has just folded is inferred as a model op. */
static eg_status infer(ictx *c) {
    char msg[EG_ERRLEN] = "";
    eg_cfold f;
    eg_status rc = eg_cfold_begin(&f, c->g);
    for (int j = 0; rc == EG_OK && j < c->g->n_nodes; j++)
        if ((rc = infer_model(c, j, msg, sizeof msg)) == EG_OK &&
            (rc = eg_cfold_node(&f, j, msg, sizeof msg)) != EG_OK)
            rc = ei_fail(c, rc, "%s", msg);
    rc = eg_cfold_end(&f, rc, msg, sizeof msg);
    return rc == EG_OK || (c->err && c->err[0]) ? rc : ei_fail(c, rc, "%s", msg);
}

/* Only opaque nodes keep their file identity. */
static void finish_nodes(eg_graph *g) {
    for (int j = 0; j < g->n_nodes; j++) {
        eg_node *n = &g->node[j];
        if (n->kind == EG_KIND_OPAQUE) continue;
        free(n->op_type), free(n->domain), free(n->proto);
        n->op_type = n->domain = NULL, n->proto = NULL, n->proto_len = 0;
    }
}

static eg_status init_vshape(ictx *c) {
    c->vshape = malloc(sizeof *c->vshape * (size_t)(c->g->n_tensors + 1));
    if (!c->vshape) return ei_fail(c, EG_ENOMEM, "out of memory");
    for (int i = 0; i < c->g->n_tensors; i++) c->vshape[i].rank = -2;
    return EG_OK;
}

/* A Dropout read as an identity (parse_dropout) stays one only when
 * training_mode, if given, is a constant false and the mask output is read
 * by no node and is no graph output; then it keeps input 0 and output 0
 * (ratio and training_mode values are dropped once unread), otherwise it
 * is opaque. @pre inputs resolved, graph outputs flagged. */
static eg_status finish_dropouts(ictx *c) {
    eg_graph *g = c->g;
    int *uses = malloc(sizeof *uses * (size_t)(g->n_tensors + 1));
    if (!uses) return ei_fail(c, EG_ENOMEM, "out of memory");
    eg_count_uses(g, uses);
    for (int j = 0; j < g->n_nodes; j++) {
        eg_node *n = &g->node[j];
        if (n->kind != EG_KIND_MODEL || eg_xop_of(n->op_type) != EG_X_DROPOUT) continue;
        const eg_tensor *tm = n->n_in > 2 && n->in[2] >= 0 ? &g->tensor[n->in[2]] : NULL;
        int mask = n->n_out > 1 ? n->out[1] : -1;
        if ((tm && (!(tm->flags & EG_TF_INIT) || (tm->flags & EG_TF_INPUT) || tm->dtype != EG_DT_BOOL ||
                    tm->raw_len != 1 || tm->raw[0] != 0)) ||
            (mask >= 0 && (uses[mask] || (g->tensor[mask].flags & EG_TF_OUTPUT)))) {
            n->kind = EG_KIND_OPAQUE;
            continue;
        }
        for (int k = 1; k < n->n_in; k++)
            if (n->in[k] >= 0 && !(g->tensor[n->in[k]].flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED)))
                g->tensor[n->in[k]].flags |= EG_TF_ABSORBED;
        n->n_in = 1, n->n_out = 1;
    }
    free(uses);
    return EG_OK;
}

static eg_status import_model(ictx *c) {
    eg_status rc = check_versions(c);
    if (rc == EG_OK) c->gp = c->m->graph, rc = make_shells(c);
    if (rc == EG_OK) rc = ei_add_inputs(c);
    if (rc == EG_OK) rc = ei_add_initializers(c);
    if (rc == EG_OK) rc = add_nodes(c);
    if (rc == EG_OK) rc = init_vshape(c);
    if (rc == EG_OK) rc = add_outputs(c);
    if (rc == EG_OK) rc = finish_dropouts(c);
    if (rc == EG_OK) rc = add_value_info(c);
    if (rc == EG_OK) rc = structure(c);
    if (rc == EG_OK) rc = infer(c);
    if (rc == EG_OK && eg_lower(c->g) != EG_OK) rc = ei_fail(c, EG_ENOMEM, "out of memory");
    if (rc == EG_OK) finish_nodes(c->g);
    return rc;
}

/* ================= entry points ================= */

static void fill_opts(const eg_load_opts *in, size_t len, eg_load_opts *o) {
    memset(o, 0, sizeof *o);
    if (in) *o = *in;
    if (!o->max_file_bytes) o->max_file_bytes = EG_MAX_FILE;
    if (!o->max_depth) o->max_depth = EG_MAX_DEPTH;
    if (!o->max_decode_bytes)
        o->max_decode_bytes = len < (SIZE_MAX - (64u << 20)) / 2 ? 2 * len + (64u << 20) : SIZE_MAX;
}

eg_status eg_load_mem(const void *buf, size_t len, const char *name, const eg_load_opts *opts,
                      eg_graph **out, char *err, size_t errlen) {
    eg_load_opts o;
    egp_alloc a;
    char msg[EG_ERRLEN];
    ictx c = {NULL, name ? name : "(memory)", err, errlen, NULL, NULL, NULL, NULL};
    *out = NULL;
    fill_opts(opts, len, &o);
    if (len > o.max_file_bytes)
        return ei_fail(&c, EG_ELIMIT, "larger than the limit of %zu bytes", o.max_file_bytes);
    for (int k = 0; k < o.n_dims; k++)
        if (!o.dims[k].name || !o.dims[k].name[0] || o.dims[k].value < 1 || o.dims[k].value > EG_DIM_MAX)
            return ei_fail(&c, EG_EFORMAT, "a pinned dimension (--dim) needs a name and a size of 1 to %lld",
                           (long long)EG_DIM_MAX);
    egp_alloc_init(&a, o.max_decode_bytes);
    eg_status rc = egp_unpack(&onnx__model_proto__descriptor, &a, o.max_depth, buf, len,
                              (ProtobufCMessage **)&c.m, msg, sizeof msg);
    if (rc != EG_OK) return ei_fail(&c, rc, "not a valid ONNX model: %s", msg);
    c.o = &o;
    c.dim_used = calloc((size_t)o.n_dims + 1, sizeof *c.dim_used);
    c.g = eg_graph_new();
    rc = c.g && c.dim_used ? import_model(&c) : ei_fail(&c, EG_ENOMEM, "out of memory");
    for (int k = 0; rc == EG_OK && k < o.n_dims; k++)
        if (!c.dim_used[k])
            rc = ei_fail(&c, EG_EFORMAT,
                         "no graph input, output or value_info has a dimension named '%s', nor is it "
                         "INPUT:AXIS for an axis of a graph input without a size (--dim)",
                         o.dims[k].name ? o.dims[k].name : "");
    free(c.dim_used);
    protobuf_c_message_free_unpacked(&c.m->base, &a.pc);
    free(c.node_of);
    free(c.vshape);
    if (rc != EG_OK) {
        eg_free(c.g);
        return rc;
    }
    *out = c.g;
    return EG_OK;
}

eg_status eg_load(const char *path, const eg_load_opts *opts, eg_graph **out, char *err,
                  size_t errlen) {
    uint8_t *buf;
    size_t len;
    eg_load_opts o = {0};
    *out = NULL;
    if (opts) o = *opts; /* the limits left 0 eg_load_mem fills from the file's size */
    if (!o.model_path) o.model_path = path; /* external data lies beside it */
    eg_status rc = egp_read_file(path, o.max_file_bytes ? o.max_file_bytes : EG_MAX_FILE, &buf, &len, err, errlen);
    if (rc != EG_OK) return rc;
    rc = eg_load_mem(buf, len, path, &o, out, err, errlen);
    free(buf);
    return rc;
}

