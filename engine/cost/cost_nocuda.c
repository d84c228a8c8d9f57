/* cost_nocuda.c - the CUDA cost backend's entry points in a build without
 * nvcc (see cost_impl.h): eg_cost_new(EG_COST_CUDA) reports it. */
#include <stdio.h>

#include "cost/cost_impl.h"

int eg_cost_cuda_new(eg_cost_cuda **out, char *machine, size_t mlen, char *err,
                     size_t errlen) {
    *out = NULL;
    if (mlen) machine[0] = '\0';
    snprintf(err, errlen,
             "no CUDA device: use --cost analytic or cpu (this build has no CUDA: "
             "re-run ./configure where nvcc exists)");
    return -1;
}

double eg_cost_cuda_time(eg_cost_cuda *c, const eg_cost_kern *k) {
    (void)c, (void)k;
    return -1;
}

void eg_cost_cuda_free(eg_cost_cuda *c) { (void)c; }
