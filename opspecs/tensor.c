/* tensor.c - shapes and integer tensors of the reference semantics. */
#include "tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modp.h"

int64_t ten_numel(const ten_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->dim[i];
    return n;
}

int ten_shape_eq(const ten_shape *a, const ten_shape *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return 0;
    return 1;
}

int ten_shape_valid(const ten_shape *s) {
    if (s->rank < 0 || s->rank > TEN_MAX_RANK) return 0;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dim[i] < 1 || s->dim[i] > TEN_MAX_DIM) return 0;
        n *= s->dim[i]; /* <= 2^40 * 2^16 before the check: no overflow */
        if (n > TEN_MAX_NUMEL) return 0;
    }
    return 1;
}

const char *ten_shape_str(const ten_shape *s, char *buf) {
    size_t n = 0;
    buf[n++] = '[';
    for (int i = 0; i < s->rank && i < TEN_MAX_RANK; i++)
        n += (size_t)snprintf(buf + n, 64 - n, i ? ",%d" : "%d", (int)s->dim[i]);
    snprintf(buf + n, 64 - n, "]");
    return buf;
}

int ten_alloc(ten *t, const ten_shape *s) {
    t->shape = *s;
    t->data = malloc((size_t)ten_numel(s) * sizeof *t->data);
    return t->data ? 0 : -1;
}

void ten_free(ten *t) {
    free(t->data);
    t->data = NULL;
}

uint64_t ten_rand_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void ten_fill_random(ten *t, uint64_t *state) {
    int64_t n = ten_numel(&t->shape);
    for (int64_t i = 0; i < n; i++) t->data[i] = mp_reduce(ten_rand_next(state) >> 3);
}

int ten_equal(const ten *a, const ten *b) {
    return ten_shape_eq(&a->shape, &b->shape) &&
           memcmp(a->data, b->data, (size_t)ten_numel(&a->shape) * sizeof *a->data) == 0;
}
