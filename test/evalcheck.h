/* evalcheck.h - the property every rewrite test asserts (prefix ec_): the
 * graph after a rule, a built-in rewrite or a search computes the same
 * outputs as the graph before, on the same seeded random inputs, evaluated
 * with the engine's float kernels (eg_eval_graph, geval.h). Outputs pair by
 * position and must keep their names and shapes; values agree when the
 * largest |before - after| is at most EC_TOL times the largest |before|
 * (EC_TOL absolute for an all-zero output). Include after <cmocka.h>.
 *
 *     ec_values v0;
 *     ec_eval_ok(g, 1, &v0);              // before: must evaluate
 *     ... rewrite g (in place or into h) ...
 *     ec_assert_same(&v0, g, "E5 after eg_builtin_pre");
 *     ec_free(&v0);
 */
#ifndef TEST_EVALCHECK_H
#define TEST_EVALCHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold/geval.h"

#define EC_TOL 1e-4

/* The corpus models (test/corpus/onnx/) eg_eval_graph can run, as table
 * rows with ids: the built-in and optimize tests run on each. Not here:
 * opaque.onnx and old_opset.onnx (operators kept opaque), inception.onnx
 * (a symbolic batch dim), reg_odd_values.onnx (non-float outputs). */
typedef struct {
    const char *id, *file;
} ec_model;

static const ec_model ec_models[] = {
    {"E1 attention", "attention.onnx"},       {"E2 conv_bn_relu", "conv_bn_relu.onnx"},
    {"E3 convs", "convs.onnx"},               {"E4 mixed", "mixed.onnx"},
    {"E5 fold_conv_bn", "fold_conv_bn.onnx"}, {"E6 fold_conv_bias", "fold_conv_bias.onnx"},
    {"E7 fold_matmul3", "fold_matmul3.onnx"}, {"E8 reg_ir3", "reg_ir3.onnx"},
    {"E9 reg_unsorted", "reg_unsorted.onnx"},
};
#define EC_N_MODELS (sizeof ec_models / sizeof ec_models[0])

/* A graph's outputs on the inputs of one seed, with the names and shapes
 * they had (a rewrite in place may change the graph afterwards). */
typedef struct {
    uint64_t seed;
    int n;           /* graph outputs */
    float **out;     /* [n], each the numel of that output's shape */
    char **name;     /* [n] */
    eg_shape *shape; /* [n] */
} ec_values;

static inline uint64_t ec_mix(uint64_t x) { /* splitmix64's finaliser */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Input values in [-1, 1) from the seed and the input's name alone, so two
 * graphs with the same inputs get the same values in any order. */
static inline float *ec_input(const eg_tensor *t, uint64_t seed) {
    int64_t n = eg_shape_numel(&t->shape);
    uint64_t h = seed;
    for (const char *c = t->name; *c; c++) h = ec_mix(h ^ (unsigned char)*c);
    float *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; v && i < n; i++) v[i] = (float)((ec_mix(h + (uint64_t)i) >> 40) / 8388608.0 - 1.0);
    return v;
}

static inline void ec_free(ec_values *v) {
    for (int k = 0; k < v->n; k++) {
        if (v->out) free(v->out[k]);
        if (v->name) free(v->name[k]);
    }
    free(v->out), free(v->name), free(v->shape);
    v->out = NULL, v->name = NULL, v->shape = NULL, v->n = 0;
}

/* Record g's output names and shapes. @return 0, or -1 out of memory. */
static inline int ec_outputs(const eg_graph *g, ec_values *v) {
    v->out = calloc((size_t)g->n_outputs + 1, sizeof *v->out);
    v->name = calloc((size_t)g->n_outputs + 1, sizeof *v->name);
    v->shape = calloc((size_t)g->n_outputs + 1, sizeof *v->shape);
    if (!v->out || !v->name || !v->shape) return -1;
    for (int k = 0; k < g->n_outputs; k++) {
        v->shape[k] = g->tensor[g->output[k]].shape;
        if (!(v->name[k] = strdup(g->tensor[g->output[k]].name))) return -1;
    }
    return 0;
}

/* Evaluate g on the inputs of seed. @return as eg_eval_graph (EG_ENOMEM
 * also when the inputs cannot be made). */
static inline eg_status ec_eval(const eg_graph *g, uint64_t seed, ec_values *v, char *err,
                                size_t errlen) {
    float **in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    eg_status rc = in ? EG_OK : EG_ENOMEM;
    v->seed = seed, v->n = g->n_outputs;
    if (ec_outputs(g, v)) rc = EG_ENOMEM;
    for (int k = 0; rc == EG_OK && k < g->n_inputs; k++) {
        const eg_tensor *t = &g->tensor[g->input[k]];
        if (eg_shape_numel(&t->shape) < 0) break; /* eg_eval_graph names it */
        if (!(in[k] = ec_input(t, seed))) rc = EG_ENOMEM;
    }
    if (rc == EG_OK) rc = eg_eval_graph(g, (const float *const *)in, v->out, err, errlen);
    if (rc == EG_ENOMEM && err && errlen && !err[0]) snprintf(err, errlen, "out of memory");
    for (int k = 0; in && k < g->n_inputs; k++) free(in[k]);
    free(in);
    if (rc != EG_OK) ec_free(v);
    return rc;
}

/* ec_eval that must succeed with finite values: the tests use graphs it
 * can evaluate and that do not overflow (an inf or NaN before a rewrite
 * would make any comparison after it meaningless). */
static inline void ec_eval_ok(const eg_graph *g, uint64_t seed, ec_values *v) {
    char err[EG_ERRLEN] = "";
    if (ec_eval(g, seed, v, err, sizeof err) != EG_OK) fail_msg("cannot evaluate: %s", err);
    for (int k = 0; k < v->n; k++)
        for (int64_t i = 0; i < eg_shape_numel(&v->shape[k]); i++)
            if (!isfinite(v->out[k][i]))
                fail_msg("output '%s' cell %lld is %g: the test graph overflows", v->name[k],
                         (long long)i, (double)v->out[k][i]);
}

/* Output k of a against b: the largest error relative to max |a|. */
static inline double ec_rel_error(const float *a, const float *b, int64_t n, int64_t *worst) {
    double amax = 0, emax = 0;
    *worst = 0;
    for (int64_t i = 0; i < n; i++) amax = fabs(a[i]) > amax ? fabs(a[i]) : amax;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= emax)) emax = e, *worst = i; /* NaN counts as worst */
    }
    return emax / (amax > 0 ? amax : 1.0);
}

/* Do the values a (before) and b (after) differ: an output's name, its
 * shape, or a value beyond EC_TOL? @return 0 when they agree; 1 with the
 * first differing output named in msg. */
static inline int ec_differ(const ec_values *a, const ec_values *b, char *msg, size_t len) {
    char sa[160], sb[160];
    if (a->n != b->n) {
        snprintf(msg, len, "%d outputs, then %d", a->n, b->n);
        return 1;
    }
    for (int k = 0; k < a->n; k++) {
        int64_t worst;
        eg_shape_str(&a->shape[k], NULL, sa, sizeof sa);
        eg_shape_str(&b->shape[k], NULL, sb, sizeof sb);
        if (strcmp(a->name[k], b->name[k]) || strcmp(sa, sb)) {
            snprintf(msg, len, "output %d: '%s' %s, then '%s' %s", k, a->name[k], sa, b->name[k], sb);
            return 1;
        }
        double e = ec_rel_error(a->out[k], b->out[k], eg_shape_numel(&a->shape[k]), &worst);
        if (!(e <= EC_TOL)) {
            snprintf(msg, len, "output '%s': relative error %.3g > %g (cell %lld: %g, then %g)",
                     a->name[k], e, EC_TOL, (long long)worst, (double)a->out[k][worst],
                     (double)b->out[k][worst]);
            return 1;
        }
    }
    return 0;
}

/* Assert that h computes the values v recorded (on v's seed). */
static inline void ec_assert_same(const ec_values *v, const eg_graph *h, const char *id) {
    ec_values w;
    char msg[EG_ERRLEN + 64] = "";
    if (ec_eval(h, v->seed, &w, msg, sizeof msg) != EG_OK) fail_msg("%s: after: %s", id, msg);
    int bad = ec_differ(v, &w, msg, sizeof msg);
    ec_free(&w);
    if (bad) fail_msg("%s: %s", id, msg);
}

/* Evaluate g, then assert h computes the same: for a one-off rewrite
 * into a new graph. */
static inline void ec_check(const eg_graph *g, const eg_graph *h, const char *id) {
    ec_values v;
    ec_eval_ok(g, 1, &v);
    ec_assert_same(&v, h, id);
    ec_free(&v);
}

#endif
