/* pool.c - the input pool table and its random tensors (see pool.h). */
#include "pool.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "dom.h"

/* Square matrices so matmul and transpose compose; activations NCHW, and
 * token sequences [b,m,k] (rank 3, of the activation kind) whose k meets
 * the matrices; conv weights OIHW with C = O = 2 so convolutions chain; H = W = 4 so a
 * 3x3 VALID window fits; vectors of each of those dims for biases and
 * per-channel scales. Counts bound the variables of one type in a graph
 * (matmul chains of 4 operands need 4 matrices; a concat pulled out of a
 * sum, (ewadd (concat 2 x0 x1) (concat 2 x2 x3)), and a batched matmul
 * of concats along the axis it sums over need 4 activations or 4
 * sequences: with 3 and 2, the depth-4 run wrote those rules only as
 * instances with inputs repeated, one rule each). dw3x3 is a depthwise
 * kernel of the 2-channel activations (conv groups 2, --groups2): opt-in,
 * for the identity-kernel family alone (prove/regen.sh synth-d3id), where
 * x + dwconv(x, w) = dwconv(x, w + dwiconv) needs a depthwise weight; in
 * every run it would multiply the candidates for no new rule. */
const pool_type_info pool_types[] = {
    {"scalar", {0, {0}}, DOM_SCALAR, 2},
    {"matrix", {2, {3, 3}}, DOM_MATRIX, 4},
    {"act", {4, {1, 2, 4, 4}}, DOM_ACT, 4},
    {"w3x3", {4, {2, 2, 3, 3}}, DOM_WEIGHT, 2},
    {"w1x1", {4, {2, 2, 1, 1}}, DOM_WEIGHT, 2},
    {"w1x3", {4, {2, 2, 1, 3}}, DOM_WEIGHT, 1},
    {"w3x1", {4, {2, 2, 3, 1}}, DOM_WEIGHT, 1},
    {"vec2", {1, {2}}, DOM_VECTOR, 2}, /* per channel of act, per O of the weights */
    {"vec3", {1, {3}}, DOM_VECTOR, 2}, /* per row or column of a matrix */
    {"seq", {3, {1, 2, 3}}, DOM_ACT, 4}, /* [b,m,k] tokens: linear by a matrix */
    {"dw3x3", {4, {2, 1, 3, 3}}, DOM_WEIGHT, 2, 1},
};
const int pool_n_types = (int)(sizeof pool_types / sizeof pool_types[0]);
static_assert(sizeof pool_types / sizeof pool_types[0] <= POOL_MAX_TYPES, "raise POOL_MAX_TYPES");

uint32_t pool_default_types(void) {
    uint32_t bits = 0;
    for (int t = 0; t < pool_n_types; t++)
        if (!pool_types[t].opt_in) bits |= 1u << t;
    return bits;
}

/* A tensor of the shape holding POOL_TRIALS random samples. */
static int alloc_random(ten *t, const ten_shape *s, uint64_t *state) {
    ten_shape all = {1, {(int32_t)(ten_numel(s) * POOL_TRIALS)}};
    if (ten_alloc(t, &all) != 0) return -1;
    ten_fill_random(t, state);
    t->shape = *s;
    return 0;
}

/* Draw the tensors of the types with opt_in == opt_in: the variables, then
 * each type's base and probe. */
static int draw(pool *p, int opt_in, uint64_t *state) {
    for (int t = 0; t < pool_n_types; t++) {
        if (pool_types[t].opt_in != opt_in) continue;
        for (int i = 0; i < pool_types[t].count; i++)
            if (alloc_random(&p->var[p->first[t] + i], &pool_types[t].shape, state)) return -1;
    }
    for (int t = 0; t < pool_n_types; t++)
        if (pool_types[t].opt_in == opt_in &&
            (alloc_random(&p->base[t], &pool_types[t].shape, state) ||
             alloc_random(&p->probe[t], &pool_types[t].shape, state)))
            return -1;
    return 0;
}

int pool_init(pool *p, uint64_t seed) {
    uint64_t state = seed;
    memset(p, 0, sizeof *p);
    p->n_types = pool_n_types;
    for (int t = 0; t < pool_n_types; t++) {
        p->first[t] = p->n_vars;
        p->count_of[t] = pool_types[t].count;
        p->kind[t] = pool_types[t].kind;
        p->shape[t] = dom_pack(&pool_types[t].shape);
        for (int i = 0; i < pool_types[t].count; i++) p->type_of[p->n_vars++] = t;
    }
    if (draw(p, 0, &state) || draw(p, 1, &state)) {
        pool_free(p);
        return -1;
    }
    return 0;
}

void pool_free(pool *p) {
    for (int i = 0; i < POOL_MAX_VARS; i++) ten_free(&p->var[i]);
    for (int t = 0; t < POOL_MAX_TYPES; t++) ten_free(&p->base[t]), ten_free(&p->probe[t]);
}

char *pool_describe(char *buf, size_t len, uint32_t types) {
    size_t n = 0;
    buf[0] = 0;
    for (int t = 0; t < pool_n_types && n < len; t++) {
        if (pool_types[t].opt_in && !(types >> t & 1)) continue;
        char s[64];
        ten_shape_str(&pool_types[t].shape, s);
        n += (size_t)snprintf(buf + n, len - n, "%s%s%sx%d", n ? "," : "",
                              pool_types[t].name, s, pool_types[t].count);
    }
    return buf;
}
