/* derive.c - pruning a ruledb by derivability and the check that nothing
 * was lost (prove.h: pv_prune_file, pv_derive_file), on the engine's
 * saturation (engine/egraph/derive.c decides each rule). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egraph/egraph.h"
#include "prove.h"
#include "sys/sys.h"

void pv_derive_defaults(pv_derive_options *o) {
    o->rounds = 4, o->nodes = 2000, o->mode = EG_DERIVE_EQUATION, o->every = 1, o->quiet = 0;
}

const char *const pv_derive_mode_names[3] = {"reach", "meet", "equation"};

static void engine_opts(const pv_derive_options *d, eg_search_opts *o) {
    eg_search_opts_init(o);
    o->egraph = 1, o->iterations = d->rounds, o->max_nodes = d->nodes;
    o->time_limit = 60; /* a safety net: the rounds and nodes decide */
}

static void progress(size_t done, size_t total, const eg_prune_stats *st, void *arg) {
    (void)arg;
    if (done % 2000 == 0 || done == total)
        fprintf(stderr, "prove: derivability: %zu of %zu equations: %zu kept, %zu derived (%zu kept again after %d check(s) "
                "against the final set)\n", done, total, st->kept, st->derived, st->restored, st->passes);
}

/* The rule of f with id `id`, or NULL. */
static const rdb_rule *by_id(const rdb_file *f, uint64_t id) {
    if (id < f->n_rules && f->rules[id].id == id) return &f->rules[id];
    for (size_t i = 0; i < f->n_rules; i++)
        if (f->rules[i].id == id) return &f->rules[i];
    return NULL;
}

int pv_prune_file(const char *in, const char *out, const pv_derive_options *d, pv_prune_report *r, char *err,
                  size_t errlen) {
    rdb_file *f = NULL, *g = NULL;
    eg_ruleset *rs = NULL;
    unsigned char *keep = NULL;
    eg_search_opts o;
    eg_prune_stats st;
    char why[EG_ERRLEN] = "";
    int rc = PV_OK;
    memset(r, 0, sizeof *r);
    engine_opts(d, &o);
    if ((rc = pv_read_kind(in, RDB_RULES, &f, err, errlen)) != PV_OK) return rc;
    if (eg_ruleset_from_rdb(f, &rs, why, sizeof why) != EG_OK) {
        snprintf(err, errlen, "%s: %s", in, why);
        rc = PV_EINPUT;
    }
    size_t n = rs ? eg_ruleset_count(rs) : 0;
    if (rc == PV_OK && (!(keep = malloc(n + 1)) || !(g = rdb_new(RDB_RULES)))) rc = PV_ENOMEM;
    if (rc == PV_OK && eg_prune_derivable(rs, &o, (eg_derive_mode)d->mode, keep, &st, d->quiet ? NULL : progress, NULL, why, sizeof why) != EG_OK) {
        snprintf(err, errlen, "%s: %s", in, why);
        rc = PV_ENOMEM;
    }
    if (rc == PV_OK) {
        memcpy(g->digest, f->digest, sizeof g->digest);
        g->gen = f->gen;
        if (g->gen.n_notes < RDB_MAX_NOTES)
            snprintf(g->gen.notes[g->gen.n_notes++], RDB_NOTE_LEN, "pruned by derivability: %zu of %zu equations kept (rounds %d, e-nodes %d, by %s)",
                     st.kept, st.rules, d->rounds, d->nodes, pv_derive_mode_names[d->mode]);
        r->in = f->n_rules, r->equations = st.rules, r->kept = st.kept, r->derived = st.derived, r->seconds = st.seconds;
        r->skipped = eg_ruleset_skipped(rs);
        r->restored = st.restored, r->passes = st.passes;
    }
    /* in the input's order, one rule per equation kept: the engine reads
     * it both ways, so its reverse (in the file or made) is not written */
    for (size_t i = 0; rc == PV_OK && i < n; i++) {
        size_t m = eg_ruleset_mate(rs, i);
        if (!keep[i] || eg_ruleset_reversed(rs, i) || (m != EG_NO_MATE && m < i)) continue;
        const rdb_rule *x = by_id(f, eg_ruleset_rule(rs, i)->id);
        if (!x || rdb_add_rule(g, &x->src, &x->dst, &x->prover) != RDB_OK) rc = PV_ENOMEM;
    }
    if (rc == PV_OK && rdb_write(out, g, err, errlen) != RDB_OK) rc = PV_EIO;
    free(keep);
    eg_ruleset_free(rs);
    rdb_free(f), rdb_free(g);
    return rc;
}

int pv_derive_file(const char *shipped, const char *full, const pv_derive_options *d, pv_derive_report *r,
                   FILE *neither, char *err, size_t errlen) {
    rdb_file *s = NULL, *f = NULL, *both = NULL;
    eg_ruleset *rs = NULL;
    unsigned char *enabled = NULL;
    rdb_delta delta = {0};
    eg_search_opts o;
    char why[EG_ERRLEN] = "";
    int rc = PV_OK;
    double t0 = eg_now_s();
    memset(r, 0, sizeof *r);
    engine_opts(d, &o);
    if ((rc = pv_read_kind(shipped, RDB_RULES, &s, err, errlen)) == PV_OK) rc = pv_read_kind(full, RDB_RULES, &f, err, errlen);
    if (rc == PV_OK && rdb_diff(f, s, &delta) != RDB_OK) rc = PV_ENOMEM;
    /* the shipped rules, then those of full it lacks: one ruleset, the
     * shipped ones enabled */
    if (rc == PV_OK && !(both = rdb_new(RDB_RULES))) rc = PV_ENOMEM;
    if (rc == PV_OK) memcpy(both->digest, s->digest, sizeof both->digest);
    for (size_t i = 0; rc == PV_OK && i < s->n_rules; i++)
        if (rdb_add_rule(both, &s->rules[i].src, &s->rules[i].dst, &s->rules[i].prover) != RDB_OK) rc = PV_ENOMEM;
    for (size_t i = 0; rc == PV_OK && i < delta.n_only_a; i++) {
        const rdb_rule *x = &f->rules[delta.only_a[i]];
        if (rdb_add_rule(both, &x->src, &x->dst, &x->prover) != RDB_OK) rc = PV_ENOMEM;
    }
    if (rc == PV_OK && eg_ruleset_from_rdb(both, &rs, why, sizeof why) != EG_OK) {
        snprintf(err, errlen, "%s: %s", shipped, why);
        rc = PV_EINPUT;
    }
    size_t n = rs ? eg_ruleset_count(rs) : 0;
    if (rc == PV_OK && !(enabled = malloc(n + 1))) rc = PV_ENOMEM;
    /* a shipped rule, its reverse (made by the engine, of the same id) and a
     * rule of full that is that reverse are what the engine applies */
    for (size_t i = 0; rc == PV_OK && i < n; i++) enabled[i] = eg_ruleset_rule(rs, i)->id < s->n_rules;
    for (size_t i = 0; rc == PV_OK && i < n; i++) {
        size_t m = eg_ruleset_mate(rs, i);
        if (!enabled[i] && m != EG_NO_MATE && eg_ruleset_rule(rs, m)->id < s->n_rules) enabled[i] = 1, r->reversed++;
    }
    if (rc == PV_OK) r->full = f->n_rules, r->shipped = f->n_rules - delta.n_only_a;
    for (size_t i = 0, k = 0; rc == PV_OK && i < n; i++) {
        if (enabled[i] || eg_ruleset_reversed(rs, i)) continue; /* the rules of full only */
        if (k++ % (size_t)d->every) continue;                  /* a sample */
        r->checked++;
        int derived = 0;
        if (eg_derive_equation(rs, i, enabled, &o, (eg_derive_mode)d->mode, 0, &derived, why, sizeof why) != EG_OK) {
            snprintf(err, errlen, "%s: %s", full, why);
            rc = PV_ENOMEM;
            break;
        }
        r->derived += derived;
        if (!derived && neither) {
            char text[1024];
            eg_ruleset_rule_text(rs, i, text, sizeof text);
            fprintf(neither, "not derived: %s\n", text);
        }
        if (!d->quiet && (r->derived + 1) % 2000 == 0) fprintf(stderr, "prove: derive: %zu derived\n", r->derived);
    }
    r->skipped = rs ? eg_ruleset_skipped(rs) : 0;
    r->neither = r->checked - r->derived; /* (the skipped ones are neither too) */
    r->seconds = eg_now_s() - t0;
    free(enabled);
    eg_ruleset_free(rs);
    rdb_delta_free(&delta);
    rdb_free(s), rdb_free(f), rdb_free(both);
    return rc;
}
