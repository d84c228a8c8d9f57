/* known.c - the candidate pairs a ruledb's rules already derive (known.h). */
#include "known.h"

#include <stdio.h>
#include <string.h>

#include "derive.h"
#include "runfile.h"

int kn_open(const char *path, const pv_derive_options *d, kn_set *k, char *err, size_t errlen) {
    rdb_file *f = NULL;
    char why[EG_ERRLEN] = "";
    memset(k, 0, sizeof *k);
    int rc = pv_read_kind(path, RDB_RULES, &f, err, errlen);
    if (rc != PV_OK) return rc;
    k->bounds = pv_derive_bounds(d, f);
    pv_derive_engine_opts(&k->bounds, &k->o);
    if (pv_file_digest(path, &k->digest) != 0) {
        snprintf(err, errlen, "%s: cannot read", path);
        rc = PV_EINPUT;
    } else if (eg_ruleset_from_rdb(f, &k->rs, why, sizeof why) != EG_OK) {
        snprintf(err, errlen, "%s: %s", path, why);
        rc = PV_EINPUT;
    }
    rdb_free(f);
    if (rc != PV_OK) kn_close(k);
    return rc;
}

int kn_derives(const void *arg, const rg_graph *a, const rg_graph *b) {
    const kn_set *k = arg;
    char why[EG_ERRLEN];
    int derived = 0;
    if (eg_derive_pair(k->rs, a, b, NULL, &k->o, (eg_derive_mode)k->bounds.mode, &derived, why, sizeof why) != EG_OK)
        return -1;
    return derived;
}

void kn_note(const kn_set *k, char *buf, size_t len) {
    snprintf(buf, len, "known xxh64=%016llx rounds=%d nodes=%d by=%s", (unsigned long long)k->digest, k->bounds.rounds,
             k->bounds.nodes, pv_derive_mode_names[k->bounds.mode]);
}

void kn_close(kn_set *k) {
    eg_ruleset_free(k->rs);
    memset(k, 0, sizeof *k);
}
