/* tensor.h - shapes and integer tensors of the reference semantics.
 *
 * A ten holds canonical residues modulo MP_P (modp.h), row-major. Rank 0 is
 * a scalar with one cell. Small by design: synth and the axiom checks use
 * tensors of a few hundred cells.
 */
#ifndef TENSOR_H
#define TENSOR_H

#include <stddef.h>
#include <stdint.h>

#define TEN_MAX_RANK 4
#define TEN_MAX_DIM 65536           /* any one dimension */
#define TEN_MAX_NUMEL (1ll << 40) /* any tensor; keeps byte counts far from overflow */

typedef struct {
    int rank;
    int32_t dim[TEN_MAX_RANK];
} ten_shape;

typedef struct {
    ten_shape shape;
    uint64_t *data;
} ten;

/* Number of cells (1 for rank 0). @pre the shape is valid. */
int64_t ten_numel(const ten_shape *s);

/* 1 when both shapes have the same rank and dims. */
int ten_shape_eq(const ten_shape *a, const ten_shape *b);

/* 1 when rank is 0..TEN_MAX_RANK, every dim is 1..TEN_MAX_DIM and the
 * product at most TEN_MAX_NUMEL. */
int ten_shape_valid(const ten_shape *s);

/* "[2,3,4,4]" into buf. @pre buf has 64 bytes. @return buf */
const char *ten_shape_str(const ten_shape *s, char *buf);

/* Allocate a tensor of the shape (data uninitialised).
 * @return 0, or -1 when out of memory (t->data is then NULL). */
int ten_alloc(ten *t, const ten_shape *s);

void ten_free(ten *t);

/* Fill with uniform residues from a splitmix64 stream seeded by *state
 * (advanced), so fills are reproducible. */
void ten_fill_random(ten *t, uint64_t *state);

/* 1 when shapes and every cell are equal. */
int ten_equal(const ten *a, const ten *b);

/* splitmix64: the one PRNG of the project's reference code. */
uint64_t ten_rand_next(uint64_t *state);

#endif
