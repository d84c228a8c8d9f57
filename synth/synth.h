/* synth.h - the rule generator (prefix syn_): enumerate every graph of up
 * to N operators over a pool of typed input variables, fingerprint each on
 * random tensors with the exact opspecs semantics, and group graphs with
 * equal fingerprints into candidate classes for `prove`.
 *
 * Overview (each step in its own file):
 *   pool.c     the input variables: fixed shapes, random tensors per seed
 *   dom.c      the parameter combinations tried per operator, shape checks
 *   sgraph.c   compact graphs, canonical node order, rule-graph conversion
 *   key.c      fingerprints; variables named by what the graph computes,
 *              so graphs equal up to renaming meet (key.h explains how);
 *              key_eval.c evaluates, key_align.c aligns the variables,
 *              key_parent.c keeps the parents' evaluations
 *   fptable.c  classes by fingerprint: XXH3 buckets, exact byte comparison
 *   enum.c     level by level, extending one representative per class
 *   prune.c    dropping candidates that are renamings or smaller rules in
 *              context
 *   synth.c    this driver: levels, shards, memory-limit passes, output
 *
 * What is enumerated (the reasons are in the files named):
 *   - inputs: a pool of typed variables (pool.c): scalar [] x2, matrix
 *     [3,3] x4, activation [1,2,4,4] x3, conv weights [2,2,3,3] x2,
 *     [2,2,1,1] x2, [2,2,1,3] x1, [2,2,3,1] x1; at most 8 in a graph;
 *   - parameters (dom.h): conv stride {1,2}, pad {SAME,VALID}, act
 *     {NONE,RELU}, groups {1} ({1,2} with groups2); pools 3x3 and 2x2;
 *     enlarge to 3x3; iconv/dwiconv/poolk 3x3 (and 1x1 with kernels1x1); concat on every axis of the rank; split
 *     at a split point only (TASO's split tree, sgraph.h: the boundary of
 *     the concat a value comes from, carried through conv, matmul,
 *     element-wise ops...), written "(dim a xi)" when it is an input's;
 *   - kinds (dom.h): activations, weights, matrices, scalars; a conv reads
 *     an activation and a weight, relu and pools activations, and so on;
 *   - graphs of 1..N operators with one or two outputs, no dead node, no
 *     duplicate node, two outputs only when they share a node or a
 *     variable (enum.h);
 *   - fingerprints on two independent random samples of every input (pool.h:
 *     one sample lets relu(v) = v pass for small v).
 *
 * Classes are up to renaming: a graph's variables are named from what the
 * graph computes (key.h), so mm(x1, mm(x0, x2)) and mm(mm(x0, x1), x2)
 * meet as associativity, and a graph and its renaming are one graph.
 *
 * Pruning (prune.h), per class, without a prover: renamed pairs, instances
 * of a smaller rule under a common subgraph (checked by evaluation),
 * instances of a more general rule with a variable repeated, pairs under a
 * common output operator, two one-output rules side by side.
 *
 * Output: a ruledb "candidates" file: classes sorted by fingerprint, each
 * with the fingerprint bytes (per output: a shape word, then the residues;
 * the shape word keeps concat(0; x, y) and concat(1; x, y) of [1,2,4,4]
 * tensors apart, whose residues are equal), the input shapes, the members
 * sorted by rg_compare (so the smallest graph, the representative, first;
 * the same order `ruledb merge` produces) and the count of graphs seen.
 *
 * Dividing a run over N machines (map, shuffle by fingerprint, reduce):
 *   map     syn_run_shard, --shard K/N: every shard enumerates the levels
 *           below the last in full (their representatives feed the last
 *           level; they are small), then only its share of the last
 *           level's work items (enum.h: item_k/item_n, by a hash of the
 *           parent representative and the kind of item), and writes every
 *           class its table holds, unpruned, to a shard file in M parts by
 *           fingerprint hash (shardfile.h). A class may be reached from
 *           parents in several shards: no shard can filter or prune it.
 *   reduce  syn_merge_part, --merge-part P: part P of all N files; classes
 *           with equal fingerprints join (a shared graph proves it, else
 *           the exact key bytes: a hash collision never joins two), the
 *           smallest graph represents, members unite, counts add (the
 *           levels below counted once: every shard saw them), then the
 *           class is pruned and written by the same code as the undivided
 *           run (clsout.h).
 *   `ruledb merge` of the M parts is byte-identical to the undivided
 *   run's file (with --no-timings). Drivers: prove/divided/ (local
 *   processes or a Slurm job array).
 * Cost model: CPU of the N shards and M merges ~= the undivided run plus
 * (N-1) times the levels below the last (a few percent at depth 4) plus
 * the shuffle (writing, reading and joining the classes: every class is
 * written once, by each shard that reached it); memory per shard ~= the
 * levels below plus 1/N of the last level's table; a merge part holds 1/M
 * of the classes. bench/divided.py measures both.
 *
 * Memory limit: the last level runs in passes over a partition of the hash
 * space; a pass that outgrows the limit is undone and its part split in
 * two. Levels below the last must fit (else SYN_ELIMIT). A shard refuses
 * a memory limit: more shards divide the memory instead.
 *
 * Example: all candidates of up to 2 matmuls, as a file.
 *
 *     syn_options o;
 *     syn_stats st;
 *     rdb_file *f;
 *     char err[SYN_ERRLEN];
 *     syn_options_init(&o);
 *     o.max_ops = 2;
 *     o.ops = OPS_SET_BIT(OP_MATMUL);
 *     if (syn_run(&o, &f, &st, err, sizeof err) != SYN_OK ||
 *         rdb_write("mm.tasodb", f, err, sizeof err) != RDB_OK)
 *         fprintf(stderr, "%s\n", err);
 *     // a class holds (matmul (matmul x0 x1) x2) and (matmul x0 (matmul x1 x2))
 *     rdb_free(f);
 */
#ifndef SYNTH_H
#define SYNTH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dom.h"
#include "pool.h"
#include "prune.h"
#include "ruledb.h"

#define SYN_VERSION "0.1.0"
#define SYN_MAX_OPS 5
#define SYN_ERRLEN 256

typedef enum {
    SYN_OK = 0,
    SYN_EINVAL, /* bad options */
    SYN_ENOMEM,
    SYN_ELIMIT, /* the memory limit is too small for a level below the last */
    SYN_EDEV,   /* --backend cuda without a usable device */
    SYN_EIO,    /* a shard file could not be written */
    SYN_EINPUT  /* a shard file is missing, damaged or from another run */
} syn_status;

typedef enum { SYN_CPU, SYN_CUDA } syn_backend;

typedef struct {
    int max_ops;           /* 0..SYN_MAX_OPS; default 3 */
    ops_set ops;           /* enumerated; default all operators */
    uint32_t types;        /* bit t set: pool type t is used; default all */
    uint64_t seed;         /* default 1 */
    uint32_t shard_k, shard_n; /* default 0 of 1; N > 1: syn_run_shard */
    uint32_t parts;            /* a shard file's parts (0: N) */
    uint64_t memory_limit; /* bytes, 0: none */
    int threads;           /* 0: every online core */
    syn_backend backend;
    int groups2;    /* conv groups {1,2} instead of {1} */
    int kernels1x1; /* constant kernels (iconv, dwiconv, poolk) 1x1 too */
    int no_timings; /* write timings as 0: equal runs, equal bytes */
    int no_prune;   /* keep every member (tests, debugging) */
    FILE *progress; /* progress lines (NULL: quiet) */
    uint64_t (*hash)(const void *, size_t); /* test hook: the table's hash */
    uint64_t test_table_budget; /* test hook: table bytes the last level may
                                   reach (0: from memory_limit) */
    /* test hook: only the combos (resolved params p of operator op) for
     * which it returns 1 are enumerated (NULL: all), so a test can reach
     * depth 4 over conv2d fast. A split or concat combo is its axis: keep
     * all of theirs. */
    int (*test_combo)(int op, const int32_t *p);
} syn_options;

typedef struct {
    uint64_t graphs;  /* generated and fingerprinted, all levels */
    uint64_t skipped; /* too large or too symmetric to fingerprint */
    uint64_t level_graphs[SYN_MAX_OPS + 1];
    uint64_t level_classes[SYN_MAX_OPS + 1]; /* new classes per level */
    uint64_t classes;      /* classes of this shard, one graph or more */
    uint64_t class_graphs; /* graphs that reached them */
    pr_counts pruning;     /* candidate classes after each pruning step */
    uint64_t over_inputs; /* members left out: their class would need > 8 inputs */
    uint64_t candidates, members; /* written */
    uint64_t evals;               /* node evaluations */
    int passes;                   /* of the last level */
    uint64_t table_below;         /* table bytes before the last level */
    uint64_t table_peak;          /* table bytes at the end of the largest pass */
    double wall_s, cpu_s;
    uint64_t peak_rss; /* bytes */
} syn_stats;

/* Defaults (see syn_options). */
void syn_options_init(syn_options *o);

/* Parse "matmul,relu" into an op bit set.
 * @return 0, or -1 with the unknown name in err. */
int syn_parse_ops(const char *list, ops_set *ops, char *err, size_t errlen);

/* Parse "act,w3x3" (pool type names, pool.c) into a type bit set.
 * @return 0, or -1 with the unknown name in err. */
int syn_parse_types(const char *list, uint32_t *types, char *err, size_t errlen);

/* Run the generator.
 * @return SYN_OK and *out (free with rdb_free), *st filled; or an error
 *         code with a message in err and *out NULL. */
syn_status syn_run(const syn_options *o, rdb_file **out, syn_stats *st, char *err,
                   size_t errlen);

/* A shard of a divided run (--shard K/N, N >= 2): enumerate the levels
 * below the last in full, then only this shard's share of the last
 * level's work items, and write every class of the table (counts split
 * into the levels below and this shard's share) to the shard file at path,
 * in o->parts parts by fingerprint hash (shardfile.h).
 * @return SYN_OK, or an error with a message in err (no file written). */
syn_status syn_run_shard(const syn_options *o, const char *path, syn_stats *st, char *err,
                         size_t errlen);

/* The merge (reduce) of part `part` of a divided run: read that part of
 * the N shard files paths[0..n) (each shard once, all from one run), join
 * classes with equal key bytes, prune and write them as syn_run does.
 * `ruledb merge` of the parts 0..parts-1 is byte-identical to the
 * unsharded run's file (with no_timings). *o gets the run's options.
 * @return SYN_OK and *out (rdb_free it), or an error with the file named
 *         in err: SYN_EINPUT (missing, damaged or mismatched shards). */
syn_status syn_merge_part(const char *const *paths, int n, uint32_t part, int no_timings,
                          syn_options *o, rdb_file **out, syn_stats *st, char *err, size_t errlen);

/* The run's inputs: the pool (o->seed, o->types) and the operator domains
 * (o->ops, o->groups2, the test hook). @return 0, or -1 out of memory. */
int syn_inputs(const syn_options *o, pool *p, dom *d);

/* The generator record of a candidates file (notes sorted, as `ruledb
 * merge` writes them). */
void syn_fill_generator(rdb_generator *g, const syn_options *o, const syn_stats *st);

/* Print the end-of-run summary. */
void syn_print_summary(FILE *f, const syn_options *o, const syn_stats *st);

/* The synth command line (cli.c). @return the exit status: 0 ok, 2 bad
 * usage, input or write failure. */
int syn_cli_main(int argc, char **argv);

#endif
