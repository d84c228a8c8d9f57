/* onnx_pb.c - protobuf plumbing for the ONNX reader and writer: the
 * memory-capped allocator, the depth-limited wire check, byte buffers,
 * bounded file reads and atomic writes. */
#include "proto/onnx_pb.h"

#include "afile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ================= capped allocator ================= */

/* Each block carries its size in front, so free can give it back to the
 * budget; the header keeps max_align_t alignment for the payload. */
#define HDR ((sizeof(size_t) + alignof(max_align_t) - 1) / alignof(max_align_t) * alignof(max_align_t))

static void *cap_alloc(void *data, size_t n) {
    egp_alloc *a = data;
    if (n > a->cap - a->used || n > SIZE_MAX - HDR) {
        a->failed = 1;
        return NULL;
    }
    unsigned char *p = malloc(HDR + n);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    a->used += n;
    if (a->used > a->peak) a->peak = a->used;
    return p + HDR;
}

static void cap_free(void *data, void *ptr) {
    egp_alloc *a = data;
    size_t n;
    if (!ptr) return;
    unsigned char *p = (unsigned char *)ptr - HDR;
    memcpy(&n, p, sizeof n);
    a->used -= n;
    free(p);
}

void egp_alloc_init(egp_alloc *a, size_t cap) {
    memset(a, 0, sizeof *a);
    a->pc.alloc = cap_alloc;
    a->pc.free = cap_free;
    a->pc.allocator_data = a;
    a->cap = cap;
}

/* ================= wire check ================= */

typedef struct {
    const uint8_t *base;
    char *err;
    size_t errlen;
    int max_depth;
} wire_ctx;

static eg_status wire_fail(const wire_ctx *w, eg_status rc, const uint8_t *at, const char *why) {
    if (w->err && w->errlen)
        snprintf(w->err, w->errlen, "byte %zu: %s", (size_t)(at - w->base), why);
    return rc;
}

/* Read a varint at *p (< end). @return 0, or -1 when truncated/too long. */
static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

static eg_status check_msg(const wire_ctx *w, const uint8_t *p, const uint8_t *end,
                           const ProtobufCMessageDescriptor *d, int depth);

/* One length-delimited field: recurse when the descriptor says message. */
static eg_status check_bytes_field(const wire_ctx *w, const uint8_t **p, const uint8_t *end,
                                   const ProtobufCFieldDescriptor *f, int depth) {
    uint64_t n;
    const uint8_t *at = *p;
    if (read_varint(p, end, &n)) return wire_fail(w, EG_EFORMAT, at, "truncated length");
    if (n > (uint64_t)(end - *p)) return wire_fail(w, EG_EFORMAT, at, "length past the end");
    const uint8_t *sub = *p;
    *p += n;
    if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE) return EG_OK;
    if (depth + 1 > w->max_depth)
        return wire_fail(w, EG_ELIMIT, at, "messages nested too deeply");
    return check_msg(w, sub, sub + n, f->descriptor, depth + 1);
}

/* Skip a field's payload by wire type. */
static eg_status skip_field(const wire_ctx *w, const uint8_t **p, const uint8_t *end, int wt) {
    uint64_t v;
    const uint8_t *at = *p;
    switch (wt) {
    case 0:
        return read_varint(p, end, &v) ? wire_fail(w, EG_EFORMAT, at, "truncated varint") : EG_OK;
    case 1:
    case 5: {
        size_t n = wt == 1 ? 8 : 4;
        if ((size_t)(end - *p) < n) return wire_fail(w, EG_EFORMAT, at, "truncated fixed field");
        *p += n;
        return EG_OK;
    }
    default: /* 3/4 are proto2 groups, which onnx.proto never uses */
        return wire_fail(w, EG_EFORMAT, at, "bad wire type");
    }
}

static eg_status check_msg(const wire_ctx *w, const uint8_t *p, const uint8_t *end,
                           const ProtobufCMessageDescriptor *d, int depth) {
    while (p < end) {
        uint64_t tag;
        const uint8_t *at = p;
        if (read_varint(&p, end, &tag)) return wire_fail(w, EG_EFORMAT, at, "truncated tag");
        if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
            return wire_fail(w, EG_EFORMAT, at, "bad field number");
        int wt = (int)(tag & 7);
        eg_status rc;
        if (wt == 2) {
            const ProtobufCFieldDescriptor *f =
                protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3));
            rc = check_bytes_field(w, &p, end, f, depth);
        } else
            rc = skip_field(w, &p, end, wt);
        if (rc != EG_OK) return rc;
    }
    return EG_OK;
}

eg_status egp_check_wire(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *d,
                         int max_depth, char *err, size_t errlen) {
    wire_ctx w = {buf, err, errlen, max_depth};
    return check_msg(&w, buf, buf + len, d, 1);
}

eg_status egp_unpack(const ProtobufCMessageDescriptor *d, egp_alloc *a, int max_depth,
                     const uint8_t *buf, size_t len, ProtobufCMessage **out, char *err,
                     size_t errlen) {
    eg_status rc = egp_check_wire(buf, len, d, max_depth, err, errlen);
    if (rc != EG_OK) return rc;
    a->failed = 0;
    *out = protobuf_c_message_unpack(d, &a->pc, len, buf);
    if (*out) return EG_OK;
    if (a->failed) {
        snprintf(err, errlen, "decoding needs more than the %zu MB memory cap", a->cap >> 20);
        return EG_ELIMIT;
    }
    /* the wire was fine, so protobuf-c refused a value: a bad enum, a
     * missing required field, invalid UTF-8... or malloc failed */
    snprintf(err, errlen, "not a valid %s message", d->name);
    return EG_EFORMAT;
}

eg_status egp_pack(const ProtobufCMessage *msg, uint8_t **buf, size_t *len) {
    *len = protobuf_c_message_get_packed_size(msg);
    *buf = malloc(*len ? *len : 1);
    if (!*buf) return EG_ENOMEM;
    protobuf_c_message_pack(msg, *buf);
    return EG_OK;
}

/* ================= buffers ================= */

static int buf_reserve(egp_buf *b, size_t n) {
    if (b->oom) return -1;
    if (n <= b->cap - b->len) return 0;
    size_t need = b->len + n, cap = b->cap ? b->cap : 4096;
    if (need < b->len) return b->oom = 1, -1;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) return b->oom = 1, -1;
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p) return b->oom = 1, -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

void egp_buf_put(egp_buf *b, const void *data, size_t n) {
    if (n == 0 || buf_reserve(b, n)) return;
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

void egp_buf_varint(egp_buf *b, uint64_t v) {
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    egp_buf_put(b, tmp, n);
}

void egp_buf_field(egp_buf *b, uint32_t field, const void *data, size_t n) {
    egp_buf_varint(b, (uint64_t)field << 3 | 2);
    egp_buf_varint(b, n);
    egp_buf_put(b, data, n);
}

void egp_buf_message(egp_buf *b, uint32_t field, const ProtobufCMessage *msg) {
    size_t n = protobuf_c_message_get_packed_size(msg);
    egp_buf_varint(b, (uint64_t)field << 3 | 2);
    egp_buf_varint(b, n);
    if (n == 0 || buf_reserve(b, n)) return;
    protobuf_c_message_pack(msg, b->p + b->len);
    b->len += n;
}

/* ================= files ================= */

/* Read everything from fd; the file may be a pipe, so grow as needed. */
static eg_status read_all(int fd, size_t max, egp_buf *b) {
    for (;;) {
        if (buf_reserve(b, 1 << 16)) return EG_ENOMEM;
        ssize_t k = read(fd, b->p + b->len, b->cap - b->len);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return EG_EIO;
        if (k == 0) return EG_OK;
        b->len += (size_t)k;
        if (b->len > max) return EG_ELIMIT;
    }
}

eg_status egp_read_file(const char *path, size_t max, uint8_t **buf, size_t *len, char *err,
                        size_t errlen) {
    egp_buf b = {0};
    struct stat st;
    eg_status rc = EG_OK;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return EG_EIO;
    }
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) rc = EG_EIO, errno = EISDIR;
    else if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > max)
        rc = EG_ELIMIT;
    if (rc == EG_OK) rc = read_all(fd, max, &b);
    if (rc == EG_EIO) snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    if (rc == EG_ELIMIT) snprintf(err, errlen, "%s: larger than the limit of %zu bytes", path, max);
    if (rc == EG_ENOMEM) snprintf(err, errlen, "%s: out of memory reading it", path);
    close(fd);
    if (rc != EG_OK) {
        free(b.p);
        return rc;
    }
    *buf = b.p;
    *len = b.len;
    return EG_OK;
}

eg_status egp_read_range(const char *path, uint64_t offset, uint64_t length, uint8_t **buf, char *err,
                         size_t errlen) {
    struct stat st;
    eg_status rc = EG_OK;
    uint8_t *p = NULL;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return EG_EIO;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        rc = EG_EIO;
    } else if (offset > (uint64_t)st.st_size || length > (uint64_t)st.st_size - offset) {
        snprintf(err, errlen, "%s: bytes %llu..%llu asked for, the file has %llu", path,
                 (unsigned long long)offset, (unsigned long long)(offset + length), (unsigned long long)st.st_size);
        rc = EG_EFORMAT;
    } else if (length > SIZE_MAX - 1 || !(p = malloc(length ? (size_t)length : 1))) {
        snprintf(err, errlen, "%s: out of memory for %llu bytes", path, (unsigned long long)length);
        rc = EG_ENOMEM;
    }
    for (uint64_t done = 0; rc == EG_OK && done < length;) {
        ssize_t k = pread(fd, p + done, length - done > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)(length - done),
                          (off_t)(offset + done));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            snprintf(err, errlen, "%s: cannot read: %s", path, k < 0 ? strerror(errno) : "it ended early");
            rc = EG_EIO;
        }
        done += k > 0 ? (uint64_t)k : 0;
    }
    close(fd);
    if (rc != EG_OK) {
        free(p);
        return rc;
    }
    *buf = p;
    return EG_OK;
}

eg_status egp_write_file(const char *path, const uint8_t *buf, size_t len, char *err,
                         size_t errlen) {
    if (af_write(path, buf, len) == 0) return EG_OK;
    return eg_errf(err, errlen, errno == ENOMEM ? EG_ENOMEM : EG_EIO, "%s: cannot write: %s", path, strerror(errno));
}
