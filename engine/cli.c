/* cli.c - the engine command line: info (what the importer understood),
 * roundtrip (import + export, to check the importer on a model), and the
 * place of optimize. Exit status: 0 ok, 2 bad input or usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

enum { EXIT_OK = 0, EXIT_BAD = 2 };

static const char usage_text[] =
    "usage: engine info MODEL.onnx              operators (opaque ones marked), inputs,\n"
    "                                           outputs, parameter count\n"
    "       engine roundtrip IN.onnx -o OUT.onnx  import and export again (checks the\n"
    "                                           importer; OUT must pass onnx.checker)\n"
    "       engine optimize IN.onnx -o OUT.onnx   rewrite with the ruledb (not yet)\n"
    "       engine --help | --version\n"
    "Exit status: 0 ok, 2 bad input or usage.\n";

static int usage_error(const char *why) {
    fprintf(stderr, "engine: %s\n%s", why, usage_text);
    return EXIT_BAD;
}

static eg_graph *load(const char *path) {
    eg_graph *g;
    char err[EG_ERRLEN];
    if (eg_load(path, NULL, &g, err, sizeof err) != EG_OK) {
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

static int cmd_info(const char *path) {
    eg_graph *g = load(path);
    op_count *ops = NULL;
    if (!g) return EXIT_BAD;
    int n = count_ops(g, &ops);
    if (n < 0) {
        fprintf(stderr, "engine: %s: out of memory\n", path);
        eg_free(g);
        return EXIT_BAD;
    }
    print_summary(g, path);
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
    eg_graph *g = load(in);
    if (!g) return EXIT_BAD;
    int rc = EXIT_OK;
    if (eg_save(out, g, err, sizeof err) != EG_OK) {
        fprintf(stderr, "engine: %s\n", err);
        rc = EXIT_BAD;
    }
    eg_free(g);
    return rc;
}

/* The search and the cost model are not in this layer yet; say so rather
 * than copy the model and pretend. */
static int cmd_optimize(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "engine: optimize is not implemented yet; `engine roundtrip IN -o OUT` "
                    "checks import and export\n");
    return EXIT_BAD;
}

int eg_cli_main(int argc, char **argv) {
    if (argc < 2) return usage_error("missing command");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("engine %s (ONNX opsets %d..%d)\n", EG_VERSION, EG_OPSET_MIN, EG_OPSET_MAX);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "info")) {
        if (argc != 3) return usage_error("info takes one MODEL.onnx");
        return cmd_info(argv[2]);
    }
    if (!strcmp(cmd, "roundtrip")) return cmd_roundtrip(argc - 2, argv + 2);
    if (!strcmp(cmd, "optimize")) return cmd_optimize(argc - 2, argv + 2);
    fprintf(stderr, "engine: unknown command '%s'\n%s", cmd, usage_text);
    return EXIT_BAD;
}
