/* fuzz_read.c - libFuzzer target for the ruledb reader: any byte string must
 * give an error code or a file that validates, re-encodes and reads back
 * to the same bytes. Nothing touches the disk. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ruledb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Encode f, read it back, encode again: both encodings must be equal. */
static void check_roundtrip(const rdb_file *f) {
    uint8_t *b1 = NULL, *b2 = NULL;
    size_t n1, n2;
    rdb_file *g = NULL;
    char err[RDB_ERRLEN];
    if (rdb_validate(f, err, sizeof err) != RDB_OK) abort();
    if (rdb_write_mem(f, &b1, &n1, err, sizeof err) != RDB_OK) abort();
    if (rdb_read_mem(b1, n1, &g, err, sizeof err) != RDB_OK) abort();
    if (rdb_write_mem(g, &b2, &n2, err, sizeof err) != RDB_OK) abort();
    if (n1 != n2 || memcmp(b1, b2, n1) != 0) abort();
    free(b1);
    free(b2);
    rdb_free(g);
}

/* merge must accept anything the reader accepts, and be idempotent on
 * content once canonical: diff(m, merge(m, m)) is empty. */
static void check_merge(const rdb_file *f) {
    rdb_file *m = NULL, *mm = NULL;
    rdb_delta d;
    char err[RDB_ERRLEN];
    if (rdb_merge(f, f, &m, err, sizeof err) != RDB_OK) abort();
    if (rdb_validate(m, err, sizeof err) != RDB_OK) abort();
    if (rdb_merge(m, m, &mm, err, sizeof err) != RDB_OK) abort();
    if (rdb_diff(m, mm, &d) != RDB_OK || d.n_only_a || d.n_only_b) abort();
    rdb_delta_free(&d);
    rdb_free(m);
    rdb_free(mm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rdb_file *f = NULL;
    char err[RDB_ERRLEN];
    rdb_status rc = rdb_read_mem(data, size, &f, err, sizeof err);
    if (rc == RDB_OK) {
        check_roundtrip(f);
        check_merge(f);
    } else if (f != NULL || err[0] == '\0') {
        abort(); /* an error must come with a message and no file */
    }
    rdb_free(f);
    return 0;
}
