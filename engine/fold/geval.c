/* geval.c - whole-graph float32 evaluation (geval.h): the needed nodes in
 * topological order through eg_fkern_node, each value freed after its last
 * reader. No kernel of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold/fold.h"
#include "fold/geval.h"

typedef struct {
    const eg_graph *g;
    const float **val;   /* per tensor: its float value, or NULL */
    float **own;         /* per tensor: a value computed here (freed here) */
    int *uses;           /* per tensor: readers left (graph outputs never leave) */
    unsigned char *need; /* per node: a graph output depends on it */
} ectx;

/* Mark the producers of the graph outputs and, backwards, of what they read. */
static void mark_needed(ectx *c) {
    const eg_graph *g = c->g;
    for (int k = 0; k < g->n_outputs; k++) {
        int p = g->tensor[g->output[k]].producer;
        if (p >= 0) c->need[p] = 1;
    }
    for (int j = g->n_nodes - 1; j >= 0; j--) {
        const eg_node *n = &g->node[j];
        for (int k = 0; c->need[j] && k < n->n_in + n->n_implicit; k++) {
            int p = n->in[k] >= 0 ? g->tensor[n->in[k]].producer : -1;
            if (p >= 0) c->need[p] = 1;
        }
    }
}

/* Graph inputs from in[], float initializers from the graph. */
static eg_status bind_leaves(ectx *c, const float *const *in, char *err, size_t errlen) {
    const eg_graph *g = c->g;
    for (int t = 0; t < g->n_tensors; t++) {
        const eg_tensor *x = &g->tensor[t];
        if ((x->flags & EG_TF_INIT) && x->dtype == EG_DT_FLOAT) c->val[t] = x->data;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        const eg_tensor *x = &g->tensor[g->input[k]];
        if (x->dtype != EG_DT_FLOAT || !eg_shape_known(&x->shape))
            return eg_errf(err, errlen, EG_EUNSUPPORTED, "input '%s' is not a float tensor of known shape", x->name);
        c->val[g->input[k]] = in[k];
    }
    return EG_OK;
}

/* Room for node n's outputs, each a float tensor of known shape. None
 * for an opaque node: eg_fkern_node refuses it with its name. */
static eg_status alloc_outs(ectx *c, const eg_node *n, float **outs, char *err, size_t errlen) {
    if (n->kind == EG_KIND_OPAQUE) return EG_OK;
    for (int k = 0; k < n->n_out; k++) {
        const eg_tensor *t = n->out[k] >= 0 ? &c->g->tensor[n->out[k]] : NULL;
        int64_t numel = t ? eg_shape_numel(&t->shape) : 0;
        if (t && (t->dtype != EG_DT_FLOAT || numel < 0))
            return eg_errf(err, errlen, EG_EUNSUPPORTED, "tensor '%s' is not a float tensor of known shape", t->name);
        outs[k] = t ? malloc(sizeof(float) * (size_t)(numel ? numel : 1)) : NULL;
        if (t && !outs[k]) return eg_errf(err, errlen, EG_ENOMEM, "out of memory for tensor '%s'", t->name);
    }
    return EG_OK;
}

/* A value no reader is left for is freed. */
static void release_inputs(ectx *c, const eg_node *n) {
    for (int k = 0; k < n->n_in + n->n_implicit; k++) {
        int t = n->in[k];
        if (t < 0 || --c->uses[t] > 0 || !c->own[t]) continue;
        free(c->own[t]);
        c->own[t] = NULL;
        c->val[t] = NULL;
    }
}

static eg_status eval_node(ectx *c, int j, char *err, size_t errlen) {
    const eg_node *n = &c->g->node[j];
    const float *ins[EG_MAX_INTS] = {0};
    float **outs = calloc((size_t)n->n_out + 1, sizeof *outs);
    if (!outs) return eg_errf(err, errlen, EG_ENOMEM, "out of memory at node '%s'", n->name);
    for (int k = 0; k < n->n_in && k < EG_MAX_INTS; k++) ins[k] = n->in[k] >= 0 ? c->val[n->in[k]] : NULL;
    eg_status rc = alloc_outs(c, n, outs, err, errlen);
    if (rc == EG_OK) rc = eg_fkern_node(c->g, n, ins, outs, err, errlen);
    for (int k = 0; k < n->n_out; k++) {
        if (rc != EG_OK || n->out[k] < 0) {
            free(outs[k]);
            continue;
        }
        c->own[n->out[k]] = outs[k];
        c->val[n->out[k]] = outs[k];
    }
    free(outs);
    if (rc == EG_OK) release_inputs(c, n);
    return rc;
}

static eg_status copy_outputs(const ectx *c, float **out, char *err, size_t errlen) {
    const eg_graph *g = c->g;
    for (int k = 0; k < g->n_outputs; k++) {
        const eg_tensor *t = &g->tensor[g->output[k]];
        int64_t numel = eg_shape_numel(&t->shape);
        if (!c->val[g->output[k]] || numel < 0)
            return eg_errf(err, errlen, EG_EUNSUPPORTED, "output '%s' has no float value of known shape", t->name);
        out[k] = malloc(sizeof(float) * (size_t)(numel ? numel : 1));
        if (!out[k]) return eg_errf(err, errlen, EG_ENOMEM, "out of memory for output '%s'", t->name);
        memcpy(out[k], c->val[g->output[k]], sizeof(float) * (size_t)numel);
    }
    return EG_OK;
}

eg_status eg_eval_graph(const eg_graph *g, const float *const *in, float **out, char *err,
                        size_t errlen) {
    size_t nt = (size_t)g->n_tensors + 1;
    ectx c = {g, calloc(nt, sizeof *c.val), calloc(nt, sizeof *c.own), calloc(nt, sizeof *c.uses),
              calloc((size_t)g->n_nodes + 1, 1)};
    eg_status rc = c.val && c.own && c.uses && c.need ? EG_OK : EG_ENOMEM;
    for (int k = 0; k < g->n_outputs; k++) out[k] = NULL;
    if (rc == EG_ENOMEM) eg_errf(err, errlen, rc, "out of memory evaluating %s", "a graph");
    if (rc == EG_OK) {
        eg_count_uses(g, c.uses);
        mark_needed(&c);
        rc = bind_leaves(&c, in, err, errlen);
    }
    for (int j = 0; rc == EG_OK && j < g->n_nodes; j++)
        if (c.need[j]) rc = eval_node(&c, j, err, errlen);
    if (rc == EG_OK) rc = copy_outputs(&c, out, err, errlen);
    for (int k = 0; rc != EG_OK && k < g->n_outputs; k++) free(out[k]), out[k] = NULL;
    for (int t = 0; c.own && t < g->n_tensors; t++) free(c.own[t]);
    free(c.val), free(c.own), free(c.uses), free(c.need);
    return rc;
}
