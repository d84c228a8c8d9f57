/* rdb_int.h - private to ruledb.c, rdb_read.c, rdb_write.c and rdb_merge.c:
 * the helpers they share (prefix rdb__). Not part of the public API. */
#ifndef RDB_INT_H
#define RDB_INT_H

#include <stddef.h>

#include "ruledb.h"

/* Each rdb_proof's name in the file, indexed by rdb_proof. ORDER PROOF */
extern const char *const rdb__proof_names[RDB_PROOF_COUNT];

/* Format a message into err (when given) and return code. */
rdb_status rdb__efmt(char *err, size_t errlen, rdb_status code, const char *fmt, ...);

/* arr with room for element n (doubling; NULL when out of memory, arr untouched). */
void *rdb__reserve(void *arr, size_t *cap, size_t n, size_t elsize);

#endif
