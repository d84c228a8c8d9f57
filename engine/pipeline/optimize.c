/* optimize.c - eg_optimize (pipeline.h): the built-ins before, the search,
 * the built-ins after and the spellings, on the search's result and on the
 * built-ins alone; the cheaper, or the input when neither gains. */
#include "pipeline/pipeline.h"
#include "egraph/egraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The built-ins after the search and the spellings, on one graph. */
static eg_status finish(eg_graph *g, eg_cost *c, eg_builtin_stats *st, char *err, size_t errlen) {
    eg_status rc = eg_builtin_post(g, st, err, errlen);
    if (rc == EG_OK) rc = eg_spell(g, c, &st->sum_spelled, err, errlen);
    return rc;
}

/* The search the options ask for, under cost c. */
static eg_status search(const eg_graph *pre, const eg_ruleset *rs, eg_cost *c, const eg_search_opts *o,
                        eg_graph **out, eg_search_result *r, char *err, size_t errlen) {
    return o->egraph ? eg_saturate(pre, rs, c, o, out, r, err, errlen) : eg_search(pre, rs, c, o, out, r, err, errlen);
}

/* Verify's second opinion (pipeline.h): the search again on pre under
 * the analytic cost of c's device, finished as the result is; kept in
 * st->second when it is cheaper than the built-ins alone (plain) there. */
static eg_status second_opinion(const eg_graph *pre, const eg_graph *plain, const eg_ruleset *rs, eg_cost *c,
                                const eg_search_opts *o, eg_optimize_stats *st, char *err, size_t errlen) {
    int kind = eg_cost_second_opinion(eg_cost_kind_of(c));
    if (kind < 0) return EG_OK;
    eg_cost *a = NULL;
    eg_graph *out = NULL;
    eg_search_result r = {0};
    eg_search_opts quiet = *o; /* one line for it, not the search's progress again */
    quiet.progress = 0;
    if (o->progress)
        fprintf(stderr, "engine: second opinion for verify: the search again under %s costs\n",
                eg_cost_kind_name((eg_cost_kind)kind));
    eg_status rc = eg_cost_new((eg_cost_kind)kind, NULL, &a, err, errlen);
    if (rc == EG_OK) rc = search(pre, rs, a, &quiet, &out, &r, err, errlen);
    eg_builtin_stats ignored = {0};
    if (rc == EG_OK) rc = finish(out, c, &ignored, err, errlen);
    if (rc == EG_OK && eg_cost_graph(a, out) < eg_cost_graph(a, plain)) {
        st->second = out, st->second_kind = (eg_cost_kind)kind, out = NULL;
        st->second_cost = eg_cost_graph(c, st->second);
    }
    eg_search_result_free(&r);
    eg_free(out);
    eg_cost_free(a);
    return rc;
}

/* The cheaper of the search's result (out) and the built-ins alone
 * (*plain), both cloned from pre. A measured gain within the backend's
 * noise is no gain: the rules then go, and *plain becomes the result. */
static eg_graph *pick(eg_cost *c, eg_graph *out, eg_graph **plain, eg_search_result *r,
                      eg_optimize_stats *st) {
    double cost_out = eg_cost_graph(c, out), cost_plain = eg_cost_graph(c, *plain);
    if (cost_out < cost_plain * (1 - eg_cost_noise(c))) {
        r->cost_after = cost_out;
        return out;
    }
    eg_free(out);
    out = *plain;
    *plain = NULL;
    st->rules_dropped = 1, r->cost_after = cost_plain;
    return out;
}

/* The input is the result: drop everything made from it. */
static eg_status keep_input(const eg_graph *g, eg_graph **out, eg_search_result *r, eg_optimize_stats *st) {
    uint32_t *applied = r->applied;
    r->applied = NULL;
    eg_optimize_stats_free(st);    /* before the graph they borrow from */
    eg_search_result_free(r);      /* the runners-up too */
    r->applied = applied;
    eg_free(*out);
    *out = eg_graph_clone(g);
    st->kept_input = 1, r->cost_after = r->cost_before;
    memset(&st->pre, 0, sizeof st->pre); /* none of them is in the result */
    memset(&st->post, 0, sizeof st->post);
    return *out ? EG_OK : EG_ENOMEM;
}

eg_status eg_optimize(const eg_graph *g, const eg_ruleset *rs, eg_cost *c, const eg_search_opts *o,
                      int candidates, eg_graph **best, eg_search_result *r, eg_optimize_stats *st,
                      char *err, size_t errlen) {
    eg_builtin_stats plain_st = {0};
    eg_graph *pre = eg_graph_clone(g), *out = NULL, *plain = NULL;
    double cost_in = eg_cost_graph(c, g);
    eg_status rc = pre ? EG_OK : eg_errf(err, errlen, EG_ENOMEM, "optimize: %s", "out of memory");
    *best = NULL;
    memset(r, 0, sizeof *r);
    memset(st, 0, sizeof *st);
    if (rc == EG_OK) rc = eg_builtin_pre(pre, &st->pre, err, errlen);
    if (rc == EG_OK && !(plain = eg_graph_clone(pre))) rc = eg_errf(err, errlen, EG_ENOMEM, "optimize: %s", "out of memory");
    if (rc == EG_OK) rc = finish(plain, c, &plain_st, err, errlen);
    if (rc == EG_OK) rc = search(pre, rs, c, o, &out, r, err, errlen);
    if (rc == EG_OK) rc = finish(out, c, &st->post, err, errlen);
    if (rc == EG_OK && candidates && o->second_opinion) rc = second_opinion(pre, plain, rs, c, o, st, err, errlen);
    if (rc == EG_OK && !candidates) { /* the runners-up are verify's: none to finish */
        for (int k = 0; k < r->n_runners; k++) eg_free(r->runner[k]);
        r->n_runners = 0;
    }
    for (int k = 0; k < r->n_runners && rc == EG_OK; k++) {
        eg_builtin_stats rst = {0};
        rc = finish(r->runner[k], c, &rst, err, errlen);
        if (rc == EG_OK) r->runner_cost[k] = eg_cost_graph(c, r->runner[k]);
    }
    if (rc == EG_OK) {
        r->cost_before = cost_in;
        out = pick(c, out, &plain, r, st);
        if (st->rules_dropped) st->post = plain_st;
        /* out borrows from pre: pre now lives as long as out does */
        eg_graph_set_base(out, pre);
        pre = NULL;
        if (candidates) st->plain = plain, plain = NULL; /* borrows from pre too */
        if (!(r->cost_after < cost_in * (1 - eg_cost_noise(c))) && !st->second && keep_input(g, &out, r, st) != EG_OK)
            rc = eg_errf(err, errlen, EG_ENOMEM, "optimize: %s", "out of memory");
    }
    eg_free(plain); /* a clone of pre: before it */
    if (rc) {
        eg_optimize_stats_free(st); /* before out: they borrow from pre */
        eg_search_result_free(r);
        eg_free(out);
        out = NULL;
    }
    eg_free(pre);
    *best = out;
    return rc;
}

void eg_optimize_stats_free(eg_optimize_stats *st) {
    eg_free(st->plain);
    eg_free(st->second);
    st->plain = st->second = NULL;
}
