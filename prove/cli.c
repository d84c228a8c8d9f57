/* cli.c - the prove tool: prove a candidates file into a ruledb, re-prove
 * a ruledb (--check), check the axioms (--axioms-check). Kept apart from
 * main.c so tests can call pv_cli_main. Exit status: 0 ok, 1 a check
 * failed, 2 bad input or usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "prove.h"
#include "z3enc.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_BAD = 2 };

static const char usage_text[] =
    "usage: prove CANDIDATES -o RULEDB [options]   prove candidate classes into a ruledb\n"
    "       prove --check RULEDB [options]         re-prove every rule; exit 1 if any fails\n"
    "       prove CANDIDATES -o PART --shard K/N [options]   shard K of N (N <= 16)\n"
    "       prove --merge CANDIDATES -o RULEDB PART... [options]  merge the N shards\n"
    "       prove --axioms-check [FILE] [--wrong FILE] [--sample FILE] [options]\n"
    "                                              axioms hold concretely and prove\n"
    "                                              themselves; wrong identities do not prove;\n"
    "                                              with --sample, no axiom makes known\n"
    "                                              checks much slower (WARN lines)\n"
    "       prove --prune-derivable RULEDB -o OUT [options]\n"
    "                                              drop the rules the others derive\n"
    "       prove --derive SHIPPED FULL [options]  every rule of FULL is in SHIPPED or\n"
    "                                              derived from it; exit 1 if not\n"
    "       prove --help | --version\n"
    "options:\n"
    "  --axioms FILE  the axioms (default " PV_DEFAULT_AXIOMS ")\n"
    "  --max-instances N  quantifier instances per Z3 check, a deterministic\n"
    "                 budget (default 20000; 0 none)\n"
    "  --rlimit N     Z3 resource units per check, a deterministic budget\n"
    "                 (default 50000000; 0 none)\n"
    "  --timeout MS   wall-clock limit per Z3 check, an opt-in backstop (default\n"
    "                 0: none); a check it stops is reported as \"clock\", and\n"
    "                 may be decided on a faster or idler machine\n"
    "  --jobs N       worker threads, one Z3 context each (default: all cores)\n"
    "  --seed S       seed of the concrete evaluations\n"
    "  --no-general   skip the evaluation at shapes other than the class's\n"
    "  --no-timings   write 0 for every time, so reruns are byte-identical\n"
    "  --shard K/N    decide only the pairs of Z3 lanes l % N == K and write\n"
    "                 their rules unpruned; --merge of the N files (same\n"
    "                 options) prunes them all and writes the ruledb the\n"
    "                 undivided run writes\n"
    "  --sample FILE  with --axioms-check: profile a sample of FILE, a ruledb\n"
    "                 (per axiom a rule with its operators, and a decoy) or a\n"
    "                 candidates file (per axiom a class), Z3's instances per\n"
    "                 axiom, then leave out each axiom that took 5% or more;\n"
    "                 WARN when the sample takes 3x the work with it or runs\n"
    "                 out of budget more often (a loop among the axioms).\n"
    "                 --rlimit 5000000 unless given; warnings leave the exit\n"
    "                 status as it is\n"
    "  --no-hygiene   with --sample: only the sample, not the per-axiom checks\n"
    "  --profile-checks N  after proving, profile the first N checks that ran\n"
    "                 out of budget and name the axioms that took their\n"
    "                 instances (default 4; 0 off)\n"
    "  --verdicts     with --check: every rule's verdict on stdout, one line\n"
    "                 each: ID CLASS[: WHY] (for comparing runs)\n"
    "  --derive-rounds N  saturation rounds per instance, for --prune-derivable\n"
    "                 (default 4) and --derive (default: the most SHIPPED was\n"
    "                 pruned with, its notes, else 4; the same for the mode)\n"
    "  --derive-nodes N   e-nodes at most per instance (default 2000; for\n"
    "                 --derive, as the rounds)\n"
    "  --derive-by M  how a rule counts as derived: equation (default: its two\n"
    "                 sides, saturated together with the rules the engine can\n"
    "                 also apply backwards, meet; else its right side is reached\n"
    "                 from its left), detours (equation, after the identity\n"
    "                 detours the two sides write are erased: a split of a\n"
    "                 concat, a product with ones), reach (only the latter) or\n"
    "                 meet (the two sides meet under any rules: a search may\n"
    "                 not reach it)\n"
    "  --two-sided    the same as --derive-by meet\n"
    "  --from PRUNED  with --prune-derivable: prune again PRUNED, a file already\n"
    "                 pruned from RULEDB: only its rules may be kept, and each\n"
    "                 rule of RULEDB is checked against the file written\n"
    "  --known RULEDB  when proving: a pair Z3 proved whose two sides the rules\n"
    "                 of RULEDB derive (as --derive, with --derive-by and the\n"
    "                 bounds; default: RULEDB's notes) is redundant: counted\n"
    "                 as derived, no rule made (a deeper run pruned against\n"
    "                 the shipped set as it goes; the merge needs the same)\n"
    "  --every N      with --derive: check every Nth rule FULL holds and\n"
    "                 SHIPPED lacks, a sample (default 1: every one)\n"
    "  -q             no progress or summary\n"
    "Verdicts depend only on the input, the axioms and these options (not on\n"
    "--jobs or the machine's load) unless --timeout is given.\n"
    "--check prints each rule not re-proved with its reason: refuted by\n"
    "evaluation, unknown (no proof found), budget (a budget above ran out),\n"
    "clock (--timeout) or error.\n"
    "Exit status: 0 ok; 1 a check failed (for --check: a rule refuted, unknown\n"
    "or out of budget); 2 bad input or usage, or --check could not judge a\n"
    "rule (clock or error).\n";

typedef enum { MODE_PROVE, MODE_CHECK, MODE_AXIOMS, MODE_MERGE, MODE_PRUNE, MODE_DERIVE } mode;

typedef struct {
    mode m;
    const char *input, *output, *wrong, *sample;
    int verdicts, no_hygiene;
    pv_options o;
    pv_derive_options d;
    char **more; /* positional arguments after the first (--merge's shards) */
    int n_more;
} args;

static int usage_error(const char *why, const char *arg) {
    fprintf(stderr, "prove: %s%s%s\n%s", why, arg ? ": " : "", arg ? arg : "", usage_text);
    return EXIT_BAD;
}

/* A decimal in [lo, hi]. @return 0, or -1 if malformed. */
static int number(const char *s, unsigned long long lo, unsigned long long hi,
                  unsigned long long *v) {
    char *end;
    if (!s || *s < '0' || *s > '9') return -1;
    *v = strtoull(s, &end, 10);
    return *end || *v < lo || *v > hi ? -1 : 0;
}

/* Options that take a value (a number but for --derive-by). @return 1
 * consumed, 0 not one, -1 bad. */
static int numeric_option(args *a, const char *opt, const char *val) {
    unsigned long long v;
    if (!strcmp(opt, "--timeout")) {
        if (number(val, 0, 86400000, &v)) return -1;
        a->o.timeout_ms = (unsigned)v;
    } else if (!strcmp(opt, "--max-instances")) {
        if (number(val, 0, 4000000000u, &v)) return -1;
        a->o.max_instances = (unsigned)v;
    } else if (!strcmp(opt, "--rlimit")) {
        if (number(val, 0, 4000000000u, &v)) return -1;
        a->o.rlimit = (unsigned)v;
    } else if (!strcmp(opt, "--profile-checks")) {
        if (number(val, 0, 1000, &v)) return -1;
        a->o.profile_checks = (unsigned)v;
    } else if (!strcmp(opt, "--jobs")) {
        if (number(val, 1, 256, &v)) return -1;
        a->o.jobs = a->d.jobs = (int)v;
    } else if (!strcmp(opt, "--seed")) {
        if (number(val, 0, ~0ull, &v)) return -1;
        a->o.seed = v;
    } else if (!strcmp(opt, "--derive-rounds")) {
        if (number(val, 1, 64, &v)) return -1;
        a->d.rounds = (int)v;
    } else if (!strcmp(opt, "--derive-nodes")) {
        if (number(val, 10, 10000000, &v)) return -1;
        a->d.nodes = (int)v;
    } else if (!strcmp(opt, "--every")) {
        if (number(val, 1, 1000000000, &v)) return -1;
        a->d.every = (int)v;
    } else if (!strcmp(opt, "--derive-by")) { /* a word, not a number, but takes a value the same way */
        int m = 0;
        while (m < PV_DERIVE_MODES && (!val || strcmp(val, pv_derive_mode_names[m]))) m++;
        if (m == PV_DERIVE_MODES) return -1;
        a->d.mode = m;
    } else if (!strcmp(opt, "--shard")) {
        unsigned k, n;
        char tail;
        if (!val || sscanf(val, "%u/%u%c", &k, &n, &tail) != 2 || n < 1 || n > BT_LANES || k >= n)
            return -1;
        a->o.shard_k = k, a->o.shard_n = n;
    } else {
        return 0;
    }
    return 1;
}

/* @return -1 to go on, or an exit status (help, version, bad usage). */
static int parse_one(args *a, int argc, char **argv, int *i) {
    const char *s = argv[*i], *next = *i + 1 < argc ? argv[*i + 1] : NULL;
    int r = numeric_option(a, s, next);
    if (r < 0) return usage_error("bad or missing value for", s);
    if (r > 0) return ++*i, -1;
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) return fputs(usage_text, stdout), EXIT_OK;
    if (!strcmp(s, "--version"))
        return printf("prove %s (z3 %s)\n", PV_VERSION, ze_version()), EXIT_OK;
    if (!strcmp(s, "-q")) a->o.quiet = a->d.quiet = 1;
    else if (!strcmp(s, "--no-general")) a->o.general = 0;
    else if (!strcmp(s, "--no-timings")) a->o.no_timings = 1;
    else if (!strcmp(s, "--check")) a->m = MODE_CHECK;
    else if (!strcmp(s, "--verdicts")) a->verdicts = 1;
    else if (!strcmp(s, "--axioms-check")) a->m = MODE_AXIOMS;
    else if (!strcmp(s, "--merge")) a->m = MODE_MERGE;
    else if (!strcmp(s, "--prune-derivable")) a->m = MODE_PRUNE;
    else if (!strcmp(s, "--derive")) a->m = MODE_DERIVE;
    else if (!strcmp(s, "--two-sided")) a->d.mode = 1;
    else if (!strcmp(s, "--no-hygiene")) a->no_hygiene = 1;
    else if ((!strcmp(s, "-o") || !strcmp(s, "--axioms") || !strcmp(s, "--wrong") ||
              !strcmp(s, "--sample") || !strcmp(s, "--from") || !strcmp(s, "--known")) &&
             !next)
        return usage_error("missing value for", s);
    else if (!strcmp(s, "-o")) a->output = argv[++*i];
    else if (!strcmp(s, "--axioms")) a->o.axioms_path = argv[++*i];
    else if (!strcmp(s, "--wrong")) a->wrong = argv[++*i];
    else if (!strcmp(s, "--sample")) a->sample = argv[++*i];
    else if (!strcmp(s, "--from")) a->d.from = argv[++*i];
    else if (!strcmp(s, "--known")) a->o.known = argv[++*i];
    else if (s[0] == '-' && s[1]) return usage_error("unknown option", s);
    else if (a->input) a->more[a->n_more++] = argv[*i];
    else a->input = s;
    return -1;
}

static int run_prove(const args *a) {
    pv_stats st;
    char err[PV_ERRLEN];
    if (!a->input || !a->output) return usage_error("need CANDIDATES and -o RULEDB", NULL);
    if (a->n_more) return usage_error("more than one input file", a->more[0]);
    pv_options o = a->o;
    o.known_bounds = a->d; /* --derive-rounds, --derive-nodes, --derive-by */
    int rc = pv_prove_file(a->input, a->output, &o, &st, err, sizeof err);
    pv_stats_free(&st);
    if (rc == PV_OK) return EXIT_OK;
    fprintf(stderr, "prove: %s\n", err);
    return EXIT_BAD;
}

/* Exit 1 only for a real failure to re-prove (refuted, unknown, budget:
 * verdicts any machine reproduces); a rule the clock or an error left
 * undecided was not judged: exit 2. */
static int check_status(const pv_check_result *res) {
    int status = EXIT_OK;
    for (size_t i = 0; i < res->n_rules; i++) {
        switch (res->pair[i].reason) {
        case DC_PROVED:
        case DC_DERIVED: break;
        case DC_REFUTED:
        case DC_UNKNOWN:
        case DC_BUDGET:
            if (status == EXIT_OK) status = EXIT_FAILED;
            break;
        case DC_CLOCK:
        case DC_ERROR:
        case DC_CLASS_COUNT: status = EXIT_BAD; break;
        }
    }
    return status;
}

static void report_failures(const char *path, const pv_check_result *res) {
    size_t by[DC_CLASS_COUNT] = {0};
    for (size_t i = 0; i < res->n_rules; i++) {
        const pv_pair *p = &res->pair[i];
        by[p->reason]++;
        if (p->status != RDB_PROVED)
            fprintf(stderr, "prove: %s: rule %zu not proved: %s: %s\n", path, p->member,
                    dc_class_name(p->reason), p->why);
    }
    fprintf(stderr, "prove: %s: %zu of %zu rules not proved (", path, res->n_failed, res->n_rules);
    const char *sep = "";
    for (int c = DC_REFUTED; c < DC_CLASS_COUNT; c++) {
        if (!by[c]) continue;
        fprintf(stderr, "%s%zu %s", sep, by[c], dc_class_name((dc_class)c));
        sep = ", ";
    }
    fprintf(stderr, "); ids:");
    for (size_t i = 0; i < res->n_failed; i++) fprintf(stderr, " %zu", res->failed[i]);
    fputc('\n', stderr);
}

static int run_check(const args *a) {
    pv_check_result res;
    char err[PV_ERRLEN];
    if (!a->input) return usage_error("--check needs a RULEDB", NULL);
    if (pv_check_file(a->input, &a->o, &res, err, sizeof err) != PV_OK) {
        fprintf(stderr, "prove: %s\n", err);
        return EXIT_BAD;
    }
    for (size_t i = 0; a->verdicts && i < res.n_rules; i++) {
        const pv_pair *p = &res.pair[i];
        printf("%zu %s%s%s\n", p->member, dc_class_name(p->reason), p->why[0] ? ": " : "",
               p->why);
    }
    if (res.n_failed) report_failures(a->input, &res);
    else if (!a->o.quiet)
        fprintf(stderr, "prove: %s: all %zu rules re-proved in %.1f s\n", a->input, res.n_rules,
                (double)res.wall_ms / 1000.0);
    int status = check_status(&res);
    pv_check_free(&res);
    return status;
}

static int run_merge(const args *a) {
    pv_stats st;
    char err[PV_ERRLEN];
    if (!a->input || !a->output || a->n_more < 2)
        return usage_error("--merge needs CANDIDATES, -o RULEDB and the shards' files", NULL);
    pv_options o = a->o;
    o.known_bounds = a->d;
    int rc = pv_merge_shards_file(a->input, a->more, a->n_more, a->output, &o, &st, err, sizeof err);
    pv_stats_free(&st);
    if (rc == PV_OK) return EXIT_OK;
    fprintf(stderr, "prove: %s\n", err);
    return EXIT_BAD;
}

static int run_axioms(const args *a) {
    char err[PV_ERRLEN];
    int bad = 0, warned = 0;
    const char *file = a->input ? a->input : a->o.axioms_path;
    if (a->no_hygiene && !a->sample) return usage_error("--no-hygiene needs --sample", NULL);
    if (!a->no_hygiene &&
        pv_axioms_check(file, a->wrong, &a->o, stdout, &bad, err, sizeof err) != PV_OK) {
        fprintf(stderr, "prove: %s\n", err);
        return EXIT_BAD;
    }
    if (a->sample) {
        fflush(stdout); /* the profile borrows stderr (profile.h); stdout stays in order */
        if (pv_axioms_sample(file, a->sample, &a->o, stdout, &warned, err, sizeof err) != PV_OK) {
            fprintf(stderr, "prove: %s\n", err);
            return EXIT_BAD;
        }
        printf("%d warning%s\n", warned, warned == 1 ? "" : "s");
    }
    return bad ? EXIT_FAILED : EXIT_OK;
}

static int run_prune(const args *a) {
    pv_prune_report r;
    char err[PV_ERRLEN];
    if (!a->input || !a->output) return usage_error("--prune-derivable needs RULEDB and -o OUT", NULL);
    if (a->n_more) return usage_error("more than one input file", a->more[0]);
    int rc = pv_prune_file(a->input, a->output, &a->d, &r, err, sizeof err);
    if (rc != PV_OK) {
        fprintf(stderr, "prove: %s\n", err);
        return EXIT_BAD;
    }
    if (!a->d.quiet)
        fprintf(stderr,
                "prove: %s: %zu rules, %zu not matchable (dropped), %zu equations (a rule and its reverse once): "
                "%zu kept%s%s, %zu derived by the others%s (rounds %d, e-nodes %d, by %s), %.1f s (%zu kept again "
                "after %d check(s) against the file as the engine reads it); %s holds %zu rules, one per equation "
                "kept\n",
                a->input, r.in, r.skipped, r.equations, r.kept, a->d.from ? " of those in " : "",
                a->d.from ? a->d.from : "", r.derived, a->d.from ? " or left out of that file" : "", r.rounds, r.nodes,
                pv_derive_mode_names[r.mode], r.seconds,
                r.restored, r.passes, a->output, r.kept);
    if (!r.converged) /* even quiet: the file is not one prove --derive finds complete */
        fprintf(stderr, "prove: %s: warning: the checks did not end in %d passes (the last still kept rules); "
                        "prove --derive names the rules it does not derive\n", a->output, r.passes);
    return EXIT_OK;
}

static int run_derive(const args *a) {
    pv_derive_report r;
    char err[PV_ERRLEN];
    if (!a->input || a->n_more != 1) return usage_error("--derive needs SHIPPED and FULL", NULL);
    if (pv_derive_file(a->input, a->more[0], &a->d, &r, a->d.quiet ? NULL : stderr, err, sizeof err) != PV_OK) {
        fprintf(stderr, "prove: %s\n", err);
        return EXIT_BAD;
    }
    if (!a->d.quiet)
        fprintf(stderr, "prove: %s: %zu rules: %zu shipped, %zu the reverse of a shipped rule, %zu%s checked: %zu derived "
                "from them, %zu neither (%zu not matchable), %.1f s (rounds %d, e-nodes %d)\n",
                a->more[0], r.full, r.shipped, r.reversed, r.checked, a->d.every > 1 ? " (a sample)" : "", r.derived,
                r.neither, r.skipped, r.seconds, r.rounds, r.nodes);
    return r.neither ? EXIT_FAILED : EXIT_OK;
}

int pv_cli_main(int argc, char **argv) {
    args a;
    memset(&a, 0, sizeof a);
    pv_defaults(&a.o);
    pv_derive_defaults(&a.d);
    if (argc < 2) return usage_error("nothing to do", NULL);
    if (!(a.more = calloc((size_t)argc, sizeof *a.more))) return fputs("prove: out of memory\n", stderr), EXIT_BAD;
    int r = -1;
    for (int i = 1; i < argc && r < 0; i++) r = parse_one(&a, argc, argv, &i);
    if (r < 0) {
        switch (a.m) {
        case MODE_CHECK: r = run_check(&a); break;
        case MODE_AXIOMS: r = run_axioms(&a); break;
        case MODE_MERGE: r = run_merge(&a); break;
        case MODE_PROVE: r = run_prove(&a); break;
        case MODE_PRUNE: r = run_prune(&a); break;
        case MODE_DERIVE: r = run_derive(&a); break;
        }
    }
    free(a.more);
    return r;
}
