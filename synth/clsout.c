/* clsout.c - a class into the candidates file: inputs that fit, rule
 * graphs, rg_compare order, pruning, fingerprint (see clsout.h). */
#include "clsout.h"

#include <stdlib.h>
#include <string.h>

struct co_pair {
    rg_graph rg;
    sg_graph sg;
};

static int cmp_sg(const void *a, const void *b) { return sg_compare(a, b); }

static int cmp_pair(const void *a, const void *b) {
    return rg_compare(&((const struct co_pair *)a)->rg, &((const struct co_pair *)b)->rg);
}

int co_init(co_writer *w, const pool *p, const dom *d, int max_ops, int no_prune, int cuda) {
    memset(w, 0, sizeof *w);
    w->pool = p, w->dom = d, w->max_ops = max_ops, w->no_prune = no_prune;
    w->kc = key_ctx_new(p, d, cuda);
    w->ps = pr_scratch_new();
    w->out = rdb_new(RDB_CANDIDATES);
    w->key = malloc(KEY_MAX_BYTES);
    return w->kc && w->ps && w->out && w->key ? 0 : -1;
}

void co_free(co_writer *w) {
    key_ctx_free(w->kc), pr_scratch_free(w->ps), rdb_free(w->out);
    free(w->g), free(w->sg), free(w->key);
    memset(w, 0, sizeof *w);
}

static syn_status cfail(co_writer *w, syn_status rc, const char *what) {
    snprintf(w->err, sizeof w->err, "%s", what);
    return rc;
}

/* A class's members share one numbering of at most RG_MAX_INPUTS inputs:
 * keep the representative and, in sg order, each member that still fits.
 * @return the graphs kept; *used their variables. */
static size_t fit_inputs(co_writer *w, sg_graph *sg, size_t n, uint32_t *used) {
    size_t k = 1;
    *used = sg_vars(&sg[0]);
    qsort(sg + 1, n - 1, sizeof *sg, cmp_sg); /* an order independent of arrival */
    for (size_t i = 1; i < n; i++) {
        uint32_t u = *used | sg_vars(&sg[i]);
        if (__builtin_popcount(u) > RG_MAX_INPUTS) {
            w->st.over_inputs++;
            continue;
        }
        *used = u, sg[k++] = sg[i];
    }
    return k;
}

/* Append the class: its members kept by pruning, as rule graphs. */
static syn_status write_class(co_writer *w, const sg_graph *rep, uint64_t count, size_t n,
                              size_t n_kept, const int8_t *idx, int n_in) {
    size_t len;
    rdb_class *rc;
    if (key_of_aligned(w->kc, rep, w->key, &len) != KEY_OK) return cfail(w, SYN_ENOMEM, "out of memory");
    if (rdb_add_class(w->out, w->key, len, count, &rc) != RDB_OK) return cfail(w, SYN_ENOMEM, "out of memory");
    rc->n_shapes = n_in;
    for (int v = 0; v < w->pool->n_vars; v++)
        if (idx[v] >= 0) rc->shapes[idx[v]] = w->pool->var[v].shape;
    for (size_t i = 0, k = 0; i < n && k < n_kept; i++) { /* kept: a subsequence of g */
        if (sg_compare(&w->g[i].sg, &w->sg[k]) != 0) continue;
        k++;
        if (rdb_class_add_member(rc, &w->g[i].rg) != RDB_OK) return cfail(w, SYN_ENOMEM, "out of memory");
    }
    w->st.candidates++, w->st.members += n_kept;
    return SYN_OK;
}

static int reserve(co_writer *w, size_t n) {
    if (n <= w->cap) return 0;
    free(w->g), free(w->sg);
    w->cap = 2 * n;
    w->g = malloc(w->cap * sizeof *w->g), w->sg = malloc(w->cap * sizeof *w->sg);
    if (w->g && w->sg) return 0;
    w->cap = 0;
    return -1;
}

syn_status co_class(co_writer *w, const sg_graph *rep, const sg_graph *mem, size_t n,
                    uint64_t count) {
    int8_t idx[POOL_MAX_VARS];
    uint32_t used;
    int n_in = 0;
    w->st.classes++, w->st.class_graphs += count;
    if (w->max_ops > 0 && rep->n_nodes == w->max_ops) w->st.level_classes[w->max_ops]++;
    if (!n) return SYN_OK;
    if (reserve(w, n + 1)) return cfail(w, SYN_ENOMEM, "out of memory");
    w->sg[0] = *rep;
    memcpy(w->sg + 1, mem, n * sizeof *mem);
    n = fit_inputs(w, w->sg, n + 1, &used);
    for (int v = 0; v < w->pool->n_vars; v++) idx[v] = (int8_t)(used >> v & 1 ? n_in++ : -1);
    for (size_t i = 0; i < n; i++) {
        w->g[i].sg = w->sg[i];
        if (sg_to_rg(&w->g[i].sg, w->dom, w->pool, key_memo(w->kc), idx, &w->g[i].rg) != RG_OK)
            return cfail(w, SYN_ENOMEM, "internal error: a stored graph has no shape");
    }
    qsort(w->g, n, sizeof *w->g, cmp_pair);
    for (size_t i = 0; i < n; i++) w->sg[i] = w->g[i].sg;
    size_t kept = w->no_prune ? n : pr_class(w->kc, w->ps, w->pool, w->sg, n, &w->st.pruning);
    if (!kept) return cfail(w, SYN_ENOMEM, "out of memory while pruning");
    return kept < 2 ? SYN_OK : write_class(w, rep, count, n, kept, idx, n_in);
}

void co_add_counts(syn_stats *to, const syn_stats *from, int max_ops) {
    to->classes += from->classes, to->class_graphs += from->class_graphs;
    to->level_classes[max_ops] += max_ops > 0 ? from->level_classes[max_ops] : 0;
    to->over_inputs += from->over_inputs;
    to->candidates += from->candidates, to->members += from->members;
    for (int k = 0; k < PR_N; k++) {
        to->pruning.classes[k] += from->pruning.classes[k];
        to->pruning.graphs[k] += from->pruning.graphs[k];
    }
}

static int cmp_class(const void *a, const void *b) {
    const rdb_class *x = a, *y = b;
    int c = memcmp(x->fp, y->fp, x->fp_len < y->fp_len ? x->fp_len : y->fp_len);
    return c ? c : (x->fp_len > y->fp_len) - (x->fp_len < y->fp_len);
}

void co_sort(rdb_file *f) {
    if (f->n_classes > 1) qsort(f->classes, f->n_classes, sizeof *f->classes, cmp_class);
}
