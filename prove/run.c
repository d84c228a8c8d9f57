/* run.c - the prove pipeline (prove.h): pair candidates, decide them on
 * worker threads, emit and prune rules, fill the rules file; progress and
 * the closing summary. */
#include "prove.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "emit.h"
#include "gsym.h"
#include "kernel1.h"
#include "known.h"
#include "reduce.h"
#include "runfile.h"
#include "shard.h"
#include "trig.h"

#define PROGRESS_TTY_MS 1000
#define PROGRESS_LOG_MS 10000

/* ---- options, axioms, clocks ---- */

void pv_defaults(pv_options *o) {
    memset(o, 0, sizeof *o);
    o->axioms_path = PV_DEFAULT_AXIOMS;
    o->timeout_ms = PV_DEFAULT_TIMEOUT_MS;
    o->max_instances = PV_DEFAULT_MAX_INSTANCES;
    o->rlimit = PV_DEFAULT_RLIMIT;
    o->seed = PV_DEFAULT_SEED;
    o->general = 1;
    o->profile_checks = PV_DEFAULT_PROFILE_CHECKS;
    pv_derive_defaults(&o->known_bounds);
}

static uint64_t mono_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

void pv_resources(uint64_t *cpu_ms, long *rss_kb) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    *cpu_ms = (uint64_t)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000u +
              (uint64_t)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000u;
    *rss_kb = u.ru_maxrss;
}

static FILE *log_of(const pv_options *o) { return o->log ? o->log : stderr; }

/* ---- deciding every pair ---- */

typedef struct {
    size_t cls, member;
} item;

typedef struct {
    const rdb_file *cands;
    const pv_options *o;
    dc_config cfg;
    tg_plan plan;
    item *items;
    bt_pair *pairs;
    dc_result *res;
    bt_stats bst;
    /* the pairs decided again with 1x1-kernel guards (kernel1.h): their
     * graphs, and per pair of `pairs` the index of its guarded version that
     * was proved, or SIZE_MAX */
    rg_graph *k1_graphs;
    bt_pair *k1_pairs;
    size_t *k1_of;
    uint64_t t0;
    int tty;
    int hogs_said; /* say_budget_hogs ran */
} run_ctx;

/* A seed of its own for every pair, from the run seed and the pair. */
static uint64_t pair_seed(uint64_t seed, size_t cls, size_t member) {
    uint64_t s = seed ^ (uint64_t)cls * 0x9E3779B97F4A7C15ull ^ (uint64_t)member << 40;
    return ten_rand_next(&s);
}

/* The first check out of budget, profiled once while the run goes on:
 * a loop among the axioms makes every such check take the whole budget,
 * and a user should not have to wait for the end (or bisect the axiom
 * file) to learn which axioms to look at. */
static void say_budget_hogs(run_ctx *r, const bt_pair *p) {
    ap_profile prof;
    char err[PV_ERRLEN];
    ap_check c = {p->a, p->b};
    r->hogs_said = 1;
    if (r->tty) fprintf(log_of(r->o), "\r%*s\r", 100, "");
    fflush(log_of(r->o));
    if (ap_run(r->cfg.axioms, &r->plan, &c, 1, &r->cfg.lim, -1, &prof, err, sizeof err) != 0)
        return;
    fprintf(log_of(r->o), "prove: a check ran out of budget; its axiom instances went to ");
    ap_print_top(log_of(r->o), r->cfg.axioms, &prof);
    fprintf(log_of(r->o), " (the whole run's report comes at its end)\n");
    ap_free(&prof);
}

static void progress(void *arg, const char *phase, size_t done, size_t total,
                     const size_t by[RDB_PROOF_COUNT], const bt_pair *budget) {
    run_ctx *r = arg;
    if (budget && !r->hogs_said && r->o->profile_checks) say_budget_hogs(r, budget);
    double s = (double)(mono_ms() - r->t0) / 1000.0;
    fprintf(log_of(r->o),
            "%sprove: %s %zu/%zu, %.0f/s, %.1f s, proved %zu, refuted %zu, unknown %zu, "
            "timeout %zu%s",
            r->tty ? "\r" : "", phase, done, total, s > 0 ? (double)done / s : 0.0, s,
            by[RDB_PROVED], by[RDB_REFUTED], by[RDB_UNKNOWN], by[RDB_TIMEOUT],
            r->tty ? "   " : "\n");
    fflush(log_of(r->o));
}

static int make_pairs(run_ctx *r, size_t *n) {
    const rdb_file *f = r->cands;
    size_t k = 0;
    for (size_t c = 0; c < f->n_classes; c++) k += f->classes[c].n_members - 1;
    r->items = malloc((k + 1) * sizeof *r->items);
    r->pairs = malloc((k + 1) * sizeof *r->pairs);
    r->res = calloc(k + 1, sizeof *r->res);
    if (!r->items || !r->pairs || !r->res) return -1;
    k = 0;
    for (size_t c = 0; c < f->n_classes; c++) {
        const rdb_class *cl = &f->classes[c];
        for (size_t m = 1; m < cl->n_members; m++) {
            em_key key;
            em_pair_key(&cl->members[0], &cl->members[m], &key);
            unsigned lane = bt_lane(&key);
            if (r->o->shard_n > 1 && lane % r->o->shard_n != r->o->shard_k) continue; /* another shard's */
            r->items[k] = (item){c, m};
            r->pairs[k++] = (bt_pair){&cl->members[0], &cl->members[m], cl->shapes, cl->n_shapes,
                                      pair_seed(r->o->seed, c, m), (uint8_t)lane};
        }
    }
    *n = k;
    return 0;
}

static int decide_all(run_ctx *r, size_t n) {
    const pv_options *o = r->o;
    r->tty = !o->quiet && isatty(fileno(log_of(o)));
    int rc = bt_decide(&r->cfg, r->pairs, n, o->jobs, o->quiet ? NULL : progress, r,
                       r->tty ? PROGRESS_TTY_MS : PROGRESS_LOG_MS, r->res, &r->bst);
    if (r->tty) fprintf(log_of(o), "\r%*s\r", 100, "");
    return rc;
}

/* Decide again, with 1x1-kernel guards, the pairs not proved as they stand
 * (none refuted at the class shapes: there the graphs differ whatever w
 * is) from classes with a 1x1 kernel input. A guarded pair that is proved
 * replaces the pair's verdict, and its graphs are the rule's. */
static int retry_kernel1(run_ctx *r, size_t n, size_t *retried) {
    const rdb_file *f = r->cands;
    size_t k = 0;
    *retried = 0;
    r->k1_of = malloc((n + 1) * sizeof *r->k1_of);
    r->k1_graphs = malloc((2 * n + 1) * sizeof *r->k1_graphs);
    r->k1_pairs = malloc((n + 1) * sizeof *r->k1_pairs);
    if (!r->k1_of || !r->k1_graphs || !r->k1_pairs) return -1;
    size_t *which = malloc((n + 1) * sizeof *which);
    if (!which) return -1;
    uint32_t mask = 0;
    for (size_t i = 0; i < n; i++) {
        const rdb_class *cl = &f->classes[r->items[i].cls];
        r->k1_of[i] = SIZE_MAX;
        if (i == 0 || r->items[i].cls != r->items[i - 1].cls) mask = k1_inputs(cl);
        const dc_result *d = &r->res[i];
        if (!mask || d->status == RDB_PROVED || (d->status == RDB_REFUTED && d->stage == 1))
            continue;
        rg_graph *ga = &r->k1_graphs[2 * k], *gb = &r->k1_graphs[2 * k + 1];
        int wa = k1_wrap(r->pairs[i].a, mask, ga), wb = k1_wrap(r->pairs[i].b, mask, gb);
        if (wa < 0 || wb < 0 || (wa == 0 && wb == 0)) continue;
        r->k1_pairs[k] = r->pairs[i];
        r->k1_pairs[k].a = ga, r->k1_pairs[k].b = gb;
        r->k1_pairs[k].seed ^= 0x6b31; /* a seed of its own */
        which[k++] = i;
    }
    dc_result *res = calloc(k + 1, sizeof *res);
    bt_stats bst;
    int rc = -1;
    if (res && bt_decide(&r->cfg, r->k1_pairs, k, r->o->jobs, r->o->quiet ? NULL : progress, r,
                         r->tty ? PROGRESS_TTY_MS : PROGRESS_LOG_MS, res, &bst) == 0) {
        if (r->tty) fprintf(log_of(r->o), "\r%*s\r", 100, "");
        for (size_t q = 0; q < k; q++)
            if (res[q].status == RDB_PROVED) r->res[which[q]] = res[q], r->k1_of[which[q]] = q;
        r->bst.errors += bst.errors;
        *retried = k;
        rc = 0;
    }
    free(res);
    free(which);
    return rc;
}

/* ---- statistics ---- */

static void tally(const run_ctx *r, size_t n, pv_stats *st) {
    st->candidates = n;
    st->distinct = r->bst.distinct;
    st->classes = r->cands->n_classes;
    st->errors = r->bst.errors;
    for (size_t i = 0; i < n; i++) {
        const dc_result *d = &r->res[i];
        switch (d->status) {
        case RDB_PROVED:
            if (d->cls == DC_DERIVED) {
                st->derived++;
                break;
            }
            st->proved++;
            st->kernel1_proved += r->k1_of[i] != SIZE_MAX;
            break;
        case RDB_REFUTED:
            st->refuted++;
            st->refuted_at[d->stage >= 1 && d->stage <= 3 ? d->stage : 0]++;
            break;
        case RDB_TIMEOUT: st->timeout++; break;
        case RDB_UNKNOWN:
        case RDB_UNCHECKED:
        case RDB_PROOF_COUNT: st->unknown++; break;
        }
    }
}

static int keep_pairs(const run_ctx *r, size_t n, pv_stats *st) {
    st->pair = calloc(n + 1, sizeof *st->pair);
    if (!st->pair) return -1;
    st->n_pairs = n;
    for (size_t i = 0; i < n; i++) {
        pv_pair *p = &st->pair[i];
        p->cls = r->items[i].cls;
        p->member = r->items[i].member;
        p->status = r->res[i].status;
        p->reason = r->res[i].cls;
        p->stage = r->res[i].stage;
        p->millis = r->res[i].millis;
        snprintf(p->why, sizeof p->why, "%s", r->res[i].why);
    }
    return 0;
}

/* The first profile_checks pairs that ran out of budget, profiled again
 * one by one (profile.h): which axioms took their instances. The pairs
 * are the run's first in candidate order, so the report is deterministic.
 * A failure here only leaves the report out. */
static void profile_budget(const run_ctx *r, size_t n, pv_stats *st) {
    size_t k = 0, want = r->o->profile_checks;
    ap_check *c = want ? malloc(want * sizeof *c) : NULL;
    ap_profile p;
    char err[PV_ERRLEN];
    for (size_t i = 0; c && i < n && k < want; i++)
        if (r->res[i].status == RDB_TIMEOUT && r->res[i].cls == DC_BUDGET)
            c[k++] = (ap_check){r->pairs[i].a, r->pairs[i].b};
    if (k && ap_run(r->cfg.axioms, &r->plan, c, k, &r->cfg.lim, -1, &p, err, sizeof err) == 0) {
        int idx[AP_TOP];
        uint64_t total = ap_total(&p);
        st->hogs.checks = k;
        st->hogs.n = ap_top(&p, AP_TOP, idx);
        for (int i = 0; i < st->hogs.n; i++) {
            snprintf(st->hogs.name[i], sizeof st->hogs.name[i], "%s",
                     r->cfg.axioms->axiom[idx[i]].name);
            st->hogs.share[i] = (double)p.z.instances[idx[i]] / (double)total;
        }
        ap_free(&p);
    }
    free(c);
}

/* ---- rules ---- */

/* The rules of class c, whose member m was decided as pair at[m]
 * (SIZE_MAX: not in this run's share): from its members, or for a member
 * proved only with guards, from the guarded pair (emitted first). */
static int class_rules(const run_ctx *r, size_t c, const size_t *at, const uint8_t *proved,
                       const rdb_prover *pv, em_rule **rules, size_t *n_rules, size_t *cap) {
    const rdb_class *cl = &r->cands->classes[c];
    uint8_t plain[2] = {0, 1};
    rg_graph two[2];
    rdb_class pair = *cl;
    pair.members = two;
    pair.n_members = pair.cap_members = 2;
    for (size_t m = 1; m < cl->n_members; m++) {
        size_t q = at[m] == SIZE_MAX ? SIZE_MAX : r->k1_of[at[m]], before = *n_rules;
        if (!proved[m] || q == SIZE_MAX) continue;
        two[0] = r->k1_graphs[2 * q], two[1] = r->k1_graphs[2 * q + 1];
        rdb_prover p2[2] = {pv[m], pv[m]};
        if (em_class_rules(&pair, c, plain, p2, rules, n_rules, cap)) return -1;
        for (size_t i = before; i < *n_rules; i++) (*rules)[i].member = m, (*rules)[i].guarded = 1;
    }
    uint8_t *rest = malloc(cl->n_members + 1);
    if (!rest) return -1;
    for (size_t m = 1; m < cl->n_members; m++)
        rest[m] = proved[m] && r->k1_of[at[m]] == SIZE_MAX;
    int rc = em_class_rules(cl, c, rest, pv, rules, n_rules, cap);
    free(rest);
    return rc;
}

/* Rules from the n decided pairs (items are in class, member order). */
static int emit_rules(const run_ctx *r, size_t n, em_rule **rules, size_t *n_rules) {
    const rdb_file *f = r->cands;
    size_t cap = 0, *at = NULL;
    uint8_t *proved = NULL;
    rdb_prover *pv = NULL;
    int rc = 0;
    *rules = NULL;
    *n_rules = 0;
    for (size_t i = 0, j; i < n && rc == 0; i = j) {
        size_t c = r->items[i].cls, nm = f->classes[c].n_members;
        uint8_t *np = realloc(proved, nm);
        rdb_prover *npv = realloc(pv, nm * sizeof *pv);
        size_t *nat = realloc(at, nm * sizeof *at);
        if (np) proved = np;
        if (npv) pv = npv;
        if (nat) at = nat;
        if (!np || !npv || !nat) rc = -1;
        for (size_t m = 0; m < nm && rc == 0; m++) proved[m] = 0, at[m] = SIZE_MAX;
        for (j = i; j < n && r->items[j].cls == c && rc == 0; j++) {
            size_t m = r->items[j].member;
            at[m] = j;
            proved[m] = r->res[j].status == RDB_PROVED && r->res[j].cls != DC_DERIVED; /* a derived pair needs no rule */
            memset(&pv[m], 0, sizeof pv[m]);
            snprintf(pv[m].name, sizeof pv[m].name, "z3");
            snprintf(pv[m].version, sizeof pv[m].version, "%s", ze_version());
            pv[m].millis = r->o->no_timings ? 0 : r->res[j].millis;
            pv[m].status = RDB_PROVED;
        }
        if (rc == 0) rc = class_rules(r, c, at, proved, pv, rules, n_rules, &cap);
        if (rc) j = n;
    }
    free(proved);
    free(pv);
    free(at);
    return rc;
}

static void note(rdb_generator *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(rdb_generator *g, const char *fmt, ...) {
    if (g->n_notes >= RDB_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->notes[g->n_notes++], RDB_NOTE_LEN, fmt, ap);
    va_end(ap);
}

static void fill_generator(const rdb_file *in, const pv_options *o, const pv_stats *st,
                           const kn_set *known, rdb_generator *g) {
    snprintf(g->tool, sizeof g->tool, "prove");
    snprintf(g->version, sizeof g->version, "%s", PV_VERSION);
    g->max_ops = in->gen.max_ops;
    g->seed = o->seed;
    g->ops = in->gen.ops;
    g->counts.graphs = in->gen.counts.graphs;
    g->counts.classes = st->classes;
    g->counts.proved = st->proved;
    g->counts.failed = st->refuted + st->unknown + st->timeout;
    g->counts.pruned = st->prune.emitted - st->prune.after_output;
    if (!o->no_timings) {
        g->timings.wall_ms = st->wall_ms;
        g->timings.cpu_ms = st->cpu_ms;
    }
    note(g, "z3=%s timeout_ms=%u max_instances=%u rlimit=%u general=%d", ze_version(),
         o->timeout_ms, o->max_instances, o->rlimit, o->general);
    note(g, "candidates=%zu distinct=%zu proved=%zu refuted=%zu unknown=%zu timeout=%zu",
         st->candidates, st->distinct, st->proved, st->refuted, st->unknown, st->timeout);
    note(g, "kernel1 retried=%zu proved=%zu", st->kernel1_retried, st->kernel1_proved);
    if (known && known->rs) {
        char k[RDB_NOTE_LEN];
        kn_note(known, k, sizeof k);
        note(g, "%s", k);
        note(g, PV_DERIVED_NOTE, st->derived);
    }
    note(g, "groups tried=%zu any_count=%zu", st->gsym.tried, st->gsym.generalized);
    note(g, "rules emitted=%zu after_dup=%zu after_rename=%zu after_input=%zu after_output=%zu",
         st->prune.emitted, st->prune.after_dup, st->prune.after_rename, st->prune.after_input,
         st->prune.after_output);
    note(g, "from=%s %s seed=%llu max_ops=%u", in->gen.tool[0] ? in->gen.tool : "?",
         in->gen.version, (unsigned long long)in->gen.seed, (unsigned)in->gen.max_ops);
    if (o->shard_n > 1) {
        note(g, PS_SHARD_NOTE, o->shard_k, o->shard_n);
        g->shard_count = o->shard_n, g->shard_have = 1ull << o->shard_k;
    }
}

int pv_rules_file(const rdb_file *in, const pv_options *o, const em_rule *rules, size_t n,
                  const pv_stats *st, const kn_set *known, rdb_file **out) {
    rdb_file *f = rdb_new(RDB_RULES);
    if (!f) return -1;
    fill_generator(in, o, st, known, &f->gen);
    for (size_t i = 0; i < n; i++) {
        if (rdb_add_rule(f, &rules[i].src, &rules[i].dst, &rules[i].prover) != RDB_OK) {
            rdb_free(f);
            return -1;
        }
        if (o->shard_n > 1) f->rules[i].id = ps_rule_id(&rules[i]);
    }
    *out = f;
    return 0;
}

void pv_summary(const pv_options *o, const pv_stats *st) {
    FILE *l = log_of(o);
    double s = (double)st->wall_ms / 1000.0;
    fprintf(l, "prove: %zu candidates in %zu classes (%zu distinct up to renaming): %zu proved, "
               "%zu refuted (%zu at the class shapes, %zu at other shapes), %zu unknown, "
               "%zu timeout",
            st->candidates, st->classes, st->distinct, st->proved, st->refuted,
            st->refuted_at[1], st->refuted_at[2], st->unknown, st->timeout);
    if (st->errors) fprintf(l, ", %zu internal errors", st->errors);
    if (o->known)
        fprintf(l, "\nprove: %zu more pairs proved and derived from the rules of %s (no rules made of them)",
                st->derived, o->known);
    if (st->hogs.checks) {
        fprintf(l, "\nprove: the axioms behind the budget: of the instances in the first %zu "
                   "checks out of budget,",
                st->hogs.checks);
        for (int i = 0; i < st->hogs.n; i++)
            fprintf(l, "%s %s %.0f%%", i ? "," : "", st->hogs.name[i], 100.0 * st->hogs.share[i]);
        fprintf(l, " (prove --axioms-check --sample CANDIDATES tries each without it)");
    }
    fprintf(l, "\nprove: %zu pairs decided again with 1x1-kernel guards, %zu of them proved",
            st->kernel1_retried, st->kernel1_proved);
    fprintf(l, "\nprove: %zu rules with a literal group count tried for any count, %zu of them proved",
            st->gsym.tried, st->gsym.generalized);
    fprintf(l, "\nprove: rules %zu emitted, %zu after duplicates, %zu after renamings, "
               "%zu after input-side context, %zu after output-side context\n",
            st->prune.emitted, st->prune.after_dup, st->prune.after_rename,
            st->prune.after_input, st->prune.after_output);
    fprintf(l, "prove: wall %.1f s, cpu %.1f s, %.1f candidates/s, peak RSS %.1f MB\n", s,
            (double)st->cpu_ms / 1000.0, s > 0 ? (double)st->candidates / s : 0.0,
            (double)st->peak_rss_kb / 1024.0);
}

/* ---- entry points ---- */

void pv_copy_counts(const rd_counts *c, pv_stats *st) {
    st->prune.emitted = c->emitted;
    st->prune.after_dup = c->after_dup;
    st->prune.after_rename = c->after_rename;
    st->prune.after_input = c->after_input;
    st->prune.after_output = c->after_output;
}

int pv_prove(const rdb_file *cands, const ax_set *axioms, const pv_options *o, rdb_file **out,
             pv_stats *st, char *err, size_t errlen) {
    run_ctx r;
    kn_set known;
    em_rule *rules = NULL;
    size_t n = 0, n_rules = 0;
    rd_counts pc;
    int rc = PV_ENOMEM;
    memset(&r, 0, sizeof r);
    memset(&known, 0, sizeof known);
    memset(st, 0, sizeof *st);
    *out = NULL;
    if (o->known && (rc = kn_open(o->known, &o->known_bounds, &known, err, errlen)) != PV_OK) return rc;
    rc = PV_ENOMEM;
    r.cands = cands;
    r.o = o;
    r.t0 = mono_ms();
    if (tg_plan_axioms(axioms, &r.plan) != 0 || make_pairs(&r, &n) != 0) goto cleanup;
    r.cfg = (dc_config){axioms, &r.plan, {o->timeout_ms, o->max_instances, o->rlimit},
                        o->general, o->known ? kn_derives : NULL, &known};
    if (decide_all(&r, n) != 0 || retry_kernel1(&r, n, &st->kernel1_retried) != 0) goto cleanup;
    tally(&r, n, st);
    profile_budget(&r, n, st);
    if (o->keep_pairs && keep_pairs(&r, n, st) != 0) goto cleanup;
    if (emit_rules(&r, n, &rules, &n_rules) != 0) goto cleanup;
    if (o->general && gs_generalize(&r.cfg, cands, rules, n_rules, o->jobs, o->quiet ? NULL : progress, &r,
                                    r.tty ? PROGRESS_TTY_MS : PROGRESS_LOG_MS, &st->gsym) != 0)
        goto cleanup;
    if (r.tty) fprintf(log_of(o), "\r%*s\r", 100, "");
    if (o->shard_n > 1) /* a shard: the final pruning needs every rule, the merge runs it */
        pc = (rd_counts){n_rules, n_rules, n_rules, n_rules, n_rules};
    else if (rd_prune(rules, &n_rules, &pc) != 0)
        goto cleanup;
    pv_copy_counts(&pc, st);
    st->wall_ms = mono_ms() - r.t0;
    pv_resources(&st->cpu_ms, &st->peak_rss_kb);
    if (o->shard_n > 1 && ps_check_ids(rules, n_rules) != 0) {
        rc = PV_EINPUT;
        snprintf(err, errlen, "a class or member number too large for a shard's rule ids");
        goto cleanup;
    }
    if (pv_rules_file(cands, o, rules, n_rules, st, &known, out) != 0) goto cleanup;
    if (!o->quiet) pv_summary(o, st);
    rc = PV_OK;
cleanup:
    if (rc == PV_ENOMEM) snprintf(err, errlen, "out of memory");
    free(rules);
    free(r.items);
    free(r.pairs);
    free(r.res);
    free(r.k1_of);
    free(r.k1_graphs);
    free(r.k1_pairs);
    tg_free(&r.plan);
    kn_close(&known);
    return rc;
}

void pv_stats_free(pv_stats *st) {
    free(st->pair);
    st->pair = NULL;
    st->n_pairs = 0;
}



int pv_prove_file(const char *cands_path, const char *out_path, const pv_options *o,
                  pv_stats *st, char *err, size_t errlen) {
    rdb_file *in = NULL, *out = NULL;
    ax_set ax;
    uint64_t h = 0;
    char werr[RDB_ERRLEN];
    memset(&ax, 0, sizeof ax);
    memset(st, 0, sizeof *st);
    int rc = pv_read_kind(cands_path, RDB_CANDIDATES, &in, err, errlen);
    if (rc == PV_OK) rc = pv_load_axioms(o->axioms_path, &ax, err, errlen);
    if (rc == PV_OK) rc = pv_prove(in, &ax, o, &out, st, err, errlen);
    if (rc == PV_OK) {
        if (pv_file_digest(o->axioms_path, &h) == 0) note(&out->gen, "axioms=%s xxh64=%016llx",
                                                       o->axioms_path, (unsigned long long)h);
        if (o->shard_n > 1 && pv_file_digest(cands_path, &h) == 0) /* the merge checks it */
            note(&out->gen, PS_INPUT_NOTE, (unsigned long long)h);
        if (rdb_write(out_path, out, werr, sizeof werr) != RDB_OK) {
            snprintf(err, errlen, "%s", werr);
            rc = PV_EIO;
        }
    }
    rdb_free(in);
    rdb_free(out);
    ax_free(&ax);
    return rc;
}
