/* fold_driver.c - test driver for fold.h and geval.h. The first form loads
 * IN, runs eg_builtin_pre then eg_builtin_post (no search in between),
 * saves OUT and prints the counts. The second evaluates IN with
 * eg_eval_graph on the graph inputs read from FEEDS (float32, native byte
 * order, each input's values in graph input order; an input that is also
 * an initializer takes the initializer) and writes every graph output the
 * same way to OUT. Used by test/engine_fold_test.py, which holds the
 * evaluator to onnxruntime.
 *
 * --ranges prints, for every float tensor of IN (as loaded) whose value
 * range is known (range.h), "NAME LO HI", so a test can hold the ranges
 * to the values onnxruntime computes.
 *
 * The fourth makes STEPS rewrites with the shipped rules, each a match
 * picked by a seeded generator among all the graph's matches (not the
 * cheapest: any rule's result must export right), then eg_builtin_post,
 * and saves OUT; it prints the rules it applied.
 *
 *     fold_driver IN.onnx OUT.onnx
 *     fold_driver --eval IN.onnx FEEDS.bin OUT.bin
 *     fold_driver --walk STEPS SEED IN.onnx OUT.onnx
 *     fold_driver --ranges IN.onnx
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/engine.h"
#include "fold/fold.h"
#include "pipeline/pipeline.h"
#include "fold/geval.h"
#include "fold/range.h"
#include "rewrite/rules.h"
#include "pipeline/pipeline.h"

static int fold(const char *in, const char *out) {
    eg_graph *g = NULL;
    eg_builtin_stats st = {0};
    char err[EG_ERRLEN];
    eg_status rc = eg_load(in, NULL, &g, err, sizeof err);
    if (rc == EG_OK) rc = eg_builtin_pre(g, &st, err, sizeof err);
    if (rc == EG_OK) rc = eg_builtin_post(g, &st, err, sizeof err);
    if (rc == EG_OK) rc = eg_save(out, g, err, sizeof err);
    if (rc != EG_OK) fprintf(stderr, "fold_driver: %s\n", err);
    else
        printf("bn_folded %d bias_split %d identity_removed %d cse_merged %d "
               "reshapes_cancelled %d dead_removed %d weights_folded %d nan_guards_dropped %d\n",
               st.bn_folded, st.bias_split, st.identity_removed, st.cse_merged,
               st.reshapes_cancelled, st.dead_removed, st.weights_folded, st.nan_guards_dropped);
    eg_free(g);
    return rc == EG_OK ? 0 : 2;
}

/* Read the graph inputs from f into in[] (malloc'd; initializers are
 * borrowed). @return 0, or -1 with a message printed. */
static int read_feeds(const eg_graph *g, FILE *f, float **in, unsigned char *owned) {
    for (int k = 0; k < g->n_inputs; k++) {
        const eg_tensor *t = &g->tensor[g->input[k]];
        int64_t n = eg_shape_numel(&t->shape);
        if (t->flags & EG_TF_INIT) {
            in[k] = t->data;
            continue;
        }
        if (n < 0) return fprintf(stderr, "fold_driver: input '%s' has an unknown shape\n", t->name), -1;
        in[k] = malloc(sizeof(float) * (size_t)(n ? n : 1));
        owned[k] = 1;
        if (!in[k] || fread(in[k], sizeof(float), (size_t)n, f) != (size_t)n)
            return fprintf(stderr, "fold_driver: short feeds for '%s'\n", t->name), -1;
    }
    return 0;
}

static int write_outputs(const eg_graph *g, float **out, FILE *f) {
    for (int k = 0; k < g->n_outputs; k++) {
        size_t n = (size_t)eg_shape_numel(&g->tensor[g->output[k]].shape);
        if (fwrite(out[k], sizeof(float), n, f) != n) return -1;
    }
    return 0;
}

static int eval(const char *model, const char *feeds, const char *outp) {
    eg_graph *g = NULL;
    char err[EG_ERRLEN];
    FILE *fi = fopen(feeds, "rb"), *fo = fopen(outp, "wb");
    int rc = fi && fo && eg_load(model, NULL, &g, err, sizeof err) == EG_OK ? 0 : -1;
    if (rc) fprintf(stderr, "fold_driver: %s\n", fi && fo ? err : "cannot open the feeds or the output");
    float **in = g ? calloc((size_t)g->n_inputs + 1, sizeof *in) : NULL;
    float **out = g ? calloc((size_t)g->n_outputs + 1, sizeof *out) : NULL;
    unsigned char *owned = g ? calloc((size_t)g->n_inputs + 1, 1) : NULL;
    if (!rc && (!in || !out || !owned || read_feeds(g, fi, in, owned))) rc = -1;
    if (!rc && eg_eval_graph(g, (const float *const *)in, out, err, sizeof err) != EG_OK) {
        fprintf(stderr, "fold_driver: %s\n", err);
        rc = -1;
    }
    if (!rc && write_outputs(g, out, fo)) rc = -1;
    for (int k = 0; g && in && k < g->n_inputs; k++)
        if (owned && owned[k]) free(in[k]);
    for (int k = 0; g && out && k < g->n_outputs; k++) free(out[k]);
    free(in), free(out), free(owned);
    if (fi) fclose(fi);
    if (fo && fclose(fo)) rc = -1;
    eg_free(g);
    return rc ? 2 : 0;
}

typedef struct {
    eg_match *m;
    int n, cap;
} matches;

static int collect(const eg_match *m, void *arg) {
    matches *l = arg;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        eg_match *p = realloc(l->m, sizeof *p * (size_t)cap);
        if (!p) return 1;
        l->m = p, l->cap = cap;
    }
    l->m[l->n++] = *m;
    return 0;
}

/* splitmix64: the walk's choices, the same for a seed on every machine */
static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int walk(int steps, uint64_t seed, const char *in, const char *out) {
    enum { MAX_STEPS = 64 };
    eg_graph *chain[MAX_STEPS + 1] = {NULL}; /* each borrows from the one before */
    eg_ruleset *rs = NULL;
    eg_builtin_stats st = {0};
    matches l = {NULL, 0, 0};
    char err[EG_ERRLEN];
    int n = 0;
    if (steps < 0 || steps > MAX_STEPS) return fprintf(stderr, "fold_driver: 0 to %d steps\n", MAX_STEPS), 2;
    eg_status rc = eg_load(in, NULL, &chain[0], err, sizeof err);
    if (rc == EG_OK) rc = eg_ruleset_shipped(&rs, err, sizeof err);
    if (rc == EG_OK) rc = eg_builtin_pre(chain[0], &st, err, sizeof err);
    for (int k = 0; rc == EG_OK && k < steps; k++) {
        l.n = 0;
        if ((rc = eg_match_all(rs, chain[n], collect, &l)) != EG_OK || !l.n) break;
        /* a match eg_apply refuses (a cycle, a shape) gives way to the next */
        int first = (int)(next_rand(&seed) % (uint64_t)l.n), done = 0;
        for (int t = 0; t < l.n && !done && rc == EG_OK; t++) {
            const eg_match *m = &l.m[(first + t) % l.n];
            eg_graph *h = NULL;
            eg_status ar = eg_apply(rs, chain[n], m, &h, err, sizeof err);
            if (ar == EG_ENOMEM) rc = ar;
            if (ar != EG_OK) continue;
            chain[++n] = h, done = 1;
            printf("step %d: rule %u\n", k + 1, m->rule);
        }
        if (!done) break;
    }
    if (rc == EG_OK) rc = eg_builtin_post(chain[n], &st, err, sizeof err);
    if (rc == EG_OK) rc = eg_save(out, chain[n], err, sizeof err);
    if (rc != EG_OK) fprintf(stderr, "fold_driver: %s\n", err);
    printf("steps %d\n", n);
    for (int k = n; k >= 0; k--) eg_free(chain[k]);
    free(l.m);
    eg_ruleset_free(rs);
    return rc == EG_OK ? 0 : 2;
}

static int ranges(const char *in) {
    eg_graph *g = NULL;
    char err[EG_ERRLEN];
    eg_status rc = eg_load(in, NULL, &g, err, sizeof err);
    eg_range *r = rc == EG_OK ? malloc(sizeof *r * (size_t)(g->n_tensors + 1)) : NULL;
    if (rc != EG_OK || !r) {
        fprintf(stderr, "fold_driver: %s\n", rc != EG_OK ? err : "out of memory");
        eg_free(g);
        return 2;
    }
    eg_ranges(g, r);
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensor[t].dtype == EG_DT_FLOAT && eg_range_finite(r[t]))
            printf("%s %.9g %.9g\n", g->tensor[t].name, r[t].lo, r[t].hi);
    free(r);
    eg_free(g);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 6 && strcmp(argv[1], "--walk") == 0)
        return walk(atoi(argv[2]), strtoull(argv[3], NULL, 10), argv[4], argv[5]);
    if (argc == 3 && strcmp(argv[1], "--ranges") == 0) return ranges(argv[2]);
    if (argc == 3) return fold(argv[1], argv[2]);
    if (argc == 5 && strcmp(argv[1], "--eval") == 0) return eval(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: fold_driver IN.onnx OUT.onnx\n"
                    "       fold_driver --eval IN.onnx FEEDS.bin OUT.bin\n"
                    "       fold_driver --walk STEPS SEED IN.onnx OUT.onnx\n"
                    "       fold_driver --ranges IN.onnx\n");
    return 2;
}
