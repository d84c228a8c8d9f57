/* prep.c - one state's expansion before the queue sees it (see prep.h),
 * in phases: build its graph from its parent's, match (from the parent's
 * matches), judge every match (trial.c). Nothing here reads or writes the
 * search's states, so it may run on the worker thread. */
#include "search/prep.h"
#include "sys/sys.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rewrite/trial.h"

/* ---- match lists ---- */

int eg_match_list_add(const eg_match *m, size_t from, void *arg) {
    eg_match_list *L = arg;
    int all_weights = 1;
    for (int j = 0; j < m->n_nodes; j++) all_weights &= L->weight_only[m->node[j]];
    if (all_weights) return 0;
    if (L->n == L->cap) {
        size_t cap = L->cap ? 2 * L->cap : 64;
        eg_match *t = realloc(L->m, cap * sizeof *t);
        size_t *f = t ? realloc(L->from, cap * sizeof *f) : NULL;
        if (t) L->m = t;
        if (!f) {
            L->oom = 1;
            return 1;
        }
        L->from = f, L->cap = cap;
    }
    L->from[L->n] = from;
    L->m[L->n++] = *m;
    return 0;
}

int eg_match_list_collect(const eg_match *m, void *arg) { return eg_match_list_add(m, EG_REMATCH_NEW, arg); }

/* ---- phase: judge ---- */

/* The judgment's verdict for a trial's status. */
static int verdict_of(eg_status jr) {
    return jr == EG_OK ? EG_J_OK : jr == EG_ESHAPE ? EG_J_SHAPE : jr == EG_EGRAPH ? EG_J_CYCLE : EG_J_OTHER;
}

/* 1 when m binds no node near what the last rewrite touched (dirty) and
 * no rule input comes after its first node (so no cycle can close through
 * it): then a judgment of m in the parent holds here. */
static int far_from(const eg_graph *g, const eg_match *m, const unsigned char *dirty) {
    int first = g->n_nodes;
    for (int j = 0; j < m->n_nodes; j++) {
        if (dirty[m->node[j]]) return 0;
        if (m->node[j] < first) first = m->node[j];
    }
    for (int i = 0; i < RG_MAX_INPUTS; i++)
        if (m->input[i] >= 0 && g->tensor[m->input[i]].producer > first) return 0;
    return 1;
}

eg_status eg_build_child(const eg_ruleset *rs, eg_cost *c, const eg_graph *pg, const uint64_t *ptok,
                         const double *pnc, const eg_match *m, eg_graph **g, double **nc, uint64_t **tok,
                         double *cost) {
    char aerr[EG_ERRLEN];
    *g = NULL, *nc = NULL, *tok = NULL;
    eg_status rc = eg_apply(rs, pg, m, g, aerr, sizeof aerr);
    if (rc != EG_OK) return rc;
    *nc = malloc(sizeof **nc * (size_t)((*g)->n_nodes ? (*g)->n_nodes : 1));
    *tok = malloc(sizeof **tok * (size_t)((*g)->n_tensors ? (*g)->n_tensors : 1));
    if (!*nc || !*tok) rc = EG_ENOMEM;
    else if (eg_tok_child(rs, pg, ptok, m, *g, *tok) != EG_OK) rc = EG_EGRAPH;
    if (rc == EG_OK) {
        *cost = eg_cost_graph_nodes(c, *g, pnc, *nc);
        return EG_OK;
    }
    eg_free(*g), free(*nc), free(*tok);
    *g = NULL, *nc = NULL, *tok = NULL;
    return rc;
}

/* A match the trial cannot judge (EG_EUNSUPPORTED): build the graph and
 * judge that. @return as eg_build_child, with v's graph, cost and hash set
 * on EG_OK. */
static eg_status judge_built(eg_judge_in *J, const eg_match *m, eg_verdict *v) {
    double t = eg_now_s();
    eg_status rc = eg_build_child(J->rs, J->c, J->g, J->tok, J->node_cost, m, &v->ng, &v->nc, &v->tok, &v->cost);
    if (rc == EG_OK) v->h = eg_tok_hash(v->ng, v->tok);
    J->t_apply += eg_now_s() - t;
    return rc;
}

eg_status eg_judge_all(eg_judge_in *J, const eg_match_list *L, eg_verdict *v, eg_judgment *jl) {
    eg_trial *tr = NULL;
    unsigned char *dirty = NULL; /* nodes whose matches are judged again */
    if (!L->n) return EG_OK;
    eg_status rc = eg_trial_new(J->rs, J->c, J->g, J->tok, J->node_cost, &J->hash, &tr);
    if (rc == EG_OK && J->inherit) {
        if ((dirty = malloc((size_t)J->g->n_nodes + 1))) eg_trial_near(tr, J->touched, eg_trial_reach(J->c), dirty);
        else rc = EG_ENOMEM;
    }
    for (size_t k = 0; k < L->n && rc == EG_OK; k++) {
        const eg_match *m = &L->m[k];
        const eg_judgment *pj = J->inherit && L->from[k] != EG_REMATCH_NEW ? &J->inherit[L->from[k]] : NULL;
        eg_verdict *vk = &v[k];
        double delta = 0;
        uint64_t h = 0;
        if (pj && (pj->verdict == EG_J_SHAPE || (pj->verdict == EG_J_CYCLE && J->keeps_paths))) {
            vk->jr = pj->verdict == EG_J_SHAPE ? EG_ESHAPE : EG_EGRAPH; /* refused as in the parent */
        } else if (pj && pj->verdict == EG_J_OK && far_from(J->g, m, dirty)) { /* judged as in the parent */
            vk->jr = EG_OK, vk->inherited = 1;
            delta = pj->delta, h = eg_trial_hash(tr) + pj->dh;
        } else {
            vk->jr = eg_trial_judge(tr, m, &delta, &h);
        }
        vk->cost = J->cost + delta, vk->h = h;
        if (vk->jr == EG_EUNSUPPORTED) vk->jr = judge_built(J, m, vk);
        /* kept for the children; a built graph's judgment like a trial's */
        if (jl) jl[k] = (eg_judgment){vk->cost - J->cost, vk->h - eg_trial_hash(tr), verdict_of(vk->jr)};
        if (vk->jr == EG_ENOMEM) rc = EG_ENOMEM;
    }
    eg_trial_free(tr);
    free(dirty);
    return rc;
}

void eg_verdicts_free(eg_verdict *v, size_t n) {
    for (size_t k = 0; v && k < n; k++) eg_free(v[k].ng), free(v[k].nc), free(v[k].tok);
    free(v);
}

/* ---- phase: match ---- */

/* The matches a child is matched from (eg_rematch): ml, and cyc after
 * them (copied into *joined, which the caller frees) when all; *pm, *n
 * the list. @return EG_OK or EG_ENOMEM. */
static eg_status matches_joined(const eg_match *ml, size_t n_ml, const eg_match *cyc, size_t n_cyc, int all,
                                eg_match **joined, const eg_match **pm, size_t *n) {
    *joined = NULL, *pm = ml, *n = n_ml;
    if (!all || !n_cyc) return EG_OK;
    if (!(*joined = malloc(sizeof **joined * (n_ml + n_cyc)))) return EG_ENOMEM;
    if (n_ml) memcpy(*joined, ml, sizeof **joined * n_ml);
    memcpy(*joined + n_ml, cyc, sizeof **joined * n_cyc);
    *pm = *joined, *n = n_ml + n_cyc;
    return EG_OK;
}

eg_status eg_match_child(const eg_ruleset *rs, const eg_graph *g, const eg_graph *pg, const eg_match *pml,
                         size_t n_pml, const eg_match *pcyc, size_t n_pcyc, int with_cyc,
                         unsigned char *touched, eg_match_list *L) {
    unsigned char *wo = malloc((size_t)(g->n_nodes ? g->n_nodes : 1));
    *L = (eg_match_list){.rs = rs, .g = g, .weight_only = wo};
    if (!wo) return EG_ENOMEM;
    eg_mark_weight_only(g, wo);
    eg_status rc;
    if (!pg || !pml) {
        rc = eg_match_all(rs, g, eg_match_list_collect, L);
    } else {
        eg_match *joined;
        const eg_match *pm;
        size_t n_pm;
        rc = matches_joined(pml, n_pml, pcyc, n_pcyc, with_cyc, &joined, &pm, &n_pm);
        if (rc == EG_OK) rc = eg_rematch(rs, pg, pm, n_pm, g, touched, eg_match_list_add, L);
        free(joined);
    }
    if (rc == EG_OK && L->oom) rc = EG_ENOMEM;
    free(wo);
    L->weight_only = NULL;
    return rc;
}

/* The state, made of its parent by a rewrite that keeps paths, refuses
 * the parent's cyc as the parent did: each that binds no node the rewrite
 * touched becomes one of its own, in its node ids, counted as refused.
 * @return EG_OK or EG_ENOMEM. */
static eg_status carry_cycles(eg_prep *P) {
    const eg_graph *pg = P->pg, *cg = P->g;
    P->cyc_set = 1;
    if (!P->pn_cyc) return EG_OK;
    int *p2c = malloc(sizeof *p2c * (size_t)(pg->n_nodes ? pg->n_nodes : 1));
    eg_match *cyc = malloc(sizeof *cyc * P->pn_cyc);
    if (!p2c || !cyc) {
        free(p2c), free(cyc);
        return EG_ENOMEM;
    }
    for (int j = 0; j < pg->n_nodes; j++) p2c[j] = -1;
    for (int q = 0; q < cg->n_nodes; q++) {
        int o = cg->node[q].origin - 1;
        if (o >= 0 && o < pg->n_nodes) p2c[o] = q;
    }
    size_t n = 0;
    for (size_t k = 0; k < P->pn_cyc; k++) {
        eg_match m = P->pcyc[k];
        int keep = 1;
        for (int j = 0; j < m.n_nodes && keep; j++) {
            int q = p2c[m.node[j]];
            keep = q >= 0 && !P->touched[q];
            m.node[j] = q;
        }
        if (keep) cyc[n++] = m;
    }
    free(p2c);
    P->cyc = cyc, P->n_cyc = n, P->carried += n;
    return EG_OK;
}

/* Every match in P->g: from the parent's when they are at hand
 * (eg_rematch), else all anew. After a rewrite that keeps paths, the
 * parent's cyc are carried over; after another, they are matched again,
 * to be judged anew. */
static eg_status match_graph(eg_prep *P) {
    P->touched = calloc((size_t)P->g->n_nodes + 1, 1);
    if (!P->touched) return EG_ENOMEM;
    int keeps = P->keeps_paths, joined_in = !keeps && P->pn_cyc && P->pg && P->pml;
    eg_status rc = eg_match_child(P->rs, P->g, P->pg, P->pml, P->pn_ml, P->pcyc, P->pn_cyc, !keeps, P->touched,
                                  &P->L);
    if (rc == EG_OK && keeps && P->pg && P->pml) rc = carry_cycles(P);
    /* one of the parent's cyc has no judgment in its jl to inherit */
    for (size_t k = 0; rc == EG_OK && joined_in && k < P->L.n; k++)
        if (P->L.from[k] != EG_REMATCH_NEW && P->L.from[k] >= P->pn_ml) P->L.from[k] = EG_REMATCH_NEW;
    return rc;
}

/* ---- phase: build ---- */

/* The state's graph from its parent's (eg_build_child); one eg_apply
 * refuses leaves P->ok 0. @return EG_OK or EG_ENOMEM. */
static eg_status build(eg_prep *P) {
    double cost;
    eg_status rc = eg_build_child(P->rs, P->c, P->pg, P->ptok, P->pnc, &P->m, &P->g, &P->nc, &P->tok, &cost);
    P->built = rc == EG_OK, P->ok = rc == EG_OK;
    return rc == EG_ENOMEM ? rc : EG_OK;
}

void eg_prep_run(void *arg) {
    eg_prep *P = arg;
    double t = eg_now_s();
    P->ok = 1;
    P->rc = P->g ? EG_OK : build(P);
    P->t_apply += eg_now_s() - t;
    if (P->rc != EG_OK || !P->ok) return;
    t = eg_now_s();
    P->rc = match_graph(P);
    P->t_match += eg_now_s() - t;
    if (P->rc != EG_OK) return;
    t = eg_now_s();
    P->jl = malloc(sizeof *P->jl * (P->L.n ? P->L.n : 1));
    P->v = calloc(P->L.n ? P->L.n : 1, sizeof *P->v);
    if (!P->jl || !P->v) {
        P->rc = EG_ENOMEM;
        return;
    }
    eg_judge_in J = {P->rs, P->c, P->g, P->tok, P->nc, P->cost, P->hash, P->keeps_paths,
                     P->pg && P->pml ? P->pjl : NULL, P->touched, 0};
    P->rc = eg_judge_all(&J, &P->L, P->v, P->jl);
    P->t_apply += J.t_apply;
    P->t_judge += eg_now_s() - t - J.t_apply;
}

void eg_prep_free(eg_prep *P) {
    if (P->built) eg_free(P->g), free(P->nc), free(P->tok);
    P->g = NULL, P->nc = NULL, P->tok = NULL, P->built = 0;
    eg_verdicts_free(P->v, P->L.n);
    free(P->L.m), free(P->L.from), free(P->touched), free(P->cyc), free(P->jl);
    P->v = NULL, P->L.m = NULL, P->L.from = NULL, P->L.n = 0, P->touched = NULL, P->cyc = NULL, P->jl = NULL;
    P->state = -1;
}
