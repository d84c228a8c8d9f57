/* axcheck.h - test an axiom on concrete tensors: both sides must agree
 * exactly under the reference semantics (ops_eval) on every well-shaped
 * instance. Catches a wrong axiom, and shows the wrong ones are rejected.
 *
 * Overview. An instance binds every parameter variable to a value from its
 * ops_pkind_table domain (at random) and every tensor variable to a shape
 * from a small finite candidate set: rank 0, rank 1 with dims 1..5, rank 2
 * with dims 1..4, rank 3 with dims 1..3 x 1..4 x 1..4, rank 4 with dims
 * 1..4 x 1..4 x 1..5 x 1..5. Shapes are found by a randomised
 * backtracking search that visits tensor variables in order of first
 * occurrence, tries each one's candidates in a random order that draws the
 * rank first (weights 1:2:2:2:3 for ranks 0 to 4, so the lone scalar comes
 * up early),
 * and prunes as soon as a subterm whose variables are all bound
 * fails ops_infer_shape (a `(dim A T)` term takes its value from T's
 * shape). Each attempt has a node budget; a failed attempt retries with
 * fresh random choices. An instance is well shaped when both sides infer;
 * inputs are then filled with ten_fill_random and the sides compared with
 * ten_equal (a shape difference is a mismatch too). Everything is
 * deterministic given the seed.
 *
 * Worked example:
 *
 *     ax_set s;
 *     axc_result r;
 *     char err[AX_ERRLEN];
 *     if (ax_parse_file("opspecs/axioms.ax", &s, err) != AX_OK) { ... }
 *     for (int i = 0; i < s.n_axioms; i++)
 *         if (axc_check(&s, i, 20, 42, &r) != AXC_OK)
 *             fprintf(stderr, "%s\n", r.msg);
 *             // "opspecs/axioms.ax:12: axiom ewadd-assoc: sides differ on
 *             //  x=[2,3] y=[2,3] z=[2,3]"
 *     ax_free(&s);
 */
#ifndef AXCHECK_H
#define AXCHECK_H

#include <stdint.h>

#include "axparse.h"

#define AXC_DESCLEN 512      /* instance description */
#define AXC_MSGLEN 768       /* full message */
#define AXC_NODE_BUDGET 20000 /* shape candidates tried per search attempt */
#define AXC_ATTEMPTS 20      /* search attempts per wanted instance */
#define AXC_MAX_CELLS (1 << 20) /* a bigger intermediate counts as ill-shaped, so a
                                   nest of concats cannot exhaust memory */

typedef enum {
    AXC_OK = 0,
    AXC_EMISMATCH,   /* an instance where the two sides differ */
    AXC_ENOINSTANCE, /* no well-shaped instance within the budget: mis-typed */
    AXC_EEVAL,       /* ops_eval failed (out of memory) */
    AXC_EARG         /* bad axiom index or instance count */
} axc_status;

typedef struct {
    int attempts;   /* search attempts made */
    int found;      /* well-shaped instances evaluated (all equal unless mismatch) */
    int distinct;   /* distinct instances among them (params and shapes) */
    long nodes;     /* shape candidates tried in total */
    char instance[AXC_DESCLEN]; /* the last instance, e.g. "s=1 x=[1,2,3,3]";
                                   the failing one on AXC_EMISMATCH */
    char msg[AXC_MSGLEN];       /* "FILE:LINE: axiom NAME: ..." unless AXC_OK */
} axc_result;

/* Check axiom `axiom` of set on up to n_instances well-shaped instances.
 * @pre set was filled by ax_parse_*; out is not NULL.
 * @return AXC_OK when all instances found agree (out->found may be below
 *         n_instances if the search budget ran out, never 0);
 *         AXC_EMISMATCH at the first disagreeing instance (out->instance);
 *         AXC_ENOINSTANCE when none was found; AXC_EEVAL; AXC_EARG.
 *         out->msg explains every status but AXC_OK. */
int axc_check(const ax_set *set, int axiom, int n_instances, uint64_t seed,
              axc_result *out);

#endif
