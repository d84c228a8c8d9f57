/* decide.h - the verdict on one candidate pair (prefix dc_): cheap concrete
 * evaluations first, Z3 last.
 *
 * Stages, each of which can end the decision:
 *  1. the class shapes: both graphs evaluated with rg_eval on fresh random
 *     inputs of the class's input shapes, from a seed unrelated to synth's.
 *     Unequal outputs -> REFUTED without Z3. This catches a candidate that
 *     agrees only on synth's fingerprint inputs.
 *  2. other shapes: the pair, read as an identity over its inputs, checked
 *     by axcheck (axc_check) on random well-shaped instances of *any*
 *     shapes. A rule carries no shapes and the engine applies it wherever
 *     both sides are well shaped, so a pair equal only at the class shapes
 *     (say a split at a literal point that happens to match there) is
 *     REFUTED as a rule. No instance found says nothing.
 *  3. Z3 (z3enc.h): PROVED, UNKNOWN or TIMEOUT.
 * Stage 1 needs shapes (a candidates class has them, a ruledb rule does
 * not); stage 2 can be turned off. Every random choice comes from the seed
 * given per pair, so verdicts do not depend on scheduling.
 */
#ifndef DECIDE_H
#define DECIDE_H

#include <stdint.h>

#include "ruledb.h"
#include "z3enc.h"

#define DC_WHYLEN 256
#define DC_GENERAL_INSTANCES 8 /* stage 2 instances per output */

typedef struct {
    const ax_set *axioms;
    const tg_plan *plan;
    ze_limits lim;
    int general; /* run stage 2 */
    int no_z3;   /* stop after the concrete stages (tests, fault injection) */
} dc_config;

typedef struct {
    rdb_proof status;     /* PROVED, REFUTED, UNKNOWN or TIMEOUT */
    int stage;            /* 1..3: the stage that decided */
    uint64_t millis;      /* wall time of the whole decision */
    char why[DC_WHYLEN];  /* unless PROVED: what said so */
} dc_result;

/* Decide whether a and b are equal, output by output.
 * @pre a and b are valid graphs with as many outputs; shapes is NULL or
 *      holds n_shapes >= both graphs' n_inputs shapes (the class shapes).
 * @return 0 with *out filled, or -1 when an internal error (out of memory,
 *         a Z3 error) prevented a verdict; out->why says which. */
int dc_decide(const dc_config *cfg, const rg_graph *a, const rg_graph *b,
              const ten_shape *shapes, int n_shapes, uint64_t seed,
              dc_result *out);

#endif
