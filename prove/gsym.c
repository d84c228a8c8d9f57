/* gsym.c - rules proved for any group count (gsym.h). */
#include "gsym.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define GS_COMBOS 4096 /* shape variants tried per rule at most */
#define GS_DIM_MAX 64  /* keeps the evaluation at count 2 small */

/* g with each literal count lit[s] replaced by symbol s. @return 1 when
 * it wrote a symbol. */
static int symbolize(rg_graph *g, const int32_t *lit, int n_lit) {
    int wrote = 0;
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < ops_table[g->node[j].op].n_params; k++) {
            int32_t *v = &g->node[j].param[k];
            if (ops_table[g->node[j].op].pkind[k] != PK_GROUPS || *v < 1) continue;
            for (int s = 0; s < n_lit; s++)
                if (lit[s] == *v) *v = RG_SYM_GROUPS(s), wrote = 1;
        }
    return wrote;
}

/* Add g's literal counts not in lit[0..*n) to it, in order of first
 * appearance. @return 0 when there are more than RG_MAX_GSYMS. */
static int collect(const rg_graph *g, int32_t *lit, int *n_lit) {
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < ops_table[g->node[j].op].n_params; k++) {
            int32_t v = g->node[j].param[k];
            if (ops_table[g->node[j].op].pkind[k] != PK_GROUPS || v < 1) continue;
            int s = 0;
            while (s < *n_lit && lit[s] != v) s++;
            if (s == *n_lit) {
                if (*n_lit == RG_MAX_GSYMS) return 0;
                lit[(*n_lit)++] = v;
            }
        }
    return 1;
}

/* The generalized rule of src -> dst: the literal counts, the source's
 * first, in order of first appearance become g0, g1, .. on both sides. A
 * count only dst writes is fine: the engine takes it from the shapes of
 * its conv's inputs, as rg_node_params does. @return 1 when there is one. */
static int generalize(const rg_graph *src, const rg_graph *dst, rg_graph *gsrc, rg_graph *gdst) {
    int32_t lit[RG_MAX_GSYMS];
    int n_lit = 0;
    if (!collect(src, lit, &n_lit) || !collect(dst, lit, &n_lit) || !n_lit) return 0;
    *gsrc = *src, *gdst = *dst;
    int wrote = symbolize(gsrc, lit, n_lit);
    return symbolize(gdst, lit, n_lit) || wrote;
}

/* 1 when g is well shaped at in with every symbol it writes at 2 or more
 * and no dim above GS_DIM_MAX. */
static int at_count2(const rg_graph *g, const ten_shape *in) {
    ten_shape shape[RG_MAX_REFS];
    int32_t gval[RG_MAX_GSYMS] = {0}, p[OPS_MAX_PARAMS];
    if (rg_infer_shapes(g, in, shape, NULL, 0) != RG_OK) return 0;
    for (int j = 0; j < g->n_nodes; j++) {
        if (rg_node_params(g, j, in, shape, gval, p) != RG_OK) return 0;
        for (int a = 0; a < shape[RG_NODE(j)].rank; a++)
            if (shape[RG_NODE(j)].dim[a] > GS_DIM_MAX) return 0;
        for (int k = 0; k < ops_table[g->node[j].op].n_params; k++)
            if (RG_IS_SYM_GROUPS(ops_table[g->node[j].op].pkind[k], g->node[j].param[k]) && p[k] < 2) return 0;
    }
    return 1;
}

/* Input shapes near the class shapes cls[0..n) where both sides hold every
 * symbol at 2 or more: each input as it is, with dim 1 halved, dim 0
 * doubled or dim 1 doubled, the first fit in odometer order. @return 1
 * when found. */
static int count2_shapes(const rg_graph *a, const rg_graph *b, const ten_shape *cls, int n, ten_shape *out) {
    int at[RG_MAX_INPUTS] = {0};
    for (int tries = 0; tries < GS_COMBOS; tries++) {
        int ok = 1;
        for (int i = 0; i < n && ok; i++) {
            out[i] = cls[i];
            ten_shape *s = &out[i];
            switch (at[i]) {
            case 0: break;
            case 1: ok = s->rank >= 2 && s->dim[1] % 2 == 0, s->dim[1] /= 2; break;
            case 2: ok = s->rank >= 1, s->dim[0] *= 2; break;
            case 3: ok = s->rank >= 2, s->dim[1] *= 2; break;
            }
        }
        if (ok && at_count2(a, out) && at_count2(b, out)) return 1;
        int i = 0; /* odometer: input 0 turns fastest */
        while (i < n && ++at[i] == 4) at[i++] = 0;
        if (i == n) return 0;
    }
    return 0;
}

int gs_generalize(const dc_config *cfg, const rdb_file *cands, em_rule *rules, size_t n, int jobs,
                  bt_progress progress, void *arg, unsigned interval_ms, gs_stats *st) {
    rg_graph *g = malloc((2 * n + 1) * sizeof *g);
    ten_shape *shapes = malloc((n + 1) * RG_MAX_INPUTS * sizeof *shapes);
    bt_pair *pairs = malloc((n + 1) * sizeof *pairs);
    size_t *which = malloc((n + 1) * sizeof *which), k = 0;
    dc_result *res = NULL;
    int rc = -1;
    memset(st, 0, sizeof *st);
    if (!g || !shapes || !pairs || !which) goto cleanup;
    for (size_t i = 0; i < n; i++) {
        const rdb_class *cl = &cands->classes[rules[i].cls];
        rg_graph *ga = &g[2 * k], *gb = &g[2 * k + 1];
        ten_shape *sh = &shapes[k * RG_MAX_INPUTS];
        if (!cl->n_shapes || !generalize(&rules[i].src, &rules[i].dst, ga, gb) ||
            !count2_shapes(ga, gb, cl->shapes, cl->n_shapes, sh))
            continue;
        em_key key, from;
        em_pair_key(ga, gb, &key);
        em_pair_key(&cl->members[0], &cl->members[rules[i].member], &from);
        /* the seed from the question and the lane of the pair the rule
         * came from: a shard (prove --shard) holds that pair's lane, and
         * decides there the same pairs in the same order as the whole run */
        pairs[k] = (bt_pair){ga, gb, sh, cl->n_shapes, XXH3_64bits(key.b, key.len) ^ 0x67737967ull,
                             (uint8_t)bt_lane(&from)};
        which[k++] = i;
    }
    bt_stats bst;
    if (!(res = calloc(k + 1, sizeof *res)) ||
        bt_decide(cfg, pairs, k, jobs, progress, arg, interval_ms, res, &bst) != 0)
        goto cleanup;
    st->tried = k;
    for (size_t q = 0; q < k; q++)
        if (res[q].status == RDB_PROVED) {
            rules[which[q]].src = g[2 * q], rules[which[q]].dst = g[2 * q + 1];
            st->generalized++;
        }
    rc = 0;
cleanup:
    free(g);
    free(shapes);
    free(pairs);
    free(which);
    free(res);
    return rc;
}
