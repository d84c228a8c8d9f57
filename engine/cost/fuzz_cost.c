/* fuzz_cost.c - libFuzzer target for the cost cache reader (cost.h): any
 * byte string read as a cache file must load (EG_OK) or be refused with
 * EG_EFORMAT and a message naming the line; never a crash or a leak.
 * Read through fmemopen: nothing touches the disk. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "cost/cost_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    eg_cost *c = NULL;
    char err[EG_ERRLEN] = "";
    if (size == 0) return 0; /* fmemopen needs a buffer; an empty file is tested in C01 */
    if (eg_cost_new(EG_COST_ANALYTIC, NULL, &c, err, sizeof err) != EG_OK) abort();
    FILE *f = fmemopen((void *)(uintptr_t)data, size, "r");
    if (!f) abort();
    int rc = eg_cost_load_stream(c, f, "fuzz", err, sizeof err);
    fclose(f);
    if (rc != EG_OK && rc != EG_EFORMAT) abort();
    if (rc == EG_EFORMAT && strncmp(err, "fuzz:", 5) != 0) abort();
    eg_cost_free(c);
    return 0;
}
