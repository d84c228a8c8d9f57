/* sample.c - prove --axioms-check --sample RULEDB: does one axiom make
 * known rules much slower? A sample of the ruledb's rules, one per axiom
 * holding the axiom's operators, with a decoy each (pick), is proved with the instance profile (profile.h); each axiom that took a
 * good share of the instances is then left out in turn. An axiom is
 * reported when the sample takes SLOWER times the Z3 work with it and
 * it earns nothing for that: without it the sample proves as many rules,
 * or fewer of them run out of budget. See prove.h. */
#include "prove.h"

#include <stdlib.h>
#include <string.h>

#define CLASS_PAIRS 3        /* pairs per class of a candidates file */
#define SUSPECT_SHARE 0.05   /* axioms with this share of the instances are tried without */
#define SLOWER 3.0           /* work with / without an axiom that is reported */
/* The sample's resource budget per check unless --rlimit is given: twice
 * the most a shipped rule's proof takes (prove.h), so a check caught in a
 * loop costs a second, not the run's 50 million units. */
#define SAMPLE_RLIMIT 5000000u

/* The operators of a graph, or of an axiom's two sides, as a set. */
typedef struct {
    uint8_t has[OP_COUNT];
} op_set;

static void graph_ops(const rg_graph *g, op_set *s) {
    for (int i = 0; i < g->n_nodes; i++) s->has[g->node[i].op] = 1;
}

static op_set axiom_ops(const ax_set *ax, int a) {
    op_set s;
    memset(&s, 0, sizeof s);
    for (int t = ax->axiom[a].first_term; t < ax->axiom[a].end_term; t++)
        if (ax->term[t].kind == AX_TAPP) s.has[ax->term[t].op] = 1;
    return s;
}

static int covers(const op_set *rule, const op_set *want) {
    for (int op = 0; op < OP_COUNT; op++)
        if (want->has[op] && !rule->has[op]) return 0;
    return 1;
}

/* g with graph inputs 0 and 1 swapped wherever a node or an output
 * reads them. */
static rg_graph swap01(const rg_graph *g) {
    rg_graph s = *g;
    for (int i = 0; i < s.n_nodes; i++)
        for (int k = 0; k < ops_table[s.node[i].op].arity; k++)
            if (s.node[i].in[k] <= RG_IN(1)) s.node[i].in[k] ^= 1;
    for (int k = 0; k < s.n_outputs; k++)
        if (s.out[k] <= RG_IN(1)) s.out[k] ^= 1;
    return s;
}

/* Per axiom, in file order, the first rule (in ruledb order, not taken
 * yet) that holds every operator the axiom mentions, so that each axiom
 * gets its chance to fire, and every pair of axioms over the same
 * operators meets; then a decoy per rule of two inputs or more: its left
 * side against its right side with inputs 0 and 1 swapped, the same
 * operators but, for most rules, not equal. A rule is proved as soon as
 * E-matching meets the contradiction, before a loop among the axioms
 * costs much; a decoy that is not true is decided only when E-matching
 * saturates, which a loop never lets it do: the decoys are where a loop
 * shows. @return the number of checks (the rules first: *n_rules). */
static size_t pick(const ax_set *ax, const rdb_file *f, const op_set *rule_ops, ap_check *c,
                   rg_graph *decoy, uint8_t *taken, size_t *n_rules) {
    size_t n = 0;
    for (int a = 0; a < ax->n_axioms; a++) {
        op_set want = axiom_ops(ax, a);
        for (size_t i = 0; i < f->n_rules; i++) {
            if (taken[i] || !covers(&rule_ops[i], &want)) continue;
            taken[i] = 1;
            c[n++] = (ap_check){&f->rules[i].src, &f->rules[i].dst};
            break;
        }
    }
    *n_rules = n;
    for (size_t i = 0; i < *n_rules; i++) {
        if (c[i].a->n_inputs < 2) continue;
        decoy[i] = swap01(c[i].b);
        c[n++] = (ap_check){c[i].a, &decoy[i]};
    }
    return n;
}

/* A candidates file instead of a ruledb: per axiom, the first class (not
 * taken yet) whose members hold the axiom's operators, member 0 against
 * each of up to CLASS_PAIRS others, as prove would ask. No decoys: the
 * candidates Z3 cannot prove are there already. @return checks. */
static size_t pick_classes(const ax_set *ax, const rdb_file *f, const op_set *class_ops,
                           ap_check *c, uint8_t *taken) {
    size_t n = 0;
    for (int a = 0; a < ax->n_axioms; a++) {
        op_set want = axiom_ops(ax, a);
        for (size_t i = 0; i < f->n_classes; i++) {
            const rdb_class *cl = &f->classes[i];
            if (taken[i] || cl->n_members < 2 || !covers(&class_ops[i], &want)) continue;
            taken[i] = 1;
            for (size_t m = 1; m < cl->n_members && m <= CLASS_PAIRS; m++)
                c[n++] = (ap_check){&cl->members[0], &cl->members[m]};
            break;
        }
    }
    return n;
}

static void describe(FILE *out, const char *what, const ap_profile *p, size_t n) {
    fprintf(out, "# %s: %zu of %zu checks proved, %zu out of budget, %.3g Z3 units\n", what, p->proved,
            n, p->z.budget, (double)p->z.units);
}

/* Try the sample without axiom a. @return 1 reported, 0 not, -1 error. */
static int without(const ax_set *ax, const tg_plan *plan, const ap_check *c, size_t n,
                   const ze_limits *lim, const ap_profile *base, int a, FILE *out, char *err,
                   size_t errlen) {
    ap_profile w;
    if (ap_run(ax, plan, c, n, lim, a, &w, err, errlen) != 0) return -1;
    double ratio = (double)base->z.units / (double)(w.z.units ? w.z.units : 1);
    int bad = ratio >= SLOWER || base->z.budget > w.z.budget;
    fprintf(out,
            "%s %-28s the sample takes %.1fx the Z3 work with it (%.3g units, %zu proved, "
            "%zu out of budget; without it %.3g, %zu, %zu)%s\n",
            bad ? "WARN" : "ok  ", ax->axiom[a].name, ratio, (double)base->z.units,
            base->proved, base->z.budget, (double)w.z.units, w.proved, w.z.budget,
            bad ? ": it makes known checks much slower (a loop with other axioms?)" : "");
    ap_free(&w);
    return bad;
}

/* The checks of a sample of f (a ruledb or a candidates file). */
typedef struct {
    ap_check *c;
    size_t n, n_rules; /* checks; of them, rules of a ruledb (then decoys) */
    rg_graph *decoy;
    uint8_t *taken;
    op_set *ops;       /* per rule or class */
} sample;

static void sample_free(sample *s) {
    free(s->c);
    free(s->decoy);
    free(s->taken);
    free(s->ops);
}

static int make_sample(const ax_set *ax, const rdb_file *f, sample *s) {
    int rules = f->kind == RDB_RULES;
    size_t items = rules ? f->n_rules : f->n_classes;
    size_t most = (size_t)ax->n_axioms < items ? (size_t)ax->n_axioms : items;
    memset(s, 0, sizeof *s);
    s->c = malloc(((rules ? 2 : CLASS_PAIRS) * most + 1) * sizeof *s->c);
    s->decoy = malloc((most + 1) * sizeof *s->decoy);
    s->taken = calloc(items + 1, 1);
    s->ops = calloc(items + 1, sizeof *s->ops);
    if (!s->c || !s->decoy || !s->taken || !s->ops) return -1;
    for (size_t i = 0; i < items; i++) {
        if (rules) {
            graph_ops(&f->rules[i].src, &s->ops[i]);
            graph_ops(&f->rules[i].dst, &s->ops[i]);
        } else {
            for (size_t m = 0; m < f->classes[i].n_members; m++)
                graph_ops(&f->classes[i].members[m], &s->ops[i]);
        }
    }
    if (rules) s->n = pick(ax, f, s->ops, s->c, s->decoy, s->taken, &s->n_rules);
    else s->n = pick_classes(ax, f, s->ops, s->c, s->taken);
    return 0;
}

int pv_axioms_sample(const char *axiom_path, const char *sample_path, const pv_options *o,
                     FILE *out, int *warned, char *err, size_t errlen) {
    ax_set ax;
    tg_plan plan;
    rdb_file *f = NULL;
    sample sm;
    ap_profile base;
    char rerr[RDB_ERRLEN];
    ze_limits lim = {o->timeout_ms, o->max_instances,
                     o->rlimit == PV_DEFAULT_RLIMIT ? SAMPLE_RLIMIT : o->rlimit};
    memset(&ax, 0, sizeof ax);
    memset(&plan, 0, sizeof plan);
    memset(&base, 0, sizeof base);
    memset(&sm, 0, sizeof sm);
    *warned = 0;
    int rc = pv_load_axioms(axiom_path, &ax, err, errlen);
    if (rc == PV_OK) {
        rdb_status st = rdb_read(sample_path, &f, rerr, sizeof rerr);
        if (st != RDB_OK) {
            snprintf(err, errlen, "%s (%s)", rerr, rdb_strerror(st));
            rc = st == RDB_ENOMEM ? PV_ENOMEM : PV_EINPUT;
        }
    }
    if (rc == PV_OK && (make_sample(&ax, f, &sm) != 0 || tg_plan_axioms(&ax, &plan) != 0))
        rc = PV_ENOMEM;
    if (rc == PV_OK && ap_run(&ax, &plan, sm.c, sm.n, &lim, -1, &base, err, errlen) != 0)
        rc = PV_EINPUT;
    if (rc == PV_OK) {
        int top[AP_TOP];
        uint64_t total = ap_total(&base);
        if (f->kind == RDB_RULES)
            fprintf(out, "# sample: %zu rules of %s (one per axiom, with its operators) and %zu "
                         "decoys\n",
                    sm.n_rules, sample_path, sm.n - sm.n_rules);
        else
            fprintf(out, "# sample: %zu candidate pairs of %s (a class per axiom, with its "
                         "operators)\n",
                    sm.n, sample_path);
        describe(out, "with every axiom", &base, sm.n);
        fprintf(out, "# instances by axiom: ");
        ap_print_top(out, &ax, &base);
        fputc('\n', out);
        int k = ap_top(&base, AP_TOP, top);
        for (int i = 0; i < k && rc == PV_OK; i++) {
            if ((double)base.z.instances[top[i]] < SUSPECT_SHARE * (double)total) break;
            int w = without(&ax, &plan, sm.c, sm.n, &lim, &base, top[i], out, err, errlen);
            if (w < 0) rc = PV_EINPUT;
            else *warned += w;
        }
    }
    ap_free(&base);
    sample_free(&sm);
    rdb_free(f);
    tg_free(&plan);
    ax_free(&ax);
    return rc;
}
