/* decide.h - the verdict on one candidate pair (prefix dc_): cheap concrete
 * evaluations first, Z3 last.
 *
 * Stages, each of which can end the decision:
 *  1. the class shapes (dc_shapes): both graphs evaluated with rg_eval on
 *     fresh random inputs of the class's input shapes, from a seed
 *     unrelated to synth's. Unequal outputs -> REFUTED without Z3. This
 *     catches a candidate that agrees only on synth's fingerprint inputs.
 *  2. other shapes: variants of the class shapes (every distinct dim value
 *     remapped to a random one or kept, or one dim of one input changed)
 *     for which both graphs stay well shaped, evaluated the same way. A
 *     rule carries no shapes and the engine applies it wherever both sides
 *     are well shaped, so a pair equal only at the class shapes (a split at
 *     a literal point that happens to match there, a square matrix) is
 *     REFUTED as a rule. A bounded number of tries (DC_VARIANTS) and
 *     evaluations (DC_EVALS) keeps it cheap; finding no variant says
 *     nothing. (axcheck's backtracking search over all shapes, used for
 *     the axioms, costs ~100x more per pair.)
 *  3. Z3 (z3enc.h): PROVED, UNKNOWN or TIMEOUT; with a known-pairs test
 *     (prove --known: the pair is derived from rules already proved), a
 *     PROVED pair it passes is DC_DERIVED, which needs no rule.
 * Stage 3 does not depend on shapes and stage 2 only starts from them, so
 * a pair that occurs in several classes (synth makes one class per input
 * shapes) needs them once. A ruledb rule has no shapes: stage 1 and 2 need
 * them, so a rule gets stage 3 only.
 * Every random choice comes from the seed given per pair.
 */
#ifndef DECIDE_H
#define DECIDE_H

#include <stdint.h>

#include "ruledb.h"
#include "z3enc.h"

#define DC_WHYLEN 256
#define DC_VARIANTS 48   /* stage 2: shape variants tried */
#define DC_EVALS 6       /* stage 2: well-shaped variants evaluated */
#define DC_MAX_DIM 6     /* stage 2: dims drawn from 1..DC_MAX_DIM */
#define DC_MAX_CELLS 4096 /* stage 2: skip variants with a larger value */
#define DC_RECYCLE 512         /* checks per Z3 context before a fresh one */

/* A pair already known to hold (prove --known: derived from a ruledb's
 * rules), tested on the pairs Z3 proved; called from worker threads, so
 * it reads arg only. @return 1 known, 0 not, -1 out of memory. */
typedef int (*dc_known_fn)(const void *arg, const rg_graph *a, const rg_graph *b);

typedef struct {
    const ax_set *axioms;
    const tg_plan *plan;
    ze_limits lim;
    int general;         /* run stage 2 (when shapes are given) */
    dc_known_fn known;   /* NULL: none */
    const void *known_arg;
} dc_config;

/* What a verdict means for a user, finer than rdb_proof (which the file
 * format fixes): the action differs by class. */
typedef enum {
    DC_PROVED,  /* not a failure */
    DC_DERIVED, /* PROVED, and dc_config.known derives it: it needs no rule */
    DC_REFUTED, /* refuted by evaluation: the sides differ on concrete tensors */
    DC_UNKNOWN, /* Z3 found no proof (E-matching saturated), or no shapes fit */
    DC_BUDGET,  /* a deterministic budget ran out (--max-instances, --rlimit) */
    DC_CLOCK,   /* the opt-in wall-clock limit ran out: machine-dependent */
    DC_ERROR,   /* out of memory or a Z3 error: no verdict */
    DC_CLASS_COUNT
} dc_class;

typedef struct {
    rdb_proof status;     /* PROVED, REFUTED, UNKNOWN or TIMEOUT; UNCHECKED
                             after dc_shapes when stage 1 passed */
    dc_class cls;         /* the finer reason (DC_BUDGET and DC_CLOCK are
                             both RDB_TIMEOUT; DC_ERROR is RDB_UNKNOWN) */
    int stage;            /* 1..3: the stage that decided */
    uint64_t millis;      /* wall time of the decision */
    char why[DC_WHYLEN];  /* unless PROVED: what said so */
} dc_result;

/* A Z3 context for a sequence of decisions (one per worker lane), opened
 * lazily and replaced every DC_RECYCLE checks so memory stays bounded. */
typedef struct {
    const dc_config *cfg;
    ze_ctx *z;
    int uses;
} dc_worker;

/* Stage 1 alone. @pre shapes holds n >= both graphs' n_inputs shapes.
 * @return 0 with out->status REFUTED, or UNCHECKED when equal; -1 when out
 *         of memory (status UNKNOWN). */
int dc_shapes(const rg_graph *a, const rg_graph *b, const ten_shape *shapes, int n,
              uint64_t seed, dc_result *out);

/* Stages 2 and 3 (stage 2 only when cfg->general and shapes is given).
 * @pre a and b are valid graphs with as many outputs; shapes is NULL or
 *      holds n_shapes >= both graphs' n_inputs shapes at which both are
 *      well shaped (the class shapes).
 * @return 0 with *out filled, or -1 when an internal error (out of memory,
 *         a Z3 error) prevented a verdict: out->status is then UNKNOWN and
 *         out->why says which. */
int dc_decide(dc_worker *w, const rg_graph *a, const rg_graph *b, const ten_shape *shapes,
              int n_shapes, uint64_t seed, dc_result *out);

/* Evaluate a rule, which has no shapes: each output pair as an identity,
 * at up to n_instances well-shaped instances that axcheck's randomised
 * search finds (axcheck.h; ~100x stage 2's cost, so callers keep it for
 * rules Z3 did not prove).
 * @return 0 with out->status REFUTED (out->why names the instance) or
 *         UNCHECKED (every instance agreed, or none was found); -1 when out
 *         of memory (status UNKNOWN, class DC_ERROR). */
int dc_rule_eval(const rg_graph *a, const rg_graph *b, int n_instances, uint64_t seed,
                 dc_result *out);

/* "proved", "refuted by evaluation", "unknown", "budget", "clock", "error". */
const char *dc_class_name(dc_class c);

/* Release the worker's context (it may be used again afterwards). */
void dc_worker_close(dc_worker *w);

#endif
