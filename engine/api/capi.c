/* capi.c - the stable C API of tasoc.h (prefix tasoc_): handles over the
 * engine's graphs, optimize results and ruledb files, for the shared
 * library the Python package loads. Each function is a thin wrapper over
 * the library calls `engine` makes (engine/api/cli.c): no engine logic here. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "onnx/engine.h"
#include "proto/onnx_pb.h"
#include "rgraph.h"
#include "ruledb.h"
#include "rewrite/rules.h"
#include "pipeline/pipeline.h"
#include "api/tasoc.h"
#include "verify/verify.h"

/* A counted reference to an eg_graph. An optimized graph borrows tensor
 * data from its input, so it holds a reference to the input's handle
 * (base); a graph loaded from bytes keeps them, so that a result equal to
 * its input can be written as those bytes (as engine optimize does). */
struct tasoc_graph {
    atomic_uint refs;
    eg_graph *g;
    tasoc_graph *base;  /* referenced: g borrows from base->g */
    uint8_t *bytes;     /* the file as read (loaded graphs), owned */
    size_t len;
    int verbatim;       /* save as base->bytes (kept input, not repaired) */
};

typedef struct {
    uint64_t id;
    unsigned times;
    char *text;
} applied_rule;

struct tasoc_result {
    tasoc_summary s;
    applied_rule *rule; /* [s.n_rules] */
    char pick[32], warning[896]; /* what s.verify_pick and s.warning point to: up to three warnings */
};

struct tasoc_ruledb {
    rdb_file *f;
};

extern const uint8_t eg_shipped_ruledb[], eg_shipped_ruledb_end[];

int tasoc_api_version(void) { return TASOC_API_VERSION; }

const char *tasoc_version(void) { return EG_VERSION; }

const char *tasoc_status_name(int status) {
    return status >= 0 && status < EG_STATUS_COUNT ? eg_status_name((eg_status)status) : "?";
}

void tasoc_opts_init(tasoc_opts *o) {
    eg_search_opts so;
    eg_search_opts_init(&so);
    memset(o, 0, sizeof *o);
    o->alpha = so.alpha;
    o->budget = so.budget;
    o->time_limit = so.time_limit;
}

/* A handle owning g (and bytes, when given). @return NULL when out of memory. */
static tasoc_graph *handle_new(eg_graph *g, uint8_t *bytes, size_t len) {
    tasoc_graph *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    atomic_init(&h->refs, 1);
    h->g = g;
    h->bytes = bytes;
    h->len = len;
    return h;
}

/* Import bytes we own: on success the handle takes them, else they go. */
static int load_owned(uint8_t *bytes, size_t len, const char *name, const eg_load_opts *opts, tasoc_graph **out,
                      char *err, size_t errlen) {
    eg_graph *g = NULL;
    eg_status rc = eg_load_mem(bytes, len, name, opts, &g, err, errlen);
    if (rc == EG_OK && !(*out = handle_new(g, bytes, len))) {
        rc = EG_ENOMEM;
        snprintf(err, errlen, "out of memory");
    }
    if (rc != EG_OK) {
        eg_free(g);
        free(bytes);
    }
    return (int)rc;
}

int tasoc_load_file(const char *path, tasoc_graph **out, char *err, size_t errlen) {
    return tasoc_load_file_dims(path, NULL, NULL, 0, out, err, errlen);
}

/* dims[MAX_DIMS] from the caller's arrays. @return 0, or an error code. */
enum { MAX_DIMS = 64 };
static int take_dims(const char *who, const char *const *dim_names, const int64_t *dim_sizes, int n_dims,
                     eg_dim_value *dims, char *err, size_t errlen) {
    if (n_dims < 0 || n_dims > MAX_DIMS || (n_dims && (!dim_names || !dim_sizes))) {
        snprintf(err, errlen, "%s: 0 to %d dims, with their names and sizes", who, MAX_DIMS);
        return EG_EFORMAT;
    }
    for (int k = 0; k < n_dims; k++) dims[k] = (eg_dim_value){dim_names[k], dim_sizes[k]};
    return 0;
}

int tasoc_load_file_dims(const char *path, const char *const *dim_names, const int64_t *dim_sizes, int n_dims,
                         tasoc_graph **out, char *err, size_t errlen) {
    eg_dim_value dims[MAX_DIMS];
    eg_load_opts opts = {.dims = dims, .n_dims = n_dims, .model_path = path};
    uint8_t *bytes = NULL;
    size_t len = 0;
    *out = NULL;
    int bad = take_dims("tasoc_load_file_dims", dim_names, dim_sizes, n_dims, dims, err, errlen);
    if (bad) return bad;
    eg_status rc = egp_read_file(path, EG_MAX_FILE, &bytes, &len, err, errlen);
    return rc != EG_OK ? (int)rc : load_owned(bytes, len, path, &opts, out, err, errlen);
}

int tasoc_load_mem(const void *buf, size_t len, const char *name, tasoc_graph **out, char *err,
                   size_t errlen) {
    return tasoc_load_mem_dims(buf, len, name, NULL, NULL, 0, out, err, errlen);
}

int tasoc_load_mem_dims(const void *buf, size_t len, const char *name, const char *const *dim_names,
                        const int64_t *dim_sizes, int n_dims, tasoc_graph **out, char *err, size_t errlen) {
    eg_dim_value dims[MAX_DIMS];
    eg_load_opts opts = {.dims = dims, .n_dims = n_dims};
    *out = NULL;
    int bad = take_dims("tasoc_load_mem_dims", dim_names, dim_sizes, n_dims, dims, err, errlen);
    if (bad) return bad;
    uint8_t *bytes = malloc(len ? len : 1);
    if (!bytes) {
        snprintf(err, errlen, "out of memory");
        return EG_ENOMEM;
    }
    if (len) memcpy(bytes, buf, len);
    return load_owned(bytes, len, name ? name : "<memory>", &opts, out, err, errlen);
}

int tasoc_save_mem(const tasoc_graph *g, uint8_t **buf, size_t *len, char *err, size_t errlen) {
    *buf = NULL;
    *len = 0;
    if (!g->verbatim) return (int)eg_save_mem(g->g, buf, len, err, errlen);
    const tasoc_graph *src = g->base;
    if (!(*buf = malloc(src->len ? src->len : 1))) {
        snprintf(err, errlen, "out of memory");
        return EG_ENOMEM;
    }
    memcpy(*buf, src->bytes, src->len);
    *len = src->len;
    return EG_OK;
}

void tasoc_mem_free(void *buf) { free(buf); }

void tasoc_graph_counts(const tasoc_graph *g, int *nodes, int *tensors, int *inputs,
                        int *outputs) {
    *nodes = g->g->n_nodes;
    *tensors = g->g->n_tensors;
    *inputs = g->g->n_inputs;
    *outputs = g->g->n_outputs;
}

/* The cost kind named, analytic-cpu (engine optimize's default) for NULL.
 * @return 0, or EG_EUNSUPPORTED. */
static int cost_kind(const char *name, eg_cost_kind *k, char *err, size_t errlen) {
    int v = name ? eg_cost_kind_parse(name) : (int)EG_COST_ANALYTIC_CPU;
    if (v < 0) {
        snprintf(err, errlen, "unknown cost model '%s' (analytic-cpu, analytic, cpu, cuda or ort)", name);
        return EG_EUNSUPPORTED;
    }
    *k = (eg_cost_kind)v;
    return EG_OK;
}

int tasoc_graph_cost(const tasoc_graph *g, const char *cost, double *us, char *err, size_t errlen) {
    eg_cost_kind kind = EG_COST_ANALYTIC;
    eg_cost *c = NULL;
    *us = 0;
    int rc = cost_kind(cost, &kind, err, errlen);
    if (rc == EG_OK) rc = (int)eg_cost_new(kind, NULL, &c, err, errlen);
    if (rc == EG_OK) *us = eg_cost_graph(c, g->g);
    eg_cost_free(c);
    return rc;
}

void tasoc_graph_free(tasoc_graph *g) {
    while (g && atomic_fetch_sub(&g->refs, 1) == 1) {
        tasoc_graph *base = g->base;
        eg_free(g->g); /* before base: it borrows base's data */
        free(g->bytes);
        free(g);
        g = base;
    }
}

/* The options checked as the engine's command line checks them. */
static int check_opts(const tasoc_opts *o, char *err, size_t errlen) {
    if (!(o->alpha >= 1.0 && o->alpha <= 10.0)) {
        snprintf(err, errlen, "alpha wants a number in [1, 10], not %g", o->alpha);
        return EG_EUNSUPPORTED;
    }
    if (o->search && strcmp(o->search, "backtrack") && strcmp(o->search, "egraph")) {
        snprintf(err, errlen, "search is \"backtrack\" or \"egraph\", not \"%s\"", o->search);
        return EG_EUNSUPPORTED;
    }
    if (o->egraph_iters < 0 || o->egraph_iters > 1000 || o->egraph_nodes < 0 || o->egraph_nodes > 100000000 ||
        o->egraph_passes < 0 || o->egraph_passes > 100) {
        snprintf(err, errlen, "egraph_iters wants 0..1000, egraph_nodes 0..1e8 and egraph_passes 0..100, not %d, %d and %d",
                 o->egraph_iters, o->egraph_nodes, o->egraph_passes);
        return EG_EUNSUPPORTED;
    }
    if (!(o->time_limit >= 0 && o->time_limit <= 1e6)) {
        snprintf(err, errlen, "time_limit wants seconds in [0, 1e6], not %g", o->time_limit);
        return EG_EUNSUPPORTED;
    }
    return EG_OK;
}

/* The applied rules of r as text, as `engine optimize` prints them. */
static int result_rules(const eg_search_result *r, const eg_optimize_stats *st, const eg_ruleset *rs,
                        tasoc_result *t) {
    size_t n = 0;
    int none = st->kept_input || st->rules_dropped;
    for (size_t i = 0; i < r->n_rules && !none; i++) n += r->applied[i] != 0;
    if (n && !(t->rule = calloc(n, sizeof *t->rule))) return EG_ENOMEM;
    for (size_t i = 0, k = 0; i < r->n_rules && k < n; i++) {
        if (!r->applied[i]) continue;
        const rdb_rule *rule = eg_ruleset_rule(rs, i);
        char text[1200];
        eg_ruleset_rule_text(rs, i, text, sizeof text);
        t->rule[k] = (applied_rule){rule->id, r->applied[i], strdup(text)};
        if (!t->rule[k].text) return EG_ENOMEM;
        t->s.n_rules = ++k;
    }
    return EG_OK;
}

/* The result handle for r. @return 0 or EG_ENOMEM. */
static int result_new(const eg_search_result *r, const eg_optimize_stats *st, const eg_ruleset *rs,
                      tasoc_result **out) {
    tasoc_result *t = calloc(1, sizeof *t);
    if (!t) return EG_ENOMEM;
    t->s = (tasoc_summary){
        .cost_before = r->cost_before, .cost_after = r->cost_after, .seconds = r->seconds,
        .expanded = r->expanded, .generated = r->generated, .duplicates = r->duplicates,
        .rejected = r->rejected, .pruned = r->pruned, .stop = eg_stop_name(r->stop),
        .kept_input = st->kept_input, .rules_dropped = st->rules_dropped,
        .bn_folded = st->pre.bn_folded, .bias_split = st->pre.bias_split,
        .relu_fused = st->pre.relu_fused, .cse_merged = st->pre.cse_merged + st->post.cse_merged,
        .weights_folded = st->post.weights_folded, .sum_spelled = st->post.sum_spelled,
        .nan_guards_dropped = st->pre.nan_guards_dropped};
    int rc = result_rules(r, st, rs, t);
    if (rc != EG_OK) tasoc_result_free(t), t = NULL;
    *out = t;
    return rc;
}

/* Opts to the cost model engine optimize would open: o->cost, or the
 * default choice; the per-user cache unless named or turned off. */
static int open_cost(const tasoc_opts *o, eg_cost **cost, eg_cost_open_info *info, char *err, size_t errlen) {
    eg_cost_kind kind = EG_COST_ANALYTIC_CPU;
    int pick = !o->cost && !o->deterministic;
    int rc = pick ? EG_OK : cost_kind(o->cost, &kind, err, errlen);
    const char *why = o->deterministic ? eg_cost_deterministic_conflict(o->cost != NULL, kind, o->verify > 0,
                                                                        o->cost_cache != NULL)
                                       : NULL;
    if (rc == EG_OK && why) {
        snprintf(err, errlen, "deterministic measures nothing: %s", why);
        return EG_EUNSUPPORTED;
    }
    eg_cost_open_opts co = {.pick = pick, .kind = kind, .threads = o->threads, .cache = o->cost_cache,
                            .default_cache = !o->no_cost_cache && !o->deterministic};
    return rc == EG_OK ? (int)eg_cost_open(&co, cost, info, err, errlen) : rc;
}

int tasoc_optimize(tasoc_graph *g, const tasoc_opts *o, tasoc_graph **best, tasoc_result **r,
                   char *err, size_t errlen) {
    tasoc_opts dflt;
    eg_ruleset *rs = NULL;
    eg_cost *cost = NULL;
    eg_graph *b = NULL;
    eg_search_result res = {0};
    eg_optimize_stats st = {0};
    eg_cost_open_info info = {0};
    eg_verify_report rep = {0};
    int verified = 0;
    *best = NULL;
    *r = NULL;
    if (!o) tasoc_opts_init(&dflt), o = &dflt;
    eg_search_opts so;
    eg_search_opts_init(&so); /* its defaults for what tasoc_opts does not name (two search threads) */
    so.alpha = o->alpha, so.budget = o->budget, so.time_limit = o->time_limit;
    so.egraph = !o->search || !strcmp(o->search, "egraph"); /* egraph the default, as the CLI's */
    if (o->egraph_iters > 0) so.iterations = o->egraph_iters;
    if (o->egraph_nodes > 0) so.max_nodes = o->egraph_nodes;
    if (o->egraph_passes > 0) so.passes = o->egraph_passes;
    so.second_opinion = !o->no_second_opinion;
    int rc = check_opts(o, err, errlen);
    if (rc == EG_OK)
        rc = (int)(o->ruledb ? eg_ruleset_load(o->ruledb, &rs, err, errlen)
                             : eg_ruleset_shipped(&rs, err, errlen));
    if (rc == EG_OK) rc = open_cost(o, &cost, &info, err, errlen);
    int verify_on = rc == EG_OK && !o->deterministic &&
                    (o->verify > 0 || (o->verify == 0 && info.kind == EG_COST_ORT));
    if (rc == EG_OK) rc = (int)eg_optimize(g->g, rs, cost, &so, verify_on, &b, &res, &st, err, errlen);
    if (rc == EG_OK && verify_on && !st.kept_input) {
        eg_verify_opts vo;
        eg_verify_opts_init(&vo);
        vo.threads = o->threads > 0 ? o->threads : 1;
        if (o->verify_runs > 0) vo.runs = o->verify_runs;
        eg_verify_input vin = {.bytes = g->bytes && !g->g->external ? g->bytes : NULL, .len = g->len};
        rc = (int)eg_optimize_verify(g->g, &vin, cost, info.cache, &vo, 1, &res, &st, &b, &rep, err, errlen);
        verified = rc == EG_OK;
    }
    if (rc == EG_OK && info.cache) {
        int saved = (int)eg_cost_save(cost, err, errlen);
        if (saved != EG_OK && o->cost_cache) rc = saved; /* the per-user cache's problem: the result stands */
    }
    if (rc == EG_OK && (rc = result_new(&res, &st, rs, r)) != EG_OK) snprintf(err, errlen, "out of memory");
    if (rc == EG_OK) {
        tasoc_summary *s = &(*r)->s;
        s->cost_model = eg_cost_kind_name(info.kind);
        s->verified = verified;
        if (verified) {
            snprintf((*r)->pick, sizeof (*r)->pick, "%s", rep.name[rep.pick]);
            s->verify_pick = (*r)->pick;
            s->verify_speedup = rep.pick ? rep.row[rep.pick].ratio : 1.0;
            s->verify_seconds = rep.seconds;
        }
        /* the CLI's warnings, for library users too */
        const char *stale = eg_ruleset_stale(rs);
        const char *clock = o->deterministic && res.stop == EG_STOP_TIME
                                ? "the time limit " EG_CLOCK_STOPPED "; raise time_limit"
                                : NULL;
        const char *say[3] = {info.warning[0] ? info.warning : NULL, stale, clock};
        size_t at = 0;
        for (int k = 0; k < 3; k++)
            if (say[k] && at < sizeof (*r)->warning)
                at += (size_t)snprintf((*r)->warning + at, sizeof (*r)->warning - at, "%s%s", at ? "; " : "", say[k]);
        if (at) s->warning = (*r)->warning;
    }
    if (rc == EG_OK && !(*best = handle_new(b, NULL, 0))) {
        rc = EG_ENOMEM;
        snprintf(err, errlen, "out of memory");
    }
    if (rc == EG_OK) {
        b = NULL; /* the handle owns it */
        atomic_fetch_add(&g->refs, 1);
        (*best)->base = g;
        (*best)->verbatim = st.kept_input && !g->g->repaired && !g->g->external && g->bytes;
    } else {
        tasoc_result_free(*r);
        *r = NULL;
    }
    eg_optimize_stats_free(&st); /* the candidates, before the graph they borrow from */
    eg_search_result_free(&res);
    eg_free(b);
    eg_cost_free(cost);
    eg_ruleset_free(rs);
    return rc;
}

void tasoc_result_summary(const tasoc_result *r, tasoc_summary *s) { *s = r->s; }

int tasoc_result_rule(const tasoc_result *r, size_t k, uint64_t *id, unsigned *times,
                      const char **text) {
    if (k >= r->s.n_rules) return 1;
    *id = r->rule[k].id;
    *times = r->rule[k].times;
    *text = r->rule[k].text;
    return 0;
}

void tasoc_result_free(tasoc_result *r) {
    if (!r) return;
    for (size_t k = 0; k < r->s.n_rules; k++) free(r->rule[k].text);
    free(r->rule);
    free(r);
}

/* A ruledb handle over f, or the reader's status as an eg_status. */
static int ruledb_handle(rdb_status st, rdb_file *f, tasoc_ruledb **out, char *err, size_t errlen) {
    if (st == RDB_OK && !(*out = malloc(sizeof **out))) st = RDB_ENOMEM, snprintf(err, errlen, "out of memory");
    if (st == RDB_OK) {
        (*out)->f = f;
        return EG_OK;
    }
    rdb_free(f);
    return st == RDB_EIO ? EG_EIO : st == RDB_ENOMEM ? EG_ENOMEM : EG_EFORMAT;
}

int tasoc_ruledb_open(const char *path, tasoc_ruledb **out, char *err, size_t errlen) {
    rdb_file *f = NULL;
    *out = NULL;
    rdb_status st = rdb_read(path, &f, err, errlen);
    return ruledb_handle(st, f, out, err, errlen);
}

int tasoc_ruledb_shipped(tasoc_ruledb **out, char *err, size_t errlen) {
    rdb_file *f = NULL;
    *out = NULL;
    size_t len = (size_t)(eg_shipped_ruledb_end - eg_shipped_ruledb);
    rdb_status st = rdb_read_mem(eg_shipped_ruledb, len, &f, err, errlen);
    return ruledb_handle(st, f, out, err, errlen);
}

void tasoc_ruledb_info_get(const tasoc_ruledb *db, tasoc_ruledb_info *info) {
    const rdb_file *f = db->f;
    *info = (tasoc_ruledb_info){
        .kind = rdb_kind_name(f->kind), .n_rules = f->n_rules, .n_classes = f->n_classes,
        .max_ops = f->gen.max_ops, .seed = f->gen.seed, .graphs = f->gen.counts.graphs,
        .classes = f->gen.counts.classes, .proved = f->gen.counts.proved,
        .failed = f->gen.counts.failed, .pruned = f->gen.counts.pruned};
}

int tasoc_ruledb_rule(const tasoc_ruledb *db, size_t i, uint64_t *id, const char **verdict,
                      char *src, size_t src_len, char *dst, size_t dst_len) {
    const rdb_file *f = db->f;
    if (f->kind != RDB_RULES || i >= f->n_rules) return 1;
    *id = f->rules[i].id;
    *verdict = rdb_proof_name(f->rules[i].prover.status);
    rg_format(&f->rules[i].src, src, src_len);
    rg_format(&f->rules[i].dst, dst, dst_len);
    return 0;
}

void tasoc_ruledb_close(tasoc_ruledb *db) {
    if (!db) return;
    rdb_free(db->f);
    free(db);
}
