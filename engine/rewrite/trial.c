/* trial.c - judging a rewrite before it is built: token hashes and the
 * in-place trial of a match (see trial.h). A judgment runs in phases:
 * check (shapes, cycle), tokens and hash change, the rewrite made in place
 * on the graph itself, the charges around it before and after, undo. */
#include "rewrite/trial.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite/rules_int.h"

/* Scratch slots past the graph's counts: one per dst node, then one Identity
 * per rule output (keep_name in apply.c). */
#define N_SCRATCH (RG_MAX_NODES + RG_MAX_OUTPUTS)

/* Downstream sets kept per trial context: a 2-output rule over pairs of
 * nodes asks "is the second downstream of the first?" for every pair. */
#define N_DESC 64

typedef struct { /* a tensor's context before the trial touched it */
    int t, uses, reader;
    unsigned flags;
} saved_tensor;

typedef struct { /* a reader's input slot before it was redirected */
    int node, slot, was;
} saved_slot;

struct eg_trial {
    const eg_ruleset *rs;
    eg_cost *c;
    const eg_graph *g;   /* the graph judged */
    const uint64_t *tok; /* its tokens */
    eg_graph *w;         /* g itself, changed by a judgment and restored; its
                            scratch slots (dst nodes, Identity nodes) lie
                            past its counts, which a judgment raises */
    int nn, nt;          /* g's node and tensor counts */
    int s_node, s_tensor;  /* first scratch node, first scratch tensor in w */
    uint64_t *share;     /* [nn] eg_node_share of g's nodes, where share_known */
    unsigned char *share_known; /* [nn] (each worked out when first asked,
                                   from the node as g has it: share_of) */
    uint64_t out_hash;   /* eg_outputs_hash of g's output tokens */
    uint64_t hash;       /* sum of shares + out_hash */
    double *own;         /* [nn] each node's own cost (eg_cost_node_in in g; -1
                            until asked, for a node that costs nothing in g) */
    double *charge;      /* [nn] each node's charge in g: own, or 0 when skipped */
    eg_cost *shadow;     /* eg_cost_shadow(c): a calibration trace compares
                            each judgment's delta with analytic-cpu's */
    double *charge2;     /* [nn] with shadow: each node's charge under it */
    int regroup;         /* a kept node's own cost can change (ort groups) */
    double cost;         /* their sum */
    int *uses, *reader;  /* [w tensors] the cost context, edited by a trial */
    unsigned char *wo;   /* [w nodes] */
    int *rd_at, *rd;     /* readers of tensor t (once per node): rd[rd_at[t] .. rd_at[t+1]) */
    uint32_t *dead, *tmark, trial; /* [w nodes], [w tensors]: == trial in this trial */
    uint32_t *seen, visit;         /* [w nodes]: == visit in this walk */
    int *queue, *dist;   /* [w nodes] breadth-first search */
    saved_tensor *st;    /* tensors touched by a trial */
    int n_st, cap_st;
    saved_slot *ss;      /* slots redirected */
    int n_ss, cap_ss;
    int sin[N_SCRATCH][OPS_MAX_ARITY], sout[N_SCRATCH]; /* scratch nodes' in[], out[] */
    char empty[1];       /* scratch nodes' names */
    char sname[N_SCRATCH][40]; /* scratch tensors' names: the ort backend
                                  writes them into its kernel models */
    int redirected[64];  /* readers redirected (a few; more: not judged) */
    int n_red;
    struct {             /* nodes downstream of a node (by its index), recent ones */
        int node;
        int upto;             /* below[node .. upto] are known */
        unsigned char *below; /* [nn] */
    } desc[N_DESC];
    int n_desc, next_desc;
};

/* ---- tokens ---- */

static uint64_t node_share(const eg_node *n, const uint64_t *tok) {
    uint64_t small[128], *buf = small;
    int n_in = n->n_in + n->n_implicit;
    size_t need = (size_t)n_in + (size_t)n->n_out;
    if (need > sizeof small / sizeof small[0] && !(buf = malloc(sizeof *buf * need)))
        return 0; /* out of memory for a few KB: no share */
    uint64_t *in = buf, *out = buf + n_in;
    for (int k = 0; k < n_in; k++) in[k] = n->in[k] >= 0 ? tok[n->in[k]] : (uint64_t)-1;
    for (int k = 0; k < n->n_out; k++) out[k] = n->out[k] >= 0 ? tok[n->out[k]] : (uint64_t)-1;
    uint64_t h = eg_node_share(n, in, out);
    if (buf != small) free(buf);
    return h;
}

static uint64_t outputs_hash(const eg_graph *g, const uint64_t *tok, int o, uint64_t o_tok) {
    uint64_t *oh = malloc(sizeof *oh * (size_t)(g->n_outputs + 1));
    if (!oh) return 0;
    for (int q = 0; q < g->n_outputs; q++) oh[q] = g->output[q] == o ? o_tok : tok[g->output[q]];
    uint64_t h = eg_outputs_hash(g, oh);
    free(oh);
    return h;
}

uint64_t eg_tok_hash(const eg_graph *g, const uint64_t *tok) {
    uint64_t h = outputs_hash(g, tok, -1, 0);
    for (int j = 0; j < g->n_nodes; j++) h += node_share(&g->node[j], tok);
    return h;
}

/* The tensor of src output k in g. */
static int src_out(const eg_graph *g, const rdb_rule *r, const eg_match *m, int k) {
    return g->node[m->node[RG_NODE_INDEX(r->src.out[k])]].out[0];
}

/* The dst nodes of m as eg_apply writes them (nd[j], inputs left out) and
 * their values' tokens vt[ref]: a dst output the token of the first src
 * output it replaces, an internal value its node's hash (an identity
 * enlarge passes its input's on). @return EG_OK or EG_ESHAPE. */
static eg_status dst_tokens(const eg_ruleset *rs, const eg_graph *g, const uint64_t *tok, const eg_match *m,
                            eg_node nd[RG_MAX_NODES], ten_shape shape[RG_MAX_REFS], uint64_t vt[RG_MAX_REFS]) {
    const rdb_rule *r = &rs->rule[m->rule];
    ten_shape in[RG_MAX_INPUTS];
    memset(in, 0, sizeof in);
    for (int i = 0; i < RG_MAX_INPUTS; i++) {
        vt[RG_IN(i)] = m->input[i] >= 0 ? tok[m->input[i]] : (uint64_t)-1;
        if (i < r->src.n_inputs && m->input[i] >= 0) eg_to_ten_shape(&g->tensor[m->input[i]].shape, &in[i]);
    }
    if (rg_infer_shapes(&r->dst, in, shape, NULL, 0) != RG_OK) return EG_ESHAPE;
    for (int i = 0; i < RG_MAX_INPUTS; i++) shape[RG_IN(i)] = in[i];
    for (int j = 0; j < r->dst.n_nodes; j++) {
        const rg_node *dn = &r->dst.node[j];
        memset(&nd[j], 0, sizeof nd[j]);
        if (eg_dst_node_op(g, &rs->plan[m->rule], &r->dst, j, m, in, shape, &nd[j]) != EG_OK) return EG_ESHAPE;
        nd[j].n_in = ops_table[dn->op].arity, nd[j].n_out = 1;
        int claimed = -1;
        for (int k = 0; k < r->src.n_outputs && claimed < 0; k++)
            if (r->dst.out[k] == RG_NODE(j)) claimed = k;
        uint64_t ih[OPS_MAX_ARITY];
        for (int k = 0; k < nd[j].n_in; k++) ih[k] = vt[dn->in[k]];
        eg_shape s0;
        eg_from_ten_shape(&shape[dn->in[0]], &s0);
        if (claimed >= 0) vt[RG_NODE(j)] = tok[src_out(g, r, m, claimed)];
        else if (eg_enlarge_is_identity(&nd[j], &s0)) vt[RG_NODE(j)] = ih[0];
        else vt[RG_NODE(j)] = eg_node_hash(&nd[j], ih, 0);
    }
    return EG_OK;
}

/* 1 when src output k's graph name moves to an Identity node (keep_name in
 * apply.c): o is a graph output or pinned, and dst output k is a rule
 * input or a dst value renamed for an earlier output already (renamed[]
 * is updated as keep_name does). */
static int needs_identity(const eg_graph *g, const rdb_rule *r, int o, int k, unsigned char *renamed) {
    if (!(g->tensor[o].flags & (EG_TF_OUTPUT | EG_TF_PINNED))) return 0;
    rg_ref v = r->dst.out[k];
    if (RG_IS_INPUT(v) || renamed[RG_NODE_INDEX(v)]) return 1;
    renamed[RG_NODE_INDEX(v)] = 1;
    return 0;
}

eg_status eg_tok_child(const eg_ruleset *rs, const eg_graph *parent, const uint64_t *ptok,
                       const eg_match *m, const eg_graph *child, uint64_t *ctok) {
    const rdb_rule *r = &rs->rule[m->rule];
    eg_node nd[RG_MAX_NODES];
    ten_shape shape[RG_MAX_REFS];
    uint64_t vt[RG_MAX_REFS];
    if (dst_tokens(rs, parent, ptok, m, nd, shape, vt) != EG_OK) return EG_EGRAPH;
    int next = parent->n_tensors + r->dst.n_nodes;
    if (child->n_tensors < next) return EG_EGRAPH;
    memcpy(ctok, ptok, sizeof *ctok * (size_t)parent->n_tensors);
    for (int j = 0; j < r->dst.n_nodes; j++) ctok[parent->n_tensors + j] = vt[RG_NODE(j)];
    unsigned char renamed[RG_MAX_NODES] = {0};
    for (int k = 0; k < r->src.n_outputs; k++) {
        int o = src_out(parent, r, m, k);
        if (needs_identity(parent, r, o, k, renamed)) {
            if (next >= child->n_tensors) return EG_EGRAPH;
            ctok[next++] = ptok[o];
        }
    }
    return next == child->n_tensors ? EG_OK : EG_EGRAPH;
}

/* ---- the trial context ---- */

/* Room for the scratch slots past g's counts, initialised empty. */
static eg_status add_scratch(eg_trial *t) {
    eg_graph *w = t->w;
    if (eg_graph_reserve(w, N_SCRATCH, N_SCRATCH) != EG_OK) return EG_ENOMEM;
    t->s_node = t->nn, t->s_tensor = t->nt;
    for (int i = 0; i < N_SCRATCH; i++) {
        eg_node *n = &w->node[t->s_node + i];
        memset(n, 0, sizeof *n);
        n->name = t->empty, n->in = t->sin[i], n->out = &t->sout[i], n->n_out = 1, n->borrowed = 1;
        t->sout[i] = -1;
        eg_tensor *v = &w->tensor[t->s_tensor + i];
        memset(v, 0, sizeof *v);
        for (unsigned long k = (unsigned long)w->n_tensors + (unsigned long)i;; k += N_SCRATCH) {
            snprintf(t->sname[i], sizeof t->sname[i], "trial%lu", k); /* a name g does not use */
            if (eg_find_tensor(w, t->sname[i]) == -1) break;
        }
        v->name = t->sname[i], v->producer = -1, v->shape.rank = -1;
    }
    return EG_OK;
}

/* Node j's share (eg_node_share over its tokens), worked out on first
 * asking: before a judgment changes the node (a redirected reader), or of
 * a node it does not change (a matched one). */
static uint64_t share_of(eg_trial *t, int j) {
    if (!t->share_known[j]) {
        t->share[j] = node_share(&t->g->node[j], t->tok);
        t->share_known[j] = 1;
    }
    return t->share[j];
}

eg_status eg_trial_new(const eg_ruleset *rs, eg_cost *c, eg_graph *g, const uint64_t *tok,
                       const double *known, const uint64_t *hash, eg_trial **out) {
    *out = NULL;
    eg_trial *t = calloc(1, sizeof *t);
    if (!t) return EG_ENOMEM;
    t->rs = rs, t->c = c, t->g = g, t->tok = tok, t->nn = g->n_nodes, t->nt = g->n_tensors;
    t->w = g;
    eg_status rc = add_scratch(t);
    if (rc == EG_OK) rc = eg_reader_index(g, &t->rd_at, &t->rd);
    size_t wn = (size_t)t->nn + N_SCRATCH + 1, wt = (size_t)t->nt + N_SCRATCH + 1, nn = (size_t)t->nn + 1;
    if (rc == EG_OK) {
        t->share = malloc(sizeof *t->share * nn);
        t->share_known = calloc(nn, 1);
        t->charge = malloc(sizeof *t->charge * nn);
        t->shadow = eg_cost_shadow(c);
        t->charge2 = t->shadow ? malloc(sizeof *t->charge2 * nn) : NULL;
        t->own = malloc(sizeof *t->own * nn);
        t->uses = malloc(sizeof *t->uses * wt);
        t->reader = malloc(sizeof *t->reader * wt);
        t->wo = calloc(wn, 1);
        t->dead = calloc(wn, sizeof *t->dead);
        t->seen = calloc(wn, sizeof *t->seen);
        t->tmark = calloc(wt, sizeof *t->tmark);
        t->queue = malloc(sizeof *t->queue * wn);
        t->dist = malloc(sizeof *t->dist * wn);
        if (!t->share || !t->share_known || !t->charge || (t->shadow && !t->charge2) || !t->own || !t->uses || !t->reader || !t->wo || !t->dead || !t->seen || !t->tmark ||
            !t->queue || !t->dist)
            rc = EG_ENOMEM;
    }
    if (rc != EG_OK) {
        eg_trial_free(t);
        return rc;
    }
    eg_graph *w = t->w;
    eg_count_uses(w, t->uses);
    eg_last_readers(w, t->reader);
    eg_mark_weight_only(g, t->wo);
    t->out_hash = outputs_hash(g, tok, -1, 0);
    t->hash = hash ? *hash : t->out_hash;
    eg_cost_ctx x = {t->uses, t->reader, t->wo};
    t->regroup = eg_cost_kind_of(c) == EG_COST_ORT;
    for (int j = 0; j < t->nn; j++) {
        if (!hash) t->hash += share_of(t, j);
        /* a node that costs nothing here is costed only if a rewrite
         * makes it count (a measured backend would time it for nothing) */
        int skip = eg_cost_skipped(c, w, &x, j);
        t->own[j] = known && known[j] >= 0 ? known[j] : skip ? -1 : eg_cost_node_in(c, w, &x, j);
        t->charge[j] = skip ? 0 : t->own[j];
        t->cost += t->charge[j];
        if (t->shadow)
            t->charge2[j] = eg_cost_skipped(t->shadow, w, &x, j) ? 0 : eg_cost_node_in(t->shadow, w, &x, j);
    }
    *out = t;
    return EG_OK;
}

double eg_trial_cost(const eg_trial *t) { return t->cost; }
uint64_t eg_trial_hash(const eg_trial *t) { return t->hash; }

void eg_trial_free(eg_trial *t) {
    if (!t) return;
    free(t->share), free(t->share_known), free(t->charge), free(t->charge2), free(t->own), free(t->uses), free(t->reader), free(t->wo);
    free(t->dead), free(t->seen), free(t->tmark), free(t->queue), free(t->dist);
    free(t->rd_at), free(t->rd), free(t->st), free(t->ss);
    for (int i = 0; i < t->n_desc; i++) free(t->desc[i].below);
    free(t);
}

/* ---- phase: check ---- */

/* 1 when m is matched on node j. */
static int is_matched(const eg_match *m, int j) {
    for (int q = 0; q < m->n_nodes; q++)
        if (m->node[q] == j) return 1;
    return 0;
}

/* Bit k set when tensor v depends on src output k through nodes outside
 * the match (an outside reader of that output is upstream of v). Walks up
 * from v through nodes after the first matched one (toposorted: nothing
 * before it can depend on the match). */
static unsigned outside_deps(eg_trial *t, const rdb_rule *r, const eg_match *m, int first, int v) {
    const eg_graph *g = t->g;
    unsigned mask = 0;
    int n = 0, p = g->tensor[v].producer;
    if (p <= first || t->seen[p] == t->visit) return 0;
    t->seen[p] = t->visit;
    t->queue[n++] = p;
    while (n > 0) {
        int j = t->queue[--n];
        if (is_matched(m, j)) {
            for (int k = 0; k < r->src.n_outputs; k++)
                if (m->node[RG_NODE_INDEX(r->src.out[k])] == j) mask |= 1u << k;
            continue;
        }
        const eg_node *nd = &g->node[j];
        for (int k = 0; k < nd->n_in + nd->n_implicit; k++) {
            int q = nd->in[k] >= 0 ? g->tensor[nd->in[k]].producer : -1;
            if (q < first || t->seen[q] == t->visit) continue;
            t->seen[q] = t->visit;
            t->queue[n++] = q;
        }
    }
    return mask;
}

/* 1 when node p of g is downstream of node q, from the cache of recent
 * q's, each swept in node order only as far as asked (toposorted: only
 * nodes from q to p can be on a path between them). @return -1 when out
 * of memory. */
static int downstream(eg_trial *t, int q, int p) {
    if (p < q) return 0;
    int slot = -1;
    for (int i = 0; i < t->n_desc && slot < 0; i++)
        if (t->desc[i].node == q) slot = i;
    if (slot < 0) {
        slot = t->n_desc < N_DESC ? t->n_desc++ : t->next_desc++ % N_DESC;
        if (!t->desc[slot].below && !(t->desc[slot].below = malloc((size_t)t->nn + 1))) {
            if (slot == t->n_desc - 1) t->n_desc--;
            return -1;
        }
        t->desc[slot].node = q, t->desc[slot].upto = q;
        t->desc[slot].below[q] = 1;
    }
    unsigned char *below = t->desc[slot].below;
    const eg_graph *g = t->g;
    for (int j = t->desc[slot].upto + 1; j <= p; j++) {
        const eg_node *n = &g->node[j];
        below[j] = 0;
        for (int k = 0; k < n->n_in + n->n_implicit && !below[j]; k++) {
            int a = n->in[k] >= 0 ? g->tensor[n->in[k]].producer : -1;
            below[j] = a >= q && below[a];
        }
    }
    if (p > t->desc[slot].upto) t->desc[slot].upto = p;
    return below[p];
}

/* 1 when src output k feeds another src node: then a path through the
 * match is not a path outside it, and downstream sets do not tell. */
static int outputs_feed_src(const rdb_rule *r) {
    for (int j = 0; j < r->src.n_nodes; j++)
        for (int a = 0; a < ops_table[r->src.node[j].op].arity; a++)
            for (int k = 0; k < r->src.n_outputs; k++)
                if (r->src.node[j].in[a] == r->src.out[k]) return 1;
    return 0;
}

/* 1 when the rewrite makes a cycle: dst output k' reads rule input i,
 * which depends on src output k, whose readers will read dst output k:
 * an edge k' -> k; a cycle of such edges is a cycle of the graph. */
static int makes_cycle(eg_trial *t, const rdb_rule *r, const eg_match *m) {
    int first = INT_MAX;
    for (int q = 0; q < m->n_nodes; q++)
        if (m->node[q] < first) first = m->node[q];
    unsigned reads[RG_MAX_REFS] = {0}; /* bit i: the value reads rule input i */
    for (int i = 0; i < RG_MAX_INPUTS; i++) reads[RG_IN(i)] = 1u << i;
    for (int j = 0; j < r->dst.n_nodes; j++)
        for (int k = 0; k < ops_table[r->dst.node[j].op].arity; k++) reads[RG_NODE(j)] |= reads[r->dst.node[j].in[k]];
    unsigned dep[RG_MAX_INPUTS] = {0};
    int walk = outputs_feed_src(r);
    for (int i = 0; i < r->src.n_inputs; i++) {
        int v = m->input[i], p = v >= 0 ? t->g->tensor[v].producer : -1;
        if (p <= first) continue; /* upstream of the whole match */
        for (int k = 0; k < r->src.n_outputs && !walk; k++) {
            int below = downstream(t, m->node[RG_NODE_INDEX(r->src.out[k])], p);
            if (below < 0) walk = 1; /* out of memory: walk instead */
            else if (below) dep[i] |= 1u << k;
        }
        if (walk) {
            t->visit++;
            dep[i] = outside_deps(t, r, m, first, v);
        }
    }
    int no = r->src.n_outputs;
    unsigned reach[RG_MAX_OUTPUTS] = {0}; /* bit k of reach[k']: edge k' -> k */
    for (int kk = 0; kk < no; kk++)
        for (int i = 0; i < r->src.n_inputs; i++)
            if (reads[r->dst.out[kk]] >> i & 1) reach[kk] |= dep[i];
    for (int via = 0; via < no; via++) /* transitive closure */
        for (int kk = 0; kk < no; kk++)
            if (reach[kk] >> via & 1) reach[kk] |= reach[via];
    for (int kk = 0; kk < no; kk++)
        if (reach[kk] >> kk & 1) return 1;
    return 0;
}

/* ---- phase: the rewrite in place, and undo ---- */

static eg_status save_tensor(eg_trial *t, int v) {
    if (t->tmark[v] == t->trial) return EG_OK;
    if (t->n_st == t->cap_st) {
        int cap = t->cap_st ? 2 * t->cap_st : 64;
        saved_tensor *n = realloc(t->st, sizeof *n * (size_t)cap);
        if (!n) return EG_ENOMEM;
        t->st = n, t->cap_st = cap;
    }
    t->tmark[v] = t->trial;
    t->st[t->n_st++] = (saved_tensor){v, t->uses[v], t->reader[v], t->w->tensor[v].flags};
    return EG_OK;
}

static eg_status save_slot(eg_trial *t, int node, int slot) {
    if (t->n_ss == t->cap_ss) {
        int cap = t->cap_ss ? 2 * t->cap_ss : 64;
        saved_slot *n = realloc(t->ss, sizeof *n * (size_t)cap);
        if (!n) return EG_ENOMEM;
        t->ss = n, t->cap_ss = cap;
    }
    t->ss[t->n_ss++] = (saved_slot){node, slot, t->w->node[node].in[slot]};
    return EG_OK;
}

static void undo(eg_trial *t) {
    for (int i = t->n_ss - 1; i >= 0; i--) t->w->node[t->ss[i].node].in[t->ss[i].slot] = t->ss[i].was;
    for (int i = t->n_st - 1; i >= 0; i--) {
        const saved_tensor *s = &t->st[i];
        t->uses[s->t] = s->uses, t->reader[s->t] = s->reader, t->w->tensor[s->t].flags = s->flags;
    }
    t->n_ss = t->n_st = t->n_red = 0;
    t->w->n_nodes = t->nn, t->w->n_tensors = t->nt;
}

/* Put node nd (inputs in[], output tensor v) in scratch slot s. */
static eg_status place(eg_trial *t, int s, const eg_node *nd, const int *in, int v, const eg_shape *shape,
                       int dtype) {
    eg_graph *w = t->w;
    eg_node *n = &w->node[s];
    n->kind = nd->kind, n->op = nd->op, n->mop = nd->mop, n->attr = nd->attr;
    memcpy(n->param, nd->param, sizeof n->param);
    n->n_in = nd->n_in, n->n_implicit = 0, n->n_out = 1, n->out[0] = v;
    eg_status rc = save_tensor(t, v);
    for (int k = 0; k < nd->n_in && rc == EG_OK; k++) {
        n->in[k] = in[k];
        if ((rc = save_tensor(t, in[k])) == EG_OK) t->uses[in[k]]++;
    }
    if (rc != EG_OK) return rc;
    eg_tensor *tv = &w->tensor[v];
    tv->shape = *shape, tv->dtype = dtype, tv->producer = s, tv->flags = 0;
    for (int k = 0; k < nd->n_in; k++) tv->flags |= w->tensor[in[k]].flags & EG_TF_NONFINITE;
    t->uses[v] = 0, t->reader[v] = -1;
    t->wo[s] = (unsigned char)eg_node_weight_only(w, n, INT_MAX, t->wo);
    return EG_OK;
}

/* A weight-only flag for the value of tensor v, rewrite made. */
static int value_wo(const eg_trial *t, int v) {
    int p = t->w->tensor[v].producer;
    return (t->w->tensor[v].flags & EG_TF_INIT) || (p >= 0 && t->wo[p]);
}

/* After the rewrite: the only live reader of v when it has one use. */
static void fix_reader(eg_trial *t, int v, int n_scratch) {
    const eg_graph *w = t->w;
    int found = -1;
    if (t->uses[v] != 1) return;
    for (int pass = 0; pass < 3 && found < 0; pass++) {
        int n = pass == 0 ? (v < t->nt ? t->rd_at[v + 1] - t->rd_at[v] : 0) : pass == 1 ? n_scratch : t->n_red;
        for (int i = 0; i < n && found < 0; i++) {
            int j = pass == 0 ? t->rd[t->rd_at[v] + i] : pass == 1 ? t->s_node + i : t->redirected[i];
            if (j < t->nn && t->dead[j] == t->trial) continue;
            for (int k = 0; k < w->node[j].n_in && found < 0; k++)
                if (w->node[j].in[k] == v) found = j;
        }
    }
    t->reader[v] = found;
}

/* ---- phase: charges around the change ---- */

static void visit(eg_trial *t, int j, int d, int *n) {
    if (j < 0 || t->seen[j] == t->visit) return;
    t->seen[j] = t->visit;
    t->dist[j] = d;
    t->queue[(*n)++] = j;
}

/* Every node within radius of the seeds already queued (queue[0 .. *n)),
 * through producers and readers before or after the rewrite (a reader
 * redirected away from a src output is a seed, as is that output's
 * producer: the edge between them needs no walk). */
static void neighbourhood(eg_trial *t, int *n, int radius, int n_scratch) {
    const eg_graph *w = t->w;
    for (int h = 0; h < *n; h++) {
        int j = t->queue[h], d = t->dist[j];
        if (d >= radius) continue;
        {
            const eg_node *nd = &w->node[j];
            for (int k = 0; k < nd->n_in + nd->n_implicit; k++)
                if (nd->in[k] >= 0) visit(t, w->tensor[nd->in[k]].producer, d + 1, n);
            for (int k = 0; k < nd->n_out; k++) {
                int v = nd->out[k];
                if (v < 0) continue;
                for (int i = v < t->nt ? t->rd_at[v] : 0; v < t->nt && i < t->rd_at[v + 1]; i++)
                    visit(t, t->rd[i], d + 1, n);
                for (int s = 0; s < n_scratch; s++)
                    for (int q = 0; q < w->node[t->s_node + s].n_in; q++)
                        if (w->node[t->s_node + s].in[q] == v) visit(t, t->s_node + s, d + 1, n);
                for (int s = 0; s < t->n_red; s++)
                    for (int q = 0; q < w->node[t->redirected[s]].n_in; q++)
                        if (w->node[t->redirected[s]].in[q] == v) visit(t, t->redirected[s], d + 1, n);
            }
        }
    }
}

int eg_trial_reach(const eg_cost *c) {
    /* the charges a judgment reads lie within its radius of the match's
     * seeds (one edge from its nodes), and each depends on the graph
     * within a radius again */
    int r = eg_cost_kind_of(c) == EG_COST_ORT ? EG_TRIAL_RADIUS_ORT : EG_TRIAL_RADIUS;
    return 2 * r + 2;
}

void eg_trial_near(eg_trial *t, const unsigned char *seed, int radius, unsigned char *near) {
    const eg_graph *g = t->g;
    int n = 0;
    t->visit++;
    for (int j = 0; j < t->nn; j++)
        if (seed[j]) visit(t, j, 0, &n);
    for (int h = 0; h < n; h++) {
        int j = t->queue[h], d = t->dist[j];
        if (d >= radius) continue;
        const eg_node *nd = &g->node[j];
        for (int k = 0; k < nd->n_in + nd->n_implicit; k++)
            if (nd->in[k] >= 0) visit(t, g->tensor[nd->in[k]].producer, d + 1, &n);
        for (int k = 0; k < nd->n_out; k++)
            for (int i = nd->out[k] >= 0 ? t->rd_at[nd->out[k]] : 0; nd->out[k] >= 0 && i < t->rd_at[nd->out[k] + 1]; i++)
                visit(t, t->rd[i], d + 1, &n);
    }
    for (int j = 0; j < t->nn; j++) near[j] = 0;
    for (int h = 0; h < n; h++) near[t->queue[h]] = 1;
}

/* ---- the judgment ---- */

eg_status eg_trial_judge(eg_trial *t, const eg_match *m, double *delta, uint64_t *hash) {
    const eg_graph *g = t->g;
    eg_graph *w = t->w;
    const rdb_rule *r = &t->rs->rule[m->rule];
    eg_node nd[RG_MAX_NODES];
    ten_shape shape[RG_MAX_REFS];
    uint64_t vt[RG_MAX_REFS];

    /* check: what eg_apply refuses, and what a trial cannot tell */
    for (int i = 0; i < r->src.n_inputs; i++)
        for (int q = 0; m->input[i] >= 0 && q < m->n_nodes; q++)
            if (g->node[m->node[q]].out[0] == m->input[i]) return EG_EUNSUPPORTED;
    if (makes_cycle(t, r, m)) return EG_EGRAPH; /* first: the cheaper check */
    eg_status rc = dst_tokens(t->rs, g, t->tok, m, nd, shape, vt);
    if (rc != EG_OK) return rc;

    /* the rewrite in place: src nodes dead, dst nodes in scratch slots,
     * outside readers of src output k redirected to dst output k */
    t->trial++;
    w->n_nodes = t->nn + N_SCRATCH, w->n_tensors = t->nt + N_SCRATCH; /* the scratch slots, seen */
    int val[RG_MAX_REFS], n_scratch = r->dst.n_nodes;
    for (int q = 0; q < m->n_nodes; q++) {
        const eg_node *n = &g->node[m->node[q]];
        t->dead[m->node[q]] = t->trial;
        for (int k = 0; k < n->n_in && rc == EG_OK; k++)
            if ((rc = save_tensor(t, n->in[k])) == EG_OK) t->uses[n->in[k]]--;
    }
    for (int i = 0; i < RG_MAX_INPUTS; i++) val[RG_IN(i)] = m->input[i];
    for (int j = 0; j < r->dst.n_nodes && rc == EG_OK; j++) {
        int in[OPS_MAX_ARITY];
        eg_shape s;
        for (int k = 0; k < nd[j].n_in; k++) in[k] = val[r->dst.node[j].in[k]];
        eg_from_ten_shape(&shape[RG_NODE(j)], &s);
        val[RG_NODE(j)] = t->s_tensor + j;
        rc = place(t, t->s_node + j, &nd[j], in, t->s_tensor + j, &s, EG_DT_FLOAT);
    }
    uint64_t dh = 0; /* the hash change */
    for (int j = 0; j < r->dst.n_nodes; j++) {
        uint64_t ih[OPS_MAX_ARITY];
        for (int k = 0; k < nd[j].n_in; k++) ih[k] = vt[r->dst.node[j].in[k]];
        dh += eg_node_share(&nd[j], ih, &vt[RG_NODE(j)]);
    }
    for (int q = 0; q < m->n_nodes; q++) dh -= share_of(t, m->node[q]);
    unsigned char renamed[RG_MAX_NODES] = {0};
    int moved_o = -1; /* a graph output whose token changes (see below) */
    uint64_t moved_tok = 0;
    for (int k = 0; k < r->src.n_outputs && rc == EG_OK; k++) {
        int o = src_out(g, r, m, k), d = val[r->dst.out[k]];
        if ((rc = save_tensor(t, o)) != EG_OK || (rc = save_tensor(t, d)) != EG_OK) break;
        for (int i = t->rd_at[o]; i < t->rd_at[o + 1] && rc == EG_OK; i++) {
            int j = t->rd[i];
            if (t->dead[j] == t->trial) continue;
            if (t->n_red == (int)(sizeof t->redirected / sizeof t->redirected[0])) {
                rc = EG_EUNSUPPORTED; /* a value with very many readers: build it */
                break;
            }
            int dup = 0;
            for (int s = 0; s < t->n_red && !dup; s++) dup = t->redirected[s] == j;
            if (!dup) t->redirected[t->n_red++] = j, share_of(t, j); /* its share before it changes */
            eg_node *n = &w->node[j];
            for (int s = 0; s < n->n_in + n->n_implicit && rc == EG_OK; s++)
                if (n->in[s] == o && (rc = save_slot(t, j, s)) == EG_OK) {
                    n->in[s] = d;
                    t->uses[o]--, t->uses[d]++;
                }
        }
        unsigned keep = g->tensor[o].flags & (EG_TF_OUTPUT | EG_TF_PINNED);
        int out_slots = 0;
        for (int q = 0; q < g->n_outputs; q++) out_slots += g->output[q] == o;
        if (rc != EG_OK || !keep) continue;
        int v = d;
        if (needs_identity(g, r, o, k, renamed)) { /* an Identity keeps the name */
            eg_node id;
            memset(&id, 0, sizeof id);
            id.kind = EG_KIND_MODEL, id.mop = EG_MOP_IDENTITY, id.n_in = 1, id.n_out = 1;
            v = t->s_tensor + n_scratch;
            rc = place(t, t->s_node + n_scratch, &id, &d, v, &g->tensor[o].shape, w->tensor[d].dtype);
            n_scratch++;
            dh += eg_node_share(&id, &vt[r->dst.out[k]], &t->tok[o]);
        } else if (vt[r->dst.out[k]] != t->tok[o] && out_slots) { /* renamed, token of another output */
            if (moved_o >= 0) rc = EG_EUNSUPPORTED; /* two such: not judged here */
            moved_o = o, moved_tok = vt[r->dst.out[k]];
        }
        w->tensor[o].flags &= ~keep;
        w->tensor[v].flags |= keep;
        t->uses[o] -= out_slots, t->uses[v] += out_slots;
    }
    /* readers redirected: their share changes where their input's token
     * does (dst output k is a rule input or another output's value) */
    for (int s = 0; s < t->n_red && rc == EG_OK; s++) {
        int j = t->redirected[s];
        const eg_node *n = &w->node[j];
        uint64_t in[64], out[64];
        if (n->n_in + n->n_implicit > 64 || n->n_out > 64) {
            rc = EG_EUNSUPPORTED;
            break;
        }
        for (int k = 0; k < n->n_in + n->n_implicit; k++) {
            int v = n->in[k];
            in[k] = v < 0 ? (uint64_t)-1 : v >= t->s_tensor ? vt[RG_NODE(v - t->s_tensor)] : t->tok[v];
        }
        for (int k = 0; k < n->n_out; k++) out[k] = n->out[k] >= 0 ? t->tok[n->out[k]] : (uint64_t)-1;
        dh += eg_node_share(n, in, out) - t->share[j];
    }
    uint64_t oh = moved_o >= 0 ? outputs_hash(g, t->tok, moved_o, moved_tok) : t->out_hash;

    /* a dst output weight-only where src's was not (or the reverse) would
     * change the flags downstream: not judged here */
    for (int k = 0; k < r->src.n_outputs && rc == EG_OK; k++) {
        int o = src_out(g, r, m, k), p = g->tensor[o].producer;
        if (value_wo(t, val[r->dst.out[k]]) != (p >= 0 && t->wo[p])) rc = EG_EUNSUPPORTED;
    }

    /* charges within the radius of what changed, before and after */
    double d_cost = 0, d2 = 0, before = 0, before2 = 0; /* d2, before2: under t->shadow */
    if (rc == EG_OK) {
        for (int i = 0; i < t->n_st; i++) fix_reader(t, t->st[i].t, n_scratch);
        int n = 0;
        t->visit++;
        for (int q = 0; q < m->n_nodes; q++) visit(t, m->node[q], 0, &n);
        for (int s = 0; s < n_scratch; s++) visit(t, t->s_node + s, 0, &n);
        for (int s = 0; s < t->n_red; s++) visit(t, t->redirected[s], 0, &n);
        for (int i = 0; i < t->n_st; i++) visit(t, w->tensor[t->st[i].t].producer, 0, &n);
        int radius = eg_cost_kind_of(t->c) == EG_COST_ORT ? EG_TRIAL_RADIUS_ORT : EG_TRIAL_RADIUS;
        neighbourhood(t, &n, radius, n_scratch);
        eg_cost_ctx x = {t->uses, t->reader, t->wo};
        for (int i = 0; i < n; i++) {
            int j = t->queue[i];
            if (j < t->nn) d_cost -= t->charge[j], before += t->charge[j];
            if (j < t->nn && t->shadow) d2 -= t->charge2[j], before2 += t->charge2[j];
            if (j < t->nn && t->dead[j] == t->trial) continue;
            if (j >= t->nn && j >= t->s_node + n_scratch) continue;
            if (t->shadow && !eg_cost_skipped(t->shadow, w, &x, j)) d2 += eg_cost_node_in(t->shadow, w, &x, j);
            if (eg_cost_skipped(t->c, w, &x, j)) continue;
            /* a kept node's own cost is its key's, unless its group can change */
            if (j >= t->nn || t->regroup) d_cost += eg_cost_node_in(t->c, w, &x, j);
            else d_cost += t->own[j] >= 0 ? t->own[j] : (t->own[j] = eg_cost_node_in(t->c, w, &x, j));
        }
    }
    undo(t);
    if (rc != EG_OK) return rc;
    if (t->shadow) eg_cost_trace_pair(t->c, d_cost, d2, before, before2, m->rule);
    *delta = d_cost;
    *hash = t->hash - t->out_hash + oh + dh;
    return EG_OK;
}
