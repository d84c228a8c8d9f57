/* rules.c - loading a rules ruledb into an eg_ruleset: keep the proved,
 * matchable rules, build each one's matching plan, index them by the
 * operator of src's first output node. Matching is in match.c, rewriting
 * in apply.c. */
#include "rewrite/rules_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Mark the inputs node j reads as bound. */
static void bind_inputs(const rg_graph *s, int j, unsigned char *in_bound) {
    const rg_node *n = &s->node[j];
    for (int k = 0; k < ops_table[n->op].arity; k++)
        if (RG_IS_INPUT(n->in[k])) in_bound[n->in[k]] = 1;
}

static int ref_bound(rg_ref r, const unsigned char *in_bound, const unsigned char *nd_bound) {
    return RG_IS_INPUT(r) ? in_bound[r] : nd_bound[RG_NODE_INDEX(r)];
}

/* The next step of a plan given what is bound: a producer if any, else a
 * consumer of a bound value, else a scan. */
static eg_step next_step(const rg_graph *s, const unsigned char *in_bound,
                         const unsigned char *nd_bound) {
    for (int p = 0; p < s->n_nodes; p++) {
        if (!nd_bound[p]) continue;
        for (int k = 0; k < ops_table[s->node[p].op].arity; k++) {
            rg_ref r = s->node[p].in[k];
            if (!RG_IS_INPUT(r) && !nd_bound[RG_NODE_INDEX(r)])
                return (eg_step){EG_STEP_PRODUCER, RG_NODE_INDEX(r), p, k};
        }
    }
    for (int j = 0; j < s->n_nodes; j++) {
        if (nd_bound[j]) continue;
        for (int k = 0; k < ops_table[s->node[j].op].arity; k++)
            if (ref_bound(s->node[j].in[k], in_bound, nd_bound))
                return (eg_step){EG_STEP_CONSUMER, j, s->node[j].in[k], k};
    }
    for (int j = 0; j < s->n_nodes; j++)
        if (!nd_bound[j]) return (eg_step){EG_STEP_SCAN, j, -1, -1};
    return (eg_step){EG_STEP_SCAN, -1, -1, -1}; /* unreachable: a node is unbound */
}

/* 1 when every symbolic size of g names an input bound by src. */
static int sizes_bound(const rg_graph *g, const unsigned char *in_bound) {
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < ops_table[g->node[j].op].n_params; k++) {
            int32_t v = g->node[j].param[k];
            if (ops_table[g->node[j].op].pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(v) &&
                (RG_SYM_INPUT(v) >= RG_MAX_INPUTS || !in_bound[RG_SYM_INPUT(v)]))
                return 0;
        }
    return 1;
}

/* The first parameter of s with the kind and value of parameter k of node
 * q in g: EG_SITE, or -1 when s writes none. */
static signed char first_site(const rg_graph *s, const rg_graph *g, int q, int k) {
    ops_pkind kind = ops_table[g->node[q].op].pkind[k];
    for (int j = 0; j < s->n_nodes; j++)
        for (int r = 0; r < ops_table[s->node[j].op].n_params; r++)
            if (ops_table[s->node[j].op].pkind[r] == kind && s->node[j].param[r] == g->node[q].param[k])
                return EG_SITE(j, r);
    return -1;
}

/* Fill the plan's free-parameter sites (ops.h: free). A group-count
 * symbol only dst writes has no site: the conv's input shapes give it
 * (rg_node_params). @return 0 when dst writes another free parameter src
 * does not: nothing would bind it. */
static int plan_free_sites(const rg_graph *s, const rg_graph *d, eg_plan *p) {
    memset(p->src_site, -1, sizeof p->src_site);
    memset(p->dst_site, -1, sizeof p->dst_site);
    for (int j = 0; j < s->n_nodes; j++)
        for (int k = 0; k < ops_table[s->node[j].op].n_params; k++)
            if (eg_param_free(s->node[j].op, k, s->node[j].param[k])) p->src_site[j][k] = first_site(s, s, j, k);
    for (int j = 0; j < d->n_nodes; j++)
        for (int k = 0; k < ops_table[d->node[j].op].n_params; k++)
            if (eg_param_free(d->node[j].op, k, d->node[j].param[k]) && (p->dst_site[j][k] = first_site(s, d, j, k)) < 0 &&
                !RG_IS_SYM_GROUPS(ops_table[d->node[j].op].pkind[k], d->node[j].param[k]))
                return 0;
    return 1;
}

/* The steps that find src from its node `start`: an anchor, then each
 * next node a producer or reader of one bound already (next_step).
 * in_bound receives the inputs src binds. */
static void route_steps(const rg_graph *s, int start, eg_step *step, unsigned char *in_bound) {
    unsigned char nd_bound[RG_MAX_NODES] = {0};
    int n = 0;
    step[n++] = (eg_step){EG_STEP_ANCHOR, start, -1, -1};
    nd_bound[start] = 1;
    bind_inputs(s, start, in_bound);
    while (n < s->n_nodes) {
        eg_step st = next_step(s, in_bound, nd_bound);
        step[n++] = st;
        nd_bound[st.node] = 1;
        bind_inputs(s, st.node, in_bound);
    }
}

/* Build rule r's plan. @return 1, or 0 when the rule cannot be matched:
 * an output of src that is an input or repeats, an input dst or a size
 * needs that src does not read, output counts that differ. */
static int make_plan(const rdb_rule *r, eg_plan *p) {
    const rg_graph *s = &r->src, *d = &r->dst;
    unsigned char in_bound[RG_MAX_INPUTS] = {0};
    memset(p, 0, sizeof *p);
    if (s->n_nodes < 1 || s->n_outputs != d->n_outputs || d->n_inputs > s->n_inputs) return 0;
    for (int k = 0; k < s->n_outputs; k++) {
        if (RG_IS_INPUT(s->out[k])) return 0;
        int j = RG_NODE_INDEX(s->out[k]);
        if (p->is_out[j]) return 0;
        p->is_out[j] = 1;
    }
    route_steps(s, RG_NODE_INDEX(s->out[0]), p->step, in_bound);
    p->n_steps = s->n_nodes;
    for (int j = 0; j < d->n_nodes; j++)
        for (int k = 0; k < ops_table[d->node[j].op].arity; k++)
            if (RG_IS_INPUT(d->node[j].in[k]) && !in_bound[d->node[j].in[k]]) return 0;
    for (int k = 0; k < d->n_outputs; k++)
        if (RG_IS_INPUT(d->out[k]) && !in_bound[d->out[k]]) return 0;
    return sizes_bound(s, in_bound) && sizes_bound(d, in_bound) && plan_free_sites(s, d, p);
}

/* Bit i of reads[ref]: value ref of g reads rule input i. */
static void input_reads(const rg_graph *g, unsigned *reads) {
    for (int i = 0; i < RG_MAX_INPUTS; i++) reads[RG_IN(i)] = 1u << i;
    for (int j = 0; j < g->n_nodes; j++) {
        reads[RG_NODE(j)] = 0;
        for (int k = 0; k < ops_table[g->node[j].op].arity; k++) reads[RG_NODE(j)] |= reads[g->node[j].in[k]];
    }
}

/* plan->keeps_paths for rule r (eg_ruleset_keeps_paths). */
static int keeps_paths(const rdb_rule *r) {
    unsigned rs[RG_MAX_REFS], rd[RG_MAX_REFS];
    input_reads(&r->src, rs);
    input_reads(&r->dst, rd);
    for (int k = 0; k < r->src.n_outputs; k++)
        if (rs[r->src.out[k]] & ~rd[r->dst.out[k]]) return 0;
    return 1;
}

/* The nodes of g that make a constant holding zeros to multiply by. */
static int zero_makers(const rg_graph *g) {
    int n = 0;
    for (int j = 0; j < g->n_nodes; j++) {
        ops_op op = g->node[j].op;
        n += op == OP_ENLARGE || op == OP_IMM || ops_table[op].form == OPS_FORM_CKERNEL;
    }
    return n;
}

/* Bit i: some node of g divides by rule input xi. */
static uint8_t divisor_inputs(const rg_graph *g) {
    uint8_t bits = 0;
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].op == OP_SDIV && RG_IS_INPUT(g->node[j].in[1])) bits |= (uint8_t)(1u << g->node[j].in[1]);
    return bits;
}

/* Replace each (enlarge 1x1 xi) of g by xi and set bit i of *guard. An
 * enlargement to 1x1 is well shaped only for a 1x1 kernel and is then the
 * identity: prove writes a rule that holds for 1x1 kernels only that way
 * (prove/kernel1.h), and models hold their 1x1 kernels bare, so the match
 * binds xi to the kernel itself and checks that it is 1x1 (match.c). */
static void strip_unit_enlarges(rg_graph *g, uint8_t *guard) {
    rg_ref to[RG_MAX_REFS];
    int n = 0;
    for (int i = 0; i < RG_MAX_INPUTS; i++) to[RG_IN(i)] = RG_IN(i);
    for (int j = 0; j < g->n_nodes; j++) {
        rg_node nd = g->node[j];
        for (int k = 0; k < ops_table[nd.op].arity; k++) nd.in[k] = to[nd.in[k]];
        if (nd.op == OP_ENLARGE && nd.param[0] == OPS_KERNEL(1, 1) && RG_IS_INPUT(nd.in[0])) {
            to[RG_NODE(j)] = nd.in[0];
            *guard |= (uint8_t)(1u << nd.in[0]);
            continue;
        }
        to[RG_NODE(j)] = RG_NODE(n);
        g->node[n++] = nd;
    }
    for (int j = n; j < g->n_nodes; j++) memset(&g->node[j], 0, sizeof g->node[j]);
    g->n_nodes = n;
    for (int k = 0; k < g->n_outputs; k++) g->out[k] = to[g->out[k]];
}

/* Fill op_start/by_op: rules grouped by anchor op, in ruleset order; rank
 * is the inverse. */
static eg_status index_rules(eg_ruleset *rs) {
    rs->by_op = malloc(sizeof *rs->by_op * (rs->n ? rs->n : 1));
    rs->rank = malloc(sizeof *rs->rank * (rs->n ? rs->n : 1));
    if (!rs->by_op || !rs->rank) return EG_ENOMEM;
    uint32_t count[OP_COUNT] = {0};
    for (size_t i = 0; i < rs->n; i++)
        count[rs->rule[i].src.node[rs->plan[i].step[0].node].op]++;
    rs->op_start[0] = 0;
    for (int op = 0; op < OP_COUNT; op++) rs->op_start[op + 1] = rs->op_start[op] + count[op];
    uint32_t fill[OP_COUNT];
    memcpy(fill, rs->op_start, sizeof fill);
    for (size_t i = 0; i < rs->n; i++) {
        uint32_t at = fill[rs->rule[i].src.node[rs->plan[i].step[0].node].op]++;
        rs->by_op[at] = (uint32_t)i;
        rs->rank[i] = at;
    }
    return EG_OK;
}

/* ---- the plan trees ---- */

/* A rule's src found from one of its nodes (eg_tree). */
typedef struct {
    uint32_t rule;
    int n_steps;
    eg_step step[RG_MAX_NODES];
} route;

static int cmp_i32(int32_t a, int32_t b) { return (a > b) - (a < b); }

/* Compare step si of routes a and b: the step, then the src node it binds
 * (operator, parameters, inputs); a route that has ended sorts first. */

static int step_cmp(const eg_ruleset *rs, const route *pa, const route *pb, int si) {
    if (si >= pa->n_steps || si >= pb->n_steps) return (si < pa->n_steps) - (si < pb->n_steps);
    const eg_step *x = &pa->step[si], *y = &pb->step[si];
    int c;
    if ((c = cmp_i32((int32_t)x->kind, (int32_t)y->kind)) || (c = cmp_i32(x->node, y->node)) ||
        (c = cmp_i32(x->from, y->from)) || (c = cmp_i32(x->pos, y->pos)))
        return c;
    const rg_node *u = &rs->rule[pa->rule].src.node[x->node], *v = &rs->rule[pb->rule].src.node[y->node];
    if ((c = cmp_i32((int32_t)u->op, (int32_t)v->op))) return c;
    const ops_info *o = &ops_table[u->op]; /* the same operator from here on */
    for (int k = 0; k < o->n_params; k++)
        if ((c = cmp_i32(u->param[k], v->param[k]))) return c;
    for (int k = 0; k < o->arity; k++)
        if ((c = cmp_i32((int32_t)u->in[k], (int32_t)v->in[k]))) return c;
    return 0;
}

typedef struct {
    eg_ruleset *rs;
    eg_tree *t;
    const route *rt;
    uint32_t *order; /* route indices in step order */
    size_t n_kids, n_ends;
} tree_build;

/* Routes in order of their steps, then rule index, then index. */
static int route_cmp(const tree_build *b, uint32_t x, uint32_t y) {
    for (int si = 0; si < RG_MAX_NODES; si++) {
        int c = step_cmp(b->rs, &b->rt[x], &b->rt[y], si);
        if (c) return c;
    }
    if (b->rt[x].rule != b->rt[y].rule) return b->rt[x].rule < b->rt[y].rule ? -1 : 1;
    return (x > y) - (x < y);
}

static void route_sort(const tree_build *b, uint32_t *v, uint32_t *tmp, size_t n) {
    if (n < 2) return;
    size_t h = n / 2, i = 0, j = h, k = 0;
    route_sort(b, v, tmp, h);
    route_sort(b, v + h, tmp, n - h);
    while (i < h && j < n) tmp[k++] = route_cmp(b, v[i], v[j]) <= 0 ? v[i++] : v[j++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

/* The end of the run of routes from order[i] with the same step si. */
static size_t run_end(const tree_build *b, size_t i, size_t hi, int si) {
    size_t j = i + 1;
    while (j < hi && step_cmp(b->rs, &b->rt[b->order[i]], &b->rt[b->order[j]], si) == 0) j++;
    return j;
}

/* The tree nodes for step si of the routes order[lo..hi), which share
 * steps 0..si-1 and all have a step si, as consecutive kids: one per run
 * of equal steps. @return the number made. */
static uint32_t build_level(tree_build *b, size_t lo, size_t hi, int si) {
    eg_tree *tr = b->t;
    uint32_t first = (uint32_t)b->n_kids, made = 0;
    for (size_t i = lo; i < hi; i = run_end(b, i, hi, si)) /* reserve one kid slot per run */
        b->n_kids++, made++;
    uint32_t slot = first;
    for (size_t i = lo; i < hi; slot++) {
        size_t j = run_end(b, i, hi, si);
        uint32_t t = (uint32_t)tr->n++;
        eg_tnode *T = &tr->node[t];
        memset(T, 0, sizeof *T);
        T->step = b->rt[b->order[i]].step[si];
        T->rep = b->rt[b->order[i]].rule;
        T->end = (uint32_t)b->n_ends;
        size_t k = i; /* routes that end here come first (step_cmp) */
        while (k < j && b->rt[b->order[k]].n_steps == si + 1) tr->ends[b->n_ends++] = b->rt[b->order[k++]].rule;
        T->n_end = (uint32_t)(k - i);
        tr->kids[slot] = t;
        uint32_t kid = (uint32_t)b->n_kids, n_kid = k < j ? build_level(b, k, j, si + 1) : 0;
        tr->node[t].kid = kid;
        tr->node[t].n_kid = n_kid;
        i = j;
    }
    return made;
}

/* Build tree t from the routes rt[n]: grouped by the operator of the node
 * each starts from, then shared step by step. */
static eg_status build_tree(eg_ruleset *rs, const route *rt, size_t n, eg_tree *t) {
    size_t cap = 1;
    for (size_t i = 0; i < n; i++) cap += (size_t)rt[i].n_steps;
    uint32_t *order = malloc(sizeof *order * (n ? n : 1));
    uint32_t *tmp = malloc(sizeof *tmp * (n ? n : 1));
    t->node = malloc(sizeof *t->node * cap);
    t->kids = malloc(sizeof *t->kids * cap);
    t->ends = malloc(sizeof *t->ends * (n ? n : 1));
    eg_status rc = order && tmp && t->node && t->kids && t->ends ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) {
        uint32_t start[OP_COUNT + 1] = {0}, fill[OP_COUNT];
        for (size_t i = 0; i < n; i++) start[rs->rule[rt[i].rule].src.node[rt[i].step[0].node].op + 1]++;
        for (int op = 0; op < OP_COUNT; op++) start[op + 1] += start[op];
        memcpy(fill, start, sizeof fill);
        for (size_t i = 0; i < n; i++) order[fill[rs->rule[rt[i].rule].src.node[rt[i].step[0].node].op]++] = (uint32_t)i;
        tree_build b = {.rs = rs, .t = t, .rt = rt, .order = order};
        for (int op = 0; op < OP_COUNT; op++) {
            route_sort(&b, order + start[op], tmp, start[op + 1] - start[op]);
            t->root[op] = (uint32_t)b.n_kids;
            t->n_root[op] = build_level(&b, start[op], start[op + 1], 0);
        }
    }
    free(order);
    free(tmp);
    return rc;
}

/* The two trees: each rule's plan (from its first output), and, unless a
 * src is not connected, each rule from each of its src nodes. */
static eg_status build_trees(eg_ruleset *rs) {
    size_t n_touch = 0;
    for (size_t i = 0; i < rs->n && !rs->has_scan; i++) n_touch += (size_t)rs->rule[i].src.n_nodes;
    route *rt = malloc(sizeof *rt * (rs->n + n_touch + 1));
    if (!rt) return EG_ENOMEM;
    for (size_t i = 0; i < rs->n; i++) {
        rt[i] = (route){.rule = (uint32_t)i, .n_steps = rs->plan[i].n_steps};
        memcpy(rt[i].step, rs->plan[i].step, sizeof rt[i].step);
    }
    eg_status rc = build_tree(rs, rt, rs->n, &rs->tree);
    size_t n = 0;
    for (size_t i = 0; i < rs->n && !rs->has_scan; i++)
        for (int j = 0; j < rs->rule[i].src.n_nodes; j++) {
            unsigned char in_bound[RG_MAX_INPUTS] = {0};
            rt[n] = (route){.rule = (uint32_t)i, .n_steps = rs->rule[i].src.n_nodes};
            route_steps(&rs->rule[i].src, j, rt[n++].step, in_bound);
        }
    if (rc == EG_OK) rc = build_tree(rs, rt, n, &rs->touch);
    free(rt);
    return rc;
}

static void tree_free(eg_tree *t) {
    free(t->node);
    free(t->kids);
    free(t->ends);
}

/* Rule r (enlarges stripped into *guard) admitted as rule rs->n with its
 * plan. @return 1, or 0 when it cannot be matched. */
static int admit(eg_ruleset *rs, const rdb_rule *r, uint8_t guard, uint8_t reversed) {
    eg_plan *p = &rs->plan[rs->n];
    if (!make_plan(r, p)) return 0;
    p->kernel1 = guard;
    p->keeps_paths = (uint8_t)keeps_paths(r);
    p->adds_zeros = zero_makers(&r->dst) > zero_makers(&r->src);
    p->divisors = p->adds_zeros ? divisor_inputs(&r->dst) : 0;
    p->ops = rg_ops_written(&r->src) | rg_ops_written(&r->dst);
    for (int k = 0; k < p->n_steps; k++) rs->has_scan |= p->step[k].kind == EG_STEP_SCAN;
    rs->reversed[rs->n] = reversed;
    rs->mate[rs->n] = EG_NO_MATE;
    rs->rule[rs->n++] = *r;
    return 1;
}

/* An open-addressing set of rules by their canonical form (rgraph.h:
 * rg_canon_rule) and their 1x1 guards, to find a rule's reverse among the
 * file's rules: prove writes each direction in its own canonical form, so
 * the reverse of a rule is in the file renamed. */
typedef struct {
    rdb_rule *key;  /* canonical src, dst of each file rule */
    uint8_t *guard; /* its 1x1 guards, on the canonical inputs */
    uint32_t *slot; /* key index + 1; 0 empty */
    size_t mask;
} rule_set;

static eg_status rule_set_new(rule_set *t, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n + 2) cap *= 2;
    *t = (rule_set){malloc(sizeof *t->key * (n ? n : 1)), malloc(n ? n : 1), calloc(cap, sizeof *t->slot), cap - 1};
    return t->key && t->guard && t->slot ? EG_OK : EG_ENOMEM;
}

static void rule_set_free(rule_set *t) { free(t->key), free(t->guard), free(t->slot); }

static uint64_t rule_hash(const rdb_rule *k) {
    return rg_hash(&k->src) * 0x9e3779b97f4a7c15ull ^ rg_hash(&k->dst);
}

/* Guard bits of src -> dst's inputs as bits of its canonical inputs. */
static uint8_t canon_guard(const rg_graph *src, const rg_graph *dst, uint8_t guard) {
    int map[RG_MAX_INPUTS];
    uint8_t g = 0;
    rg_canon_inputs(src, dst, map);
    for (int i = 0; i < RG_MAX_INPUTS; i++)
        if ((guard >> i & 1) && map[i] >= 0) g |= (uint8_t)(1u << map[i]);
    return g;
}

/* The first rule of t that is src -> dst renamed and needs 1x1 kernels
 * of exactly the inputs `guard` names (covering 0), or of no input it
 * does not name (covering 1), or EG_NO_MATE. */
static size_t rule_find(const rule_set *t, const rg_graph *src, const rg_graph *dst, uint8_t guard, int covering) {
    rdb_rule k;
    uint8_t want = canon_guard(src, dst, guard);
    rg_canon_rule(src, dst, &k.src, &k.dst);
    for (size_t h = rule_hash(&k) & t->mask;; h = (h + 1) & t->mask) {
        uint32_t v = t->slot[h];
        if (!v) return EG_NO_MATE;
        uint8_t have = t->guard[v - 1];
        if (rg_equal(&t->key[v - 1].src, &k.src) && rg_equal(&t->key[v - 1].dst, &k.dst) &&
            (covering ? !(have & ~want) : have == want))
            return v - 1;
    }
}

static void rule_put(rule_set *t, const rdb_rule *r, uint8_t guard, uint32_t i) {
    rg_canon_rule(&r->src, &r->dst, &t->key[i].src, &t->key[i].dst);
    t->guard[i] = canon_guard(&r->src, &r->dst, guard);
    size_t h = rule_hash(&t->key[i]) & t->mask;
    while (t->slot[h]) h = (h + 1) & t->mask;
    t->slot[h] = i + 1;
}

/* A proved rule is an equation: the engine also reads it right to left,
 * where that is a rule it can match (no output of the new left side is an
 * input, every input it needs is read there) and the file does not hold
 * that reverse already, for the same 1x1 kernels (a twin that holds for
 * any kernel is another rule). The reverses follow the file's rules, in
 * their order, so a file that holds both directions gives the same
 * ruleset as before and a pruned file may hold one direction of each
 * equation. mate[] pairs the two directions. */
static eg_status add_reverses(eg_ruleset *rs) {
    size_t n = rs->n;
    rule_set t;
    eg_status rc = rule_set_new(&t, n);
    for (size_t i = 0; rc == EG_OK && i < n; i++) rule_put(&t, &rs->rule[i], rs->plan[i].kernel1, (uint32_t)i);
    for (size_t i = 0; rc == EG_OK && i < n; i++) {
        rdb_rule r = {rs->rule[i].id, rs->rule[i].dst, rs->rule[i].src, rs->rule[i].prover};
        size_t j = rule_find(&t, &r.src, &r.dst, rs->plan[i].kernel1, 0);
        if (j != EG_NO_MATE) rs->mate[i] = j;
        else if (admit(rs, &r, rs->plan[i].kernel1, 1)) rs->mate[i] = rs->n - 1, rs->mate[rs->n - 1] = i;
    }
    rule_set_free(&t);
    return rc;
}

struct eg_rule_index {
    rule_set t;
};

eg_status eg_rule_index_new(const eg_ruleset *rs, eg_rule_index **out) {
    eg_rule_index *x = calloc(1, sizeof *x);
    if (!x || rule_set_new(&x->t, rs->n) != EG_OK) return eg_rule_index_free(x), *out = NULL, EG_ENOMEM;
    for (size_t i = 0; i < rs->n; i++) rule_put(&x->t, &rs->rule[i], rs->plan[i].kernel1, (uint32_t)i);
    *out = x;
    return EG_OK;
}

/* A rule of the index covers r when it is r renamed, both read with their
 * unit enlarges stripped, and needs 1x1 kernels of no input r does not:
 * it applies wherever r does. */
size_t eg_rule_index_find(const eg_rule_index *x, const rdb_rule *r) {
    rdb_rule k = *r;
    uint8_t guard = 0;
    if (rg_validate(&k.src, NULL, 0) != RG_OK || rg_validate(&k.dst, NULL, 0) != RG_OK) return EG_NO_MATE;
    strip_unit_enlarges(&k.src, &guard), strip_unit_enlarges(&k.dst, &guard);
    return rule_find(&x->t, &k.src, &k.dst, guard, 1);
}

void eg_rule_index_free(eg_rule_index *x) {
    if (!x) return;
    rule_set_free(&x->t), free(x);
}

eg_status eg_ruleset_from_rdb(const rdb_file *f, eg_ruleset **out, char *err, size_t errlen) {
    uint8_t ours[16];
    *out = NULL;
    ops_digest(ours);
    if (f->kind != RDB_RULES)
        return eg_errf(err, errlen, EG_EFORMAT, "a %s file, not rules", rdb_kind_name(f->kind));
    if (memcmp(ours, f->digest, 16) != 0) {
        char hex[33];
        for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", f->digest[i]);
        return eg_errf(err, errlen, EG_EUNSUPPORTED, "made from other opspecs (digest %s)", hex);
    }
    eg_ruleset *rs = calloc(1, sizeof *rs);
    if (!rs) return EG_ENOMEM;
    size_t cap = f->n_rules ? 2 * f->n_rules : 1;
    rs->rule = malloc(sizeof *rs->rule * cap);
    rs->plan = malloc(sizeof *rs->plan * cap);
    rs->reversed = malloc(cap);
    rs->mate = malloc(sizeof *rs->mate * cap);
    eg_status rc = rs->rule && rs->plan && rs->reversed && rs->mate ? EG_OK : EG_ENOMEM;
    for (size_t i = 0; rc == EG_OK && i < f->n_rules; i++) {
        rdb_rule r = f->rules[i];
        uint8_t guard = 0;
        int ok = r.prover.status == RDB_PROVED && rg_validate(&r.src, NULL, 0) == RG_OK &&
                 rg_validate(&r.dst, NULL, 0) == RG_OK;
        if (ok) strip_unit_enlarges(&r.src, &guard), strip_unit_enlarges(&r.dst, &guard);
        if (!ok || !admit(rs, &r, guard, 0)) rs->n_skipped++;
    }
    if (rc == EG_OK) rc = add_reverses(rs);
    if (rc == EG_OK) rc = index_rules(rs);
    if (rc == EG_OK) rc = build_trees(rs);
    if (rc != EG_OK) {
        eg_ruleset_free(rs);
        return eg_errf(err, errlen, rc, "%s", "out of memory");
    }
    *out = rs;
    return EG_OK;
}

/* The ruledb reader's status as an engine status. */
static eg_status from_rdb_status(rdb_status s) {
    switch (s) {
    case RDB_OK: return EG_OK;
    case RDB_EIO: return EG_EIO;
    case RDB_ETRUNC: case RDB_ECORRUPT: case RDB_EVERSION: case RDB_EINVAL: return EG_EFORMAT;
    case RDB_EDIGEST: return EG_EUNSUPPORTED;
    case RDB_ENOMEM: return EG_ENOMEM;
    }
    return EG_EFORMAT;
}

/* A digest refusal's message without the reader's byte offset. */
static const char *digest_why(const char *rerr) {
    const char *why = strstr(rerr, "made from other opspecs");
    return why ? why : rerr;
}

eg_status eg_ruleset_load(const char *path, eg_ruleset **out, char *err, size_t errlen) {
    rdb_file *f = NULL;
    char rerr[RDB_ERRLEN] = "";
    *out = NULL;
    rdb_status rs = rdb_read(path, &f, rerr, sizeof rerr);
    if (rs != RDB_OK) {
        if (err && errlen) {
            if (rs == RDB_EDIGEST) snprintf(err, errlen, "%s: %s", path, digest_why(rerr));
            else snprintf(err, errlen, "%s", rerr);
        }
        return from_rdb_status(rs);
    }
    char e2[EG_ERRLEN] = "";
    eg_status rc = eg_ruleset_from_rdb(f, out, e2, sizeof e2);
    if (rc != EG_OK && err && errlen) snprintf(err, errlen, "%s: %s", path, e2);
    rdb_free(f);
    return rc;
}

eg_status eg_ruleset_from_bytes(const uint8_t *bytes, size_t len, eg_ruleset **out, char *err, size_t errlen) {
    rdb_file *f = NULL;
    char rerr[RDB_ERRLEN] = "";
    *out = NULL;
    rdb_status rs = rdb_read_mem(bytes, len, &f, rerr, sizeof rerr);
    int stale = rs == RDB_EDIGEST;
    if (stale) rs = (f = rdb_new(RDB_RULES)) ? RDB_OK : RDB_ENOMEM; /* no rules, and say why */
    if (rs != RDB_OK) {
        snprintf(err, errlen, "the built-in ruledb: %s", rerr);
        return from_rdb_status(rs);
    }
    eg_status rc = eg_ruleset_from_rdb(f, out, err, errlen);
    if (rc == EG_OK && stale) /* what the CLI and the library tell the user */
        snprintf((*out)->stale, sizeof (*out)->stale,
                 "the built-in ruledb was %s: no rules until `ninja ruledb` regenerates it (the built-in "
                 "rewrites still run)", digest_why(rerr));
    rdb_free(f);
    return rc;
}

const char *eg_ruleset_stale(const eg_ruleset *rs) {
    return rs->stale[0] ? rs->stale : NULL;
}

size_t eg_ruleset_count(const eg_ruleset *rs) {
    return rs->n;
}

const rdb_rule *eg_ruleset_rule(const eg_ruleset *rs, size_t i) {
    return i < rs->n ? &rs->rule[i] : NULL;
}

unsigned eg_ruleset_kernel1(const eg_ruleset *rs, size_t i) {
    return rs->plan[i].kernel1;
}

void eg_ruleset_rule_text(const eg_ruleset *rs, size_t i, char *buf, size_t len) {
    const rdb_rule *rule = &rs->rule[i];
    char src[512], dst[512];
    rg_format(&rule->src, src, sizeof src);
    rg_format(&rule->dst, dst, sizeof dst);
    int at = snprintf(buf, len, "%s => %s", src, dst);
    for (unsigned k1 = rs->plan[i].kernel1, b = 0; k1 >> b && at >= 0 && (size_t)at < len; b++)
        if (k1 >> b & 1) at += snprintf(buf + at, len - (size_t)at, " [x%u 1x1]", b);
}

int eg_ruleset_reversed(const eg_ruleset *rs, size_t i) {
    return i < rs->n && rs->reversed[i];
}

size_t eg_ruleset_mate(const eg_ruleset *rs, size_t i) {
    return i < rs->n ? rs->mate[i] : EG_NO_MATE;
}

int eg_ruleset_keeps_paths(const eg_ruleset *rs, size_t i) {
    return i < rs->n && rs->plan[i].keeps_paths;
}

size_t eg_ruleset_skipped(const eg_ruleset *rs) {
    return rs->n_skipped;
}

void eg_ruleset_free(eg_ruleset *rs) {
    if (!rs) return;
    free(rs->rule);
    free(rs->plan);
    free(rs->reversed);
    free(rs->mate);
    free(rs->by_op);
    free(rs->rank);
    tree_free(&rs->tree);
    tree_free(&rs->touch);
    free(rs);
}
