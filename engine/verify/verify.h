/* verify.h - measuring an optimized model against its input where it will
 * run, in onnxruntime (prefix eg_verify): `engine optimize --verify`.
 *
 * The cost model ranks rewrites; only a measurement says whether the
 * result is faster in the runtime. eg_verify_time runs the timing helper
 * engine/verify/ort_time.py (linked into the library, run by `python3 -c`, so the
 * engine needs no file beside it; python3 with onnxruntime and numpy must
 * be installed) on the input and the candidates: one onnxruntime session
 * each (ORT_ENABLE_ALL, the given intra-op threads, no spin-waiting
 * after a run, which would take the cores from the next model's), the same random
 * inputs, warm-up runs, then rounds that run every model once in turn,
 * alternating, plus the input a second time (the A/A: the machine's noise).
 * The rounds end once they have decided, by rules on the rounds alone
 * (never a clock; ort_time.py's header): a candidate clearly slower than
 * the leader leaves them after a few, and they stop when every candidate
 * left is faster or not faster beyond the noise, so a big model is timed
 * for a few rounds and a close call for all of them.
 * Why a helper process and not onnxruntime's C API: the runtime users run
 * is the Python wheel's, which ships no C library or header to link; a
 * process also keeps onnxruntime's threads and memory out of the engine.
 *
 * eg_verify_pick then keeps a candidate only when it is faster beyond the
 * noise and computes the same outputs; otherwise the input wins. The
 * measurements vary from run to run, so --verify trades the engine's
 * byte-for-byte determinism for the guarantee that matters when it is
 * asked for: never a model measured slower than the input.
 *
 *     const char *paths[] = {"in.onnx", "opt.onnx"};
 *     eg_verify_opts o;
 *     eg_verify_row rows[2], aa;
 *     eg_verify_opts_init(&o);
 *     if (eg_verify_time(paths, 2, &o, rows, &aa, err, sizeof err) == EG_OK)
 *         printf("%s\n", eg_verify_pick(rows, 2, &aa) ? "opt.onnx" : "in.onnx");
 */
#ifndef EG_VERIFY_H
#define EG_VERIFY_H

#include <stddef.h>

#include "cost/cost.h"
#include "ir/graph.h"
#include "search/search.h"

/* The largest output difference a candidate may show (max |a - b| /
 * max |a| over its outputs, on the helper's random inputs). */
#define EG_VERIFY_MAX_REL_ERR 1e-4
/* The smallest gain kept, whatever the A/A row says. */
#define EG_VERIFY_MIN_GAIN 0.005
#define EG_VERIFY_MAX_MODELS 16

typedef struct {
    int threads;  /* onnxruntime intra-op threads (default 1) */
    int runs;     /* alternating rounds, at most (default 20) */
    int warmup;   /* runs per model before them (default 2) */
    int screen;   /* after this many rounds a candidate clearly slower than
                     the leader leaves them (default 3) */
    int min_runs; /* from this round on, the rounds stop once every
                     candidate still in them is decided (default 5; set it
                     to runs for exactly runs rounds) */
    const char *cache;   /* eg_verify_choose's choices remembered in this
                            file (eg_vcache_*), or NULL (default): none */
    const char *machine; /* what the timings belong to, part of the cache
                            key (eg_cost_machine of the ort costs) */
} eg_verify_opts;

typedef struct {
    double median_ms, min_ms;
    double max_rel_err;                /* against the input's outputs */
    double ratio, ratio_lo, ratio_hi;  /* per round, input time / this
                                          model's: median, 25th and 75th
                                          percentiles (1 for the input) */
    int rounds;                        /* rounds it was timed in */
} eg_verify_row;

void eg_verify_opts_init(eg_verify_opts *o);

/* Time paths[0] (the input) and the n - 1 candidates paths[1..n) (2 <= n
 * <= EG_VERIFY_MAX_MODELS) into rows[0..n), the A/A row into *aa. The
 * interpreter is $TASOC_PYTHON, else python3.
 * @return EG_OK; EG_EUNSUPPORTED when the interpreter or onnxruntime is
 *         missing (err says how to install it); EG_EIO when the helper
 *         fails (its message in err); EG_ENOMEM. */
eg_status eg_verify_time(const char *const *paths, int n, const eg_verify_opts *o, eg_verify_row *rows,
                         eg_verify_row *aa, char *err, size_t errlen);

/* The candidate to keep: the one of highest median ratio among those whose
 * outputs agree (max_rel_err <= EG_VERIFY_MAX_REL_ERR), faster in at least
 * three rounds of four (ratio_lo > 1) and by more than the noise: ratio >
 * 1 + max(EG_VERIFY_MIN_GAIN, |aa.ratio - 1|, (aa.ratio_hi - aa.ratio_lo)
 * / 2), the A/A's bias or half its spread, whichever is larger (two
 * identical models that differ by that much per round say a gain of that
 * size is not yet a measurement); 0, the input, when none. Of candidates
 * within that noise of the fastest, the first in rows' order is kept (the
 * caller lists them in its cost model's order: the search's result, its
 * runners-up, the built-ins alone), so a tie goes to the cost model. */
int eg_verify_pick(const eg_verify_row *rows, int n, const eg_verify_row *aa);

/* What eg_verify_choose timed and chose: rows[0] the input, then each
 * distinct candidate in the cost model's order (the search's result, its
 * runners-up, the second opinion, the built-ins alone), their names, the
 * A/A row. */
typedef struct {
    int n;
    char name[EG_VERIFY_MAX_MODELS][32];
    eg_verify_row row[EG_VERIFY_MAX_MODELS], aa;
    int pick;       /* 0: the input stays; else the row written */
    double seconds; /* the helper's wall time */
    int cached;     /* 1: rows and pick come from o->cache, nothing timed */
} eg_verify_report;

/* The verify step of the optimize pipeline (engine optimize --verify,
 * tasoc_optimize's default with ort costs): export the candidates (*best,
 * the search's runners-up in r, the second opinion *second and the
 * built-ins alone *plain, each of which may be NULL) as
 * PREFIX.verify.PID.K.onnx, time them against input_path (g's file), pick
 * (eg_verify_pick) and remove the files. When a candidate other than
 * *best wins, *best becomes it (taken out of r, *second or *plain); when the
 * input wins, rep->pick is 0 and *best is left as it was (the caller
 * writes g). quiet: no progress line on stderr. With o->cache, the same
 * input and candidates (by content) timed before on o->machine with the
 * same options take that run's rows and choice, and nothing is exported
 * or timed (rep->cached); a new choice is added to the file (a failure to
 * write it is not an error: the choice stands).
 * @pre *best, r, *second and *plain (its stats' second and plain) from
 *      eg_optimize(g, ...) with candidates 1; free *second and *plain
 *      (eg_optimize_stats_free) before *best.
 * @return EG_OK, or an error of eg_save or eg_verify_time in err. */
eg_status eg_verify_choose(const eg_graph *g, const char *input_path, const char *prefix, eg_search_result *r,
                           eg_graph **second, eg_graph **plain, eg_graph **best, const eg_verify_opts *o, int quiet,
                           eg_verify_report *rep, char *err, size_t errlen);

/* Remember o's choices beside an ort cost cache file: o->cache becomes
 * COST_CACHE.verify (in buf), o->machine eg_cost_machine(c), so the choice
 * is keyed as the costs are (onnxruntime version, threads, CPU). Nothing
 * for another backend or without a cost cache (cost_cache NULL). */
void eg_verify_use_cache(eg_verify_opts *o, const eg_cost *c, const char *cost_cache, char *buf, size_t len);

/* The verify cache (vcache.c): a text file of choices by key, written
 * through a temporary name and renamed, the newest 4096 kept.
 * eg_vcache_key hashes o's knobs and machine, the input's and every
 * candidate's content (structure, weights, opaque protos); 0 when out of
 * memory. eg_vcache_find fills rep's rows, aa, pick and seconds from the
 * record of key with rep->n rows: 1, or 0 when there is none.
 * eg_vcache_put adds or replaces key's record: EG_OK, or EG_EIO / EG_ENOMEM
 * / EG_ELIMIT with err set. */
uint64_t eg_vcache_key(const eg_graph *input, const eg_graph *const *cand, int n_cand, const eg_verify_opts *o);
int eg_vcache_find(const char *path, uint64_t key, eg_verify_report *rep);
eg_status eg_vcache_put(const char *path, uint64_t key, const eg_verify_report *rep, char *err, size_t errlen);

#endif
