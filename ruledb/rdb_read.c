/* rdb_read.c - the bounds-checked ruledb reader over mpread: every count,
 * index and parameter checked, errors naming the byte offset and the field. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "ruledb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpread.h"
#include "rdb_int.h"

/* Files larger than this are refused before reading (a rule set of a
 * million rules is ~100 MB). */
#define RDB_MAX_FILE ((size_t)1 << 30)

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

/* Append a map key to the path ("rules[3].src"); @return the old length
 * for leave(). Called for every key and element read, so no printf. */
static size_t enter_key(reader *r, const char *key) {
    size_t old = strlen(r->path), at = old;
    if (old && at + 1 < sizeof r->path) r->path[at++] = '.';
    for (const char *k = key; *k && at + 1 < sizeof r->path; k++) r->path[at++] = *k;
    r->path[at] = '\0';
    return old;
}

/* Append an array index "[i]" to the path; @return the old length. */
static size_t enter_index(reader *r, unsigned i) {
    char t[16];
    int n = 0;
    t[n++] = ']';
    do t[n++] = (char)('0' + i % 10), i /= 10;
    while (i);
    t[n++] = '[';
    size_t old = strlen(r->path);
    for (size_t at = old; n > 0 && at + 1 < sizeof r->path; at++) r->path[at] = t[--n], r->path[at + 1] = '\0';
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
    size_t old = enter_key(r, keys[idx]);
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
            size_t old = enter_index(r, (unsigned)j);
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
        if (strcmp(s, rdb__proof_names[i]) == 0) {
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
        rdb_rule *ru = rdb__reserve(f->rules, &f->cap_rules, f->n_rules, sizeof *ru);
        if (!ru) return rfail(r, RDB_ENOMEM, r->c.pos, "out of memory");
        f->rules = ru;
        ru = &f->rules[f->n_rules];
        memset(ru, 0, sizeof *ru);
        size_t old = enter_index(r, (unsigned)i);
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
        size_t old = enter_index(r, (unsigned)k);
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
        rg_graph *g = rdb__reserve(c->members, &c->cap_members, c->n_members, sizeof *g);
        if (!g) return rfail(r, RDB_ENOMEM, r->c.pos, "out of memory");
        c->members = g;
        size_t old = enter_index(r, (unsigned)m);
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
        rdb_class *c = rdb__reserve(f->classes, &f->cap_classes, f->n_classes, sizeof *c);
        if (!c) return rfail(r, RDB_ENOMEM, r->c.pos, "out of memory");
        f->classes = c;
        c = &f->classes[f->n_classes++]; /* counted now so rdb_free sees partial ones */
        memset(c, 0, sizeof *c);
        size_t old = enter_index(r, (unsigned)i);
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
    size_t old = enter_key(r, "generator");
    rdb_status rc = read_map(r, gen_keys, 9, 0, gen_field, &r->f->gen);
    leave(r, old);
    if (rc) return rc;
    int rules = r->f->kind == RDB_RULES;
    if (expect_key(r, rules ? "rules" : "classes")) return r->rc;
    old = enter_key(r, rules ? "rules" : "classes");
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
    if (!r.f) return rdb__efmt(err, errlen, RDB_ENOMEM, "out of memory");
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
    if (fd < 0) return rdb__efmt(err, errlen, RDB_EIO, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = rdb__efmt(err, errlen, RDB_EIO, "%s: %s", path, strerror(errno));
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > RDB_MAX_FILE) {
        rc = rdb__efmt(err, errlen, RDB_EIO, "%s: %s", path,
                  S_ISREG(st.st_mode) ? "larger than 1 GiB" : "not a regular file");
        goto cleanup;
    }
    *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
    if (!*buf) {
        rc = rdb__efmt(err, errlen, RDB_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    while (got < (size_t)st.st_size) {
        ssize_t k = read(fd, *buf + got, (size_t)st.st_size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            rc = rdb__efmt(err, errlen, RDB_EIO, "%s: %s", path, strerror(errno));
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
    if (rc != RDB_OK) rdb__efmt(err, errlen, rc, "%s: %s", path, why);
    free(buf);
    return rc;
}
