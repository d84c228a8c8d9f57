/* ruledb.c - the ruledb file: memory model, validation, the bounds-checked
 * reader (over mpread), the msgpack-c writer with atomic replace, merge and
 * diff. The format itself is documented in ruledb.h only. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "ruledb.h"

#include <errno.h>
#include <fcntl.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "modp.h"
#include "mpread.h"


/* Files larger than this are refused before reading (a rule set of a
 * million rules is ~100 MB). */
#define RDB_MAX_FILE ((size_t)1 << 30)

static const char *const proof_names[RDB_PROOF_COUNT] = { /* ORDER PROOF */
    [RDB_PROVED] = "proved",
    [RDB_UNKNOWN] = "unknown",
    [RDB_TIMEOUT] = "timeout",
    [RDB_REFUTED] = "refuted",
    [RDB_UNCHECKED] = "unchecked",
};
static_assert(sizeof proof_names / sizeof proof_names[0] == RDB_PROOF_COUNT,
              "proof_names needs one entry per rdb_proof");

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
    return (unsigned)p < RDB_PROOF_COUNT ? proof_names[p] : NULL;
}

/* Format a message into err (when given) and return code. */
static rdb_status efmt(char *err, size_t errlen, rdb_status code, const char *fmt, ...) {
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
static void *reserve(void *arr, size_t *cap, size_t n, size_t elsize) {
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
    rdb_rule *r = reserve(f->rules, &f->cap_rules, f->n_rules, sizeof *r);
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
    rdb_class *c = reserve(f->classes, &f->cap_classes, f->n_classes, sizeof *c);
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
    rg_graph *m = reserve(c->members, &c->cap_members, c->n_members, sizeof *m);
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
    return efmt(err, errlen, RDB_EINVAL, "%s: %s", where, why);
}

static rdb_status check_rule(const rdb_rule *r, size_t i, const rdb_rule *prev, char *err,
                             size_t errlen) {
    char where[48];
    snprintf(where, sizeof where, "rules[%zu].src", i);
    if (check_graph(&r->src, where, err, errlen)) return RDB_EINVAL;
    snprintf(where, sizeof where, "rules[%zu].dst", i);
    if (check_graph(&r->dst, where, err, errlen)) return RDB_EINVAL;
    if (prev && r->id <= prev->id)
        return efmt(err, errlen, RDB_EINVAL, "rules[%zu]: id %llu not above the previous id %llu",
                    i, (unsigned long long)r->id, (unsigned long long)prev->id);
    if (r->src.n_inputs != r->dst.n_inputs || r->src.n_outputs != r->dst.n_outputs)
        return efmt(err, errlen, RDB_EINVAL,
                    "rules[%zu] (id %llu): src has %d inputs and %d outputs, dst %d and %d", i,
                    (unsigned long long)r->id, r->src.n_inputs, r->src.n_outputs,
                    r->dst.n_inputs, r->dst.n_outputs);
    if (!rdb_proof_name(r->prover.status) || !str_ok(r->prover.name, RDB_NAME_LEN) ||
        !str_ok(r->prover.version, RDB_NAME_LEN))
        return efmt(err, errlen, RDB_EINVAL, "rules[%zu] (id %llu).prover: invalid record", i,
                    (unsigned long long)r->id);
    return RDB_OK;
}

static rdb_status check_fingerprint(const rdb_class *c, size_t i, char *err, size_t errlen) {
    if (c->fp_len == 0 || c->fp_len % 8)
        return efmt(err, errlen, RDB_EINVAL,
                    "classes[%zu].fingerprint: %zu bytes, not a nonzero multiple of 8", i,
                    c->fp_len);
    for (size_t k = 0; k < c->fp_len; k += 8) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--) v = v << 8 | c->fp[k + (size_t)b];
        if (v >= MP_P)
            return efmt(err, errlen, RDB_EINVAL,
                        "classes[%zu].fingerprint: value %zu is not a residue mod 2^61-1", i,
                        k / 8);
    }
    return RDB_OK;
}

static rdb_status check_class(const rdb_class *c, size_t i, char *err, size_t errlen) {
    if (check_fingerprint(c, i, err, errlen)) return RDB_EINVAL;
    if (c->n_members == 0)
        return efmt(err, errlen, RDB_EINVAL, "classes[%zu].members: empty", i);
    if (c->count < c->n_members)
        return efmt(err, errlen, RDB_EINVAL, "classes[%zu].count: %llu below its %zu members",
                    i, (unsigned long long)c->count, c->n_members);
    if (c->n_shapes < 0 || c->n_shapes > RG_MAX_INPUTS)
        return efmt(err, errlen, RDB_EINVAL, "classes[%zu].shapes: %d shapes", i, c->n_shapes);
    for (int k = 0; k < c->n_shapes; k++)
        if (!ten_shape_valid(&c->shapes[k]))
            return efmt(err, errlen, RDB_EINVAL, "classes[%zu].shapes[%d]: invalid shape", i, k);
    for (size_t m = 0; m < c->n_members; m++) {
        char where[64];
        snprintf(where, sizeof where, "classes[%zu].members[%zu]", i, m);
        if (check_graph(&c->members[m], where, err, errlen)) return RDB_EINVAL;
        if (c->members[m].n_inputs > c->n_shapes)
            return efmt(err, errlen, RDB_EINVAL, "%s: %d inputs but %d shapes", where,
                        c->members[m].n_inputs, c->n_shapes);
        if (c->members[m].n_outputs != c->members[0].n_outputs)
            return efmt(err, errlen, RDB_EINVAL, "%s: %d outputs, members[0] has %d", where,
                        c->members[m].n_outputs, c->members[0].n_outputs);
    }
    return RDB_OK;
}

static rdb_status check_generator(const rdb_generator *g, char *err, size_t errlen) {
    if (!str_ok(g->tool, RDB_NAME_LEN) || !str_ok(g->version, RDB_NAME_LEN))
        return efmt(err, errlen, RDB_EINVAL, "generator: tool or version not terminated");
    if (g->ops & ~OPS_SET_ALL)
        return efmt(err, errlen, RDB_EINVAL, "generator.ops: unknown operator bits");
    if (g->shard_count > RDB_MAX_SHARDS ||
        (g->shard_count < 64 && g->shard_have >> g->shard_count))
        return efmt(err, errlen, RDB_EINVAL, "generator.shard: shards beyond count %u",
                    (unsigned)g->shard_count);
    if (g->n_notes < 0 || g->n_notes > RDB_MAX_NOTES)
        return efmt(err, errlen, RDB_EINVAL, "generator.notes: %d notes", g->n_notes);
    for (int k = 0; k < g->n_notes; k++)
        if (!str_ok(g->notes[k], RDB_NOTE_LEN))
            return efmt(err, errlen, RDB_EINVAL, "generator.notes[%d]: not terminated", k);
    return RDB_OK;
}

rdb_status rdb_validate(const rdb_file *f, char *err, size_t errlen) {
    if (f->kind != RDB_RULES && f->kind != RDB_CANDIDATES)
        return efmt(err, errlen, RDB_EINVAL, "kind %d invalid", (int)f->kind);
    if (check_generator(&f->gen, err, errlen)) return RDB_EINVAL;
    if (f->kind == RDB_RULES ? f->n_classes != 0 : f->n_rules != 0)
        return efmt(err, errlen, RDB_EINVAL, "a %s file holds %s", rdb_kind_name(f->kind),
                    f->kind == RDB_RULES ? "classes" : "rules");
    for (size_t i = 0; i < f->n_rules; i++)
        if (check_rule(&f->rules[i], i, i ? &f->rules[i - 1] : NULL, err, errlen))
            return RDB_EINVAL;
    for (size_t i = 0; i < f->n_classes; i++)
        if (check_class(&f->classes[i], i, err, errlen)) return RDB_EINVAL;
    return RDB_OK;
}

/* ======================= reader ======================= */

/* Parser state: the cursor, the file being filled, the first error, and
 * the path of the field being read ("rules[3].src.nodes[1]") for messages. */
typedef struct {
    mpr_cursor c;
    rdb_file *f;
    char *err;
    size_t errlen;
    rdb_status rc;
    char path[160];
} reader;

/* Record the first error: "byte N: PATH: what". @return r->rc */
static rdb_status rfail(reader *r, rdb_status code, size_t at, const char *fmt, ...) {
    if (r->rc) return r->rc;
    r->rc = code;
    if (r->err && r->errlen) {
        char what[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        snprintf(r->err, r->errlen, "byte %zu: %s%s%s", at, r->path, r->path[0] ? ": " : "",
                 what);
    }
    return code;
}

/* Turn the cursor's sticky error into the reader's; `what` is the object
 * that was expected. A count beyond the bytes left is reported as
 * truncation: that is its usual cause. */
static rdb_status cfail(reader *r, const char *what) {
    rdb_status code =
        r->c.err == MPR_ETRUNC || r->c.err == MPR_ECOUNT ? RDB_ETRUNC : RDB_ECORRUPT;
    return rfail(r, code, r->c.err_pos, "%s (expected %s)", mpr_strerror(r->c.err), what);
}

/* Append to the path; @return the old length for leave(). */
static size_t enter(reader *r, const char *fmt, ...) {
    size_t old = strlen(r->path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->path + old, sizeof r->path - old, fmt, ap);
    va_end(ap);
    return old;
}

static void leave(reader *r, size_t old) { r->path[old] = '\0'; }

static rdb_status rd_uint(reader *r, uint64_t *v, uint64_t max, const char *what) {
    size_t at = r->c.pos;
    if (mpr_uint(&r->c, v)) return cfail(r, what);
    if (*v > max)
        return rfail(r, RDB_ECORRUPT, at, "%llu out of range (max %llu)", (unsigned long long)*v,
                     (unsigned long long)max);
    return RDB_OK;
}

/* An array header whose count lies in [lo, hi]. */
static rdb_status rd_array(reader *r, uint32_t *n, uint32_t lo, uint32_t hi, const char *what) {
    size_t at = r->c.pos;
    if (mpr_array(&r->c, n)) return cfail(r, what);
    if (*n < lo || *n > hi)
        return rfail(r, RDB_ECORRUPT, at, "%u elements (need %u..%u)", (unsigned)*n,
                     (unsigned)lo, (unsigned)hi);
    return RDB_OK;
}

static rdb_status rd_strcpy(reader *r, char *dst, size_t cap, const char *what) {
    if (mpr_str_copy(&r->c, dst, cap) == MPR_OK) return RDB_OK;
    if (r->c.err == MPR_ERANGE)
        return rfail(r, RDB_ECORRUPT, r->c.err_pos, "%s longer than %zu bytes or holding NUL",
                     what, cap - 1);
    return cfail(r, what);
}

/* A key for messages: printable ASCII only, at most 24 bytes. */
static void show_key(const char *k, uint32_t n, char out[32]) {
    uint32_t m = n < 24 ? n : 24;
    for (uint32_t i = 0; i < m; i++) out[i] = k[i] >= 0x20 && k[i] < 0x7f ? k[i] : '?';
    out[m] = '\0';
}

typedef rdb_status (*field_fn)(reader *r, int key, void *ctx);

static int key_index(const char *const *keys, int n_keys, const char *k, uint32_t n) {
    for (int i = 0; i < n_keys; i++)
        if (strlen(keys[i]) == n && memcmp(keys[i], k, n) == 0) return i;
    return -1;
}

/* Read one key of a map and dispatch it; `seen` catches duplicates. */
static rdb_status map_entry(reader *r, const char *const *keys, int n_keys, int strict,
                            field_fn fn, void *ctx, uint32_t *seen) {
    size_t at = r->c.pos;
    const char *k;
    uint32_t klen;
    char shown[32];
    if (mpr_str(&r->c, &k, &klen)) return cfail(r, "a key string");
    int idx = key_index(keys, n_keys, k, klen);
    show_key(k, klen, shown);
    if (idx < 0 && strict) return rfail(r, RDB_ECORRUPT, at, "unknown key '%s'", shown);
    if (idx < 0) return mpr_skip(&r->c) ? cfail(r, "a value") : RDB_OK;
    if (*seen & 1u << idx) return rfail(r, RDB_ECORRUPT, at, "duplicate key '%s'", shown);
    *seen |= 1u << idx;
    size_t old = enter(r, r->path[0] ? ".%s" : "%s", keys[idx]);
    rdb_status rc = fn(r, idx, ctx);
    leave(r, old);
    return rc;
}

/* A map whose keys are among keys[] in any order. Strict maps must have
 * every key and no other; lax ones (provenance) skip unknown keys and may
 * omit any. */
static rdb_status read_map(reader *r, const char *const *keys, int n_keys, int strict,
                           field_fn fn, void *ctx) {
    uint32_t n, seen = 0;
    if (mpr_map(&r->c, &n)) return cfail(r, "a map");
    for (uint32_t i = 0; i < n; i++)
        if (map_entry(r, keys, n_keys, strict, fn, ctx, &seen)) return r->rc;
    for (int i = 0; strict && i < n_keys; i++)
        if (!(seen & 1u << i))
            return rfail(r, RDB_ECORRUPT, r->c.pos, "missing key '%s'", keys[i]);
    return RDB_OK;
}

/* ---- graphs ---- */

/* A graph being read: refs arrive as value numbers, which depend on
 * "inputs", a key that may come after "nodes"; they are converted at the
 * end. */
typedef struct {
    rg_graph *g;
    uint64_t vin[RG_MAX_NODES][OPS_MAX_ARITY];
    uint64_t vout[RG_MAX_OUTPUTS];
} graph_ctx;

static const char *const graph_keys[] = {"inputs", "nodes", "outputs"};

static rdb_status read_op(reader *r, rg_node *n) {
    char name[32];
    size_t at = r->c.pos;
    if (rd_strcpy(r, name, sizeof name, "an operator name")) return r->rc;
    n->op = ops_by_name(name);
    if (n->op == OP_COUNT) return rfail(r, RDB_ECORRUPT, at, "unknown operator '%s'", name);
    return RDB_OK;
}

static rdb_status read_params(reader *r, rg_node *n) {
    const ops_info *o = &ops_table[n->op];
    uint32_t cnt;
    if (rd_array(r, &cnt, (uint32_t)o->n_params, (uint32_t)o->n_params, "a params array"))
        return r->rc;
    for (int k = 0; k < o->n_params; k++) {
        int64_t v;
        size_t at = r->c.pos;
        if (mpr_int(&r->c, &v)) return cfail(r, "an int parameter");
        if (v < INT32_MIN || v > INT32_MAX)
            return rfail(r, RDB_ECORRUPT, at, "parameter %d (%s) out of int32 range", k,
                         o->pname[k]);
        n->param[k] = (int32_t)v;
    }
    return RDB_OK;
}

static rdb_status read_node(reader *r, graph_ctx *gc, int j) {
    rg_node *n = &gc->g->node[j];
    uint32_t cnt;
    if (rd_array(r, &cnt, 3, 3, "a node [op, params, inputs]")) return r->rc;
    if (read_op(r, n) || read_params(r, n)) return r->rc;
    int arity = ops_table[n->op].arity;
    if (rd_array(r, &cnt, (uint32_t)arity, (uint32_t)arity, "an inputs array")) return r->rc;
    for (int k = 0; k < arity; k++)
        if (rd_uint(r, &gc->vin[j][k], RG_MAX_REFS, "an input ref")) return r->rc;
    return RDB_OK;
}

static rdb_status graph_field(reader *r, int key, void *ctx) {
    graph_ctx *gc = ctx;
    uint64_t v;
    uint32_t n;
    switch (key) {
    case 0:
        if (rd_uint(r, &v, RG_MAX_INPUTS, "the number of inputs")) return r->rc;
        gc->g->n_inputs = (int)v;
        return RDB_OK;
    case 1:
        if (rd_array(r, &n, 0, RG_MAX_NODES, "an array of nodes")) return r->rc;
        for (uint32_t j = 0; j < n; j++) {
            size_t old = enter(r, "[%u]", (unsigned)j);
            rdb_status rc = read_node(r, gc, (int)j);
            leave(r, old);
            if (rc) return rc;
        }
        gc->g->n_nodes = (int)n;
        return RDB_OK;
    default:
        if (rd_array(r, &n, 1, RG_MAX_OUTPUTS, "an array of outputs")) return r->rc;
        for (uint32_t k = 0; k < n; k++)
            if (rd_uint(r, &gc->vout[k], RG_MAX_REFS, "an output ref")) return r->rc;
        gc->g->n_outputs = (int)n;
        return RDB_OK;
    }
}

/* Value number -> rg_ref; a node beyond RG_MAX_NODES is reported here,
 * everything else (forward refs, missing inputs) by rg_validate. */
static rdb_status to_ref(reader *r, size_t at, uint64_t v, int n_inputs, rg_ref *ref) {
    if (v < (uint64_t)n_inputs) {
        *ref = RG_IN(v);
        return RDB_OK;
    }
    if (v - (uint64_t)n_inputs >= RG_MAX_NODES)
        return rfail(r, RDB_ECORRUPT, at, "ref %llu beyond the last node",
                     (unsigned long long)v);
    *ref = RG_NODE(v - (uint64_t)n_inputs);
    return RDB_OK;
}

static rdb_status read_graph(reader *r, rg_graph *g) {
    graph_ctx gc;
    size_t at = r->c.pos;
    char why[RG_ERRLEN];
    memset(&gc, 0, sizeof gc);
    memset(g, 0, sizeof *g);
    gc.g = g;
    if (read_map(r, graph_keys, 3, 1, graph_field, &gc)) return r->rc;
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < ops_table[g->node[j].op].arity; k++)
            if (to_ref(r, at, gc.vin[j][k], g->n_inputs, &g->node[j].in[k])) return r->rc;
    for (int k = 0; k < g->n_outputs; k++)
        if (to_ref(r, at, gc.vout[k], g->n_inputs, &g->out[k])) return r->rc;
    if (rg_validate(g, why, sizeof why) != RG_OK)
        return rfail(r, RDB_ECORRUPT, at, "%s", why);
    return RDB_OK;
}

/* ---- rules ---- */

static const char *const prover_keys[] = {"name", "version", "millis", "status"};
static const char *const rule_keys[] = {"id", "src", "dst", "prover"};

static rdb_status read_status(reader *r, rdb_proof *p) {
    char s[16];
    size_t at = r->c.pos;
    if (rd_strcpy(r, s, sizeof s, "a status string")) return r->rc;
    for (int i = 0; i < RDB_PROOF_COUNT; i++)
        if (strcmp(s, proof_names[i]) == 0) {
            *p = (rdb_proof)i;
            return RDB_OK;
        }
    return rfail(r, RDB_ECORRUPT, at, "unknown status '%s'", s);
}

static rdb_status prover_field(reader *r, int key, void *ctx) {
    rdb_prover *p = ctx;
    switch (key) {
    case 0: return rd_strcpy(r, p->name, sizeof p->name, "the prover name");
    case 1: return rd_strcpy(r, p->version, sizeof p->version, "the prover version");
    case 2: return rd_uint(r, &p->millis, UINT64_MAX, "milliseconds");
    default: return read_status(r, &p->status);
    }
}

static rdb_status rule_field(reader *r, int key, void *ctx) {
    rdb_rule *ru = ctx;
    switch (key) {
    case 0: return rd_uint(r, &ru->id, UINT64_MAX, "a rule id");
    case 1: return read_graph(r, &ru->src);
    case 2: return read_graph(r, &ru->dst);
    default: return read_map(r, prover_keys, 4, 1, prover_field, &ru->prover);
    }
}

static rdb_status read_rules(reader *r) {
    rdb_file *f = r->f;
    uint32_t n;
    if (mpr_array(&r->c, &n)) return cfail(r, "an array of rules");
    for (uint32_t i = 0; i < n; i++) {
        /* Grown as rules arrive, never from the claimed count. */
        rdb_rule *ru = reserve(f->rules, &f->cap_rules, f->n_rules, sizeof *ru);
        if (!ru) return rfail(r, RDB_ENOMEM, r->c.pos, "out of memory");
        f->rules = ru;
        ru = &f->rules[f->n_rules];
        memset(ru, 0, sizeof *ru);
        size_t old = enter(r, "[%u]", (unsigned)i);
        rdb_status rc = read_map(r, rule_keys, 4, 1, rule_field, ru);
        leave(r, old);
        if (rc) return rc;
        f->n_rules++;
    }
    return RDB_OK;
}

/* ---- classes ---- */

static const char *const class_keys[] = {"fingerprint", "members", "count", "shapes"};

/* One SHAPE: 0..TEN_MAX_RANK dims; the range check is ten_shape_valid's. */
static rdb_status read_shape(reader *r, ten_shape *s) {
    uint32_t n;
    size_t at = r->c.pos;
    if (rd_array(r, &n, 0, TEN_MAX_RANK, "an array of dims")) return r->rc;
    s->rank = (int)n;
    for (uint32_t d = 0; d < n; d++) {
        uint64_t v;
        if (rd_uint(r, &v, TEN_MAX_DIM, "a dim")) return r->rc;
        s->dim[d] = (int32_t)v;
    }
    if (!ten_shape_valid(s)) return rfail(r, RDB_ECORRUPT, at, "invalid shape");
    return RDB_OK;
}

static rdb_status read_shapes(reader *r, rdb_class *c) {
    uint32_t n;
    if (rd_array(r, &n, 0, RG_MAX_INPUTS, "an array of shapes")) return r->rc;
    for (uint32_t k = 0; k < n; k++) {
        size_t old = enter(r, "[%u]", (unsigned)k);
        rdb_status rc = read_shape(r, &c->shapes[k]);
        leave(r, old);
        if (rc) return rc;
        c->n_shapes++;
    }
    return RDB_OK;
}

static rdb_status read_fingerprint(reader *r, rdb_class *c) {
    const uint8_t *p;
    uint32_t n;
    if (mpr_bin(&r->c, &p, &n)) return cfail(r, "a bin fingerprint");
    c->fp = malloc(n ? n : 1);
    if (!c->fp) return rfail(r, RDB_ENOMEM, r->c.pos, "out of memory");
    memcpy(c->fp, p, n);
    c->fp_len = n;
    return RDB_OK;
}

static rdb_status read_members(reader *r, rdb_class *c) {
    uint32_t n;
    if (mpr_array(&r->c, &n)) return cfail(r, "an array of graphs");
    for (uint32_t m = 0; m < n; m++) {
        rg_graph *g = reserve(c->members, &c->cap_members, c->n_members, sizeof *g);
        if (!g) return rfail(r, RDB_ENOMEM, r->c.pos, "out of memory");
        c->members = g;
        size_t old = enter(r, "[%u]", (unsigned)m);
        rdb_status rc = read_graph(r, &c->members[c->n_members]);
        leave(r, old);
        if (rc) return rc;
        c->n_members++;
    }
    return RDB_OK;
}

static rdb_status class_field(reader *r, int key, void *ctx) {
    rdb_class *c = ctx;
    switch (key) {
    case 0: return read_fingerprint(r, c);
    case 1: return read_members(r, c);
    case 3: return read_shapes(r, c);
    default: return rd_uint(r, &c->count, UINT64_MAX, "a count");
    }
}

static rdb_status read_classes(reader *r) {
    rdb_file *f = r->f;
    uint32_t n;
    if (mpr_array(&r->c, &n)) return cfail(r, "an array of classes");
    for (uint32_t i = 0; i < n; i++) {
        rdb_class *c = reserve(f->classes, &f->cap_classes, f->n_classes, sizeof *c);
        if (!c) return rfail(r, RDB_ENOMEM, r->c.pos, "out of memory");
        f->classes = c;
        c = &f->classes[f->n_classes++]; /* counted now so rdb_free sees partial ones */
        memset(c, 0, sizeof *c);
        size_t old = enter(r, "[%u]", (unsigned)i);
        rdb_status rc = read_map(r, class_keys, 4, 1, class_field, c);
        leave(r, old);
        if (rc) return rc;
    }
    return RDB_OK;
}

/* ---- generator ---- */

static const char *const gen_keys[] = {"tool",  "version", "max_ops", "seed", "ops",
                                       "shard", "counts",  "timings", "notes"};
static const char *const shard_keys[] = {"count", "have"};
static const char *const count_keys[] = {"graphs", "classes", "proved", "failed", "pruned"};
static const char *const timing_keys[] = {"wall_ms", "cpu_ms"};

/* A lax map of uints: ctx is an array of destinations, one per key. */
static rdb_status uint_field(reader *r, int key, void *ctx) {
    uint64_t **slot = ctx;
    return rd_uint(r, slot[key], UINT64_MAX, "a uint");
}

static rdb_status read_ops(reader *r, ops_set *ops) {
    uint32_t n;
    if (mpr_array(&r->c, &n)) return cfail(r, "an array of operator names");
    for (uint32_t i = 0; i < n; i++) {
        rg_node node;
        if (read_op(r, &node)) return r->rc;
        *ops |= OPS_SET_BIT(node.op);
    }
    return RDB_OK;
}

static rdb_status shard_field(reader *r, int key, void *ctx) {
    rdb_generator *g = ctx;
    uint64_t v;
    uint32_t n;
    if (key == 0) {
        if (rd_uint(r, &v, RDB_MAX_SHARDS, "a shard count")) return r->rc;
        g->shard_count = (uint32_t)v;
        return RDB_OK;
    }
    g->shard_have = 0;
    if (mpr_array(&r->c, &n)) return cfail(r, "an array of shard numbers");
    for (uint32_t i = 0; i < n; i++) {
        if (rd_uint(r, &v, RDB_MAX_SHARDS - 1, "a shard number")) return r->rc;
        g->shard_have |= (uint64_t)1 << v;
    }
    return RDB_OK;
}

static rdb_status read_notes(reader *r, rdb_generator *g) {
    uint32_t n;
    if (rd_array(r, &n, 0, RDB_MAX_NOTES, "an array of notes")) return r->rc;
    for (uint32_t i = 0; i < n; i++)
        if (rd_strcpy(r, g->notes[i], RDB_NOTE_LEN, "a note")) return r->rc;
    g->n_notes = (int)n;
    return RDB_OK;
}

static rdb_status gen_field(reader *r, int key, void *ctx) {
    rdb_generator *g = ctx;
    uint64_t v;
    uint64_t *counts[] = {&g->counts.graphs, &g->counts.classes, &g->counts.proved,
                          &g->counts.failed, &g->counts.pruned};
    uint64_t *timings[] = {&g->timings.wall_ms, &g->timings.cpu_ms};
    switch (key) {
    case 0: return rd_strcpy(r, g->tool, sizeof g->tool, "the tool name");
    case 1: return rd_strcpy(r, g->version, sizeof g->version, "the tool version");
    case 2:
        if (rd_uint(r, &v, UINT32_MAX, "max_ops")) return r->rc;
        g->max_ops = (uint32_t)v;
        return RDB_OK;
    case 3: return rd_uint(r, &g->seed, UINT64_MAX, "a seed");
    case 4: return read_ops(r, &g->ops);
    case 5: return read_map(r, shard_keys, 2, 0, shard_field, g);
    case 6: return read_map(r, count_keys, 5, 0, uint_field, counts);
    case 7: return read_map(r, timing_keys, 2, 0, uint_field, timings);
    default: return read_notes(r, g);
    }
}

/* ---- top level ---- */

/* The next key must be `name` (the top-level order is fixed). */
static rdb_status expect_key(reader *r, const char *name) {
    size_t at = r->c.pos;
    const char *k;
    uint32_t n;
    if (mpr_str(&r->c, &k, &n)) return cfail(r, "a key string");
    if (n != strlen(name) || memcmp(k, name, n) != 0)
        return rfail(r, RDB_ECORRUPT, at, "expected key '%s' here", name);
    return RDB_OK;
}

static void hex16(const uint8_t d[16], char out[33]) {
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* magic, then version: checked before the rest, whose layout may differ
 * in other versions. */
static rdb_status read_magic_version(reader *r) {
    const char *s;
    uint32_t n;
    uint64_t v;
    size_t at = r->c.pos;
    if (mpr_str(&r->c, &s, &n)) return cfail(r, "the key \"magic\"");
    if (n != 5 || memcmp(s, "magic", 5) != 0)
        return rfail(r, RDB_ECORRUPT, at, "not a tasodb file (no \"magic\" key)");
    at = r->c.pos;
    if (mpr_str(&r->c, &s, &n)) return cfail(r, "the magic string");
    if (n != strlen(RDB_MAGIC) || memcmp(s, RDB_MAGIC, n) != 0)
        return rfail(r, RDB_ECORRUPT, at, "not a tasodb file (magic is not \"%s\")", RDB_MAGIC);
    if (expect_key(r, "version")) return r->rc;
    at = r->c.pos;
    if (mpr_uint(&r->c, &v)) return cfail(r, "a version number");
    if (v != RDB_VERSION)
        return rfail(r, RDB_EVERSION, at, "format version %llu; this build reads version %d",
                     (unsigned long long)v, RDB_VERSION);
    return RDB_OK;
}

static rdb_status read_kind_digest(reader *r) {
    char kind[16], mine[33], theirs[33];
    const uint8_t *d;
    uint32_t n;
    size_t at = r->c.pos;
    if (expect_key(r, "kind") || rd_strcpy(r, kind, sizeof kind, "the kind")) return r->rc;
    if (strcmp(kind, "rules") == 0) r->f->kind = RDB_RULES;
    else if (strcmp(kind, "candidates") == 0) r->f->kind = RDB_CANDIDATES;
    else return rfail(r, RDB_ECORRUPT, at, "unknown kind '%s'", kind);
    if (expect_key(r, "opspecs")) return r->rc;
    at = r->c.pos;
    if (mpr_bin(&r->c, &d, &n)) return cfail(r, "a bin digest");
    if (n != 16) return rfail(r, RDB_ECORRUPT, at, "opspecs digest of %u bytes, not 16", n);
    memcpy(r->f->digest, d, 16);
    uint8_t ours[16];
    ops_digest(ours);
    if (memcmp(ours, d, 16) != 0) {
        hex16(d, theirs);
        hex16(ours, mine);
        return rfail(r, RDB_EDIGEST, at, "made from other opspecs (digest %s, this build %s)",
                     theirs, mine);
    }
    return RDB_OK;
}

static rdb_status read_top(reader *r) {
    uint32_t n;
    size_t at = r->c.pos;
    if (mpr_map(&r->c, &n)) {
        if (r->c.err == MPR_ETYPE)
            return rfail(r, RDB_ECORRUPT, at, "not a tasodb file (not a map)");
        return cfail(r, "the top-level map");
    }
    if (n < 2) return rfail(r, RDB_ECORRUPT, at, "not a tasodb file (map of %u keys)", n);
    if (read_magic_version(r)) return r->rc;
    if (n != 6) return rfail(r, RDB_ECORRUPT, at, "top-level map has %u keys, not 6", n);
    if (read_kind_digest(r) || expect_key(r, "generator")) return r->rc;
    size_t old = enter(r, "generator");
    rdb_status rc = read_map(r, gen_keys, 9, 0, gen_field, &r->f->gen);
    leave(r, old);
    if (rc) return rc;
    int rules = r->f->kind == RDB_RULES;
    if (expect_key(r, rules ? "rules" : "classes")) return r->rc;
    old = enter(r, rules ? "rules" : "classes");
    rc = rules ? read_rules(r) : read_classes(r);
    leave(r, old);
    return rc;
}

rdb_status rdb_read_mem(const uint8_t *buf, size_t len, rdb_file **out, char *err,
                        size_t errlen) {
    reader r;
    char why[RDB_ERRLEN];
    memset(&r, 0, sizeof r);
    mpr_init(&r.c, buf, len);
    r.err = err;
    r.errlen = errlen;
    *out = NULL;
    if (err && errlen) err[0] = '\0';
    r.f = calloc(1, sizeof *r.f);
    if (!r.f) return efmt(err, errlen, RDB_ENOMEM, "out of memory");
    if (len == 0) rfail(&r, RDB_ETRUNC, 0, "empty file");
    else if (read_top(&r) == RDB_OK && mpr_left(&r.c))
        rfail(&r, RDB_ECORRUPT, r.c.pos, "%zu trailing bytes after the top-level map",
              mpr_left(&r.c));
    if (!r.rc && rdb_validate(r.f, why, sizeof why) != RDB_OK)
        rfail(&r, RDB_ECORRUPT, len, "%s", why);
    if (r.rc) {
        rdb_free(r.f);
        return r.rc;
    }
    *out = r.f;
    return RDB_OK;
}

/* The whole file in a malloc'd buffer. */
static rdb_status slurp(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen) {
    struct stat st;
    rdb_status rc = RDB_OK;
    size_t got = 0;
    *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return efmt(err, errlen, RDB_EIO, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = efmt(err, errlen, RDB_EIO, "%s: %s", path, strerror(errno));
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > RDB_MAX_FILE) {
        rc = efmt(err, errlen, RDB_EIO, "%s: %s", path,
                  S_ISREG(st.st_mode) ? "larger than 1 GiB" : "not a regular file");
        goto cleanup;
    }
    *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
    if (!*buf) {
        rc = efmt(err, errlen, RDB_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    while (got < (size_t)st.st_size) {
        ssize_t k = read(fd, *buf + got, (size_t)st.st_size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            rc = efmt(err, errlen, RDB_EIO, "%s: %s", path, strerror(errno));
            goto cleanup;
        }
        if (k == 0) break; /* shrank meanwhile: parse what is there */
        got += (size_t)k;
    }
    *len = got;
cleanup:
    if (rc != RDB_OK) {
        free(*buf);
        *buf = NULL;
    }
    close(fd);
    return rc;
}

rdb_status rdb_read(const char *path, rdb_file **out, char *err, size_t errlen) {
    uint8_t *buf;
    size_t len = 0;
    char why[RDB_ERRLEN];
    *out = NULL;
    rdb_status rc = slurp(path, &buf, &len, err, errlen);
    if (rc != RDB_OK) return rc;
    rc = rdb_read_mem(buf, len, out, why, sizeof why);
    if (rc != RDB_OK) efmt(err, errlen, rc, "%s: %s", path, why);
    free(buf);
    return rc;
}

/* ======================= writer ======================= */

static int pk_str(msgpack_packer *pk, const char *s) {
    size_t n = strlen(s);
    return msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, s, n);
}

static uint32_t value_number(const rg_graph *g, rg_ref r) {
    return RG_IS_INPUT(r) ? r : (uint32_t)(g->n_inputs + RG_NODE_INDEX(r));
}

static int pk_node(msgpack_packer *pk, const rg_graph *g, const rg_node *n) {
    const ops_info *o = &ops_table[n->op];
    if (msgpack_pack_array(pk, 3) || pk_str(pk, o->name) ||
        msgpack_pack_array(pk, (size_t)o->n_params))
        return -1;
    for (int k = 0; k < o->n_params; k++)
        if (msgpack_pack_int32(pk, n->param[k])) return -1;
    if (msgpack_pack_array(pk, (size_t)o->arity)) return -1;
    for (int k = 0; k < o->arity; k++)
        if (msgpack_pack_uint32(pk, value_number(g, n->in[k]))) return -1;
    return 0;
}

static int pk_graph(msgpack_packer *pk, const rg_graph *g) {
    if (msgpack_pack_map(pk, 3) || pk_str(pk, "inputs") ||
        msgpack_pack_uint32(pk, (uint32_t)g->n_inputs) || pk_str(pk, "nodes") ||
        msgpack_pack_array(pk, (size_t)g->n_nodes))
        return -1;
    for (int j = 0; j < g->n_nodes; j++)
        if (pk_node(pk, g, &g->node[j])) return -1;
    if (pk_str(pk, "outputs") || msgpack_pack_array(pk, (size_t)g->n_outputs)) return -1;
    for (int k = 0; k < g->n_outputs; k++)
        if (msgpack_pack_uint32(pk, value_number(g, g->out[k]))) return -1;
    return 0;
}

static int pk_kv_u64(msgpack_packer *pk, const char *k, uint64_t v) {
    return pk_str(pk, k) || msgpack_pack_uint64(pk, v);
}

static int pk_shard(msgpack_packer *pk, const rdb_generator *g) {
    size_t n = 0;
    for (int k = 0; k < RDB_MAX_SHARDS; k++) n += g->shard_have >> k & 1;
    if (pk_str(pk, "shard") || msgpack_pack_map(pk, 2) ||
        pk_kv_u64(pk, "count", g->shard_count) || pk_str(pk, "have") ||
        msgpack_pack_array(pk, n))
        return -1;
    for (int k = 0; k < RDB_MAX_SHARDS; k++)
        if ((g->shard_have >> k & 1) && msgpack_pack_uint32(pk, (uint32_t)k)) return -1;
    return 0;
}

static int pk_ops(msgpack_packer *pk, ops_set ops) {
    size_t n = 0;
    for (int i = 0; i < OP_COUNT; i++) n += ops >> i & 1;
    if (pk_str(pk, "ops") || msgpack_pack_array(pk, n)) return -1;
    for (int i = 0; i < OP_COUNT; i++)
        if ((ops >> i & 1) && pk_str(pk, ops_table[i].name)) return -1;
    return 0;
}

static int pk_generator(msgpack_packer *pk, const rdb_generator *g) {
    if (pk_str(pk, "generator") || msgpack_pack_map(pk, 9) || pk_str(pk, "tool") ||
        pk_str(pk, g->tool) || pk_str(pk, "version") || pk_str(pk, g->version) ||
        pk_kv_u64(pk, "max_ops", g->max_ops) || pk_kv_u64(pk, "seed", g->seed) ||
        pk_ops(pk, g->ops) || pk_shard(pk, g) || pk_str(pk, "counts") ||
        msgpack_pack_map(pk, 5) || pk_kv_u64(pk, "graphs", g->counts.graphs) ||
        pk_kv_u64(pk, "classes", g->counts.classes) ||
        pk_kv_u64(pk, "proved", g->counts.proved) ||
        pk_kv_u64(pk, "failed", g->counts.failed) ||
        pk_kv_u64(pk, "pruned", g->counts.pruned) || pk_str(pk, "timings") ||
        msgpack_pack_map(pk, 2) || pk_kv_u64(pk, "wall_ms", g->timings.wall_ms) ||
        pk_kv_u64(pk, "cpu_ms", g->timings.cpu_ms) || pk_str(pk, "notes") ||
        msgpack_pack_array(pk, (size_t)g->n_notes))
        return -1;
    for (int k = 0; k < g->n_notes; k++)
        if (pk_str(pk, g->notes[k])) return -1;
    return 0;
}

static int pk_rule(msgpack_packer *pk, const rdb_rule *r) {
    return msgpack_pack_map(pk, 4) || pk_kv_u64(pk, "id", r->id) || pk_str(pk, "src") ||
           pk_graph(pk, &r->src) || pk_str(pk, "dst") || pk_graph(pk, &r->dst) ||
           pk_str(pk, "prover") || msgpack_pack_map(pk, 4) || pk_str(pk, "name") ||
           pk_str(pk, r->prover.name) || pk_str(pk, "version") ||
           pk_str(pk, r->prover.version) || pk_kv_u64(pk, "millis", r->prover.millis) ||
           pk_str(pk, "status") || pk_str(pk, proof_names[r->prover.status]);
}

static int pk_class(msgpack_packer *pk, const rdb_class *c) {
    if (msgpack_pack_map(pk, 4) || pk_str(pk, "fingerprint") ||
        msgpack_pack_bin(pk, c->fp_len) || msgpack_pack_bin_body(pk, c->fp, c->fp_len) ||
        pk_str(pk, "shapes") || msgpack_pack_array(pk, (size_t)c->n_shapes))
        return -1;
    for (int k = 0; k < c->n_shapes; k++) {
        if (msgpack_pack_array(pk, (size_t)c->shapes[k].rank)) return -1;
        for (int d = 0; d < c->shapes[k].rank; d++)
            if (msgpack_pack_uint32(pk, (uint32_t)c->shapes[k].dim[d])) return -1;
    }
    if (pk_str(pk, "members") || msgpack_pack_array(pk, c->n_members)) return -1;
    for (size_t m = 0; m < c->n_members; m++)
        if (pk_graph(pk, &c->members[m])) return -1;
    return pk_kv_u64(pk, "count", c->count);
}

static int pk_file(msgpack_packer *pk, const rdb_file *f) {
    int rules = f->kind == RDB_RULES;
    if (msgpack_pack_map(pk, 6) || pk_str(pk, "magic") || pk_str(pk, RDB_MAGIC) ||
        pk_kv_u64(pk, "version", RDB_VERSION) || pk_str(pk, "kind") ||
        pk_str(pk, rdb_kind_name(f->kind)) || pk_str(pk, "opspecs") ||
        msgpack_pack_bin(pk, 16) || msgpack_pack_bin_body(pk, f->digest, 16) ||
        pk_generator(pk, &f->gen) || pk_str(pk, rules ? "rules" : "classes") ||
        msgpack_pack_array(pk, rules ? f->n_rules : f->n_classes))
        return -1;
    for (size_t i = 0; rules && i < f->n_rules; i++)
        if (pk_rule(pk, &f->rules[i])) return -1;
    for (size_t i = 0; !rules && i < f->n_classes; i++)
        if (pk_class(pk, &f->classes[i])) return -1;
    return 0;
}

rdb_status rdb_write_mem(const rdb_file *f, uint8_t **buf, size_t *len, char *err,
                         size_t errlen) {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    *buf = NULL;
    *len = 0;
    if (rdb_validate(f, err, errlen) != RDB_OK) return RDB_EINVAL;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    if (pk_file(&pk, f) != 0) {
        msgpack_sbuffer_destroy(&sb);
        return efmt(err, errlen, RDB_ENOMEM, "out of memory while encoding");
    }
    *len = sb.size;
    *buf = (uint8_t *)msgpack_sbuffer_release(&sb); /* malloc'd by the sbuffer */
    return RDB_OK;
}

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* fsync the directory holding path, so the rename itself is durable. Best
 * effort: some file systems refuse fsync on directories. */
static void sync_dir(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

/* Write buf to path.tmp.PID, fsync, rename over path; the temp file never
 * survives a failure. */
static rdb_status write_atomic(const char *path, const uint8_t *buf, size_t len, char *err,
                               size_t errlen) {
    rdb_status rc = RDB_OK;
    size_t tlen = strlen(path) + 32;
    char *tmp = malloc(tlen);
    if (!tmp) return efmt(err, errlen, RDB_ENOMEM, "%s: out of memory", path);
    snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = efmt(err, errlen, RDB_EIO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        goto cleanup;
    }
    if (write_all(fd, buf, len) != 0 || fsync(fd) != 0)
        rc = efmt(err, errlen, RDB_EIO, "%s: writing %s: %s", path, tmp, strerror(errno));
    if (close(fd) != 0 && rc == RDB_OK)
        rc = efmt(err, errlen, RDB_EIO, "%s: closing %s: %s", path, tmp, strerror(errno));
    if (rc == RDB_OK && rename(tmp, path) != 0)
        rc = efmt(err, errlen, RDB_EIO, "%s: renaming %s: %s", path, tmp, strerror(errno));
    if (rc != RDB_OK) unlink(tmp);
    else sync_dir(path);
cleanup:
    free(tmp);
    return rc;
}

rdb_status rdb_write(const char *path, const rdb_file *f, char *err, size_t errlen) {
    uint8_t *buf = NULL;
    size_t len;
    char why[RDB_ERRLEN];
    rdb_status rc = rdb_write_mem(f, &buf, &len, why, sizeof why);
    if (rc != RDB_OK) efmt(err, errlen, rc, "%s: %s", path, why);
    else rc = write_atomic(path, buf, len, err, errlen);
    free(buf);
    return rc;
}

/* ======================= merge ======================= */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static void merge_str(char *dst, const char *a, const char *b) {
    const char *s = !a[0] ? b : !b[0] ? a : strcmp(a, b) == 0 ? a : "mixed";
    snprintf(dst, RDB_NAME_LEN, "%s", s);
}

static int cmp_str_ptr(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Union of both note lists, sorted, duplicates dropped, first 16 kept. */
static void merge_notes(rdb_generator *out, const rdb_generator *a, const rdb_generator *b) {
    const char *all[2 * RDB_MAX_NOTES];
    int n = 0;
    for (int k = 0; k < a->n_notes; k++) all[n++] = a->notes[k];
    for (int k = 0; k < b->n_notes; k++) all[n++] = b->notes[k];
    qsort(all, (size_t)n, sizeof *all, cmp_str_ptr);
    out->n_notes = 0;
    for (int k = 0; k < n && out->n_notes < RDB_MAX_NOTES; k++)
        if (k == 0 || strcmp(all[k], all[k - 1]) != 0)
            snprintf(out->notes[out->n_notes++], RDB_NOTE_LEN, "%s", all[k]);
}

/* Symmetric in a and b, so merge order never shows in the output. */
static void merge_generator(rdb_generator *o, const rdb_generator *a, const rdb_generator *b) {
    merge_str(o->tool, a->tool, b->tool);
    merge_str(o->version, a->version, b->version);
    o->max_ops = a->max_ops > b->max_ops ? a->max_ops : b->max_ops;
    o->seed = a->seed == b->seed ? a->seed : 0;
    o->ops = a->ops | b->ops;
    o->shard_count = a->shard_count == b->shard_count ? a->shard_count : 0;
    o->shard_have = o->shard_count ? a->shard_have | b->shard_have : 0;
    o->counts.graphs = sat_add(a->counts.graphs, b->counts.graphs);
    o->counts.classes = sat_add(a->counts.classes, b->counts.classes);
    o->counts.proved = sat_add(a->counts.proved, b->counts.proved);
    o->counts.failed = sat_add(a->counts.failed, b->counts.failed);
    o->counts.pruned = sat_add(a->counts.pruned, b->counts.pruned);
    o->timings.wall_ms = sat_add(a->timings.wall_ms, b->timings.wall_ms);
    o->timings.cpu_ms = sat_add(a->timings.cpu_ms, b->timings.cpu_ms);
    merge_notes(o, a, b);
}

/* Better prover records first: proved, then faster, then by name. */
static int cmp_prover(const rdb_prover *a, const rdb_prover *b) {
    if (a->status != b->status) return a->status < b->status ? -1 : 1;
    if (a->millis != b->millis) return a->millis < b->millis ? -1 : 1;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->version, b->version);
}

static int cmp_rule_content(const rdb_rule *a, const rdb_rule *b) {
    int c = rg_compare(&a->src, &b->src);
    return c ? c : rg_compare(&a->dst, &b->dst);
}

static int cmp_rule_ptr(const void *x, const void *y) {
    const rdb_rule *a = *(const rdb_rule *const *)x, *b = *(const rdb_rule *const *)y;
    int c = cmp_rule_content(a, b);
    return c ? c : cmp_prover(&a->prover, &b->prover);
}

static rdb_status merge_rules(rdb_file *o, const rdb_file *a, const rdb_file *b) {
    size_t n = a->n_rules + b->n_rules, k = 0;
    rdb_status rc = RDB_OK;
    const rdb_rule **all = malloc((n ? n : 1) * sizeof *all);
    if (!all) return RDB_ENOMEM;
    for (size_t i = 0; i < a->n_rules; i++) all[k++] = &a->rules[i];
    for (size_t i = 0; i < b->n_rules; i++) all[k++] = &b->rules[i];
    qsort(all, n, sizeof *all, cmp_rule_ptr);
    for (size_t i = 0; i < n && rc == RDB_OK; i++)
        if (i == 0 || cmp_rule_content(all[i], all[i - 1]) != 0)
            rc = rdb_add_rule(o, &all[i]->src, &all[i]->dst, &all[i]->prover);
    free(all);
    return rc;
}

static int cmp_fp(const rdb_class *a, const rdb_class *b) {
    int c = memcmp(a->fp, b->fp, a->fp_len < b->fp_len ? a->fp_len : b->fp_len);
    if (c) return c;
    return (a->fp_len > b->fp_len) - (a->fp_len < b->fp_len);
}

/* Classes merge when fingerprints are byte-identical, the members have as
 * many outputs (the same bytes could split into outputs differently) and
 * the input shapes agree. */
static int cmp_class_key(const rdb_class *a, const rdb_class *b) {
    int c = cmp_fp(a, b);
    if (c) return c;
    int na = a->members[0].n_outputs, nb = b->members[0].n_outputs;
    if (na != nb) return (na > nb) - (na < nb);
    if (a->n_shapes != b->n_shapes) return (a->n_shapes > b->n_shapes) - (a->n_shapes < b->n_shapes);
    for (int k = 0; k < a->n_shapes; k++) {
        const ten_shape *x = &a->shapes[k], *y = &b->shapes[k];
        if (x->rank != y->rank) return (x->rank > y->rank) - (x->rank < y->rank);
        for (int d = 0; d < x->rank; d++)
            if (x->dim[d] != y->dim[d]) return (x->dim[d] > y->dim[d]) - (x->dim[d] < y->dim[d]);
    }
    return 0;
}

static int cmp_class_ptr(const void *x, const void *y) {
    return cmp_class_key(*(const rdb_class *const *)x, *(const rdb_class *const *)y);
}

static int cmp_graph(const void *x, const void *y) { return rg_compare(x, y); }

/* Sort and deduplicate graphs in place. @return the new count. */
static size_t sort_unique(rg_graph *g, size_t n) {
    size_t k = 0;
    qsort(g, n, sizeof *g, cmp_graph);
    for (size_t i = 0; i < n; i++)
        if (k == 0 || !rg_equal(&g[i], &g[k - 1])) g[k++] = g[i];
    return k;
}

/* One output class from the group cl[0..n-1] of equal fingerprints. */
static rdb_status merge_group(rdb_file *o, const rdb_class *const *cl, size_t n) {
    rdb_class *c;
    uint64_t count = 0;
    rdb_status rc = rdb_add_class(o, cl[0]->fp, cl[0]->fp_len, 0, &c);
    if (rc != RDB_OK) return rc;
    c->n_shapes = cl[0]->n_shapes; /* equal in the group: part of the key */
    memcpy(c->shapes, cl[0]->shapes, sizeof c->shapes);
    for (size_t i = 0; i < n; i++) {
        count = sat_add(count, cl[i]->count);
        for (size_t m = 0; m < cl[i]->n_members && rc == RDB_OK; m++)
            rc = rdb_class_add_member(c, &cl[i]->members[m]);
    }
    c->count = count;
    c->n_members = sort_unique(c->members, c->n_members);
    return rc;
}

static rdb_status merge_classes(rdb_file *o, const rdb_file *a, const rdb_file *b) {
    size_t n = a->n_classes + b->n_classes, k = 0;
    rdb_status rc = RDB_OK;
    const rdb_class **all = malloc((n ? n : 1) * sizeof *all);
    if (!all) return RDB_ENOMEM;
    for (size_t i = 0; i < a->n_classes; i++) all[k++] = &a->classes[i];
    for (size_t i = 0; i < b->n_classes; i++) all[k++] = &b->classes[i];
    qsort(all, n, sizeof *all, cmp_class_ptr);
    for (size_t i = 0, j; i < n && rc == RDB_OK; i = j) {
        for (j = i + 1; j < n && cmp_class_key(all[i], all[j]) == 0; j++) continue;
        rc = merge_group(o, all + i, j - i);
    }
    free(all);
    return rc;
}

rdb_status rdb_merge(const rdb_file *a, const rdb_file *b, rdb_file **out, char *err,
                     size_t errlen) {
    rdb_status rc;
    char why[RDB_ERRLEN];
    *out = NULL;
    if (rdb_validate(a, why, sizeof why) != RDB_OK || rdb_validate(b, why, sizeof why) != RDB_OK)
        return efmt(err, errlen, RDB_EINVAL, "%s", why);
    if (a->kind != b->kind)
        return efmt(err, errlen, RDB_EINVAL, "cannot merge a %s file with a %s file",
                    rdb_kind_name(a->kind), rdb_kind_name(b->kind));
    if (memcmp(a->digest, b->digest, 16) != 0)
        return efmt(err, errlen, RDB_EDIGEST, "files made from different opspecs");
    rdb_file *o = rdb_new(a->kind);
    if (!o) return efmt(err, errlen, RDB_ENOMEM, "out of memory");
    memcpy(o->digest, a->digest, 16);
    merge_generator(&o->gen, &a->gen, &b->gen);
    rc = a->kind == RDB_RULES ? merge_rules(o, a, b) : merge_classes(o, a, b);
    if (rc != RDB_OK) {
        rdb_free(o);
        return efmt(err, errlen, rc, "out of memory");
    }
    *out = o;
    return RDB_OK;
}

/* ======================= diff ======================= */

/* A rule or class reduced to its content, with its index. A class's
 * members are sorted and deduplicated so sets compare element-wise. */
typedef struct {
    const rdb_rule *rule;
    const rdb_class *cls;
    rg_graph *set;
    size_t n_set;
    size_t idx;
} diff_item;

static int cmp_item(const void *x, const void *y) {
    const diff_item *a = x, *b = y;
    if (a->rule) return cmp_rule_content(a->rule, b->rule);
    int c = cmp_fp(a->cls, b->cls);
    for (size_t i = 0; !c && i < a->n_set && i < b->n_set; i++)
        c = rg_compare(&a->set[i], &b->set[i]);
    return c ? c : (a->n_set > b->n_set) - (a->n_set < b->n_set);
}

static void free_items(diff_item *it, size_t n) {
    for (size_t i = 0; it && i < n; i++) free(it[i].set);
    free(it);
}

/* The content items of f, sorted. */
static rdb_status make_items(const rdb_file *f, diff_item **out, size_t *n_out) {
    size_t n = f->kind == RDB_RULES ? f->n_rules : f->n_classes;
    diff_item *it = calloc(n ? n : 1, sizeof *it);
    *out = it;
    *n_out = n;
    if (!it) return RDB_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        it[i].idx = i;
        if (f->kind == RDB_RULES) {
            it[i].rule = &f->rules[i];
            continue;
        }
        const rdb_class *c = it[i].cls = &f->classes[i];
        it[i].set = malloc((c->n_members ? c->n_members : 1) * sizeof *it[i].set);
        if (!it[i].set) return RDB_ENOMEM;
        if (c->n_members) memcpy(it[i].set, c->members, c->n_members * sizeof *c->members);
        it[i].n_set = sort_unique(it[i].set, c->n_members);
    }
    qsort(it, n, sizeof *it, cmp_item);
    return RDB_OK;
}

static int cmp_size(const void *x, const void *y) {
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return (a > b) - (a < b);
}

/* Walk both sorted lists; unmatched items go to the only_* lists. */
static void diff_walk(const diff_item *a, size_t na, const diff_item *b, size_t nb,
                      rdb_delta *d) {
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : cmp_item(&a[i], &b[j]);
        if (c < 0) d->only_a[d->n_only_a++] = a[i++].idx;
        else if (c > 0) d->only_b[d->n_only_b++] = b[j++].idx;
        else i++, j++;
    }
    qsort(d->only_a, d->n_only_a, sizeof *d->only_a, cmp_size);
    qsort(d->only_b, d->n_only_b, sizeof *d->only_b, cmp_size);
}

rdb_status rdb_diff(const rdb_file *a, const rdb_file *b, rdb_delta *d) {
    diff_item *ia = NULL, *ib = NULL;
    size_t na = 0, nb = 0;
    rdb_status rc;
    memset(d, 0, sizeof *d);
    rc = make_items(a, &ia, &na);
    if (rc == RDB_OK) rc = make_items(b, &ib, &nb);
    if (rc != RDB_OK) goto cleanup;
    d->only_a = malloc((na ? na : 1) * sizeof *d->only_a);
    d->only_b = malloc((nb ? nb : 1) * sizeof *d->only_b);
    if (!d->only_a || !d->only_b) {
        rc = RDB_ENOMEM;
        goto cleanup;
    }
    if (a->kind == b->kind) {
        diff_walk(ia, na, ib, nb, d);
    } else { /* nothing in common */
        for (size_t i = 0; i < na; i++) d->only_a[d->n_only_a++] = i;
        for (size_t j = 0; j < nb; j++) d->only_b[d->n_only_b++] = j;
    }
cleanup:
    free_items(ia, na);
    free_items(ib, nb);
    if (rc != RDB_OK) rdb_delta_free(d);
    return rc;
}

void rdb_delta_free(rdb_delta *d) {
    free(d->only_a);
    free(d->only_b);
    memset(d, 0, sizeof *d);
}
