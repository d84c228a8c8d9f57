/* fold_driver.c - test driver for fold.h and geval.h. The first form loads
 * IN, runs eg_builtin_pre then eg_builtin_post (no search in between),
 * saves OUT and prints the counts. The second evaluates IN with
 * eg_eval_graph on the graph inputs read from FEEDS (float32, native byte
 * order, each input's values in graph input order; an input that is also
 * an initializer takes the initializer) and writes every graph output the
 * same way to OUT. Used by test/engine_fold_test.py, which holds the
 * evaluator to onnxruntime.
 *
 *     fold_driver IN.onnx OUT.onnx
 *     fold_driver --eval IN.onnx FEEDS.bin OUT.bin
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "fold.h"
#include "geval.h"

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
               "reshapes_cancelled %d dead_removed %d weights_folded %d\n",
               st.bn_folded, st.bias_split, st.identity_removed, st.cse_merged,
               st.reshapes_cancelled, st.dead_removed, st.weights_folded);
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

int main(int argc, char **argv) {
    if (argc == 3) return fold(argv[1], argv[2]);
    if (argc == 5 && strcmp(argv[1], "--eval") == 0) return eval(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: fold_driver IN.onnx OUT.onnx\n"
                    "       fold_driver --eval IN.onnx FEEDS.bin OUT.bin\n");
    return 2;
}
