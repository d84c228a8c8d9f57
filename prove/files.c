/* files.c - prove's input files: the axioms, a ruledb file of the kind a
 * mode needs, a file's digest for the notes that record what a run read.
 * Apart from the pipeline (run.c) so the modes that only read files
 * (derive.c, known.c, check.c, shard.c) do not depend on it. */
#include <stdio.h>
#include <xxhash.h>

#include "prove.h"
#include "runfile.h"

int pv_load_axioms(const char *path, ax_set *out, char *err, size_t errlen) {
    char aerr[AX_ERRLEN];
    int rc = ax_parse_file(path, out, aerr);
    if (rc == AX_OK) return PV_OK;
    snprintf(err, errlen, "%s", aerr);
    return rc == AX_ENOMEM ? PV_ENOMEM : PV_EINPUT;
}

int pv_read_kind(const char *path, rdb_kind kind, rdb_file **f, char *err, size_t errlen) {
    char rerr[RDB_ERRLEN];
    rdb_status s = rdb_read(path, f, rerr, sizeof rerr);
    if (s != RDB_OK) {
        snprintf(err, errlen, "%s (%s)", rerr, rdb_strerror(s));
        return s == RDB_ENOMEM ? PV_ENOMEM : PV_EINPUT;
    }
    if ((*f)->kind == kind) return PV_OK;
    snprintf(err, errlen, "%s: a %s file, not %s", path, rdb_kind_name((*f)->kind),
             kind == RDB_RULES ? "a rules file" : "a candidates file");
    rdb_free(*f);
    *f = NULL;
    return PV_EINPUT;
}

/* XXH64 of a file's bytes, for the record of which axioms were used. */
int pv_file_digest(const char *path, uint64_t *h) {
    FILE *f = fopen(path, "rb");
    XXH64_state_t *s = XXH64_createState();
    char buf[4096];
    size_t n;
    int rc = -1;
    if (f && s && XXH64_reset(s, 0) == XXH_OK) {
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) XXH64_update(s, buf, n);
        if (!ferror(f)) *h = XXH64_digest(s), rc = 0;
    }
    if (f) fclose(f);
    XXH64_freeState(s);
    return rc;
}
