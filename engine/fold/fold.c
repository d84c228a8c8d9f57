/* fold.c - weight folding: evaluate the weight-only part of a graph with
 * the float kernels (fkern.c) and replace it by initializers; plus the
 * small graph-editing helpers the built-in rewrites share (new float
 * initializers, rewiring readers, dropping dead nodes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold/fold.h"
#include "shapes/infer.h"

/* ================= editing helpers ================= */

eg_status eg_add_float_init(eg_graph *g, const char *base, const char *tag, const eg_shape *s,
                            float *data, int *id) {
    size_t len = strlen(base) + strlen(tag) + 24;
    char *name = malloc(len);
    eg_status rc = name ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) snprintf(name, len, "%s_%s", base, tag);
    for (int k = 0; rc == EG_OK && eg_find_tensor(g, name) != -1; k++)
        snprintf(name, len, "%s_%s%d", base, tag, k);
    if (rc == EG_OK) rc = eg_add_tensor(g, name, id);
    free(name);
    if (rc != EG_OK) {
        free(data);
        return rc;
    }
    eg_tensor *t = &g->tensor[*id];
    t->flags = EG_TF_INIT;
    t->dtype = EG_DT_FLOAT;
    t->shape = *s;
    t->data = data;
    return EG_OK;
}

int eg_replace_uses(eg_graph *g, int from, int to) {
    int changed = 0;
    for (int j = 0; j < g->n_nodes; j++) {
        eg_node *n = &g->node[j];
        for (int k = 0; k < n->n_in + n->n_implicit; k++)
            if (n->in[k] == from) n->in[k] = to, changed++;
    }
    return changed;
}

/* An initializer no remaining node reads is left out on export. */
static void absorb_unused_inits(eg_graph *g, const int *uses) {
    for (int i = 0; i < g->n_tensors; i++) {
        eg_tensor *t = &g->tensor[i];
        if ((t->flags & EG_TF_INIT) && !uses[i] &&
            !(t->flags & (EG_TF_INPUT | EG_TF_OUTPUT | EG_TF_PINNED | EG_TF_SPARSE)))
            t->flags |= EG_TF_ABSORBED;
    }
}

eg_status eg_drop_dead(eg_graph *g, int *n_removed, char *err, size_t errlen) {
    int *uses = malloc(sizeof *uses * (size_t)(g->n_tensors + 1));
    unsigned char *drop = calloc((size_t)g->n_nodes + 1, 1);
    eg_status rc = uses && drop ? EG_OK : EG_ENOMEM;
    int removed = 0;
    if (rc == EG_OK) {
        eg_count_uses(g, uses);
        int *before = malloc(sizeof *before * (size_t)(g->n_tensors + 1));
        if (!before) rc = EG_ENOMEM;
        else memcpy(before, uses, sizeof *uses * (size_t)g->n_tensors);
        for (int j = g->n_nodes - 1; rc == EG_OK && j >= 0; j--) {
            const eg_node *n = &g->node[j];
            int live = n->kind == EG_KIND_OPAQUE;
            for (int k = 0; k < n->n_out && !live; k++) live = n->out[k] >= 0 && uses[n->out[k]];
            if (live) continue;
            drop[j] = 1, removed++;
            for (int k = 0; k < n->n_in + n->n_implicit; k++)
                if (n->in[k] >= 0) uses[n->in[k]]--;
        }
        /* only values that lost their last reader here are absorbed */
        for (int i = 0; before && i < g->n_tensors; i++) uses[i] = uses[i] || !before[i];
        if (rc == EG_OK) absorb_unused_inits(g, uses);
        free(before);
    }
    if (rc == EG_OK && removed) rc = eg_remove_nodes(g, drop, err, errlen);
    if (n_removed) *n_removed = rc == EG_OK ? removed : 0;
    free(uses);
    free(drop);
    return rc;
}

/* ================= weight folding ================= */

typedef struct {
    eg_graph *g;
    float **val;          /* per tensor: computed value (owned), or NULL */
    unsigned char *wo;    /* per node: weight-only */
    unsigned char *need;  /* per node: its value is needed */
    unsigned char *done;  /* per node: evaluated */
} fctx;

/* The float data of tensor t: an initializer's or a computed value. */
static const float *value_of(const fctx *c, int t) {
    if (t < 0) return NULL;
    if (c->val[t]) return c->val[t];
    const eg_tensor *x = &c->g->tensor[t];
    return (x->flags & EG_TF_INIT) && x->dtype == EG_DT_FLOAT ? x->data : NULL;
}

/* Mark needed the weight-only nodes whose outputs reach a non-weight-only
 * node or a graph output, and (backwards) everything they read. */
static void mark_needed(fctx *c) {
    eg_graph *g = c->g;
    for (int k = 0; k < g->n_outputs; k++) {
        int p = g->tensor[g->output[k]].producer;
        if (p >= 0 && c->wo[p]) c->need[p] = 1;
    }
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        if (c->wo[j]) continue;
        for (int k = 0; k < n->n_in + n->n_implicit; k++) {
            int p = n->in[k] >= 0 ? g->tensor[n->in[k]].producer : -1;
            if (p >= 0 && c->wo[p]) c->need[p] = 1;
        }
    }
    for (int j = g->n_nodes - 1; j >= 0; j--) {
        const eg_node *n = &g->node[j];
        if (!c->need[j]) continue;
        for (int k = 0; k < n->n_in; k++) {
            int p = n->in[k] >= 0 ? g->tensor[n->in[k]].producer : -1;
            if (p >= 0 && c->wo[p]) c->need[p] = 1;
        }
    }
}

/* Evaluate node j when its inputs are known. @return EG_OK (done[j] set
 * when evaluated) or EG_ENOMEM. */
static eg_status eval_node(fctx *c, int j) {
    const eg_node *n = &c->g->node[j];
    const float *in[EG_MAX_INTS] = {0};
    if (n->n_out != 1 || n->out[0] < 0 || n->n_in > EG_MAX_INTS) return EG_OK;
    const eg_tensor *o = &c->g->tensor[n->out[0]];
    int64_t numel = eg_shape_numel(&o->shape);
    if (o->dtype != EG_DT_FLOAT || numel < 0 || numel > ((int64_t)1 << 31)) return EG_OK;
    for (int k = 0; k < n->n_in; k++) in[k] = value_of(c, n->in[k]);
    float *out = malloc(sizeof *out * (size_t)(numel ? numel : 1));
    if (!out) return EG_ENOMEM;
    float *const outs[1] = {out};
    int ok = n->kind == EG_KIND_OPS ? eg_fkern_node(c->g, n, in, outs, NULL, 0) == EG_OK
                                    : eg_fkern_model(c->g, n, in, out);
    if (!ok) {
        free(out);
        return EG_OK;
    }
    c->val[n->out[0]] = out;
    c->done[j] = 1;
    return EG_OK;
}

/* Turn tensor t (output of evaluated node p) into an initializer holding
 * its computed value; p loses that output. */
static void make_init(fctx *c, int t) {
    eg_tensor *x = &c->g->tensor[t];
    eg_node *p = &c->g->node[x->producer];
    for (int k = 0; k < p->n_out; k++)
        if (p->out[k] == t) p->out[k] = -1;
    if (x->flags & EG_TF_BORROWED) { /* a clone's: forget the source's parts, own the new data */
        x->raw = NULL, x->raw_len = 0, x->proto = NULL, x->proto_len = 0;
        x->vinfo = NULL, x->vinfo_len = 0;
    } else {
        free(x->data), free(x->raw), free(x->proto);
        x->raw = NULL, x->raw_len = 0, x->proto = NULL, x->proto_len = 0;
    }
    x->flags |= EG_TF_INIT;
    x->flags &= ~(unsigned)(EG_TF_CONST | EG_TF_ABSORBED | EG_TF_BORROWED);
    x->data = c->val[t];
    x->producer = -1;
    c->val[t] = NULL;
}

/* A folded value this large is written only when it copies no weight:
 * when every initializer of this size it is computed from is consumed by
 * it alone. A consumer is a node that stays (a runtime reader, such as the
 * Gather of a tied embedding whose transpose is the LM head) or another
 * folded value this large (ALBERT's one layer's weights, scaled in each
 * layer). Else the weight-only nodes stay, and the runtime folds them at
 * load (onnxruntime does): the same time, and the file does not store the
 * weight twice. Smaller values fold always: a bias derived from a weight
 * costs nothing worth a node. */
#define FOLD_BIG_BYTES ((int64_t)1 << 20)

static int big(const eg_graph *g, int t) { return 4 * eg_shape_numel(&g->tensor[t].shape) >= FOLD_BIG_BYTES; }

/* The weight-only nodes value t is computed by into stack (marked in
 * cone, which the caller clears). @return how many. */
static int cone_of(const fctx *c, int t, unsigned char *cone, int *stack) {
    const eg_graph *g = c->g;
    int n = 0, top = 0;
    stack[n++] = g->tensor[t].producer;
    cone[stack[0]] = 1;
    while (top < n) {
        const eg_node *nd = &g->node[stack[top++]];
        for (int k = 0; k < nd->n_in; k++) {
            int p = nd->in[k] >= 0 ? g->tensor[nd->in[k]].producer : -1;
            if (p >= 0 && c->wo[p] && !cone[p]) cone[p] = 1, stack[n++] = p;
        }
    }
    return n;
}

/* The large initializers the n nodes of stack read, each once (seen: per
 * tensor, stamped with `stamp`): with count, each gains a consumer; else
 * @return 1 when one of them has more than one. */
static int big_inits(const eg_graph *g, const int *stack, int n, int *seen, int stamp, int *consumers,
                     int count) {
    for (int i = 0; i < n; i++) {
        const eg_node *nd = &g->node[stack[i]];
        for (int k = 0; k < nd->n_in; k++) {
            int v = nd->in[k];
            if (v < 0 || !(g->tensor[v].flags & EG_TF_INIT) || !big(g, v) || seen[v] == stamp) continue;
            seen[v] = stamp;
            if (count) consumers[v]++;
            else if (consumers[v] > 1) return 1;
        }
    }
    return 0;
}

/* Every value computed here that an unevaluated node or a graph output
 * reads becomes an initializer, unless it would copy a weight (above).
 * @return how many, -1 when out of memory. */
static int materialise(fctx *c) {
    eg_graph *g = c->g;
    int count = 0, *rd_at = NULL, *rd = NULL;
    size_t nt = (size_t)g->n_tensors + 1, nn = (size_t)g->n_nodes + 1;
    unsigned char *read_outside = calloc(nt, 1), *cone = calloc(nn, 1);
    int *stack = malloc(sizeof *stack * nn), *consumers = calloc(nt, sizeof(int)), *seen = calloc(nt, sizeof(int));
    if (!read_outside || !cone || !stack || !consumers || !seen || eg_reader_index(g, &rd_at, &rd) != EG_OK) {
        free(read_outside), free(cone), free(stack), free(consumers), free(seen), free(rd_at), free(rd);
        return -1;
    }
    for (int k = 0; k < g->n_outputs; k++) read_outside[g->output[k]] = 1;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        if (c->done[j]) continue;
        for (int k = 0; k < n->n_in + n->n_implicit; k++)
            if (n->in[k] >= 0) read_outside[n->in[k]] = 1;
    }
    /* the consumers of each large initializer: the nodes that stay, then
     * the large values to fold that are computed from it */
    for (int v = 0; v < g->n_tensors; v++) {
        if (!(g->tensor[v].flags & EG_TF_INIT) || !big(g, v)) continue;
        consumers[v] = (g->tensor[v].flags & EG_TF_OUTPUT) != 0;
        for (int r = rd_at[v]; r < rd_at[v + 1]; r++) /* a weight-only node not needed is dropped */
            consumers[v] += !c->done[rd[r]] && (!c->wo[rd[r]] || c->need[rd[r]]);
    }
    for (int t = 0; t < g->n_tensors; t++) {
        if (!c->val[t] || !read_outside[t] || g->tensor[t].producer < 0 || !big(g, t)) continue;
        int n = cone_of(c, t, cone, stack);
        big_inits(g, stack, n, seen, t + 1, consumers, 1);
        for (int i = 0; i < n; i++) cone[stack[i]] = 0;
    }
    for (int t = 0; t < g->n_tensors; t++) {
        if (!c->val[t] || !read_outside[t] || g->tensor[t].producer < 0) continue;
        int copies = 0;
        if (big(g, t)) {
            int n = cone_of(c, t, cone, stack);
            copies = big_inits(g, stack, n, seen, -(t + 1), consumers, 0);
            for (int i = 0; i < n; i++) cone[stack[i]] = 0;
        }
        if (copies) continue;
        make_init(c, t);
        count++;
    }
    free(read_outside), free(cone), free(stack), free(consumers), free(seen), free(rd_at), free(rd);
    return count;
}

static void fctx_free(fctx *c) {
    for (int t = 0; c->val && t < c->g->n_tensors; t++) free(c->val[t]);
    free(c->val), free(c->wo), free(c->need), free(c->done);
}


eg_status eg_fold_weights(eg_graph *g, int *n_folded, char *err, size_t errlen) {
    size_t nn = (size_t)g->n_nodes + 1;
    fctx c = {g, calloc((size_t)g->n_tensors + 1, sizeof(float *)), calloc(nn, 1), calloc(nn, 1),
              calloc(nn, 1)};
    eg_status rc = c.val && c.wo && c.need && c.done ? EG_OK : EG_ENOMEM;
    int folded = 0;
    if (n_folded) *n_folded = 0;
    if (rc == EG_OK) {
        eg_mark_weight_only(g, c.wo);
        mark_needed(&c);
    }
    for (int j = 0; rc == EG_OK && j < g->n_nodes; j++)
        if (c.need[j]) rc = eval_node(&c, j);
    if (rc == EG_OK && (folded = materialise(&c)) < 0) rc = EG_ENOMEM;
    if (rc == EG_OK && folded > 0) rc = eg_drop_dead(g, NULL, err, errlen);
    if (rc == EG_OK && folded > 0) rc = eg_resolve(g, err, errlen);
    if (rc == EG_OK && n_folded) *n_folded = folded;
    if (rc == EG_ENOMEM && err && errlen) snprintf(err, errlen, "out of memory folding weights");
    fctx_free(&c);
    return rc;
}
