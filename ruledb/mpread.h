/* mpread.h - a bounds-checked msgpack reader cursor over a byte buffer
 * (prefix mpr_).
 *
 * Why not msgpack-c's unpacker: it allocates an array from the element
 * count in its header before it has seen the elements, so a 10-byte hostile
 * file can ask for gigabytes. This cursor never allocates. Every count and
 * length is checked against the bytes left: a str/bin of n bytes needs n
 * bytes, an array of n elements at least n bytes (one per element), a map
 * of n pairs at least 2n. Every read returns a status; the first failure is
 * sticky (later reads return it at once) and remembers its byte offset, so
 * a parser can run a sequence of reads and check once.
 *
 * Example: read {"a": [1, 2]}
 *
 *     mpr_cursor c;
 *     uint32_t n, m;
 *     const char *key; uint32_t klen;
 *     uint64_t v;
 *     mpr_init(&c, buf, len);
 *     mpr_map(&c, &n);                        // n == 1
 *     mpr_str(&c, &key, &klen);               // "a", not NUL-terminated
 *     mpr_array(&c, &m);                      // m == 2
 *     for (uint32_t i = 0; i < m; i++) mpr_uint(&c, &v);
 *     if (c.err) fprintf(stderr, "byte %zu: %s\n", c.err_pos, mpr_strerror(c.err));
 *
 * Writing is msgpack-c's job (msgpack_packer); this is the reading side.
 */
#ifndef MPREAD_H
#define MPREAD_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    MPR_OK = 0,
    MPR_ETRUNC, /* the buffer ends inside an object */
    MPR_ECOUNT, /* a count or length claims more than the bytes left */
    MPR_ETYPE,  /* the next object has another type than asked */
    MPR_ERANGE, /* an integer that does not fit, a string too long */
    MPR_EBAD    /* a byte that starts no msgpack object (0xc1), or too deep */
} mpr_status;

typedef enum {
    MPR_NIL,
    MPR_BOOL,
    MPR_UINT, /* non-negative integer (any width) */
    MPR_INT,  /* negative integer */
    MPR_FLOAT,
    MPR_STR,
    MPR_BIN,
    MPR_ARRAY,
    MPR_MAP,
    MPR_EXT
} mpr_type;

typedef struct {
    const uint8_t *buf;
    size_t len;
    size_t pos;
    mpr_status err; /* first failure, sticky */
    size_t err_pos; /* offset of the object that failed */
} mpr_cursor;

void mpr_init(mpr_cursor *c, const uint8_t *buf, size_t len);

/* Bytes not yet read. */
size_t mpr_left(const mpr_cursor *c);

/* A short English description ("truncated", ...). */
const char *mpr_strerror(mpr_status s);

/* The type of the next object, without consuming it. @return status */
mpr_status mpr_peek(mpr_cursor *c, mpr_type *t);

/* Each reader consumes one object of its type; on failure the cursor is
 * left in the sticky error state and *out is untouched. */
mpr_status mpr_nil(mpr_cursor *c);
mpr_status mpr_bool(mpr_cursor *c, int *v);
/* Any integer encoding whose value is >= 0 and fits. */
mpr_status mpr_uint(mpr_cursor *c, uint64_t *v);
/* Any integer encoding whose value fits an int64. */
mpr_status mpr_int(mpr_cursor *c, int64_t *v);
/* float32, float64 (integers are not converted). */
mpr_status mpr_double(mpr_cursor *c, double *v);
/* *s points into the buffer (not NUL-terminated). */
mpr_status mpr_str(mpr_cursor *c, const char **s, uint32_t *len);
mpr_status mpr_bin(mpr_cursor *c, const uint8_t **p, uint32_t *len);
/* Headers: the n elements (2n for a map) follow. */
mpr_status mpr_array(mpr_cursor *c, uint32_t *n);
mpr_status mpr_map(mpr_cursor *c, uint32_t *n);

/* A str copied into dst with a NUL; ERANGE when it has cap bytes or more or
 * holds a NUL byte. */
mpr_status mpr_str_copy(mpr_cursor *c, char *dst, size_t cap);

/* Skip one whole object, nested ones included, without recursion.
 * @return status */
mpr_status mpr_skip(mpr_cursor *c);

/* Record a failure at the current position (if none yet); for callers whose
 * own checks fail (a value out of range). @return c->err */
mpr_status mpr_fail(mpr_cursor *c, mpr_status s);

#endif
