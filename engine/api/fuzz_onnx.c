/* fuzz_onnx.c - libFuzzer target for the ONNX reader and writer: any byte
 * string must give an error code with a message, or a graph that exports,
 * imports again, and exports to the same bytes (export is a fixed point
 * after one round). Each input is also read with the symbolic dim "N"
 * pinned (--dim N=3): a graph or an error with a message again. The
 * decoder's memory cap keeps every input within
 * libFuzzer's -malloc_limit_mb=512. Nothing touches the disk. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const eg_load_opts fuzz_opts = {0, (size_t)256 << 20, 0, NULL, 0};
static const eg_dim_value pin_n = {"N", 3};
static const eg_load_opts pinned_opts = {0, (size_t)256 << 20, 0, &pin_n, 1};

static void check_roundtrip(const eg_graph *g) {
    uint8_t *b1 = NULL, *b2 = NULL;
    size_t n1, n2;
    eg_graph *h = NULL;
    char err[EG_ERRLEN];
    if (eg_save_mem(g, &b1, &n1, err, sizeof err) != EG_OK) abort();
    if (eg_load_mem(b1, n1, "export", &fuzz_opts, &h, err, sizeof err) != EG_OK) abort();
    if (eg_save_mem(h, &b2, &n2, err, sizeof err) != EG_OK) abort();
    if (n1 != n2 || memcmp(b1, b2, n1) != 0) abort();
    free(b1);
    free(b2);
    eg_free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    eg_graph *g = NULL;
    char err[EG_ERRLEN];
    err[0] = '\0';
    eg_status rc = eg_load_mem(data, size, "fuzz", &fuzz_opts, &g, err, sizeof err);
    if (rc == EG_OK) check_roundtrip(g);
    else if (g != NULL || err[0] == '\0') abort(); /* an error needs a message and no graph */
    eg_free(g);
    g = NULL, err[0] = '\0';
    rc = eg_load_mem(data, size, "fuzz", &pinned_opts, &g, err, sizeof err);
    if (rc == EG_OK) check_roundtrip(g);
    else if (g != NULL || err[0] == '\0') abort();
    eg_free(g);
    return 0;
}
