/* fptable.c - the striped fingerprint table (see fptable.h). */
#include "fptable.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct {
    sg_graph g;
    uint32_t cls, next, dups;
} member;

typedef struct {
    pthread_mutex_t mu;
    fpt_class *cls;
    uint32_t n_cls, cap_cls;
    uint32_t *idx; /* class + 1 by hash, linear probing; 0 empty */
    uint32_t idx_cap;
    member *mem;
    uint32_t n_mem, cap_mem;
    uint32_t *midx; /* member + 1 by (class, graph) */
    uint32_t midx_cap;
    uint8_t *keys;
    uint64_t n_keys, cap_keys;
    uint64_t bytes;
} stripe;

struct fpt {
    int bits;
    fpt_hash_fn hash;
    _Atomic uint64_t bytes;
    stripe *st;
};

struct fpt_mark {
    int n;
    struct { uint32_t n_cls, n_mem; uint64_t n_keys; } s[];
};

static uint64_t xxh3(const void *p, size_t n) { return XXH3_64bits(p, n); }

fpt *fpt_new(int stripe_bits, fpt_hash_fn hash) {
    fpt *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->bits = stripe_bits;
    t->hash = hash ? hash : xxh3;
    t->st = calloc((size_t)1 << stripe_bits, sizeof *t->st);
    if (!t->st) {
        free(t);
        return NULL;
    }
    for (int i = 0; i < 1 << stripe_bits; i++) pthread_mutex_init(&t->st[i].mu, NULL);
    return t;
}

void fpt_free(fpt *t) {
    if (!t) return;
    for (int i = 0; i < 1 << t->bits; i++) {
        stripe *s = &t->st[i];
        free(s->cls), free(s->idx), free(s->mem), free(s->midx), free(s->keys);
        pthread_mutex_destroy(&s->mu);
    }
    free(t->st);
    free(t);
}

uint64_t fpt_hash(const fpt *t, const uint8_t *key, size_t len) { return t->hash(key, len); }

uint64_t fpt_bytes(const fpt *t) { return atomic_load(&((fpt *)t)->bytes); }

int fpt_n_stripes(const fpt *t) { return 1 << t->bits; }

static stripe *stripe_of(const fpt *t, uint64_t h) {
    return &t->st[t->bits ? h >> (64 - t->bits) : 0];
}

/* Resize *p from old to new elements of size sz, keeping the byte count. */
static int resize(fpt *t, stripe *s, void **p, uint64_t old, uint64_t nw, size_t sz) {
    void *q = realloc(*p, nw * sz);
    if (!q && nw) return -1;
    *p = q;
    int64_t d = (int64_t)(nw * sz) - (int64_t)(old * sz);
    s->bytes += (uint64_t)d;
    atomic_fetch_add(&t->bytes, (uint64_t)d);
    return 0;
}

/* ---- indexes ---- */

static uint64_t member_hash(uint32_t cls, const sg_graph *g) {
    return sg_hash(g) ^ ((uint64_t)cls * 0x9E3779B97F4A7C15ull);
}

static void idx_put(uint32_t *idx, uint32_t cap, uint64_t h, uint32_t v) {
    uint32_t i = (uint32_t)h & (cap - 1);
    while (idx[i]) i = (i + 1) & (cap - 1);
    idx[i] = v;
}

static void rebuild_idx(stripe *s) {
    memset(s->idx, 0, (size_t)s->idx_cap * sizeof *s->idx);
    for (uint32_t i = 0; i < s->n_cls; i++) idx_put(s->idx, s->idx_cap, s->cls[i].hash, i + 1);
}

static void rebuild_midx(stripe *s) {
    memset(s->midx, 0, (size_t)s->midx_cap * sizeof *s->midx);
    for (uint32_t i = 0; i < s->n_mem; i++)
        idx_put(s->midx, s->midx_cap, member_hash(s->mem[i].cls, &s->mem[i].g), i + 1);
}

/* Room for one more class (and its index entry). */
static int grow_classes(fpt *t, stripe *s) {
    if (s->n_cls == s->cap_cls) {
        uint32_t nc = s->cap_cls ? s->cap_cls * 2 : 64;
        if (resize(t, s, (void **)&s->cls, s->cap_cls, nc, sizeof *s->cls)) return -1;
        s->cap_cls = nc;
    }
    if ((uint64_t)(s->n_cls + 1) * 2 > s->idx_cap) {
        uint32_t nc = s->idx_cap ? s->idx_cap * 2 : 128;
        if (resize(t, s, (void **)&s->idx, s->idx_cap, nc, sizeof *s->idx)) return -1;
        s->idx_cap = nc;
        rebuild_idx(s);
    }
    return 0;
}

static int grow_members(fpt *t, stripe *s) {
    if (s->n_mem == s->cap_mem) {
        uint32_t nc = s->cap_mem ? s->cap_mem * 2 : 64;
        if (resize(t, s, (void **)&s->mem, s->cap_mem, nc, sizeof *s->mem)) return -1;
        s->cap_mem = nc;
    }
    if ((uint64_t)(s->n_mem + 1) * 2 > s->midx_cap) {
        uint32_t nc = s->midx_cap ? s->midx_cap * 2 : 128;
        if (resize(t, s, (void **)&s->midx, s->midx_cap, nc, sizeof *s->midx)) return -1;
        s->midx_cap = nc;
        rebuild_midx(s);
    }
    return 0;
}

/* ---- key bytes of a class ---- */

static int store_key(fpt *t, stripe *s, fpt_class *c, const uint8_t *key, size_t len) {
    if (s->n_keys + len > s->cap_keys) {
        uint64_t nc = s->cap_keys ? s->cap_keys * 2 : 1 << 16;
        while (nc < s->n_keys + len) nc *= 2;
        if (resize(t, s, (void **)&s->keys, s->cap_keys, nc, 1)) return -1;
        s->cap_keys = nc;
    }
    memcpy(s->keys + s->n_keys, key, len);
    c->key_off = s->n_keys, c->key_len = (uint32_t)len;
    s->n_keys += len;
    return 0;
}

/* 1 when class c has exactly these key bytes (stored now if they were
 * not), 0 when not, -1 on failure. */
static int same_key(fpt *t, stripe *s, key_ctx *kc, fpt_class *c, const uint8_t *key, size_t len) {
    if (!c->key_len) {
        uint8_t *buf = malloc(KEY_MAX_BYTES);
        size_t n;
        int rc = buf && key_of_aligned(kc, &c->rep, buf, &n) == KEY_OK ? 0 : -1;
        if (rc == 0) rc = store_key(t, s, c, buf, n);
        free(buf);
        if (rc) return -1;
    }
    return c->key_len == len && memcmp(s->keys + c->key_off, key, len) == 0;
}

/* The class with these key bytes, or -1 (none) / -2 (failure). */
static int64_t find_class(fpt *t, stripe *s, key_ctx *kc, const uint8_t *key, size_t len,
                          uint64_t h) {
    if (!s->idx_cap) return -1;
    for (uint32_t i = (uint32_t)h & (s->idx_cap - 1); s->idx[i]; i = (i + 1) & (s->idx_cap - 1)) {
        fpt_class *c = &s->cls[s->idx[i] - 1];
        if (c->hash != h) continue;
        int same = same_key(t, s, kc, c, key, len);
        if (same < 0) return -2;
        if (same) return s->idx[i] - 1;
    }
    return -1;
}

/* ---- members ---- */

static member *find_member(stripe *s, uint32_t cls, const sg_graph *g) {
    if (!s->midx_cap) return NULL;
    uint64_t h = member_hash(cls, g);
    for (uint32_t i = (uint32_t)h & (s->midx_cap - 1); s->midx[i]; i = (i + 1) & (s->midx_cap - 1)) {
        member *m = &s->mem[s->midx[i] - 1];
        if (m->cls == cls && sg_compare(&m->g, g) == 0) return m;
    }
    return NULL;
}

static int push_member(fpt *t, stripe *s, uint32_t ci, const sg_graph *g, uint32_t dups) {
    if (grow_members(t, s)) return -1;
    fpt_class *c = &s->cls[ci];
    member *m = &s->mem[s->n_mem];
    m->g = *g, m->cls = ci, m->next = c->head, m->dups = dups;
    c->head = ++s->n_mem;
    c->n_members++;
    idx_put(s->midx, s->midx_cap, member_hash(ci, g), s->n_mem);
    return 0;
}

/* One graph reaches class ci: counted, and kept unless already there; a
 * smaller graph takes the representative's place. */
static int add_graph(fpt *t, stripe *s, uint32_t ci, const sg_graph *g) {
    fpt_class *c = &s->cls[ci];
    c->count++;
    int cmp = sg_compare(g, &c->rep);
    if (cmp == 0) return c->rep_dups++, 0;
    member *m = find_member(s, ci, g);
    if (m) return m->dups++, 0;
    if (cmp > 0) return push_member(t, s, ci, g, 0);
    sg_graph old = c->rep;
    uint32_t old_dups = c->rep_dups;
    c->rep = *g, c->rep_dups = 0;
    return push_member(t, s, ci, &old, old_dups);
}

static int new_class(fpt *t, stripe *s, uint64_t h, const sg_graph *rep) {
    if (grow_classes(t, s)) return -1;
    fpt_class *c = &s->cls[s->n_cls];
    memset(c, 0, sizeof *c);
    c->hash = h, c->rep = *rep, c->count = 1;
    idx_put(s->idx, s->idx_cap, h, ++s->n_cls);
    return 0;
}

int fpt_add(fpt *t, key_ctx *kc, const uint8_t *key, size_t len, uint64_t h,
            const sg_graph *g, int n) {
    stripe *s = stripe_of(t, h);
    int rc = 0, k = 0;
    pthread_mutex_lock(&s->mu);
    int64_t ci = find_class(t, s, kc, key, len, h);
    if (ci == -2) rc = -1;
    if (ci == -1) {
        rc = new_class(t, s, h, &g[0]);
        ci = (int64_t)s->n_cls - 1, k = 1;
    }
    for (; rc == 0 && k < n; k++) rc = add_graph(t, s, (uint32_t)ci, &g[k]);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- reading ---- */

const fpt_class *fpt_classes(const fpt *t, int s, size_t *n) {
    *n = t->st[s].n_cls;
    return t->st[s].cls;
}

size_t fpt_members(const fpt *t, int s, const fpt_class *c, sg_graph *buf, size_t cap) {
    const stripe *st = &t->st[s];
    size_t n = 0;
    for (uint32_t m = c->head; m; m = st->mem[m - 1].next)
        if (n < cap) buf[n++] = st->mem[m - 1].g;
    return n;
}

int fpt_key(const fpt *t, key_ctx *c, int s, const fpt_class *cls, uint8_t *buf, size_t *len) {
    if (cls->key_len) {
        memcpy(buf, t->st[s].keys + cls->key_off, cls->key_len);
        *len = cls->key_len;
        return 0;
    }
    return key_of_aligned(c, &cls->rep, buf, len) == KEY_OK ? 0 : -1;
}

/* ---- marks ---- */

fpt_mark *fpt_mark_new(const fpt *t) {
    int n = 1 << t->bits;
    fpt_mark *m = malloc(sizeof *m + (size_t)n * sizeof m->s[0]);
    if (!m) return NULL;
    m->n = n;
    for (int i = 0; i < n; i++) {
        m->s[i].n_cls = t->st[i].n_cls;
        m->s[i].n_mem = t->st[i].n_mem;
        m->s[i].n_keys = t->st[i].n_keys;
    }
    return m;
}

void fpt_mark_free(fpt_mark *m) { free(m); }

/* Shrink an array to about its use (failure to shrink is harmless). */
static void trim(fpt *t, stripe *s, void **p, uint32_t *cap, uint32_t used, size_t sz) {
    uint32_t nc = used < 64 ? 64 : used + used / 4;
    if (nc < *cap && resize(t, s, p, *cap, nc, sz) == 0) *cap = nc;
}

static void rollback_stripe(fpt *t, stripe *s, uint32_t n_cls, uint32_t n_mem, uint64_t n_keys) {
    for (uint32_t m = s->n_mem; m-- > n_mem;) {
        member *mm = &s->mem[m];
        if (mm->cls >= n_cls) continue;
        fpt_class *c = &s->cls[mm->cls];
        c->head = mm->next, c->n_members--, c->count -= 1 + (uint64_t)mm->dups;
    }
    s->n_mem = n_mem, s->n_cls = n_cls;
    for (uint32_t i = 0; i < n_cls; i++)
        if (s->cls[i].key_len && s->cls[i].key_off >= n_keys) s->cls[i].key_len = 0;
    s->n_keys = n_keys;
    trim(t, s, (void **)&s->cls, &s->cap_cls, s->n_cls, sizeof *s->cls);
    trim(t, s, (void **)&s->mem, &s->cap_mem, s->n_mem, sizeof *s->mem);
    rebuild_idx(s);
    rebuild_midx(s);
}

void fpt_rollback(fpt *t, const fpt_mark *m) {
    for (int i = 0; i < m->n; i++)
        rollback_stripe(t, &t->st[i], m->s[i].n_cls, m->s[i].n_mem, m->s[i].n_keys);
}
