/* afile.c - atomic replacement of a file (afile.h). */
#include "afile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void release(af_file *a) {
    free(a->path), free(a->tmp);
    a->path = a->tmp = NULL, a->f = NULL;
}

int af_open(af_file *a, const char *path) {
    size_t n = strlen(path) + 32;
    a->f = NULL;
    a->path = strdup(path), a->tmp = malloc(n);
    if (!a->path || !a->tmp) {
        release(a);
        errno = ENOMEM;
        return -1;
    }
    snprintf(a->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    if (!(a->f = fopen(a->tmp, "wb"))) {
        int e = errno;
        release(a);
        errno = e;
        return -1;
    }
    return 0;
}

/* fsync the directory holding path, so the rename itself is durable. Best
 * effort: some file systems refuse fsync on directories. */
static void sync_dir(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

int af_commit(af_file *a) {
    int bad = ferror(a->f) || fflush(a->f) != 0 || fsync(fileno(a->f)) != 0;
    int e = bad ? (errno ? errno : EIO) : 0;
    if (fclose(a->f) != 0 && !bad) bad = 1, e = errno;
    a->f = NULL;
    if (!bad && rename(a->tmp, a->path) != 0) bad = 1, e = errno;
    if (bad) unlink(a->tmp);
    else sync_dir(a->path);
    release(a);
    errno = e;
    return bad ? -1 : 0;
}

void af_abort(af_file *a) {
    if (a->f) fclose(a->f);
    if (a->tmp) unlink(a->tmp);
    release(a);
}

int af_write(const char *path, const void *buf, size_t len) {
    af_file a;
    if (af_open(&a, path) != 0) return -1;
    if (len && fwrite(buf, 1, len, a.f) != len) {
        int e = errno ? errno : EIO;
        af_abort(&a);
        errno = e;
        return -1;
    }
    return af_commit(&a);
}
