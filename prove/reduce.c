/* reduce.c - the pruning steps of reduce.h over a hash set of rule keys. */
#include "reduce.h"

#include <stdlib.h>
#include <string.h>

/* A set of rule keys: a key map whose values are unused. */
typedef em_map keyset;

static int ks_has(const keyset *s, const em_key *k) { return em_map_get(s, k) != SIZE_MAX; }

/* @return 1 added, 0 already there. */
static int ks_add(keyset *s, const em_key *k) {
    size_t n = s->n;
    em_map_put(s, k, n);
    return s->n > n;
}

/* ---- steps 1 and 2 ---- */

static size_t compact(em_rule *r, const uint8_t *drop, size_t n) {
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (!drop[i]) r[w++] = r[i];
    return w;
}

static void drop_duplicates(em_rule *r, size_t n, keyset *s, uint8_t *drop) {
    for (size_t i = 0; i < n; i++) {
        em_key k;
        em_key_of(&r[i].src, &r[i].dst, &k);
        drop[i] = rg_equal(&r[i].src, &r[i].dst) || !ks_add(s, &k);
    }
}

static void drop_renamings(em_rule *r, size_t n, keyset *s, uint8_t *drop) {
    for (size_t i = 0; i < n; i++) {
        em_key k;
        rg_graph cs, cd;
        rg_canon_rule(&r[i].src, &r[i].dst, &cs, &cd);
        r[i].src = cs;
        r[i].dst = cd;
        em_key_of(&cs, &cd, &k);
        drop[i] = rg_equal(&cs, &cd) || !ks_add(s, &k);
    }
}

/* 1 when the canonical form of a -> b is in s. */
static int known(const keyset *s, const rg_graph *a, const rg_graph *b) {
    rg_graph ca, cb;
    em_key k;
    rg_canon_rule(a, b, &ca, &cb);
    em_key_of(&ca, &cb, &k);
    return ks_has(s, &k);
}

/* ---- step 3: a common node at the inputs ---- */

static int node_equal(const rg_node *a, const rg_node *b) {
    const ops_info *o = &ops_table[a->op];
    return a->op == b->op &&
           memcmp(a->param, b->param, (size_t)o->n_params * sizeof *a->param) == 0 &&
           memcmp(a->in, b->in, (size_t)o->arity * sizeof *a->in) == 0;
}

static int reads_only_inputs(const rg_node *n) {
    for (int k = 0; k < ops_table[n->op].arity; k++)
        if (!RG_IS_INPUT(n->in[k])) return 0;
    return 1;
}

/* 1 when something of g other than node j reads an input of mask. */
static int others_read(const rg_graph *g, int j, uint32_t mask) {
    for (int i = 0; i < g->n_nodes; i++)
        if (i != j && (rg_node_inputs(&g->node[i]) & mask)) return 1;
    for (int k = 0; k < g->n_outputs; k++)
        if (RG_IS_INPUT(g->out[k]) && (mask >> g->out[k] & 1)) return 1;
    return 0;
}

static rg_ref shift_ref(rg_ref r, int j, int y) {
    if (RG_IS_INPUT(r)) return r;
    int i = RG_NODE_INDEX(r);
    return i == j ? RG_IN(y) : i > j ? RG_NODE(i - 1) : r;
}

/* g with node j replaced by input y. */
static void replace_node(const rg_graph *g, int j, int y, rg_graph *out) {
    *out = *g;
    out->n_nodes = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (i == j) continue;
        rg_node n = g->node[i];
        for (int k = 0; k < ops_table[n.op].arity; k++) n.in[k] = shift_ref(n.in[k], j, y);
        out->node[out->n_nodes++] = n;
    }
    for (int k = 0; k < g->n_outputs; k++) out->out[k] = shift_ref(g->out[k], j, y);
}

static int lowest_bit(uint32_t m) {
    int i = 0;
    while (!(m >> i & 1)) i++;
    return i;
}

/* 1 when some common input node generalises the rule to one in s. */
static int input_witness(const em_rule *r, const keyset *s) {
    const rg_graph *src = &r->src, *dst = &r->dst;
    for (int j = 0; j < src->n_nodes; j++) {
        const rg_node *n = &src->node[j];
        uint32_t reads = rg_node_inputs(n);
        if (!reads_only_inputs(n) || !reads || others_read(src, j, reads)) continue;
        for (int m = 0; m < dst->n_nodes; m++) {
            if (!node_equal(n, &dst->node[m]) || others_read(dst, m, reads)) continue;
            rg_graph a, b;
            int y = lowest_bit(reads); /* free once n is gone */
            replace_node(src, j, y, &a);
            replace_node(dst, m, y, &b);
            if (known(s, &a, &b)) return 1;
        }
    }
    return 0;
}

/* ---- step 4: a common operator at the output ---- */

static int sub_equal(const rg_graph *ga, rg_ref ra, const rg_graph *gb, rg_ref rb) {
    if (RG_IS_INPUT(ra) || RG_IS_INPUT(rb)) return ra == rb;
    const rg_node *a = &ga->node[RG_NODE_INDEX(ra)], *b = &gb->node[RG_NODE_INDEX(rb)];
    const ops_info *o = &ops_table[a->op];
    if (a->op != b->op ||
        memcmp(a->param, b->param, (size_t)o->n_params * sizeof *a->param) != 0)
        return 0;
    for (int k = 0; k < o->arity; k++)
        if (!sub_equal(ga, a->in[k], gb, b->in[k])) return 0;
    return 1;
}

/* g with its one output moved to ref (dead nodes vanish in rg_canon_rule). */
static void sub_graph(const rg_graph *g, rg_ref ref, rg_graph *out) {
    *out = *g;
    out->n_outputs = 1;
    out->out[0] = ref;
}

static int output_witness(const em_rule *r, const keyset *s) {
    const rg_graph *src = &r->src, *dst = &r->dst;
    if (src->n_outputs != 1 || RG_IS_INPUT(src->out[0]) || RG_IS_INPUT(dst->out[0])) return 0;
    const rg_node *a = &src->node[RG_NODE_INDEX(src->out[0])];
    const rg_node *b = &dst->node[RG_NODE_INDEX(dst->out[0])];
    const ops_info *o = &ops_table[a->op];
    if (a->op != b->op ||
        memcmp(a->param, b->param, (size_t)o->n_params * sizeof *a->param) != 0)
        return 0;
    int differ = -1;
    for (int k = 0; k < o->arity; k++) {
        if (sub_equal(src, a->in[k], dst, b->in[k])) continue;
        if (differ >= 0) return 0; /* two pairs differ */
        differ = k;
    }
    if (differ < 0) return 0;
    rg_graph sa, sb;
    sub_graph(src, a->in[differ], &sa);
    sub_graph(dst, b->in[differ], &sb);
    return known(s, &sa, &sb);
}

/* ---- the pipeline ---- */

static void mark(const em_rule *r, size_t n, const keyset *s, int step, uint8_t *drop) {
    for (size_t i = 0; i < n; i++)
        drop[i] = step == 3 ? input_witness(&r[i], s) : output_witness(&r[i], s);
}

int rd_prune(em_rule *rules, size_t *n, rd_counts *counts) {
    keyset raw, canon;
    uint8_t *drop = malloc(*n + 1);
    int rc = -1;
    int bad_raw = em_map_init(&raw, *n), bad_canon = em_map_init(&canon, *n);
    memset(counts, 0, sizeof *counts);
    counts->emitted = *n;
    if (!drop || bad_raw || bad_canon) goto cleanup;
    drop_duplicates(rules, *n, &raw, drop);
    *n = counts->after_dup = compact(rules, drop, *n);
    drop_renamings(rules, *n, &canon, drop);
    *n = counts->after_rename = compact(rules, drop, *n);
    /* canon now holds exactly the survivors' keys: the witness set */
    mark(rules, *n, &canon, 3, drop);
    *n = counts->after_input = compact(rules, drop, *n);
    mark(rules, *n, &canon, 4, drop);
    *n = counts->after_output = compact(rules, drop, *n);
    rc = 0;
cleanup:
    free(drop);
    em_map_free(&raw);
    em_map_free(&canon);
    return rc;
}
