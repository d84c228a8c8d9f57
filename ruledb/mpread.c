/* mpread.c - bounds-checked msgpack reader cursor; see mpread.h. Every
 * object is first decoded into a header (type, value or length, header
 * size) without consuming anything; the typed readers then check the type
 * and the payload against the bytes left before advancing. */
#include "mpread.h"

#include <string.h>

typedef struct {
    mpr_type type;
    size_t size; /* header bytes: tag, width field, ext type byte */
    uint64_t u;  /* UINT value; STR/BIN/EXT length; ARRAY/MAP count */
    int64_t i;   /* INT value */
    double d;    /* FLOAT value */
    int b;       /* BOOL value */
} mpr_head;

void mpr_init(mpr_cursor *c, const uint8_t *buf, size_t len) {
    c->buf = buf;
    c->len = len;
    c->pos = 0;
    c->err = MPR_OK;
    c->err_pos = 0;
}

size_t mpr_left(const mpr_cursor *c) { return c->len - c->pos; }

const char *mpr_strerror(mpr_status s) {
    switch (s) {
    case MPR_OK: return "ok";
    case MPR_ETRUNC: return "truncated";
    case MPR_ECOUNT: return "truncated or corrupt: a length or count exceeds the bytes left";
    case MPR_ETYPE: return "unexpected type";
    case MPR_ERANGE: return "value out of range";
    case MPR_EBAD: return "invalid msgpack byte";
    }
    return "unknown error";
}

mpr_status mpr_fail(mpr_cursor *c, mpr_status s) {
    if (c->err == MPR_OK) {
        c->err = s;
        c->err_pos = c->pos;
    }
    return c->err;
}

static uint64_t be(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t k = 0; k < n; k++) v = v << 8 | p[k];
    return v;
}

/* Tag ranges that carry their value in the tag byte. */
static int fixed_tag(uint8_t b, mpr_head *h) {
    h->size = 1;
    if (b <= 0x7f) { h->type = MPR_UINT; h->u = b; return 1; }
    if (b >= 0xe0) { h->type = MPR_INT; h->i = (int8_t)b; return 1; }
    if ((b & 0xf0) == 0x80) { h->type = MPR_MAP; h->u = b & 0x0f; return 1; }
    if ((b & 0xf0) == 0x90) { h->type = MPR_ARRAY; h->u = b & 0x0f; return 1; }
    if ((b & 0xe0) == 0xa0) { h->type = MPR_STR; h->u = b & 0x1f; return 1; }
    if (b == 0xc0) { h->type = MPR_NIL; return 1; }
    if (b == 0xc2 || b == 0xc3) { h->type = MPR_BOOL; h->b = b == 0xc3; return 1; }
    return 0;
}

/* For the other tags: the type, the width of the field after the tag, and
 * whether an ext type byte follows. @return 0, or -1 for 0xc1 (never used). */
static int tag_layout(uint8_t b, mpr_type *t, size_t *w, int *ext) {
    static const uint8_t pow2[4] = {1, 2, 4, 8};
    *ext = 0;
    if (b >= 0xc4 && b <= 0xc6) { *t = MPR_BIN; *w = pow2[b - 0xc4]; return 0; }
    if (b >= 0xc7 && b <= 0xc9) { *t = MPR_EXT; *w = pow2[b - 0xc7]; *ext = 1; return 0; }
    if (b == 0xca || b == 0xcb) { *t = MPR_FLOAT; *w = b == 0xca ? 4 : 8; return 0; }
    if (b >= 0xcc && b <= 0xcf) { *t = MPR_UINT; *w = pow2[b - 0xcc]; return 0; }
    if (b >= 0xd0 && b <= 0xd3) { *t = MPR_INT; *w = pow2[b - 0xd0]; return 0; }
    if (b >= 0xd4 && b <= 0xd8) { *t = MPR_EXT; *w = 0; *ext = 1; return 0; }
    if (b >= 0xd9 && b <= 0xdb) { *t = MPR_STR; *w = pow2[b - 0xd9]; return 0; }
    if (b == 0xdc || b == 0xdd) { *t = MPR_ARRAY; *w = b == 0xdc ? 2 : 4; return 0; }
    if (b == 0xde || b == 0xdf) { *t = MPR_MAP; *w = b == 0xde ? 2 : 4; return 0; }
    return -1;
}

/* Interpret the field of width w after a multi-byte tag. */
static void decode_field(uint8_t b, const uint8_t *f, size_t w, mpr_head *h) {
    uint64_t v = be(f, w);
    switch (h->type) {
    case MPR_FLOAT:
        if (w == 4) {
            uint32_t u32 = (uint32_t)v;
            float x;
            memcpy(&x, &u32, 4);
            h->d = x;
        } else
            memcpy(&h->d, &v, 8);
        break;
    case MPR_INT: /* signed encodings: sign-extend, keep >= 0 as UINT */
        h->i = w == 1 ? (int8_t)v : w == 2 ? (int16_t)v : w == 4 ? (int32_t)v : (int64_t)v;
        if (h->i >= 0) { h->type = MPR_UINT; h->u = (uint64_t)h->i; }
        break;
    case MPR_EXT:
        h->u = b >= 0xd4 ? (uint64_t)1 << (b - 0xd4) : v;
        break;
    case MPR_NIL: case MPR_BOOL: case MPR_UINT: case MPR_STR:
    case MPR_BIN: case MPR_ARRAY: case MPR_MAP:
        h->u = v;
        break;
    }
}

/* Decode the header of the next object without consuming it, checking the
 * header and the claimed payload against the bytes left. */
static mpr_status head(mpr_cursor *c, mpr_head *h) {
    if (c->err) return c->err;
    size_t left = c->len - c->pos, w;
    int ext;
    if (left == 0) return mpr_fail(c, MPR_ETRUNC);
    const uint8_t *p = c->buf + c->pos;
    if (!fixed_tag(p[0], h)) {
        if (tag_layout(p[0], &h->type, &w, &ext) != 0) return mpr_fail(c, MPR_EBAD);
        h->size = 1 + w + (size_t)ext;
        if (left < h->size) return mpr_fail(c, MPR_ETRUNC);
        decode_field(p[0], p + 1, w, h);
    }
    left -= h->size;
    /* Payload bytes, or the minimum one byte per element: never trust a
     * count the rest of the buffer could not hold. */
    if (h->type == MPR_STR || h->type == MPR_BIN || h->type == MPR_EXT ||
        h->type == MPR_ARRAY) {
        if (h->u > left) return mpr_fail(c, MPR_ECOUNT);
    } else if (h->type == MPR_MAP && h->u > left / 2)
        return mpr_fail(c, MPR_ECOUNT);
    return MPR_OK;
}

mpr_status mpr_peek(mpr_cursor *c, mpr_type *t) {
    mpr_head h;
    if (head(c, &h)) return c->err;
    *t = h.type;
    return MPR_OK;
}

/* Read the next header and require type t. */
static mpr_status take(mpr_cursor *c, mpr_type t, mpr_head *h) {
    if (head(c, h)) return c->err;
    if (h->type != t) return mpr_fail(c, MPR_ETYPE);
    return MPR_OK;
}

mpr_status mpr_nil(mpr_cursor *c) {
    mpr_head h;
    if (take(c, MPR_NIL, &h)) return c->err;
    c->pos += h.size;
    return MPR_OK;
}

mpr_status mpr_bool(mpr_cursor *c, int *v) {
    mpr_head h;
    if (take(c, MPR_BOOL, &h)) return c->err;
    c->pos += h.size;
    *v = h.b;
    return MPR_OK;
}

mpr_status mpr_uint(mpr_cursor *c, uint64_t *v) {
    mpr_head h;
    if (head(c, &h)) return c->err;
    if (h.type == MPR_INT) return mpr_fail(c, MPR_ERANGE);
    if (h.type != MPR_UINT) return mpr_fail(c, MPR_ETYPE);
    c->pos += h.size;
    *v = h.u;
    return MPR_OK;
}

mpr_status mpr_int(mpr_cursor *c, int64_t *v) {
    mpr_head h;
    if (head(c, &h)) return c->err;
    if (h.type == MPR_UINT) {
        if (h.u > (uint64_t)INT64_MAX) return mpr_fail(c, MPR_ERANGE);
        h.i = (int64_t)h.u;
    } else if (h.type != MPR_INT)
        return mpr_fail(c, MPR_ETYPE);
    c->pos += h.size;
    *v = h.i;
    return MPR_OK;
}

mpr_status mpr_double(mpr_cursor *c, double *v) {
    mpr_head h;
    if (take(c, MPR_FLOAT, &h)) return c->err;
    c->pos += h.size;
    *v = h.d;
    return MPR_OK;
}

/* str and bin: header, then the payload the header promised. */
static mpr_status bytes(mpr_cursor *c, mpr_type t, const uint8_t **p, uint32_t *len) {
    mpr_head h;
    if (take(c, t, &h)) return c->err;
    if (h.u > UINT32_MAX) return mpr_fail(c, MPR_ERANGE);
    *p = c->buf + c->pos + h.size;
    *len = (uint32_t)h.u;
    c->pos += h.size + (size_t)h.u;
    return MPR_OK;
}

mpr_status mpr_str(mpr_cursor *c, const char **s, uint32_t *len) {
    const uint8_t *p;
    if (bytes(c, MPR_STR, &p, len)) return c->err;
    *s = (const char *)p;
    return MPR_OK;
}

mpr_status mpr_bin(mpr_cursor *c, const uint8_t **p, uint32_t *len) {
    return bytes(c, MPR_BIN, p, len);
}

mpr_status mpr_str_copy(mpr_cursor *c, char *dst, size_t cap) {
    mpr_cursor save = *c;
    const char *s;
    uint32_t n;
    if (mpr_str(c, &s, &n)) return c->err;
    if ((size_t)n >= cap || memchr(s, '\0', n)) {
        *c = save; /* report the error at the string, not after it */
        return mpr_fail(c, MPR_ERANGE);
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
    return MPR_OK;
}

/* Array and map headers; head() already bounded the count. */
static mpr_status container(mpr_cursor *c, mpr_type t, uint32_t *n) {
    mpr_head h;
    if (take(c, t, &h)) return c->err;
    c->pos += h.size;
    *n = (uint32_t)h.u;
    return MPR_OK;
}

mpr_status mpr_array(mpr_cursor *c, uint32_t *n) { return container(c, MPR_ARRAY, n); }

mpr_status mpr_map(mpr_cursor *c, uint32_t *n) { return container(c, MPR_MAP, n); }

mpr_status mpr_skip(mpr_cursor *c) {
    /* Objects still to skip; every one costs at least a byte, so the count
     * stays below twice the buffer size and the loop below the byte count. */
    uint64_t pending = 1;
    while (pending) {
        mpr_head h;
        if (head(c, &h)) return c->err;
        pending--;
        c->pos += h.size;
        switch (h.type) {
        case MPR_ARRAY: pending += h.u; break;
        case MPR_MAP: pending += 2 * h.u; break;
        case MPR_STR: case MPR_BIN: case MPR_EXT: c->pos += (size_t)h.u; break;
        case MPR_NIL: case MPR_BOOL: case MPR_UINT: case MPR_INT: case MPR_FLOAT: break;
        }
    }
    return MPR_OK;
}
