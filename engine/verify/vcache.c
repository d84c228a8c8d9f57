/* vcache.c - verify's choices remembered (see verify.h, eg_vcache_*).
 *
 * Timing a big model in onnxruntime takes most of a warm run (BERT-base:
 * 16 s of 33). Once the same candidates were timed against the same input
 * on the same machine, timing them again only re-rolls the noise, so the
 * choice is kept in a text file beside the cost cache, keyed by content:
 *
 *     eg-verify-cache 1
 *     HEXKEY PICK N SECONDS  ROW x N  AA
 *
 * ROW and AA are seven numbers each: median_ms min_ms max_rel_err ratio
 * ratio_lo ratio_hi rounds. A line that does not parse is skipped (the
 * file is a cache: at worst the models are timed again) and dropped at the
 * next write. */
#include "verify/verify.h"

#include "afile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define VCACHE_MAGIC "eg-verify-cache 1"
#define VCACHE_MAX_LINES 4096 /* records kept, the newest */
#define VCACHE_LINE 8192

/* A graph's content: its structure (eg_graph_hash) and every payload it
 * would write (weights, other initializers, opaque nodes' protos). */
static void hash_graph(XXH3_state_t *s, const eg_graph *g) {
    uint64_t h = eg_graph_hash(g);
    XXH3_64bits_update(s, &h, sizeof h);
    for (int i = 0; i < g->n_tensors; i++) {
        const eg_tensor *t = &g->tensor[i];
        int64_t numel = eg_shape_numel(&t->shape);
        if (t->data && numel > 0) XXH3_64bits_update(s, t->data, sizeof *t->data * (size_t)numel);
        if (t->raw) XXH3_64bits_update(s, t->raw, t->raw_len);
        if (t->proto) XXH3_64bits_update(s, t->proto, t->proto_len);
    }
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].proto) XXH3_64bits_update(s, g->node[j].proto, g->node[j].proto_len);
}

uint64_t eg_vcache_key(const eg_graph *input, const eg_graph *const *cand, int n_cand, const eg_verify_opts *o) {
    XXH3_state_t *s = XXH3_createState();
    if (!s) return 0;
    XXH3_64bits_reset(s);
    const char *m = o->machine ? o->machine : "";
    int32_t knobs[6] = {o->threads, o->runs, o->warmup, o->screen, o->min_runs, n_cand};
    double limits[2] = {EG_VERIFY_MAX_REL_ERR, EG_VERIFY_MIN_GAIN};
    XXH3_64bits_update(s, m, strlen(m) + 1);
    XXH3_64bits_update(s, knobs, sizeof knobs);
    XXH3_64bits_update(s, limits, sizeof limits);
    hash_graph(s, input);
    for (int k = 0; k < n_cand; k++) hash_graph(s, cand[k]);
    uint64_t h = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    return h ? h : 1;
}

/* Read a row's seven numbers from *p. @return 1, or 0 when they do not parse. */
static int read_row(char **p, eg_verify_row *r) {
    double v[6];
    for (int i = 0; i < 6; i++) {
        char *e;
        v[i] = strtod(*p, &e);
        if (e == *p || !isfinite(v[i])) return 0;
        *p = e;
    }
    char *e;
    long rounds = strtol(*p, &e, 10);
    if (e == *p || rounds < 0 || rounds > 1000000) return 0;
    *p = e;
    r->median_ms = v[0], r->min_ms = v[1], r->max_rel_err = v[2];
    r->ratio = v[3], r->ratio_lo = v[4], r->ratio_hi = v[5], r->rounds = (int)rounds;
    return 1;
}

/* Parse a record line. @return 1 with *key and (rep non-NULL) the rows, or 0. */
static int parse_line(char *line, uint64_t *key, int n_want, eg_verify_report *rep) {
    char *p = line, *e;
    unsigned long long k = strtoull(p, &e, 16);
    if (e == p || e - p != 16) return 0;
    p = e;
    long pick = strtol(p, &e, 10);
    if (e == p) return 0;
    p = e;
    long n = strtol(p, &e, 10);
    if (e == p || n < 2 || n > EG_VERIFY_MAX_MODELS || pick < 0 || pick >= n) return 0;
    p = e;
    double seconds = strtod(p, &e);
    if (e == p || !isfinite(seconds)) return 0;
    p = e;
    eg_verify_row rows[EG_VERIFY_MAX_MODELS], aa;
    for (long i = 0; i < n; i++)
        if (!read_row(&p, &rows[i])) return 0;
    if (!read_row(&p, &aa)) return 0;
    while (*p == ' ' || *p == '\n') p++;
    if (*p) return 0;
    *key = (uint64_t)k;
    if (!rep) return 1;
    if (n != n_want) return 0;
    memcpy(rep->row, rows, sizeof *rows * (size_t)n);
    rep->aa = aa, rep->pick = (int)pick, rep->seconds = seconds;
    return 1;
}

int eg_vcache_find(const char *path, uint64_t key, eg_verify_report *rep) {
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) return 0;
    char *line = malloc(VCACHE_LINE);
    int found = 0, first = 1;
    while (line && !found && fgets(line, VCACHE_LINE, f)) {
        uint64_t k;
        if (first) {
            first = 0;
            if (strncmp(line, VCACHE_MAGIC "\n", sizeof VCACHE_MAGIC)) break; /* another format */
            continue;
        }
        eg_verify_report r = *rep;
        if (parse_line(line, &k, rep->n, NULL) && k == key && parse_line(line, &k, rep->n, &r)) {
            *rep = r;
            found = 1;
        }
    }
    free(line);
    fclose(f);
    return found;
}

/* One record as a line (no newline) into buf. @return its length, or -1. */
static int format_line(char *buf, size_t len, uint64_t key, const eg_verify_report *rep) {
    size_t n = 0;
    int w = snprintf(buf, len, "%016llx %d %d %.17g", (unsigned long long)key, rep->pick, rep->n, rep->seconds);
    for (int i = 0; i <= rep->n && w >= 0 && (size_t)w < len - n; i++) {
        n += (size_t)w;
        const eg_verify_row *r = i < rep->n ? &rep->row[i] : &rep->aa;
        w = snprintf(buf + n, len - n, " %.17g %.17g %.17g %.17g %.17g %.17g %d", r->median_ms, r->min_ms,
                     r->max_rel_err, r->ratio, r->ratio_lo, r->ratio_hi, r->rounds);
    }
    if (w < 0 || (size_t)w >= len - n) return -1;
    return (int)(n + (size_t)w);
}

eg_status eg_vcache_put(const char *path, uint64_t key, const eg_verify_report *rep, char *err, size_t errlen) {
    char *mine = malloc(VCACHE_LINE), *line = malloc(VCACHE_LINE);
    char **keep = calloc(VCACHE_MAX_LINES, sizeof *keep);
    int n_keep = 0;
    eg_status rc = mine && line && keep ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK && format_line(mine, VCACHE_LINE, key, rep) < 0) rc = EG_ELIMIT;
    FILE *f = rc == EG_OK ? fopen(path, "r") : NULL;
    /* the other records that parse, oldest first, the newest VCACHE_MAX_LINES - 1 */
    for (int first = 1; f && rc == EG_OK && fgets(line, VCACHE_LINE, f); first = 0) {
        uint64_t k;
        if (first && strncmp(line, VCACHE_MAGIC "\n", sizeof VCACHE_MAGIC)) break;
        if (first || !parse_line(line, &k, 0, NULL) || k == key) continue;
        if (n_keep == VCACHE_MAX_LINES - 1) {
            free(keep[0]);
            memmove(keep, keep + 1, sizeof *keep * (size_t)--n_keep);
        }
        if (!(keep[n_keep++] = strdup(line))) rc = EG_ENOMEM;
    }
    if (f) fclose(f);
    af_file o;
    if (rc == EG_OK && af_open(&o, path) != 0) rc = EG_EIO;
    if (rc == EG_OK) {
        int bad = fprintf(o.f, "%s\n", VCACHE_MAGIC) < 0;
        for (int i = 0; i < n_keep && !bad; i++) bad = fputs(keep[i], o.f) < 0;
        bad |= fprintf(o.f, "%s\n", mine) < 0;
        if (bad) af_abort(&o);
        if (bad || af_commit(&o) != 0) rc = EG_EIO;
    }
    if (rc == EG_EIO) snprintf(err, errlen, "cannot write the verify cache %s", path);
    else if (rc != EG_OK) snprintf(err, errlen, "verify cache: out of memory or a record too long");
    for (int i = 0; i < n_keep; i++) free(keep[i]);
    free(keep), free(mine), free(line);
    return rc;
}
