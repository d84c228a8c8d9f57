/* afile.h - files replaced whole or not at all (prefix af_): written to
 * PATH.tmp.PID, flushed to disk, renamed over PATH, the directory synced.
 * A reader never sees half a file and a failure leaves PATH as it was and
 * no temporary behind. The one atomic writer of the project: the ruledb,
 * synth's shard files, the engine's models, cost and verify caches.
 *
 * Example:
 *
 *     af_file a;
 *     if (af_open(&a, path) != 0) return fail(strerror(errno));
 *     fprintf(a.f, "...");
 *     if (af_commit(&a) != 0) return fail(strerror(errno));
 */
#ifndef AFILE_H
#define AFILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f;   /* write here (binary mode) */
    char *path, *tmp;
} af_file;

/* Create path's temporary file for writing.
 * @return 0, or -1 with errno set (nothing left behind). */
int af_open(af_file *a, const char *path);

/* Flush, fsync and close the temporary file, rename it over path and sync
 * the directory. A write error on a.f is caught here.
 * @return 0, or -1 with errno set and the temporary removed. */
int af_commit(af_file *a);

/* Close and remove the temporary file; path is left as it was. */
void af_abort(af_file *a);

/* len bytes of buf as path's whole content (af_open, fwrite, af_commit).
 * @return 0, or -1 with errno set. */
int af_write(const char *path, const void *buf, size_t len);

#endif
