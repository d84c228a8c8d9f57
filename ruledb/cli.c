/* cli.c - the ruledb tool: info, dump, diff and merge of ruledb files.
 * Kept apart from main.c so the tests can call rdb_cli_main directly.
 * Exit status: 0 ok, 1 `diff` found differences, 2 bad input or usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruledb.h"

#define RDB_TOOL_VERSION "0.1.0"

enum { EXIT_SAME = 0, EXIT_DIFFER = 1, EXIT_BAD = 2 };

static const char usage_text[] =
    "usage: ruledb info FILE          kind, version, digest, generator, counts, op histogram\n"
    "       ruledb dump FILE          every rule or class, graphs as s-expressions\n"
    "       ruledb diff A B           what only A (<) or only B (>) holds, by content;\n"
    "                                 exit 0 same, 1 different, 2 error\n"
    "       ruledb merge -o OUT A [B...]  merge files of one kind into a canonical OUT\n"
    "       ruledb --help | --version\n"
    "Exit status: 0 ok, 1 differences (diff), 2 bad input or usage.\n";

static int usage_error(const char *why) {
    fprintf(stderr, "ruledb: %s\n%s", why, usage_text);
    return EXIT_BAD;
}

static rdb_file *load(const char *path) {
    rdb_file *f;
    char err[RDB_ERRLEN];
    if (rdb_read(path, &f, err, sizeof err) != RDB_OK) {
        fprintf(stderr, "ruledb: %s\n", err);
        return NULL;
    }
    return f;
}

/* rg_format into a malloc'd string of the right size (NULL: no memory). */
static char *graph_text(const rg_graph *g) {
    char small[512];
    size_t n = rg_format(g, small, sizeof small);
    char *s = malloc(n + 1);
    if (!s) return NULL;
    if (n < sizeof small) memcpy(s, small, n + 1);
    else rg_format(g, s, n + 1);
    return s;
}

static void print_graph(FILE *out, const rg_graph *g) {
    char *s = graph_text(g);
    fputs(s ? s : "(out of memory)", out);
    free(s);
}

/* ---- info ---- */

static void print_hex(FILE *out, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) fprintf(out, "%02x", p[i]);
}

static void count_ops(const rg_graph *g, uint64_t hist[OP_COUNT]) {
    for (int j = 0; j < g->n_nodes; j++) hist[g->node[j].op]++;
}

static void print_histogram(FILE *out, const rdb_file *f) {
    uint64_t hist[OP_COUNT] = {0};
    for (size_t i = 0; i < f->n_rules; i++) {
        count_ops(&f->rules[i].src, hist);
        count_ops(&f->rules[i].dst, hist);
    }
    for (size_t i = 0; i < f->n_classes; i++)
        for (size_t m = 0; m < f->classes[i].n_members; m++)
            count_ops(&f->classes[i].members[m], hist);
    fprintf(out, "op histogram:\n");
    for (int op = 0; op < OP_COUNT; op++)
        if (hist[op])
            fprintf(out, "  %-10s %llu\n", ops_table[op].name, (unsigned long long)hist[op]);
}

static void print_shard(FILE *out, const rdb_generator *g) {
    fprintf(out, "shard:      ");
    if (g->shard_count == 0) {
        fprintf(out, "unknown (merged from different shardings)\n");
        return;
    }
    if (g->shard_count == 1 && g->shard_have == 1) {
        fprintf(out, "unsharded\n");
        return;
    }
    const char *sep = "";
    for (unsigned k = 0; k < g->shard_count; k++)
        if (g->shard_have >> k & 1) {
            fprintf(out, "%s%u", sep, k);
            sep = ",";
        }
    fprintf(out, " of %u\n", (unsigned)g->shard_count);
}

static void print_generator(FILE *out, const rdb_generator *g) {
    fprintf(out, "generator:  %s %s\n", g->tool[0] ? g->tool : "(none)", g->version);
    fprintf(out, "max_ops:    %u\nseed:       %llu\nops:       ", (unsigned)g->max_ops,
            (unsigned long long)g->seed);
    for (int op = 0; op < OP_COUNT; op++)
        if (g->ops >> op & 1) fprintf(out, " %s", ops_table[op].name);
    fprintf(out, "%s\n", g->ops ? "" : " (not recorded)");
    print_shard(out, g);
    fprintf(out, "counts:     graphs %llu, classes %llu, proved %llu, failed %llu, pruned %llu\n",
            (unsigned long long)g->counts.graphs, (unsigned long long)g->counts.classes,
            (unsigned long long)g->counts.proved, (unsigned long long)g->counts.failed,
            (unsigned long long)g->counts.pruned);
    fprintf(out, "timings:    wall %llu ms, cpu %llu ms\n", (unsigned long long)g->timings.wall_ms,
            (unsigned long long)g->timings.cpu_ms);
    for (int k = 0; k < g->n_notes; k++) fprintf(out, "note:       %s\n", g->notes[k]);
}

static void print_contents(FILE *out, const rdb_file *f) {
    if (f->kind == RDB_RULES) {
        size_t by[RDB_PROOF_COUNT] = {0};
        for (size_t i = 0; i < f->n_rules; i++) by[f->rules[i].prover.status]++;
        fprintf(out, "rules:      %zu", f->n_rules);
        for (int p = 0; p < RDB_PROOF_COUNT; p++)
            if (by[p]) fprintf(out, ", %s %zu", rdb_proof_name((rdb_proof)p), by[p]);
        fprintf(out, "\n");
        return;
    }
    size_t members = 0;
    uint64_t seen = 0;
    for (size_t i = 0; i < f->n_classes; i++) {
        members += f->classes[i].n_members;
        seen += f->classes[i].count;
    }
    fprintf(out, "classes:    %zu, %zu members, %llu graphs counted\n", f->n_classes, members,
            (unsigned long long)seen);
}

static int cmd_info(const char *path) {
    rdb_file *f = load(path);
    if (!f) return EXIT_BAD;
    printf("file:       %s\nkind:       %s\nversion:    %d\nopspecs:    ", path,
           rdb_kind_name(f->kind), RDB_VERSION);
    print_hex(stdout, f->digest, 16);
    printf("\n");
    print_generator(stdout, &f->gen);
    print_contents(stdout, f);
    print_histogram(stdout, f);
    rdb_free(f);
    return EXIT_SAME;
}

/* ---- dump ---- */

static void print_rule(FILE *out, const char *prefix, const rdb_rule *r) {
    fprintf(out, "%srule %llu: ", prefix, (unsigned long long)r->id);
    print_graph(out, &r->src);
    fprintf(out, " => ");
    print_graph(out, &r->dst);
    fprintf(out, "  [%s %llu ms]\n", rdb_proof_name(r->prover.status),
            (unsigned long long)r->prover.millis);
}

static void print_class(FILE *out, const char *prefix, size_t i, const rdb_class *c) {
    size_t shown = c->fp_len < 16 ? c->fp_len : 16;
    fprintf(out, "%sclass %zu: count %llu, %zu members, fingerprint ", prefix, i,
            (unsigned long long)c->count, c->n_members);
    print_hex(out, c->fp, shown);
    fprintf(out, "%s (%zu values)\n", shown < c->fp_len ? "..." : "", c->fp_len / 8);
    if (c->n_shapes) fprintf(out, "%s  inputs:", prefix);
    for (int k = 0; k < c->n_shapes; k++) {
        char buf[64];
        fprintf(out, " x%d %s", k, ten_shape_str(&c->shapes[k], buf));
    }
    if (c->n_shapes) fprintf(out, "\n");
    for (size_t m = 0; m < c->n_members; m++) {
        fprintf(out, "%s  ", prefix);
        print_graph(out, &c->members[m]);
        fprintf(out, "\n");
    }
}

static int cmd_dump(const char *path) {
    rdb_file *f = load(path);
    if (!f) return EXIT_BAD;
    for (size_t i = 0; i < f->n_rules; i++) print_rule(stdout, "", &f->rules[i]);
    for (size_t i = 0; i < f->n_classes; i++) print_class(stdout, "", i, &f->classes[i]);
    rdb_free(f);
    return EXIT_SAME;
}

/* ---- diff ---- */

static void print_side(const rdb_file *f, const size_t *idx, size_t n, const char *prefix) {
    for (size_t i = 0; i < n; i++) {
        if (f->kind == RDB_RULES) print_rule(stdout, prefix, &f->rules[idx[i]]);
        else print_class(stdout, prefix, idx[i], &f->classes[idx[i]]);
    }
}

static int cmd_diff(const char *pa, const char *pb) {
    rdb_file *a = load(pa), *b = a ? load(pb) : NULL;
    rdb_delta d;
    int rc = EXIT_BAD;
    if (!a || !b) goto cleanup;
    if (rdb_diff(a, b, &d) != RDB_OK) {
        fprintf(stderr, "ruledb: diff: out of memory\n");
        goto cleanup;
    }
    if (a->kind != b->kind)
        printf("kind: %s <> %s\n", rdb_kind_name(a->kind), rdb_kind_name(b->kind));
    print_side(a, d.only_a, d.n_only_a, "< ");
    print_side(b, d.only_b, d.n_only_b, "> ");
    rc = d.n_only_a || d.n_only_b || a->kind != b->kind ? EXIT_DIFFER : EXIT_SAME;
    rdb_delta_free(&d);
cleanup:
    rdb_free(a);
    rdb_free(b);
    return rc;
}

/* ---- merge ---- */

/* An empty file whose generator agrees with f's and adds nothing, so
 * merging f with it only canonicalises f. */
static rdb_file *neutral(const rdb_file *f) {
    rdb_file *e = rdb_new(f->kind);
    if (!e) return NULL;
    memcpy(e->digest, f->digest, sizeof e->digest);
    e->gen = f->gen;
    memset(&e->gen.counts, 0, sizeof e->gen.counts);
    memset(&e->gen.timings, 0, sizeof e->gen.timings);
    return e;
}

/* Merge acc with next, freeing both. @return the result, or NULL with a
 * message printed (next NULL: its loader already printed one). */
static rdb_file *merge_pair(rdb_file *acc, rdb_file *next, const char *name) {
    rdb_file *m = NULL;
    char err[RDB_ERRLEN];
    if (next && rdb_merge(acc, next, &m, err, sizeof err) != RDB_OK)
        fprintf(stderr, "ruledb: %s: %s\n", name, err);
    rdb_free(acc);
    rdb_free(next);
    return m;
}

/* Fold the inputs into one file; a single input is canonicalised.
 * @return it, or NULL (message printed). */
static rdb_file *merge_all(char **paths, int n) {
    rdb_file *acc = load(paths[0]);
    if (acc && n == 1) {
        rdb_file *e = neutral(acc);
        if (!e) fprintf(stderr, "ruledb: %s: out of memory\n", paths[0]);
        return merge_pair(acc, e, paths[0]);
    }
    for (int i = 1; acc && i < n; i++) acc = merge_pair(acc, load(paths[i]), paths[i]);
    return acc;
}

static int cmd_merge(int argc, char **argv) {
    const char *out = NULL;
    char **inputs = argv; /* compacted in place: n <= i */
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (i + 1 == argc) return usage_error("merge: -o needs a file name");
            out = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ruledb: merge: unknown option '%s'\n%s", argv[i], usage_text);
            return EXIT_BAD;
        } else
            inputs[n++] = argv[i];
    }
    if (!out || n == 0) return usage_error("merge: need -o OUT and at least one input");
    rdb_file *m = merge_all(inputs, n);
    if (!m) return EXIT_BAD;
    char err[RDB_ERRLEN];
    int rc = rdb_write(out, m, err, sizeof err) == RDB_OK ? EXIT_SAME : EXIT_BAD;
    if (rc != EXIT_SAME) fprintf(stderr, "ruledb: %s\n", err);
    rdb_free(m);
    return rc;
}

/* ---- dispatch ---- */

static int print_version(void) {
    uint8_t d[16];
    ops_digest(d);
    printf("ruledb %s (file format %d, opspecs ", RDB_TOOL_VERSION, RDB_VERSION);
    print_hex(stdout, d, 16);
    printf(")\n");
    return EXIT_SAME;
}

int rdb_cli_main(int argc, char **argv) {
    if (argc < 2) return usage_error("missing command");
    const char *cmd = argv[1];
    int nargs = argc - 2;
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return EXIT_SAME;
    }
    if (strcmp(cmd, "--version") == 0) return print_version();
    if (strcmp(cmd, "info") == 0 || strcmp(cmd, "dump") == 0) {
        if (nargs != 1) return usage_error("info and dump take one FILE");
        return cmd[0] == 'i' ? cmd_info(argv[2]) : cmd_dump(argv[2]);
    }
    if (strcmp(cmd, "diff") == 0) {
        if (nargs != 2) return usage_error("diff takes two files");
        return cmd_diff(argv[2], argv[3]);
    }
    if (strcmp(cmd, "merge") == 0) return cmd_merge(nargs, argv + 2);
    fprintf(stderr, "ruledb: unknown command '%s'\n%s", cmd, usage_text);
    return EXIT_BAD;
}
