/* graph.c - the graph IR: the model operator table, the name map, building,
 * cloning and freeing graphs, structure checks, topological order, the
 * structural hash, display helpers. Shape inference is in infer.c,
 * lowering to opspecs in lower.c. */
#include "ir/graph.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Each model operator's ONNX operator, arity, and the opsets in which it
 * is read as a model operator (else kept opaque): every version the
 * attribute parsers of onnx/in_ops.c handle. An op's version in a model is
 * the newest one at or below the model's opset, so a range of opsets is a
 * range of versions. */
const eg_mop_info eg_mop_table[EG_MOP_COUNT] = { /* ORDER MOP */
    [EG_MOP_CONV] = {EG_X_CONV, 2, 3, 1, 1, EG_OPSET_MAX}, /* 1, 11, 22: same meaning */
    [EG_MOP_MAXPOOL] = {EG_X_MAXPOOL, 1, 1, 1, 1, EG_OPSET_MAX}, /* 1, 8, 10, 11, 12, 22; ceil_mode only where it equals floor */
    [EG_MOP_AVGPOOL] = {EG_X_AVGPOOL, 1, 1, 1, 1, EG_OPSET_MAX}, /* 1 excludes pads, as cip 0 */
    [EG_MOP_GLOBALAVGPOOL] = {EG_X_GAVGPOOL, 1, 1, 1, 1, EG_OPSET_MAX}, /* 1, 22 */
    [EG_MOP_GEMM] = {EG_X_GEMM, 2, 3, 1, 1, EG_OPSET_MAX}, /* < 7: legacy broadcast checked */
    [EG_MOP_MATMUL] = {EG_X_MATMUL, 2, 2, 1, 1, EG_OPSET_MAX}, /* 1, 9, 13 */
    [EG_MOP_ADD] = {EG_X_ADD, 2, 2, 1, 1, EG_OPSET_MAX}, /* < 7: legacy broadcast checked */
    [EG_MOP_MUL] = {EG_X_MUL, 2, 2, 1, 1, EG_OPSET_MAX},
    [EG_MOP_DIV] = {EG_X_DIV, 2, 2, 1, 1, EG_OPSET_MAX},
    [EG_MOP_RELU] = {EG_X_RELU, 1, 1, 1, 1, EG_OPSET_MAX}, /* < 6: consumed_inputs ignored */
    [EG_MOP_SIGMOID] = {EG_X_SIGMOID, 1, 1, 1, 1, EG_OPSET_MAX},
    [EG_MOP_TANH] = {EG_X_TANH, 1, 1, 1, 1, EG_OPSET_MAX},
    [EG_MOP_CONCAT] = {EG_X_CONCAT, 1, -1, 1, 1, EG_OPSET_MAX}, /* < 4: axis defaults to 1 */
    [EG_MOP_SPLIT] = {EG_X_SPLIT, 1, 2, -1, 1, EG_OPSET_MAX}, /* 1: a sizes input stays opaque */
    [EG_MOP_TRANSPOSE] = {EG_X_TRANSPOSE, 1, 1, 1, 1, EG_OPSET_MAX},
    [EG_MOP_RESHAPE] = {EG_X_RESHAPE, 2, 2, 1, 1, EG_OPSET_MAX}, /* < 5: shape attribute */
    [EG_MOP_FLATTEN] = {EG_X_FLATTEN, 1, 1, 1, 1, EG_OPSET_MAX},
    [EG_MOP_BATCHNORM] = {EG_X_BATCHNORM, 5, 5, 1, 6, EG_OPSET_MAX}, /* 6: is_test = 1 only */
    [EG_MOP_SOFTMAX] = {EG_X_SOFTMAX, 1, 1, 1, 1, EG_OPSET_MAX}, /* < 13: last axis only (infer.c) */
    [EG_MOP_LAYERNORM] = {EG_X_LAYERNORM, 2, 3, 1, 17, EG_OPSET_MAX}, /* 17: the first version */
    [EG_MOP_IDENTITY] = {EG_X_IDENTITY, 1, 1, 1, 1, EG_OPSET_MAX}, /* and Dropout (parse_dropout) */
    [EG_MOP_SUM] = {EG_X_SUM, 1, -1, 1, 1, EG_OPSET_MAX}, /* < 8: equal shapes (infer.c) */
};
static_assert(sizeof eg_mop_table / sizeof eg_mop_table[0] == EG_MOP_COUNT,
              "eg_mop_table needs one entry per model operator");

eg_mop eg_mop_of(const char *op_type, int opset) {
    eg_xop x = eg_xop_of(op_type);
    for (int k = 0; x != EG_X_COUNT && k < EG_MOP_COUNT; k++)
        if (eg_mop_table[k].xop == x)
            return opset >= eg_mop_table[k].opset_lo && opset <= eg_mop_table[k].opset_hi ? (eg_mop)k : EG_MOP_COUNT;
    return EG_MOP_COUNT;
}

const char *eg_mop_name(eg_mop m) { return eg_xop_name[eg_mop_table[m].xop]; }

static const char *const status_names[EG_STATUS_COUNT] = { /* ORDER STATUS */
    [EG_OK] = "ok",
    [EG_EIO] = "i/o error",
    [EG_EFORMAT] = "malformed model",
    [EG_EOPSET] = "unsupported opset",
    [EG_EGRAPH] = "bad graph",
    [EG_ESHAPE] = "shape mismatch",
    [EG_EUNSUPPORTED] = "unsupported feature",
    [EG_ELIMIT] = "over a limit",
    [EG_ENOMEM] = "out of memory",
};
static_assert(sizeof status_names / sizeof status_names[0] == EG_STATUS_COUNT,
              "status_names needs one entry per status");

/* ================= names ================= */

typedef struct {
    char *key; /* NULL: empty slot */
    int value;
} name_slot;

struct eg_names {
    name_slot *slot;
    size_t cap; /* a power of two */
    size_t used;
    const char *arena; /* keys inside [arena, arena + arena_len) belong to */
    size_t arena_len;  /* the graph's arena (eg_graph_clone), not the map */
};

/* 1 when p points into the block [lo, lo + len). */
static int in_block(const char *lo, size_t len, const void *p) {
    return lo && (uintptr_t)p - (uintptr_t)lo < len;
}

eg_names *eg_names_new(void) {
    eg_names *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->cap = 64;
    m->slot = calloc(m->cap, sizeof *m->slot);
    if (!m->slot) {
        free(m);
        return NULL;
    }
    return m;
}

void eg_names_free(eg_names *m) {
    if (!m) return;
    for (size_t i = 0; i < m->cap; i++)
        if (!in_block(m->arena, m->arena_len, m->slot[i].key)) free(m->slot[i].key);
    free(m->slot);
    free(m);
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find_slot(const eg_names *m, const char *key) {
    size_t mask = m->cap - 1;
    size_t i = (size_t)XXH3_64bits(key, strlen(key)) & mask;
    while (m->slot[i].key && strcmp(m->slot[i].key, key) != 0) i = (i + 1) & mask;
    return i;
}

int eg_names_get(const eg_names *m, const char *key) {
    size_t i = find_slot(m, key);
    return m->slot[i].key ? m->slot[i].value : -1;
}

/* Double the table (load stays under one half). */
static eg_status grow_names(eg_names *m) {
    eg_names big = {calloc(m->cap * 2, sizeof(name_slot)), m->cap * 2, m->used, m->arena, m->arena_len};
    if (!big.slot) return EG_ENOMEM;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slot[i].key) big.slot[find_slot(&big, m->slot[i].key)] = m->slot[i];
    free(m->slot);
    *m = big;
    return EG_OK;
}

eg_status eg_names_put(eg_names *m, const char *key, int value) {
    if (2 * (m->used + 1) > m->cap && grow_names(m) != EG_OK) return EG_ENOMEM;
    size_t i = find_slot(m, key);
    if (m->slot[i].key) return EG_EGRAPH;
    m->slot[i].key = strdup(key);
    if (!m->slot[i].key) return EG_ENOMEM;
    m->slot[i].value = value;
    m->used++;
    return EG_OK;
}

eg_status eg_names_set(eg_names *m, const char *key, int value) {
    size_t i = find_slot(m, key);
    if (m->slot[i].key) {
        m->slot[i].value = value;
        return EG_OK;
    }
    return eg_names_put(m, key, value);
}

/* 1 when slot s of g's name map names tensor s->value by that tensor's
 * own name: a clone then points the key at its copy of the name. */
static int key_is_tensor_name(const eg_graph *g, const name_slot *s) {
    int v = s->value;
    if (v < 0 || v >= g->n_tensors || !g->tensor[v].name) return 0;
    return s->key == g->tensor[v].name || strcmp(s->key, g->tensor[v].name) == 0;
}

/* A copy of g's name map for its clone c (whose tensors' names are copied
 * already): a key that is a tensor's name points at c's copy of it, others
 * are copied to *cursor, inside the block [lo, lo + len) (the clone's
 * arena); *cursor moves past them. NULL: no memory. */
static eg_names *names_clone_into(const eg_graph *g, const eg_graph *c, char **cursor, const char *lo, size_t len) {
    const eg_names *m = g->names;
    eg_names *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->slot = calloc(m->cap, sizeof *d->slot);
    if (!d->slot) {
        free(d);
        return NULL;
    }
    d->cap = m->cap, d->used = m->used;
    d->arena = lo, d->arena_len = len;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slot[i].key) continue;
        d->slot[i].value = m->slot[i].value;
        if (key_is_tensor_name(g, &m->slot[i])) {
            d->slot[i].key = c->tensor[m->slot[i].value].name;
            continue;
        }
        size_t n = strlen(m->slot[i].key) + 1;
        memcpy(*cursor, m->slot[i].key, n);
        d->slot[i].key = *cursor;
        *cursor += n;
    }
    return d;
}

/* ================= building ================= */

eg_graph *eg_graph_new(void) {
    eg_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->names = eg_names_new();
    if (!g->names) {
        free(g);
        return NULL;
    }
    return g;
}

static void tensor_clear(const eg_graph *g, eg_tensor *t) {
    if (t->dim_name)
        for (int i = 0; i < EG_MAX_RANK; i++) free(t->dim_name[i]);
    free(t->dim_name);
    if (!in_block(g->arena, g->arena_len, t->name)) free(t->name);
    if (t->flags & EG_TF_BORROWED) return;
    free(t->data);
    free(t->raw);
    free(t->proto);
    free(t->vinfo);
}

/* Free what node n of g owns: not what lies in g's arena. */
static void node_clear(const eg_graph *g, eg_node *n) {
    if (!in_block(g->arena, g->arena_len, n->name)) free(n->name);
    if (!n->borrowed) {
        free(n->op_type);
        free(n->domain);
        free(n->proto);
    }
    if (!in_block(g->arena, g->arena_len, n->in)) free(n->in);
    if (!in_block(g->arena, g->arena_len, n->out)) free(n->out);
    memset(n, 0, sizeof *n);
}

void eg_free(eg_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_tensors; i++) tensor_clear(g, &g->tensor[i]);
    for (int i = 0; i < g->n_nodes; i++) node_clear(g, &g->node[i]);
    free(g->tensor);
    free(g->node);
    free(g->input);
    free(g->output);
    free(g->producer);
    free(g->graph_name);
    if (!g->shells_borrowed) {
        free(g->model_shell);
        free(g->graph_shell);
    }
    eg_names_free(g->names);
    free(g->arena);
    eg_graph *base = g->base;
    free(g);
    eg_free(base);
}

void eg_graph_set_base(eg_graph *g, eg_graph *base) { g->base = base; }

/* malloc'd copy of n ints (at least one slot), or NULL. */
static int *dup_ints(const int *a, int n) {
    int *p = malloc(sizeof *p * (size_t)(n > 0 ? n : 1));
    if (p && n > 0) memcpy(p, a, sizeof *p * (size_t)n);
    return p;
}

/* strdup that passes NULL through; *ok cleared when out of memory. */
static char *dup_str(const char *s, int *ok) {
    char *p = s ? strdup(s) : NULL;
    if (s && !p) *ok = 0;
    return p;
}

/* Copy s (not NULL) to *cursor, move *cursor past it. @return the copy */
static char *arena_str(char **cursor, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = memcpy(*cursor, s, n);
    *cursor += n;
    return p;
}

/* Copy n ints (at least one slot) to *ints, move *ints past them. */
static int *arena_ints(int **ints, const int *a, int n) {
    int *p = *ints;
    if (n > 0) memcpy(p, a, sizeof *p * (size_t)n);
    *ints += n > 0 ? n : 1;
    return p;
}

/* Copy tensor t into d: the name into the arena, payloads borrowed. */
static int clone_tensor(const eg_tensor *t, eg_tensor *d, char **cursor) {
    int ok = 1;
    *d = *t;
    d->flags |= EG_TF_BORROWED;
    d->dim_name = NULL;
    d->name = t->name ? arena_str(cursor, t->name) : NULL;
    if (t->dim_name) {
        d->dim_name = calloc(EG_MAX_RANK, sizeof *d->dim_name);
        if (!d->dim_name) ok = 0;
        for (int i = 0; ok && i < EG_MAX_RANK; i++) d->dim_name[i] = dup_str(t->dim_name[i], &ok);
    }
    return ok;
}

/* Copy node n into d: name and id arrays into the arena, opaque payload
 * borrowed. */
static void clone_node(const eg_node *n, eg_node *d, char **cursor, int **ints) {
    *d = *n;
    d->borrowed = 1;
    d->name = n->name ? arena_str(cursor, n->name) : NULL;
    d->in = arena_ints(ints, n->in, n->n_in + n->n_implicit);
    d->out = arena_ints(ints, n->out, n->n_out);
}

/* The arena a clone of g needs: ints first (aligned), then the strings. */
static void arena_size(const eg_graph *g, const eg_names *m, size_t *n_ints, size_t *n_chars) {
    *n_ints = 0, *n_chars = 0;
    for (int i = 0; i < g->n_tensors; i++) *n_chars += g->tensor[i].name ? strlen(g->tensor[i].name) + 1 : 0;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        *n_chars += n->name ? strlen(n->name) + 1 : 0;
        *n_ints += (size_t)(n->n_in + n->n_implicit > 0 ? n->n_in + n->n_implicit : 1) +
                   (size_t)(n->n_out > 0 ? n->n_out : 1);
    }
    for (size_t i = 0; i < m->cap; i++) /* keys that are tensor names share the tensor's copy */
        if (m->slot[i].key && !key_is_tensor_name(g, &m->slot[i])) *n_chars += strlen(m->slot[i].key) + 1;
}

eg_graph *eg_graph_clone(const eg_graph *g) {
    eg_graph *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    int ok = 1;
    *c = *g;
    c->tensor = NULL, c->node = NULL, c->input = c->output = NULL, c->names = NULL;
    c->n_tensors = c->n_nodes = c->cap_tensors = c->cap_nodes = 0;
    c->shells_borrowed = 1;
    c->base = NULL; /* the clone borrows from g; it does not own g */
    size_t n_ints, n_chars;
    arena_size(g, g->names, &n_ints, &n_chars);
    c->arena_len = n_ints * sizeof(int) + n_chars;
    c->arena = malloc(c->arena_len ? c->arena_len : 1);
    int *ints = (int *)(void *)c->arena;
    char *cursor = c->arena ? c->arena + n_ints * sizeof(int) : NULL;
    c->producer = dup_str(g->producer, &ok);
    c->graph_name = dup_str(g->graph_name, &ok);
    c->input = dup_ints(g->input, g->n_inputs);
    c->output = dup_ints(g->output, g->n_outputs);
    int cap_t = g->n_tensors + 16, cap_n = g->n_nodes + 16;
    c->tensor = malloc(sizeof *c->tensor * (size_t)cap_t);
    c->node = malloc(sizeof *c->node * (size_t)cap_n);
    ok = ok && c->arena && c->input && c->output && c->tensor && c->node;
    if (ok) c->cap_tensors = cap_t, c->cap_nodes = cap_n;
    for (int i = 0; ok && i < g->n_tensors; i++) {
        ok = clone_tensor(&g->tensor[i], &c->tensor[i], &cursor);
        c->n_tensors = i + 1; /* freed by eg_free even when partial */
    }
    if (ok) c->names = names_clone_into(g, c, &cursor, c->arena, c->arena_len);
    ok = ok && c->names;
    for (int j = 0; ok && j < g->n_nodes; j++) {
        clone_node(&g->node[j], &c->node[j], &cursor, &ints);
        c->node[j].origin = j + 1;
        c->n_nodes = j + 1;
    }
    if (!ok) {
        eg_free(c);
        return NULL;
    }
    return c;
}

/* Make room for one more element of an array of `size`-byte items. */
static eg_status reserve(void **arr, int *cap, int n, size_t size) {
    if (n < *cap) return EG_OK;
    if (*cap > (1 << 28)) return EG_ENOMEM; /* ids are ints */
    int nc = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, (size_t)nc * size);
    if (!p) return EG_ENOMEM;
    *arr = p;
    *cap = nc;
    return EG_OK;
}

eg_status eg_graph_reserve(eg_graph *g, int extra_nodes, int extra_tensors) {
    if (g->n_nodes + extra_nodes > g->cap_nodes) {
        eg_node *n = realloc(g->node, sizeof *n * (size_t)(g->n_nodes + extra_nodes));
        if (!n) return EG_ENOMEM;
        g->node = n, g->cap_nodes = g->n_nodes + extra_nodes;
    }
    if (g->n_tensors + extra_tensors > g->cap_tensors) {
        eg_tensor *t = realloc(g->tensor, sizeof *t * (size_t)(g->n_tensors + extra_tensors));
        if (!t) return EG_ENOMEM;
        g->tensor = t, g->cap_tensors = g->n_tensors + extra_tensors;
    }
    return EG_OK;
}

eg_status eg_add_tensor(eg_graph *g, const char *name, int *id) {
    if (eg_names_get(g->names, name) != -1) return EG_EGRAPH;
    if (reserve((void **)&g->tensor, &g->cap_tensors, g->n_tensors, sizeof *g->tensor))
        return EG_ENOMEM;
    eg_tensor *t = &g->tensor[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->shape.rank = -1;
    t->producer = -1;
    t->name = strdup(name);
    if (!t->name) return EG_ENOMEM;
    eg_status rc = eg_names_put(g->names, name, g->n_tensors);
    if (rc != EG_OK) {
        free(t->name);
        return rc;
    }
    *id = g->n_tensors++;
    return EG_OK;
}

int eg_find_tensor(const eg_graph *g, const char *name) {
    return eg_names_get(g->names, name);
}

eg_status eg_reserve_name(eg_graph *g, const char *name) {
    eg_status rc = eg_names_put(g->names, name, EG_NAME_RESERVED);
    return rc == EG_EGRAPH ? EG_OK : rc;
}

eg_status eg_add_node(eg_graph *g, eg_kind kind, const char *name, int n_in,
                      int n_implicit, int n_out, int *id) {
    if (reserve((void **)&g->node, &g->cap_nodes, g->n_nodes, sizeof *g->node))
        return EG_ENOMEM;
    eg_node *n = &g->node[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->name = strdup(name ? name : "");
    n->in = malloc(sizeof(int) * (size_t)(n_in + n_implicit + 1));
    n->out = malloc(sizeof(int) * (size_t)(n_out + 1));
    if (!n->name || !n->in || !n->out) {
        node_clear(g, n);
        return EG_ENOMEM;
    }
    n->n_in = n_in;
    n->n_implicit = n_implicit;
    n->n_out = n_out;
    for (int i = 0; i < n_in + n_implicit; i++) n->in[i] = -1;
    for (int i = 0; i < n_out; i++) n->out[i] = -1;
    *id = g->n_nodes++;
    return EG_OK;
}

/* ================= structure ================= */

/* Set producers; a tensor written twice, or written while also being a
 * graph input or a value, is an error. */
static eg_status index_producers(eg_graph *g, char *err, size_t errlen) {
    for (int i = 0; i < g->n_tensors; i++) g->tensor[i].producer = -1;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        for (int k = 0; k < n->n_out; k++) {
            if (n->out[k] < 0) continue;
            eg_tensor *t = &g->tensor[n->out[k]];
            if (t->producer >= 0)
                return eg_errf(err, errlen, EG_EGRAPH, "tensor '%s' is written by node '%s' and by node '%s'", t->name, g->node[t->producer].name, n->name);
            if (t->flags & (EG_TF_INPUT | EG_TF_INIT))
                return eg_errf(err, errlen, EG_EGRAPH, "node '%s' writes '%s', which is a graph %s", n->name, t->name, t->flags & EG_TF_INPUT ? "input" : "initializer");
            t->producer = j;
        }
    }
    return EG_OK;
}

static int defined(const eg_tensor *t) {
    return t->producer >= 0 || (t->flags & (EG_TF_INPUT | EG_TF_INIT | EG_TF_SPARSE));
}

eg_status eg_index(eg_graph *g, char *err, size_t errlen) {
    char op[96];
    eg_status rc = index_producers(g, err, errlen);
    if (rc != EG_OK) return rc;
    for (int j = 0; j < g->n_nodes; j++) {
        const eg_node *n = &g->node[j];
        for (int k = 0; k < n->n_in + n->n_implicit; k++)
            if (n->in[k] >= 0 && !defined(&g->tensor[n->in[k]]))
                return eg_errf(err, errlen, EG_EGRAPH, "node '%s' (%s): input '%s' is not defined (no "
                                  "initializer, graph input or node output)", n->name, eg_node_opname(n, op, sizeof op), g->tensor[n->in[k]].name);
    }
    for (int k = 0; k < g->n_outputs; k++)
        if (!defined(&g->tensor[g->output[k]]))
            return eg_errf(err, errlen, EG_EGRAPH, "graph output '%s' is not defined", g->tensor[g->output[k]].name);
    return EG_OK;
}

/* Depth-first topological order with an explicit stack (real graphs have
 * chains thousands of nodes long). state: 0 new, 1 on the stack, 2 done. */
typedef struct {
    int node, next_input;
} topo_frame;

/* Visit node `root` and everything it depends on, appending finished nodes
 * to order. @return EG_OK, or EG_EGRAPH with cyc[0] a node on a cycle and
 * cyc[1] the index of its input that leads back to it. */
static eg_status topo_visit(const eg_graph *g, int root, char *state, topo_frame *stack,
                            int *order, int *n_order, int cyc[2]) {
    int sp = 0;
    stack[sp++] = (topo_frame){root, 0};
    state[root] = 1;
    while (sp > 0) {
        topo_frame *f = &stack[sp - 1];
        const eg_node *n = &g->node[f->node];
        if (f->next_input == n->n_in + n->n_implicit) {
            state[f->node] = 2;
            order[(*n_order)++] = f->node;
            sp--;
            continue;
        }
        int t = n->in[f->next_input++];
        int p = t >= 0 ? g->tensor[t].producer : -1;
        if (p < 0 || state[p] == 2) continue;
        if (state[p] == 1) {
            cyc[0] = f->node, cyc[1] = f->next_input - 1;
            return EG_EGRAPH;
        }
        state[p] = 1;
        stack[sp++] = (topo_frame){p, 0};
    }
    return EG_OK;
}

/* Permute g->node by order and recompute producers. */
static eg_status apply_order(eg_graph *g, const int *order) {
    if (g->n_nodes <= 0) return index_producers(g, NULL, 0);
    eg_node *nn = malloc(sizeof *nn * (size_t)g->n_nodes);
    if (!nn) return EG_ENOMEM;
    for (int j = 0; j < g->n_nodes; j++) nn[j] = g->node[order[j]];
    memcpy(g->node, nn, sizeof *nn * (size_t)g->n_nodes);
    free(nn);
    return index_producers(g, NULL, 0);
}

eg_status eg_toposort(eg_graph *g, char *err, size_t errlen) {
    int node, in;
    eg_status rc = eg_toposort_at(g, &node, &in);
    if (rc != EG_EGRAPH) return rc;
    const eg_node *n = &g->node[node];
    return eg_errf(err, errlen, EG_EGRAPH, "the graph has a cycle through node '%s' (input '%s')", n->name, g->tensor[n->in[in]].name);
}

eg_status eg_toposort_at(eg_graph *g, int *cycle_node, int *cycle_in) {
    size_t n = (size_t)(g->n_nodes ? g->n_nodes : 1);
    char *state = calloc(n, 1);
    topo_frame *stack = malloc(sizeof *stack * n);
    int *order = malloc(sizeof *order * n);
    int n_order = 0, cyc[2] = {-1, -1};
    eg_status rc = state && stack && order ? EG_OK : EG_ENOMEM;
    for (int j = 0; rc == EG_OK && j < g->n_nodes; j++)
        if (state[j] == 0) rc = topo_visit(g, j, state, stack, order, &n_order, cyc);
    if (rc == EG_OK) rc = apply_order(g, order);
    *cycle_node = cyc[0], *cycle_in = cyc[1];
    free(state);
    free(stack);
    free(order);
    return rc;
}

eg_status eg_remove_nodes(eg_graph *g, const unsigned char *drop, char *err, size_t errlen) {
    int kept = 0;
    for (int j = 0; j < g->n_nodes; j++) {
        if (drop[j]) node_clear(g, &g->node[j]);
        else g->node[kept++] = g->node[j];
    }
    g->n_nodes = kept;
    return eg_index(g, err, errlen);
}

void eg_count_uses(const eg_graph *g, int *uses) {
    memset(uses, 0, sizeof *uses * (size_t)g->n_tensors);
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < g->node[j].n_in + g->node[j].n_implicit; k++)
            if (g->node[j].in[k] >= 0) uses[g->node[j].in[k]]++;
    for (int k = 0; k < g->n_outputs; k++) uses[g->output[k]]++;
}

eg_status eg_reader_index(const eg_graph *g, int **start, int **list) {
    size_t total = 0;
    int *at = calloc((size_t)g->n_tensors + 2, sizeof *at), *rd = NULL;
    if (!at) return EG_ENOMEM;
    /* count, prefix-sum, fill; a node reading t twice is listed once */
    for (int pass = 0; pass < 2; pass++) {
        for (int j = 0; j < g->n_nodes; j++) {
            const eg_node *n = &g->node[j];
            for (int k = 0; k < n->n_in + n->n_implicit; k++) {
                int v = n->in[k], dup = 0;
                for (int q = 0; q < k && !dup; q++) dup = n->in[q] == v;
                if (v < 0 || dup) continue;
                if (pass == 0) at[v + 1]++, total++;
                else rd[at[v]++] = j;
            }
        }
        if (pass == 0) {
            for (int v = 0; v < g->n_tensors; v++) at[v + 1] += at[v];
            if (!(rd = malloc(sizeof *rd * (total ? total : 1)))) {
                free(at);
                return EG_ENOMEM;
            }
        } else { /* filling advanced each start to the next one's: shift back */
            memmove(at + 1, at, sizeof *at * (size_t)g->n_tensors);
            at[0] = 0;
        }
    }
    *start = at, *list = rd;
    return EG_OK;
}

void eg_last_readers(const eg_graph *g, int *reader) {
    for (int i = 0; i < g->n_tensors; i++) reader[i] = -1;
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < g->node[j].n_in; k++)
            if (g->node[j].in[k] >= 0) reader[g->node[j].in[k]] = j;
}

/* A node is weight-only when its outputs follow from initializer values
 * and shapes alone: every input is a value (EG_TF_INIT) or the output of a
 * weight-only node, or it is an opspecs constant that reads only its
 * reference's shape. Such nodes cost nothing at run time once folded.
 * Opaque nodes never are (their meaning is unknown). */
int eg_node_weight_only(const eg_graph *g, const eg_node *n, int before, const unsigned char *weight_only) {
    int w = n->kind != EG_KIND_OPAQUE && n->n_out > 0;
    if (w && !(n->kind == EG_KIND_OPS && (ops_table[n->op].flags & OPF_CONST)))
        for (int k = 0; k < n->n_in && w; k++) {
            int t = n->in[k];
            if (t < 0) continue;
            int p = g->tensor[t].producer;
            w = (g->tensor[t].flags & EG_TF_INIT) || (p >= 0 && p < before && weight_only[p]);
        }
    return w;
}

void eg_mark_weight_only(const eg_graph *g, unsigned char *weight_only) {
    for (int j = 0; j < g->n_nodes; j++)
        weight_only[j] = (unsigned char)eg_node_weight_only(g, &g->node[j], j, weight_only);
}

/* ================= structural hash ================= */

/* A small byte buffer for one node's hash input. */
typedef struct {
    uint8_t b[512];
    size_t n;
} hash_buf;

static void hb_put(hash_buf *h, const void *p, size_t len) {
    if (h->n + len > sizeof h->b) { /* fold what we have, keep going */
        uint64_t x = XXH3_64bits(h->b, h->n);
        memcpy(h->b, &x, sizeof x);
        h->n = sizeof x;
    }
    memcpy(h->b + h->n, p, len);
    h->n += len;
}

static void hb_i64(hash_buf *h, int64_t v) {
    hb_put(h, &v, sizeof v);
}

static void hb_str(hash_buf *h, const char *s) {
    size_t len = s ? strlen(s) : 0;
    hb_i64(h, (int64_t)len);
    if (len) hb_put(h, s, len < 256 ? len : 256);
}

/* The operator part of node n: kind and everything that fixes its meaning
 * except its inputs. Attribute fields one by one (no struct padding). */
static void hash_node_op(hash_buf *h, const eg_node *n) {
    hb_i64(h, n->kind);
    switch (n->kind) {
    case EG_KIND_OPS:
        hb_i64(h, n->op);
        for (int k = 0; k < ops_table[n->op].n_params; k++) hb_i64(h, n->param[k]);
        break;
    case EG_KIND_MODEL: {
        const eg_attrs *a = &n->attr;
        hb_i64(h, n->mop);
        for (int i = 0; i < 2; i++) hb_i64(h, a->kernel[i]), hb_i64(h, a->stride[i]);
        for (int i = 0; i < 4; i++) hb_i64(h, a->pad[i]);
        hb_i64(h, a->group), hb_i64(h, a->axis), hb_i64(h, a->flags);
        hb_put(h, &a->alpha, sizeof a->alpha), hb_put(h, &a->beta, sizeof a->beta);
        hb_put(h, &a->epsilon, sizeof a->epsilon);
        hb_i64(h, a->n_ints);
        for (int i = 0; i < a->n_ints && i < EG_MAX_INTS; i++) hb_i64(h, a->ints[i]);
        break;
    }
    case EG_KIND_OPAQUE:
        hb_str(h, n->op_type), hb_str(h, n->domain), hb_str(h, n->name);
        break;
    case EG_KIND_COUNT:
        break;
    }
    hb_i64(h, n->n_in), hb_i64(h, n->n_implicit), hb_i64(h, n->n_out);
}

/* Hash of a tensor no node produces (input, initializer): its name. */
static uint64_t leaf_hash(const eg_tensor *t) {
    return XXH3_64bits_withSeed(t->name, strlen(t->name), 0x6c656166u);
}

uint64_t eg_node_hash(const eg_node *n, const uint64_t *in_hash, int k) {
    hash_buf h = {.n = 0};
    hash_node_op(&h, n);
    int n_in = n->n_in + n->n_implicit;
    int swap = n->kind == EG_KIND_OPS && (ops_table[n->op].flags & OPF_COMMUTATIVE) && n->n_in == 2 &&
               n->n_implicit == 0 && in_hash[0] > in_hash[1];
    for (int i = 0; i < n_in; i++) hb_i64(&h, (int64_t)in_hash[swap ? 1 - i : i]);
    uint64_t v[2] = {XXH3_64bits(h.b, h.n), (uint64_t)k};
    return XXH3_64bits(v, sizeof v);
}

uint64_t eg_node_share(const eg_node *n, const uint64_t *in_tok, const uint64_t *out_tok) {
    int n_in = n->n_in + n->n_implicit;
    if (n->kind == EG_KIND_OPS && n->op == OP_ENLARGE && n->n_out == 1 && n_in >= 1 && out_tok[0] == in_tok[0])
        return 0; /* an identity enlarge: the graph without it */
    hash_buf h = {.n = 0};
    hash_node_op(&h, n);
    int swap = n->kind == EG_KIND_OPS && (ops_table[n->op].flags & OPF_COMMUTATIVE) && n->n_in == 2 &&
               n->n_implicit == 0 && in_tok[0] > in_tok[1];
    for (int i = 0; i < n_in; i++) hb_i64(&h, (int64_t)in_tok[swap ? 1 - i : i]);
    for (int k = 0; k < n->n_out; k++) hb_i64(&h, (int64_t)out_tok[k]);
    return XXH3_64bits_withSeed(h.b, h.n, 0x7368617265u);
}

int eg_enlarge_is_identity(const eg_node *n, const eg_shape *in0) {
    return n->kind == EG_KIND_OPS && n->op == OP_ENLARGE && in0->rank == 4 &&
           in0->dim[2] == OPS_KERNEL_H(n->param[0]) && in0->dim[3] == OPS_KERNEL_W(n->param[0]);
}

int eg_max_inputs(const eg_graph *g) {
    int max_in = 1;
    for (int j = 0; j < g->n_nodes; j++)
        if (g->node[j].n_in + g->node[j].n_implicit > max_in) max_in = g->node[j].n_in + g->node[j].n_implicit;
    return max_in;
}

void eg_node_out_hashes(const eg_graph *g, const eg_node *n, uint64_t *th, uint64_t *buf) {
    if (n->kind == EG_KIND_OPS && n->op == OP_ENLARGE && n->in[0] >= 0 && n->out[0] >= 0 &&
        eg_enlarge_is_identity(n, &g->tensor[n->in[0]].shape)) {
        th[n->out[0]] = th[n->in[0]];
        return;
    }
    for (int k = 0; k < n->n_in + n->n_implicit; k++) buf[k] = n->in[k] >= 0 ? th[n->in[k]] : (uint64_t)-1;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0) th[n->out[k]] = eg_node_hash(n, buf, k);
}

int eg_tensor_hashes(const eg_graph *g, uint64_t *th) {
    uint64_t *buf = malloc(sizeof *buf * (size_t)eg_max_inputs(g));
    if (!buf) return -1;
    for (int i = 0; i < g->n_tensors; i++) th[i] = leaf_hash(&g->tensor[i]);
    for (int j = 0; j < g->n_nodes; j++) eg_node_out_hashes(g, &g->node[j], th, buf);
    free(buf);
    return 0;
}

uint64_t eg_outputs_hash(const eg_graph *g, const uint64_t *out_hash) {
    uint64_t r = XXH3_64bits(&g->n_outputs, sizeof g->n_outputs);
    for (int k = 0; k < g->n_outputs; k++) /* chained: the order matters */
        r = XXH3_64bits_withSeed(&out_hash[k], sizeof out_hash[k], r);
    return r;
}

/* Graphs that differ only in the operand order of a commutative operator,
 * or in an identity enlarge, hash alike: they compute the same values at
 * the same cost, and the search would otherwise spend its budget on a
 * plateau of such copies instead of the rewrites that lead somewhere. */
uint64_t eg_graph_hash(const eg_graph *g) {
    uint64_t *th = malloc(sizeof *th * (size_t)(g->n_tensors + g->n_outputs + 1));
    if (!th || eg_tensor_hashes(g, th)) {
        free(th);
        return 0;
    }
    uint64_t *oh = th + g->n_tensors;
    for (int k = 0; k < g->n_outputs; k++) oh[k] = th[g->output[k]];
    uint64_t r = eg_outputs_hash(g, oh);
    free(th);
    return r;
}

/* ================= shapes and names ================= */

int64_t eg_shape_numel(const eg_shape *s) {
    if (s->rank < 0) return -1;
    int64_t n = 1;
    int overflow = 0;
    for (int i = 0; i < s->rank; i++) {
        if (s->dim[i] < 0) return -1;
        if (s->dim[i] && n > INT64_MAX / s->dim[i]) overflow = 1;
        else n *= s->dim[i];
    }
    return overflow ? -2 : n;
}

int64_t eg_param_count(const eg_graph *g) {
    int64_t n = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const eg_tensor *t = &g->tensor[i];
        int64_t k = (t->flags & (EG_TF_INIT | EG_TF_SPARSE)) ? eg_shape_numel(&t->shape) : 0;
        if (k > 0 && n <= INT64_MAX - k) n += k;
    }
    return n;
}

void eg_tensor_set_inferred(eg_tensor *t, int dtype, const eg_shape *s) {
    eg_shape m = *s;
    for (int i = 0; i < m.rank && i < EG_MAX_RANK; i++)
        if (m.dim[i] < 0 || m.dim[i] > EG_DIM_MAX) m.dim[i] = -1;
    if (m.rank < 0 || m.rank > EG_MAX_RANK) m = t->shape;
    else if (t->shape.rank == m.rank)
        for (int i = 0; i < m.rank; i++)
            if (m.dim[i] < 0) m.dim[i] = t->shape.dim[i];
    if (t->dim_name && t->shape.rank != m.rank) {
        for (int i = 0; i < EG_MAX_RANK; i++) free(t->dim_name[i]);
        free(t->dim_name);
        t->dim_name = NULL;
    }
    if (dtype) t->dtype = dtype;
    t->shape = m;
}

int eg_shape_known(const eg_shape *s) {
    if (s->rank < 0) return 0;
    for (int i = 0; i < s->rank; i++)
        if (s->dim[i] < 0) return 0;
    return 1;
}

int eg_shape_equal(const eg_shape *a, const eg_shape *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return 0;
    return 1;
}

const eg_tensor *eg_node_in(const eg_graph *g, const eg_node *n, int k) {
    if (k >= n->n_in || n->in[k] < 0) return NULL;
    return &g->tensor[n->in[k]];
}

const eg_shape *eg_node_in_shape(const eg_graph *g, const eg_node *n, int k) {
    static const eg_shape unknown = {-1, {0}};
    const eg_tensor *t = eg_node_in(g, n, k);
    return t ? &t->shape : &unknown;
}

int eg_conv_1x1(const eg_graph *g, const eg_node *n) {
    const eg_shape *w = eg_node_in_shape(g, n, 1);
    return n->kind == EG_KIND_OPS && n->op == OP_CONV2D && w->rank == 4 && w->dim[2] == 1 &&
           w->dim[3] == 1;
}

static int64_t broadcast_dim(int64_t a, int64_t b) {
    if (a == 1) return b;
    if (b == 1) return a;
    if (a < 0) return b < 0 ? -1 : b;
    if (b < 0) return a;
    return a == b ? a : -2;
}

int eg_shape_broadcast(const eg_shape *a, const eg_shape *b, eg_shape *o) {
    eg_shape r = {-1, {0}};
    if (a->rank >= 0 && b->rank >= 0) {
        r.rank = a->rank > b->rank ? a->rank : b->rank;
        for (int i = 0; i < r.rank; i++) {
            int ia = i - (r.rank - a->rank), ib = i - (r.rank - b->rank);
            r.dim[i] = broadcast_dim(ia >= 0 ? a->dim[ia] : 1, ib >= 0 ? b->dim[ib] : 1);
            if (r.dim[i] == -2) return -1;
        }
    }
    *o = r;
    return 0;
}

const char *eg_shape_str(const eg_shape *s, char *const *names, char *buf, size_t len) {
    size_t n = 0;
    if (s->rank < 0) {
        snprintf(buf, len, "[?]");
        return buf;
    }
    n += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < s->rank && n < len; i++) {
        const char *sep = i ? "," : "";
        if (s->dim[i] >= 0)
            n += (size_t)snprintf(buf + n, len - n, "%s%lld", sep, (long long)s->dim[i]);
        else if (names && names[i])
            n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, names[i]);
        else
            n += (size_t)snprintf(buf + n, len - n, "%s?", sep);
    }
    if (n < len) snprintf(buf + n, len - n, "]");
    return buf;
}

int eg_to_ten_shape(const eg_shape *s, ten_shape *t) {
    memset(t, 0, sizeof *t);
    if (s->rank < 0 || s->rank > TEN_MAX_RANK) return 0;
    t->rank = s->rank;
    for (int i = 0; i < s->rank; i++) {
        if (s->dim[i] < 1 || s->dim[i] > TEN_MAX_DIM) return 0;
        t->dim[i] = (int32_t)s->dim[i];
    }
    return ten_shape_valid(t);
}

void eg_from_ten_shape(const ten_shape *t, eg_shape *s) {
    memset(s, 0, sizeof *s);
    s->rank = t->rank;
    for (int i = 0; i < t->rank; i++) s->dim[i] = t->dim[i];
}

size_t eg_dtype_size(int dtype) {
    switch (dtype) {
    case EG_DT_FLOAT: case EG_DT_INT32: case EG_DT_UINT32: return 4;
    case EG_DT_UINT8: case EG_DT_INT8: case EG_DT_BOOL: return 1;
    case EG_DT_UINT16: case EG_DT_INT16: case EG_DT_FLOAT16: case EG_DT_BFLOAT16: return 2;
    case EG_DT_INT64: case EG_DT_DOUBLE: case EG_DT_UINT64: return 8;
    default: return 0; /* string, complex, 4-bit and 8-bit floats: opaque use only */
    }
}

const char *eg_dtype_name(int dtype) {
    static const char *const names[] = {
        "undefined", "float32", "uint8", "int8", "uint16", "int16", "int32", "int64",
        "string", "bool", "float16", "float64", "uint32", "uint64", "complex64",
        "complex128", "bfloat16"};
    if (dtype >= 0 && dtype < (int)(sizeof names / sizeof names[0])) return names[dtype];
    return "other";
}

eg_status eg_verrf(char *err, size_t errlen, eg_status rc, const char *fmt, va_list ap) {
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    return rc;
}

eg_status eg_errf(char *err, size_t errlen, eg_status rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    eg_verrf(err, errlen, rc, fmt, ap);
    va_end(ap);
    return rc;
}

eg_status eg_verrf_after(char *err, size_t errlen, eg_status rc, const char *prefix, const char *fmt, va_list ap) {
    if (!err || !errlen) return rc;
    int k = snprintf(err, errlen, "%s", prefix);
    if (k > 0 && (size_t)k < errlen) vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
    return rc;
}

eg_status eg_node_errf(char *err, size_t errlen, eg_status rc, const eg_node *n, const char *fmt, ...) {
    char op[96], prefix[EG_ERRLEN];
    snprintf(prefix, sizeof prefix, "node '%s' (%s): ", n->name, eg_node_opname(n, op, sizeof op));
    va_list ap;
    va_start(ap, fmt);
    eg_verrf_after(err, errlen, rc, prefix, fmt, ap);
    va_end(ap);
    return rc;
}

const char *eg_status_name(eg_status s) {
    return (unsigned)s < EG_STATUS_COUNT ? status_names[s] : "unknown status";
}

const char *eg_kind_name(eg_kind k) {
    switch (k) {
    case EG_KIND_OPS: return "opspecs";
    case EG_KIND_MODEL: return "model";
    case EG_KIND_OPAQUE: return "opaque";
    case EG_KIND_COUNT: break;
    }
    return "?";
}

const char *eg_node_opname(const eg_node *n, char *buf, size_t len) {
    switch (n->kind) {
    case EG_KIND_OPS: return ops_table[n->op].name;
    case EG_KIND_MODEL: return eg_mop_name(n->mop);
    case EG_KIND_OPAQUE:
        if (!eg_default_domain(n->domain))
            snprintf(buf, len, "%s:%s", n->domain, n->op_type ? n->op_type : "?");
        else
            snprintf(buf, len, "%s", n->op_type ? n->op_type : "?");
        return buf;
    case EG_KIND_COUNT: break;
    }
    return "?";
}

int eg_float_vec(const eg_graph *g, int t, int64_t n) {
    const eg_tensor *x = t >= 0 && t < g->n_tensors ? &g->tensor[t] : NULL;
    return x && (x->flags & EG_TF_INIT) && x->dtype == EG_DT_FLOAT && x->data &&
           x->shape.rank == 1 && x->shape.dim[0] == n;
}

int eg_replaceable(const eg_graph *g, int t) {
    const eg_tensor *x = &g->tensor[t];
    return (x->flags & EG_TF_INPUT) && (!(x->flags & EG_TF_INIT) || g->ir_version >= 4);
}

int eg_default_domain(const char *domain) { return !domain || !domain[0] || strcmp(domain, "ai.onnx") == 0; }
