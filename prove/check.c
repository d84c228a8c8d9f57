/* check.c - re-prove a ruledb (prove --check) and axiom hygiene (prove
 * --axioms-check); see prove.h. */
#include "prove.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axcheck.h"
#include "batch.h"
#include "trig.h"
#include "z3enc.h"

#define HYGIENE_INSTANCES 30       /* concrete instances per axiom */
#define HYGIENE_WRONG_INSTANCES 400 /* to find a counterexample */
#define HYGIENE_SEED 0x5eed0000u
#define CHECK_EVAL_INSTANCES 20     /* concrete instances per rule Z3 did not prove */

static uint64_t mono_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* ---- --check ---- */

static int collect(const rdb_file *rules, const dc_result *r, pv_check_result *res) {
    size_t n = rules->n_rules;
    res->n_rules = n;
    res->failed = malloc((n + 1) * sizeof *res->failed);
    res->pair = calloc(n + 1, sizeof *res->pair);
    if (!res->failed || !res->pair) return -1;
    for (size_t i = 0; i < n; i++) {
        pv_pair *p = &res->pair[i];
        p->cls = i;
        p->member = (size_t)rules->rules[i].id;
        p->status = r[i].status;
        p->reason = r[i].cls;
        p->stage = r[i].stage;
        p->millis = r[i].millis;
        snprintf(p->why, sizeof p->why, "%s", r[i].why);
        if (p->status != RDB_PROVED) res->failed[res->n_failed++] = p->member;
    }
    return 0;
}

/* Every rule as a pair without shapes: a rule gets Z3 only (decide.h). */
static bt_pair *rule_pairs(const rdb_file *rules, uint64_t seed) {
    bt_pair *p = malloc((rules->n_rules + 1) * sizeof *p);
    for (size_t i = 0; p && i < rules->n_rules; i++) {
        uint64_t s = seed ^ (rules->rules[i].id * 0x9E3779B97F4A7C15ull);
        p[i] = (bt_pair){&rules->rules[i].src, &rules->rules[i].dst, NULL, 0, ten_rand_next(&s),
                         (uint8_t)(i % BT_LANES)};
    }
    return p;
}

/* Steps 2 and 3 of prove.h for a rule its lane did not prove: evaluation,
 * then Z3 alone in a fresh context. @return 0, or -1 out of memory. */
static int decide_alone(const dc_config *cfg, const bt_pair *p, dc_result *r) {
    dc_worker w = {cfg, NULL, 0};
    uint64_t millis = r->millis;
    if (dc_rule_eval(p->a, p->b, CHECK_EVAL_INSTANCES, p->seed, r) != 0) return -1;
    if (r->status != RDB_REFUTED) dc_decide(&w, p->a, p->b, NULL, 0, p->seed, r);
    dc_worker_close(&w);
    r->millis += millis;
    return 0;
}

int pv_check(const rdb_file *rules, const ax_set *axioms, const pv_options *o,
             pv_check_result *res, char *err, size_t errlen) {
    tg_plan plan;
    bt_stats bst;
    uint64_t t0 = mono_ms();
    int rc = PV_ENOMEM;
    memset(res, 0, sizeof *res);
    memset(&plan, 0, sizeof plan);
    if (rules->kind != RDB_RULES) {
        snprintf(err, errlen, "not a rules file");
        return PV_EINPUT;
    }
    dc_result *r = calloc(rules->n_rules + 1, sizeof *r);
    bt_pair *pairs = rule_pairs(rules, o->seed);
    if (!r || !pairs || tg_plan_axioms(axioms, &plan) != 0) goto cleanup;
    dc_config cfg = {axioms, &plan, {o->timeout_ms, o->max_instances, o->rlimit}, 0};
    if (bt_decide(&cfg, pairs, rules->n_rules, o->jobs, NULL, NULL, 1000, r, &bst) != 0)
        goto cleanup;
    for (size_t i = 0; i < rules->n_rules; i++)
        if (r[i].status != RDB_PROVED && decide_alone(&cfg, &pairs[i], &r[i]) != 0)
            goto cleanup;
    if (collect(rules, r, res) != 0) goto cleanup;
    res->wall_ms = mono_ms() - t0;
    rc = PV_OK;
cleanup:
    if (rc != PV_OK) {
        snprintf(err, errlen, "out of memory");
        pv_check_free(res);
    }
    free(r);
    free(pairs);
    tg_free(&plan);
    return rc;
}

int pv_check_file(const char *path, const pv_options *o, pv_check_result *res, char *err,
                  size_t errlen) {
    rdb_file *f = NULL;
    ax_set ax;
    memset(&ax, 0, sizeof ax);
    memset(res, 0, sizeof *res);
    int rc = pv_read_kind(path, RDB_RULES, &f, err, errlen);
    if (rc == PV_OK) rc = pv_load_axioms(o->axioms_path, &ax, err, errlen);
    if (rc == PV_OK) rc = pv_check(f, &ax, o, res, err, errlen);
    rdb_free(f);
    ax_free(&ax);
    return rc;
}

void pv_check_free(pv_check_result *res) {
    free(res->failed);
    free(res->pair);
    memset(res, 0, sizeof *res);
}

/* ---- --axioms-check ---- */

typedef struct {
    const ax_set *axioms;
    const tg_plan *plan;
    ze_limits lim;
    FILE *out;
    int bad, checked;
} hygiene;

/* Z3 on identity i of set against the axioms. */
static ze_verdict z3_identity(hygiene *h, const ax_set *set, int i, char *why) {
    ze_ctx *z;
    if (ze_open(h->axioms, h->plan, &z, why, ZE_WHYLEN) != 0) return ZE_ERROR;
    ze_verdict v = ze_prove_identity(z, set, i, &h->lim, why);
    ze_close(z);
    return v;
}

static const char *triggers(const tg_plan *p, int i) {
    int l = tg_is_trigger(p->ax[i].why[0]), r = tg_is_trigger(p->ax[i].why[1]);
    return l && r ? "both sides" : l ? "lhs" : r ? "rhs" : "none";
}

/* An axiom holds concretely and is provable from the encoded axioms. */
static void check_axiom(hygiene *h, int i) {
    const ax_set *s = h->axioms;
    axc_result ar;
    char why[ZE_WHYLEN];
    int crc = axc_check(s, i, HYGIENE_INSTANCES, HYGIENE_SEED + (uint64_t)i, &ar);
    ze_verdict v = z3_identity(h, s, i, why);
    int good = crc == AXC_OK && v == ZE_PROVED && strcmp(triggers(h->plan, i), "none") != 0;
    h->checked++;
    h->bad += !good;
    if (good)
        fprintf(h->out, "ok   %-28s %d instances, z3 proved, triggers: %s\n", s->axiom[i].name,
                ar.found, triggers(h->plan, i));
    else if (crc != AXC_OK)
        fprintf(h->out, "FAIL %-28s %s\n", s->axiom[i].name, ar.msg);
    else
        fprintf(h->out, "FAIL %-28s z3: %s %s (triggers: %s)\n", s->axiom[i].name,
                ze_verdict_name(v), why, triggers(h->plan, i));
}

/* A wrong identity is refuted concretely and not provable. */
static void check_wrong(hygiene *h, const ax_set *w, int i) {
    axc_result ar;
    char why[ZE_WHYLEN];
    int crc = axc_check(w, i, HYGIENE_WRONG_INSTANCES, HYGIENE_SEED + 0x1000u + (uint64_t)i, &ar);
    ze_verdict v = z3_identity(h, w, i, why);
    int good = crc == AXC_EMISMATCH && v != ZE_PROVED && v != ZE_ERROR;
    h->checked++;
    h->bad += !good;
    if (good)
        fprintf(h->out, "ok   %-28s refuted at %s; z3: %s\n", w->axiom[i].name, ar.instance,
                ze_verdict_name(v));
    else if (v == ZE_PROVED)
        fprintf(h->out, "FAIL %-28s a false identity is provable from the axioms\n",
                w->axiom[i].name);
    else if (v == ZE_ERROR)
        fprintf(h->out, "FAIL %-28s z3: %s\n", w->axiom[i].name, why);
    else
        fprintf(h->out, "FAIL %-28s holds on every instance, but is listed as wrong\n",
                w->axiom[i].name);
}

static void plan_summary(hygiene *h) {
    int n[TG_WHY_COUNT] = {0};
    for (int i = 0; i < h->plan->n_axioms; i++)
        for (int d = 0; d < 2; d++) n[h->plan->ax[i].why[d]]++;
    fprintf(h->out, "# triggers: %d shrinking, %d growing, %d bare variables, %d lacking a "
                    "variable, %d dropped as loops",
            n[TG_SHRINKING], n[TG_GROWING_OK], n[TG_NOT_APP], n[TG_MISSING_VAR], n[TG_LOOP]);
    for (int i = 0; i < h->plan->n_axioms; i++)
        for (int d = 0; d < 2; d++)
            if (h->plan->ax[i].why[d] == TG_LOOP)
                fprintf(h->out, " %s(%s)", h->axioms->axiom[i].name, d ? "rhs" : "lhs");
    fputc('\n', h->out);
}

int pv_axioms_check(const char *axiom_path, const char *wrong_path, const pv_options *o,
                    FILE *out, int *bad, char *err, size_t errlen) {
    ax_set ax, w;
    tg_plan plan;
    memset(&ax, 0, sizeof ax);
    memset(&w, 0, sizeof w);
    memset(&plan, 0, sizeof plan);
    *bad = 0;
    int rc = pv_load_axioms(axiom_path, &ax, err, errlen);
    if (rc == PV_OK && wrong_path) rc = pv_load_axioms(wrong_path, &w, err, errlen);
    if (rc == PV_OK && tg_plan_axioms(&ax, &plan) != 0) rc = PV_ENOMEM;
    if (rc == PV_OK) {
        hygiene h = {&ax, &plan, {o->timeout_ms, o->max_instances, o->rlimit}, out, 0, 0};
        fprintf(out, "# %s: %d axioms\n", axiom_path, ax.n_axioms);
        plan_summary(&h);
        for (int i = 0; i < ax.n_axioms; i++) check_axiom(&h, i);
        if (wrong_path) fprintf(out, "# %s: %d wrong identities\n", wrong_path, w.n_axioms);
        for (int i = 0; i < w.n_axioms; i++) check_wrong(&h, &w, i);
        fprintf(out, "%d checked, %d as expected, %d not\n", h.checked, h.checked - h.bad, h.bad);
        *bad = h.bad;
    }
    tg_free(&plan);
    ax_free(&ax);
    ax_free(&w);
    return rc;
}
