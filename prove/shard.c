/* shard.c - the merge of the shards' rules files into the undivided
 * run's ruledb (see shard.h); the shard rule ids are in shard_id.c. */
#include "shard.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "reduce.h"
#include "runfile.h"
#include "z3enc.h"

/* ---- the merge ---- */

typedef struct {
    rdb_file *cands;
    rdb_file **part;
    int n;
    em_rule *rules;
    size_t n_rules;
    uint64_t cands_hash;
    char *err;
    size_t errlen;
} merge;

static int mfail(merge *m, int rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, m->errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* The note of g that begins with prefix, or NULL. */
static const char *find_note(const rdb_generator *g, const char *prefix) {
    for (int k = 0; k < g->n_notes; k++)
        if (strncmp(g->notes[k], prefix, strlen(prefix)) == 0) return g->notes[k];
    return NULL;
}

/* Add a shard's counts (its notes, as run.c writes them) to st. */
static int add_counts(const rdb_generator *g, pv_stats *st) {
    const char *c = find_note(g, "candidates="), *k = find_note(g, "kernel1 "), *gs = find_note(g, "groups ");
    size_t v[6], w[2], u[2];
    if (!c || !k || !gs ||
        sscanf(c, "candidates=%zu distinct=%zu proved=%zu refuted=%zu unknown=%zu timeout=%zu",
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6 ||
        sscanf(k, "kernel1 retried=%zu proved=%zu", &w[0], &w[1]) != 2 ||
        sscanf(gs, "groups tried=%zu any_count=%zu", &u[0], &u[1]) != 2)
        return -1;
    st->gsym.tried += u[0], st->gsym.generalized += u[1];
    st->candidates += v[0], st->distinct += v[1], st->proved += v[2];
    st->refuted += v[3], st->unknown += v[4], st->timeout += v[5];
    st->kernel1_retried += w[0], st->kernel1_proved += w[1];
    const char *d = find_note(g, "known derived=");
    size_t derived = 0;
    if (d && sscanf(d, PV_DERIVED_NOTE, &derived) != 1) return -1;
    st->derived += derived;
    st->wall_ms += g->timings.wall_ms, st->cpu_ms += g->timings.cpu_ms;
    return 0;
}

/* Every shard once, from this candidates file and these prover options
 * (with --known, the same file and bounds: known is that set opened, or
 * an unopened one). */
static int check_parts(merge *m, char *const *paths, const pv_options *o, const kn_set *known, pv_stats *st) {
    char want[RDB_NOTE_LEN], input[RDB_NOTE_LEN], known_want[RDB_NOTE_LEN] = "";
    if (known->rs) kn_note(known, known_want, sizeof known_want);
    uint32_t seen = 0, n_of = 0;
    snprintf(want, sizeof want, "z3=%s timeout_ms=%u max_instances=%u rlimit=%u general=%d",
             ze_version(), o->timeout_ms, o->max_instances, o->rlimit, o->general);
    snprintf(input, sizeof input, PS_INPUT_NOTE, (unsigned long long)m->cands_hash);
    for (int i = 0; i < m->n; i++) {
        const rdb_generator *g = &m->part[i]->gen;
        const char *sn = find_note(g, "shard="), *z = find_note(g, "z3=");
        unsigned k, n;
        if (!sn || sscanf(sn, PS_SHARD_NOTE, &k, &n) != 2 || n < 2 || n > BT_LANES || k >= n)
            return mfail(m, PV_EINPUT, "%s: not the rules of a prove shard (no shard note)", paths[i]);
        if (n_of && n != n_of)
            return mfail(m, PV_EINPUT, "%s: shard %u of %u, the others are of %u", paths[i], k, n, n_of);
        if (seen >> k & 1) return mfail(m, PV_EINPUT, "%s: shard %u given twice", paths[i], k);
        if (!find_note(g, input))
            return mfail(m, PV_EINPUT, "%s: proved from another candidates file", paths[i]);
        if (!z || strcmp(z, want) != 0)
            return mfail(m, PV_EINPUT, "%s: proved with other options (%s; this merge: %s)", paths[i],
                         z ? z : "none", want);
        const char *kn = find_note(g, "known xxh64=");
        if (strcmp(kn ? kn : "", known_want) != 0)
            return mfail(m, PV_EINPUT, "%s: proved with other --known rules (%s; this merge: %s)", paths[i],
                         kn ? kn : "none", known_want[0] ? known_want : "none");
        if (add_counts(g, st) != 0) return mfail(m, PV_EINPUT, "%s: counts missing from its notes", paths[i]);
        n_of = n, seen |= 1u << k;
    }
    for (unsigned k = 0; k < n_of; k++)
        if (!(seen >> k & 1)) return mfail(m, PV_EINPUT, "shard %u of %u missing", k, n_of);
    return PV_OK;
}

static int cmp_id(const void *a, const void *b) {
    const rdb_rule *x = *(const rdb_rule *const *)a, *y = *(const rdb_rule *const *)b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* All shards' rules in the undivided run's emission order. */
static int gather(merge *m) {
    size_t n = 0, k = 0;
    for (int i = 0; i < m->n; i++) n += m->part[i]->n_rules;
    const rdb_rule **all = malloc((n + 1) * sizeof *all);
    m->rules = calloc(n + 1, sizeof *m->rules);
    if (!all || !m->rules) return free(all), mfail(m, PV_ENOMEM, "out of memory");
    for (int i = 0; i < m->n; i++)
        for (size_t j = 0; j < m->part[i]->n_rules; j++) all[k++] = &m->part[i]->rules[j];
    qsort(all, n, sizeof *all, cmp_id);
    int rc = PV_OK;
    for (size_t i = 0; i < n && rc == PV_OK; i++) {
        if (i && all[i]->id == all[i - 1]->id)
            rc = mfail(m, PV_EINPUT, "rule id %" PRIu64 " in two shards", all[i]->id);
        m->rules[i].src = all[i]->src, m->rules[i].dst = all[i]->dst;
        m->rules[i].prover = all[i]->prover;
    }
    m->n_rules = n;
    free(all);
    return rc;
}

static int load(merge *m, const char *cands_path, char *const *parts) {
    int rc = pv_read_kind(cands_path, RDB_CANDIDATES, &m->cands, m->err, m->errlen);
    if (rc == PV_OK && pv_file_digest(cands_path, &m->cands_hash) != 0)
        rc = mfail(m, PV_EINPUT, "%s: cannot read", cands_path);
    for (int i = 0; i < m->n && rc == PV_OK; i++)
        rc = pv_read_kind(parts[i], RDB_RULES, &m->part[i], m->err, m->errlen);
    return rc;
}

/* The merged file: the undivided run's generator and notes. */
static int write_merged(merge *m, const char *out_path, const pv_options *o, const kn_set *known, pv_stats *st) {
    rdb_file *out = NULL;
    char werr[RDB_ERRLEN];
    uint64_t h;
    pv_options whole = *o;
    whole.shard_k = 0, whole.shard_n = 1;
    int rc = pv_rules_file(m->cands, &whole, m->rules, m->n_rules, st, known, &out) ? PV_ENOMEM : PV_OK;
    if (rc == PV_OK && pv_file_digest(o->axioms_path, &h) == 0 && out->gen.n_notes < RDB_MAX_NOTES)
        snprintf(out->gen.notes[out->gen.n_notes++], RDB_NOTE_LEN, "axioms=%s xxh64=%016llx",
                 o->axioms_path, (unsigned long long)h);
    if (rc == PV_OK && rdb_write(out_path, out, werr, sizeof werr) != RDB_OK)
        rc = mfail(m, PV_EIO, "%s", werr);
    rdb_free(out);
    return rc;
}

int pv_merge_shards_file(const char *cands_path, char *const *parts, int n_parts,
                         const char *out_path, const pv_options *o, pv_stats *st, char *err,
                         size_t errlen) {
    merge m;
    kn_set known;
    rd_counts pc;
    uint64_t cpu0;
    long rss;
    memset(&m, 0, sizeof m);
    memset(&known, 0, sizeof known);
    memset(st, 0, sizeof *st);
    m.err = err, m.errlen = errlen, m.n = n_parts;
    pv_resources(&cpu0, &rss);
    int rc = n_parts < 2 || n_parts > BT_LANES ? mfail(&m, PV_EINPUT, "need 2..%d shard files", BT_LANES) : PV_OK;
    if (rc == PV_OK && !(m.part = calloc((size_t)n_parts, sizeof *m.part))) rc = mfail(&m, PV_ENOMEM, "out of memory");
    if (rc == PV_OK) rc = load(&m, cands_path, parts);
    if (rc == PV_OK && o->known) rc = kn_open(o->known, &o->known_bounds, &known, err, errlen);
    if (rc == PV_OK) rc = check_parts(&m, parts, o, &known, st);
    if (rc == PV_OK) rc = gather(&m);
    if (rc == PV_OK && rd_prune(m.rules, &m.n_rules, &pc) != 0) rc = mfail(&m, PV_ENOMEM, "out of memory");
    if (rc == PV_OK) {
        uint64_t cpu;
        pv_copy_counts(&pc, st);
        st->classes = m.cands->n_classes;
        pv_resources(&cpu, &st->peak_rss_kb);
        st->cpu_ms += cpu - cpu0;
        if (o->no_timings) st->wall_ms = st->cpu_ms = 0;
        rc = write_merged(&m, out_path, o, &known, st);
    }
    if (rc == PV_OK && !o->quiet) pv_summary(o, st);
    for (int i = 0; m.part && i < n_parts; i++) rdb_free(m.part[i]);
    free(m.part), free(m.rules);
    rdb_free(m.cands);
    kn_close(&known);
    return rc;
}
