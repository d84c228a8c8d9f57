/* rematch.c - the matches of a rewritten graph from its parent's
 * (eg_rematch, rules.h). A rewrite changes a few nodes; every match that
 * binds none of them is the parent's, and the new ones are found by
 * matching anchored near them. In phases: map the parent's nodes to the
 * child's, mark what the rewrite touched, keep the parent's matches clear
 * of it, match around it. */
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

/* The matches found, reported once all are in, in eg_match_all's order. */
typedef struct {
    eg_match m;
    size_t from;
    uint32_t rank;            /* the rule's rank in the ruleset's order */
    int key[RG_MAX_NODES];    /* graph nodes in the order the plan binds them */
} found;

typedef struct {
    const eg_ruleset *rs;
    const unsigned char *touched; /* NULL: keep every match (all new) */
    found *f;
    size_t n, cap;
    int oom;
} collected;

static int keep_found(collected *x, const eg_match *m, size_t from) {
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 256;
        found *t = realloc(x->f, sizeof *t * cap);
        if (!t) {
            x->oom = 1;
            return 1;
        }
        x->f = t, x->cap = cap;
    }
    found *f = &x->f[x->n++];
    const eg_plan *p = &x->rs->plan[m->rule];
    f->m = *m, f->from = from, f->rank = x->rs->rank[m->rule];
    for (int k = 0; k < RG_MAX_NODES; k++) f->key[k] = k < p->n_steps ? m->node[p->step[k].node] : -1;
    return 0;
}

/* Keep a match found near the rewrite only if it binds a touched node:
 * the others are the parent's, kept already. */
static int keep_touching(const eg_match *m, void *arg) {
    collected *x = arg;
    for (int j = 0; j < m->n_nodes; j++)
        if (!x->touched || x->touched[m->node[j]]) return keep_found(x, m, EG_REMATCH_NEW);
    return 0;
}

/* eg_match_all's order: the node of the first output (key[0]), the
 * rule's rank, then the other nodes in the order the plan binds them
 * (candidates are tried in graph order). */
static int cmp_found(const void *a, const void *b) {
    const found *x = a, *y = b;
    if (x->key[0] != y->key[0]) return x->key[0] < y->key[0] ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    for (int k = 1; k < RG_MAX_NODES; k++)
        if (x->key[k] != y->key[k]) return x->key[k] < y->key[k] ? -1 : 1;
    return 0;
}

/* Touched nodes of the child c (origin: 1 + the parent p's node index):
 * new ones; ones whose inputs or weight-only flag changed; producers of
 * tensors whose readers or graph-output flags changed. */
static void mark_touched(const eg_graph *p, const eg_graph *c, const unsigned char *p_wo, const unsigned char *c_wo,
                         const int *p2c, unsigned char *changed, unsigned char *touched) {
    for (int j = 0; j < p->n_nodes; j++) /* removed: its inputs lose a reader */
        if (p2c[j] < 0)
            for (int k = 0; k < p->node[j].n_in + p->node[j].n_implicit; k++)
                if (p->node[j].in[k] >= 0) changed[p->node[j].in[k]] = 1;
    for (int j = 0; j < c->n_nodes; j++) {
        const eg_node *n = &c->node[j];
        int o = n->origin - 1;
        const eg_node *was = o >= 0 ? &p->node[o] : NULL;
        int diff = !was || was->n_in != n->n_in || was->n_implicit != n->n_implicit || p_wo[o] != c_wo[j];
        for (int k = 0; was && !diff && k < n->n_in + n->n_implicit; k++) diff = was->in[k] != n->in[k];
        touched[j] = (unsigned char)diff;
        for (int k = 0; diff && k < n->n_in + n->n_implicit; k++) {
            if (n->in[k] >= 0) changed[n->in[k]] = 1;
            if (was && k < was->n_in + was->n_implicit && was->in[k] >= 0) changed[was->in[k]] = 1;
        }
    }
    for (int t = 0; t < p->n_tensors && t < c->n_tensors; t++)
        if ((p->tensor[t].flags ^ c->tensor[t].flags) & (EG_TF_OUTPUT | EG_TF_PINNED)) changed[t] = 1;
    for (int t = p->n_tensors; t < c->n_tensors; t++) changed[t] = 1;
    for (int j = 0; j < c->n_nodes; j++)
        for (int k = 0; k < c->node[j].n_out; k++)
            if (c->node[j].out[k] >= 0 && changed[c->node[j].out[k]]) touched[j] = 1;
}

/* The nodes a match binding a touched node can be anchored at. A match is
 * found from its anchor one node at a time, each next to one bound
 * already: the producer of a bound node's input (PRODUCER), or a node
 * reading a bound value at some input (CONSUMER). So the anchor is at
 * most n_nodes - 1 such steps back from any node n it binds: to a reader
 * of n's output (n was a producer), or, when n's operator is bound by a
 * CONSUMER step at input k, to the producer or a reader of that input.
 * Marked: every node that many steps back from a touched one. */
static void mark_anchors(const eg_ruleset *rs, const eg_graph *c, const int *at, const int *rd,
                         const unsigned char *touched, unsigned char *anchor, int *queue) {
    int n = 0;
    for (int j = 0; j < c->n_nodes; j++) {
        anchor[j] = touched[j];
        if (touched[j]) queue[n++] = j;
    }
    for (int round = 1, from = 0; round < rs->max_nodes && from < n; round++) {
        int to = n;
        for (int h = from; h < to; h++) {
            const eg_node *nd = &c->node[queue[h]];
            unsigned cpos = nd->kind == EG_KIND_OPS ? rs->consumer_pos[nd->op] : 0;
            for (int k = 0; k < nd->n_out; k++) /* back over a PRODUCER step */
                for (int i = nd->out[k] >= 0 ? at[nd->out[k]] : 0; nd->out[k] >= 0 && i < at[nd->out[k] + 1]; i++)
                    if (!anchor[rd[i]]) anchor[rd[i]] = 1, queue[n++] = rd[i];
            for (int k = 0; k < nd->n_in && k < 32; k++) { /* back over a CONSUMER step */
                int v = nd->in[k], p = v >= 0 ? c->tensor[v].producer : -1;
                if (v < 0 || !(cpos >> k & 1)) continue;
                if (p >= 0 && !anchor[p]) anchor[p] = 1, queue[n++] = p;
                for (int i = at[v]; i < at[v + 1]; i++)
                    if (!anchor[rd[i]]) anchor[rd[i]] = 1, queue[n++] = rd[i];
            }
        }
        from = to;
    }
}

eg_status eg_rematch(const eg_ruleset *rs, const eg_graph *parent, const eg_match *pm, size_t n_pm,
                     const eg_graph *child, unsigned char *touched_out, eg_rematch_fn fn, void *arg) {
    collected x = {.rs = rs};
    if (rs->has_scan) { /* a match can bind any node */
        if (touched_out) memset(touched_out, 1, (size_t)child->n_nodes);
        eg_status rc = eg_match_all(rs, child, keep_touching, &x);
        for (size_t i = 0; rc == EG_OK && !x.oom && i < x.n; i++)
            if (fn(&x.f[i].m, EG_REMATCH_NEW, arg)) break;
        free(x.f);
        return rc == EG_OK && x.oom ? EG_ENOMEM : rc;
    }
    size_t pn = (size_t)parent->n_nodes + 1, cn = (size_t)child->n_nodes + 1, ct = (size_t)child->n_tensors + 1;
    int *p2c = malloc(sizeof *p2c * pn), *queue = malloc(sizeof *queue * cn), *at = NULL, *rd = NULL;
    unsigned char *p_wo = malloc(pn), *c_wo = malloc(cn), *changed = calloc(ct, 1);
    unsigned char *touched = calloc(cn, 1), *anchor = malloc(cn);
    eg_status rc = p2c && queue && p_wo && c_wo && changed && touched && anchor ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) rc = eg_reader_index(child, &at, &rd);
    if (rc == EG_OK) {
        for (int j = 0; j < parent->n_nodes; j++) p2c[j] = -1;
        for (int j = 0; j < child->n_nodes; j++) {
            int o = child->node[j].origin - 1;
            if (o >= 0 && o < parent->n_nodes) p2c[o] = j;
        }
        eg_mark_weight_only(parent, p_wo);
        eg_mark_weight_only(child, c_wo);
        mark_touched(parent, child, p_wo, c_wo, p2c, changed, touched);
        if (touched_out) memcpy(touched_out, touched, (size_t)child->n_nodes);
        /* the parent's matches that bind nothing touched */
        for (size_t i = 0; i < n_pm && !x.oom; i++) {
            eg_match m = pm[i];
            int keep = 1;
            for (int j = 0; j < m.n_nodes && keep; j++) {
                int q = p2c[m.node[j]];
                keep = q >= 0 && !touched[q];
                m.node[j] = q;
            }
            if (keep) keep_found(&x, &m, i);
        }
        /* the ones that bind a touched node, found around them */
        mark_anchors(rs, child, at, rd, touched, anchor, queue);
        x.touched = touched;
        if (!x.oom) rc = eg_match_anchored(rs, child, anchor, keep_touching, &x);
        if (rc == EG_OK && x.oom) rc = EG_ENOMEM;
        /* reported in eg_match_all's order, so a search sees the same
         * order either way */
        if (rc == EG_OK) qsort(x.f, x.n, sizeof *x.f, cmp_found);
        for (size_t i = 0; rc == EG_OK && i < x.n; i++)
            if (fn(&x.f[i].m, x.f[i].from, arg)) break;
    }
    free(p2c), free(queue), free(at), free(rd), free(p_wo), free(c_wo), free(changed);
    free(touched), free(anchor), free(x.f);
    return rc;
}
