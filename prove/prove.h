/* prove.h - turn synth's candidate classes into a ruledb of rules proved
 * from the opspecs axioms with Z3; re-prove a ruledb (CI); check the
 * axioms themselves (prefix pv_).
 *
 * Overview. A candidates file (ruledb.h, kind "candidates") holds classes
 * of graphs that synth found equal on random inputs; in a class every
 * member is over the same inputs x0..xn with the class's shapes. prove
 *   1. pairs the representative (member 0) with each other member: one
 *      candidate per pair;
 *   2. decides each candidate on --jobs threads (batch.h, decide.h):
 *      evaluation on fresh random inputs at the class shapes, then at
 *      variants of them, then, once per distinct question (the same pair
 *      up to renaming, which synth produces once per input shapes), Z3
 *      against the axioms of opspecs/axioms.ax (z3enc.h, with the trigger
 *      policy of trig.h), each check under --timeout ms and a deterministic
 *      budget of quantifier instances: proved, refuted, unknown or
 *      timeout, never a hang;
 *   3. emits rules from the proved pairs in the directions the engine can
 *      use (emit.h) and prunes redundant ones, counting each step
 *      (reduce.h: duplicates, renamings, implied in context at the inputs
 *      and at the output);
 *   4. writes a ruledb (kind "rules") whose generator records the counts,
 *      timings and the axiom file's digest, with a prover record per rule
 *      (z3, its version, milliseconds, "proved").
 * The result depends only on the input, the axioms, the seed and the
 * limits, never on --jobs: every candidate has its own seed and result
 * slot, and Z3 checks run on fixed lanes (batch.h). With --no-timings and
 * a clock limit that never binds, reruns give the same bytes.
 *
 * pv_check re-proves every rule of a ruledb and lists those not proved;
 * `prove --check` exits 1 on any, so a CI pipeline can refuse a ruledb it
 * cannot re-prove. The verdict on a rule depends only on the rule, the
 * axioms and the options, never on --jobs, the machine's load or the
 * other rules of the file:
 *   1. every rule is tried with Z3 on the fixed lanes of batch.h (shared
 *      contexts, for speed: internalising the axioms costs ~6 proofs). A
 *      proof found there is a proof (UNSAT of the axioms and the negated
 *      rule), whatever the lane's history; a lane's history only decides
 *      how fast Z3 gets there;
 *   2. a rule step 1 did not prove is evaluated on concrete tensors at the
 *      well-shaped instances axcheck's search finds (dc_rule_eval): a
 *      difference is "refuted by evaluation";
 *   3. otherwise it is decided again alone, in a fresh Z3 context, and
 *      that verdict is final (unknown, budget, clock or error).
 * So a failure --check reports is reproduced by checking that rule alone.
 * (When proving candidates, pv_prove keeps only step 1's lanes: the
 * verdicts are the same for any --jobs and load, and may depend on the
 * groups decided before in the same lane, which are fixed by the input.)
 *
 * pv_axioms_check is axiom hygiene: every axiom holds on concrete tensors
 * (axcheck.h) and is provable from the encoded axioms (so its triggers
 * work), and no identity of a file of false ones (opspecs/wrong.ax) is
 * provable from them.
 *
 * Worked example: prove a candidates file, then re-prove the result.
 *
 *     pv_options o;
 *     pv_stats st;
 *     pv_check_result cr;
 *     char err[PV_ERRLEN];
 *     pv_defaults(&o);
 *     o.jobs = 2;
 *     if (pv_prove_file("cands.tasodb", "rules.tasodb", &o, &st, err,
 *                       sizeof err) != PV_OK) {
 *         fprintf(stderr, "prove: %s\n", err);  // "cands.tasodb: byte 9: ..."
 *         return 2;
 *     }
 *     printf("%zu proved, %zu rules\n", st.proved, st.prune.after_output);
 *     pv_stats_free(&st);
 *     if (pv_check_file("rules.tasodb", &o, &cr, err, sizeof err) == PV_OK &&
 *         cr.n_failed == 0)
 *         puts("every rule re-proved");
 *     pv_check_free(&cr);
 */
#ifndef PROVE_H
#define PROVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "axparse.h"
#include "decide.h"
#include "gsym.h"
#include "profile.h"
#include "ruledb.h"

#define PV_VERSION "0.1.0"
#define PV_ERRLEN 512
#define PV_WHYLEN 256
#define PV_DEFAULT_AXIOMS "opspecs/axioms.ax"
/* Limits per Z3 check. Only the deterministic budgets are on by default,
 * so a verdict is the same on a slow, loaded machine as on a fast one; the
 * wall clock is an opt-in backstop (--timeout) and says so when it fires.
 * Quantifier instances: proofs of depth-3 candidates take tens, the
 * shipped rules at most a few thousand; spending 20000 takes about a
 * second. Resource units (Z3's rlimit): the shipped rules' proofs take at
 * most 2.6 million (median 5000); the limit sits 20x above, a bound on
 * ground reasoning that the instance budget does not count. */
#define PV_DEFAULT_TIMEOUT_MS 0u
#define PV_DEFAULT_MAX_INSTANCES 20000u
#define PV_DEFAULT_RLIMIT 50000000u
#define PV_DEFAULT_PROFILE_CHECKS 4u
#define PV_DEFAULT_SEED 0x70726f7665ull /* "prove": unlike synth's seeds */

/* Status codes; PV_OK is 0. */
typedef enum {
    PV_OK = 0,
    PV_EINPUT, /* an input does not parse, is corrupt, of the wrong kind,
                  or made from other opspecs; the message names the file */
    PV_EIO,    /* the output could not be written */
    PV_ENOMEM
} pv_status;

#define PV_DERIVE_ROUNDS 4    /* saturation rounds per instance, when not given */
#define PV_DERIVE_NODES 2000  /* e-nodes at most per instance, when not given */

typedef struct {
    int rounds; /* saturation rounds per instance; 0 (the default): for
                   --derive, the most the SHIPPED file was pruned with (its
                   notes), else PV_DERIVE_ROUNDS */
    int nodes;  /* e-nodes at most per instance; 0: the same, PV_DERIVE_NODES */
    int mode;   /* eg_derive_mode (egraph.h): 0 reach, 1 meet, 2 equation,
                   3 detours; -1 (the default): for --derive, the mode
                   SHIPPED was pruned by (its notes), else equation */
    int every;  /* --derive: check every Nth rule of FULL the shipped set
                   lacks (default 1: all) */
    int jobs;   /* threads deciding the checks of --derive and of the
                   pruning's file (0, the default: all cores) */
    int quiet;
    const char *from; /* --prune-derivable --from: a file already pruned
                         from the input; only its rules may be kept, and
                         the checks are against the input (NULL: none) */
} pv_derive_options;

typedef struct {
    const char *axioms_path; /* PV_DEFAULT_AXIOMS */
    unsigned timeout_ms;     /* wall clock per Z3 check; 0 none (default) */
    unsigned max_instances;  /* quantifier instances per Z3 check; 0 none */
    unsigned rlimit;         /* Z3 resource units per Z3 check; 0 none */
    int jobs;                /* worker threads; < 1: one per core */
    uint64_t seed;           /* for the concrete evaluations */
    int general;             /* evaluate at other shapes too (decide.h stage 2) */
    unsigned shard_k, shard_n; /* 0 of 1; N > 1: decide only the pairs of
                                  lanes l % N == K and write them unpruned
                                  (shard.h); N <= BT_LANES (16) */
    int quiet;               /* no progress or summary */
    int no_timings;          /* write 0 for every time, so reruns are
                                byte-identical */
    int keep_pairs;          /* fill pv_stats.pair (tests) */
    unsigned profile_checks; /* after a run, profile the first N checks
                                that ran out of budget (profile.h) and name
                                the axioms that took their instances
                                (default PV_DEFAULT_PROFILE_CHECKS; 0 off) */
    FILE *log;               /* progress and summary; NULL: stderr */
    const char *known;       /* --known RULEDB: a pair its rules derive
                                (known.h) is counted as derived, neither
                                given to Z3 nor made a rule; NULL: none */
    pv_derive_options known_bounds; /* rounds, nodes, mode of those
                                derivations (0, 0, -1: RULEDB's notes) */
} pv_options;

/* One decided candidate pair. */
typedef struct {
    size_t cls, member;   /* member 0 of class cls vs member */
    rdb_proof status;     /* PROVED, REFUTED, UNKNOWN or TIMEOUT */
    dc_class reason;      /* the reason class (decide.h): refuted by
                             evaluation, unknown, budget, clock, error */
    int stage;            /* 1 class shapes, 2 other shapes, 3 Z3 */
    uint64_t millis;
    char why[PV_WHYLEN];
} pv_pair;

typedef struct {
    size_t classes, candidates;
    size_t distinct;       /* candidates up to renaming: the Z3 questions */
    size_t proved, refuted, unknown, timeout, errors;
    size_t derived;        /* with options.known: pairs its rules derive
                              (not in proved: they give no rule) */
    size_t refuted_at[4];  /* refutations by stage (index 1..3) */
    size_t kernel1_retried, kernel1_proved; /* pairs decided again with
                                               1x1-kernel guards (kernel1.h);
                                               those proved are in proved */
    gs_stats gsym;         /* rules tried for any group count (gsym.h) */
    struct {
        size_t emitted, after_dup, after_rename, after_input, after_output;
    } prune;
    uint64_t wall_ms, cpu_ms;
    long peak_rss_kb;
    pv_pair *pair;         /* keep_pairs: every pair, in order */
    size_t n_pairs;
    struct {               /* the axioms behind the checks that ran out of
                              budget (options.profile_checks) */
        size_t checks;     /* checks profiled: the first ones */
        int n;             /* axioms named, most instances first */
        char name[AP_TOP][AX_MAX_NAME + 1];
        double share[AP_TOP]; /* of those checks' axiom instances */
    } hogs;
} pv_stats;

typedef struct {
    size_t n_rules;
    size_t *failed;        /* ids of the rules not proved, ascending */
    size_t n_failed;
    pv_pair *pair;         /* per rule: cls = rule index, member = id */
    uint64_t wall_ms;
} pv_check_result;

/* Fill o with the defaults above (jobs 0, general on, log stderr). */
void pv_defaults(pv_options *o);

/* Parse an axiom file. @return PV_OK, or PV_EINPUT with "FILE:LINE:COL:
 * ..." in err, or PV_ENOMEM. */
int pv_load_axioms(const char *path, ax_set *out, char *err, size_t errlen);

/* Read a ruledb file that must be of the given kind.
 * @return PV_OK and *f (rdb_free it); PV_EINPUT with the reader's message
 *         ("PATH: byte N: ...", or RDB_EDIGEST's "made from other
 *         opspecs") or "PATH: a rules file, not a candidates file";
 *         PV_ENOMEM. */
int pv_read_kind(const char *path, rdb_kind kind, rdb_file **f, char *err, size_t errlen);

/* Prove the classes of cands against axioms (the pipeline above).
 * @pre cands is a valid candidates file (rdb_validate), axioms parsed.
 * @return PV_OK with *out (a rules file; rdb_free it) and *st filled
 *         (pv_stats_free), or PV_ENOMEM. */
int pv_prove(const rdb_file *cands, const ax_set *axioms, const pv_options *o,
             rdb_file **out, pv_stats *st, char *err, size_t errlen);

/* Read the candidates file, load the axioms, pv_prove, write the ruledb.
 * @return PV_OK; PV_EINPUT (unreadable, corrupt, wrong kind, other opspecs
 *         digest, axioms that do not parse); PV_EIO; PV_ENOMEM. */
int pv_prove_file(const char *cands_path, const char *out_path, const pv_options *o,
                  pv_stats *st, char *err, size_t errlen);

void pv_stats_free(pv_stats *st);

/* Re-prove every rule of a rules file (the steps above).
 * @return PV_OK with *res filled (pv_check_free), or PV_EINPUT (not a
 *         rules file) / PV_ENOMEM. A rule not proved is a result, not an
 *         error: see res->n_failed. */
int pv_check(const rdb_file *rules, const ax_set *axioms, const pv_options *o,
             pv_check_result *res, char *err, size_t errlen);

/* pv_check on a file; PV_EINPUT also when it cannot be read. */
int pv_check_file(const char *path, const pv_options *o, pv_check_result *res,
                  char *err, size_t errlen);

void pv_check_free(pv_check_result *res);

/* Axiom hygiene (above) on axiom_path, and on wrong_path when not NULL,
 * one line per axiom on out. *bad counts axioms that did not behave.
 * @return PV_OK, or PV_EINPUT when a file does not parse. */
int pv_axioms_check(const char *axiom_path, const char *wrong_path, const pv_options *o,
                    FILE *out, int *bad, char *err, size_t errlen);

/* Does one axiom make known rules much slower (sample.c)? A sample of
 * sample_path, a ruledb (per axiom, a rule holding its operators, and a
 * decoy: that rule with two inputs swapped) or a candidates file (per
 * axiom, a class holding its operators), proved with the axioms of
 * axiom_path and the instance profile, then without each axiom that took
 * 5% or more of its instances. One line per axiom tried on out, "WARN"
 * for one with which the sample takes 3x the Z3 work or more, or runs out
 * of budget more often; *warned counts them. The budget per check is
 * 5,000,000 units unless o->rlimit is not the default. Checks run on the
 * calling thread (profile.h).
 * @return PV_OK, PV_EINPUT (a file does not parse, or Z3 failed),
 *         PV_ENOMEM. */
int pv_axioms_sample(const char *axiom_path, const char *sample_path, const pv_options *o,
                     FILE *out, int *warned, char *err, size_t errlen);

/* The merge of a divided run (shard.h): read the candidates file the
 * shards proved and the N shards' rules files, check they belong together
 * (every shard once, the same candidates and prover options), put the
 * rules in the undivided run's order, prune them all (the final pruning
 * needs every rule) and write the ruledb: byte-identical to the undivided
 * run's with --no-timings.
 * @return PV_OK, PV_EINPUT (a file unreadable, missing, repeated or from
 *         another run; the message names it), PV_EIO or PV_ENOMEM. */
int pv_merge_shards_file(const char *cands_path, char *const *parts, int n_parts,
                         const char *out_path, const pv_options *o, pv_stats *st, char *err,
                         size_t errlen);

/* ---- derive.c: pruning by derivability (the engine's saturation) ---- */

void pv_derive_defaults(pv_derive_options *o);

/* The modes' names for --derive-by, indexed by mode. */
#define PV_DERIVE_MODES 4
extern const char *const pv_derive_mode_names[PV_DERIVE_MODES];

typedef struct {
    size_t in;      /* rules in the input */
    size_t skipped; /* not proved or not matchable: dropped */
    size_t equations; /* the others, a rule and its reverse counted once */
    size_t kept, derived; /* equations; a kept one is written as one rule */
    size_t restored; /* of kept: dropped first, not derived from the final set */
    int passes;      /* checks of the dropped rules against the final set */
    int converged;   /* 1 when the last check kept none (else prove --derive
                        names the rules left) */
    size_t settled;  /* verdicts a check took from the one before, summed */
    int rounds, nodes, mode; /* the bounds and the mode it ran with */
    double seconds;
} pv_prune_report;

/* The rules of ruledb `in` that the others do not derive, written to
 * `out` (egraph.h, eg_prune_derivable: smallest first, an equation, a
 * rule and its reverse, dropped when the rules kept before it derive both
 * directions within the bounds of o; a kept one is written as one rule,
 * which the engine reads both ways).
 * @return PV_OK; PV_EINPUT (unreadable, not a rules file, other opspecs);
 *         PV_EIO; PV_ENOMEM. */
int pv_prune_file(const char *in, const char *out, const pv_derive_options *o, pv_prune_report *r, char *err,
                  size_t errlen);

typedef struct {
    size_t full;    /* rules of the full ruledb */
    size_t shipped; /* of them, in the shipped one too, as the engine reads
                       it (renamed, unit enlarges stripped: eg_rule_index) */
    size_t reversed; /* of the others, the reverse of a shipped rule: the
                        engine reads a rule both ways, so these are shipped */
    size_t checked; /* the rest (with every > 1, a sample of them) */
    size_t derived; /* of those, derived from the shipped rules */
    size_t settled; /* of derived, taken from an earlier check (pruning) */
    size_t neither; /* neither shipped nor derived */
    size_t skipped; /* of neither: not matchable by the engine */
    int rounds, nodes; /* the bounds it ran with */
    double seconds;
} pv_derive_report;

/* The proof that pruning lost nothing: every rule of ruledb `full` is in
 * `shipped` or derived from its rules (eg_derive_rule). Each rule neither
 * is listed on `neither` (NULL: not listed).
 * @return PV_OK (see r->neither); PV_EINPUT; PV_ENOMEM. */
int pv_derive_file(const char *shipped, const char *full, const pv_derive_options *o, pv_derive_report *r,
                   FILE *neither, char *err, size_t errlen);

/* The prove tool (cli.c). @return the exit status: 0 ok, 1 a check
 * failed, 2 bad input or usage. */
int pv_cli_main(int argc, char **argv);

#endif
