/* derive.c - pruning a ruledb by derivability and the check that nothing
 * was lost (prove.h: pv_prune_file, pv_derive_file), on the engine's
 * saturation (engine/egraph/derive.c decides each rule). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derive.h"
#include "sys/sys.h"
#include "workers.h"

void pv_derive_defaults(pv_derive_options *o) {
    o->rounds = 0, o->nodes = 0, o->mode = -1, o->every = 1, o->quiet = 0, o->jobs = 0, o->from = NULL;
}

#define PRUNED_NOTE "pruned by derivability:"

const char *const pv_derive_mode_names[PV_DERIVE_MODES] = {"reach", "meet", "equation", "detours"};

/* d with its bounds and mode not given (0, -1) filled: the most a note of
 * f says the file was pruned with (an older file pruned in passes names
 * each pass's) and the last note's mode, else the defaults. So `prove
 * --derive` checks a pruned file as it was made. */
pv_derive_options pv_derive_bounds(const pv_derive_options *d, const rdb_file *f) {
    pv_derive_options b = *d;
    int rounds = 0, nodes = 0, mode = -1;
    for (int k = 0; f && k < f->gen.n_notes; k++) {
        const char *at = strstr(f->gen.notes[k], "(rounds ");
        char by[16] = "";
        int r, n;
        if (strncmp(f->gen.notes[k], PRUNED_NOTE, strlen(PRUNED_NOTE)) || !at ||
            sscanf(at, "(rounds %d, e-nodes %d, by %15[a-z]", &r, &n, by) < 2)
            continue;
        if (r > rounds) rounds = r;
        if (n > nodes) nodes = n;
        for (int m = 0; m < PV_DERIVE_MODES; m++)
            if (!strcmp(by, pv_derive_mode_names[m])) mode = m;
    }
    if (!b.rounds) b.rounds = rounds > 0 ? rounds : PV_DERIVE_ROUNDS;
    if (!b.nodes) b.nodes = nodes > 0 ? nodes : PV_DERIVE_NODES;
    if (b.mode < 0) b.mode = mode >= 0 ? mode : EG_DERIVE_EQUATION;
    return b;
}

void pv_derive_engine_opts(const pv_derive_options *d, eg_search_opts *o) {
    eg_search_opts_init(o);
    o->egraph = 1, o->iterations = d->rounds, o->max_nodes = d->nodes;
    o->time_limit = 60; /* a safety net: the rounds and nodes decide */
}

static void progress(size_t done, size_t total, const eg_prune_stats *st, void *arg) {
    (void)arg;
    if (done % 2000 == 0 || done == total)
        fprintf(stderr, "prove: derivability: %zu of %zu equations: %zu kept, %zu derived\n", done, total, st->kept,
                st->derived);
}

/* The rule of f with id `id`, or NULL. */
static const rdb_rule *by_id(const rdb_file *f, uint64_t id) {
    if (id < f->n_rules && f->rules[id].id == id) return &f->rules[id];
    for (size_t i = 0; i < f->n_rules; i++)
        if (f->rules[i].id == id) return &f->rules[i];
    return NULL;
}

/* The rule of f that rule i of rs, read from s and the rules of f to
 * check (derive_against, f_of[k]: the k-th of those), is. */
static size_t f_rule(const eg_ruleset *rs, size_t i, const rdb_file *s, const size_t *f_of) {
    return f_of[eg_ruleset_rule(rs, i)->id - s->n_rules];
}

/* Called for each rule of FULL checked and not derived: rs holds it as
 * rule i, and it is rule fi of FULL. */
typedef void (*missed_fn)(const eg_ruleset *rs, size_t i, size_t fi, void *arg);

/* The rules to check, decided on worker threads: each decision reads the
 * ruleset and builds its own e-graph, so the verdicts do not depend on
 * the thread count or the order. */
typedef struct {
    const eg_ruleset *rs;
    const unsigned char *enabled;
    const eg_search_opts *o;
    eg_derive_mode mode;
    const size_t *rule;    /* [n] the rule of rs each item checks */
    signed char *derived;  /* [n] EG_DERIVED_OWN or _ALL, 0 not, -1 out of memory */
    int quiet;
} checks;

static void check_one(void *ctx, size_t k) {
    const checks *c = ctx;
    char why[EG_ERRLEN];
    int derived = 0;
    eg_status rc = eg_derive_equation(c->rs, c->rule[k], c->enabled, c->o, c->mode, 0, &derived, why, sizeof why);
    c->derived[k] = rc != EG_OK ? -1 : (signed char)derived;
}

static void check_tick(void *ctx, size_t done, size_t total) {
    const checks *c = ctx;
    if (!c->quiet) fprintf(stderr, "prove: derive: %zu of %zu checked\n", done, total);
}

/* Every rule of f is in s, the reverse of one of its rules, or derived
 * from s's rules as the engine reads the file s (its rules, then their
 * reverses: bounded saturation depends on that order, so a rule of f that
 * is one of them as the engine reads it, a twin with a unit enlarge
 * written out or a reverse, is counted so and not added: the order and
 * the verdicts are then those of s alone, whatever f holds); every d->every'th
 * of the rules to derive is checked, each one not derived passed to
 * missed. settled (NULL: none), one per rule of f: on entry, 1 for a rule
 * derived before under the rules over its own operators, none of which
 * has changed since, taken as derived unchecked; on return, 1 for each
 * rule so derived. @return PV_OK or PV_ENOMEM / PV_EINPUT with a message. */
static int derive_against(const rdb_file *s, const rdb_file *f, const char *name, const pv_derive_options *d,
                          unsigned char *settled, pv_derive_report *r, missed_fn missed, void *arg, char *err,
                          size_t errlen) {
    rdb_file *both = NULL;
    eg_ruleset *rs = NULL, *engine = NULL;
    eg_rule_index *ix = NULL;
    size_t *f_of = NULL, n_f = 0, same = 0, reverse = 0;
    unsigned char *enabled = NULL;
    rdb_delta delta = {0};
    eg_search_opts o;
    char why[EG_ERRLEN] = "";
    int rc = PV_OK;
    double t0 = eg_now_s();
    memset(r, 0, sizeof *r);
    pv_derive_engine_opts(d, &o);
    if (rdb_diff(f, s, &delta) != RDB_OK) rc = PV_ENOMEM;
    /* the shipped rules, then those of full it lacks: one ruleset, the
     * shipped ones enabled */
    if (rc == PV_OK && !(both = rdb_new(RDB_RULES))) rc = PV_ENOMEM;
    if (rc == PV_OK) memcpy(both->digest, s->digest, sizeof both->digest);
    for (size_t i = 0; rc == PV_OK && i < s->n_rules; i++)
        if (rdb_add_rule(both, &s->rules[i].src, &s->rules[i].dst, &s->rules[i].prover) != RDB_OK) rc = PV_ENOMEM;
    /* the rules of full the engine reads from s already: not checked */
    if (rc == PV_OK && eg_ruleset_from_rdb(s, &engine, why, sizeof why) != EG_OK) {
        snprintf(err, errlen, "%s: %s", name, why);
        rc = PV_EINPUT;
    }
    if (rc == PV_OK && (eg_rule_index_new(engine, &ix) != EG_OK || !(f_of = malloc(sizeof *f_of * (delta.n_only_a + 1)))))
        rc = PV_ENOMEM;
    for (size_t i = 0; rc == PV_OK && i < delta.n_only_a; i++) {
        const rdb_rule *x = &f->rules[delta.only_a[i]];
        size_t e = eg_rule_index_find(ix, x);
        if (e != EG_NO_MATE) {
            if (eg_ruleset_reversed(engine, e)) reverse++;
            else same++;
            continue;
        }
        f_of[n_f++] = delta.only_a[i];
        if (rdb_add_rule(both, &x->src, &x->dst, &x->prover) != RDB_OK) rc = PV_ENOMEM;
    }
    if (rc == PV_OK && eg_ruleset_from_rdb(both, &rs, why, sizeof why) != EG_OK) {
        snprintf(err, errlen, "%s: %s", name, why);
        rc = PV_EINPUT;
    }
    size_t n = rs ? eg_ruleset_count(rs) : 0;
    if (rc == PV_OK && !(enabled = malloc(n + 1))) rc = PV_ENOMEM;
    /* a shipped rule and its reverse (made by the engine, of the same id)
     * are what the engine applies; no rule of full is their mate, since
     * those the index finds are left out */
    for (size_t i = 0; rc == PV_OK && i < n; i++) enabled[i] = eg_ruleset_rule(rs, i)->id < s->n_rules;
    if (rc == PV_OK) r->full = f->n_rules, r->shipped = f->n_rules - delta.n_only_a + same, r->reversed = reverse;
    size_t *rule = NULL;
    signed char *derived = NULL;
    if (rc == PV_OK && (!(rule = malloc(sizeof *rule * (n + 1))) || !(derived = malloc(n + 1)))) rc = PV_ENOMEM;
    size_t checking = 0;
    for (size_t i = 0, k = 0; rc == PV_OK && i < n; i++) {
        if (enabled[i] || eg_ruleset_reversed(rs, i)) continue; /* the rules of full only */
        if (k++ % (size_t)d->every) continue;                  /* a sample */
        r->checked++;
        if (settled && settled[f_rule(rs, i, s, f_of)]) r->derived++, r->settled++;
        else rule[checking++] = i;
    }
    checks c = {rs, enabled, &o, (eg_derive_mode)d->mode, rule, derived, d->quiet};
    if (rc == PV_OK && checking) wk_run(checking, d->jobs, check_one, check_tick, 10000, &c);
    for (size_t k = 0; rc == PV_OK && k < checking; k++) { /* in order: missed() sees the same sequence */
        if (derived[k] < 0) {
            snprintf(err, errlen, "%s: out of memory deriving a rule", name);
            rc = PV_ENOMEM;
            break;
        }
        size_t i = rule[k], fi = f_rule(rs, i, s, f_of);
        r->derived += derived[k] != 0;
        if (settled) settled[fi] = derived[k] == EG_DERIVED_OWN;
        if (!derived[k] && missed) missed(rs, i, fi, arg);
    }
    free(rule), free(derived);
    r->skipped = rs ? eg_ruleset_skipped(rs) : 0;
    r->neither = r->checked - r->derived; /* (the skipped ones are neither too) */
    r->seconds = eg_now_s() - t0;
    free(enabled), free(f_of);
    eg_rule_index_free(ix);
    eg_ruleset_free(rs), eg_ruleset_free(engine);
    rdb_delta_free(&delta);
    rdb_free(both);
    return rc;
}

/* The file pv_prune_file writes: in f's order, one rule per equation kept
 * (keep[] over rs, read from f); the engine reads it both ways, so its
 * reverse (in f or made) is not written. */
/* The operators of rule r's two sides (the engine's narrowing reads them). */
static ops_set ops_of(const rdb_rule *r) { return rg_ops_written(&r->src) | rg_ops_written(&r->dst); }

static int kept_file(const rdb_file *f, const eg_ruleset *rs, const unsigned char *keep, rdb_file **out) {
    rdb_file *g = rdb_new(RDB_RULES);
    if (!g) return PV_ENOMEM;
    memcpy(g->digest, f->digest, sizeof g->digest);
    g->gen = f->gen;
    for (size_t i = 0, n = eg_ruleset_count(rs); i < n; i++) {
        size_t m = eg_ruleset_mate(rs, i);
        if (!keep[i] || eg_ruleset_reversed(rs, i) || (m != EG_NO_MATE && m < i)) continue;
        const rdb_rule *x = by_id(f, eg_ruleset_rule(rs, i)->id);
        if (!x || rdb_add_rule(g, &x->src, &x->dst, &x->prover) != RDB_OK) return rdb_free(g), PV_ENOMEM;
    }
    *out = g;
    return PV_OK;
}

/* Checks of the dropped rules against the file: each one keeps a few (a
 * rule kept changes what the bounded saturations reach), so they go on
 * until one keeps none; each keeps at least one rule, so they end. This
 * many is a safety net against a set that grows by a rule a check: the
 * file is then written as it stands and prove --derive names the rules
 * left (the report says so). */
#define PRUNE_PASSES 200

typedef struct {
    const eg_ruleset *rs; /* the pruning's, read from f */
    size_t *rs_of_f;      /* f's rule -> its index in rs (SIZE_MAX: skipped) */
    unsigned char *keep;
    size_t restored;
    ops_set *now;   /* [n_now] the operators of each rule kept by this check */
    size_t n_now;
} restore;

/* A rule of f the file does not derive: its equation is kept after all.
 * Not when its mate is kept already: the file holds the equation. (Since
 * a reverse pairs only for the same 1x1 guards, twins that differ by a
 * unit enlarge no longer share one; the case stays for two rules of f
 * the engine reads as one, which prove's dedup does not merge.) */
static void restore_missed(const eg_ruleset *rs, size_t i, size_t fi, void *arg) {
    (void)rs, (void)i;
    restore *x = arg;
    size_t k = x->rs_of_f[fi];
    if (k == SIZE_MAX || x->keep[k]) return;
    size_t m = eg_ruleset_mate(x->rs, k);
    if (m != EG_NO_MATE && x->keep[m]) return;
    x->keep[k] = 1;
    if (m != EG_NO_MATE) x->keep[m] = 1;
    x->restored++;
    x->now[x->n_now++] = ops_of(eg_ruleset_rule(x->rs, k));
}

/* After a check: a rule settled under the rules over its own operators
 * is checked again when a rule just kept is over those operators (it is
 * among them now); the others' verdicts stand (eg_derive_equation). Both
 * as the engine reads them, unit enlarges stripped. */
static void unsettle(const rdb_file *f, restore *x, unsigned char *settled) {
    for (size_t j = 0; j < f->n_rules; j++) {
        if (!settled[j]) continue;
        if (x->rs_of_f[j] == SIZE_MAX) { /* skipped by the engine: never settled, kept as it is */
            settled[j] = 0;
            continue;
        }
        ops_set own = ops_of(eg_ruleset_rule(x->rs, x->rs_of_f[j]));
        for (size_t k = 0; k < x->n_now && settled[j]; k++)
            if (!(x->now[k] & ~own)) settled[j] = 0;
    }
    x->n_now = 0;
}

int pv_prune_file(const char *in, const char *out, const pv_derive_options *given, pv_prune_report *r, char *err,
                  size_t errlen) {
    const pv_derive_options bounds = pv_derive_bounds(given, NULL), *d = &bounds;
    rdb_file *f = NULL, *g = NULL, *from = NULL;
    eg_ruleset *rs = NULL;
    unsigned char *keep = NULL, *candidates = NULL, *settled = NULL;
    size_t *rs_of_f = NULL;
    ops_set *now = NULL;
    rdb_delta delta = {0};
    eg_search_opts o;
    eg_prune_stats st;
    char why[EG_ERRLEN] = "";
    int rc = PV_OK;
    double t0 = eg_now_s();
    memset(r, 0, sizeof *r);
    r->rounds = d->rounds, r->nodes = d->nodes, r->mode = d->mode;
    pv_derive_engine_opts(d, &o);
    if ((rc = pv_read_kind(in, RDB_RULES, &f, err, errlen)) != PV_OK) return rc;
    if (d->from && (rc = pv_read_kind(d->from, RDB_RULES, &from, err, errlen)) != PV_OK) return rdb_free(f), rc;
    if (eg_ruleset_from_rdb(f, &rs, why, sizeof why) != EG_OK) {
        snprintf(err, errlen, "%s: %s", in, why);
        rc = PV_EINPUT;
    }
    size_t n = rs ? eg_ruleset_count(rs) : 0;
    if (rc == PV_OK && (!(keep = malloc(n + 1)) || !(rs_of_f = malloc(sizeof *rs_of_f * (f->n_rules + 1))) ||
                        !(settled = calloc(f->n_rules + 1, 1)) || !(now = malloc(sizeof *now * (f->n_rules + 1)))))
        rc = PV_ENOMEM;
    if (rc == PV_OK) {
        for (size_t j = 0; j < f->n_rules; j++) rs_of_f[j] = SIZE_MAX;
        for (size_t i = 0; i < n; i++) {
            const rdb_rule *x = eg_ruleset_reversed(rs, i) ? NULL : by_id(f, eg_ruleset_rule(rs, i)->id);
            if (x) rs_of_f[x - f->rules] = i;
        }
    }
    /* with --from, only the equations of that file may be kept: the rules
     * of f it lacks are what it was pruned of */
    if (rc == PV_OK && from && (!(candidates = malloc(n + 1)) || rdb_diff(f, from, &delta) != RDB_OK)) rc = PV_ENOMEM;
    if (rc == PV_OK && from) {
        memset(candidates, 1, n);
        for (size_t k = 0; k < delta.n_only_a; k++)
            if (rs_of_f[delta.only_a[k]] != SIZE_MAX) candidates[rs_of_f[delta.only_a[k]]] = 0;
        for (size_t i = 0; i < n; i++) /* a reverse the engine made reads its rule's */
            if (eg_ruleset_reversed(rs, i) && eg_ruleset_mate(rs, i) != EG_NO_MATE)
                candidates[i] = candidates[eg_ruleset_mate(rs, i)];
    }
    if (rc == PV_OK && eg_prune_derivable(rs, &o, (eg_derive_mode)d->mode, candidates, keep, &st,
                                          d->quiet ? NULL : progress, NULL, why, sizeof why) != EG_OK) {
        snprintf(err, errlen, "%s: %s", in, why);
        rc = PV_ENOMEM;
    }
    /* Each dropped rule is checked against the file as the engine reads it
     * and kept when not derived, until a check keeps none: then prove
     * --derive finds every dropped rule derived. A check after the first
     * takes the verdicts that cannot have changed (unsettle) from the one
     * before; the last one, which keeps none, checks every rule. */
    restore x = {rs, rs_of_f, keep, 0, now, 0};
    for (int pass = 0, whole = 1; rc == PV_OK && pass < PRUNE_PASSES; pass++) {
        pv_derive_report dr;
        size_t before = x.restored;
        rdb_free(g), g = NULL;
        if (whole) memset(settled, 0, f->n_rules);
        if ((rc = kept_file(f, rs, keep, &g)) == PV_OK)
            rc = derive_against(g, f, in, d, settled, &dr, restore_missed, &x, err, errlen);
        r->passes = pass + 1, r->settled += dr.settled;
        if (!d->quiet && rc == PV_OK)
            fprintf(stderr,
                    "prove: derivability: check %d against the file: %zu derived (%zu of them as before), %zu not: "
                    "kept after all\n",
                    pass + 1, dr.derived, dr.settled, x.restored - before);
        if (rc == PV_OK && x.restored == before && whole) r->converged = 1;
        if (rc != PV_OK || r->converged) break;
        whole = x.restored == before; /* none kept by a partial check: once more, every rule */
        unsettle(f, &x, settled);
    }
    if (rc == PV_OK && x.restored) { /* the last pass restored some: the file with them */
        rdb_free(g), g = NULL;
        rc = kept_file(f, rs, keep, &g);
    }
    if (rc == PV_OK) {
        st.kept += x.restored, st.derived -= x.restored;
        if (g->gen.n_notes < RDB_MAX_NOTES)
            snprintf(g->gen.notes[g->gen.n_notes++], RDB_NOTE_LEN, PRUNED_NOTE " %zu of %zu equations kept (rounds %d, e-nodes %d, by %s)",
                     st.kept, st.rules, d->rounds, d->nodes, pv_derive_mode_names[d->mode]);
        r->in = f->n_rules, r->equations = st.rules, r->kept = st.kept, r->derived = st.derived;
        r->skipped = eg_ruleset_skipped(rs);
        r->restored = x.restored;
    }
    if (rc == PV_OK && rdb_write(out, g, err, errlen) != RDB_OK) rc = PV_EIO;
    r->seconds = eg_now_s() - t0;
    free(keep), free(rs_of_f), free(candidates), free(settled), free(now);
    rdb_delta_free(&delta);
    eg_ruleset_free(rs);
    rdb_free(f), rdb_free(g), rdb_free(from);
    return rc;
}

static void print_missed(const eg_ruleset *rs, size_t i, size_t fi, void *arg) {
    (void)fi;
    char text[1024];
    eg_ruleset_rule_text(rs, i, text, sizeof text);
    fprintf(arg, "not derived: %s\n", text);
}

int pv_derive_file(const char *shipped, const char *full, const pv_derive_options *d, pv_derive_report *r,
                   FILE *neither, char *err, size_t errlen) {
    rdb_file *s = NULL, *f = NULL;
    memset(r, 0, sizeof *r);
    int rc = pv_read_kind(shipped, RDB_RULES, &s, err, errlen);
    if (rc == PV_OK) rc = pv_read_kind(full, RDB_RULES, &f, err, errlen);
    if (rc == PV_OK) {
        pv_derive_options b = pv_derive_bounds(d, s);
        rc = derive_against(s, f, full, &b, NULL, r, neither ? print_missed : NULL, neither, err, errlen);
        r->rounds = b.rounds, r->nodes = b.nodes;
    }
    rdb_free(s), rdb_free(f);
    return rc;
}
