/* emit.c - rule emission from classes and canonical renaming (emit.h). */
#include "emit.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* ---- inputs ---- */

void em_key_of(const rg_graph *src, const rg_graph *dst, em_key *k) {
    size_t n = rg_encode(src, k->b);
    n += rg_encode(dst, k->b + n);
    k->len = (uint16_t)n;
}

static int key_cmp(const em_key *a, const em_key *b) {
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    return memcmp(a->b, b->b, a->len);
}

void em_pair_key(const rg_graph *a, const rg_graph *b, em_key *k) {
    rg_graph ca, cb;
    em_key other;
    rg_canon_rule(a, b, &ca, &cb);
    em_key_of(&ca, &cb, k);
    rg_canon_rule(b, a, &cb, &ca);
    em_key_of(&cb, &ca, &other);
    if (key_cmp(&other, k) < 0) *k = other;
}

/* ---- key map ---- */

int em_map_init(em_map *m, size_t cap) {
    size_t slots = 16;
    while (slots < 2 * cap + 2) slots *= 2;
    memset(m, 0, sizeof *m);
    m->keys = malloc((cap + 1) * sizeof *m->keys);
    m->vals = malloc((cap + 1) * sizeof *m->vals);
    m->slot = calloc(slots, sizeof *m->slot);
    m->cap = cap;
    m->mask = slots - 1;
    return m->keys && m->vals && m->slot ? 0 : -1;
}

void em_map_free(em_map *m) {
    free(m->keys);
    free(m->vals);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

/* The slot holding k, or the empty slot where it would go. */
static size_t probe(const em_map *m, const em_key *k) {
    size_t i = (size_t)XXH3_64bits(k->b, k->len) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        uint32_t e = m->slot[i];
        if (!e || key_cmp(&m->keys[e - 1], k) == 0) return i;
    }
}

size_t em_map_get(const em_map *m, const em_key *k) {
    uint32_t e = m->slot[probe(m, k)];
    return e ? m->vals[e - 1] : SIZE_MAX;
}

size_t em_map_put(em_map *m, const em_key *k, size_t v) {
    size_t i = probe(m, k);
    if (m->slot[i]) return m->vals[m->slot[i] - 1];
    m->keys[m->n] = *k;
    m->vals[m->n] = v;
    m->slot[i] = (uint32_t)++m->n;
    return v;
}

/* ---- emission ---- */

static int push(em_rule **rules, size_t *n, size_t *cap, const em_rule *r) {
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 256;
        em_rule *p = realloc(*rules, nc * sizeof *p);
        if (!p) return -1;
        *rules = p;
        *cap = nc;
    }
    (*rules)[(*n)++] = *r;
    return 0;
}


/* One direction src -> dst when the engine can apply it (emit.h). */
static int emit_dir(const rg_graph *src, const rg_graph *dst, em_rule *proto, em_rule **rules,
                    size_t *n, size_t *cap) {
    if (!rg_can_rewrite(src, dst)) return 0;
    proto->src = *src;
    proto->dst = *dst;
    int n_in = src->n_inputs > dst->n_inputs ? src->n_inputs : dst->n_inputs;
    proto->src.n_inputs = proto->dst.n_inputs = n_in;
    return push(rules, n, cap, proto);
}

int em_class_rules(const rdb_class *c, size_t ci, const uint8_t *proved, const rdb_prover *pv,
                   em_rule **rules, size_t *n, size_t *cap) {
    const rg_graph *rep = &c->members[0];
    for (size_t m = 1; m < c->n_members; m++) {
        if (!proved[m] || rg_equal(rep, &c->members[m])) continue;
        em_rule proto;
        memset(&proto, 0, sizeof proto);
        proto.cls = ci;
        proto.member = m;
        proto.prover = pv[m];
        if (emit_dir(rep, &c->members[m], &proto, rules, n, cap)) return -1;
        proto.reversed = 1;
        if (emit_dir(&c->members[m], rep, &proto, rules, n, cap)) return -1;
    }
    return 0;
}
