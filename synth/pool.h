/* pool.h - synth's input pool (prefix pool_): typed variables with fixed
 * small shapes, each with random values drawn from the seed, plus two
 * extra tensors per type ("base" and "probe") used to label variables by
 * what the graph does with them (key.h).
 *
 * Trials: every tensor holds POOL_TRIALS independent samples, one after
 * the other, and graphs are evaluated on each: a fingerprint is the outputs
 * on all of them. One sample is not enough for small values: relu(v) = v
 * for a value of c cells with probability 2^-c.
 *
 * The pool table (pool.c) is the one place that says which shapes synth
 * enumerates over and how many variables of each a graph may use.
 */
#ifndef SYN_POOL_H
#define SYN_POOL_H

#include <stdint.h>

#include "tensor.h"

#define POOL_MAX_VARS 32 /* variable indices stay below sgraph's node refs */
#define POOL_MAX_TYPES 16
#define POOL_TRIALS 2

typedef struct {
    const char *name;
    ten_shape shape;
    int kind;  /* dom_kind_t */
    int count; /* variables of this type a graph may use */
    int opt_in; /* used only when named (--types): not in the default set */
} pool_type_info;

extern const pool_type_info pool_types[];
extern const int pool_n_types;
/* The types a run uses when none are named: every type but the opt-in
 * ones (bit t for type t). */
uint32_t pool_default_types(void);

typedef struct {
    int n_types, n_vars;
    int type_of[POOL_MAX_VARS];     /* variable -> type */
    int first[POOL_MAX_TYPES];      /* first variable of each type */
    int count_of[POOL_MAX_TYPES];   /* variables of each type */
    int kind[POOL_MAX_TYPES];       /* dom_kind_t of each type */
    uint64_t shape[POOL_MAX_TYPES]; /* packed (dom_pack) */
    ten var[POOL_MAX_VARS];         /* the fingerprint inputs (POOL_TRIALS samples) */
    ten base[POOL_MAX_TYPES];       /* labelling: every variable of the type */
    ten probe[POOL_MAX_TYPES];      /* labelling: the one variable probed */
} pool;

/* Build the pool and draw its tensors from seed (splitmix64, in table
 * order, the opt-in types' after all the others'), so equal seeds give
 * equal tensors, and an opt-in type added to the table leaves the default
 * types' tensors, and so the default runs' candidates, as they were.
 * @return 0, or -1 when out of memory (p is then freed). */
int pool_init(pool *p, uint64_t seed);

/* Free the tensors; a zeroed pool is fine. */
void pool_free(pool *p);

/* "scalar[]x2,matrix[3,3]x4,..." into buf (for the file's notes): the
 * default types, and the opt-in ones among types. @return buf */
char *pool_describe(char *buf, size_t len, uint32_t types);

#endif
