/* ruledb.h - the ruledb file format and its read/write/merge/diff API
 * (prefix rdb_).
 *
 * One format carries both hand-offs of the pipeline: synth writes a
 * "candidates" file (equivalence classes of graphs with equal fingerprints),
 * prove reads it and writes a "rules" file (proved src => dst rewrites),
 * the engine reads that. An rdb_file holds either kind in memory; it owns
 * growable arrays of classes or rules. Readers trust nothing: every length,
 * count, index and parameter is checked, every graph passes rg_validate, a
 * truncated or hostile file gives an error code and a message naming the
 * byte offset and the field ("rules[12].src.nodes[1].params[0]"), never a
 * crash or a huge allocation. Writers write "PATH.tmp.PID", fsync, rename:
 * a crash leaves the old file or the new one, never half of one.
 *
 * Worked example: write one rule, read it back.
 *
 *     rdb_file *f = rdb_new(RDB_RULES), *g = NULL;
 *     rg_graph src, dst;
 *     char err[RDB_ERRLEN];
 *     rg_parse("(matmul x0 (matmul x1 x2))", &src, err, sizeof err);
 *     rg_parse("(matmul (matmul x0 x1) x2)", &dst, err, sizeof err);
 *     rdb_prover pv = {"z3", "4.8.15", 3, RDB_PROVED};
 *     snprintf(f->gen.tool, sizeof f->gen.tool, "prove");
 *     if (rdb_add_rule(f, &src, &dst, &pv) != RDB_OK ||
 *         rdb_write("rules.tasodb", f, err, sizeof err) != RDB_OK ||
 *         rdb_read("rules.tasodb", &g, err, sizeof err) != RDB_OK)
 *         fprintf(stderr, "%s\n", err);     // "rules.tasodb: byte 9: ..."
 *     rdb_free(f);
 *     rdb_free(g);
 *
 * ======================================================================
 * FILE FORMAT, version 1 (documented here only)
 * ======================================================================
 * A file is exactly one msgpack object, a map; nothing may follow it.
 * Numbers are big-endian as msgpack defines them; writers use msgpack's
 * shortest encodings (so equal content gives equal bytes), readers accept
 * any integer width. "str<N": UTF-8 without NUL, shorter than N bytes.
 *
 * Top level: a map of exactly these 6 keys, in this order. The order is
 * fixed so a reader refuses a newer version (RDB_EVERSION) or other
 * operators (RDB_EDIGEST) before it parses anything they could change.
 *
 *   key        type      meaning
 *   ---------  --------  ------------------------------------------------
 *   magic      str       "tasodb"
 *   version    uint      RDB_VERSION (1); anything else -> RDB_EVERSION
 *   kind       str       "candidates" or "rules"
 *   opspecs    bin 16    ops_digest() of the writer; differs from the
 *                        reader's -> RDB_EDIGEST
 *   generator  map       GENERATOR
 *   classes    array     of CLASS   (kind "candidates"), or
 *   rules      array     of RULE    (kind "rules")
 *
 * GENERATOR: provenance only, nothing in it changes what a rule means, so
 * its keys may come in any order, all are optional (default 0 / empty) and
 * unknown keys are skipped.
 *   tool       str<32    "synth", "prove", "ruledb" (merge) ...
 *   version    str<32    that tool's version
 *   max_ops    uint      enumeration depth (u32)
 *   seed       uint      u64
 *   ops        array     of str: operator names (opspecs) enumerated
 *   shard      map       {count: uint <= 64, have: array of uint < count}:
 *                        the shards of a --shard K/N run this file holds
 *                        (unsharded: count 1, have [0]; count 0: unknown)
 *   counts     map       {graphs, classes, proved, failed, pruned: uint}
 *   timings    map       {wall_ms, cpu_ms: uint}
 *   notes      array     of str<256, at most 16: free-form "key=value"
 *
 * CLASS: a map with exactly these keys, any order.
 *   fingerprint bin      the class's outputs on synth's random inputs:
 *                        residues mod 2^61-1 as little-endian u64s,
 *                        outputs concatenated; nonzero multiple of 8
 *                        bytes, every value < 2^61-1
 *   shapes     array     of SHAPE, at most 8: shapes[i] is the shape of
 *                        input xi, the same variable in every member (a
 *                        class's members are over one set of variables);
 *                        at least as many as any member's inputs
 *   members    array     of GRAPH, at least one, all with the same number
 *                        of outputs
 *   count      uint      graphs seen in the class, >= number of members
 *
 * RULE: a map with exactly these keys, any order.
 *   id         uint      strictly increasing along the array
 *   src        GRAPH     the pattern
 *   dst        GRAPH     the replacement: same number of inputs and of
 *                        outputs as src; output k replaces src's output k
 *   prover     map       {name: str<32, version: str<32, millis: uint,
 *                        status: "proved" | "unknown" | "timeout" |
 *                        "refuted" | "unchecked"}, exactly these keys
 *
 * GRAPH: a map with exactly these keys, any order.
 *   inputs     uint      number of graph inputs, 0..8
 *   nodes      array     of NODE, at most 8, in topological order
 *   outputs    array     of REF, 1..4
 * SHAPE: an array of 0..4 uint dims, each 1..65536 (ten_shape_valid).
 * NODE: an array of exactly 3:
 *   [op: str (an ops_table name), params: array of int (exactly n_params
 *    of the operator), inputs: array of REF (exactly its arity)]
 * REF: uint, SSA value numbering: r < inputs is graph input r, otherwise
 *   node r - inputs, which must come before the node using it.
 * PARAM: int32, the opspecs value: PAD 0 SAME / 1 VALID, ACT 0 NONE /
 *   1 RELU, KERNEL kh*256+kw, AXIS 0..3, STRIDE/GROUPS/SIZE >= 1. A
 *   negative SIZE is symbolic, "dim a of input i" = -(1 + 4*i + a)
 *   (rgraph.h); a negative GROUPS -1..-4 is a group-count symbol g0..g3,
 *   any count, the same wherever the rule writes it (rgraph.h). Every graph must pass rg_validate (no dead nodes, ...).
 * ======================================================================
 */
#ifndef RULEDB_H
#define RULEDB_H

#include <stddef.h>
#include <stdint.h>

#include "rgraph.h"

#define RDB_VERSION 1
#define RDB_MAGIC "tasodb"
#define RDB_ERRLEN 320
#define RDB_NAME_LEN 32
#define RDB_MAX_NOTES 16
#define RDB_NOTE_LEN 256
#define RDB_MAX_SHARDS 64

/* Status codes; RDB_OK is 0. */
typedef enum {
    RDB_OK = 0,
    RDB_EIO,      /* open/read/write/rename failed */
    RDB_ETRUNC,   /* the file ends early (or claims more than it holds) */
    RDB_ECORRUPT, /* bad structure, type or range; trailing bytes */
    RDB_EVERSION, /* another format version */
    RDB_EDIGEST,  /* made from other opspecs */
    RDB_ENOMEM,
    RDB_EINVAL    /* an invalid in-memory file or mismatched arguments */
} rdb_status;

typedef enum { RDB_CANDIDATES, RDB_RULES } rdb_kind;

/* How a rule's proof ended; "proved" is the only status the engine may
 * rely on. ORDER PROOF: rdb_proof_name. */
typedef enum {
    RDB_PROVED,
    RDB_UNKNOWN,
    RDB_TIMEOUT,
    RDB_REFUTED,
    RDB_UNCHECKED,
    RDB_PROOF_COUNT
} rdb_proof;

typedef struct {
    char tool[RDB_NAME_LEN];
    char version[RDB_NAME_LEN];
    uint32_t max_ops;
    uint64_t seed;
    ops_set ops;          /* the operators enumerated */
    uint32_t shard_count; /* 0 unknown, 1 unsharded; --shard K/N: N */
    uint64_t shard_have;  /* bit k set: shard k of shard_count included */
    struct { uint64_t graphs, classes, proved, failed, pruned; } counts;
    struct { uint64_t wall_ms, cpu_ms; } timings;
    int n_notes;
    char notes[RDB_MAX_NOTES][RDB_NOTE_LEN];
} rdb_generator;

typedef struct {
    uint8_t *fp; /* fingerprint bytes (owned) */
    size_t fp_len;
    int n_shapes;      /* input shapes, shared by all members */
    ten_shape shapes[RG_MAX_INPUTS];
    rg_graph *members; /* owned, growable */
    size_t n_members, cap_members;
    uint64_t count;
} rdb_class;

typedef struct {
    char name[RDB_NAME_LEN];
    char version[RDB_NAME_LEN];
    uint64_t millis;
    rdb_proof status;
} rdb_prover;

typedef struct {
    uint64_t id;
    rg_graph src, dst;
    rdb_prover prover;
} rdb_rule;

typedef struct {
    rdb_kind kind;
    uint8_t digest[16]; /* ops_digest of the opspecs it was made from */
    rdb_generator gen;
    rdb_rule *rules; /* kind RDB_RULES */
    size_t n_rules, cap_rules;
    rdb_class *classes; /* kind RDB_CANDIDATES */
    size_t n_classes, cap_classes;
} rdb_file;

/* Rules or classes present in only one of two files (rdb_diff): indices
 * into a's and b's arrays, ascending. */
typedef struct {
    size_t *only_a, n_only_a;
    size_t *only_b, n_only_b;
} rdb_delta;

/* "ok", "I/O error", "truncated file", ... */
const char *rdb_strerror(rdb_status s);
/* "candidates" / "rules" */
const char *rdb_kind_name(rdb_kind k);
/* "proved", ... @return NULL when out of range */
const char *rdb_proof_name(rdb_proof p);

/* A new empty file of the kind, with this build's digest, shard 0 of 1.
 * @return the file (free with rdb_free), or NULL when out of memory. */
rdb_file *rdb_new(rdb_kind kind);

/* Free f and everything it owns; NULL is fine. */
void rdb_free(rdb_file *f);

/* Append a rule with id = previous id + 1 (0 for the first).
 * @pre f->kind == RDB_RULES. Graphs are copied, not validated (rdb_write
 *      and rdb_validate check them). @return RDB_OK or RDB_ENOMEM */
rdb_status rdb_add_rule(rdb_file *f, const rg_graph *src, const rg_graph *dst,
                        const rdb_prover *pv);

/* Append a class with a copy of the fingerprint, no members and no input
 * shapes (set c->n_shapes and c->shapes); *out points at it until the
 * next rdb_add_class.
 * @pre f->kind == RDB_CANDIDATES. @return RDB_OK or RDB_ENOMEM */
rdb_status rdb_add_class(rdb_file *f, const uint8_t *fp, size_t fp_len,
                         uint64_t count, rdb_class **out);

/* Append a copy of g to the class's members. @return RDB_OK or RDB_ENOMEM */
rdb_status rdb_class_add_member(rdb_class *c, const rg_graph *g);

/* Every constraint of the format on an in-memory file (the reader applies
 * the same), so nothing is written that could not be read back.
 * @return RDB_OK, or RDB_EINVAL with "rules[3].dst: ..." in err. */
rdb_status rdb_validate(const rdb_file *f, char *err, size_t errlen);

/* Read and validate a file.
 * @return RDB_OK and *out (free with rdb_free); or an error code, *out
 *         NULL, and "PATH: byte N: field: what" in err (may be NULL). */
rdb_status rdb_read(const char *path, rdb_file **out, char *err, size_t errlen);

/* rdb_read on a buffer (the fuzz target's entry); the message has no path.
 * Never reads outside buf[0..len-1]. Arrays grow as their elements are
 * parsed, never from a claimed count, so memory stays within a small
 * multiple of len (about 25x at worst). @return as rdb_read. */
rdb_status rdb_read_mem(const uint8_t *buf, size_t len, rdb_file **out,
                        char *err, size_t errlen);

/* Encode f (after rdb_validate) into a malloc'd buffer (caller frees).
 * @return RDB_OK, RDB_EINVAL or RDB_ENOMEM */
rdb_status rdb_write_mem(const rdb_file *f, uint8_t **buf, size_t *len,
                         char *err, size_t errlen);

/* Validate, encode, write to PATH.tmp.PID, fsync, rename over path, fsync
 * the directory. On failure the temp file is removed and an existing file
 * at path is untouched.
 * @return RDB_OK, RDB_EINVAL, RDB_ENOMEM or RDB_EIO (message names path). */
rdb_status rdb_write(const char *path, const rdb_file *f, char *err, size_t errlen);

/* Merge two files of the same kind and digest into a new canonical file.
 * Candidates: classes sorted by fingerprint bytes; classes with identical
 * fingerprints (and members with as many outputs) become one whose members
 * are the union (deduplicated with rg_equal, sorted by rg_compare) and
 * whose count is the sum. Rules: the union sorted by (src, dst) under
 * rg_compare; duplicates (same src and dst) keep the best prover record
 * (proved first, then fastest); ids renumbered 0, 1, ... Generator: equal
 * strings kept (else "mixed"), max_ops max, seed kept when equal (else 0),
 * ops and shards united (shard count 0 when the counts differ), counts and
 * timings summed, notes united and sorted (first 16 kept).
 * So merge(a,b) and merge(b,a) are byte-identical, merging shards in any
 * order or grouping gives the same file, and merge(a,a) has a's rules, or
 * a's classes and members with counts doubled (a count is a number of
 * graphs seen, and merging assumes the inputs saw different graphs).
 * @pre a and b may be anything: they are validated first.
 * @return RDB_OK and *out; RDB_EINVAL (an input invalid, or kinds differ),
 *         RDB_EDIGEST or RDB_ENOMEM, with a message. */
rdb_status rdb_merge(const rdb_file *a, const rdb_file *b, rdb_file **out,
                     char *err, size_t errlen);

/* What only a has and what only b has, by content, never by id or order:
 * a rule is its (src, dst); a class its fingerprint and its set of members
 * (counts and provenance are not compared). Multisets: a rule twice in a
 * and once in b is once in only_a. Files of different kinds share nothing.
 * @return RDB_OK (free d with rdb_delta_free) or RDB_ENOMEM. */
rdb_status rdb_diff(const rdb_file *a, const rdb_file *b, rdb_delta *d);

void rdb_delta_free(rdb_delta *d);

/* The ruledb tool (cli.c): `ruledb info|dump|diff|merge ...`.
 * @return the process exit status (0 ok, 1 diff found differences, 2 bad
 *         input or usage). */
int rdb_cli_main(int argc, char **argv);

#endif
