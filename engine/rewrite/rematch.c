/* rematch.c - the matches of a rewritten graph from its parent's
 * (eg_rematch, rules.h). A rewrite changes a few nodes; every match that
 * binds none of them is the parent's, and the new ones are found by
 * matching from them (eg_match_touching). In phases: map the parent's
 * nodes to the child's, mark what the rewrite touched, keep the parent's
 * matches clear of it, match from it, put all in eg_match_all's order. */
#include "rewrite/rules_int.h"

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
    const unsigned char *anchor;  /* NULL, or new matches only with their
                                     first output at a node marked here */
    const unsigned char *touched; /* keep_binding: only matches binding a
                                     node marked here */
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

/* A match found from a touched node: new. */
static int keep_new(const eg_match *m, void *arg) {
    collected *x = arg;
    if (x->anchor && !x->anchor[m->node[RG_NODE_INDEX(x->rs->rule[m->rule].src.out[0])]]) return 0;
    return keep_found(x, m, EG_REMATCH_NEW);
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

/* A new match of a multi-output rule by its node set, to find the ones
 * binding the same nodes in another order. */
typedef struct {
    uint32_t rule;
    int node[RG_MAX_NODES]; /* sorted, -1 past n_nodes */
    size_t at;              /* its index in eg_match_all's order */
} node_set;

static int cmp_set(const void *a, const void *b) {
    const node_set *x = a, *y = b;
    if (x->rule != y->rule) return x->rule < y->rule ? -1 : 1;
    for (int k = 0; k < RG_MAX_NODES; k++)
        if (x->node[k] != y->node[k]) return x->node[k] < y->node[k] ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* eg_match_all reports one match per node set of a multi-output rule, the
 * first in its order: drop the new ones after it (f sorted). Matches kept
 * from the parent bind no touched node, so none shares its nodes with a
 * new one. @return 0, or 1 out of memory. */
static int drop_repeats(collected *x) {
    node_set *v = malloc(sizeof *v * (x->n ? x->n : 1));
    if (!v) return 1;
    size_t n = 0;
    for (size_t i = 0; i < x->n; i++) {
        const eg_match *m = &x->f[i].m;
        if (x->f[i].from != EG_REMATCH_NEW || x->rs->rule[m->rule].src.n_outputs < 2) continue;
        node_set *e = &v[n++];
        e->rule = m->rule, e->at = i;
        for (int k = 0; k < RG_MAX_NODES; k++) {
            int nd = k < m->n_nodes ? m->node[k] : -1, j = k; /* insertion sort */
            while (j > 0 && e->node[j - 1] > nd) e->node[j] = e->node[j - 1], j--;
            e->node[j] = nd;
        }
    }
    qsort(v, n, sizeof *v, cmp_set);
    for (size_t i = 1; i < n; i++)
        if (v[i].rule == v[i - 1].rule && !memcmp(v[i].node, v[i - 1].node, sizeof v[i].node))
            x->f[v[i].at].m.n_nodes = 0; /* dropped */
    free(v);
    return 0;
}

/* Put x's matches in eg_match_all's order: the first n_kept, kept from
 * the parent, are in it already when the rewrite moved no node before
 * another (else they are sorted too); the new ones are sorted and merged
 * in. Then drop the repeats (drop_repeats). @return 0, or 1 out of memory. */
static int sort_found(collected *x, size_t n_kept) {
    size_t n = x->n;
    if (n == 0) return 0;
    found *tmp = malloc(sizeof *tmp * n);
    if (!tmp) return 1;
    int sorted = 1;
    for (size_t i = 1; i < n_kept && sorted; i++) sorted = cmp_found(&x->f[i - 1], &x->f[i]) <= 0;
    if (!sorted) qsort(x->f, n_kept, sizeof *x->f, cmp_found);
    qsort(x->f + n_kept, n - n_kept, sizeof *x->f, cmp_found);
    size_t i = 0, j = n_kept, k = 0;
    while (i < n_kept && j < n) tmp[k++] = cmp_found(&x->f[j], &x->f[i]) < 0 ? x->f[j++] : x->f[i++];
    while (i < n_kept) tmp[k++] = x->f[i++];
    while (j < n) tmp[k++] = x->f[j++];
    free(x->f);
    x->f = tmp, x->cap = n;
    return drop_repeats(x);
}

eg_status eg_rematch(const eg_ruleset *rs, const eg_graph *parent, const eg_match *pm, size_t n_pm,
                     const eg_graph *child, unsigned char *touched_out, eg_rematch_fn fn, void *arg) {
    collected x = {.rs = rs};
    if (rs->has_scan) { /* a match can bind any node */
        if (touched_out) memset(touched_out, 1, (size_t)child->n_nodes);
        eg_status rc = eg_match_all(rs, child, keep_new, &x);
        for (size_t i = 0; rc == EG_OK && !x.oom && i < x.n; i++)
            if (fn(&x.f[i].m, EG_REMATCH_NEW, arg)) break;
        free(x.f);
        return rc == EG_OK && x.oom ? EG_ENOMEM : rc;
    }
    size_t pn = (size_t)parent->n_nodes + 1, cn = (size_t)child->n_nodes + 1, ct = (size_t)child->n_tensors + 1;
    int *p2c = malloc(sizeof *p2c * pn);
    unsigned char *p_wo = malloc(pn), *c_wo = malloc(cn), *changed = calloc(ct, 1), *touched = calloc(cn, 1);
    eg_status rc = p2c && p_wo && c_wo && changed && touched ? EG_OK : EG_ENOMEM;
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
        /* the ones that bind a touched node, found from them */
        size_t n_kept = x.n;
        if (!x.oom) rc = eg_match_touching(rs, child, touched, keep_new, &x);
        if (rc == EG_OK && x.oom) rc = EG_ENOMEM;
        /* reported in eg_match_all's order, so a search sees the same
         * order either way */
        if (rc == EG_OK && sort_found(&x, n_kept)) rc = EG_ENOMEM;
        for (size_t i = 0; rc == EG_OK && i < x.n; i++)
            if (x.f[i].m.n_nodes && fn(&x.f[i].m, x.f[i].from, arg)) break;
    }
    free(p2c), free(p_wo), free(c_wo), free(changed), free(touched), free(x.f);
    return rc;
}

/* 1 when m binds a node marked in touched. */
static int binds(const eg_match *m, const unsigned char *touched) {
    for (int j = 0; j < m->n_nodes; j++)
        if (touched[m->node[j]]) return 1;
    return 0;
}

static int keep_binding(const eg_match *m, void *arg) {
    collected *x = arg;
    return binds(m, x->touched) ? keep_found(x, m, EG_REMATCH_NEW) : 0;
}

eg_status eg_match_near(const eg_ruleset *rs, const eg_graph *g, const unsigned char *touched,
                        const unsigned char *anchor, eg_match_fn fn, void *arg) {
    collected x = {.rs = rs, .anchor = anchor, .touched = touched};
    eg_status rc;
    if (rs->has_scan) /* eg_match_anchored's, in its order */
        rc = eg_match_anchored(rs, g, anchor, keep_binding, &x);
    else {
        rc = eg_match_touching(rs, g, touched, keep_new, &x);
        if (rc == EG_OK && !x.oom && sort_found(&x, 0)) rc = EG_ENOMEM;
    }
    if (rc == EG_OK && x.oom) rc = EG_ENOMEM;
    for (size_t i = 0; rc == EG_OK && i < x.n; i++)
        if (x.f[i].m.n_nodes && fn(&x.f[i].m, arg)) break;
    free(x.f);
    return rc;
}
