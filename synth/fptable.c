/* fptable.c - the striped fingerprint table (see fptable.h). */
#include "fptable.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct {
    sg_graph g;
    uint32_t cls, next;
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
} stripe;

struct fpt {
    int bits;
    fpt_hash_fn hash;
    atomic_uint_fast64_t bytes;
    atomic_uint_fast64_t classes;
    atomic_uint epoch; /* bumped by rollbacks: class numbers are reused */
    stripe *st;
};

struct fpt_mark {
    int n;
    struct {
        uint32_t n_cls, n_mem;
        uint32_t *count; /* the counts of the classes then */
    } s[];
};

/* ---- the key cache ---- */

#define CACHE_WAYS 256
#define CACHE_BYTES 2048 /* longer keys are not cached */

struct fpt_cache {
    uint8_t *scratch; /* KEY_MAX_BYTES: a representative's key bytes */
    struct {
        const fpt *t;
        unsigned epoch;
        uint32_t stripe, cls, len;
        uint8_t key[CACHE_BYTES];
    } e[CACHE_WAYS];
};

fpt_cache *fpt_cache_new(void) {
    fpt_cache *k = calloc(1, sizeof *k);
    if (k && !(k->scratch = malloc(KEY_MAX_BYTES))) {
        free(k);
        return NULL;
    }
    return k;
}

void fpt_cache_free(fpt_cache *k) {
    if (k) free(k->scratch);
    free(k);
}

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
        free(s->cls), free(s->idx), free(s->mem), free(s->midx);
        pthread_mutex_destroy(&s->mu);
    }
    free(t->st);
    free(t);
}

uint64_t fpt_hash(const fpt *t, const uint8_t *key, size_t len) { return t->hash(key, len); }

/* The second hash; under a test hook it collides as the hook does. */
static uint32_t check_of(const fpt *t, const uint8_t *key, size_t len, uint64_t h) {
    if (t->hash != xxh3) return (uint32_t)(h >> 32);
    return (uint32_t)XXH3_64bits_withSeed(key, len, 0x9E3779B97F4A7C15ull);
}

uint64_t fpt_bytes(const fpt *t) { return atomic_load(&((fpt *)t)->bytes); }

uint64_t fpt_n_classes(const fpt *t) { return atomic_load(&((fpt *)t)->classes); }

int fpt_n_stripes(const fpt *t) { return 1 << t->bits; }

static uint32_t stripe_index(const fpt *t, uint64_t h) {
    return t->bits ? (uint32_t)(h >> (64 - t->bits)) : 0;
}

/* Resize *p from old to new elements of size sz, keeping the byte count. */
static int resize(fpt *t, void **p, uint64_t old, uint64_t nw, size_t sz) {
    void *q = realloc(*p, nw * sz);
    if (!q && nw) return -1;
    *p = q;
    atomic_fetch_add(&t->bytes, (uint64_t)(int64_t)((int64_t)(nw * sz) - (int64_t)(old * sz)));
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
    if (!s->idx_cap) return;
    memset(s->idx, 0, (size_t)s->idx_cap * sizeof *s->idx);
    for (uint32_t i = 0; i < s->n_cls; i++) idx_put(s->idx, s->idx_cap, s->cls[i].hash, i + 1);
}

static void rebuild_midx(stripe *s) {
    if (!s->midx_cap) return;
    memset(s->midx, 0, (size_t)s->midx_cap * sizeof *s->midx);
    for (uint32_t i = 0; i < s->n_mem; i++)
        idx_put(s->midx, s->midx_cap, member_hash(s->mem[i].cls, &s->mem[i].g), i + 1);
}

/* Index capacity for n entries: at most 2/3 full. */
static int idx_full(uint32_t n, uint32_t cap) { return (uint64_t)(n + 1) * 3 > (uint64_t)cap * 2; }

/* Room for one more class (and its index entry). */
static int grow_classes(fpt *t, stripe *s) {
    if (s->n_cls == s->cap_cls) {
        uint32_t nc = s->cap_cls ? s->cap_cls * 2 : 64;
        if (resize(t, (void **)&s->cls, s->cap_cls, nc, sizeof *s->cls)) return -1;
        s->cap_cls = nc;
    }
    if (idx_full(s->n_cls, s->idx_cap)) {
        uint32_t nc = s->idx_cap ? s->idx_cap * 2 : 128;
        if (resize(t, (void **)&s->idx, s->idx_cap, nc, sizeof *s->idx)) return -1;
        s->idx_cap = nc;
        rebuild_idx(s);
    }
    return 0;
}

static int grow_members(fpt *t, stripe *s) {
    if (s->n_mem == s->cap_mem) {
        uint32_t nc = s->cap_mem ? s->cap_mem * 2 : 64;
        if (resize(t, (void **)&s->mem, s->cap_mem, nc, sizeof *s->mem)) return -1;
        s->cap_mem = nc;
    }
    if (idx_full(s->n_mem, s->midx_cap)) {
        uint32_t nc = s->midx_cap ? s->midx_cap * 2 : 128;
        if (resize(t, (void **)&s->midx, s->midx_cap, nc, sizeof *s->midx)) return -1;
        s->midx_cap = nc;
        rebuild_midx(s);
    }
    return 0;
}

/* ---- finding a class ---- */

int fpt_key(key_ctx *c, const fpt_class *cls, uint8_t *buf, size_t *len) {
    return key_of_aligned(c, &cls->rep, buf, len) == KEY_OK ? 0 : -1;
}

/* 1 when class ci of stripe si has exactly these key bytes, 0 when not,
 * -1 when its representative could not be evaluated. */
static int same_key(const fpt *t, fpt_cache *kc, key_ctx *c, uint32_t si, uint32_t ci,
                    const uint8_t *key, size_t len) {
    uint8_t *scratch = kc->scratch;
    unsigned epoch = atomic_load(&((fpt *)t)->epoch);
    uint32_t way = (si * 2654435761u ^ ci * 40503u) % CACHE_WAYS;
    if (kc->e[way].t == t && kc->e[way].epoch == epoch && kc->e[way].stripe == si &&
        kc->e[way].cls == ci)
        return kc->e[way].len == len && memcmp(kc->e[way].key, key, len) == 0;
    size_t n;
    if (fpt_key(c, &t->st[si].cls[ci], scratch, &n)) return -1;
    if (n <= CACHE_BYTES) {
        kc->e[way].t = t, kc->e[way].epoch = epoch, kc->e[way].stripe = si;
        kc->e[way].cls = ci, kc->e[way].len = (uint32_t)n;
        memcpy(kc->e[way].key, scratch, n);
    }
    return n == len && memcmp(scratch, key, len) == 0;
}

/* The class with these key bytes, or -1 (none) / -2 (failure). */
static int64_t find_class(const fpt *t, fpt_cache *kc, key_ctx *c, uint32_t si, const uint8_t *key,
                          size_t len, uint64_t h, uint32_t check) {
    stripe *s = &t->st[si];
    int64_t found = -1;
    if (!s->idx_cap) return -1;
    for (uint32_t i = (uint32_t)h & (s->idx_cap - 1); s->idx[i] && found == -1;
         i = (i + 1) & (s->idx_cap - 1)) {
        const fpt_class *cl = &s->cls[s->idx[i] - 1];
        if (cl->hash != h || cl->check != check) continue;
        int same = same_key(t, kc, c, si, s->idx[i] - 1, key, len);
        if (same < 0) found = -2;
        if (same > 0) found = s->idx[i] - 1;
    }
    return found;
}

/* ---- members ---- */

static int is_member(const stripe *s, uint32_t cls, const sg_graph *g) {
    if (!s->midx_cap) return 0;
    uint64_t h = member_hash(cls, g);
    for (uint32_t i = (uint32_t)h & (s->midx_cap - 1); s->midx[i]; i = (i + 1) & (s->midx_cap - 1)) {
        const member *m = &s->mem[s->midx[i] - 1];
        if (m->cls == cls && sg_compare(&m->g, g) == 0) return 1;
    }
    return 0;
}

static int push_member(fpt *t, stripe *s, uint32_t ci, const sg_graph *g) {
    if (grow_members(t, s)) return -1;
    fpt_class *c = &s->cls[ci];
    member *m = &s->mem[s->n_mem];
    m->g = *g, m->cls = ci, m->next = c->head;
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
    if (cmp == 0 || is_member(s, ci, g)) return 0;
    if (cmp > 0) return push_member(t, s, ci, g);
    sg_graph old = c->rep;
    c->rep = *g;
    return push_member(t, s, ci, &old);
}

static int new_class(fpt *t, stripe *s, uint64_t h, uint32_t check, const sg_graph *rep) {
    if (grow_classes(t, s)) return -1;
    fpt_class *c = &s->cls[s->n_cls];
    memset(c, 0, sizeof *c);
    c->hash = h, c->check = check, c->rep = *rep, c->count = 1;
    idx_put(s->idx, s->idx_cap, h, ++s->n_cls);
    atomic_fetch_add(&t->classes, 1);
    return 0;
}

int fpt_add(fpt *t, fpt_cache *kc, key_ctx *c, const uint8_t *key, size_t len, uint64_t h,
            const sg_graph *g, int n) {
    uint32_t si = stripe_index(t, h), check = check_of(t, key, len, h);
    stripe *s = &t->st[si];
    int rc = 0, k = 0;
    pthread_mutex_lock(&s->mu);
    int64_t ci = find_class(t, kc, c, si, key, len, h, check);
    if (ci == -2) rc = -1;
    if (ci == -1) {
        rc = new_class(t, s, h, check, &g[0]);
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

/* ---- marks ---- */

fpt_mark *fpt_mark_new(const fpt *t) {
    int n = 1 << t->bits;
    fpt_mark *m = calloc(1, sizeof *m + (size_t)n * sizeof m->s[0]);
    if (!m) return NULL;
    m->n = n;
    for (int i = 0; i < n; i++) {
        const stripe *s = &t->st[i];
        m->s[i].n_cls = s->n_cls, m->s[i].n_mem = s->n_mem;
        m->s[i].count = malloc((s->n_cls ? s->n_cls : 1) * sizeof *m->s[i].count);
        if (!m->s[i].count) {
            fpt_mark_free(m);
            return NULL;
        }
        for (uint32_t c = 0; c < s->n_cls; c++) m->s[i].count[c] = s->cls[c].count;
    }
    return m;
}

uint32_t fpt_mark_count(const fpt_mark *m, int s, size_t ci) {
    return ci < m->s[s].n_cls ? m->s[s].count[ci] : 0;
}

void fpt_mark_free(fpt_mark *m) {
    if (!m) return;
    for (int i = 0; i < m->n; i++) free(m->s[i].count);
    free(m);
}

/* Free an array (and its byte count). */
static void release(fpt *t, void **p, uint32_t *cap, size_t sz) {
    free(*p);
    *p = NULL;
    atomic_fetch_sub(&t->bytes, (uint64_t)*cap * sz);
    *cap = 0;
}

/* Shrink an array to about its use (failure to shrink is harmless). */
static void trim(fpt *t, void **p, uint32_t *cap, uint32_t used, size_t sz) {
    uint32_t nc = used + used / 4;
    if (!used) release(t, p, cap, sz);
    else if (nc < *cap && resize(t, p, *cap, nc, sz) == 0) *cap = nc;
}

/* Shrink an index to the smallest power of two that holds n entries. */
static void trim_index(fpt *t, uint32_t **idx, uint32_t *cap, uint32_t n) {
    uint32_t nc = 128;
    while (idx_full(n, nc)) nc *= 2;
    if (!n) release(t, (void **)idx, cap, sizeof **idx);
    else if (nc < *cap && resize(t, (void **)idx, *cap, nc, sizeof **idx) == 0) *cap = nc;
}

static void rollback_stripe(fpt *t, stripe *s, uint32_t n_cls, uint32_t n_mem, const uint32_t *count) {
    for (uint32_t m = s->n_mem; m-- > n_mem;) {
        member *mm = &s->mem[m];
        if (mm->cls >= n_cls) continue;
        fpt_class *c = &s->cls[mm->cls];
        c->head = mm->next, c->n_members--;
    }
    atomic_fetch_sub(&t->classes, s->n_cls - n_cls);
    s->n_mem = n_mem, s->n_cls = n_cls;
    for (uint32_t c = 0; c < n_cls; c++) s->cls[c].count = count[c];
    trim(t, (void **)&s->cls, &s->cap_cls, s->n_cls, sizeof *s->cls);
    trim(t, (void **)&s->mem, &s->cap_mem, s->n_mem, sizeof *s->mem);
    trim_index(t, &s->idx, &s->idx_cap, s->n_cls);
    trim_index(t, &s->midx, &s->midx_cap, s->n_mem);
    rebuild_idx(s);
    rebuild_midx(s);
}

void fpt_rollback(fpt *t, const fpt_mark *m) {
    atomic_fetch_add(&t->epoch, 1);
    for (int i = 0; i < m->n; i++)
        rollback_stripe(t, &t->st[i], m->s[i].n_cls, m->s[i].n_mem, m->s[i].count);
}
