/* trig.h - which side of each axiom Z3 may use as an E-matching trigger
 * (prefix tg_). Pure C over the parsed axioms (axparse.h); no Z3 here.
 *
 * Why a policy at all: every axiom is asserted as a quantified equation
 * and Z3 instantiates it only where a trigger (pattern) matches a ground
 * term. Instantiating from side S adds the terms of the other side C to the
 * E-graph; if those new terms can match triggers again, forever, E-matching
 * never saturates (a "matching loop") and every unprovable candidate runs
 * into the time limit instead of ending quickly as unknown. Using both sides
 * as alternative triggers is what lets Z3 rewrite in both directions, which
 * proofs with a "peak" (A <- B -> C, B bigger than A and C) need, e.g.
 * relu(conv RELU) = conv RELU goes through relu(relu(conv NONE)).
 *
 * The policy, per side S of an axiom (C = the other side):
 *  1. S is eligible when it is an operator application containing every
 *     variable of the axiom (Z3's own requirement for a pattern).
 *  2. An eligible S is "shrinking" when C has no more operator nodes than S
 *     and no tensor variable occurs in C more often than in S: then every
 *     instance replaces a term by one no larger, and rewriting with
 *     shrinking directions only reaches finitely many terms. Shrinking
 *     sides are always triggers.
 *  3. A "growing" eligible side is a trigger unless it may feed a loop.
 *     Instantiating a direction D puts C's root into S's (old) E-class and
 *     creates fresh classes for C's other subterms that do not occur in S.
 *     D "feeds" D' when some subterm t of C (root included) can be the root
 *     of a match of the trigger of D'; the edge is "growing" when that match
 *     binds a variable that D' nests inside its own fresh classes to one of D's
 *     fresh classes: then each round builds one level deeper on what the
 *     previous round made. Matches that bind only old classes build bounded
 *     terms over what existed before (relu(x) -> relu(relu(x)) only closes
 *     a cycle in x's class), and shrinking directions cannot sustain growth
 *     (rule 2), so only a cycle of growing directions that contains a
 *     growing edge can build without bound. The feeds graph is therefore
 *     taken over the growing directions, and those in a strongly connected
 *     component holding a growing edge are dropped.
 *     Example: poolk(k,x) -> avgpool(k,1,SAME,iconv(k,x)) feeds
 *     avgpool(k,s,p,x) -> conv(x, poolk(k,x)) with x bound to the fresh
 *     iconv(k,x), which feeds the first again: both are dropped, while
 *     T(mm(x,y)) -> mm(T y, T x) (which only descends into old terms) and
 *     conv RELU -> relu(conv NONE) are kept; proofs with peaks such as
 *     relu(conv RELU) = conv RELU need them.
 * Matching here is syntactic and over-approximates (it ignores repeated
 * pattern variables; a variable of C may stand for any old term), so the
 * analysis may drop a harmless direction, never keep a direct loop it can
 * see. Growth relayed through shrinking directions or through the shape
 * terms is outside it: Z3's instantiation cost limit (an instance's
 * generation delays it, smt.qi.eager_threshold) and the per-check limits
 * bound those, and the test suite shows the false identities of wrong.ax
 * end as unknown within milliseconds.
 */
#ifndef TRIG_H
#define TRIG_H

#include "axparse.h"

/* Why a side is or is not a trigger. ORDER TGWHY: tg_why_name. */
typedef enum {
    TG_SHRINKING,   /* trigger: instances never grow terms */
    TG_GROWING_OK,  /* trigger: grows, but on no feeding cycle */
    TG_NOT_APP,     /* not a trigger: a bare variable */
    TG_MISSING_VAR, /* not a trigger: lacks a variable of the axiom */
    TG_LOOP,        /* not a trigger: on a feeding cycle with a growing edge */
    TG_WHY_COUNT
} tg_why;

typedef struct {
    tg_why why[2]; /* [0] lhs as the trigger (creates rhs), [1] rhs */
    int size[2];   /* operator nodes of lhs, rhs */
} tg_axiom;

typedef struct {
    int n_axioms;
    tg_axiom *ax; /* one per axiom of the set */
} tg_plan;

/* 1 when why says "use as a trigger". */
int tg_is_trigger(tg_why why);

/* "shrinking", "growing", "bare variable", ... */
const char *tg_why_name(tg_why why);

/* Decide the triggers of every axiom of s (the policy above).
 * @pre s was filled by ax_parse_*.
 * @return 0 and *plan filled (release with tg_free), or -1 when out of
 *         memory. */
int tg_plan_axioms(const ax_set *s, tg_plan *plan);

void tg_free(tg_plan *plan);

#endif
