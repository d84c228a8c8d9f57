/* cost.h - the engine's cost model (prefix eg_cost): the time a graph
 * takes, as the sum of its nodes' times, memoised per distinct operator
 * instance and optionally kept in a cache file between runs.
 *
 * Overview. A node's cost is looked up by a canonical key: node kind,
 * operator (opspecs op, model op, or opaque op_type and domain), the
 * parameters / attributes, every input's dtype and shape, every output's
 * dtype and shape, each field written as a little-endian int64 (no struct
 * bytes, so no padding). Keys live in an open-addressing table hashed with
 * XXH3-64; a hit returns the stored microseconds. The backends:
 *
 *   analytic  deterministic (tests and reproducible searches), a roofline
 *             of a GPU-like target:
 *                 us = EG_COST_LAUNCH_US + max(flops / EG_COST_PEAK_FLOPS,
 *                                              bytes / EG_COST_BANDWIDTH)
 *             with bytes = all inputs read + the output written. So merging
 *             parallel kernels into one pays off (one launch). Memory ops
 *             (concat, split, transpose, reshape, flatten, identity,
 *             enlarge) have flops 0; split0/split1 are views in a fused
 *             runtime and pay EG_COST_VIEW_US instead of the launch; a
 *             conv2d with a fused RELU costs the same as without; the
 *             constants imm/iconv/poolk/ones cost 0.
 *   analytic-cpu  one CPU core as onnxruntime runs it (the deterministic
 *             mode's cost, and the default without onnxruntime): per kernel
 *             class (conv 1x1, larger convs, depthwise, grouped, gemm,
 *             pools, cheap and transcendental element-wise ops, batchnorm,
 *             softmax/layernorm rows, global pooling, copies, transposes,
 *             views; eg_cost_cal)
 *                 us = launch + flops * us_per_flop + bytes * us_per_byte
 *             with the constants fitted to kernels measured in onnxruntime
 *             on the bench set's and bench/unseen.py's exports
 *             (bench/calibrate.py, generated into cost_calib.h with the
 *             machine they came from; bench/results/calibrate.md says how
 *             well it ranks the rewrites the search judges). A launch
 *             costs little next to the work, so merging kernels pays only
 *             where it saves work or memory traffic, and enlarging a 1x1
 *             kernel to 3x3 costs its nine-fold flops.
 *   cpu       measured once per key on this CPU with random float inputs:
 *             conv and pools through oneDNN (C API), MatMul/Gemm through
 *             OpenBLAS cblas_sgemm, the rest with plain C loops; two
 *             warm-up runs, then repeats until 20 ms or 25 runs (at least
 *             5); the median. oneDNN (OpenMP) and OpenBLAS are held to
 *             ONE thread, so the figures are stable on a shared machine
 *             and comparable with onnxruntime runs at one intra-op thread
 *             (the baseline bench uses); every kernel then runs on the
 *             calling thread and is timed with its CPU-time clock
 *             (CLOCK_THREAD_CPUTIME_ID), which leaves out the time other
 *             processes take on a loaded machine. A kernel over
 *             EG_COST_MAX_MEASURE bytes, or one oneDNN refuses, gets
 *             analytic-cpu's figure instead.
 *   ort       measured in onnxruntime, the runtime the optimized model
 *             runs in (cost_ort.c): a node, together with the nodes
 *             onnxruntime fuses into it (a conv's per-channel bias and
 *             relu, a matmul's bias, a layer norm's scale and shift: the
 *             nodes eg_cost_graph charges nothing), is written as a small
 *             ONNX model (its weights as initializers, so they are
 *             prepacked as in the real model) and timed by a helper
 *             process (engine/cost/ort_cost.py run by $TASOC_PYTHON or
 *             python3) in a session like the real one: ORT_ENABLE_ALL,
 *             the given intra-op threads; the median of repeats, less the
 *             fixed cost of a call from Python. A kernel the helper cannot
 *             run gets analytic-cpu's figure.
 *   cuda      the same measured on a CUDA device (cuDNN convolution with
 *             the fastest algorithm found by trying each, cuBLAS sgemm, a
 *             copy kernel for the rest; cudaEvent timing, median of 15; a
 *             split0/split1 view its copy less an empty launch). Needs a device
 *             at eg_cost_new time; a kernel it cannot run gets the analytic
 *             figure.
 *
 * Opaque nodes cost EG_COST_LAUNCH_US + output bytes / EG_COST_BANDWIDTH
 * on every backend (they never change during a search). An unknown dim of
 * a known rank (a symbolic batch "N") is costed as 1, so models exported
 * with a dynamic batch still get batch-1 costs that rank rewrites; a node
 * with a tensor of unknown rank costs EG_COST_UNKNOWN_US. eg_cost_graph skips
 * weight-only nodes (eg_mark_weight_only): they become initializers.
 *
 * Cache file (text, one record per line, '\n' ends every line):
 *
 *     eg-cost-cache 1 BACKEND MACHINE
 *     HEXKEY MICROSECONDS
 *     ...
 *
 * line 1: the magic word, format version 1, the backend name
 * (eg_cost_kind_name) and the machine id (analytic: "any"; cpu: the CPU
 * model name from /proc/cpuinfo; cuda: the device name and ", views without a launch"; ort: "onnxruntime
 * VERSION, T thread(s), CPU MODEL"), one space each,
 * the machine id running to the end of the line. Then per key: the
 * canonical key in lowercase hex (an even number of digits, at most
 * 2 x EG_COST_MAX_KEY), one space, the time in microseconds as written by
 * "%.17g" (finite, >= 0). A file of another backend or machine is refused
 * (EG_EFORMAT): measured times do not transfer. A missing file is an
 * empty cache; eg_cost_save creates it.
 *
 * Worked example: compare a graph before and after a rewrite on this CPU,
 * reusing measurements across runs.
 *
 *     eg_cost *c;
 *     char err[EG_ERRLEN];
 *     if (eg_cost_new(EG_COST_CPU, "costs.txt", &c, err, sizeof err) != EG_OK) {
 *         fprintf(stderr, "%s\n", err);  // "costs.txt:3: bad time '-1'"
 *         return 2;
 *     }
 *     double before = eg_cost_graph(c, g);    // measures each new kernel once
 *     double after = eg_cost_graph(c, g2);    // shared kernels are hits
 *     printf("%.1f us -> %.1f us\n", before, after);
 *     if (eg_cost_save(c, err, sizeof err) != EG_OK) fprintf(stderr, "%s\n", err);
 *     eg_cost_free(c);
 */
#ifndef EG_COST_H
#define EG_COST_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "ir/graph.h"

/* Analytic target (a GPU-like device), microseconds. */
#define EG_COST_LAUNCH_US 10.0     /* per kernel launch */
#define EG_COST_VIEW_US 1.0        /* split0/split1: a view */
#define EG_COST_PEAK_FLOPS 10e6    /* flops per us: 10 TFLOP/s */
#define EG_COST_BANDWIDTH 500e3    /* bytes per us: 500 GB/s */
#define EG_COST_UNKNOWN_US 100.0   /* a node with an unknown shape */
#define EG_COST_MAX_KEY 8192       /* canonical key bytes (longer: not cached) */
#define EG_COST_MAX_MEASURE ((double)(512u << 20)) /* bytes a measurement may allocate */

typedef enum { /* ORDER COSTKIND */
    EG_COST_ANALYTIC,
    EG_COST_CPU,
    EG_COST_CUDA,
    EG_COST_ORT,
    EG_COST_ANALYTIC_CPU,
    EG_COST_KIND_COUNT
} eg_cost_kind;

/* @return "analytic", "cpu", "cuda", "ort", "analytic-cpu", or "?" out of
 * range. */
const char *eg_cost_kind_name(eg_cost_kind k);

/* @return the kind named (as eg_cost_kind_name writes it), or -1. */
int eg_cost_kind_parse(const char *name);

typedef struct eg_cost eg_cost;

/* Make a cost model of that kind; cache_path may be NULL (no file). An
 * existing cache file is loaded now (see the header comment).
 * @return EG_OK with *out set (free with eg_cost_free); otherwise *out is
 *         NULL and err says why: EG_EUNSUPPORTED for cuda without a usable
 *         GPU ("no CUDA device: use --cost analytic or cpu"), EG_EFORMAT
 *         for a cache that does not parse or belongs to another backend or
 *         machine ("FILE:LINE: ..."), EG_EIO, EG_ENOMEM. */
eg_status eg_cost_new(eg_cost_kind kind, const char *cache_path, eg_cost **out, char *err,
                      size_t errlen);

/* eg_cost_new for a backend that measures with `threads` threads (ort:
 * onnxruntime's intra-op threads; the others ignore it, eg_cost_new
 * passes 1). EG_EUNSUPPORTED for ort without a Python that has
 * onnxruntime (err says how to install it). */
eg_status eg_cost_new_threads(eg_cost_kind kind, const char *cache_path, int threads, eg_cost **out,
                              char *err, size_t errlen);

/* Use the cache file at path from now on (for a model made without one):
 * its records are loaded now and eg_cost_save writes them back. The file
 * name can then depend on the model's machine id (eg_cost_default_path).
 * @return as eg_cost_new's cache errors; on EG_EFORMAT the records before
 *         the bad line stay loaded and the path stays set, so a caller that
 *         only warns rewrites the file whole at eg_cost_save. */
eg_status eg_cost_attach_cache(eg_cost *c, const char *path, char *err, size_t errlen);

/* The machine id of c's cache header ("any" for the analytic kinds). */
const char *eg_cost_machine(const eg_cost *c);

/* The per-user cache file of c's backend and machine, so a second run
 * measures nothing again and a run with other threads or another
 * onnxruntime never reads the first one's times:
 * DIR/costs-BACKEND-HASH.txt, HASH the XXH3 of the machine id, DIR
 * $TASOC_CACHE_DIR, else $XDG_CACHE_HOME/tasoc, else $HOME/.cache/tasoc
 * (created, mode 0700). @return 0 with the path in buf, or -1 (no home,
 * buf too small, or the directory cannot be made). */
int eg_cost_default_path(const eg_cost *c, char *buf, size_t len);

/* How eg_cost_open picks the backend and its cache: the defaults of
 * engine optimize and tasoc_optimize, in one place. */
typedef struct {
    int pick;          /* 1: ort where python3 ($TASOC_PYTHON) has
                          onnxruntime, else analytic-cpu (with a warning);
                          0: kind */
    eg_cost_kind kind; /* when !pick */
    int threads;       /* ort's intra-op threads (< 1: 1) */
    const char *cache; /* a cache file the caller named, or NULL */
    int default_cache; /* no cache named: a measuring backend uses the
                          per-user file (eg_cost_default_path) */
} eg_cost_open_opts;

/* The deterministic mode (engine optimize --deterministic, tasoc_opts'
 * deterministic) measures nothing: an analytic cost, no verify, no cost
 * cache. @return NULL when a request fits it, else why not ("its cost is
 * analytic-cpu or analytic", "verify measures", "it keeps no cost cache").
 * cost_named: a cost kind was asked for (kind). */
const char *eg_cost_deterministic_conflict(int cost_named, eg_cost_kind kind, int verify, int cache_named);
/* What eg_cost_open did. */
typedef struct {
    eg_cost_kind kind;  /* the backend opened */
    const char *cache;  /* the cache file in use (o->cache or cache_buf), NULL none */
    char cache_buf[4096];
    int fell_back;      /* pick found no onnxruntime: analytic-cpu, unverified */
    char warning[320];  /* "" or what the user should know: the fallback, or
                           a per-user cache that could not be read or made */
} eg_cost_open_info;

/* Open a cost model as o says. A problem with a cache the caller named is
 * an error; one with the per-user cache is a warning (the user named no
 * file; the cache is rewritten whole at eg_cost_save).
 * @return EG_OK with *out and *info set, or eg_cost_new's errors. */
eg_status eg_cost_open(const eg_cost_open_opts *o, eg_cost **out, eg_cost_open_info *info, char *err,
                       size_t errlen);

/* A copy of c for another thread (a model is for one thread at a time):
 * the same kind and memoised costs, no cache file, counts from zero. Only
 * for a backend that measures nothing (the analytic ones): it computes a
 * node's cost from the node alone, so both copies give the same answers.
 * @return EG_OK with *out set (free with eg_cost_free); EG_EUNSUPPORTED
 *         for a measuring backend; EG_ENOMEM. */
eg_status eg_cost_fork(const eg_cost *c, eg_cost **out);

/* Add fork's lookups (eg_cost_stats) to c's, so c's counts tell the work
 * of both. */
void eg_cost_join_stats(eg_cost *c, const eg_cost *fork);

/* The time of node `node` of g in microseconds (>= 0, finite), memoised.
 * @pre 0 <= node < g->n_nodes; its tensor ids are valid. */
double eg_cost_node(eg_cost *c, const eg_graph *g, int node);

/* A price for node `node` of g without timing anything (the e-graph
 * prices thousands of e-nodes so, which a measuring backend could not
 * time within a search's limit). For a measuring backend: the analytic
 * price a times timed / analytic of the kernels of its class that
 * eg_cost_node answered so far (timed or read from the cache file)
 * nearest to a in analytic price, interpolated in log a between the one
 * below and the one above (the geometric mean over every class when none
 * of its own was answered), so that it is in the backend's microseconds
 * and not the roofline's: priced unscaled, every new node looked cheaper
 * than the timed ones it replaced; scaled by one mean for the class, a
 * merged [768,2304] projection was priced at twice its time on an H200
 * (the roofline's flops weigh more there than the GPU's), and BERT's Q/K/V
 * merge was never picked. Never
 * the memo, even where it has the key: a kernel timed late in a first run
 * is in the cache file from the start of the second, which then prices
 * differently, searches differently and times what the first did not.
 * Nothing is memoised. The analytic costs answer as eg_cost_node.
 * @pre as eg_cost_node. */
double eg_cost_node_estimate(eg_cost *c, const eg_graph *g, int node);

/* A number that changes whenever eg_cost_node_estimate may answer a node
 * differently than before (a measuring backend timed or read a kernel
 * that moves its scale); the same for the whole life of an analytic
 * one. Whoever keeps estimates keeps them while it stays the same. */
uint64_t eg_cost_estimate_epoch(const eg_cost *c);

/* Sum of eg_cost_node over the nodes that are not weight-only
 * (eg_mark_weight_only), which cost 0: they are folded to initializers.
 * @pre as eg_mark_weight_only (topological order, producers indexed). */
double eg_cost_graph(eg_cost *c, const eg_graph *g);

/* eg_cost_graph that also reuses and records node costs: a node cloned
 * from node k of the source graph (eg_node.origin = k + 1) costs
 * known[k] when known is non-NULL (the caller vouches that such nodes kept
 * their operator, parameters and shapes: eg_apply's clones do); every
 * node's own cost (eg_cost_node, before weight-only and fusion discounts)
 * goes to out[j] when out is non-NULL. The search keeps out with a graph
 * and passes it as known for the graphs rewritten from it, so only the
 * nodes a rewrite adds are costed anew. A node that costs nothing here
 * (weight-only, fused) and was not known is not costed: out[j] is -1. */
double eg_cost_graph_nodes(eg_cost *c, const eg_graph *g, const double *known, double *out);

/* What a node's charge depends on beyond its own operator and shapes: the
 * graph around it. The search keeps these up to date while it tries a
 * rewrite in place (trial.c), so it can charge the nodes a rewrite touches
 * without building the rewritten graph. */
typedef struct {
    const int *uses;         /* eg_count_uses */
    const int *reader;       /* a node reading each tensor, the only one when
                                uses is 1 (eg_last_readers) */
    const unsigned char *wo; /* eg_mark_weight_only, may be NULL */
} eg_cost_ctx;

/* 1 when node j costs nothing of its own in context x: weight-only, written
 * inside its reader, or run inside the node before it. eg_cost_graph_nodes
 * charges node j eg_cost_node_in unless this holds. */
int eg_cost_skipped(const eg_cost *c, const eg_graph *g, const eg_cost_ctx *x, int j);

/* Node j's cost in context x: with the ort backend, the time of j together
 * with the nodes onnxruntime fuses into it; elsewhere eg_cost_node's value
 * (an analytic cost without a cache file computes it, memo untouched). */
double eg_cost_node_in(eg_cost *c, const eg_graph *g, const eg_cost_ctx *x, int j);

/* Write every memoised cost to the cache path, through "PATH.tmp.PID" and
 * rename. No-op (EG_OK) when the model has no path.
 * @return EG_OK, or EG_EIO with the path in err. */
eg_status eg_cost_save(eg_cost *c, char *err, size_t errlen);

/* Lookups answered from the table (hits: loaded from the cache file or
 * memoised earlier) and costs computed (misses: measured or estimated),
 * since eg_cost_new. Either pointer may be NULL. */
void eg_cost_stats(const eg_cost *c, uint64_t *hits, uint64_t *misses);

/* Number of memoised entries (loaded or computed). */
size_t eg_cost_size(const eg_cost *c);

/* Kernels a measuring backend could not run (too big, refused by oneDNN
 * or cuDNN) and costed with a roofline instead; 0 for analytic. */
uint64_t eg_cost_fallbacks(const eg_cost *c);

/* Kernels a measuring backend timed since eg_cost_new (the misses that
 * were not estimated); 0 for analytic. A run whose every kernel is in the
 * cache file measures nothing. */
uint64_t eg_cost_measured(const eg_cost *c);

/* Wall seconds spent measuring kernels since eg_cost_new (0 for
 * analytic): the cost measurement's share of a search. */
double eg_cost_seconds(const eg_cost *c);

/* Entries read from the cache file by eg_cost_new (0 without one). */
size_t eg_cost_loaded(const eg_cost *c);

/* The kind c was made with. */
eg_cost_kind eg_cost_kind_of(const eg_cost *c);

/* The analytic kind of a measuring kind's device, which verify's second
 * opinion searches under (pipeline.h: eg_optimize): analytic-cpu for ort
 * and cpu, analytic for cuda; -1 for the analytic kinds themselves. */
int eg_cost_second_opinion(eg_cost_kind k);
/* Calibration trace (engine optimize --cost-trace, read by
 * bench/calibrate.py): with f non-NULL, an ort model writes to f a line
 * per kernel group it costs (once per key: "kern HASH CLASS EW NODES LNADD
 * FLOPS BYTES KH KW GROUPS C O ORT_US ANALYTIC_CPU_US") and the search a
 * line per judgment ("pair DELTA DELTA_ANALYTIC_CPU BEFORE
 * BEFORE_ANALYTIC_CPU RULE": the change in cost a rewrite makes and the cost
 * of the region it touches, under c and under analytic-cpu, its shadow, and
 * the rule's index). NULL
 * stops. @return EG_OK or EG_ENOMEM. */
eg_status eg_cost_trace(eg_cost *c, FILE *f);
/* The analytic-cpu model a tracing c compares with; NULL when not tracing. */
eg_cost *eg_cost_shadow(const eg_cost *c);
/* Write a judgment's pair line (see eg_cost_trace); nothing when not tracing. */
void eg_cost_trace_pair(eg_cost *c, double d, double d_shadow, double before, double before_shadow, uint32_t rule);

/* The smallest relative gain the backend can tell from noise: 0 for the
 * deterministic analytic model; for measured ones, the spread of repeated
 * medians (a rewrite that gains less is not worth trusting). */
double eg_cost_noise(const eg_cost *c);

/* Free the model (the cache is not saved). NULL is allowed. A model is
 * for one thread at a time (the memo table is not locked). */
void eg_cost_free(eg_cost *c);

#endif
