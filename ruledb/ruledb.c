/* ruledb.c - the in-memory rule database: names and messages, the growable
 * arrays of rules and classes, and rdb_validate (format: ruledb.h). */
#include "ruledb.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modp.h"
#include "rdb_int.h"

const char *const rdb__proof_names[RDB_PROOF_COUNT] = { /* ORDER PROOF */
    [RDB_PROVED] = "proved",
    [RDB_UNKNOWN] = "unknown",
    [RDB_TIMEOUT] = "timeout",
    [RDB_REFUTED] = "refuted",
    [RDB_UNCHECKED] = "unchecked",
};
static_assert(sizeof rdb__proof_names / sizeof rdb__proof_names[0] == RDB_PROOF_COUNT,
              "rdb__proof_names needs one entry per rdb_proof");

const char *rdb_strerror(rdb_status s) {
    switch (s) {
    case RDB_OK: return "ok";
    case RDB_EIO: return "I/O error";
    case RDB_ETRUNC: return "truncated file";
    case RDB_ECORRUPT: return "corrupt file";
    case RDB_EVERSION: return "unsupported format version";
    case RDB_EDIGEST: return "made from other opspecs";
    case RDB_ENOMEM: return "out of memory";
    case RDB_EINVAL: return "invalid argument";
    }
    return "unknown error";
}

const char *rdb_kind_name(rdb_kind k) { return k == RDB_RULES ? "rules" : "candidates"; }

const char *rdb_proof_name(rdb_proof p) {
    return (unsigned)p < RDB_PROOF_COUNT ? rdb__proof_names[p] : NULL;
}

/* Format a message into err (when given) and return code. */
rdb_status rdb__efmt(char *err, size_t errlen, rdb_status code, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ======================= memory ======================= */

/* The array with room for element n (moved when it grew; doubling), or
 * NULL when out of memory (arr is then untouched). */
void *rdb__reserve(void *arr, size_t *cap, size_t n, size_t elsize) {
    if (n < *cap) return arr;
    size_t nc = *cap ? *cap * 2 : 4;
    if (nc > SIZE_MAX / elsize) return NULL;
    void *p = realloc(arr, nc * elsize);
    if (p) *cap = nc;
    return p;
}

rdb_file *rdb_new(rdb_kind kind) {
    rdb_file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->kind = kind;
    ops_digest(f->digest);
    f->gen.shard_count = 1;
    f->gen.shard_have = 1;
    return f;
}

void rdb_free(rdb_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_classes; i++) {
        free(f->classes[i].fp);
        free(f->classes[i].members);
    }
    free(f->classes);
    free(f->rules);
    free(f);
}

rdb_status rdb_add_rule(rdb_file *f, const rg_graph *src, const rg_graph *dst,
                        const rdb_prover *pv) {
    rdb_rule *r = rdb__reserve(f->rules, &f->cap_rules, f->n_rules, sizeof *r);
    if (!r) return RDB_ENOMEM;
    f->rules = r;
    r = &f->rules[f->n_rules];
    memset(r, 0, sizeof *r);
    r->id = f->n_rules ? f->rules[f->n_rules - 1].id + 1 : 0;
    r->src = *src;
    r->dst = *dst;
    r->prover = *pv;
    f->n_rules++;
    return RDB_OK;
}

rdb_status rdb_add_class(rdb_file *f, const uint8_t *fp, size_t fp_len, uint64_t count,
                         rdb_class **out) {
    rdb_class *c = rdb__reserve(f->classes, &f->cap_classes, f->n_classes, sizeof *c);
    if (!c) return RDB_ENOMEM;
    f->classes = c;
    c = &f->classes[f->n_classes];
    memset(c, 0, sizeof *c);
    c->fp = malloc(fp_len ? fp_len : 1);
    if (!c->fp) return RDB_ENOMEM;
    if (fp_len) memcpy(c->fp, fp, fp_len);
    c->fp_len = fp_len;
    c->count = count;
    f->n_classes++;
    if (out) *out = c;
    return RDB_OK;
}

rdb_status rdb_class_add_member(rdb_class *c, const rg_graph *g) {
    rg_graph *m = rdb__reserve(c->members, &c->cap_members, c->n_members, sizeof *m);
    if (!m) return RDB_ENOMEM;
    c->members = m;
    c->members[c->n_members++] = *g;
    return RDB_OK;
}

/* ======================= validation ======================= */

static int str_ok(const char *s, size_t cap) { return memchr(s, '\0', cap) != NULL; }

static rdb_status check_graph(const rg_graph *g, const char *where, char *err, size_t errlen) {
    char why[RG_ERRLEN];
    if (rg_validate(g, why, sizeof why) == RG_OK) return RDB_OK;
    return rdb__efmt(err, errlen, RDB_EINVAL, "%s: %s", where, why);
}

static rdb_status check_rule(const rdb_rule *r, size_t i, const rdb_rule *prev, char *err,
                             size_t errlen) {
    char where[48];
    snprintf(where, sizeof where, "rules[%zu].src", i);
    if (check_graph(&r->src, where, err, errlen)) return RDB_EINVAL;
    snprintf(where, sizeof where, "rules[%zu].dst", i);
    if (check_graph(&r->dst, where, err, errlen)) return RDB_EINVAL;
    if (prev && r->id <= prev->id)
        return rdb__efmt(err, errlen, RDB_EINVAL, "rules[%zu]: id %llu not above the previous id %llu",
                    i, (unsigned long long)r->id, (unsigned long long)prev->id);
    if (r->src.n_inputs != r->dst.n_inputs || r->src.n_outputs != r->dst.n_outputs)
        return rdb__efmt(err, errlen, RDB_EINVAL,
                    "rules[%zu] (id %llu): src has %d inputs and %d outputs, dst %d and %d", i,
                    (unsigned long long)r->id, r->src.n_inputs, r->src.n_outputs,
                    r->dst.n_inputs, r->dst.n_outputs);
    if (!rdb_proof_name(r->prover.status) || !str_ok(r->prover.name, RDB_NAME_LEN) ||
        !str_ok(r->prover.version, RDB_NAME_LEN))
        return rdb__efmt(err, errlen, RDB_EINVAL, "rules[%zu] (id %llu).prover: invalid record", i,
                    (unsigned long long)r->id);
    return RDB_OK;
}

static rdb_status check_fingerprint(const rdb_class *c, size_t i, char *err, size_t errlen) {
    if (c->fp_len == 0 || c->fp_len % 8)
        return rdb__efmt(err, errlen, RDB_EINVAL,
                    "classes[%zu].fingerprint: %zu bytes, not a nonzero multiple of 8", i,
                    c->fp_len);
    for (size_t k = 0; k < c->fp_len; k += 8) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--) v = v << 8 | c->fp[k + (size_t)b];
        if (v >= MP_P)
            return rdb__efmt(err, errlen, RDB_EINVAL,
                        "classes[%zu].fingerprint: value %zu is not a residue mod 2^61-1", i,
                        k / 8);
    }
    return RDB_OK;
}

static rdb_status check_class(const rdb_class *c, size_t i, char *err, size_t errlen) {
    if (check_fingerprint(c, i, err, errlen)) return RDB_EINVAL;
    if (c->n_members == 0)
        return rdb__efmt(err, errlen, RDB_EINVAL, "classes[%zu].members: empty", i);
    if (c->count < c->n_members)
        return rdb__efmt(err, errlen, RDB_EINVAL, "classes[%zu].count: %llu below its %zu members",
                    i, (unsigned long long)c->count, c->n_members);
    if (c->n_shapes < 0 || c->n_shapes > RG_MAX_INPUTS)
        return rdb__efmt(err, errlen, RDB_EINVAL, "classes[%zu].shapes: %d shapes", i, c->n_shapes);
    for (int k = 0; k < c->n_shapes; k++)
        if (!ten_shape_valid(&c->shapes[k]))
            return rdb__efmt(err, errlen, RDB_EINVAL, "classes[%zu].shapes[%d]: invalid shape", i, k);
    for (size_t m = 0; m < c->n_members; m++) {
        char where[64];
        snprintf(where, sizeof where, "classes[%zu].members[%zu]", i, m);
        if (check_graph(&c->members[m], where, err, errlen)) return RDB_EINVAL;
        if (c->members[m].n_inputs > c->n_shapes)
            return rdb__efmt(err, errlen, RDB_EINVAL, "%s: %d inputs but %d shapes", where,
                        c->members[m].n_inputs, c->n_shapes);
        if (c->members[m].n_outputs != c->members[0].n_outputs)
            return rdb__efmt(err, errlen, RDB_EINVAL, "%s: %d outputs, members[0] has %d", where,
                        c->members[m].n_outputs, c->members[0].n_outputs);
    }
    return RDB_OK;
}

static rdb_status check_generator(const rdb_generator *g, char *err, size_t errlen) {
    if (!str_ok(g->tool, RDB_NAME_LEN) || !str_ok(g->version, RDB_NAME_LEN))
        return rdb__efmt(err, errlen, RDB_EINVAL, "generator: tool or version not terminated");
    if (g->ops & ~OPS_SET_ALL)
        return rdb__efmt(err, errlen, RDB_EINVAL, "generator.ops: unknown operator bits");
    if (g->shard_count > RDB_MAX_SHARDS ||
        (g->shard_count < 64 && g->shard_have >> g->shard_count))
        return rdb__efmt(err, errlen, RDB_EINVAL, "generator.shard: shards beyond count %u",
                    (unsigned)g->shard_count);
    if (g->n_notes < 0 || g->n_notes > RDB_MAX_NOTES)
        return rdb__efmt(err, errlen, RDB_EINVAL, "generator.notes: %d notes", g->n_notes);
    for (int k = 0; k < g->n_notes; k++)
        if (!str_ok(g->notes[k], RDB_NOTE_LEN))
            return rdb__efmt(err, errlen, RDB_EINVAL, "generator.notes[%d]: not terminated", k);
    return RDB_OK;
}

rdb_status rdb_validate(const rdb_file *f, char *err, size_t errlen) {
    if (f->kind != RDB_RULES && f->kind != RDB_CANDIDATES)
        return rdb__efmt(err, errlen, RDB_EINVAL, "kind %d invalid", (int)f->kind);
    if (check_generator(&f->gen, err, errlen)) return RDB_EINVAL;
    if (f->kind == RDB_RULES ? f->n_classes != 0 : f->n_rules != 0)
        return rdb__efmt(err, errlen, RDB_EINVAL, "a %s file holds %s", rdb_kind_name(f->kind),
                    f->kind == RDB_RULES ? "classes" : "rules");
    for (size_t i = 0; i < f->n_rules; i++)
        if (check_rule(&f->rules[i], i, i ? &f->rules[i - 1] : NULL, err, errlen))
            return RDB_EINVAL;
    for (size_t i = 0; i < f->n_classes; i++)
        if (check_class(&f->classes[i], i, err, errlen)) return RDB_EINVAL;
    return RDB_OK;
}
