/* merge.c - the reduce step of a divided run (synth.h): part p of every
 * shard's file, classes joined across shards by exact key bytes, then
 * pruned and written as the unsharded run writes them (clsout.h). */
#include "synth.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "clsout.h"
#include "enum.h"
#include "shardfile.h"

typedef struct {
    sf_header *h;
    sf_part part;
    pool pool;
    dom dom;
    int have_pool;
    co_writer w;
    struct order *order; /* the classes sorted by (hash, check, shard) */
    uint8_t *keys;    /* key bytes of a group's classes */
    size_t *key_len, key_cap;
    sg_graph *all;    /* the graphs of one joined class */
    size_t all_cap;
    char *err;
    size_t errlen;
} merge;

static syn_status mfail(merge *m, syn_status rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, m->errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* 1 when two shard headers describe the same run. */
static int same_run(const sf_header *a, const sf_header *b) {
    return a->shard_n == b->shard_n && a->parts == b->parts && a->max_ops == b->max_ops &&
           a->types == b->types && a->groups2 == b->groups2 && a->no_prune == b->no_prune &&
           a->kernels1x1 == b->kernels1x1 &&
           a->seed == b->seed && a->ops == b->ops;
}

/* Every shard of one run, once each. */
static syn_status check_headers(merge *m, const char *const *paths, int n, uint32_t part) {
    uint64_t seen = 0;
    char e[SF_ERRLEN];
    for (int i = 0; i < n; i++) {
        if (sf_read_header(paths[i], &m->h[i], e, sizeof e)) return mfail(m, SYN_EINPUT, "%s", e);
        if (!same_run(&m->h[0], &m->h[i]))
            return mfail(m, SYN_EINPUT, "%s: made by another run than %s (options differ)", paths[i], paths[0]);
        if (seen >> m->h[i].shard_k & 1)
            return mfail(m, SYN_EINPUT, "%s: shard %u given twice", paths[i], m->h[i].shard_k);
        seen |= 1ull << m->h[i].shard_k;
    }
    for (uint32_t k = 0; k < m->h[0].shard_n; k++)
        if (!(seen >> k & 1)) return mfail(m, SYN_EINPUT, "shard %u of %u missing", k, m->h[0].shard_n);
    if (part >= m->h[0].parts) return mfail(m, SYN_EINVAL, "part %u: the shards have %u parts", part, m->h[0].parts);
    return SYN_OK;
}

static void options_of(const sf_header *h, int no_timings, syn_options *o) {
    syn_options_init(o);
    o->max_ops = (int)h->max_ops, o->types = h->types, o->groups2 = (int)h->groups2;
    o->no_prune = (int)h->no_prune, o->seed = h->seed, o->ops = h->ops, o->kernels1x1 = (int)h->kernels1x1;
    o->no_timings = no_timings;
}

/* A class's sort key beside its index (qsort passes no context). */
struct order {
    uint64_t hash;
    uint32_t check, shard;
    size_t cls;
};

static int cmp_order(const void *a, const void *b) {
    const struct order *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    if (x->check != y->check) return x->check < y->check ? -1 : 1;
    if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
    return x->cls < y->cls ? -1 : x->cls > y->cls;
}

static int cmp_sg(const void *a, const void *b) { return sg_compare(a, b); }

static int reserve(void **p, size_t *cap, size_t need, size_t sz) {
    if (need <= *cap) return 0;
    void *q = realloc(*p, 2 * need * sz);
    if (!q) return -1;
    *p = q, *cap = 2 * need;
    return 0;
}

/* Join the classes c[0..n) (equal key bytes, from different shards) and
 * write the class: the smallest graph represents it, members are the
 * union, the count is the levels below (every shard has them: once) plus
 * each shard's share of the last level. */
static syn_status join(merge *m, const size_t *c, size_t n) {
    const sf_part *P = &m->part;
    size_t total = 0, k = 0, have_below = 0;
    uint64_t below = 0, count = 0;
    for (size_t i = 0; i < n; i++) total += 1 + P->cls[c[i]].n_members;
    if (reserve((void **)&m->all, &m->all_cap, total, sizeof *m->all)) return mfail(m, SYN_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const sf_class *x = &P->cls[c[i]];
        if (x->count_below && have_below && x->count_below != below)
            return mfail(m, SYN_EINPUT, "shards disagree on a class of the levels below the last "
                         "(files from different builds?)");
        if (x->count_below) below = x->count_below, have_below++;
        count += x->count_last;
        m->all[k++] = x->rep;
        if (x->n_members) memcpy(m->all + k, P->members + x->first, x->n_members * sizeof *m->all);
        k += x->n_members;
    }
    if (have_below && have_below != m->h[0].shard_n)
        return mfail(m, SYN_EINPUT, "a class of the levels below the last is in %zu of %u shards "
                     "(files from different builds?)", have_below, m->h[0].shard_n);
    qsort(m->all, k, sizeof *m->all, cmp_sg);
    size_t u = 1;
    for (size_t i = 1; i < k; i++)
        if (sg_compare(&m->all[i], &m->all[u - 1]) != 0) m->all[u++] = m->all[i];
    syn_status rc = co_class(&m->w, &m->all[0], m->all + 1, u - 1, below + count);
    return rc ? mfail(m, rc, "%s", m->w.err) : SYN_OK;
}

/* 1 when classes x and y of the part hold a graph in common: then they
 * are one class (a graph has one fingerprint), no evaluation needed. */
static int share_graph(const sf_part *P, const sf_class *x, const sf_class *y) {
    if (sg_compare(&x->rep, &y->rep) == 0) return 1;
    for (uint32_t i = 0; i < y->n_members; i++)
        if (sg_compare(&x->rep, &P->members[y->first + i]) == 0) return 1;
    for (uint32_t i = 0; i < x->n_members; i++)
        if (sg_compare(&y->rep, &P->members[x->first + i]) == 0) return 1;
    return 0;
}

static size_t root(size_t *up, size_t i) {
    while (up[i] != i) i = up[i] = up[up[i]];
    return i;
}

/* A group of equal (hash, check): classes joined when they share a graph,
 * and otherwise only by exact key bytes, so a hash collision between
 * shards never joins two classes. g[0..n) are class indices; on return
 * they are reordered so that each joined class is a run. */
static syn_status join_group(merge *m, size_t *g, size_t n) {
    const sf_part *P = &m->part;
    size_t up[64 * 2], *u = n <= 128 ? up : malloc(n * sizeof *u), roots = 0;
    if (!u) return mfail(m, SYN_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) u[i] = i;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (root(u, i) != root(u, j) && share_graph(P, &P->cls[g[i]], &P->cls[g[j]])) {
                size_t a = root(u, i), b = root(u, j); /* the smaller index stays the root */
                if (a < b) u[b] = a; else u[a] = b;
            }
    for (size_t i = 0; i < n; i++) roots += root(u, i) == i;
    syn_status rc = SYN_OK;
    if (roots > 1) { /* clusters that share no graph: compare their key bytes */
        if (reserve((void **)&m->keys, &m->key_cap, n * KEY_MAX_BYTES, 1) ||
            !(m->key_len = realloc(m->key_len, n * sizeof *m->key_len)))
            rc = mfail(m, SYN_ENOMEM, "out of memory");
        for (size_t i = 0; i < n && !rc; i++)
            if (root(u, i) == i &&
                key_of_aligned(m->w.kc, &P->cls[g[i]].rep, m->keys + i * KEY_MAX_BYTES, &m->key_len[i]) != KEY_OK)
                rc = mfail(m, SYN_EINPUT, "a shard's class could not be evaluated");
        for (size_t i = 0; i < n && !rc; i++)
            for (size_t j = i + 1; j < n && root(u, i) == i; j++)
                if (root(u, j) == j && m->key_len[i] == m->key_len[j] &&
                    memcmp(m->keys + i * KEY_MAX_BYTES, m->keys + j * KEY_MAX_BYTES, m->key_len[i]) == 0)
                    u[j] = i;
    }
    /* runs of one root each, in first-seen order */
    size_t k = 0, *tmp = malloc(2 * n * sizeof *tmp);
    if (!rc && !tmp) rc = mfail(m, SYN_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
        if (root(u, i) != i) continue;
        size_t start = k;
        for (size_t j = 0; j < n; j++)
            if (root(u, j) == i) tmp[k++] = g[j];
        rc = join(m, tmp + start, k - start);
    }
    free(tmp);
    if (u != up) free(u);
    return rc;
}

static syn_status join_all(merge *m) {
    size_t n = m->part.n_cls, *g = NULL, cap = 0;
    m->order = malloc((n ? n : 1) * sizeof *m->order);
    if (!m->order) return mfail(m, SYN_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const sf_class *c = &m->part.cls[i];
        m->order[i] = (struct order){c->hash, c->check, c->shard, i};
    }
    qsort(m->order, n, sizeof *m->order, cmp_order);
    syn_status rc = SYN_OK;
    for (size_t i = 0, j; i < n && !rc; i = j) {
        for (j = i + 1; j < n && m->order[j].hash == m->order[i].hash && m->order[j].check == m->order[i].check; j++)
            continue;
        if (reserve((void **)&g, &cap, j - i, sizeof *g)) rc = mfail(m, SYN_ENOMEM, "out of memory");
        for (size_t k = i; k < j && !rc; k++) g[k - i] = m->order[k].cls;
        if (!rc) rc = join_group(m, g, j - i);
    }
    free(g);
    return rc;
}

static void times(double t0, syn_stats *st) {
    struct rusage ru;
    st->wall_s = en_now() - t0;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        st->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
        st->peak_rss = (uint64_t)ru.ru_maxrss * 1024;
    }
}

syn_status syn_merge_part(const char *const *paths, int n, uint32_t part, int no_timings,
                          syn_options *o, rdb_file **out, syn_stats *st, char *err, size_t errlen) {
    merge m;
    double t0 = en_now();
    char e[SF_ERRLEN];
    memset(&m, 0, sizeof m);
    memset(st, 0, sizeof *st);
    m.err = err, m.errlen = errlen;
    *out = NULL;
    syn_status rc = n < 2 || n > RDB_MAX_SHARDS ? mfail(&m, SYN_EINVAL, "need 2..%d shard files", RDB_MAX_SHARDS) : SYN_OK;
    if (!rc && !(m.h = calloc((size_t)n, sizeof *m.h))) rc = mfail(&m, SYN_ENOMEM, "out of memory");
    if (!rc) rc = check_headers(&m, paths, n, part);
    if (!rc) {
        options_of(&m.h[0], no_timings, o);
        if (syn_inputs(o, &m.pool, &m.dom) || co_init(&m.w, &m.pool, &m.dom, o->max_ops, o->no_prune, 0))
            rc = mfail(&m, SYN_ENOMEM, "out of memory");
        m.have_pool = 1;
    }
    for (int i = 0; i < n && !rc; i++)
        if (sf_read_part(paths[i], part, (uint32_t)i, &m.dom, &m.pool, o->max_ops, &m.part, e, sizeof e))
            rc = mfail(&m, SYN_EINPUT, "%s", e);
    if (!rc) rc = join_all(&m);
    if (!rc) {
        co_sort(m.w.out);
        *st = m.w.st;
        times(t0, st);
        for (int i = 0; i < n; i++) st->graphs += m.h[i].graphs;
        syn_stats gs = *st; /* the whole run's time goes with part 0 */
        for (int i = 0; i < n && part == 0; i++)
            gs.wall_s += (double)m.h[i].wall_ms / 1000, gs.cpu_s += (double)m.h[i].cpu_ms / 1000;
        syn_fill_generator(&m.w.out->gen, o, part == 0 ? &gs : st);
        *out = m.w.out, m.w.out = NULL;
    }
    co_free(&m.w);
    if (m.have_pool) pool_free(&m.pool);
    sf_part_free(&m.part);
    free(m.h), free(m.order), free(m.keys), free(m.key_len), free(m.all);
    return rc;
}
