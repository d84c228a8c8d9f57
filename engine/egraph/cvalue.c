/* cvalue.c - the values of shape constants (egraph_int.h,
 * ee_equal_values): the classes that compute one tensor from shapes alone,
 * which ee_rebuild merges (value congruence).
 *
 * Why. A class is a shape constant when an e-node in it is a constant
 * operator (OPF_CONST: ones, imm, iconv, poolk, dwiconv) or an operator
 * over shape constants alone: (transpose (tanh (imm x0))) reads x0's
 * shape and nothing else. The engine folds every such subgraph to an
 * initializer before it writes a model (eg_fold_weights), so two shape
 * constants of equal value are one tensor in any graph that holds them,
 * whatever their operators: (transpose (tanh (imm x0))) and (tanh (imm
 * x0)) are, since tanh keeps the identity symmetric. No rule says so (a
 * rule is proved for every shape, a value is computed at this one), and
 * without the merge the rules that read such a constant cannot see
 * through it: 13% of the depth-4 rules prove's pruning checked were
 * equations of shape constants the shipped rules could not derive
 * (bench/results/depth4/derive.md).
 *
 * How. After each rebuild's congruence closure, every shape constant of
 * at most EE_VALUE_CELLS cells gets its value once (the first e-node of
 * the class that evaluates, in e-node order, through the float kernels
 * the fold uses), then the classes of equal shape and bitwise-equal
 * value are paired for ee_rebuild to merge. Bitwise: two tensors that differ by a rounding stay
 * apart, so a merge changes no value the model computes. Initializers are
 * not constants here: a weight is the model's to change, and a random
 * export's ones would prove nothing about the trained model. The cap
 * keeps the work a rebuild adds small; a larger constant (an identity of
 * a real layer's width) keeps only its shape congruence. Deterministic:
 * values depend on the shapes alone, and the merges on the sorted values.
 */
#include "egraph/egraph_int.h"
#include "fold/fold.h"

#include <stdlib.h>
#include <string.h>

/* The value of e-node e when every class it reads has one (a constant
 * operator reads only its kid's shape), into a new array; NULL when it
 * has none (too large, unshaped, a kid without a value, a kernel error,
 * out of memory: the class is retried at the next rebuild). */
static float *node_value(ee_graph *E, int e) {
    const ee_node *n = &E->n[e];
    const ee_class *c = &E->c[ee_find(E, n->cls)];
    if (n->kind != EE_OPS || !c->shaped || n->n_kid > OPS_MAX_ARITY) return NULL;
    int64_t cells = ten_numel(&c->shape);
    if (cells < 1 || cells > EE_VALUE_CELLS) return NULL;
    int konst = (ops_table[n->op].flags & OPF_CONST) != 0;
    ten_shape in_shape[OPS_MAX_ARITY];
    const float *in[OPS_MAX_ARITY];
    for (int i = 0; i < n->n_kid; i++) {
        const ee_class *k = &E->c[ee_find(E, ee_kids(E, e)[i])];
        if (!k->shaped || (!konst && !k->value)) return NULL;
        in_shape[i] = k->shape, in[i] = k->value;
    }
    float *v = malloc(sizeof *v * (size_t)cells);
    if (v && eg_fkern_eval(n->op, n->param, in_shape, in, v, NULL, 0) != EG_OK) free(v), v = NULL;
    return v;
}

static _Thread_local ee_graph *sort_E; /* qsort has no context argument in C11; per thread */

/* Classes a and b (roots with values) by shape, then value bytes. */
static int value_cmp(ee_graph *E, int a, int b) {
    const ee_class *x = &E->c[a], *y = &E->c[b];
    if (x->shape.rank != y->shape.rank) return x->shape.rank < y->shape.rank ? -1 : 1;
    for (int d = 0; d < x->shape.rank; d++)
        if (x->shape.dim[d] != y->shape.dim[d]) return x->shape.dim[d] < y->shape.dim[d] ? -1 : 1;
    return memcmp(x->value, y->value, sizeof *x->value * (size_t)ten_numel(&x->shape));
}

static int by_value(const void *pa, const void *pb) {
    int a = *(const int *)pa, b = *(const int *)pb, c = value_cmp(sort_E, a, b);
    return c ? c : (a > b) - (a < b);
}

int ee_equal_values(ee_graph *E, int **pairs) {
    *pairs = NULL;
    for (int changed = 1; changed;) { /* kids before parents mostly: a pass or two */
        changed = 0;
        for (int e = 0; e < E->n_nodes; e++) {
            if (E->n[e].dead || E->c[ee_find(E, E->n[e].cls)].value) continue;
            float *v = node_value(E, e);
            if (v) E->c[ee_find(E, E->n[e].cls)].value = v, changed = 1;
        }
    }
    int n = 0, m = 0;
    for (int c = 0; c < E->n_cls; c++) n += E->c[c].uf == c && E->c[c].value;
    if (n < 2) return 0;
    int *list = malloc(sizeof *list * (size_t)n), *out = malloc(sizeof *out * 2 * (size_t)n);
    if (!list || !out) {
        free(list), free(out);
        return -1;
    }
    n = 0;
    for (int c = 0; c < E->n_cls; c++)
        if (E->c[c].uf == c && E->c[c].value) list[n++] = c;
    sort_E = E;
    qsort(list, (size_t)n, sizeof *list, by_value);
    sort_E = NULL;
    for (int i = 1, first = list[0]; i < n; i++) {
        if (value_cmp(E, list[i - 1], list[i]) != 0) first = list[i];
        else out[2 * m] = first, out[2 * m + 1] = list[i], m++;
    }
    free(list);
    *pairs = out;
    return m;
}
