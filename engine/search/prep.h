/* prep.h - the part of a search expansion that reads nothing the search
 * changes (prefix eg_prep, eg_judge): build a queued state's graph from
 * its parent's, find its matches from the parent's (eg_rematch), and judge
 * each without building it (trial.h). The search (search.c) fills a job's
 * inputs and takes its outputs; in between the job may run on the worker
 * thread (worker.h) while the search expands another graph. Its outputs
 * depend on its inputs alone (the analytic costs compute a node's cost from
 * the node), so where it runs changes nothing in the result.
 *
 * Also the lists both share: a graph's matches (eg_match_list), how a
 * graph judged each (eg_judgment, kept for its children) and what the
 * queue phase reads of each judgment (eg_verdict). */
#ifndef EG_PREP_H
#define EG_PREP_H

#include <stddef.h>
#include <stdint.h>

#include "cost/cost.h"
#include "ir/graph.h"
#include "rewrite/rules.h"

typedef struct {
    const eg_ruleset *rs;
    const eg_graph *g;
    const unsigned char *weight_only; /* per node of g (eg_mark_weight_only) */
    eg_match *m;
    size_t *from; /* [n]: the parent's match it is (eg_rematch), or EG_REMATCH_NEW */
    size_t n, cap;
    int oom;
} eg_match_list;

/* eg_rematch_fn / eg_match_fn collecting into the eg_match_list arg: every
 * match, unless it rewrites only weight-only nodes. Such an expression is
 * folded into initializers on export, so all its rewrites cost the same,
 * and there are endless ones ((ones x) => (relu (ones x)), a new bias
 * vector (ewadd b1 b2) written another way ...): a plateau the budget
 * would be spent on. */
int eg_match_list_add(const eg_match *m, size_t from, void *arg);
int eg_match_list_collect(const eg_match *m, void *arg);

/* How a match was judged, kept with a graph's matches so the same match in
 * a child, far from what the child's rewrite touched, is judged alike
 * without a trial (eg_trial_reach). */
enum { EG_J_OK, EG_J_SHAPE, EG_J_CYCLE, EG_J_OTHER };
typedef struct {
    double delta; /* cost change (EG_J_OK) */
    uint64_t dh;  /* token hash change (EG_J_OK) */
    int verdict;  /* EG_J_OK; EG_J_SHAPE: eg_apply refuses its shapes (they
                     are the match's own: it holds in any graph the match
                     is in); EG_J_CYCLE: its rewrite would close a cycle (it
                     holds after a rewrite that keeps paths,
                     eg_ruleset_keeps_paths); EG_J_OTHER: not judged by the
                     trial, or unknown: judge it again */
} eg_judgment;

/* A match's judgment as the queue phase reads it. */
typedef struct {
    eg_status jr;  /* EG_OK, or why eg_apply refuses the rewrite */
    int inherited; /* judged as in the parent (far from its rewrite) */
    double cost;   /* EG_OK: the rewritten graph's cost */
    uint64_t h;    /* EG_OK: its token hash */
    eg_graph *ng;  /* the graph, when it was built to be judged (the trial */
    double *nc;    /* could not tell), with its node costs and tokens: */
    uint64_t *tok; /* the queue phase takes them (or eg_verdicts_free) */
} eg_verdict;

/* What judging the matches of one graph reads. */
typedef struct {
    const eg_ruleset *rs;
    eg_cost *c;
    eg_graph *g;               /* a trial changes it and restores it */
    const uint64_t *tok;       /* its tokens, node costs (eg_cost_graph_nodes), */
    const double *node_cost;   /* cost and token hash (eg_tok_hash) */
    double cost;
    uint64_t hash;
    int keeps_paths;           /* the rewrite that made g keeps paths */
    const eg_judgment *inherit; /* NULL, or the parent's judgments, by
                                   the list's `from` */
    const unsigned char *touched; /* with inherit: g's nodes the rewrite touched */
    double t_apply;            /* out: seconds building graphs to judge them */
} eg_judge_in;

/* The child eg_apply makes of match m of graph pg (tokens ptok, node
 * costs pnc, may be NULL), with its node costs (cost c, *cost their sum)
 * and tokens (eg_tok_child), into *g, *nc, *tok (the caller frees them).
 * @return EG_OK; EG_ENOMEM; or the refusal (eg_apply's status, EG_EGRAPH
 * when the tokens do not follow), with nothing made. */
eg_status eg_build_child(const eg_ruleset *rs, eg_cost *c, const eg_graph *pg, const uint64_t *ptok,
                         const double *pnc, const eg_match *m, eg_graph **g, double **nc, uint64_t **tok,
                         double *cost);

/* Every match of the rules in g, into *L (the caller frees L->m and
 * L->from), matches binding only weight-only nodes left out: from the
 * matches of g's parent pg when at hand (pml; the parent's cyc after them
 * when with_cyc; eg_rematch, which fills touched when not NULL), else all
 * anew (pg or pml NULL). The one matching of a child in the search, used
 * for a state's expansion (prep.c) and for a state built to be looked
 * past (search.c). @return EG_OK or EG_ENOMEM. */
eg_status eg_match_child(const eg_ruleset *rs, const eg_graph *g, const eg_graph *pg, const eg_match *pml,
                         size_t n_pml, const eg_match *pcyc, size_t n_pcyc, int with_cyc,
                         unsigned char *touched, eg_match_list *L);

/* Judge every match of L in J->g into v[k] (zeroed by the caller), and
 * into jl[k] when jl is not NULL. A match the parent judged and whose
 * nodes lie beyond eg_trial_reach of the touched ones keeps the parent's
 * judgment; one the parent refused for its shapes, or for a cycle after a
 * rewrite that keeps paths, stays refused; the rest go to eg_trial_judge,
 * and what it cannot tell is built (eg_apply) and judged whole.
 * @return EG_OK or EG_ENOMEM. */
eg_status eg_judge_all(eg_judge_in *J, const eg_match_list *L, eg_verdict *v, eg_judgment *jl);

/* Free the graphs v[0..n) still hold, and v. */
void eg_verdicts_free(eg_verdict *v, size_t n);

/* One state's job. The search sets the inputs; eg_prep_run sets the
 * outputs; the search takes what it keeps (setting those fields NULL) and
 * eg_prep_free frees the rest. */
typedef struct {
    int64_t state;              /* the search's state id; -1: no job */
    /* in */
    const eg_ruleset *rs;
    eg_cost *c;                 /* the search's, or the worker's fork */
    const eg_graph *pg;         /* the parent's graph (NULL: none at hand), */
    const uint64_t *ptok;       /* tokens, node costs, matches, the ones */
    const double *pnc;          /* refused for a cycle (cyc), and judgments */
    const eg_match *pml, *pcyc; /* (pjl, may be NULL); pml NULL: match the */
    size_t pn_ml, pn_cyc;       /* graph anew (eg_match_all) */
    const eg_judgment *pjl;
    eg_match m;                 /* the rewrite of pg that makes the state */
    double cost;                /* its cost and token hash */
    uint64_t hash;
    int keeps_paths;            /* m's rule keeps paths */
    /* in/out: the state's graph, node costs and tokens; NULL in: built
     * here (built set) */
    eg_graph *g;
    double *nc;
    uint64_t *tok;
    /* out */
    eg_status rc;               /* EG_OK or EG_ENOMEM */
    int ok;                     /* 0: eg_apply refused m (not expected) */
    int built;
    eg_match_list L;            /* the matches, in eg_match_all's order */
    unsigned char *touched;     /* [g nodes] what m touched (eg_rematch) */
    eg_match *cyc;              /* with cyc_set: pcyc carried over (m keeps */
    size_t n_cyc;               /* paths), the state's refused matches */
    int cyc_set;
    eg_judgment *jl;            /* [L.n] */
    eg_verdict *v;              /* [L.n] */
    uint64_t carried;           /* refusals carried over */
    double t_apply, t_match, t_judge; /* seconds in each phase */
} eg_prep;

/* Build, match and judge (arg: an eg_prep). */
void eg_prep_run(void *arg);

/* Free what P holds of its outputs, the graph only when it was built
 * here; P->state becomes -1. */
void eg_prep_free(eg_prep *P);

#endif
