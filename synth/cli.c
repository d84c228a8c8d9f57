/* cli.c - the synth command line: options, run, write the candidates file,
 * summary. Kept apart from main.c so tests can call syn_cli_main.
 * Exit status: 0 ok, 2 bad usage, input, resources or write failure. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardfile.h"
#include "synth.h"

enum { EXIT_OK = 0, EXIT_BAD = 2 };

static const char usage_text[] =
    "usage: synth -o FILE [options]\n"
    "       synth --shard K/N [--parts M] -o SHARDFILE [options]\n"
    "       synth --merge-part P -o FILE [--no-timings] SHARDFILE...\n"
    "       synth --verify-shard SHARDFILE...\n"
    "Enumerate every graph of up to N operators, fingerprint it, and write the\n"
    "classes of equal fingerprints as a ruledb candidates file.\n"
    "A run divided over N machines: shard K of N enumerates its share of the\n"
    "last level and writes a shard file in M parts (default N); --merge-part P\n"
    "joins part P of all N shard files into a candidates file; `ruledb merge` of\n"
    "the M parts is byte-identical to the undivided run. --verify-shard: exit 0\n"
    "when every file is a complete, undamaged shard file (a driver's skip test).\n"
    "  -o FILE              the candidates file (written atomically)\n"
    "  --max-ops N          operators per graph, 0..5 (default 3)\n"
    "  --ops LIST           comma-separated operators to enumerate (default all)\n"
    "  --types LIST         input pool types to use (default all but dw3x3):\n"
    "                       scalar, matrix, act, w3x3, w1x1, w1x3, w3x1, vec2,\n"
    "                       vec3, seq, dw3x3 (a depthwise kernel, pool.c)\n"
    "  --seed S             seed of the random input tensors (default 1)\n"
    "  --shard K/N          run shard K of N (0 <= K < N <= 64, N >= 2)\n"
    "  --parts M            parts of a shard file, 1..1024 (default N)\n"
    "  --memory-limit SIZE  stay under SIZE bytes (suffix K, M, G, T): the last\n"
    "                       level runs in as many passes as that takes\n"
    "  --threads N          worker threads (default: all cores)\n"
    "  --backend cpu|cuda   fingerprint evaluation (default cpu; cuda needs a GPU)\n"
    "  --groups2            also enumerate conv groups 2\n"
    "  --kernels1x1         also enumerate 1x1 constant kernels (iconv, dwiconv,\n"
    "                       poolk): the identity of a block of 1x1 convs\n"
    "  --no-timings         write timings as 0, so equal runs give equal bytes\n"
    "  --no-prune           keep every member of every class (no redundancy pruning)\n"
    "  -q                   no progress lines and no summary\n"
    "  --help, --version\n"
    "Exit status: 0 ok, 2 bad usage, bad input or failure (with a message).\n";

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "synth: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(synth --help for usage)\n");
    return EXIT_BAD;
}

static int parse_u64(const char *s, uint64_t *v) {
    char *end;
    if (*s < '0' || *s > '9') return -1;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *v = n;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *v) {
    uint64_t n;
    if (parse_u64(s, &n) || n < (uint64_t)lo || n > (uint64_t)hi) return -1;
    *v = (int)n;
    return 0;
}

/* "8G", "512M", "1000000": bytes (K/M/G/T are powers of 1024). */
static int parse_size(const char *s, uint64_t *v) {
    char *end;
    if (*s < '0' || *s > '9') return -1;
    errno = 0;
    double n = strtod(s, &end);
    if (errno || n <= 0) return -1;
    const char *units = "KMGT";
    const char *u = *end ? strchr(units, *end >= 'a' ? *end - 32 : *end) : NULL;
    if (*end && (!u || !*u)) return -1;
    if (u) {
        for (const char *k = units; k <= u; k++) n *= 1024;
        end++;
        if (*end == 'i') end++;
        if (*end == 'B' || *end == 'b') end++;
    }
    if (*end || n >= 1.8e19) return -1;
    *v = (uint64_t)n;
    return 0;
}

static int parse_shard(const char *s, syn_options *o) {
    int k, n;
    char tail;
    if (sscanf(s, "%d/%d%c", &k, &n, &tail) != 2 || k < 0 || n < 1 || n > RDB_MAX_SHARDS || k >= n)
        return -1;
    o->shard_k = (uint32_t)k, o->shard_n = (uint32_t)n;
    return 0;
}

typedef struct {
    syn_options o;
    const char *out;
    int quiet;
    int merge_part; /* -1: not a merge */
    int verify;
    char **files; /* positional arguments: shard files */
    int n_files;
} cli;

/* One option with a value. @return 0, or the exit status of an error. */
static int option_value(cli *c, const char *name, const char *v) {
    char err[SYN_ERRLEN];
    if (!strcmp(name, "--max-ops")) {
        if (parse_int(v, 0, SYN_MAX_OPS, &c->o.max_ops)) return usage_error("--max-ops: '%s' is not 0..5", v);
    } else if (!strcmp(name, "--ops")) {
        if (syn_parse_ops(v, &c->o.ops, err, sizeof err)) return usage_error("--ops: %s", err);
    } else if (!strcmp(name, "--types")) {
        if (syn_parse_types(v, &c->o.types, err, sizeof err)) return usage_error("--types: %s", err);
    } else if (!strcmp(name, "--seed")) {
        if (parse_u64(v, &c->o.seed)) return usage_error("--seed: '%s' is not a number", v);
    } else if (!strcmp(name, "--shard")) {
        if (parse_shard(v, &c->o)) return usage_error("--shard: '%s' is not K/N with 0 <= K < N <= 64", v);
    } else if (!strcmp(name, "--memory-limit")) {
        if (parse_size(v, &c->o.memory_limit)) return usage_error("--memory-limit: '%s' is not a size like 8G", v);
    } else if (!strcmp(name, "--threads")) {
        if (parse_int(v, 1, 1024, &c->o.threads)) return usage_error("--threads: '%s' is not 1..1024", v);
    } else if (!strcmp(name, "--backend")) {
        if (!strcmp(v, "cpu")) c->o.backend = SYN_CPU;
        else if (!strcmp(v, "cuda")) c->o.backend = SYN_CUDA;
        else return usage_error("--backend: '%s' is not cpu or cuda", v);
    } else if (!strcmp(name, "--parts")) {
        int m;
        if (parse_int(v, 1, 1024, &m)) return usage_error("--parts: '%s' is not 1..1024", v);
        c->o.parts = (uint32_t)m;
    } else if (!strcmp(name, "--merge-part")) {
        if (parse_int(v, 0, 1023, &c->merge_part)) return usage_error("--merge-part: '%s' is not 0..1023", v);
    } else if (!strcmp(name, "-o")) {
        c->out = v;
    } else {
        return usage_error("unknown option '%s'", name);
    }
    return 0;
}

static int takes_value(const char *name) {
    static const char *const with[] = {"--max-ops", "--ops", "--types", "--seed", "--shard", "--memory-limit",
                                       "--threads", "--backend", "-o", "--parts", "--merge-part"};
    for (size_t i = 0; i < sizeof with / sizeof with[0]; i++)
        if (!strcmp(name, with[i])) return 1;
    return 0;
}

/* @return -1 to go on, or an exit status (help, version, errors). */
static int parse_args(cli *c, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        char name[32];
        const char *a = argv[i], *eq = strchr(a, '='), *v = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return fputs(usage_text, stdout), EXIT_OK;
        if (!strcmp(a, "--version")) return printf("synth %s\n", SYN_VERSION), EXIT_OK;
        if (!strcmp(a, "-q")) { c->quiet = 1; continue; }
        if (!strcmp(a, "--groups2")) { c->o.groups2 = 1; continue; }
        if (!strcmp(a, "--kernels1x1")) { c->o.kernels1x1 = 1; continue; }
        if (!strcmp(a, "--no-timings")) { c->o.no_timings = 1; continue; }
        if (!strcmp(a, "--no-prune")) { c->o.no_prune = 1; continue; }
        if (!strcmp(a, "--verify-shard")) { c->verify = 1; continue; }
        if (a[0] != '-') { c->files[c->n_files++] = argv[i]; continue; }
        size_t n = eq && a[0] == '-' && a[1] == '-' ? (size_t)(eq - a) : strlen(a);
        if (n >= sizeof name) return usage_error("unknown option '%s'", a);
        memcpy(name, a, n), name[n] = 0;
        if (!takes_value(name)) return usage_error(a[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", a);
        if (eq && n < strlen(a)) v = eq + 1;
        else if (i + 1 < argc) v = argv[++i];
        else return usage_error("%s needs a value", name);
        int rc = option_value(c, name, v);
        if (rc) return rc;
    }
    if (c->n_files && c->merge_part < 0 && !c->verify) return usage_error("unexpected argument '%s'", c->files[0]);
    if ((c->merge_part >= 0 || c->verify) && !c->n_files) return usage_error("%s", "no shard files given");
    if (!c->out && !c->verify) return usage_error("%s", "missing -o FILE");
    return -1;
}

/* --verify-shard: one line per bad file. */
static int verify_main(cli *c) {
    int bad = 0;
    for (int i = 0; i < c->n_files; i++) {
        sf_header h;
        char err[SF_ERRLEN];
        if (sf_verify(c->files[i], &h, err, sizeof err)) {
            fprintf(stderr, "synth: %s\n", err);
            bad = 1;
        } else if (!c->quiet) {
            fprintf(stderr, "synth: %s: shard %u of %u, %u parts, complete\n", c->files[i], h.shard_k,
                    h.shard_n, h.parts);
        }
    }
    return bad ? EXIT_BAD : EXIT_OK;
}

/* --shard K/N: the shard file. */
static int shard_main(cli *c) {
    syn_stats st;
    char err[RDB_ERRLEN];
    if (syn_run_shard(&c->o, c->out, &st, err, sizeof err) != SYN_OK) {
        fprintf(stderr, "synth: %s\n", err);
        return EXIT_BAD;
    }
    if (!c->quiet) {
        syn_print_summary(stderr, &c->o, &st);
        fprintf(stderr, "synth: wrote shard %u of %u to %s\n", c->o.shard_k, c->o.shard_n, c->out);
    }
    return EXIT_OK;
}

/* --merge-part P: a candidates file from part P of the shard files. */
static int merge_main(cli *c) {
    syn_stats st;
    syn_options o;
    rdb_file *f = NULL;
    char err[RDB_ERRLEN];
    int rc = EXIT_OK;
    if (syn_merge_part((const char *const *)c->files, c->n_files, (uint32_t)c->merge_part,
                       c->o.no_timings, &o, &f, &st, err, sizeof err) != SYN_OK ||
        rdb_write(c->out, f, err, sizeof err) != RDB_OK) {
        fprintf(stderr, "synth: %s\n", err);
        rc = EXIT_BAD;
    } else if (!c->quiet) {
        fprintf(stderr, "synth: part %d of %d shards: %llu classes, written %llu classes, %llu members; "
                "wall %.2f s, cpu %.2f s, peak RSS %.1f MB\n", c->merge_part, c->n_files,
                (unsigned long long)st.classes, (unsigned long long)st.candidates,
                (unsigned long long)st.members, st.wall_s, st.cpu_s, (double)st.peak_rss / 1e6);
        fprintf(stderr, "synth: wrote %s\n", c->out);
    }
    rdb_free(f);
    return rc;
}

int syn_cli_main(int argc, char **argv) {
    cli c = {.out = NULL, .quiet = 0, .merge_part = -1};
    rdb_file *f = NULL;
    syn_stats st;
    char err[RDB_ERRLEN];
    syn_options_init(&c.o);
    c.files = calloc((size_t)argc + 1, sizeof *c.files);
    if (!c.files) return fputs("synth: out of memory\n", stderr), EXIT_BAD;
    int rc = parse_args(&c, argc, argv);
    if (rc < 0) {
        c.o.progress = c.quiet ? NULL : stderr;
        rc = c.verify ? verify_main(&c) : c.merge_part >= 0 ? merge_main(&c) : c.o.shard_n > 1 ? shard_main(&c) : -1;
    }
    if (rc >= 0) {
        free(c.files);
        return rc;
    }
    free(c.files);
    if (syn_run(&c.o, &f, &st, err, sizeof err) != SYN_OK) {
        fprintf(stderr, "synth: %s\n", err);
        return EXIT_BAD;
    }
    if (rdb_write(c.out, f, err, sizeof err) != RDB_OK) {
        fprintf(stderr, "synth: %s\n", err);
        rdb_free(f);
        return EXIT_BAD;
    }
    if (!c.quiet) {
        syn_print_summary(stderr, &c.o, &st);
        fprintf(stderr, "synth: wrote %s\n", c.out);
    }
    rdb_free(f);
    return EXIT_OK;
}
