/* verify.c - timing models in onnxruntime through the helper
 * engine/verify/ort_time.py (see verify.h): run it, read its lines, pick. */
#include "verify/verify.h"

#include "sys/sys.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onnx/engine.h"

/* The helper's source, NUL-terminated (.incbin, as ruledb_blob.c). */
extern const char eg_ort_time_py[];
__asm__(".section .rodata\n"
        ".globl eg_ort_time_py\n"
        "eg_ort_time_py:\n"
        ".incbin \"engine/verify/ort_time.py\"\n"
        ".byte 0\n"
        ".previous\n");

#define HELPER_OUT_MAX (1 << 16)

void eg_verify_opts_init(eg_verify_opts *o) {
    o->threads = 1;
    o->runs = 20;
    o->warmup = 2;
    o->screen = 3;
    o->min_runs = 5;
    o->cache = NULL;
    o->machine = NULL;
}

void eg_verify_use_cache(eg_verify_opts *o, const eg_cost *c, const char *cost_cache, char *buf, size_t len) {
    if (!cost_cache || eg_cost_kind_of(c) != EG_COST_ORT) return;
    int n = snprintf(buf, len, "%s.verify", cost_cache);
    if (n < 0 || (size_t)n >= len) return;
    o->cache = buf, o->machine = eg_cost_machine(c);
}

/* Run the helper with its stdout and stderr into one pipe; *out gets what
 * it wrote (NUL-terminated, at most HELPER_OUT_MAX bytes kept), *status its
 * exit status (127: the interpreter did not start). */
static eg_status run_helper(char *const *argv, char **out, int *status) {
    int fd[2];
    *out = NULL;
    if (pipe(fd) != 0) return EG_EIO;
    pid_t pid;
    if (eg_spawn(argv, -1, fd[1], fd[1], &pid) != 0) {
        close(fd[0]), close(fd[1]);
        return EG_EIO;
    }
    close(fd[1]);
    char *buf = malloc(HELPER_OUT_MAX + 1);
    size_t len = 0;
    for (;;) { /* read to the end even when the buffer is full: never block the child */
        char tmp[4096];
        ssize_t k = read(fd[0], tmp, sizeof tmp);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        size_t keep = buf && len < HELPER_OUT_MAX ? (size_t)k : 0;
        if (keep > HELPER_OUT_MAX - len) keep = HELPER_OUT_MAX - len;
        if (keep) memcpy(buf + len, tmp, keep), len += keep;
    }
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    if (!buf) return EG_ENOMEM;
    buf[len] = 0;
    *out = buf;
    return EG_OK;
}

/* The helper's message: its output without the data lines, trimmed. */
static void message_of(const char *out, char *err, size_t errlen) {
    size_t n = 0;
    err[0] = 0;
    for (const char *l = out; *l && n + 1 < errlen;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (strncmp(l, "model\t", 6) && strncmp(l, "ratios\t", 7) && len) {
            if (n) err[n++] = ' ';
            if (len > errlen - n - 1) len = errlen - n - 1;
            memcpy(err + n, l, len), n += len;
            err[n] = 0;
        }
        l = e ? e + 1 : l + len;
    }
}

/* Parse the data lines into rows (index 1..n-1 and 0) and aa (-1).
 * @return the number of lines read, or -1 for a line that does not parse. */
static int parse(const char *out, int n, eg_verify_row *rows, eg_verify_row *aa) {
    int got = 0;
    for (const char *l = out; *l;) {
        int idx, rounds = 0;
        double a, b, c;
        eg_verify_row *r = NULL;
        if (!strncmp(l, "model\t", 6) || !strncmp(l, "ratios\t", 7)) {
            int is_model = l[0] == 'm';
            int got_fields = sscanf(l + (is_model ? 6 : 7), "%d\t%lf\t%lf\t%lf\t%d", &idx, &a, &b, &c, &rounds);
            if (got_fields < 4 || idx < -1 || idx >= n || !isfinite(a) || !isfinite(b) || isnan(c) || rounds < 0)
                return -1;
            r = idx < 0 ? aa : &rows[idx];
            if (is_model) r->median_ms = a, r->min_ms = b, r->max_rel_err = c, r->rounds = rounds;
            else r->ratio = a, r->ratio_lo = b, r->ratio_hi = c;
            got++;
        }
        const char *e = strchr(l, '\n');
        l = e ? e + 1 : l + strlen(l);
    }
    return got;
}

eg_status eg_verify_time(const char *const *paths, int n, const eg_verify_opts *o, eg_verify_row *rows,
                         eg_verify_row *aa, char *err, size_t errlen) {
    if (n < 2 || n > EG_VERIFY_MAX_MODELS)
        return eg_errf(err, errlen, EG_ELIMIT, "verify: %s", "between 1 and 15 candidates");
    const char *python = eg_python();
    char threads[16], runs[16], warmup[16], screen[16], min_runs[16], max_err[32], min_gain[32];
    snprintf(threads, sizeof threads, "%d", o->threads > 0 ? o->threads : 1);
    snprintf(runs, sizeof runs, "%d", o->runs > 0 ? o->runs : 1);
    snprintf(warmup, sizeof warmup, "%d", o->warmup >= 0 ? o->warmup : 0);
    snprintf(screen, sizeof screen, "%d", o->screen > 0 ? o->screen : 1);
    snprintf(min_runs, sizeof min_runs, "%d", o->min_runs > 0 ? o->min_runs : 1);
    snprintf(max_err, sizeof max_err, "%.17g", EG_VERIFY_MAX_REL_ERR);
    snprintf(min_gain, sizeof min_gain, "%.17g", EG_VERIFY_MIN_GAIN);
    char *argv[18 + EG_VERIFY_MAX_MODELS + 1];
    int k = 0;
    argv[k++] = (char *)python;
    argv[k++] = "-c";
    argv[k++] = (char *)eg_ort_time_py;
    argv[k++] = "--threads", argv[k++] = threads;
    argv[k++] = "--runs", argv[k++] = runs;
    argv[k++] = "--warmup", argv[k++] = warmup;
    argv[k++] = "--screen", argv[k++] = screen;
    argv[k++] = "--min-runs", argv[k++] = min_runs;
    argv[k++] = "--max-err", argv[k++] = max_err;
    argv[k++] = "--min-gain", argv[k++] = min_gain;
    for (int i = 0; i < n; i++) argv[k++] = (char *)paths[i];
    argv[k] = NULL;
    char *out = NULL;
    int status = 0;
    eg_status rc = run_helper(argv, &out, &status);
    if (rc == EG_ENOMEM) return eg_errf(err, errlen, rc, "verify: %s", "out of memory");
    if (rc != EG_OK) return eg_errf(err, errlen, rc, "verify: cannot start %s", python);
    memset(rows, 0, sizeof *rows * (size_t)n);
    memset(aa, 0, sizeof *aa);
    rows[0].ratio = rows[0].ratio_lo = rows[0].ratio_hi = 1;
    if (status == 127) {
        rc = eg_errf(err, errlen, EG_EUNSUPPORTED, "verify: %s not found (set TASOC_PYTHON to a Python 3 "
                    "with onnxruntime)", python);
    } else if (status == 3) {
        char msg[EG_ERRLEN];
        message_of(out, msg, sizeof msg);
        rc = eg_errf(err, errlen, EG_EUNSUPPORTED, "verify: %s", msg);
    } else if (status != 0) {
        char msg[EG_ERRLEN];
        message_of(out, msg, sizeof msg);
        rc = eg_errf(err, errlen, EG_EIO, "verify: the onnxruntime helper failed: %s", msg);
    } else if (parse(out, n, rows, aa) != 2 * n + 1) { /* n + 1 model lines, n ratio lines */
        rc = eg_errf(err, errlen, EG_EIO, "verify: %s", "the onnxruntime helper's output does not parse");
    }
    free(out);
    return rc;
}

/* A candidate whose outputs agree and that is faster beyond the noise. */
static int faster(const eg_verify_row *r, double noise) {
    return r->max_rel_err <= EG_VERIFY_MAX_REL_ERR && r->ratio_lo > 1 && r->ratio > 1 + noise;
}

int eg_verify_pick(const eg_verify_row *rows, int n, const eg_verify_row *aa) {
    double noise = fabs(aa->ratio - 1), spread = (aa->ratio_hi - aa->ratio_lo) / 2;
    if (noise < spread) noise = spread;
    if (noise < EG_VERIFY_MIN_GAIN) noise = EG_VERIFY_MIN_GAIN;
    double fastest = 0;
    for (int k = 1; k < n; k++)
        if (faster(&rows[k], noise) && rows[k].ratio > fastest) fastest = rows[k].ratio;
    /* Of the candidates the rounds cannot tell from the fastest, the first
     * in the caller's order (the cost model's), so which of two equals wins
     * does not depend on the machine's noise of the moment. */
    for (int k = 1; k < n; k++)
        if (faster(&rows[k], noise) && rows[k].ratio >= fastest - noise) return k;
    return 0;
}

/* The candidates, deduplicated by graph hash (the result may be the
 * built-ins alone), into cand[1..rep->n) with rep->name and held[] (where
 * each lives), in the cost model's order: the search's result, its
 * runners-up, the second opinion, the built-ins alone. */
enum { MAX_CAND = 3 + EG_SEARCH_RUNNERS };

typedef struct {
    eg_graph **slot; /* where the candidate lives (the input's row: NULL) */
    int runner;      /* its index in the search's runners-up, or -1 */
} held_at;

static void list_candidates(eg_graph **best, eg_search_result *r, eg_graph **second, eg_graph **plain,
                            const eg_graph **cand, held_at *held, eg_verify_report *rep) {
    held_at all[MAX_CAND];
    int n_all = 0;
    all[n_all++] = (held_at){best, -1};
    for (int k = 0; k < r->n_runners; k++) all[n_all++] = (held_at){&r->runner[k], k};
    all[n_all++] = (held_at){second, -1};
    all[n_all++] = (held_at){plain, -1};
    uint64_t hash[MAX_CAND];
    int n_cand = 0;
    for (int k = 0; k < n_all; k++) {
        const eg_graph *c = all[k].slot ? *all[k].slot : NULL;
        if (!c) continue; /* none: no second opinion, no built-ins alone when they are the result */
        uint64_t h = eg_graph_hash(c);
        int seen = 0;
        for (int q = 0; q < n_cand; q++) seen |= h && hash[q] == h;
        if (seen) continue;
        hash[n_cand++] = h, held[rep->n] = all[k], cand[rep->n] = c;
        char *name = rep->name[rep->n];
        if (k == 0) snprintf(name, sizeof rep->name[0], "search result");
        else if (all[k].runner >= 0) snprintf(name, sizeof rep->name[0], "runner-up %d", all[k].runner + 1);
        else if (all[k].slot == second) snprintf(name, sizeof rep->name[0], "second opinion");
        else snprintf(name, sizeof rep->name[0], "built-ins alone");
        rep->n++;
    }
}

/* Export the candidates next to prefix, time them against input_path and
 * pick. @return EG_OK or an error of eg_save or eg_verify_time. */
static eg_status time_candidates(const eg_graph *g, const char *input_path, const char *prefix,
                                 const eg_graph *const *cand, const eg_verify_opts *o, int quiet,
                                 eg_verify_report *rep, char *err, size_t errlen) {
    char path[MAX_CAND][4096];
    const char *paths[MAX_CAND + 1] = {input_path};
    int saved = 1;
    eg_status rc = EG_OK;
    for (; saved < rep->n && rc == EG_OK; saved++) {
        snprintf(path[saved - 1], 4096, "%s.verify.%ld.%d.onnx", prefix, (long)getpid(), saved - 1);
        paths[saved] = path[saved - 1];
        rc = eg_save(path[saved - 1], cand[saved], err, errlen);
    }
    if (rc == EG_OK) {
        if (!quiet) fprintf(stderr, "engine: verify: timing %d models in onnxruntime (at most %d rounds, %d thread%s)\n",
                            rep->n, o->runs, o->threads, o->threads == 1 ? "" : "s");
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = eg_verify_time(paths, rep->n, o, rep->row, &rep->aa, err, errlen);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        rep->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    }
    if (rc == EG_OK) rep->pick = eg_verify_pick(rep->row, rep->n, &rep->aa);
    for (int k = 1; k < saved; k++) eg_remove_saved(paths[k], g);
    return rc;
}

eg_status eg_verify_choose(const eg_graph *g, const char *input_path, const char *prefix, eg_search_result *r,
                           eg_graph **second, eg_graph **plain, eg_graph **best, const eg_verify_opts *o, int quiet,
                           eg_verify_report *rep, char *err, size_t errlen) {
    const eg_graph *cand[MAX_CAND + 1] = {g};
    held_at held[MAX_CAND + 1] = {{NULL, -1}};
    eg_status rc = EG_OK;
    memset(rep, 0, sizeof *rep);
    rep->n = 1;
    snprintf(rep->name[0], sizeof rep->name[0], "input");
    list_candidates(best, r, second, plain, cand, held, rep);
    uint64_t key = o->cache ? eg_vcache_key(g, cand + 1, rep->n - 1, o) : 0;
    if (key && eg_vcache_find(o->cache, key, rep)) {
        rep->cached = 1;
    } else {
        rc = time_candidates(g, input_path, prefix, cand, o, quiet, rep, err, errlen);
        char werr[EG_ERRLEN]; /* an unwritten cache costs the next run a timing, nothing more */
        if (rc == EG_OK && key && eg_vcache_put(o->cache, key, rep, werr, sizeof werr) != EG_OK && !quiet)
            fprintf(stderr, "engine: warning: %s\n", werr);
    }
    held_at from = rc == EG_OK && rep->pick ? held[rep->pick] : (held_at){NULL, -1};
    /* the candidates borrow from *best's base: the one kept takes it over */
    if (from.slot && from.slot != best) {
        eg_graph *keep = *from.slot, *base = (*best)->base;
        *from.slot = NULL;
        if (from.runner >= 0) { /* the runners-up stay packed */
            r->runner[from.runner] = r->runner[--r->n_runners];
            r->runner[r->n_runners] = NULL;
        }
        (*best)->base = NULL;
        eg_free(*best);
        if (base) eg_graph_set_base(keep, base);
        *best = keep;
    }
    return rc;
}
