/* z3enc.h - the Z3 encoding of operators, shapes, axioms and candidate
 * pairs, and one proof attempt (prefix ze_). Each ze_ctx owns one Z3
 * context: Z3 contexts are not thread-safe, so a worker opens its own and
 * no term ever crosses between contexts.
 *
 * Sorts and symbols:
 *   T                    uninterpreted: tensors
 *   S                    uninterpreted: shapes
 *   Int                  parameters and dimensions
 *   shape : T -> S       the shape of a tensor
 *   sdim  : Int x S -> Int   dimension a of a shape; dim(a, t) is
 *                        sdim(a, shape(t)), so tensors of one shape share
 *                        their dims by congruence
 *   OP : Int^n_params x T^arity -> T   one uninterpreted function per
 *                        operator (ops_table order: parameters, then inputs)
 * except the constants, which read only part of their reference input's
 * shape and are encoded through exactly that part, so two references that
 * agree on it give the same constant (the axiom file writes them over a
 * tensor):
 *   imm(r)      -> imm(dim(1, r))           identity [n,n], n = cols of r
 *   iconv(k, r) -> iconv(k, dim(1, r))      [C,C,kh,kw], C = channels of r
 *   dwiconv(k, r) -> dwiconv(k, dim(1, r))  [C,1,kh,kw]
 *   poolk(k, r) -> poolk(k, dim(1, r))
 *   ones(r)     -> ones(shape(r))
 * A dim of an operator term inside an axiom is simplified by the shape
 * rule when the rule knows it ((imm (transpose x)) is imm(dim(0, x))).
 *
 * Axioms: every axiom of the set, quantified over its variables, as
 *     domain(params) and WS(lhs) and WS(rhs)  =>  lhs = rhs
 * with the trigger sides of trig.h as alternative single-term patterns.
 * WS(t) is the well-shapedness of every application in t, over dims
 * (shape.c's checks: matmul inner dims, ewadd dims equal, concat off-axis
 * dims, conv C = groups * I with groups dividing O, SAME needs an odd
 * kernel and VALID an input no smaller than it, 1 <= split size < dim,
 * enlarge's kernel covers w with an even margin). The guard is what the
 * axiom file states ("equal for every binding that makes both sides well
 * shaped"), and it is needed: unguarded (as TASO's verifier asserts its
 * axioms), an instance on ill-shaped terms proved false rules at depth 3,
 * e.g. conv(cat(1; x0, x1), cat(1; x2, x3)) = conv(cat(1; x1, x0),
 * cat(1; x3, x2)) via conv-sum-concat with x0 and x2 of different channel
 * counts. Parameter domains: the values of ops_pkind_table for every kind
 * but size, which is >= 1 (split sizes may be symbolic dims). Ranks are
 * not encoded (a term's dims are always four, see below).
 *
 * Shape rules (the per-operator shape function is in z3shape.h): for
 * every operator, and every combination of the literal parameters its
 * rule needs (from their domains), a quantified axiom with the application
 * as its pattern gives the dims of the result from the dims of its inputs
 * (and its shape for element-wise operators), so terms Z3 creates while
 * instantiating axioms have dims the guards can use. They add Int terms
 * only, so they cannot loop.
 *
 * Candidate pair: the graph inputs x0..x7 are fresh constants of sort T,
 * shared by both graphs; each node is its operator term. For every node of
 * both graphs the encoder asserts the facts a well-shaped application
 * implies, symbolically (no concrete dims): its inputs fit each other
 * (matmul inner dims, ewadd shapes equal, concat off-axis dims, conv
 * channels, 1 <= split size < dim: the WS conditions above), its dims
 * follow from its inputs' (or its shape equals its first input's, for
 * element-wise operators and ones), and every dim is >= 1. So a proof
 * holds for every input shape that makes both sides well shaped, which is
 * how the engine applies a rule (a ruledb rule carries no shapes). Facts
 * are rank-agnostic: a missing axis of a lower-rank tensor reads as 1 (a
 * matrix product or a transpose has dims 2 and 3 equal to 1), under which
 * each fact stays true. Then the goal: some output k with lhs_k != rhs_k.
 * UNSAT is a proof.
 *
 * Z3 runs without model-based quantifier instantiation (smt.mbqi=false):
 * only E-matching, so a run ends in unsat (proved), unknown ("incomplete
 * quantifiers": E-matching saturated without a contradiction) or a limit,
 * never in a model search that may not end. Limits: two deterministic
 * budgets, which decide verdicts, and an opt-in wall clock, a backstop
 * only. The instance budget (a proof of a depth-3 candidate takes tens of
 * instances, while a product of sums over eight inputs, expanded by
 * distributivity and re-associated, runs to gigabytes within seconds) and
 * Z3's resource limit (rlimit: a count of solver steps, the same on any
 * machine; it bounds the ground reasoning the instance budget does not)
 * end a check as ZE_BUDGET. The clock ends it as ZE_TIMEOUT, and only the
 * clock, so a verdict a slower machine could change is always named as
 * such. Before the axioms, the shape facts alone are checked: if they are
 * contradictory (no shapes make both sides well shaped) the pair is
 * ZE_ILLSHAPED, never "proved" by a vacuous contradiction.
 *
 * Soundness: the axioms hold under the reference semantics on every
 * well-shaped instance (axcheck, `prove --axioms-check`), the guards keep
 * Z3 to such instances, and the shape facts and rules are true of every
 * well-shaped graph. prove still never relies on Z3 alone for a
 * candidate: it is also evaluated concretely first (decide.h).
 */
#ifndef Z3ENC_H
#define Z3ENC_H

#include <stddef.h>
#include <stdint.h>

#include "axparse.h"
#include "rgraph.h"
#include "trig.h"

#define ZE_WHYLEN 160
/* The name Z3 gives the shape rule of operator OP: ZE_SHAPE_QID "OP". */
#define ZE_SHAPE_QID "shape!"

typedef enum {
    ZE_PROVED,    /* axioms + (lhs != rhs) is UNSAT */
    ZE_UNKNOWN,   /* E-matching saturated, or Z3 answered sat */
    ZE_BUDGET,    /* the instance budget or the resource limit ran out */
    ZE_TIMEOUT,   /* the (opt-in) wall-clock limit ran out */
    ZE_ILLSHAPED, /* the shape facts alone are contradictory */
    ZE_ERROR      /* a Z3 error or out of memory; why says which */
} ze_verdict;

typedef struct {
    unsigned timeout_ms;    /* wall-clock limit per check (Z3 "timeout"), 0
                               none: an opt-in backstop, never the default */
    unsigned max_instances; /* quantifier instances per check
                               ("smt.qi.max_instances"), 0 none: the
                               deterministic budget, and a bound on memory */
    unsigned rlimit;        /* Z3 resource units per check ("rlimit"), 0
                               none: deterministic too */
} ze_limits;

typedef struct ze_ctx ze_ctx;

/* Open a Z3 context and encode the axioms of s with the triggers of plan.
 * @pre plan was made by tg_plan_axioms(s).
 * @return 0 and *out (close with ze_close), or -1 with a message in err. */
int ze_open(const ax_set *s, const tg_plan *plan, ze_ctx **out, char *err,
            size_t errlen);

void ze_close(ze_ctx *z);

/* Try to prove that graphs a and b (over the same inputs, with as many
 * outputs) are equal. The context keeps one solver with the axioms at its
 * base level (internalising them costs several proofs' worth) and checks
 * each pair in a push/pop scope. Z3 keeps some state across a pop, so a
 * check may depend on the checks made before it in the same context:
 * callers that want results independent of scheduling give each context a
 * fixed sequence of checks (run.c's lanes).
 * @return the verdict; why gets Z3's reason for anything but ZE_PROVED. */
ze_verdict ze_prove_graphs(ze_ctx *z, const rg_graph *a, const rg_graph *b,
                           const ze_limits *lim, char why[ZE_WHYLEN]);

/* Try to prove identity `axiom` of set (for instance a wrong one) from the
 * context's axioms, for all values of its variables: tensor variables
 * become fresh tensors, parameter variables fresh integers within their
 * domains. @return as ze_prove_graphs. */
ze_verdict ze_prove_identity(ze_ctx *z, const ax_set *set, int axiom,
                             const ze_limits *lim, char why[ZE_WHYLEN]);

/* The verdict on a check Z3 left undecided, from Z3's reason, the
 * quantifier instances it kept and the resource units it used in this
 * check, and the limits: ZE_BUDGET when a budget stopped it, ZE_TIMEOUT
 * when the clock did, else ZE_UNKNOWN (E-matching saturated). Z3 4.8
 * reports a spent rlimit as "canceled", like the clock, hence the units;
 * it reports a spent instance budget as "incomplete quantifiers", like
 * saturation, and counts only the instances it kept (about 80% of those
 * the budget counts), so instances of half the budget or more mean
 * "spent": saturation happens after tens. why says which limit, in words
 * a user can act on. */
ze_verdict ze_classify_undecided(const char *reason, unsigned instances, unsigned units,
                                 const ze_limits *lim, char why[ZE_WHYLEN]);

/* Where one check's quantifier instances went, added up over checks. */
typedef struct {
    uint64_t *instances; /* per axiom of the context's set (n_axioms, the
                            caller's array) */
    uint64_t shape;      /* the shape rules' instances, all together */
    uint64_t units;      /* Z3 resource units of the checks */
    size_t checks, budget; /* checks profiled; those that ran out of budget */
} ze_profile;

/* Profile the checks until ze_profile_end: from here on, ze_prove_graphs
 * and ze_prove_identity check in a solver of their own, with the axioms
 * but `skip` (-1: none) and Z3's per-quantifier instance counts on, each
 * check in a push/pop scope of it, counted into *p. ze_profile_end (or
 * ze_close) deletes that solver and adds the instances each axiom got to
 * p->instances. Z3 4.8 gives those counts only as text on stderr
 * (smt.qi.profile, printed when the solver is deleted), so for that moment
 * file descriptor 2 goes to a temporary file: nothing else may write to
 * stderr then, and callers profile on one thread (profile.h). The
 * profile is deterministic: the budgets are. */
void ze_profile_begin(ze_ctx *z, const ze_limits *lim, int skip, ze_profile *p);
void ze_profile_end(ze_ctx *z);

/* "proved", "unknown", ... */
const char *ze_verdict_name(ze_verdict v);

/* Z3's version, e.g. "4.8.12.0". */
const char *ze_version(void);

/* Parameters Z3 was told to use as triggers for axiom i, side d (0 lhs,
 * 1 rhs) in this context: 1 when the pattern was accepted. Used by tests
 * and --axioms-check to show the plan took effect. */
int ze_pattern_used(const ze_ctx *z, int axiom, int side);

#endif
