/* profile.c - the per-axiom instance profile of a list of checks; see
 * profile.h. */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

int ap_run(const ax_set *ax, const tg_plan *plan, const ap_check *checks, size_t n,
           const ze_limits *lim, int skip, ap_profile *out, char *err, size_t errlen) {
    ze_ctx *z = NULL;
    char why[ZE_WHYLEN];
    memset(out, 0, sizeof *out);
    out->n_axioms = ax->n_axioms;
    out->z.instances = calloc((size_t)ax->n_axioms + 1, sizeof *out->z.instances);
    if (!out->z.instances) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (ze_open(ax, plan, &z, err, errlen) != 0) {
        ap_free(out);
        return -1;
    }
    ze_profile_begin(z, lim, skip, &out->z);
    for (size_t i = 0; i < n; i++)
        out->proved += ze_prove_graphs(z, checks[i].a, checks[i].b, lim, why) == ZE_PROVED;
    ze_profile_end(z);
    ze_close(z);
    return 0;
}

void ap_free(ap_profile *p) {
    free(p->z.instances);
    memset(p, 0, sizeof *p);
}

uint64_t ap_total(const ap_profile *p) {
    uint64_t t = 0;
    for (int i = 0; i < p->n_axioms; i++) t += p->z.instances[i];
    return t;
}

int ap_top(const ap_profile *p, int k, int *idx) {
    int n = 0;
    for (int i = 0; i < p->n_axioms; i++) {
        if (p->z.instances[i] == 0) continue;
        /* insertion into the sorted prefix: strictly more instances go first,
         * so among equals the earlier axiom stays ahead */
        int at = n < k ? n : k;
        while (at > 0 && p->z.instances[idx[at - 1]] < p->z.instances[i]) at--;
        if (at >= k) continue;
        for (int j = (n < k ? n : k - 1); j > at; j--) idx[j] = idx[j - 1];
        idx[at] = i;
        if (n < k) n++;
    }
    return n;
}

void ap_print_top(FILE *f, const ax_set *ax, const ap_profile *p) {
    int idx[AP_TOP];
    int n = ap_top(p, AP_TOP, idx);
    uint64_t total = ap_total(p);
    if (n == 0) fprintf(f, "no axiom instances");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s %.0f%%", i ? ", " : "", ax->axiom[idx[i]].name,
                100.0 * (double)p->z.instances[idx[i]] / (double)total);
}
