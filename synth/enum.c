/* enum.c - one enumeration level: work items, extensions, joins, workers
 * and the progress line (see enum.h). */
#include "enum.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "key.h"

typedef struct {
    const sg_graph *g;
    uint8_t extend; /* extend by one node */
    uint8_t join;   /* join with single-output reps of this size (0: no) */
    uint8_t split;  /* add split0 and split1 of an output together */
} item;

typedef struct {
    const en_level *L;
    item *items;
    size_t n_items;
    atomic_size_t next;
    atomic_uint_fast64_t graphs, skipped, evals;
    atomic_int stop; /* 1 over budget, 2 out of memory, 3 device */
    pthread_mutex_t mu;
    pthread_cond_t done; /* signalled as the last worker leaves */
    int running;         /* under mu */
} shared;

typedef struct {
    shared *sh;
    key_ctx *c;
    fpt_cache *kc;
    key_result res;
    uint64_t graphs, skipped;
} worker;

/* An input of the node being added: a parent ref, or a new slot. */
typedef struct {
    uint8_t ref;
    int8_t fresh; /* PARENT; AGAIN (the new slot of input 0); else its type */
} operand;

enum { PARENT = -1, AGAIN = -2 };

double en_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t en_rss(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size, rss;
    int ok = f && fscanf(f, "%lu %lu", &size, &rss) == 2;
    if (f) fclose(f);
    return ok ? (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static void stop_with(worker *w, int why) {
    int zero = 0;
    atomic_compare_exchange_strong(&w->sh->stop, &zero, why);
}

static void flush_counts(worker *w) {
    atomic_fetch_add(&w->sh->graphs, w->graphs);
    atomic_fetch_add(&w->sh->skipped, w->skipped);
    w->graphs = w->skipped = 0;
}

/* Fingerprint P + e->n and add it to the table. */
static void emit(worker *w, key_parent *P, const key_ext *e) {
    const en_level *L = w->sh->L;
    key_status st = key_extend(w->c, P, e, &w->res);
    if (st == KEY_SKIP) { w->skipped++; return; }
    if (st != KEY_OK) { stop_with(w, st == KEY_EDEV ? 3 : 2); return; }
    if (++w->graphs >= 4096) flush_counts(w);
    uint64_t h = fpt_hash(L->table, w->res.key, w->res.len);
    if (L->keep && !L->keep(L->keep_arg, h)) return;
    if (fpt_add(L->table, w->kc, w->c, w->res.key, w->res.len, h, w->res.aligned, w->res.n_aligned))
        stop_with(w, 2);
    else if (L->mem_budget && fpt_bytes(L->table) > L->mem_budget)
        stop_with(w, 1);
}

/* What the checks need to know about a parent beyond key_parent: kinds,
 * value cones (cones that do not follow a constant's shape reference: a
 * graph linked only through ones(x) is not connected) and sinks. */
typedef struct {
    int8_t kind[SG_N_REFS];
    uint64_t vcone[SG_N_REFS];
    uint64_t outs; /* P's outputs that are nodes */
} pinfo;

static void parent_info(const worker *w, const key_parent *P, pinfo *pi) {
    const pool *p = w->sh->L->pool;
    for (int s = 0; s < KEY_MAX_SLOTS; s++) {
        pi->kind[s] = (int8_t)(s < P->n_slots ? p->kind[P->slot_type[s]] : DOM_NO_KIND);
        pi->vcone[s] = SG_BIT(s);
    }
    for (int j = 0; j < P->g.n_nodes; j++) {
        const sg_node *n = &P->g.node[j];
        uint8_t r = SG_NODE(j);
        int k1 = ops_table[n->op].arity > 1 ? pi->kind[n->in[1]] : DOM_NO_KIND;
        pi->kind[r] = (int8_t)dom_kind((ops_op)n->op, pi->kind[n->in[0]], k1);
        pi->vcone[r] = SG_BIT(r);
        if (!(ops_table[n->op].flags & OPF_CONST))
            for (int k = 0; k < ops_table[n->op].arity; k++) pi->vcone[r] |= pi->vcone[n->in[k]];
    }
    pi->outs = 0;
    for (int k = 0; k < P->g.n_out; k++)
        if (SG_IS_NODE(P->g.out[k])) pi->outs |= SG_BIT(P->g.out[k]);
}

/* ---- shared checks ---- */

/* types: the slot types of P plus the new node's new slots. */
static uint64_t operand_shape(const worker *w, const key_parent *P, const uint8_t *types, uint8_t r) {
    return SG_IS_NODE(r) ? P->shape[r] : w->sh->L->pool->shape[types[r]];
}

/* 1 when P already has this node. */
static int duplicate(const key_parent *P, const sg_node *n) {
    for (int j = 0; j < P->g.n_nodes; j++)
        if (memcmp(&P->g.node[j], n, sizeof *n) == 0) return 1;
    return 0;
}

/* Resolved params and output shape of n over P; DOM_BAD when invalid.
 * types: the slot types of P plus the node's new slots. */
static uint64_t node_shape(worker *w, const key_parent *P, const sg_node *n,
                           const uint8_t *types, int32_t p[OPS_MAX_PARAMS]) {
    uint64_t shape[SG_N_REFS];
    for (int k = 0; k < ops_table[n->op].arity; k++)
        shape[n->in[k]] = operand_shape(w, P, types, n->in[k]);
    return sg_node_shape(n, w->sh->L->dom, key_memo(w->c), shape, P->bound, p, NULL);
}

/* ---- extension: P plus one node ---- */

static int is_parent_value(operand o) { return o.fresh == PARENT; }

/* Operand rules of the operator itself (before shapes). */
static int operands_allowed(const key_parent *P, ops_op op, int combo, operand a, operand b) {
    int arity = ops_table[op].arity;
    if (!is_parent_value(a) && (arity < 2 || !is_parent_value(b))) return 0; /* disconnected */
    if (ops_table[op].flags & OPF_CONST) return a.fresh == PARENT && !SG_IS_NODE(a.ref);
    (void)P, (void)combo;
    if (op == OP_SPLIT0 || op == OP_SPLIT1) return SG_IS_NODE(a.ref); /* at a split point */
    return 1;
}

/* Outputs of P + n: P's outputs it does not read, plus n. At most two,
 * and two only when their cones meet. @return the count, 0 when not
 * allowed. */
static int new_outputs(const key_parent *P, const pinfo *pi, const sg_node *n, uint64_t n_vcone,
                       uint8_t out[2]) {
    uint64_t outs = pi->outs;
    for (int k = 0; k < ops_table[n->op].arity; k++) outs &= ~SG_BIT(n->in[k]);
    int count = 0;
    for (int j = 0; j < P->g.n_nodes; j++)
        if (outs & SG_BIT(SG_NODE(j))) {
            if (count == 1 || !(pi->vcone[SG_NODE(j)] & n_vcone)) return 0;
            out[count++] = SG_NODE(j);
        }
    out[count++] = SG_NODE(P->g.n_nodes);
    return count;
}

static void try_node(worker *w, key_parent *P, const pinfo *pi, ops_op op, int combo, operand a,
                     operand b, int n_slots, const uint8_t *slot_type) {
    key_ext e;
    memset(&e.n, 0, sizeof e.n);
    e.n.op = (uint8_t)op, e.n.combo = (uint8_t)combo, e.n.in[0] = a.ref;
    if (ops_table[op].arity > 1) e.n.in[1] = b.ref;
    if (!operands_allowed(P, op, combo, a, b) || duplicate(P, &e.n)) return;
    uint64_t vcone = 0;
    if (!(ops_table[op].flags & OPF_CONST))
        for (int k = 0; k < ops_table[op].arity; k++)
            vcone |= SG_IS_NODE(e.n.in[k]) ? pi->vcone[e.n.in[k]] : SG_BIT(e.n.in[k]);
    if ((e.shape = node_shape(w, P, &e.n, slot_type, e.param)) == DOM_BAD) return;
    e.n_slots = n_slots;
    memcpy(e.slot_type, slot_type, KEY_MAX_SLOTS);
    if ((e.n_sinks = new_outputs(P, pi, &e.n, vcone, e.sink))) emit(w, P, &e);
}

/* Candidate inputs: P's nodes and slots, then one new slot (numbered
 * n_slots) per type with room. */
static int operand_list(const worker *w, const key_parent *P, const int tc[POOL_MAX_TYPES],
                        int n_slots, operand *o) {
    const pool *p = w->sh->L->pool;
    int n = 0;
    for (int j = 0; j < P->g.n_nodes; j++) o[n++] = (operand){SG_NODE(j), PARENT};
    for (int s = 0; s < P->n_slots; s++) o[n++] = (operand){(uint8_t)s, PARENT};
    if (n_slots < KEY_MAX_SLOTS)
        for (int t = 0; t < p->n_types; t++)
            if (tc[t] < p->count_of[t]) o[n++] = (operand){(uint8_t)n_slots, (int8_t)t};
    return n;
}

static int operand_kind(const worker *w, const pinfo *pi, const uint8_t *types, operand o) {
    if (SG_IS_NODE(o.ref) || o.fresh == PARENT) return pi->kind[o.ref];
    return w->sh->L->pool->kind[types[o.ref]];
}

static void extend_with(worker *w, key_parent *P, const pinfo *pi, ops_op op, operand a,
                        const int tc[POOL_MAX_TYPES]) {
    const dom *d = w->sh->L->dom;
    int n_slots = P->n_slots, t2[POOL_MAX_TYPES];
    uint8_t types[KEY_MAX_SLOTS];
    operand second[SG_MAX_NODES + 2 * KEY_MAX_SLOTS + POOL_MAX_TYPES];
    int n2 = 1;
    memcpy(types, P->slot_type, KEY_MAX_SLOTS);
    memcpy(t2, tc, sizeof t2);
    if (a.fresh >= 0) types[n_slots++] = (uint8_t)a.fresh, t2[a.fresh]++;
    if (ops_table[op].arity > 1) {
        n2 = operand_list(w, P, t2, n_slots, second);
        if (a.fresh >= 0) second[n2++] = (operand){a.ref, AGAIN};
    }
    for (int i = 0; i < n2 && !atomic_load(&w->sh->stop); i++) {
        operand b = second[i];
        int ns = n_slots;
        uint8_t tb[KEY_MAX_SLOTS];
        memcpy(tb, types, sizeof tb);
        if (ops_table[op].arity > 1 && b.fresh >= 0) tb[ns++] = (uint8_t)b.fresh;
        int kb = ops_table[op].arity > 1 ? operand_kind(w, pi, tb, b) : DOM_NO_KIND;
        if (dom_kind(op, operand_kind(w, pi, tb, a), kb) == DOM_NO_KIND) continue;
        for (int k = 0; k < d->n_combo[op]; k++) try_node(w, P, pi, op, k, a, b, ns, tb);
    }
}

static void extend_all(worker *w, key_parent *P) {
    const dom *d = w->sh->L->dom;
    int tc[POOL_MAX_TYPES] = {0};
    operand first[SG_MAX_NODES + KEY_MAX_SLOTS + POOL_MAX_TYPES];
    pinfo pi;
    parent_info(w, P, &pi);
    for (int s = 0; s < P->n_slots; s++) tc[P->slot_type[s]]++;
    int n1 = operand_list(w, P, tc, P->n_slots, first);
    for (int op = 0; op < OP_COUNT; op++)
        if (d->ops >> op & 1)
            for (int i = 0; i < n1; i++) extend_with(w, P, &pi, (ops_op)op, first[i], tc);
}

/* ---- split pairs: split0(x) and split1(x) of an output x at once ---- */

/* TASO's split is one operator with two outputs; adding both halves in one
 * step makes (split0(x), split1(x)) from the rep x directly, whatever
 * represents the class of x with one half. */
static void split_pairs(worker *w, key_parent *P) {
    const dom *d = w->sh->L->dom;
    if (!(d->ops >> OP_SPLIT0 & 1) || !(d->ops >> OP_SPLIT1 & 1) || P->g.n_out != 1 ||
        !SG_IS_NODE(P->g.out[0]))
        return;
    uint8_t x = P->g.out[0];
    for (int axis = 0; axis < d->n_combo[OP_SPLIT0]; axis++) {
        sg_node s0 = {OP_SPLIT0, (uint8_t)axis, {x, 0}};
        key_parent Q;
        key_ext e;
        memset(&e, 0, sizeof e);
        e.n = (sg_node){OP_SPLIT1, (uint8_t)axis, {x, 0}};
        if (node_shape(w, P, &s0, P->slot_type, e.param) == DOM_BAD ||
            (e.shape = node_shape(w, P, &e.n, P->slot_type, e.param)) == DOM_BAD)
            continue;
        key_status st = key_parent_push(w->c, P, &s0, &Q);
        if (st == KEY_OK) {
            e.n_slots = Q.n_slots;
            memcpy(e.slot_type, Q.slot_type, KEY_MAX_SLOTS);
            e.n_sinks = 2, e.sink[0] = SG_NODE(P->g.n_nodes), e.sink[1] = SG_NODE(Q.g.n_nodes);
            emit(w, &Q, &e);
        } else if (st == KEY_SKIP) {
            w->skipped++;
        } else {
            stop_with(w, st == KEY_EDEV ? 3 : 2);
        }
        key_parent_release(w->c, &Q);
    }
}

/* ---- joins: op(a, b) of two single-output reps ---- */

/* 1 when some node of b (nodes from nb on) equals a node of a: the join
 * would hold a duplicate node. */
static int shares_node(const key_parent *Q, int nb) {
    int eq[SG_MAX_NODES];
    for (int j = nb; j < Q->g.n_nodes; j++) {
        sg_node n = Q->g.node[j];
        eq[j] = -1;
        for (int k = 0; k < ops_table[n.op].arity; k++)
            if (SG_IS_NODE(n.in[k])) {
                int i = SG_NODE_IDX(n.in[k]);
                if (i < nb || eq[i] < 0) goto next;
                n.in[k] = SG_NODE(eq[i]);
            }
        for (int i = 0; i < nb; i++)
            if (memcmp(&Q->g.node[i], &n, sizeof n) == 0) return 1;
    next:;
    }
    return 0;
}

static int is_binary_value_op(ops_op op) {
    return ops_table[op].arity == 2 && !(ops_table[op].flags & OPF_CONST) &&
           op != OP_SPLIT0 && op != OP_SPLIT1;
}

static void join_ops(worker *w, key_parent *Q, const pinfo *pi, uint8_t x, uint8_t y) {
    const dom *d = w->sh->L->dom;
    for (int op = 0; op < OP_COUNT; op++) {
        if (!(d->ops >> op & 1) || !is_binary_value_op((ops_op)op)) continue;
        if (dom_kind((ops_op)op, pi->kind[x], pi->kind[y]) == DOM_NO_KIND) continue;
        for (int k = 0; k < d->n_combo[op]; k++) {
            key_ext e;
            memset(&e.n, 0, sizeof e.n);
            e.n.op = (uint8_t)op, e.n.combo = (uint8_t)k, e.n.in[0] = x, e.n.in[1] = y;
            if ((e.shape = node_shape(w, Q, &e.n, Q->slot_type, e.param)) == DOM_BAD) continue;
            e.n_slots = Q->n_slots;
            memcpy(e.slot_type, Q->slot_type, KEY_MAX_SLOTS);
            e.n_sinks = 1, e.sink[0] = SG_NODE(Q->g.n_nodes);
            emit(w, Q, &e);
        }
    }
}

typedef struct {
    const sg_graph *r2;
    uint8_t vars[KEY_MAX_SLOTS];
    int n_vars;
    int both; /* try op(b, a) too */
} join_job;

static void join_with_map(worker *w, key_parent *P, const join_job *j, const int8_t map[POOL_MAX_VARS]) {
    key_parent Q;
    key_status st = key_parent_join(w->c, P, j->r2, map, &Q);
    if (st == KEY_OK && !shares_node(&Q, P->g.n_nodes)) {
        uint8_t a = P->g.out[0], b = SG_NODE(P->g.n_nodes + SG_NODE_IDX(j->r2->out[0]));
        pinfo pi;
        parent_info(w, &Q, &pi);
        join_ops(w, &Q, &pi, a, b);
        if (j->both) join_ops(w, &Q, &pi, b, a);
    } else if (st == KEY_SKIP) {
        w->skipped++;
    } else if (st != KEY_OK) {
        stop_with(w, st == KEY_EDEV ? 3 : 2);
    }
    key_parent_release(w->c, &Q);
}

/* Every map of r2's variables k.. to P's slots (unused by the map, same
 * type) or to new slots. */
static void join_maps(worker *w, key_parent *P, const join_job *j, int k, int8_t map[POOL_MAX_VARS],
                      uint32_t used, int n_slots, int tc[POOL_MAX_TYPES]) {
    const pool *p = w->sh->L->pool;
    if (k == j->n_vars) { join_with_map(w, P, j, map); return; }
    uint8_t v = j->vars[k];
    int t = p->type_of[v];
    for (int s = 0; s < P->n_slots; s++)
        if (P->slot_type[s] == t && !(used >> s & 1)) {
            map[v] = (int8_t)s;
            join_maps(w, P, j, k + 1, map, used | 1u << s, n_slots, tc);
        }
    if (n_slots < KEY_MAX_SLOTS && tc[t] < p->count_of[t]) {
        map[v] = (int8_t)n_slots;
        tc[t]++;
        join_maps(w, P, j, k + 1, map, used | 1u << n_slots, n_slots + 1, tc);
        tc[t]--;
    }
}

static void join_all(worker *w, key_parent *P, int b) {
    const en_level *L = w->sh->L;
    int tc[POOL_MAX_TYPES] = {0};
    for (int s = 0; s < P->n_slots; s++) tc[P->slot_type[s]]++;
    for (size_t i = 0; i < L->n_single[b] && !atomic_load(&w->sh->stop); i++) {
        join_job j = {&L->single[b][i], {0}, 0, P->g.n_nodes > b};
        uint32_t seen = 0;
        for (int n = 0; n < j.r2->n_nodes; n++)
            for (int k = 0; k < ops_table[j.r2->node[n].op].arity; k++) {
                uint8_t r = j.r2->node[n].in[k];
                if (!SG_IS_NODE(r) && !(seen >> r & 1)) seen |= 1u << r, j.vars[j.n_vars++] = r;
            }
        int8_t map[POOL_MAX_VARS];
        memset(map, -1, sizeof map);
        join_maps(w, P, &j, 0, map, 0, P->n_slots, tc);
    }
}

/* ---- workers ---- */

static void run_item(worker *w, const item *it) {
    key_parent P;
    key_status st = key_parent_from_rep(w->c, it->g, &P);
    if (st == KEY_OK) {
        if (it->extend) extend_all(w, &P);
        if (it->join) join_all(w, &P, it->join);
        if (it->split) split_pairs(w, &P);
    } else if (st == KEY_SKIP) {
        w->skipped++;
    } else {
        stop_with(w, st == KEY_EDEV ? 3 : 2);
    }
    key_parent_release(w->c, &P);
}

static void *work(void *arg) {
    worker *w = arg;
    shared *sh = w->sh;
    for (;;) {
        size_t i = atomic_fetch_add(&sh->next, 1);
        if (i >= sh->n_items || atomic_load(&sh->stop)) break;
        run_item(w, &sh->items[i]);
    }
    flush_counts(w);
    atomic_fetch_add(&sh->evals, key_node_evals(w->c));
    pthread_mutex_lock(&sh->mu);
    if (--sh->running == 0) pthread_cond_signal(&sh->done);
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

/* 1 when item it is in the level's share: items, not graphs, are divided,
 * so a shard does only its part of the work. The hash is of the
 * representative's bytes and the item's kind (a rep extends and joins as
 * two items), mixed so that shares are even for any item_n. */
static int in_share(const en_level *L, const item *it) {
    if (L->item_n <= 1) return 1;
    uint64_t h = sg_hash(it->g) ^ (uint64_t)(it->extend | it->join << 1 | it->split << 4) << 56;
    h ^= h >> 33, h *= 0xff51afd7ed558ccdull, h ^= h >> 33;
    return h % L->item_n == L->item_k;
}

/* Items: every rep of level-1 nodes extends; single-output reps of i nodes
 * join with those of level-1-i (i >= level-1-i >= 1); single-output reps
 * of level-2 nodes take split pairs. Only those of the level's share. */
static item *make_items(const en_level *L, size_t *n) {
    size_t cap = L->n_prev, k = 0;
    for (int a = 1; a < L->level - 1; a++) cap += L->n_single[a];
    item *it = malloc((cap ? cap : 1) * sizeof *it);
    if (!it) return NULL;
    for (size_t i = 0; i < L->n_prev; i++) {
        it[k] = (item){&L->prev[i], 1, 0, 0};
        k += in_share(L, &it[k]);
    }
    for (int a = 1; a < L->level - 1; a++) {
        int b = L->level - 1 - a, pair = a == L->level - 2;
        if (b > a && !pair) continue;
        for (size_t i = 0; i < L->n_single[a]; i++) {
            it[k] = (item){&L->single[a][i], 0, (uint8_t)(b <= a ? b : 0), (uint8_t)pair};
            k += in_share(L, &it[k]);
        }
    }
    *n = k;
    return it;
}

static void progress_line(const en_level *L, shared *sh, double *last, uint64_t *last_graphs) {
    double now = en_now();
    if (!L->progress || now - *last < 2.0) return;
    uint64_t g = atomic_load(&sh->graphs);
    size_t done = atomic_load(&sh->next);
    fprintf(L->progress,
            "synth: level %d: %zu/%zu reps, %llu graphs (%.0f/s), %llu classes, table %.1f MB, "
            "RSS %.1f MB, %.0f s\n",
            L->level, done < sh->n_items ? done : sh->n_items, sh->n_items, (unsigned long long)g,
            (double)(g - *last_graphs) / (now - *last),
            (unsigned long long)fpt_n_classes(L->table), (double)fpt_bytes(L->table) / 1e6,
            (double)en_rss() / 1e6, now - L->t0);
    fflush(L->progress);
    *last = now, *last_graphs = g;
}

static int start_workers(const en_level *L, shared *sh, worker *w, pthread_t *tid) {
    int started = 0;
    for (int i = 0; i < L->threads; i++) {
        w[i].sh = sh;
        w[i].c = key_ctx_new(L->pool, L->dom, L->cuda);
        w[i].kc = fpt_cache_new();
        if (!w[i].c || !w[i].kc) {
            key_ctx_free(w[i].c), fpt_cache_free(w[i].kc);
            break;
        }
        pthread_mutex_lock(&sh->mu);
        sh->running++;
        pthread_mutex_unlock(&sh->mu);
        if (pthread_create(&tid[i], NULL, work, &w[i]) != 0) {
            pthread_mutex_lock(&sh->mu);
            sh->running--;
            pthread_mutex_unlock(&sh->mu);
            key_ctx_free(w[i].c), fpt_cache_free(w[i].kc);
            break;
        }
        started++;
    }
    return started;
}

/* Wait for the workers, printing progress every 2 s. */
static void wait_workers(const en_level *L, shared *sh) {
    double last = en_now();
    uint64_t last_graphs = 0;
    pthread_mutex_lock(&sh->mu);
    while (sh->running > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&sh->done, &sh->mu, &ts);
        pthread_mutex_unlock(&sh->mu);
        progress_line(L, sh, &last, &last_graphs);
        pthread_mutex_lock(&sh->mu);
    }
    pthread_mutex_unlock(&sh->mu);
}

int en_run(const en_level *L, en_result *r) {
    shared sh = {.L = L};
    pthread_mutex_init(&sh.mu, NULL);
    pthread_cond_init(&sh.done, NULL);
    worker *w = calloc((size_t)L->threads, sizeof *w);
    pthread_t *tid = calloc((size_t)L->threads, sizeof *tid);
    memset(r, 0, sizeof *r);
    sh.items = make_items(L, &sh.n_items);
    int started = w && tid && sh.items ? start_workers(L, &sh, w, tid) : 0;
    if (started == 0) atomic_store(&sh.stop, 2);
    wait_workers(L, &sh);
    for (int i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        key_ctx_free(w[i].c), fpt_cache_free(w[i].kc);
    }
    r->graphs = atomic_load(&sh.graphs), r->skipped = atomic_load(&sh.skipped);
    r->evals = atomic_load(&sh.evals);
    int stop = atomic_load(&sh.stop);
    r->over_budget = stop == 1;
    free(sh.items), free(w), free(tid);
    pthread_mutex_destroy(&sh.mu);
    pthread_cond_destroy(&sh.done);
    return stop == 2 ? -1 : stop == 3 ? -2 : 0;
}
