/* axcheck_main.c - the axcheck tool: check axiom files on concrete tensors
 * under the reference semantics (axcheck.h). Axioms in FILE must hold on
 * every instance; identities in a --wrong file must each be refuted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axcheck.h"

static const char usage[] =
    "usage: axcheck [--instances N] [--seed S] [-q] FILE... [--wrong FILE]...\n"
    "Checks every axiom of each FILE on N random well-shaped instances\n"
    "(default 30) under the exact reference semantics; every identity of a\n"
    "--wrong FILE must be refuted on some instance.\n"
    "Exit status: 0 all as expected, 1 some axiom did not behave, 2 bad\n"
    "usage or an axiom file that does not parse.\n";

typedef struct {
    int instances, quiet;
    uint64_t seed;
    int bad;     /* axioms that did not behave as expected */
    int checked; /* axioms checked */
} opts;

/* Check every axiom of one parsed set; expect_false for the wrong ones. */
static void check_set(const ax_set *s, int expect_false, opts *o) {
    for (int i = 0; i < s->n_axioms; i++) {
        axc_result r;
        int rc = axc_check(s, i, o->instances, o->seed + (uint64_t)i, &r);
        int good = expect_false ? rc == AXC_EMISMATCH : rc == AXC_OK;
        o->checked++;
        if (!good) o->bad++;
        if (!good) {
            printf("FAIL %-28s %s\n", s->axiom[i].name,
                   expect_false && rc == AXC_OK ? "holds on every instance, but is listed as wrong"
                                                : r.msg);
        } else if (!o->quiet) {
            if (expect_false)
                printf("ok   %-28s refuted: %s\n", s->axiom[i].name, r.instance);
            else
                printf("ok   %-28s %d instances (%d distinct)\n", s->axiom[i].name,
                       r.found, r.distinct);
        }
    }
}

/* Parse and check one file. @return 0, or 2 when it does not parse. */
static int check_file(const char *path, int expect_false, opts *o) {
    ax_set s;
    char err[AX_ERRLEN];
    if (ax_parse_file(path, &s, err) != AX_OK) {
        fprintf(stderr, "axcheck: %s\n", err);
        return 2;
    }
    if (!o->quiet) printf("# %s: %d %s\n", path, s.n_axioms,
                          expect_false ? "wrong identities" : "axioms");
    check_set(&s, expect_false, o);
    ax_free(&s);
    return 0;
}

/* A positive decimal option value. @return 0, or -1 if malformed. */
static int parse_count(const char *s, long max, long *v) {
    char *end;
    *v = strtol(s, &end, 10);
    return *s && !*end && *v >= 1 && *v <= max ? 0 : -1;
}

int main(int argc, char **argv) {
    opts o = {30, 0, 42, 0, 0};
    int files = 0, rc = 0;
    long v;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "-q")) {
            o.quiet = 1;
        } else if (!strcmp(a, "--instances") && i + 1 < argc && !parse_count(argv[i + 1], 100000, &v)) {
            o.instances = (int)v, i++;
        } else if (!strcmp(a, "--seed") && i + 1 < argc && !parse_count(argv[i + 1], 1L << 30, &v)) {
            o.seed = (uint64_t)v, i++;
        } else if (!strcmp(a, "--wrong") && i + 1 < argc) {
            rc = check_file(argv[++i], 1, &o), files++;
        } else if (a[0] == '-') {
            fprintf(stderr, "axcheck: bad option or value: %s\n%s", a, usage);
            return 2;
        } else {
            rc = check_file(a, 0, &o), files++;
        }
    }
    if (rc) return rc;
    if (!files) {
        fputs(usage, stderr);
        return 2;
    }
    printf("%d checked, %d as expected, %d not\n", o.checked, o.checked - o.bad, o.bad);
    return o.bad ? 1 : 0;
}
