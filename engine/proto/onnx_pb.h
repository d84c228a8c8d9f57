/* onnx_pb.h - protobuf plumbing shared by the ONNX reader and writer
 * (prefix egp_): a memory-capped allocator for protobuf-c, a nesting-depth
 * check run before unpacking (protobuf-c recurses without a limit), a
 * growable byte buffer with protobuf wire helpers, whole-file reading with
 * a size limit, and atomic writes.
 *
 * Internal to the engine: it includes the header protoc-c generates from
 * onnx.proto at build time ($b/gen/onnx.pb-c.h).
 */
#ifndef EG_ONNX_PB_H
#define EG_ONNX_PB_H

#include <stddef.h>
#include <stdint.h>

#include "ir/graph.h"
#include "onnx.pb-c.h"

/* A protobuf-c allocator that refuses to hold more than `cap` bytes at
 * once; `failed` records that a refusal happened, so a NULL from unpack
 * can be told apart from a malformed message. */
typedef struct {
    ProtobufCAllocator pc;
    size_t used, cap, peak;
    int failed;
} egp_alloc;

/* @pre cap > 0. */
void egp_alloc_init(egp_alloc *a, size_t cap);

/* Check the wire structure of a message of type d: tags, lengths and
 * wire types, recursing into fields the descriptor types as messages,
 * at most max_depth levels deep.
 * @return EG_OK, EG_EFORMAT (bad wire data) or EG_ELIMIT (too deep); a
 *         message with the byte offset in err. */
eg_status egp_check_wire(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *d,
                         int max_depth, char *err, size_t errlen);

/* Unpack a message of type d after egp_check_wire.
 * @return EG_OK with *out set; EG_EFORMAT, EG_ELIMIT (allocator cap),
 *         EG_ENOMEM, with a message in err. */
eg_status egp_unpack(const ProtobufCMessageDescriptor *d, egp_alloc *a, int max_depth,
                     const uint8_t *buf, size_t len, ProtobufCMessage **out, char *err,
                     size_t errlen);

/* Pack msg into a new malloc'd buffer. @return EG_OK or EG_ENOMEM. */
eg_status egp_pack(const ProtobufCMessage *msg, uint8_t **buf, size_t *len);

/* ---- a growable byte buffer ---- */

typedef struct {
    uint8_t *p;
    size_t len, cap;
    int oom; /* sticky: a failed append leaves it set and the buffer as is */
} egp_buf;

void egp_buf_put(egp_buf *b, const void *data, size_t n);
void egp_buf_varint(egp_buf *b, uint64_t v);
/* A length-delimited field: tag (field << 3 | 2), length, bytes. */
void egp_buf_field(egp_buf *b, uint32_t field, const void *data, size_t n);
/* Pack msg as length-delimited field `field`. */
void egp_buf_message(egp_buf *b, uint32_t field, const ProtobufCMessage *msg);

/* ---- files ---- */

/* Read a whole file of at most max bytes into a malloc'd buffer.
 * @return EG_OK, EG_EIO, EG_ELIMIT (too big), EG_ENOMEM; message in err. */
eg_status egp_read_file(const char *path, size_t max, uint8_t **buf, size_t *len, char *err,
                        size_t errlen);

/* Read bytes [offset, offset + length) of a regular file into a malloc'd
 * buffer (an initializer's external data). @return EG_OK, EG_EIO (cannot
 * open or read), EG_EFORMAT (the range is not in the file), EG_ENOMEM;
 * message in err. */
eg_status egp_read_range(const char *path, uint64_t offset, uint64_t length, uint8_t **buf, char *err,
                         size_t errlen);

/* Write buf to path through "path.tmp.PID", fsync and rename, so a crash
 * leaves the old file or the new one. @return EG_OK or EG_EIO. */
eg_status egp_write_file(const char *path, const uint8_t *buf, size_t len, char *err,
                         size_t errlen);

/* The attribute of np named name, or NULL (attr.c). */
const Onnx__AttributeProto *egp_attr(const Onnx__NodeProto *np, const char *name);

/* 1 when attribute a says it is of type t. */
int egp_attr_is(const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType t);

#endif
