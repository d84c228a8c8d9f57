/* cli.c - the engine command line: info (what the importer understood),
 * roundtrip (import + export, to check the importer on a model), and
 * optimize (built-ins, rule search, export). Exit status: 0 ok, 2 bad input or usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "onnx/engine.h"
#include "proto/onnx_pb.h"
#include "pipeline/pipeline.h"
#include "sys/sys.h"
#include "verify/verify.h"

#define EG_CLI_MAX_DIMS 16 /* --dim options */

enum { EXIT_OK = 0, EXIT_BAD = 2 };

static const char usage_text[] =
    "usage: engine info MODEL.onnx [--dim NAME=SIZE]...\n"
    "                                           operators (opaque ones marked), inputs,\n"
    "                                           outputs, parameter count, census\n"
    "       engine roundtrip IN.onnx -o OUT.onnx  import and export again (checks the\n"
    "                                           importer; OUT must pass onnx.checker)\n"
    "       engine optimize IN.onnx -o OUT.onnx [options]\n"
    "                                           rewrite with the rules, cost-based search\n"
    "  optimize options:\n"
    "    --ruledb FILE       rules to use (default: the shipped ruledb, built in)\n"
    "    --cost KIND         ort (the default where python3 imports onnxruntime:\n"
    "                        kernels measured in onnxruntime, where the model will\n"
    "                        run; turns --verify on), analytic-cpu (the default\n"
    "                        elsewhere, with a warning that the result is\n"
    "                        unverified: flops and bytes on one CPU core, priced\n"
    "                        per kernel class as onnxruntime runs them, constants\n"
    "                        fitted by bench/calibrate.py), analytic (a roofline\n"
    "                        of a GPU-like device, where a kernel launch saved\n"
    "                        pays: TASO's merges), cpu (measured here),\n"
    "                        cuda (measured, needs a GPU)\n"
    "    --deterministic     the same bytes on every machine and every run: the\n"
    "                        analytic-cpu cost (or --cost analytic), no --verify,\n"
    "                        no cost cache, the search's work bounds (not the\n"
    "                        clock) deciding; measures nothing\n"
    "    --cost-cache FILE   reuse and save measured costs in FILE (default: a file\n"
    "                        per backend and machine in $TASOC_CACHE_DIR, else\n"
    "                        $XDG_CACHE_HOME/tasoc, else ~/.cache/tasoc); with ort\n"
    "                        costs, --verify's choices in FILE.verify (the same\n"
    "                        models timed before: that choice, nothing timed)\n"
    "    --no-cost-cache     no per-user cost cache: measure every kernel and\n"
    "                        time every candidate anew\n"
    "    --cost-trace FILE   with --cost ort: write each kernel timed and each\n"
    "                        rewrite judged, with analytic-cpu's figure beside\n"
    "                        onnxruntime's, to FILE (bench/calibrate.py reads it)\n"
    "    --search S          egraph (default): equality saturation, every\n"
    "                        rewrite everywhere in an e-graph, then the\n"
    "                        cheapest graph it holds (--egraph-*); backtrack:\n"
    "                        best-first search over whole graphs (--alpha,\n"
    "                        --budget)\n"
    "    --egraph-iters N    saturation rounds at most (default 6)\n"
    "    --egraph-nodes N    e-nodes at most (default 100000)\n"
    "    --egraph-passes N   passes at most (default 6): a pass that gained and\n"
    "                        stopped at a limit starts again from its result\n"
    "    --alpha A           keep graphs under A x the best cost (default 1.05)\n"
    "    --budget N          at most N graph expansions (default 200)\n"
    "                        (--alpha or --budget without --search: backtrack)\n"
    "    --time-limit S      at most S seconds of search (default 60; with\n"
    "                        --deterministic 600, a safety net: the bounds above\n"
    "                        decide, and a search the clock stopped says so);\n"
    "                        verify's second opinion has S seconds of its own\n"
    "    --search-threads N  1 or 2 (default): with an analytic cost, a second\n"
    "                        thread prepares the graph expected next while one is\n"
    "                        expanded; the result is the same bytes either way\n"
    "    --verify            time the input and the candidates (the search's result,\n"
    "                        its two runners-up, the built-in rewrites alone and,\n"
    "                        with measured costs, a second opinion: the search\n"
    "                        again under the analytic cost, its own time limit)\n"
    "                        in onnxruntime, alternating, and write the fastest;\n"
    "                        the input unless a candidate is faster beyond the\n"
    "                        noise (needs python3 with onnxruntime; $TASOC_PYTHON\n"
    "                        names another interpreter)\n"
    "    --no-verify         no --verify, also with --cost ort\n"
    "    --no-second-opinion no second opinion for --verify (half the search time)\n"
    "    --verify-runs N     at most N alternating rounds of --verify (default 20;\n"
    "                        they stop earlier once every candidate is decided)\n"
    "    --threads T         onnxruntime intra-op threads for --cost ort and --verify\n"
    "                        (default 1)\n"
    "    --dim NAME=SIZE     read the model's symbolic dimension NAME (a dim_param,\n"
    "                        such as a batch size) as SIZE, so its shapes are known\n"
    "                        and the rules can apply; the output is the model at\n"
    "                        that size. Repeat for more names. INPUT:AXIS=SIZE\n"
    "                        gives a size to an axis of graph input INPUT that has\n"
    "                        neither size nor name in the file\n"
    "    -q                  no progress on stderr\n"
    "       engine --help | --version\n"
    "A model keeping its weights in an external data file (IN.onnx.data, as\n"
    "torch.onnx.export writes by default) is read from IN's directory; roundtrip\n"
    "and optimize then write OUT.onnx and OUT.onnx.data.\n"
    "Exit status: 0 ok, 2 bad input or usage.\n";

static int usage_error(const char *why) {
    fprintf(stderr, "engine: %s\n%s", why, usage_text);
    return EXIT_BAD;
}

static eg_graph *load(const char *path, const eg_load_opts *lo) {
    eg_graph *g;
    char err[EG_ERRLEN];
    if (eg_load(path, lo, &g, err, sizeof err) != EG_OK) {
        fprintf(stderr, "engine: %s\n", err);
        return NULL;
    }
    return g;
}

/* ---- info ---- */

typedef struct {
    char name[96];
    eg_kind kind;
    int count;
} op_count;

/* Distinct operator names with counts, in order of first appearance.
 * @return the number of entries, or -1 when out of memory. */
static int count_ops(const eg_graph *g, op_count **out) {
    op_count *ops = calloc((size_t)g->n_nodes + 1, sizeof *ops);
    int n = 0;
    if (!ops) return -1;
    for (int j = 0; j < g->n_nodes; j++) {
        char buf[96];
        const char *name = eg_node_opname(&g->node[j], buf, sizeof buf);
        int k = 0;
        while (k < n && (ops[k].kind != g->node[j].kind || strcmp(ops[k].name, name))) k++;
        if (k == n) {
            snprintf(ops[n].name, sizeof ops[n].name, "%s", name);
            ops[n++].kind = g->node[j].kind;
        }
        ops[k].count++;
    }
    *out = ops;
    return n;
}

static const char *kind_label(eg_kind k) {
    switch (k) {
    case EG_KIND_OPS: return "opspecs";
    case EG_KIND_MODEL: return "model op";
    case EG_KIND_OPAQUE: return "OPAQUE (kept as is, blocks rewrites)";
    case EG_KIND_COUNT: break;
    }
    return "?";
}

/* Tensors the graph uses (a node reads or writes them, or a graph input or
 * output), and how many of them have a fully known shape. @return 0, or -1
 * when out of memory. */
static int shape_census(const eg_graph *g, int *used, int *known) {
    int *uses = malloc(sizeof *uses * (size_t)(g->n_tensors + 1));
    if (!uses) return -1;
    eg_count_uses(g, uses);
    *used = *known = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const eg_tensor *t = &g->tensor[i];
        if (!uses[i] && t->producer < 0 && !(t->flags & (EG_TF_INPUT | EG_TF_OUTPUT))) continue;
        (*used)++;
        *known += eg_shape_known(&t->shape);
    }
    free(uses);
    return 0;
}

/* One line: how much of the graph the rules see. "census: N nodes: R
 * rule-visible, M model ops, O opaque; shapes known for K of T tensors
 * (P%); model ops: Gemm 1, ...; opaque: Foo 2, ..." (a part with no ops
 * is left out). ops[n] from count_ops. @return 0, or -1 out of memory. */
static int print_census(FILE *f, const char *lead, const eg_graph *g, const op_count *ops, int n) {
    int by_kind[EG_KIND_COUNT] = {0}, used, known;
    if (shape_census(g, &used, &known)) return -1;
    for (int j = 0; j < g->n_nodes; j++) by_kind[g->node[j].kind]++;
    fprintf(f, "%s%d nodes: %d rule-visible, %d model ops, %d opaque; shapes known for %d of %d "
            "tensors (%d%%)", lead, g->n_nodes, by_kind[EG_KIND_OPS], by_kind[EG_KIND_MODEL],
            by_kind[EG_KIND_OPAQUE], known, used, used ? (int)(100LL * known / used) : 100);
    for (int kind = EG_KIND_MODEL; kind <= EG_KIND_OPAQUE; kind++) {
        const char *sep = kind == EG_KIND_MODEL ? "; model ops: " : "; opaque: ";
        for (int k = 0; k < n; k++)
            if (ops[k].kind == (eg_kind)kind) {
                fprintf(f, "%s%s %d", sep, ops[k].name, ops[k].count);
                sep = ", ";
            }
    }
    fprintf(f, "\n");
    return 0;
}

static void print_tensors(const eg_graph *g, const char *title, const int *ids, int n) {
    printf("%s:\n", title);
    for (int k = 0; k < n; k++) {
        const eg_tensor *t = &g->tensor[ids[k]];
        char sh[160];
        printf("  %-24s %-8s %s\n", t->name, eg_dtype_name(t->dtype),
               eg_shape_str(&t->shape, t->dim_name, sh, sizeof sh));
    }
}

static void print_summary(const eg_graph *g, const char *path) {
    int by_kind[EG_KIND_COUNT] = {0}, n_values = 0;
    for (int j = 0; j < g->n_nodes; j++) by_kind[g->node[j].kind]++;
    for (int i = 0; i < g->n_tensors; i++) n_values += (g->tensor[i].flags & EG_TF_INIT) != 0;
    printf("model:       %s\n", path);
    printf("ir_version:  %lld\nopset:       %d\n", (long long)g->ir_version, g->opset);
    printf("producer:    %s\ngraph:       %s\n", g->producer[0] ? g->producer : "(none)",
           g->graph_name[0] ? g->graph_name : "(unnamed)");
    printf("nodes:       %d (%d opspecs, %d model ops, %d opaque)\n", g->n_nodes,
           by_kind[EG_KIND_OPS], by_kind[EG_KIND_MODEL], by_kind[EG_KIND_OPAQUE]);
    printf("parameters:  %lld in %d initializers and constants\n", (long long)eg_param_count(g),
           n_values);
}

static int cmd_info(const char *path, const eg_load_opts *lo) {
    eg_graph *g = load(path, lo);
    op_count *ops = NULL;
    if (!g) return EXIT_BAD;
    int n = count_ops(g, &ops);
    if (n < 0) {
        fprintf(stderr, "engine: %s: out of memory\n", path);
        eg_free(g);
        return EXIT_BAD;
    }
    print_summary(g, path);
    if (print_census(stdout, "census:      ", g, ops, n)) {
        fprintf(stderr, "engine: %s: out of memory\n", path);
        free(ops);
        eg_free(g);
        return EXIT_BAD;
    }
    print_tensors(g, "inputs", g->input, g->n_inputs);
    print_tensors(g, "outputs", g->output, g->n_outputs);
    printf("ops:\n");
    for (int k = 0; k < n; k++)
        printf("  %-24s %6d  %s\n", ops[k].name, ops[k].count, kind_label(ops[k].kind));
    free(ops);
    eg_free(g);
    return EXIT_OK;
}

/* ---- roundtrip, optimize ---- */

/* IN -o OUT (in any order). @return 0, or -1 after a usage message. */
static int in_out_args(int argc, char **argv, const char **in, const char **out) {
    *in = *out = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (i + 1 == argc) return usage_error("-o needs a file name"), -1;
            *out = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "engine: unknown option '%s'\n%s", argv[i], usage_text);
            return -1;
        } else if (*in) {
            return usage_error("more than one input model"), -1;
        } else
            *in = argv[i];
    }
    if (!*in || !*out) return usage_error("need IN.onnx and -o OUT.onnx"), -1;
    return 0;
}

static int cmd_roundtrip(int argc, char **argv) {
    const char *in, *out;
    char err[EG_ERRLEN];
    if (in_out_args(argc, argv, &in, &out)) return EXIT_BAD;
    eg_graph *g = load(in, NULL);
    if (!g) return EXIT_BAD;
    int rc = EXIT_OK;
    if (eg_save(out, g, err, sizeof err) != EG_OK) {
        fprintf(stderr, "engine: %s\n", err);
        rc = EXIT_BAD;
    }
    eg_free(g);
    return rc;
}

/* ---- optimize ---- */

typedef struct {
    const char *in, *out, *ruledb, *cost_cache, *cost_trace;
    eg_cost_kind cost;
    int cost_set, deterministic, no_cache; /* --cost given, --deterministic, --no-cost-cache */
    int time_set;                          /* --time-limit given */
    int cache_is_default;                  /* cost_cache is the per-user file: warn, never fail */
    char cache_buf[4096];
    eg_search_opts search;
    eg_verify_opts verify;
    int quiet, verify_on; /* verify_on: -1 off (--no-verify), 0 unset, 1 on */
    eg_dim_value dims[EG_CLI_MAX_DIMS]; /* --dim NAME=N */
    char dim_name[EG_CLI_MAX_DIMS][128];
    int n_dims;
} opt_args;

/* A number option's value. @return 0, or -1 after a usage message. */
static int number_arg(const char *opt, const char *s, double lo, double hi, double *v) {
    char *end;
    *v = strtod(s, &end);
    if (end == s || *end || !(*v >= lo && *v <= hi)) {
        fprintf(stderr, "engine: %s wants a number in [%g, %g], not '%s'\n", opt, lo, hi, s);
        return -1;
    }
    return 0;
}

/* --dim NAME=N: a symbolic dimension read as size N. @return 0, or -1
 * after a usage message. */
static int dim_arg(const char *v, opt_args *a) {
    const char *eq = strrchr(v, '=');
    double x;
    if (a->n_dims == EG_CLI_MAX_DIMS) return usage_error("too many --dim options"), -1;
    if (!eq || eq == v || (size_t)(eq - v) >= sizeof a->dim_name[0])
        return usage_error("--dim wants NAME=SIZE, the name of a symbolic dimension of the model"), -1;
    if (number_arg("--dim", eq + 1, 1, (double)EG_DIM_MAX, &x)) return -1;
    if (x != (double)(int64_t)x) { /* in range: the cast is defined */
        fprintf(stderr, "engine: --dim wants a whole size, not '%s'\n", eq + 1);
        return -1;
    }
    memcpy(a->dim_name[a->n_dims], v, (size_t)(eq - v));
    a->dim_name[a->n_dims][eq - v] = 0;
    a->dims[a->n_dims] = (eg_dim_value){a->dim_name[a->n_dims], (int64_t)x};
    a->n_dims++;
    return 0;
}

/* info MODEL.onnx [--dim NAME=SIZE]... */
static int info_args(int argc, char **argv) {
    opt_args a;
    const char *path = NULL;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--dim")) {
            if (i + 1 == argc) return usage_error("--dim needs NAME=SIZE");
            if (dim_arg(argv[++i], &a)) return EXIT_BAD;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "engine: unknown option '%s'\n%s", argv[i], usage_text);
            return EXIT_BAD;
        } else if (path) {
            return usage_error("info takes one MODEL.onnx");
        } else {
            path = argv[i];
        }
    }
    if (!path) return usage_error("info takes one MODEL.onnx");
    eg_load_opts lo = {.dims = a.dims, .n_dims = a.n_dims};
    return cmd_info(path, &lo);
}

static int optimize_args(int argc, char **argv, opt_args *a) {
    memset(a, 0, sizeof *a);
    const char *search = NULL; /* --search; NULL: egraph (bench/results/prune.md) */
    int backtrack_opt = 0;     /* --alpha or --budget given */
    eg_search_opts_init(&a->search);
    eg_verify_opts_init(&a->verify);
    a->cost = EG_COST_ANALYTIC_CPU;
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        int takes = 1;
        if (!strcmp(o, "-q")) a->quiet = 1, takes = 0;
        else if (!strcmp(o, "--deterministic")) a->deterministic = 1, takes = 0;
        else if (!strcmp(o, "--no-cost-cache")) a->no_cache = 1, takes = 0;
        else if (!strcmp(o, "--verify")) a->verify_on = 1, takes = 0;
        else if (!strcmp(o, "--no-verify")) a->verify_on = -1, takes = 0;
        else if (!strcmp(o, "--no-second-opinion")) a->search.second_opinion = 0, takes = 0;
        else if (o[0] != '-' || !o[1]) {
            if (a->in) return usage_error("more than one input model"), -1;
            a->in = o, takes = 0;
        } else if (!v) {
            fprintf(stderr, "engine: %s needs a value\n", o);
            return -1;
        } else if (!strcmp(o, "-o") || !strcmp(o, "--output")) a->out = v;
        else if (!strcmp(o, "--ruledb")) a->ruledb = v;
        else if (!strcmp(o, "--cost-cache")) a->cost_cache = v;
        else if (!strcmp(o, "--cost-trace")) a->cost_trace = v;
        else if (!strcmp(o, "--cost")) {
            int k = eg_cost_kind_parse(v);
            if (k < 0) return usage_error("--cost is analytic-cpu, analytic, cpu, cuda or ort"), -1;
            a->cost = (eg_cost_kind)k, a->cost_set = 1;
        } else if (!strcmp(o, "--alpha")) {
            if (number_arg(o, v, 1.0, 10.0, &a->search.alpha)) return -1;
            backtrack_opt = 1;
        } else if (!strcmp(o, "--budget")) {
            if (number_arg(o, v, 0, 1e9, &x)) return -1;
            a->search.budget = (uint64_t)x;
            backtrack_opt = 1;
        } else if (!strcmp(o, "--search")) {
            if (strcmp(v, "egraph") && strcmp(v, "backtrack")) return usage_error("--search is backtrack or egraph"), -1;
            search = v;
        } else if (!strcmp(o, "--egraph-iters")) {
            if (number_arg(o, v, 1, 1000, &x)) return -1;
            a->search.iterations = (int)x;
        } else if (!strcmp(o, "--egraph-passes")) {
            if (number_arg(o, v, 1, 100, &x)) return -1;
            a->search.passes = (int)x;
        } else if (!strcmp(o, "--egraph-nodes")) {
            if (number_arg(o, v, 100, 1e8, &x)) return -1;
            a->search.max_nodes = (int)x;
        } else if (!strcmp(o, "--time-limit")) {
            if (number_arg(o, v, 0, 1e6, &a->search.time_limit)) return -1;
            a->time_set = 1;
        } else if (!strcmp(o, "--search-threads")) {
            if (number_arg(o, v, 1, 2, &x)) return -1;
            a->search.threads = (int)x;
        } else if (!strcmp(o, "--verify-runs")) {
            if (number_arg(o, v, 1, 10000, &x)) return -1;
            a->verify.runs = (int)x;
        } else if (!strcmp(o, "--dim")) {
            if (dim_arg(v, a)) return -1;
        } else if (!strcmp(o, "--threads")) {
            if (number_arg(o, v, 1, 1024, &x)) return -1;
            a->verify.threads = (int)x;
        } else {
            fprintf(stderr, "engine: unknown option '%s'\n%s", o, usage_text);
            return -1;
        }
        i += takes;
    }
    if (!a->in || !a->out) return usage_error("need IN.onnx and -o OUT.onnx"), -1;
    /* egraph unless named otherwise, or the options only backtrack reads */
    a->search.egraph = search ? !strcmp(search, "egraph") : !backtrack_opt;
    if (a->deterministic) {
        const char *why = eg_cost_deterministic_conflict(a->cost_set, a->cost, a->verify_on > 0, a->cost_cache != NULL);
        char msg[160];
        snprintf(msg, sizeof msg, "--deterministic measures nothing: %s", why ? why : "");
        if (why) return usage_error(msg), -1;
        a->cost_set = 1, a->verify_on = -1;
        if (!a->time_set) a->search.time_limit = EG_DETERMINISTIC_TIME_LIMIT;
    }
    a->search.progress = !a->quiet;
    return 0;
}

/* The cost model (eg_cost_open: by default onnxruntime's measurements
 * where python3 has onnxruntime, else analytic-cpu with a warning; the
 * per-user cache for a measuring backend), then --verify's default: on
 * with ort costs. @return EG_OK or an error in err. */
static eg_status open_cost(opt_args *a, eg_cost **cost, char *err, size_t errlen) {
    eg_cost_open_opts o = {.pick = !a->cost_set, .kind = a->cost, .threads = a->verify.threads,
                           .cache = a->cost_cache, .default_cache = !a->no_cache && !a->deterministic};
    eg_cost_open_info info;
    eg_status rc = eg_cost_open(&o, cost, &info, err, errlen);
    if (rc != EG_OK) return rc;
    if (info.warning[0])
        fprintf(stderr, "engine: warning: %s%s\n", info.warning,
                info.fell_back ? " (--deterministic says that is intended)" : "");
    a->cost = info.kind;
    if (info.cache && info.cache != a->cost_cache) {
        snprintf(a->cache_buf, sizeof a->cache_buf, "%s", info.cache);
        a->cost_cache = a->cache_buf, a->cache_is_default = 1;
    }
    if (a->cost_trace && a->cost != EG_COST_ORT) {
        snprintf(err, errlen, "--cost-trace compares onnxruntime's costs with analytic-cpu's: it needs --cost ort");
        return EG_EUNSUPPORTED;
    }
    if (a->verify_on == 0 && a->cost == EG_COST_ORT) a->verify_on = 1; /* measured costs, measured result */
    a->verify_on = a->verify_on > 0;
    return EG_OK;
}

/* Where the costs came from: kernels timed now, costs estimated (analytic,
 * opaque nodes, kernels the backend could not run: counted apart, so a
 * check can demand that a backend timed every kernel), lookups answered
 * from the table, and what the cache file held. */
static void print_costs(const eg_cost *c, const char *cache_path) {
    uint64_t hits, misses, measured = eg_cost_measured(c), fallbacks = eg_cost_fallbacks(c);
    eg_cost_stats(c, &hits, &misses);
    printf("costs: %llu measured", (unsigned long long)measured);
    if (measured) printf(" in %.2f s", eg_cost_seconds(c));
    printf(", %llu estimated", (unsigned long long)(misses - measured));
    if (measured || fallbacks) /* a measuring backend: the kernels it could not time */
        printf(" (%llu not measurable)", (unsigned long long)fallbacks);
    printf(", %llu reused", (unsigned long long)hits);
    if (cache_path) printf(" (%zu loaded from %s)", eg_cost_loaded(c), cache_path);
    printf("\n");
    long kb = eg_peak_rss_kb();
    if (kb >= 0) printf("memory: peak %.0f MB\n", kb / 1024.0);
}

static void print_report(const eg_search_result *r, const eg_optimize_stats *st, const eg_ruleset *rs) {
    printf("cost before: %.1f us\n", r->cost_before);
    printf("cost after: %.1f us\n", r->cost_after);
    if (r->e_nodes)
        printf("saturation: %.2f s (stopped: %s; %llu rounds, %llu e-nodes added, %llu e-nodes in %llu classes, "
               "%d pass%s; rounds %.2f s, extraction %.2f s)\n",
               r->seconds, eg_stop_name(r->stop), (unsigned long long)r->expanded, (unsigned long long)r->generated,
               (unsigned long long)r->e_nodes, (unsigned long long)r->e_classes, r->passes, r->passes == 1 ? "" : "es",
               r->t_match, r->t_apply);
    if (r->e_nodes)
        printf("exact extraction: %llu e-nodes, %s\n", (unsigned long long)r->ilp_region,
               r->ilp_solved > 0    ? "optimum proved"
               : r->ilp_solved < 0 ? "too many, not tried"
                                   : "optimum not proved within its resource limit");
    else printf("search time: %.2f s (stopped: %s; expanded %llu, generated %llu (%llu a step ahead), "
           "duplicates %llu, over alpha %llu, refused %llu)\n",
           r->seconds, eg_stop_name(r->stop), (unsigned long long)r->expanded,
           (unsigned long long)r->generated, (unsigned long long)r->looked_ahead,
           (unsigned long long)r->duplicates,
           (unsigned long long)r->pruned, (unsigned long long)r->rejected);
    if (!r->e_nodes)
        printf("search phases: match %.2f s, apply %.2f s, judge %.2f s; %.0f expansions/s\n", r->t_match,
               r->t_apply, r->t_judge, r->seconds > 0 ? (double)r->expanded / r->seconds : 0.0);
    if (st->second)
        printf("second opinion: the search under %s costs, for verify: %.1f us\n",
               eg_cost_kind_name(st->second_kind), st->second_cost);
    printf("built-ins: %d batchnorm folded, %d biases split, %d identities removed, "
           "%d relus fused, %d NaN guards dropped, %d common subexpressions, %d weights folded, "
           "%d additions written as Sum\n",
           st->pre.bn_folded, st->pre.bias_split,
           st->pre.identity_removed + st->post.identity_removed, st->pre.relu_fused,
           st->pre.nan_guards_dropped, st->pre.cse_merged + st->post.cse_merged,
           st->post.weights_folded, st->post.sum_spelled);
    uint64_t total = 0;
    int none = st->kept_input || st->rules_dropped;
    for (size_t i = 0; i < r->n_rules && !none; i++) total += r->applied[i];
    printf("rules applied: %llu%s\n", (unsigned long long)total,
           st->kept_input      ? " (result not cheaper: the input is kept)"
           : st->rules_dropped ? " (no gain over the built-ins alone beyond the cost model's noise)"
                              : "");
    for (size_t i = 0; i < r->n_rules && !none; i++) {
        if (!r->applied[i]) continue;
        char text[1200];
        eg_ruleset_rule_text(rs, i, text, sizeof text);
        printf("  %ux rule %llu%s: %s\n", r->applied[i], (unsigned long long)eg_ruleset_rule(rs, i)->id,
               eg_ruleset_reversed(rs, i) ? " (right to left)" : "", text);
    }
}

/* The input's census on stderr, as info prints it. @return 0, or -1 out of memory. */
static int census(const eg_graph *g) {
    op_count *ops = NULL;
    int n = count_ops(g, &ops), rc = n < 0 ? -1 : print_census(stderr, "engine: census: ", g, ops, n);
    free(ops);
    /* an input dim without a size (symbolic, or neither size nor name)
     * leaves the shapes after it unknown, and the rules need shapes: say
     * how to pin the first one (--dim NAME or --dim INPUT:AXIS) */
    for (int i = 0; rc == 0 && i < g->n_inputs; i++) {
        const eg_tensor *t = &g->tensor[g->input[i]];
        for (int d = 0; d < t->shape.rank && d < EG_MAX_RANK; d++) {
            if (t->shape.dim[d] >= 0) continue;
            const char *name = t->dim_name ? t->dim_name[d] : NULL;
            fprintf(stderr, "engine: note: graph input '%s' has %s%s%s for axis %d: the shapes that depend on it "
                    "are unknown, and rules need shapes; --dim ",
                    t->name, name ? "the symbolic dimension '" : "no size", name ? name : "", name ? "'" : "", d);
            if (name) fprintf(stderr, "%s", name);
            else fprintf(stderr, "%s:%d", t->name, d);
            fprintf(stderr, "=SIZE optimizes the model at that size\n");
            return 0;
        }
    }
    return rc;
}

/* --verify's report: a line per model timed, the A/A, the choice. */
static void print_verify(const eg_verify_report *v) {
    for (int k = 0; k < v->n; k++) {
        const eg_verify_row *w = &v->row[k];
        printf("verify: %-15s %8.3f ms (min %.3f)", v->name[k], w->median_ms, w->min_ms);
        if (k) printf(", speedup %.3fx [%.3f-%.3f], max rel err %.1e", w->ratio, w->ratio_lo, w->ratio_hi,
                      w->max_rel_err);
        printf(", %d round%s\n", w->rounds, w->rounds == 1 ? "" : "s");
    }
    printf("verify: A/A %.3fx [%.3f-%.3f] (the input against itself: the noise)\n", v->aa.ratio, v->aa.ratio_lo,
           v->aa.ratio_hi);
    printf("verify: writing the %s (timing took %.2f s%s)\n",
           v->pick ? v->name[v->pick] : "input (no candidate measured faster)", v->seconds,
           v->cached ? " when these models were timed before: the verify cache's choice" : "");
}

/* Optimize a.in into a.out. When the result is the input (not cheaper),
 * the input's bytes are written unchanged, not an export of them, unless
 * the import mended the file (g->repaired), the file keeps its data in
 * external files (g->external: the export writes a.out.data beside a.out,
 * so the result does not depend on files next to the input), or --dim
 * pinned sizes (the output is the model at those sizes and declares
 * them). */
static int cmd_optimize(int argc, char **argv) {
    opt_args a;
    char err[EG_ERRLEN];
    uint8_t *bytes = NULL;
    size_t len = 0;
    eg_graph *g = NULL, *best = NULL;
    eg_ruleset *rs = NULL;
    eg_cost *cost = NULL;
    eg_search_result r = {0};
    eg_optimize_stats st = {0};
    if (optimize_args(argc, argv, &a)) return EXIT_BAD;
    eg_status rc = egp_read_file(a.in, EG_MAX_FILE, &bytes, &len, err, sizeof err);
    eg_load_opts lo = {.dims = a.dims, .n_dims = a.n_dims, .model_path = a.in};
    if (rc == EG_OK) rc = eg_load_mem(bytes, len, a.in, &lo, &g, err, sizeof err);
    if (rc == EG_OK)
        rc = a.ruledb ? eg_ruleset_load(a.ruledb, &rs, err, sizeof err) : eg_ruleset_shipped(&rs, err, sizeof err);
    if (rc == EG_OK && eg_ruleset_stale(rs)) /* between an opspecs edit and `ninja ruledb` */
        fprintf(stderr, "engine: warning: %s\n", eg_ruleset_stale(rs));
    if (rc == EG_OK) rc = open_cost(&a, &cost, err, sizeof err);
    if (rc == EG_OK && !a.quiet)
        fprintf(stderr, "engine: optimizing %s: %d nodes, %zu rules (%s), cost %s\n", a.in, g->n_nodes,
                eg_ruleset_count(rs), a.ruledb ? a.ruledb : "shipped", eg_cost_kind_name(a.cost));
    if (rc == EG_OK && !a.quiet && census(g) != 0) rc = EG_ENOMEM, snprintf(err, sizeof err, "out of memory");
    FILE *trace = NULL;
    if (rc == EG_OK && a.cost_trace && !(trace = fopen(a.cost_trace, "w")))
        rc = EG_EIO, snprintf(err, sizeof err, "cannot write %s", a.cost_trace);
    if (rc == EG_OK && trace) rc = eg_cost_trace(cost, trace);
    if (rc == EG_OK) rc = eg_optimize(g, rs, cost, &a.search, a.verify_on, &best, &r, &st, err, sizeof err);
    if (trace) {
        eg_cost_trace(cost, NULL);
        if (fclose(trace) != 0 && rc == EG_OK) rc = EG_EIO, snprintf(err, sizeof err, "cannot write %s", a.cost_trace);
    }
    if (rc == EG_OK) print_report(&r, &st, rs), print_costs(cost, a.cost_cache);
    if (rc == EG_OK && a.deterministic && r.stop == EG_STOP_TIME)
        fprintf(stderr, "engine: warning: the time limit (%g s) " EG_CLOCK_STOPPED "; raise --time-limit\n",
                a.search.time_limit);
    if (rc == EG_OK && a.verify_on && !st.kept_input) {
        eg_verify_report v;
        eg_verify_input vin = {.path = a.in, .prefix = a.out};
        rc = eg_optimize_verify(g, &vin, cost, a.cost_cache, &a.verify, a.quiet, &r, &st, &best, &v, err, sizeof err);
        if (rc == EG_OK) print_verify(&v);
    }
    int keep_input = rc == EG_OK && st.kept_input;
    int verbatim = keep_input && !g->repaired && !g->external && !a.n_dims;
    if (rc == EG_OK)
        rc = verbatim ? egp_write_file(a.out, bytes, len, err, sizeof err)
                      : eg_save(a.out, keep_input ? g : best, err, sizeof err);
    if (rc == EG_OK && a.cost_cache) {
        rc = eg_cost_save(cost, err, sizeof err);
        if (rc != EG_OK && a.cache_is_default) { /* the user named no file: the result stands */
            fprintf(stderr, "engine: warning: %s\n", err);
            rc = EG_OK;
        }
    }
    if (rc == EG_OK && !a.quiet)
        fprintf(stderr, "engine: wrote %s%s\n", a.out, verbatim ? " (the input, unchanged)" : "");
    if (rc != EG_OK) fprintf(stderr, "engine: %s\n", err);
    eg_optimize_stats_free(&st); /* the candidates, before the graph they borrow from */
    eg_search_result_free(&r);
    eg_free(best); /* before g: it borrows g's data */
    eg_free(g);
    free(bytes);
    eg_cost_free(cost);
    eg_ruleset_free(rs);
    return rc == EG_OK ? EXIT_OK : EXIT_BAD;
}

int eg_cli_main(int argc, char **argv) {
    if (argc < 2) return usage_error("missing command");
    const char *cmd = argv[1];
    int help = !strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help");
    for (int i = 2; i < argc && !help; i++) /* `engine optimize --help` too */
        help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
    if (help) {
        fputs(usage_text, stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("engine %s (ONNX opsets %d..%d, IR versions 1..%d)\n", EG_VERSION, EG_OPSET_MIN,
               EG_OPSET_MAX, EG_IR_MAX);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "info")) return info_args(argc - 2, argv + 2);
    if (!strcmp(cmd, "roundtrip")) return cmd_roundtrip(argc - 2, argv + 2);
    if (!strcmp(cmd, "optimize")) return cmd_optimize(argc - 2, argv + 2);
    fprintf(stderr, "engine: unknown command '%s'\n%s", cmd, usage_text);
    return EXIT_BAD;
}
