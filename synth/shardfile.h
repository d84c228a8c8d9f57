/* shardfile.h - the file a synth shard writes (prefix sf_): every class the
 * shard's table holds, with its representative, members and counts,
 * grouped in parts by fingerprint hash, so the merge of part p reads only
 * section p of each shard's file (map, shuffle by fingerprint, reduce).
 *
 * ======================================================================
 * SHARD FILE FORMAT, version 1 (documented here only). Little-endian.
 * ======================================================================
 *   offset  size      field
 *   0       8         magic "tasoshd1"
 *   8       4         version (1)
 *   12      4         shard_k        this shard, < shard_n
 *   16      4         shard_n        shards of the run, 2..64
 *   20      4         parts          sections, 1..SF_MAX_PARTS
 *   24      4         max_ops
 *   28      4         types          pool type bit set
 *   32      4         flags          bit 0: conv groups {1,2}; bit 1: no
 *                                    pruning (the merge keeps every member);
 *                                    bit 2: 1x1 constant kernels too
 *   36      4         reserved (0)
 *   40      8         seed
 *   48      8         ops            operator bit set
 *   56      16        opspecs digest (ops_digest), as in a ruledb
 *   72      8         wall_ms        of the shard's run
 *   80      8         cpu_ms
 *   88      8         graphs         the shard enumerated, all levels
 *   96      32*parts  PART table: {offset u64, bytes u64, classes u64,
 *                     xxh64 u64 of the section's bytes}
 *   then    8         xxh64 of every byte above
 *   then    the sections, in part order, back to back.
 * A section is a run of CLASS records:
 *   hash u64          XXH3 of the class's key bytes (fptable.h); the
 *                     class is in part hash % parts
 *   check u32         the table's second hash of the key bytes
 *   count_below u32   graphs of the levels below the last that reached the
 *                     class (every shard saw them: counted once)
 *   count_last u32    graphs of this shard's share of the last level
 *   n_members u32     members besides the representative
 *   rep               sg_graph, 28 bytes (sgraph.h), aligned form
 *   members           n_members sg_graphs
 * Readers check the magic, version, digest, the header hash, a section's
 * hash before parsing it, and every graph (operators, combos, references)
 * before it is evaluated. Writers write PATH.tmp.PID, fsync, rename.
 * ======================================================================
 */
#ifndef SYN_SHARDFILE_H
#define SYN_SHARDFILE_H

#include <stddef.h>
#include <stdint.h>

#include "dom.h"
#include "pool.h"
#include "sgraph.h"

#define SF_MAX_PARTS 1024
#define SF_ERRLEN 320

typedef struct {
    uint32_t shard_k, shard_n, parts, max_ops, types, groups2, no_prune, kernels1x1;
    uint64_t seed, ops;
    uint8_t digest[16];
    uint64_t wall_ms, cpu_ms, graphs;
} sf_header;

/* One class record of a section; members point into the reader's array. */
typedef struct {
    uint64_t hash;
    uint32_t check, count_below, count_last, n_members;
    uint32_t shard; /* which file (index into the paths given) */
    sg_graph rep;
    size_t first; /* index of its first member in sf_part.members */
} sf_class;

typedef struct {
    sf_class *cls;
    size_t n_cls, cap_cls;
    sg_graph *members;
    size_t n_mem, cap_mem;
} sf_part;

typedef struct sf_writer sf_writer;

/* Open PATH.tmp.PID for h's shard (h->parts sections).
 * @return the writer, or NULL with "PATH: why" in err. */
sf_writer *sf_create(const char *path, const sf_header *h, char *err, size_t errlen);

/* Start section p; sections must come in order 0, 1, ... parts-1.
 * @return 0, or -1 (write error; sf_commit reports it). */
int sf_begin_part(sf_writer *w, uint32_t p);

/* Append one class to the current section. @return 0, or -1. */
int sf_put(sf_writer *w, uint64_t hash, uint32_t check, uint32_t count_below,
           uint32_t count_last, const sg_graph *rep, const sg_graph *mem, uint32_t n);

/* Write the header (h's timings and counts now final), fsync, rename over
 * the path, free w. @return 0, or -1 with "PATH: why" in err (the temp
 * file removed). */
int sf_commit(sf_writer *w, const sf_header *h, char *err, size_t errlen);

/* Drop the temp file and free w (NULL is fine). */
void sf_abort(sf_writer *w);

/* Read and check a shard file's header. @return 0, or -1 with "PATH:
 * why" in err (not a shard file, truncated, other opspecs, bad hash). */
int sf_read_header(const char *path, sf_header *h, char *err, size_t errlen);

/* Check every section's hash too: the file is a complete shard's output.
 * @return 0, or -1 with "PATH: why" in err. */
int sf_verify(const char *path, sf_header *h, char *err, size_t errlen);

/* Append section p of the file to *out, records tagged with shard index
 * `shard`, every graph checked against d and pl (no node beyond max_ops,
 * valid operators, combos and references).
 * @return 0, or -1 with "PATH: part P: why" in err. */
int sf_read_part(const char *path, uint32_t p, uint32_t shard, const dom *d, const pool *pl,
                 int max_ops, sf_part *out, char *err, size_t errlen);

/* A whole shard file in memory (the fuzz target's entry): header, every
 * part's checksum and records, as the readers above check them. Never
 * reads outside buf[0..len). @return 0, or -1 with a message in err. */
int sf_read_mem(const uint8_t *buf, size_t len, sf_header *h, const dom *d, const pool *pl,
                sf_part *out, char *err, size_t errlen);

void sf_part_free(sf_part *p);

#endif
