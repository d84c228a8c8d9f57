/* tasoc.h - the engine's stable C API for other languages (prefix tasoc_),
 * exported by the shared library out/lib/libtasoc.so that the Python
 * package `tasoc` (python/) loads with ctypes.
 *
 * Overview. Everything crosses this boundary as opaque handles, plain
 * numbers and C strings: no engine struct is shared, so the engine's
 * headers can change without breaking a caller. Every fallible function
 * returns a status (0 ok, otherwise an eg_status code: tasoc_status_name
 * names it) and writes a message for the user into err (TASOC_ERRLEN
 * bytes suffice), the same message `engine` prints. The functions call the
 * library the `engine` program is made of (eg_load_mem, eg_optimize,
 * eg_save_mem, eg_cost_graph, the ruledb reader), never a copy of it.
 *
 * A graph handle is reference counted: an optimized graph borrows its
 * weights from the graph it came from and holds a reference to it, so the
 * caller may free the handles in any order.
 *
 * Worked example: optimize a model held in memory.
 *
 *     tasoc_graph *g = NULL, *best = NULL;
 *     tasoc_result *r = NULL;
 *     tasoc_opts o;
 *     char err[TASOC_ERRLEN];
 *     uint8_t *out = NULL;
 *     size_t len = 0;
 *     tasoc_opts_init(&o);               // alpha 1.05, budget 200, 10 s
 *     int rc = tasoc_load_mem(bytes, n, "model.onnx", &g, err, sizeof err);
 *     if (rc == 0) rc = tasoc_optimize(g, &o, &best, &r, err, sizeof err);
 *     if (rc == 0) rc = tasoc_save_mem(best, &out, &len, err, sizeof err);
 *     if (rc != 0) fprintf(stderr, "%s: %s\n", tasoc_status_name(rc), err);
 *     tasoc_mem_free(out);
 *     tasoc_result_free(r);
 *     tasoc_graph_free(g);               // any order: best keeps g alive
 *     tasoc_graph_free(best);
 */
#ifndef TASOC_H
#define TASOC_H

#include <stddef.h>
#include <stdint.h>

#define TASOC_ERRLEN 320
#define TASOC_API_VERSION 5 /* bumped when a signature or struct changes */

typedef struct tasoc_graph tasoc_graph;
typedef struct tasoc_result tasoc_result;
typedef struct tasoc_ruledb tasoc_ruledb;

/* Options of tasoc_optimize; tasoc_opts_init sets the engine's defaults. */
typedef struct {
    double alpha;           /* keep graphs under alpha x best cost, 1..10 */
    double time_limit;      /* seconds, >= 0 (tasoc_opts_init: 60); with
                               deterministic, give a far safety net, as
                               engine optimize --deterministic's 600, so
                               that the work bounds decide (the summary's
                               warning says when the clock stopped it) */
    uint64_t budget;        /* graph expansions */
    const char *cost;       /* "analytic-cpu", "analytic", "cpu", "cuda" or "ort";
                               NULL as engine optimize: "ort" where python3
                               ($TASOC_PYTHON) has onnxruntime, else
                               "analytic-cpu" with a warning (summary) */
    const char *ruledb;     /* a ruledb file; NULL the shipped rules */
    const char *cost_cache; /* a cost cache file; NULL the per-user one for
                               a measuring cost (engine optimize's); with
                               "ort", verify's choices go beside it
                               (FILE.verify): the same graph optimized
                               again times nothing */
    int threads;            /* "ort" and verify: onnxruntime intra-op threads (0: 1) */
    int verify;             /* 1 time the result against the input in
                               onnxruntime and keep the faster (engine
                               optimize --verify); -1 never; 0 with "ort" costs */
    int verify_runs;        /* at most this many rounds (0: 20) */
    int deterministic;      /* 1: the same bytes every run: analytic-cpu (or
                               cost "analytic"), no verify, no cost cache */
    int no_cost_cache;      /* 1: no per-user cost cache */
    const char *search;     /* "egraph" (NULL: the default): equality
                               saturation, or "backtrack" (engine optimize
                               --search) */
    int egraph_iters;       /* with "egraph": rounds at most (0: 6) */
    int egraph_nodes;       /* with "egraph": e-nodes at most (0: 100000) */
    int egraph_passes;      /* with "egraph": passes at most (0: 6) */
    int no_second_opinion;  /* 1: verify times no second opinion, the search
                               again under the analytic cost that it does
                               with a measured cost (engine optimize
                               --no-second-opinion: half the search time) */
} tasoc_opts;

/* What tasoc_optimize did (tasoc_result_summary). */
typedef struct {
    double cost_before, cost_after; /* microseconds, input and result */
    double seconds;                 /* search wall time */
    uint64_t expanded, generated, duplicates, rejected, pruned;
    const char *stop;               /* "saturated", "budget", "time limit" */
    int kept_input;                 /* result not cheaper: the input */
    int rules_dropped;              /* rules gained nothing over built-ins */
    size_t n_rules;                 /* distinct rules on the best path */
    int bn_folded, bias_split, relu_fused, cse_merged, weights_folded;
    int sum_spelled;                /* additions written as Sum (eg_spell) */
    int nan_guards_dropped;         /* Where(IsNaN(x), 0, x) on x proved finite */
    const char *cost_model;         /* the cost backend used ("ort", "analytic-cpu", ...) */
    int verified;                   /* 1: verify timed the candidates */
    const char *verify_pick;        /* "input", "search result", "runner-up K",
                                       "second opinion", "built-ins alone";
                                       NULL unverified */
    double verify_speedup;          /* the returned graph's measured speedup
                                       over the input (1 for the input) */
    double verify_seconds;          /* the timing's wall time */
    const char *warning;            /* NULL, or what the caller should tell
                                       the user (an unverified fallback) */
} tasoc_summary;

/* Facts of a ruledb file (tasoc_ruledb_info). */
typedef struct {
    const char *kind;  /* "rules" or "candidates" */
    size_t n_rules;    /* kind rules */
    size_t n_classes;  /* kind candidates */
    uint32_t max_ops;
    uint64_t seed;
    uint64_t graphs, classes, proved, failed, pruned; /* generator counts */
} tasoc_ruledb_info;

/* @return TASOC_API_VERSION (a caller checks it before anything else). */
int tasoc_api_version(void);

/* @return the engine's version string ("0.1.0"). */
const char *tasoc_version(void);

/* @return the name of a status code ("EG_EIO"), "EG_OK" for 0. */
const char *tasoc_status_name(int status);

void tasoc_opts_init(tasoc_opts *o);

/* Read and import an ONNX model file; initializers in external data
 * files (MODEL.onnx.data, as torch.onnx.export writes by default) are
 * read from its directory. @return 0 with *out set, or a status with err
 * saying why (the file, the node, the tensor). */
int tasoc_load_file(const char *path, tasoc_graph **out, char *err, size_t errlen);

/* tasoc_load_file with symbolic dimensions pinned, as tasoc_load_mem_dims
 * does. @return as tasoc_load_file. */
int tasoc_load_file_dims(const char *path, const char *const *dim_names, const int64_t *dim_sizes, int n_dims,
                         tasoc_graph **out, char *err, size_t errlen);

/* Import an ONNX model from memory (the bytes are copied); name appears
 * in messages. A model keeping initializers in external files is refused
 * (there is no directory to read them from): load it from its file.
 * @return as tasoc_load_file. */
int tasoc_load_mem(const void *buf, size_t len, const char *name, tasoc_graph **out, char *err,
                   size_t errlen);

/* tasoc_load_mem with symbolic dimensions pinned (engine optimize --dim):
 * the model's dim_param dim_names[k] is read as dim_sizes[k] (1 .. 2^40)
 * wherever its inputs, outputs and value_info name it, so its shapes are
 * known; the graph (and what it optimizes to) is the model at that size.
 * A name the model lacks is an error. @return as tasoc_load_file. */
int tasoc_load_mem_dims(const void *buf, size_t len, const char *name, const char *const *dim_names,
                        const int64_t *dim_sizes, int n_dims, tasoc_graph **out, char *err, size_t errlen);

/* Export as ONNX bytes into *buf (free with tasoc_mem_free), every
 * initializer inline. A graph tasoc_optimize kept as its input gives the
 * input's bytes unchanged, as `engine optimize` writes them (unless the
 * input kept data in external files). @return 0, or a status and err. */
int tasoc_save_mem(const tasoc_graph *g, uint8_t **buf, size_t *len, char *err, size_t errlen);

void tasoc_mem_free(void *buf);

/* Counts of nodes, tensors, graph inputs and outputs. */
void tasoc_graph_counts(const tasoc_graph *g, int *nodes, int *tensors, int *inputs,
                        int *outputs);

/* The graph's cost under a cost model (NULL: analytic-cpu), in microseconds.
 * @return 0 with *us set, or a status and err. */
int tasoc_graph_cost(const tasoc_graph *g, const char *cost, double *us, char *err, size_t errlen);

/* Drop a reference to g (NULL is allowed). */
void tasoc_graph_free(tasoc_graph *g);

/* What `engine optimize` does between reading and writing: the rules (the
 * shipped ones unless o->ruledb), the cost model, the built-ins, the
 * search, weight folding (eg_optimize). g is not changed. o may be NULL.
 * @return 0 with *best and *r set (free both), or a status and err. */
int tasoc_optimize(tasoc_graph *g, const tasoc_opts *o, tasoc_graph **best, tasoc_result **r,
                   char *err, size_t errlen);

void tasoc_result_summary(const tasoc_result *r, tasoc_summary *s);

/* Rule k (< n_rules) of the best path: its id, how many times it was
 * applied, and its text "SRC => DST" with any 1x1 guard ("[x0 1x1]").
 * @return 0, or 1 when k is out of range. */
int tasoc_result_rule(const tasoc_result *r, size_t k, uint64_t *id, unsigned *times,
                      const char **text);

void tasoc_result_free(tasoc_result *r);

/* Read a ruledb file (rules or candidates) with the library's checked
 * reader. @return 0 with *out set, or a status and err. */
int tasoc_ruledb_open(const char *path, tasoc_ruledb **out, char *err, size_t errlen);

/* The shipped ruledb linked into the library. @return as tasoc_ruledb_open. */
int tasoc_ruledb_shipped(tasoc_ruledb **out, char *err, size_t errlen);

void tasoc_ruledb_info_get(const tasoc_ruledb *db, tasoc_ruledb_info *info);

/* Rule i of a rules file: id, prover verdict ("proved", ...), and its two
 * sides as text (rg_format) into src and dst.
 * @return 0, or 1 when i is out of range or the file holds candidates. */
int tasoc_ruledb_rule(const tasoc_ruledb *db, size_t i, uint64_t *id, const char **verdict,
                      char *src, size_t src_len, char *dst, size_t dst_len);

void tasoc_ruledb_close(tasoc_ruledb *db);

#endif
