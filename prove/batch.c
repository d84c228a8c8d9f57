/* batch.c - the three phases of batch.h: stage 1 per pair, grouping by
 * question, stages 2 and 3 per group on fixed lanes. */
#include "batch.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "emit.h"
#include "workers.h"

typedef struct {
    const dc_config *cfg;
    const bt_pair *p;
    size_t n;
    dc_result *res;
    size_t *group_of; /* per pair: its group, or SIZE_MAX when decided by stage 1 */
    size_t *first;    /* per group: the pair whose graphs and seed it uses */
    size_t lane_end[BT_LANES]; /* groups of lane l: [lane_end[l-1], lane_end[l]) */
    dc_result *gres;
    size_t n_groups;
    atomic_size_t done, errors, by[RDB_PROOF_COUNT];
    atomic_size_t first_budget; /* the group first out of budget, or SIZE_MAX */
    const char *phase;
    size_t total;
    bt_progress progress;
    void *arg;
} batch;

static void tick(void *arg, size_t done_lanes, size_t lanes) {
    batch *b = arg;
    size_t by[RDB_PROOF_COUNT];
    (void)done_lanes;
    (void)lanes;
    for (int k = 0; k < RDB_PROOF_COUNT; k++) by[k] = atomic_load(&b->by[k]);
    size_t g = atomic_load(&b->first_budget);
    b->progress(b->arg, b->phase, atomic_load(&b->done), b->total, by,
                g == SIZE_MAX ? NULL : &b->p[b->first[g]]);
}

static void begin(batch *b, const char *phase, size_t total) {
    b->phase = phase;
    b->total = total;
    atomic_store(&b->done, 0);
    for (int k = 0; k < RDB_PROOF_COUNT; k++) atomic_store(&b->by[k], 0);
}

/* ---- phase 1 ---- */

static void shapes_work(void *arg, size_t i) {
    batch *b = arg;
    const bt_pair *p = &b->p[i];
    dc_result *r = &b->res[i];
    if (!p->shapes) {
        memset(r, 0, sizeof *r);
        r->status = RDB_UNCHECKED;
    } else if (dc_shapes(p->a, p->b, p->shapes, p->n_shapes, p->seed, r) != 0) {
        atomic_fetch_add(&b->errors, 1);
    }
    atomic_fetch_add(&b->by[r->status], 1);
    atomic_fetch_add(&b->done, 1);
}

/* ---- phase 2 ---- */

unsigned bt_lane(const em_key *k) { return (unsigned)(XXH3_64bits(k->b, k->len) % BT_LANES); }

/* The groups of one lane, numbered on from b->n_groups in order of their
 * first pair. */
static int group_lane(batch *b, unsigned lane, size_t n_lane) {
    em_map m;
    if (em_map_init(&m, n_lane) != 0) {
        em_map_free(&m);
        return -1;
    }
    size_t base = b->n_groups;
    for (size_t i = 0; i < b->n; i++) {
        if (b->p[i].lane != lane || b->res[i].status != RDB_UNCHECKED) continue;
        em_key k;
        em_pair_key(b->p[i].a, b->p[i].b, &k);
        size_t g = em_map_put(&m, &k, b->n_groups - base) + base;
        if (g == b->n_groups) b->first[b->n_groups++] = i;
        b->group_of[i] = g;
    }
    em_map_free(&m);
    b->lane_end[lane] = b->n_groups;
    return 0;
}

static int group(batch *b) {
    size_t per_lane[BT_LANES] = {0};
    b->group_of = malloc((b->n + 1) * sizeof *b->group_of);
    b->first = malloc((b->n + 1) * sizeof *b->first);
    if (!b->group_of || !b->first) return -1;
    for (size_t i = 0; i < b->n; i++) {
        b->group_of[i] = SIZE_MAX;
        if (b->res[i].status == RDB_UNCHECKED) per_lane[b->p[i].lane % BT_LANES]++;
    }
    for (unsigned l = 0; l < BT_LANES; l++)
        if (group_lane(b, l, per_lane[l]) != 0) return -1;
    return 0;
}

/* ---- phase 3 ---- */

static void lane_work(void *arg, size_t lane) {
    batch *b = arg;
    dc_worker w = {b->cfg, NULL, 0};
    for (size_t g = lane ? b->lane_end[lane - 1] : 0; g < b->lane_end[lane]; g++) {
        const bt_pair *p = &b->p[b->first[g]];
        if (dc_decide(&w, p->a, p->b, p->shapes, p->n_shapes, p->seed, &b->gres[g]) != 0)
            atomic_fetch_add(&b->errors, 1);
        if (b->gres[g].status == RDB_TIMEOUT && b->gres[g].cls == DC_BUDGET) {
            size_t none = SIZE_MAX;
            atomic_compare_exchange_strong(&b->first_budget, &none, g);
        }
        atomic_fetch_add(&b->by[b->gres[g].status], 1);
        atomic_fetch_add(&b->done, 1);
    }
    dc_worker_close(&w);
}

int bt_decide(const dc_config *cfg, const bt_pair *pairs, size_t n, int jobs,
              bt_progress progress, void *arg, unsigned interval_ms, dc_result *res,
              bt_stats *st) {
    batch b;
    int rc = -1;
    memset(&b, 0, sizeof b);
    memset(st, 0, sizeof *st);
    b.cfg = cfg;
    b.p = pairs;
    b.n = n;
    b.res = res;
    b.progress = progress;
    b.arg = arg;
    wk_tick t = progress ? tick : NULL;
    atomic_store(&b.first_budget, SIZE_MAX);
    begin(&b, "shapes", n);
    wk_run(n, jobs, shapes_work, t, interval_ms, &b);
    if (group(&b) != 0 || !(b.gres = calloc(b.n_groups + 1, sizeof *b.gres))) goto cleanup;
    begin(&b, "proving", b.n_groups);
    wk_run(BT_LANES, jobs, lane_work, t, interval_ms, &b);
    for (size_t i = 0; i < n; i++)
        if (b.group_of[i] != SIZE_MAX) res[i] = b.gres[b.group_of[i]];
    st->distinct = b.n_groups;
    rc = 0;
cleanup:
    st->errors = atomic_load(&b.errors);
    free(b.group_of);
    free(b.first);
    free(b.gres);
    return rc;
}
