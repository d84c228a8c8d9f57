/* shardfile.c - writing and reading a synth shard's file (see
 * shardfile.h for the format). */
#include "shardfile.h"

#include "afile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define MAGIC "tasoshd1"
#define VERSION 1
#define FIXED 96 /* header bytes before the part table */
#define REC 24   /* class record bytes before the graphs */

typedef struct {
    uint64_t offset, bytes, classes, hash;
} part_entry;

struct sf_writer {
    af_file af; /* af.f is written; committed whole or not at all */
    uint32_t parts, cur;
    uint64_t pos;
    part_entry *tab;
    XXH64_state_t *xs;
    int failed;
};

static int efail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i);
}

static uint32_t get32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << 8 * i;
    return v;
}

static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << 8 * i;
    return v;
}

static size_t header_bytes(uint32_t parts) { return FIXED + 32 * (size_t)parts + 8; }

/* Encode h and the part table into buf (header_bytes(h->parts)). */
static void encode_header(const sf_header *h, const part_entry *tab, uint8_t *buf) {
    memset(buf, 0, header_bytes(h->parts));
    memcpy(buf, MAGIC, 8);
    put32(buf + 8, VERSION), put32(buf + 12, h->shard_k), put32(buf + 16, h->shard_n);
    put32(buf + 20, h->parts), put32(buf + 24, h->max_ops), put32(buf + 28, h->types);
    put32(buf + 32, (h->groups2 ? 1u : 0u) | (h->no_prune ? 2u : 0u) | (h->kernels1x1 ? 4u : 0u));
    put64(buf + 40, h->seed), put64(buf + 48, h->ops);
    memcpy(buf + 56, h->digest, 16);
    put64(buf + 72, h->wall_ms), put64(buf + 80, h->cpu_ms), put64(buf + 88, h->graphs);
    for (uint32_t p = 0; p < h->parts; p++) {
        uint8_t *e = buf + FIXED + 32 * (size_t)p;
        put64(e, tab[p].offset), put64(e + 8, tab[p].bytes);
        put64(e + 16, tab[p].classes), put64(e + 24, tab[p].hash);
    }
    size_t n = FIXED + 32 * (size_t)h->parts;
    put64(buf + n, XXH64(buf, n, 0));
}

/* ---- writing ---- */

static void free_writer(sf_writer *w) {
    if (!w) return;
    if (w->af.f) af_abort(&w->af);
    if (w->xs) XXH64_freeState(w->xs);
    free(w->tab);
    free(w);
}

sf_writer *sf_create(const char *path, const sf_header *h, char *err, size_t errlen) {
    sf_writer *w = calloc(1, sizeof *w);
    if (w) {
        w->tab = calloc(h->parts ? h->parts : 1, sizeof *w->tab);
        w->xs = XXH64_createState();
    }
    if (!w || !w->tab || !w->xs) {
        free_writer(w);
        efail(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    w->parts = h->parts, w->cur = UINT32_MAX;
    int opened = af_open(&w->af, path) == 0;
    uint8_t *zero = calloc(1, header_bytes(h->parts));
    if (!opened || !zero || fwrite(zero, 1, header_bytes(h->parts), w->af.f) != header_bytes(h->parts)) {
        efail(err, errlen, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
        free(zero);
        sf_abort(w);
        return NULL;
    }
    free(zero);
    w->pos = header_bytes(h->parts);
    return w;
}

static void end_part(sf_writer *w) {
    if (w->cur == UINT32_MAX) return;
    w->tab[w->cur].bytes = w->pos - w->tab[w->cur].offset;
    w->tab[w->cur].hash = XXH64_digest(w->xs);
}

int sf_begin_part(sf_writer *w, uint32_t p) {
    if (p != (w->cur == UINT32_MAX ? 0 : w->cur + 1) || p >= w->parts) return w->failed = -1;
    end_part(w);
    w->cur = p;
    w->tab[p].offset = w->pos;
    XXH64_reset(w->xs, 0);
    return 0;
}

static void out_bytes(sf_writer *w, const void *b, size_t n) {
    if (fwrite(b, 1, n, w->af.f) != n) w->failed = -1;
    XXH64_update(w->xs, b, n);
    w->pos += n;
}

int sf_put(sf_writer *w, uint64_t hash, uint32_t check, uint32_t count_below,
           uint32_t count_last, const sg_graph *rep, const sg_graph *mem, uint32_t n) {
    uint8_t rec[REC];
    if (w->cur == UINT32_MAX) return w->failed = -1;
    put64(rec, hash), put32(rec + 8, check), put32(rec + 12, count_below);
    put32(rec + 16, count_last), put32(rec + 20, n);
    out_bytes(w, rec, REC);
    out_bytes(w, rep, sizeof *rep); /* only uint8_t fields: no padding, no byte order */
    if (n) out_bytes(w, mem, n * sizeof *mem);
    w->tab[w->cur].classes++;
    return w->failed;
}

int sf_commit(sf_writer *w, const sf_header *h, char *err, size_t errlen) {
    size_t hb = header_bytes(w->parts);
    uint8_t *buf = malloc(hb);
    int rc = w->failed || !buf || w->cur + 1 != w->parts ? -1 : 0;
    if (rc == 0) {
        end_part(w);
        encode_header(h, w->tab, buf);
        if (fseek(w->af.f, 0, SEEK_SET) != 0 || fwrite(buf, 1, hb, w->af.f) != hb) rc = -1;
    }
    free(buf);
    char *path = strdup(w->af.path ? w->af.path : "?");
    if (rc == 0) rc = af_commit(&w->af); /* the temporary goes on failure */
    if (rc) efail(err, errlen, "%s: cannot write: %s", path ? path : "shard file", strerror(errno ? errno : EIO));
    free(path);
    free_writer(w);
    return rc;
}

void sf_abort(sf_writer *w) {
    free_writer(w); /* it aborts the temporary file */
}

/* ---- reading ---- */

/* The fixed header fields, checked. name names the file in messages. */
static int decode_fixed(const uint8_t *fixed, const char *name, sf_header *h, char *err, size_t errlen) {
    if (memcmp(fixed, MAGIC, 8) != 0) return efail(err, errlen, "%s: not a synth shard file", name);
    if (get32(fixed + 8) != VERSION)
        return efail(err, errlen, "%s: shard file version %u (this synth reads %d)", name,
                     get32(fixed + 8), VERSION);
    memset(h, 0, sizeof *h);
    h->shard_k = get32(fixed + 12), h->shard_n = get32(fixed + 16), h->parts = get32(fixed + 20);
    h->max_ops = get32(fixed + 24), h->types = get32(fixed + 28), h->groups2 = get32(fixed + 32) & 1;
    h->no_prune = get32(fixed + 32) >> 1 & 1, h->kernels1x1 = get32(fixed + 32) >> 2 & 1;
    h->seed = get64(fixed + 40), h->ops = get64(fixed + 48);
    memcpy(h->digest, fixed + 56, 16);
    h->wall_ms = get64(fixed + 72), h->cpu_ms = get64(fixed + 80), h->graphs = get64(fixed + 88);
    if (h->parts < 1 || h->parts > SF_MAX_PARTS || h->shard_n < 2 || h->shard_n > 64 ||
        h->shard_k >= h->shard_n)
        return efail(err, errlen, "%s: bad header (shard %u/%u, %u parts)", name, h->shard_k,
                     h->shard_n, h->parts);
    uint8_t digest[16];
    ops_digest(digest);
    if (memcmp(digest, h->digest, 16) != 0) return efail(err, errlen, "%s: made from other opspecs", name);
    return 0;
}

/* The part table from the whole header buf (header_bytes(h->parts)) of a
 * file of size bytes: checksum, and parts back to back up to the end. */
static int decode_table(const uint8_t *buf, uint64_t size, const char *name, const sf_header *h,
                        part_entry *tab, char *err, size_t errlen) {
    size_t hb = header_bytes(h->parts);
    if (get64(buf + hb - 8) != XXH64(buf, hb - 8, 0))
        return efail(err, errlen, "%s: header checksum mismatch (a damaged file)", name);
    uint64_t at = hb;
    for (uint32_t p = 0; p < h->parts; p++) {
        const uint8_t *e = buf + FIXED + 32 * (size_t)p;
        part_entry *t = &tab[p];
        t->offset = get64(e), t->bytes = get64(e + 8), t->classes = get64(e + 16), t->hash = get64(e + 24);
        if (t->offset != at || at > size || t->bytes > size - at)
            return efail(err, errlen, "%s: part %u lies outside the file (truncated?)", name, p);
        at += t->bytes;
    }
    if (at != size)
        return efail(err, errlen, "%s: %llu bytes, the header says %llu", name,
                     (unsigned long long)size, (unsigned long long)at);
    return 0;
}

/* Read the header and part table of an open file; tab gets malloc'd. */
static int read_header(FILE *f, const char *path, sf_header *h, part_entry **tab, char *err,
                       size_t errlen) {
    uint8_t fixed[FIXED];
    struct stat sb;
    *tab = NULL;
    if (fstat(fileno(f), &sb) != 0) return efail(err, errlen, "%s: %s", path, strerror(errno));
    if (fread(fixed, 1, FIXED, f) != FIXED) return efail(err, errlen, "%s: truncated header", path);
    if (decode_fixed(fixed, path, h, err, errlen)) return -1;
    size_t hb = header_bytes(h->parts);
    uint8_t *buf = malloc(hb);
    *tab = malloc(h->parts * sizeof **tab);
    if (!buf || !*tab) return free(buf), efail(err, errlen, "%s: out of memory", path);
    memcpy(buf, fixed, FIXED);
    int rc = fread(buf + FIXED, 1, hb - FIXED, f) == hb - FIXED ? 0 : efail(err, errlen, "%s: truncated header", path);
    if (!rc) rc = decode_table(buf, (uint64_t)sb.st_size, path, h, *tab, err, errlen);
    free(buf);
    return rc;
}

/* Open path and read its header; *f and *tab stay for the caller to
 * close and free (also on failure: either may be NULL). */
static int open_shard(const char *path, sf_header *h, FILE **f, part_entry **tab, char *err,
                      size_t errlen) {
    *tab = NULL;
    *f = fopen(path, "rb");
    return *f ? read_header(*f, path, h, tab, err, errlen)
              : efail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
}

int sf_read_header(const char *path, sf_header *h, char *err, size_t errlen) {
    part_entry *tab;
    FILE *f;
    int rc = open_shard(path, h, &f, &tab, err, errlen);
    if (f) fclose(f);
    free(tab);
    return rc;
}

static int check_section(const uint8_t *b, const part_entry *t, const char *name, uint32_t p,
                         char *err, size_t errlen) {
    if (XXH64(b, t->bytes, 0) == t->hash) return 0;
    return efail(err, errlen, "%s: part %u: checksum mismatch (a damaged file)", name, p);
}

/* Read section p's bytes and check its hash. @return the bytes, or NULL. */
static uint8_t *read_section(FILE *f, const char *path, const part_entry *t, uint32_t p, char *err,
                             size_t errlen) {
    uint8_t *b = malloc(t->bytes ? t->bytes : 1);
    if (!b) return efail(err, errlen, "%s: part %u: out of memory", path, p), NULL;
    if (fseek(f, (long)t->offset, SEEK_SET) != 0 || fread(b, 1, t->bytes, f) != t->bytes) {
        efail(err, errlen, "%s: part %u: cannot read", path, p);
        return free(b), NULL;
    }
    if (check_section(b, t, path, p, err, errlen)) return free(b), NULL;
    return b;
}

int sf_verify(const char *path, sf_header *h, char *err, size_t errlen) {
    part_entry *tab;
    FILE *f;
    int rc = open_shard(path, h, &f, &tab, err, errlen);
    for (uint32_t p = 0; !rc && p < h->parts; p++) {
        uint8_t *b = read_section(f, path, &tab[p], p, err, errlen);
        rc = b ? 0 : -1;
        free(b);
    }
    if (f) fclose(f);
    free(tab);
    return rc;
}

/* 1 when ref r names a pool variable or a node before node j. */
static int ref_ok(uint8_t r, int j, const pool *pl) {
    return SG_IS_NODE(r) ? SG_NODE_IDX(r) < j : r < pl->n_vars;
}

/* 1 when g is a graph the merge may evaluate. */
static int graph_ok(const sg_graph *g, const dom *d, const pool *pl, int max_ops) {
    if (g->n_nodes > max_ops || g->n_nodes > SG_MAX_NODES || g->n_out < 1 || g->n_out > SG_MAX_OUT)
        return 0;
    for (int j = 0; j < g->n_nodes; j++) {
        const sg_node *n = &g->node[j];
        if (n->op >= OP_COUNT || n->combo >= d->n_combo[n->op]) return 0;
        for (int k = 0; k < 2; k++)
            if (k < ops_table[n->op].arity ? !ref_ok(n->in[k], j, pl) : n->in[k] != 0) return 0;
    }
    for (int k = 0; k < g->n_out; k++)
        if (!ref_ok(g->out[k], g->n_nodes, pl)) return 0;
    return 1;
}

static int grow(void **p, size_t *cap, size_t need, size_t sz) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 1024;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, nc * sz);
    if (!q) return -1;
    *p = q, *cap = nc;
    return 0;
}

/* Parse the records of one section into out. */
static int parse_section(const uint8_t *b, const part_entry *t, const char *path, uint32_t p,
                         uint32_t shard, const dom *d, const pool *pl, int max_ops, sf_part *out,
                         char *err, size_t errlen) {
    size_t at = 0;
    const size_t g = sizeof(sg_graph);
    for (uint64_t c = 0; c < t->classes; c++) {
        if (t->bytes - at < REC + g) return efail(err, errlen, "%s: part %u: class %llu truncated", path, p, (unsigned long long)c);
        uint32_t nm = get32(b + at + 20);
        if ((t->bytes - at - REC - g) / g < nm)
            return efail(err, errlen, "%s: part %u: class %llu: %u members beyond the part", path, p,
                         (unsigned long long)c, nm);
        if (grow((void **)&out->cls, &out->cap_cls, out->n_cls + 1, sizeof *out->cls) ||
            grow((void **)&out->members, &out->cap_mem, out->n_mem + nm, sizeof *out->members))
            return efail(err, errlen, "%s: part %u: out of memory", path, p);
        sf_class *k = &out->cls[out->n_cls];
        k->hash = get64(b + at), k->check = get32(b + at + 8);
        k->count_below = get32(b + at + 12), k->count_last = get32(b + at + 16);
        k->n_members = nm, k->shard = shard, k->first = out->n_mem;
        memcpy(&k->rep, b + at + REC, g);
        if (nm) memcpy(out->members + out->n_mem, b + at + REC + g, nm * g);
        int ok = graph_ok(&k->rep, d, pl, max_ops);
        for (uint32_t m = 0; m < nm && ok; m++) ok = graph_ok(&out->members[out->n_mem + m], d, pl, max_ops);
        if (!ok) return efail(err, errlen, "%s: part %u: class %llu: an invalid graph", path, p, (unsigned long long)c);
        out->n_cls++, out->n_mem += nm;
        at += REC + g + nm * g;
    }
    if (at != t->bytes) return efail(err, errlen, "%s: part %u: bytes after the last class", path, p);
    return 0;
}

int sf_read_part(const char *path, uint32_t p, uint32_t shard, const dom *d, const pool *pl,
                 int max_ops, sf_part *out, char *err, size_t errlen) {
    sf_header h;
    part_entry *tab;
    uint8_t *b = NULL;
    FILE *f;
    int rc = open_shard(path, &h, &f, &tab, err, errlen);
    if (!rc && p >= h.parts) rc = efail(err, errlen, "%s: no part %u (the file has %u)", path, p, h.parts);
    if (!rc && !(b = read_section(f, path, &tab[p], p, err, errlen))) rc = -1;
    if (!rc) rc = parse_section(b, &tab[p], path, p, shard, d, pl, max_ops, out, err, errlen);
    if (f) fclose(f);
    free(tab), free(b);
    return rc;
}

int sf_read_mem(const uint8_t *buf, size_t len, sf_header *h, const dom *d, const pool *pl,
                sf_part *out, char *err, size_t errlen) {
    const char *name = "(memory)";
    if (len < FIXED) return efail(err, errlen, "%s: truncated header", name);
    if (decode_fixed(buf, name, h, err, errlen)) return -1;
    if (len < header_bytes(h->parts)) return efail(err, errlen, "%s: truncated header", name);
    part_entry *tab = malloc(h->parts * sizeof *tab);
    int rc = tab ? decode_table(buf, len, name, h, tab, err, errlen) : efail(err, errlen, "out of memory");
    for (uint32_t p = 0; p < h->parts && !rc; p++) {
        rc = check_section(buf + tab[p].offset, &tab[p], name, p, err, errlen);
        if (!rc) rc = parse_section(buf + tab[p].offset, &tab[p], name, p, 0, d, pl, (int)h->max_ops, out, err, errlen);
    }
    free(tab);
    return rc;
}

void sf_part_free(sf_part *p) {
    free(p->cls), free(p->members);
    memset(p, 0, sizeof *p);
}
