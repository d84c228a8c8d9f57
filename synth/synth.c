/* synth.c - the generator's driver: level 0, the levels below the last,
 * the last level in memory-limited passes, and the candidates file (see
 * synth.h). */
#include "synth.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clsout.h"
#include "enum.h"
#include "fptable.h"
#include "gpu.h"
#include "key.h"
#include "pool.h"
#include "sgraph.h"
#include "shardfile.h"

#define STRIPE_BITS 8
#define MAX_PASSES (1u << 16)
#define THREAD_MARGIN (32ull << 20) /* scratch per thread, and slack */

/* Everything one run owns; freed in one place. */
typedef struct {
    const syn_options *o;
    syn_stats *st;
    pool pool;
    dom dom;
    fpt *table;
    key_ctx *kc;
    fpt_cache *cache;
    rdb_file *out;
    sf_writer *sw; /* a shard of a divided run writes its classes here */
    sg_graph *reps[SYN_MAX_OPS + 1];   /* all representatives by nodes */
    size_t n_reps[SYN_MAX_OPS + 1];
    sg_graph *single[SYN_MAX_OPS + 1]; /* the single-output ones */
    size_t n_single[SYN_MAX_OPS + 1];
    double t0;
    char *err;
    size_t errlen;
} run;

static syn_status fail(run *r, syn_status rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
    return rc;
}

void syn_options_init(syn_options *o) {
    memset(o, 0, sizeof *o);
    o->max_ops = 3;
    o->ops = OPS_SET_ALL;
    o->types = pool_default_types();
    o->seed = 1;
    o->shard_n = 1;
}

/* Parse a comma-separated list of names into a bit set; lookup gives a
 * name's bit or -1. */
static int parse_list(const char *list, const char *what, int (*lookup)(const char *),
                      uint64_t *bits, char *err, size_t errlen) {
    char name[64];
    *bits = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof name) {
            snprintf(err, errlen, "empty or overlong %s name in '%s'", what, list);
            return -1;
        }
        memcpy(name, p, n), name[n] = 0;
        int bit = lookup(name);
        if (bit < 0) {
            snprintf(err, errlen, "unknown %s '%s'", what, name);
            return -1;
        }
        *bits |= (uint64_t)1 << bit;
        p += n + (p[n] == ',');
    }
    if (!*bits) snprintf(err, errlen, "no %s in '%s'", what, list);
    return *bits ? 0 : -1;
}

static int op_bit(const char *name) {
    ops_op op = ops_by_name(name);
    return op == OP_COUNT ? -1 : (int)op;
}

static int type_bit(const char *name) {
    for (int t = 0; t < pool_n_types; t++)
        if (strcmp(pool_types[t].name, name) == 0) return t;
    return -1;
}

int syn_parse_ops(const char *list, ops_set *ops, char *err, size_t errlen) {
    return parse_list(list, "operator", op_bit, ops, err, errlen);
}

int syn_parse_types(const char *list, uint32_t *types, char *err, size_t errlen) {
    uint64_t bits;
    int rc = parse_list(list, "pool type", type_bit, &bits, err, errlen);
    *types = (uint32_t)bits; /* pool.h: at most POOL_MAX_TYPES */
    return rc;
}

static syn_status check_options(run *r) {
    const syn_options *o = r->o;
    if (o->max_ops < 0 || o->max_ops > SYN_MAX_OPS)
        return fail(r, SYN_EINVAL, "max-ops %d out of range 0..%d", o->max_ops, SYN_MAX_OPS);
    if (!o->ops || (o->ops & ~OPS_SET_ALL))
        return fail(r, SYN_EINVAL, "no operators (or unknown operator bits) selected");
    if (!o->types || o->types >> pool_n_types)
        return fail(r, SYN_EINVAL, "no pool types (or unknown type bits) selected");
    if (o->shard_n < 1 || o->shard_n > RDB_MAX_SHARDS || o->shard_k >= o->shard_n)
        return fail(r, SYN_EINVAL, "shard %u/%u: need 0 <= K < N <= %d", o->shard_k, o->shard_n,
                    RDB_MAX_SHARDS);
    if (o->threads < 0 || o->threads > 1024)
        return fail(r, SYN_EINVAL, "threads %d out of range", o->threads);
    if (o->backend == SYN_CUDA) {
        int n;
        char why[GPU_ERRLEN];
        if (gpu_device_count(&n, why) != GPU_OK || n < 1)
            return fail(r, SYN_EDEV, "backend cuda: %s", why);
    }
    return SYN_OK;
}

static int n_threads(const syn_options *o) {
    if (o->threads > 0) return o->threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ---- level 0: one variable, or two ---- */

static syn_status add_slot_graph(run *r, int n_out, const uint8_t *types) {
    sg_graph g;
    key_result kr;
    memset(&g, 0, sizeof g);
    g.n_out = (uint8_t)n_out, g.out[0] = 0, g.out[1] = (uint8_t)(n_out - 1);
    key_status ks = key_graph(r->kc, &g, n_out, types, &kr);
    if (ks == KEY_SKIP) return SYN_OK;
    if (ks != KEY_OK) return fail(r, SYN_ENOMEM, "out of memory at level 0");
    r->st->graphs++, r->st->level_graphs[0]++;
    uint64_t h = fpt_hash(r->table, kr.key, kr.len);
    if (fpt_add(r->table, r->cache, r->kc, kr.key, kr.len, h, kr.aligned, kr.n_aligned))
        return fail(r, SYN_ENOMEM, "out of memory at level 0");
    return SYN_OK;
}

static syn_status level0(run *r) {
    syn_status rc = SYN_OK;
    for (int t = 0; t < r->pool.n_types && !rc; t++) {
        uint8_t one[1] = {(uint8_t)t};
        if (!r->pool.count_of[t]) continue;
        rc = add_slot_graph(r, 1, one);
        for (int u = t; u < r->pool.n_types && !rc; u++) {
            uint8_t two[2] = {(uint8_t)t, (uint8_t)u};
            if (r->pool.count_of[u] && (u != t || r->pool.count_of[t] >= 2)) rc = add_slot_graph(r, 2, two);
        }
    }
    return rc;
}

/* ---- representatives of a finished level ---- */

static int cmp_sg(const void *a, const void *b) { return sg_compare(a, b); }

static syn_status collect_reps(run *r, int level) {
    size_t n = 0, ns = 0, k;
    for (int s = 0; s < fpt_n_stripes(r->table); s++) {
        const fpt_class *c = fpt_classes(r->table, s, &k);
        for (size_t i = 0; i < k; i++) n += c[i].rep.n_nodes == level;
    }
    r->reps[level] = malloc((n ? n : 1) * sizeof *r->reps[level]);
    r->single[level] = malloc((n ? n : 1) * sizeof *r->single[level]);
    if (!r->reps[level] || !r->single[level]) return fail(r, SYN_ENOMEM, "out of memory");
    n = 0;
    for (int s = 0; s < fpt_n_stripes(r->table); s++) {
        const fpt_class *c = fpt_classes(r->table, s, &k);
        for (size_t i = 0; i < k; i++)
            if (c[i].rep.n_nodes == level) r->reps[level][n++] = c[i].rep;
    }
    qsort(r->reps[level], n, sizeof *r->reps[level], cmp_sg); /* a fixed work order */
    for (size_t i = 0; i < n; i++)
        if (r->reps[level][i].n_out == 1) r->single[level][ns++] = r->reps[level][i];
    r->n_reps[level] = n, r->n_single[level] = ns;
    r->st->level_classes[level] = n;
    return SYN_OK;
}

/* ---- partitions: the last level's passes ---- */

typedef struct {
    uint32_t pass, passes;
} partition;

static int in_partition(void *arg, uint64_t h) {
    const partition *p = arg;
    return ((h >> 40) & (p->passes - 1)) == p->pass;
}

/* ---- a shard's classes ---- */

/* A class of the table by its place, with the keys that order a part. */
typedef struct {
    uint64_t hash;
    uint32_t check;
    int stripe;
    size_t idx;
    const sg_graph *rep;
} class_ref;

/* By hash, then the representative (distinct classes have distinct
 * representatives): an order that does not depend on which thread added
 * what first, so a shard file's bytes do not either. */
static int cmp_ref(const void *a, const void *b) {
    const class_ref *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    if (x->check != y->check) return x->check < y->check ? -1 : 1;
    return sg_compare(x->rep, y->rep);
}

/* The classes of pass partition p in part q, sorted. @return their count,
 * or SIZE_MAX when out of memory. */
static size_t part_refs(run *r, const partition *p, uint32_t q, uint32_t parts, class_ref **refs, size_t *cap) {
    size_t n = 0, k;
    for (int s = 0; s < fpt_n_stripes(r->table); s++) {
        const fpt_class *c = fpt_classes(r->table, s, &k);
        for (size_t i = 0; i < k; i++) {
            if (!in_partition((void *)p, c[i].hash) || c[i].hash % parts != q) continue;
            if (n == *cap) {
                size_t nc = *cap ? 2 * *cap : 4096;
                class_ref *g = realloc(*refs, nc * sizeof *g);
                if (!g) return SIZE_MAX;
                *refs = g, *cap = nc;
            }
            (*refs)[n++] = (class_ref){c[i].hash, c[i].check, s, i, &c[i].rep};
        }
    }
    if (n > 1) qsort(*refs, n, sizeof **refs, cmp_ref); /* *refs may be NULL when n is 0 */
    return n;
}

/* Write one class: members in sg order, counts split at the mark m (NULL:
 * there is none, all counts are of levels every shard runs). */
static syn_status dump_class(run *r, const class_ref *ref, const fpt_mark *m, sg_graph **mem, size_t *cap) {
    size_t k;
    const fpt_class *c = &fpt_classes(r->table, ref->stripe, &k)[ref->idx];
    if (c->n_members > *cap) {
        free(*mem);
        *cap = 2 * c->n_members;
        if (!(*mem = malloc(*cap * sizeof **mem))) return fail(r, SYN_ENOMEM, "out of memory");
    }
    size_t n = fpt_members(r->table, ref->stripe, c, *mem, c->n_members);
    if (n > 1) qsort(*mem, n, sizeof **mem, cmp_sg); /* *mem may be NULL when n is 0 */
    uint32_t below = m ? fpt_mark_count(m, ref->stripe, ref->idx) : c->count;
    r->st->classes++, r->st->class_graphs += c->count - below, r->st->members += n;
    if (r->o->max_ops > 0 && c->rep.n_nodes == r->o->max_ops) r->st->level_classes[r->o->max_ops]++;
    if (sf_put(r->sw, c->hash, c->check, below, c->count - below, &c->rep, *mem, (uint32_t)n))
        return fail(r, SYN_EIO, "write error");
    return SYN_OK;
}

/* Write the classes of pass partition p to the shard file, part by part. */
static syn_status dump_partition(run *r, const partition *p, const fpt_mark *m) {
    uint32_t parts = r->o->parts ? r->o->parts : r->o->shard_n;
    size_t cap = 0, rcap = 0;
    sg_graph *mem = NULL;
    class_ref *refs = NULL;
    syn_status rc = SYN_OK;
    for (uint32_t q = 0; q < parts && !rc; q++) {
        size_t n = part_refs(r, p, q, parts, &refs, &rcap);
        if (n == SIZE_MAX) rc = fail(r, SYN_ENOMEM, "out of memory");
        else if (sf_begin_part(r->sw, q)) rc = fail(r, SYN_EIO, "write error");
        for (size_t i = 0; i < n && !rc; i++) rc = dump_class(r, &refs[i], m, &mem, &cap);
    }
    free(mem), free(refs);
    return rc;
}

/* ---- output classes ---- */

/* One thread of the output phase: classes of the stripes it takes, with
 * its own writer (evaluation scratch, file and counts, merged afterwards). */
typedef struct {
    run *r;
    const partition *p;
    atomic_int *next_stripe;
    co_writer w;
    syn_status rc;
} emitter;

/* The classes of stripe s in the emitter's partition. */
static syn_status emit_stripe(emitter *e, int s, sg_graph **mem, size_t *cap) {
    size_t k;
    const fpt_class *c = fpt_classes(e->r->table, s, &k);
    for (size_t i = 0; i < k; i++) {
        if (!in_partition((void *)e->p, c[i].hash)) continue;
        if (c[i].n_members > *cap) {
            free(*mem);
            *cap = 2 * c[i].n_members;
            if (!(*mem = malloc(*cap * sizeof **mem))) {
                snprintf(e->w.err, sizeof e->w.err, "out of memory");
                return SYN_ENOMEM;
            }
        }
        size_t n = fpt_members(e->r->table, s, &c[i], *mem, c[i].n_members);
        syn_status rc = co_class(&e->w, &c[i].rep, *mem, n, c[i].count);
        if (rc) return rc;
    }
    return SYN_OK;
}

static void *emit_work(void *arg) {
    emitter *e = arg;
    size_t cap = 0;
    sg_graph *mem = NULL;
    for (int s; !e->rc && (s = atomic_fetch_add(e->next_stripe, 1)) < fpt_n_stripes(e->r->table);)
        e->rc = emit_stripe(e, s, &mem, &cap);
    free(mem);
    return NULL;
}

/* Move e's classes into the run's file. */
static syn_status take_classes(run *r, emitter *e) {
    rdb_file *o = r->out, *from = e->w.out;
    size_t n = o->n_classes + from->n_classes;
    if (!from->n_classes) return SYN_OK;
    if (n > o->cap_classes) {
        rdb_class *c = realloc(o->classes, n * sizeof *c);
        if (!c) return fail(r, SYN_ENOMEM, "out of memory");
        o->classes = c, o->cap_classes = n;
    }
    memcpy(o->classes + o->n_classes, from->classes, from->n_classes * sizeof *o->classes);
    o->n_classes = n, from->n_classes = 0; /* the members now belong to r->out */
    return SYN_OK;
}

/* Emit the classes of this shard in partition p, on every thread. */
static syn_status emit_partition(run *r, const partition *p) {
    int n = n_threads(r->o), started = 0;
    atomic_int next = 0;
    emitter *e = calloc((size_t)n, sizeof *e);
    pthread_t *tid = calloc((size_t)n, sizeof *tid);
    syn_status rc = e && tid ? SYN_OK : fail(r, SYN_ENOMEM, "out of memory");
    for (int i = 0; i < n && !rc; i++) {
        e[i] = (emitter){.r = r, .p = p, .next_stripe = &next};
        if (co_init(&e[i].w, &r->pool, &r->dom, r->o->max_ops, r->o->no_prune,
                    r->o->backend == SYN_CUDA) ||
            pthread_create(&tid[i], NULL, emit_work, &e[i]) != 0) {
            co_free(&e[i].w);
            rc = fail(r, SYN_ENOMEM, "cannot start the output threads");
        } else {
            started++;
        }
    }
    for (int i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        if (!rc && e[i].rc) rc = fail(r, e[i].rc, "%s", e[i].w.err);
        if (!rc) rc = take_classes(r, &e[i]);
        co_add_counts(r->st, &e[i].w.st, r->o->max_ops);
        co_free(&e[i].w);
    }
    free(e), free(tid);
    return rc;
}

/* ---- levels ---- */

static void level_setup(run *r, en_level *L, int level) {
    memset(L, 0, sizeof *L);
    if (level == r->o->max_ops && r->sw) /* a shard: its share of the last level */
        L->item_k = r->o->shard_k, L->item_n = r->o->shard_n;
    L->pool = &r->pool, L->dom = &r->dom, L->table = r->table, L->level = level;
    L->prev = r->reps[level - 1], L->n_prev = r->n_reps[level - 1];
    L->threads = n_threads(r->o), L->cuda = r->o->backend == SYN_CUDA;
    L->progress = r->o->progress, L->t0 = r->t0;
}

static syn_status run_level(run *r, en_level *L) {
    en_result er;
    L->single = (const sg_graph *const *)r->single;
    L->n_single = r->n_single;
    int rc = en_run(L, &er);
    r->st->graphs += er.graphs, r->st->skipped += er.skipped, r->st->evals += er.evals;
    r->st->level_graphs[L->level] += er.graphs;
    if (rc == -2) return fail(r, SYN_EDEV, "the CUDA backend failed at level %d", L->level);
    if (rc) return fail(r, SYN_ENOMEM, "out of memory at level %d", L->level);
    if (er.over_budget) return SYN_ELIMIT;
    return SYN_OK;
}

/* Table bytes a level may reach under the memory limit (0: unlimited). */
static uint64_t table_budget(run *r) {
    if (!r->o->memory_limit) return 0;
    uint64_t rss = en_rss(), tb = fpt_bytes(r->table);
    uint64_t margin = THREAD_MARGIN * (uint64_t)(n_threads(r->o) + 1);
    uint64_t other = rss > tb ? rss - tb : 0;
    if (other + margin >= r->o->memory_limit) return 1; /* no room at all */
    return r->o->memory_limit - other - margin;
}

static syn_status middle_level(run *r, int level) {
    en_level L;
    level_setup(r, &L, level);
    L.mem_budget = table_budget(r);
    if (L.mem_budget == 1) /* the fixed part alone fills the limit */
        return fail(r, SYN_ELIMIT, "memory limit %.0f MB too small: %d threads need about %.0f MB "
                    "of scratch before any table; raise it or use fewer --threads",
                    (double)r->o->memory_limit / 1e6, n_threads(r->o),
                    (double)(THREAD_MARGIN * (uint64_t)(n_threads(r->o) + 1) + en_rss()) / 1e6);
    syn_status rc = run_level(r, &L);
    if (rc == SYN_ELIMIT)
        return fail(r, SYN_ELIMIT, "memory limit %.2f GB too small for level %d (the table "
                    "passed %.2f GB; only the last level is split into passes)",
                    (double)r->o->memory_limit / 1e9, level, (double)fpt_bytes(r->table) / 1e9);
    return rc ? rc : collect_reps(r, level);
}

/* 1 when a finished pass (P, q) covers pass q2 of P2 >= P. */
static int covered(const uint32_t (*done)[2], int n_done, uint32_t q2, uint32_t P2) {
    for (int i = 0; i < n_done; i++)
        if ((q2 & (done[i][0] - 1)) == done[i][1] && done[i][0] <= P2) return 1;
    return 0;
}

/* One pass of the last level over partition part: enumerate, emit its
 * classes, roll the table back to the levels below. *outgrew: the pass
 * passed the budget and was undone, nothing emitted.
 * @return SYN_OK, or an error with a message. */
static syn_status run_pass(run *r, int level, const fpt_mark *m, const partition *part,
                           uint64_t budget, int *outgrew) {
    en_level L;
    level_setup(r, &L, level);
    L.keep = in_partition, L.keep_arg = (void *)part, L.mem_budget = budget;
    if (L.mem_budget && L.mem_budget <= fpt_bytes(r->table))
        return fail(r, SYN_ELIMIT, "memory limit %.2f GB too small: the levels below the last "
                    "already take it", (double)r->o->memory_limit / 1e9);
    uint64_t graphs0 = r->st->level_graphs[level];
    syn_status rc = run_level(r, &L);
    *outgrew = rc == SYN_ELIMIT;
    if (*outgrew) rc = SYN_OK;
    /* one pass's count: every pass makes them all */
    r->st->level_graphs[level] = *outgrew ? graphs0 : r->st->level_graphs[level] - graphs0;
    if (!rc && !*outgrew) {
        r->st->passes++;
        if (fpt_bytes(r->table) > r->st->table_peak) r->st->table_peak = fpt_bytes(r->table);
        rc = r->sw ? dump_partition(r, part, m) : emit_partition(r, part);
    }
    fpt_rollback(r->table, m);
    return rc;
}

/* The last level in passes over 2^k parts of the hash space: a part that
 * outgrows the limit is split in two (the parts already done stay done,
 * part q of 2P lying inside part q mod P). The budget is fixed before the
 * first pass: afterwards the heap keeps what a rolled-back pass freed, and
 * RSS would count it against every later pass. */
static syn_status last_level(run *r, int level) {
    uint32_t (*done)[2] = malloc(MAX_PASSES * sizeof *done);
    int n_done = 0;
    uint32_t P = 1;
    syn_status rc = SYN_OK;
    fpt_mark *m = fpt_mark_new(r->table);
    uint64_t budget = r->o->test_table_budget ? r->o->test_table_budget : table_budget(r);
    r->st->table_below = fpt_bytes(r->table);
    if (!m || !done) rc = fail(r, SYN_ENOMEM, "out of memory");
    for (uint32_t q = 0; q < P && !rc; q++) {
        int outgrew = 0;
        if (covered((const uint32_t(*)[2])done, n_done, q, P)) continue;
        partition part = {q, P};
        rc = run_pass(r, level, m, &part, budget, &outgrew);
        if (!rc && !outgrew) done[n_done][0] = P, done[n_done++][1] = q;
        else if (!rc && P >= MAX_PASSES) rc = fail(r, SYN_ELIMIT, "memory limit too small even for %u passes", P);
        else if (!rc) P *= 2, q = UINT32_MAX; /* start over, q++ makes it 0 */
    }
    fpt_mark_free(m);
    free(done);
    return rc;
}

/* ---- the file ---- */

/* Notes in sorted order: `ruledb merge` sorts the notes it unites, so a
 * merge of the parts of a divided run has the unsharded file's bytes. */
void syn_fill_generator(rdb_generator *g, const syn_options *o, const syn_stats *st) {
    char pool_text[RDB_NOTE_LEN - 8];
    snprintf(g->tool, sizeof g->tool, "synth");
    snprintf(g->version, sizeof g->version, "%s", SYN_VERSION);
    g->max_ops = (uint32_t)o->max_ops, g->seed = o->seed, g->ops = o->ops;
    g->shard_count = 1, g->shard_have = 1;
    g->counts.graphs = st->class_graphs, g->counts.classes = st->classes;
    uint64_t found = st->pruning.graphs[PR_FOUND];
    g->counts.pruned = found > st->members ? found - st->members : 0;
    if (!o->no_timings) {
        g->timings.wall_ms = (uint64_t)(st->wall_s * 1000);
        g->timings.cpu_ms = (uint64_t)(st->cpu_s * 1000);
    }
    snprintf(g->notes[g->n_notes++], RDB_NOTE_LEN, "conv_groups=%s", o->groups2 ? "1,2" : "1");
    if (o->kernels1x1) snprintf(g->notes[g->n_notes++], RDB_NOTE_LEN, "constant_kernels=3x3,1x1");
    snprintf(g->notes[g->n_notes++], RDB_NOTE_LEN, "pool=%s", pool_describe(pool_text, sizeof pool_text, o->types));
    if (o->types != pool_default_types()) {
        char t[RDB_NOTE_LEN - 8];
        size_t n = 0;
        t[0] = 0;
        for (int k = 0; k < pool_n_types; k++)
            if (o->types >> k & 1) n += (size_t)snprintf(t + n, sizeof t - n, "%s%s", n ? "," : "", pool_types[k].name);
        snprintf(g->notes[g->n_notes++], RDB_NOTE_LEN, "types=%s", t);
    }
}

static void finish_stats(run *r) {
    struct rusage ru;
    r->st->wall_s = en_now() - r->t0;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        r->st->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
        r->st->peak_rss = (uint64_t)ru.ru_maxrss * 1024;
    }
}

/* Drop the combos the test hook rejects (the shape memo is keyed by
 * params, not by combo index, so renumbering is safe). */
static void keep_combos(dom *d, int (*keep)(int op, const int32_t *p)) {
    for (int op = 0; op < OP_COUNT; op++) {
        int k = 0;
        for (int i = 0; i < d->n_combo[op]; i++)
            if (keep(op, d->combo[op][i])) memmove(d->combo[op][k++], d->combo[op][i], sizeof d->combo[op][i]);
        d->n_combo[op] = k;
    }
}

int syn_inputs(const syn_options *o, pool *p, dom *d) {
    if (pool_init(p, o->seed)) return -1;
    for (int t = 0; t < p->n_types; t++) /* a type left out: no variable of it */
        if (!(o->types >> t & 1)) p->count_of[t] = 0;
    dom_init(d, o->ops, o->groups2, o->kernels1x1);
    if (o->test_combo) keep_combos(d, o->test_combo);
    return 0;
}

static syn_status setup(run *r) {
    syn_status rc = check_options(r);
    if (rc) return rc;
    if (syn_inputs(r->o, &r->pool, &r->dom)) return fail(r, SYN_ENOMEM, "out of memory");
    r->table = fpt_new(STRIPE_BITS, r->o->hash);
    r->kc = key_ctx_new(&r->pool, &r->dom, r->o->backend == SYN_CUDA);
    r->cache = fpt_cache_new();
    r->out = rdb_new(RDB_CANDIDATES);
    if (!r->table || !r->kc || !r->cache || !r->out) return fail(r, SYN_ENOMEM, "out of memory");
    return SYN_OK;
}

static syn_status generate(run *r) {
    syn_status rc = level0(r);
    if (!rc) rc = collect_reps(r, 0);
    if (!rc && r->n_reps[0]) { /* level 0 extends only its one-variable graphs */
        size_t k = 0;
        for (size_t i = 0; i < r->n_reps[0]; i++)
            if (r->reps[0][i].n_out == 1) r->reps[0][k++] = r->reps[0][i];
        r->n_reps[0] = k;
    }
    for (int level = 1; level < r->o->max_ops && !rc; level++) rc = middle_level(r, level);
    if (!rc && r->o->max_ops > 0) rc = last_level(r, r->o->max_ops);
    if (!rc && r->o->max_ops == 0) {
        partition all = {0, 1};
        r->st->passes = 1;
        rc = r->sw ? dump_partition(r, &all, NULL) : emit_partition(r, &all);
    }
    return rc;
}

static void run_free(run *r) {
    rdb_free(r->out);
    sf_abort(r->sw);
    for (int i = 0; i <= SYN_MAX_OPS; i++) free(r->reps[i]), free(r->single[i]);
    key_ctx_free(r->kc);
    fpt_cache_free(r->cache);
    fpt_free(r->table);
    pool_free(&r->pool);
}

syn_status syn_run(const syn_options *o, rdb_file **out, syn_stats *st, char *err, size_t errlen) {
    run r;
    memset(&r, 0, sizeof r);
    memset(st, 0, sizeof *st);
    r.o = o, r.st = st, r.err = err, r.errlen = errlen, r.t0 = en_now();
    *out = NULL;
    syn_status rc = o->shard_n > 1 ? fail(&r, SYN_EINVAL, "a shard of a divided run writes a "
                                          "shard file (syn_run_shard)") : setup(&r);
    if (!rc) rc = generate(&r);
    if (!rc) {
        co_sort(r.out);
        finish_stats(&r);
        syn_fill_generator(&r.out->gen, o, st);
        *out = r.out, r.out = NULL;
    }
    run_free(&r);
    return rc;
}

static void shard_header(const syn_options *o, const syn_stats *st, sf_header *h) {
    memset(h, 0, sizeof *h);
    h->shard_k = o->shard_k, h->shard_n = o->shard_n, h->parts = o->parts ? o->parts : o->shard_n;
    h->max_ops = (uint32_t)o->max_ops, h->types = o->types, h->groups2 = (uint32_t)o->groups2;
    h->kernels1x1 = (uint32_t)o->kernels1x1;
    h->no_prune = (uint32_t)o->no_prune, h->seed = o->seed, h->ops = o->ops;
    ops_digest(h->digest);
    if (!o->no_timings) h->wall_ms = (uint64_t)(st->wall_s * 1000), h->cpu_ms = (uint64_t)(st->cpu_s * 1000);
    h->graphs = st->graphs;
}

syn_status syn_run_shard(const syn_options *o, const char *path, syn_stats *st, char *err,
                         size_t errlen) {
    run r;
    sf_header h;
    char werr[SF_ERRLEN];
    memset(&r, 0, sizeof r);
    memset(st, 0, sizeof *st);
    r.o = o, r.st = st, r.err = err, r.errlen = errlen, r.t0 = en_now();
    syn_status rc = setup(&r);
    if (!rc && o->shard_n < 2) rc = fail(&r, SYN_EINVAL, "a shard file needs N >= 2 shards");
    if (!rc && o->memory_limit)
        rc = fail(&r, SYN_EINVAL, "--memory-limit and --shard: a shard holds 1/N of the last "
                  "level; divide the run into more shards instead");
    if (!rc && (o->parts > SF_MAX_PARTS))
        rc = fail(&r, SYN_EINVAL, "parts %u out of range 1..%d", o->parts, SF_MAX_PARTS);
    shard_header(o, st, &h);
    if (!rc && !(r.sw = sf_create(path, &h, werr, sizeof werr))) rc = fail(&r, SYN_EIO, "%s", werr);
    if (!rc) rc = generate(&r);
    if (!rc) {
        finish_stats(&r);
        shard_header(o, st, &h);
        sf_writer *w = r.sw;
        r.sw = NULL;
        if (sf_commit(w, &h, werr, sizeof werr)) rc = fail(&r, SYN_EIO, "%s", werr);
    }
    run_free(&r);
    return rc;
}

void syn_print_summary(FILE *f, const syn_options *o, const syn_stats *st) {
    fprintf(f, "synth: max-ops %d, seed %llu, shard %u/%u, %d pass%s\n", o->max_ops,
            (unsigned long long)o->seed, o->shard_k, o->shard_n, st->passes,
            st->passes == 1 ? "" : "es");
    for (int l = 0; l <= o->max_ops; l++)
        fprintf(f, "synth:   level %d: %llu graphs, %llu new classes\n", l,
                (unsigned long long)st->level_graphs[l], (unsigned long long)st->level_classes[l]);
    fprintf(f, "synth: %llu graphs enumerated (%llu skipped), %llu classes in this shard\n",
            (unsigned long long)st->graphs, (unsigned long long)st->skipped,
            (unsigned long long)st->classes);
    if (o->shard_n > 1) { /* a shard prunes nothing: the merge does */
        fprintf(f, "synth: shard file: %llu classes, %llu more members, in %u parts; wall %.2f s, "
                   "cpu %.2f s, peak RSS %.1f MB\n", (unsigned long long)st->classes,
                (unsigned long long)st->members, o->parts ? o->parts : o->shard_n, st->wall_s,
                st->cpu_s, (double)st->peak_rss / 1e6);
        return;
    }
    for (int k = 0; k < PR_N; k++)
        fprintf(f, "synth: candidates after %-11s %llu classes, %llu graphs\n", pr_step_name[k],
                (unsigned long long)st->pruning.classes[k], (unsigned long long)st->pruning.graphs[k]);
    fprintf(f, "synth: table %.1f MB below the last level, %.1f MB at most; %llu members left out "
               "(class over 8 inputs)\n", (double)st->table_below / 1e6, (double)st->table_peak / 1e6,
            (unsigned long long)st->over_inputs);
    fprintf(f, "synth: written %llu classes, %llu members; wall %.2f s, cpu %.2f s, peak RSS %.1f MB\n",
            (unsigned long long)st->candidates, (unsigned long long)st->members, st->wall_s,
            st->cpu_s, (double)st->peak_rss / 1e6);
}
