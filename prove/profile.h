/* profile.h - where Z3's work goes, axiom by axiom (prefix ap_): the
 * quantifier instances a list of checks gives each axiom, the axioms that
 * took most of them, and an ablation that says whether one axiom makes the
 * checks much slower. prove uses it to name the axioms behind checks that
 * ran out of budget; prove --axioms-check --sample, to warn about an axiom
 * that makes a sample of known rules much slower (an axiom can be true and
 * still send E-matching into a loop with the others: x-(y+z) = (x-y)-z and
 * x-(y-z) = (x-y)+z together rewrite every sum of differences forever).
 *
 * The checks of one ap_run go in sequence to one solver of their own on
 * the calling thread (ze_profile_begin), so a profile is the same on any
 * machine and load. */
#ifndef PROFILE_H
#define PROFILE_H

#include <stddef.h>
#include <stdio.h>

#include "axparse.h"
#include "trig.h"
#include "z3enc.h"

#define AP_TOP 5 /* axioms a report names */

typedef struct {
    const rg_graph *a, *b;
} ap_check;

typedef struct {
    ze_profile z;  /* the counts (z.instances: one per axiom) */
    int n_axioms;
    size_t proved; /* checks proved */
} ap_profile;

/* Profile checks[0..n) with the axioms of ax (plan: tg_plan_axioms(ax))
 * but `skip` (-1 none), into *out (free with ap_free).
 * @return 0, or -1 with a message in err. */
int ap_run(const ax_set *ax, const tg_plan *plan, const ap_check *checks, size_t n,
           const ze_limits *lim, int skip, ap_profile *out, char *err, size_t errlen);

void ap_free(ap_profile *p);

/* All axiom instances of p (the shape rules' not counted). */
uint64_t ap_total(const ap_profile *p);

/* The at most k axioms with the most instances (more than 0), most first,
 * ties by axiom order, into idx. @return how many. */
int ap_top(const ap_profile *p, int k, int *idx);

/* "NAME 41%, NAME 20%, ..." for the top AP_TOP axioms of p, to f. */
void ap_print_top(FILE *f, const ax_set *ax, const ap_profile *p);

#endif
