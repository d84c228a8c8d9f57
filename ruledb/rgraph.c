/* rgraph.c - rule graphs: validation, shapes, evaluation, text form,
 * canonical encoding. See rgraph.h for the ref and symbolic-size encodings. */
#include "rgraph.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static_assert(OP_COUNT < 256, "rg_encode stores an operator in one byte");
static_assert(RG_MAX_REFS <= 256, "rg_ref is one byte");

/* Format a message into err (when given) and return code. */
static rg_status fail(rg_status code, char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- validation ---- */

/* The lowest symbolic size value any graph may hold (input 7, axis 3);
 * checked first so that negating a hostile INT32_MIN never overflows. */
#define SYM_MIN RG_SYM_SIZE(RG_MAX_INPUTS - 1, TEN_MAX_RANK - 1)

/* 1 when v is a valid value of kind in a graph with n_inputs inputs. A
 * literal is valid when it survives ops_param_str -> ops_param_parse
 * unchanged: one definition of "valid" for files, dumps and axioms. */
static int param_ok(ops_pkind kind, int32_t v, int n_inputs) {
    if (kind == PK_SIZE && RG_IS_SYM_SIZE(v))
        return v >= SYM_MIN && RG_SYM_INPUT(v) < n_inputs;
    if (RG_IS_SYM_GROUPS(kind, v)) return v >= RG_SYM_GROUPS(RG_MAX_GSYMS - 1);
    char buf[16];
    int32_t back;
    ops_param_str(kind, v, buf);
    return ops_param_parse(kind, buf, &back) == OPS_OK && back == v;
}

/* Why ref r cannot be used by a consumer placed before node `limit` (the
 * node's own index, or n_nodes for outputs); NULL when it can. */
static const char *ref_problem(const rg_graph *g, rg_ref r, int limit) {
    if (RG_IS_INPUT(r)) return r < g->n_inputs ? NULL : "names a missing input";
    int j = RG_NODE_INDEX(r);
    if (j >= RG_MAX_NODES) return "is out of range";
    if (j >= g->n_nodes) return "names a missing node";
    return j < limit ? NULL : "is not an earlier node (forward reference or cycle)";
}

static rg_status validate_node(const rg_graph *g, int j, uint8_t used[RG_MAX_NODES],
                               char *err, size_t errlen) {
    const rg_node *n = &g->node[j];
    if ((unsigned)n->op >= OP_COUNT)
        return fail(RG_EINVAL, err, errlen, "node %d: operator %u unknown", j, (unsigned)n->op);
    const ops_info *o = &ops_table[n->op];
    for (int k = 0; k < o->n_params; k++)
        if (!param_ok(o->pkind[k], n->param[k], g->n_inputs))
            return fail(RG_EINVAL, err, errlen, "node %d (%s): %s %d invalid", j,
                        o->name, o->pname[k], (int)n->param[k]);
    for (int k = 0; k < o->arity; k++) {
        const char *why = ref_problem(g, n->in[k], j);
        if (why)
            return fail(RG_EINVAL, err, errlen, "node %d (%s): input %d (ref %u) %s", j,
                        o->name, k, (unsigned)n->in[k], why);
        if (!RG_IS_INPUT(n->in[k])) used[RG_NODE_INDEX(n->in[k])] = 1;
    }
    return RG_OK;
}

rg_status rg_validate(const rg_graph *g, char *err, size_t errlen) {
    if (g->n_inputs < 0 || g->n_inputs > RG_MAX_INPUTS)
        return fail(RG_EINVAL, err, errlen, "%d inputs (max %d)", g->n_inputs, RG_MAX_INPUTS);
    if (g->n_nodes < 0 || g->n_nodes > RG_MAX_NODES)
        return fail(RG_EINVAL, err, errlen, "%d nodes (max %d)", g->n_nodes, RG_MAX_NODES);
    if (g->n_outputs < 1 || g->n_outputs > RG_MAX_OUTPUTS)
        return fail(RG_EINVAL, err, errlen, "%d outputs (need 1..%d)", g->n_outputs,
                    RG_MAX_OUTPUTS);
    uint8_t used[RG_MAX_NODES] = {0};
    for (int j = 0; j < g->n_nodes; j++) {
        rg_status rc = validate_node(g, j, used, err, errlen);
        if (rc != RG_OK) return rc;
    }
    for (int k = 0; k < g->n_outputs; k++) {
        const char *why = ref_problem(g, g->out[k], g->n_nodes);
        if (why)
            return fail(RG_EINVAL, err, errlen, "output %d (ref %u) %s", k,
                        (unsigned)g->out[k], why);
        if (!RG_IS_INPUT(g->out[k])) used[RG_NODE_INDEX(g->out[k])] = 1;
    }
    for (int j = 0; j < g->n_nodes; j++)
        if (!used[j])
            return fail(RG_EINVAL, err, errlen, "node %d (%s) is dead: no output uses it",
                        j, ops_table[g->node[j].op].name);
    return RG_OK;
}

/* ---- shapes and evaluation ---- */

uint32_t rg_node_inputs(const rg_node *n) {
    const ops_info *o = &ops_table[n->op];
    uint32_t m = 0;
    for (int k = 0; k < o->n_params; k++)
        if (o->pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(n->param[k]))
            m |= 1u << RG_SYM_INPUT(n->param[k]);
    for (int k = 0; k < o->arity; k++)
        if (RG_IS_INPUT(n->in[k])) m |= 1u << n->in[k];
    return m;
}

uint32_t rg_used_inputs(const rg_graph *g) {
    uint32_t m = 0;
    for (int j = 0; j < g->n_nodes; j++) m |= rg_node_inputs(&g->node[j]);
    for (int k = 0; k < g->n_outputs; k++)
        if (RG_IS_INPUT(g->out[k])) m |= 1u << g->out[k];
    return m;
}

ops_set rg_ops_written(const rg_graph *g) {
    ops_set m = 0;
    for (int j = 0; j < g->n_nodes; j++) m |= OPS_SET_BIT(g->node[j].op);
    return m;
}

int rg_can_rewrite(const rg_graph *src, const rg_graph *dst) {
    for (int k = 0; k < src->n_outputs; k++)
        if (RG_IS_INPUT(src->out[k])) return 0;
    return !(rg_used_inputs(dst) & ~rg_used_inputs(src));
}

rg_status rg_param_value(const rg_graph *g, int j, int k, const ten_shape *in,
                         int32_t *value) {
    int32_t v = g->node[j].param[k];
    ops_pkind kind = ops_table[g->node[j].op].pkind[k];
    if (RG_IS_SYM_GROUPS(kind, v)) return RG_ESHAPE;
    if (kind != PK_SIZE || !RG_IS_SYM_SIZE(v)) {
        *value = v;
        return RG_OK;
    }
    const ten_shape *s = &in[RG_SYM_INPUT(v)];
    if (RG_SYM_AXIS(v) >= s->rank) return RG_ESHAPE;
    *value = s->dim[RG_SYM_AXIS(v)];
    return RG_OK;
}

int rg_has_gsym(const rg_graph *g) {
    for (int j = 0; j < g->n_nodes; j++)
        for (int k = 0; k < ops_table[g->node[j].op].n_params; k++)
            if (RG_IS_SYM_GROUPS(ops_table[g->node[j].op].pkind[k], g->node[j].param[k])) return 1;
    return 0;
}

/* The group count a conv's input shapes give (C = groups * I), or 0. */
static int32_t groups_of(const ten_shape *x, const ten_shape *w) {
    if (x->rank < 2 || w->rank < 2 || w->dim[1] < 1 || x->dim[1] % w->dim[1]) return 0;
    return x->dim[1] / w->dim[1];
}

rg_status rg_node_params(const rg_graph *g, int j, const ten_shape *in,
                         const ten_shape shape[RG_MAX_REFS], int32_t gval[RG_MAX_GSYMS],
                         int32_t p[OPS_MAX_PARAMS]) {
    const rg_node *n = &g->node[j];
    memset(p, 0, OPS_MAX_PARAMS * sizeof *p);
    for (int k = 0; k < ops_table[n->op].n_params; k++) {
        int32_t v = n->param[k];
        if (!RG_IS_SYM_GROUPS(ops_table[n->op].pkind[k], v)) {
            if (rg_param_value(g, j, k, in, &p[k]) != RG_OK) return RG_ESHAPE;
            continue;
        }
        /* only conv2d has a group count; its inputs are x and the weight */
        int32_t have = groups_of(&shape[n->in[0]], &shape[n->in[1]]);
        int32_t *bound = &gval[RG_GSYM_INDEX(v)];
        if (have < 1 || (*bound > 0 && *bound != have)) return RG_ESHAPE;
        p[k] = *bound = have;
    }
    return RG_OK;
}

/* All parameters of node j with symbols resolved (rg_node_params), with
 * the reason in err. */
static rg_status resolve_params(const rg_graph *g, int j, const ten_shape *in,
                                const ten_shape shape[RG_MAX_REFS], int32_t gval[RG_MAX_GSYMS],
                                int32_t p[OPS_MAX_PARAMS], char *err, size_t errlen) {
    if (rg_node_params(g, j, in, shape, gval, p) == RG_OK) return RG_OK;
    const rg_node *n = &g->node[j];
    for (int k = 0; k < ops_table[n->op].n_params; k++) {
        int32_t v = n->param[k];
        if (ops_table[n->op].pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(v) &&
            RG_SYM_AXIS(v) >= in[RG_SYM_INPUT(v)].rank)
            return fail(RG_ESHAPE, err, errlen, "node %d (%s): size (dim %d x%d) but x%d has rank %d",
                        j, ops_table[n->op].name, RG_SYM_AXIS(v), RG_SYM_INPUT(v), RG_SYM_INPUT(v),
                        in[RG_SYM_INPUT(v)].rank);
    }
    return fail(RG_ESHAPE, err, errlen, "node %d (%s): the group count does not fit the shapes", j,
                ops_table[n->op].name);
}

rg_status rg_infer_shapes(const rg_graph *g, const ten_shape *in,
                          ten_shape shape[RG_MAX_REFS], char *err, size_t errlen) {
    for (int i = 0; i < g->n_inputs; i++) {
        if (!ten_shape_valid(&in[i]))
            return fail(RG_ESHAPE, err, errlen, "input x%d: invalid shape", i);
        shape[RG_IN(i)] = in[i];
    }
    int32_t gval[RG_MAX_GSYMS] = {0};
    for (int j = 0; j < g->n_nodes; j++) {
        const rg_node *n = &g->node[j];
        int32_t p[OPS_MAX_PARAMS];
        ten_shape ins[OPS_MAX_ARITY];
        char operr[OPS_ERRLEN];
        rg_status rc = resolve_params(g, j, in, shape, gval, p, err, errlen);
        if (rc != RG_OK) return rc;
        for (int k = 0; k < ops_table[n->op].arity; k++) ins[k] = shape[n->in[k]];
        if (ops_infer_shape(n->op, p, ins, &shape[RG_NODE(j)], err ? operr : NULL) != OPS_OK)
            return fail(RG_ESHAPE, err, errlen, "node %d (%s): %s", j,
                        ops_table[n->op].name, operr);
    }
    return RG_OK;
}

rg_status rg_eval_values(const rg_graph *g, ten val[RG_MAX_REFS]) {
    ten_shape in[RG_MAX_INPUTS], shape[RG_MAX_REFS];
    int32_t gval[RG_MAX_GSYMS] = {0};
    for (int i = 0; i < g->n_inputs; i++) in[i] = val[RG_IN(i)].shape;
    for (int r = 0; r < RG_MAX_REFS; r++) shape[r] = val[r].shape;
    for (int j = 0; j < g->n_nodes; j++) {
        const rg_node *n = &g->node[j];
        int32_t p[OPS_MAX_PARAMS];
        const ten *args[OPS_MAX_ARITY] = {0};
        /* Shapes were inferred by the caller, so the symbols resolve. */
        if (rg_node_params(g, j, in, shape, gval, p) != RG_OK) return RG_ESHAPE;
        for (int k = 0; k < ops_table[n->op].arity; k++) args[k] = &val[n->in[k]];
        if (ops_eval(n->op, p, args, &val[RG_NODE(j)]) != OPS_OK) return RG_ENOMEM;
    }
    return RG_OK;
}

static void free_nodes(const rg_graph *g, ten val[RG_MAX_REFS]) {
    for (int j = 0; j < g->n_nodes; j++) ten_free(&val[RG_NODE(j)]);
}

/* Allocate out[k] and copy the value of output k into it. */
static rg_status copy_outputs(const rg_graph *g, const ten val[RG_MAX_REFS], ten *out) {
    for (int k = 0; k < g->n_outputs; k++) {
        const ten *v = &val[g->out[k]];
        if (ten_alloc(&out[k], &v->shape) != 0) {
            while (k-- > 0) ten_free(&out[k]);
            return RG_ENOMEM;
        }
        memcpy(out[k].data, v->data, (size_t)ten_numel(&v->shape) * sizeof *v->data);
    }
    return RG_OK;
}

rg_status rg_eval(const rg_graph *g, const ten *in, ten *out, char *err, size_t errlen) {
    ten_shape shapes[RG_MAX_REFS], ins[RG_MAX_INPUTS];
    ten val[RG_MAX_REFS] = {0};
    for (int i = 0; i < g->n_inputs; i++) ins[i] = in[i].shape;
    rg_status rc = rg_infer_shapes(g, ins, shapes, err, errlen);
    if (rc != RG_OK) return rc;
    for (int i = 0; i < g->n_inputs; i++) val[RG_IN(i)] = in[i]; /* borrowed */
    for (int j = 0; j < g->n_nodes; j++)
        if (ten_alloc(&val[RG_NODE(j)], &shapes[RG_NODE(j)]) != 0) {
            rc = fail(RG_ENOMEM, err, errlen, "out of memory");
            goto cleanup;
        }
    rc = rg_eval_values(g, val);
    if (rc == RG_OK) rc = copy_outputs(g, val, out);
    if (rc != RG_OK)
        fail(rc, err, errlen, rc == RG_ENOMEM ? "out of memory" : "evaluation failed");
cleanup:
    free_nodes(g, val);
    return rc;
}

/* ---- text form ---- */

/* A snprintf-style appender: counts everything, stores what fits. */
typedef struct {
    char *buf;
    size_t len, pos;
} sbuf;

static void sb_puts(sbuf *s, const char *t) {
    size_t n = strlen(t);
    if (s->pos + 1 < s->len) {
        size_t room = s->len - 1 - s->pos;
        memcpy(s->buf + s->pos, t, n < room ? n : room);
    }
    s->pos += n;
    if (s->len) s->buf[s->pos < s->len ? s->pos : s->len - 1] = '\0';
}

static void sb_param(sbuf *s, ops_pkind kind, int32_t v) {
    char t[48];
    if (kind == PK_SIZE && RG_IS_SYM_SIZE(v))
        snprintf(t, sizeof t, " (dim %d x%d)", RG_SYM_AXIS(v), RG_SYM_INPUT(v));
    else if (RG_IS_SYM_GROUPS(kind, v))
        snprintf(t, sizeof t, " g%d", RG_GSYM_INDEX(v));
    else {
        t[0] = ' ';
        ops_param_str(kind, v, t + 1);
    }
    sb_puts(s, t);
}

static void sb_ref(sbuf *s, const rg_graph *g, rg_ref r) {
    char t[16];
    if (RG_IS_INPUT(r)) {
        snprintf(t, sizeof t, "x%d", (int)r);
        sb_puts(s, t);
        return;
    }
    const rg_node *n = &g->node[RG_NODE_INDEX(r)];
    const ops_info *o = &ops_table[n->op];
    sb_puts(s, "(");
    sb_puts(s, o->name);
    for (int k = 0; k < o->n_params; k++) sb_param(s, o->pkind[k], n->param[k]);
    for (int k = 0; k < o->arity; k++) {
        sb_puts(s, " ");
        sb_ref(s, g, n->in[k]);
    }
    sb_puts(s, ")");
}

size_t rg_format_output(const rg_graph *g, int k, char *buf, size_t len) {
    sbuf s = {buf, len, 0};
    sb_puts(&s, "");
    sb_ref(&s, g, g->out[k]);
    return s.pos;
}

size_t rg_format(const rg_graph *g, char *buf, size_t len) {
    sbuf s = {buf, len, 0};
    sb_puts(&s, "");
    for (int k = 0; k < g->n_outputs; k++) {
        if (k) sb_puts(&s, ", ");
        sb_ref(&s, g, g->out[k]);
    }
    return s.pos;
}

/* ---- parser ---- */

typedef struct {
    const char *s;
    size_t pos;
    rg_graph *g;
    int max_in; /* highest input index seen */
    char *err;
    size_t errlen;
} parser;

static rg_status perr(parser *p, const char *what) {
    return fail(RG_EINVAL, p->err, p->errlen, "col %zu: %s", p->pos + 1, what);
}

static void skip_ws(parser *p) {
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
           p->s[p->pos] == '\r')
        p->pos++;
}

/* Read a bare word into buf (up to the next space, paren or comma). */
static rg_status atom(parser *p, char buf[32]) {
    skip_ws(p);
    size_t n = 0;
    while (p->s[p->pos] && !strchr(" \t\r\n(),", p->s[p->pos])) {
        if (n == 31) return perr(p, "word too long");
        buf[n++] = p->s[p->pos++];
    }
    buf[n] = '\0';
    return n ? RG_OK : perr(p, "expected a word");
}

static rg_status expect(parser *p, char c) {
    skip_ws(p);
    if (p->s[p->pos] != c) return perr(p, c == ')' ? "expected ')'" : "expected '('");
    p->pos++;
    return RG_OK;
}

/* "x3" -> 3 */
static rg_status input_name(parser *p, const char *w, int *i) {
    if (w[0] != 'x' || w[1] < '0' || w[1] > '9' || w[2] != '\0' ||
        w[1] - '0' >= RG_MAX_INPUTS)
        return perr(p, "expected an input x0..x7");
    *i = w[1] - '0';
    if (*i > p->max_in) p->max_in = *i;
    return RG_OK;
}

/* "(dim A xI)" after the '(' was seen. */
static rg_status sym_size(parser *p, int32_t *v) {
    char w[32];
    int i;
    if (atom(p, w) || strcmp(w, "dim") != 0) return perr(p, "expected (dim AXIS xI)");
    if (atom(p, w) || w[0] < '0' || w[0] >= '0' + TEN_MAX_RANK || w[1])
        return perr(p, "expected an axis 0..3");
    int a = w[0] - '0';
    if (atom(p, w) || input_name(p, w, &i)) return RG_EINVAL;
    *v = RG_SYM_SIZE(i, a);
    return expect(p, ')');
}

static rg_status param(parser *p, ops_pkind kind, int32_t *v) {
    char w[32];
    skip_ws(p);
    if (p->s[p->pos] == '(') {
        if (kind != PK_SIZE) return perr(p, "only a size may be (dim ...)");
        p->pos++;
        return sym_size(p, v);
    }
    if (atom(p, w)) return RG_EINVAL;
    if (kind == PK_GROUPS && w[0] == 'g') { /* a group-count symbol g0..g3 */
        if (w[1] < '0' || w[1] >= '0' + RG_MAX_GSYMS || w[2]) return perr(p, "expected g0..g3");
        *v = RG_SYM_GROUPS(w[1] - '0');
        return RG_OK;
    }
    if (ops_param_parse(kind, w, v) != OPS_OK) return perr(p, "invalid parameter");
    return RG_OK;
}

/* The index in g of a node equal to n (operator, parameters, operands),
 * appended when new (hash-consing); -1 when g is full. */
static int node_interned(rg_graph *g, const rg_node *n) {
    const ops_info *o = &ops_table[n->op];
    for (int j = 0; j < g->n_nodes; j++) {
        const rg_node *m = &g->node[j];
        if (m->op == n->op &&
            memcmp(m->param, n->param, (size_t)o->n_params * sizeof *n->param) == 0 &&
            memcmp(m->in, n->in, (size_t)o->arity * sizeof *n->in) == 0)
            return j;
    }
    if (g->n_nodes == RG_MAX_NODES) return -1;
    g->node[g->n_nodes] = *n;
    return g->n_nodes++;
}

/* The ref of a node equal to n, appending it when new. */
static rg_status intern(parser *p, const rg_node *n, rg_ref *r) {
    int j = node_interned(p->g, n);
    if (j < 0) return perr(p, "more than 8 nodes");
    *r = RG_NODE(j);
    return RG_OK;
}

static rg_status expr(parser *p, rg_ref *r, int depth) {
    char w[32];
    rg_node n;
    memset(&n, 0, sizeof n);
    skip_ws(p);
    if (p->s[p->pos] != '(') {
        int i;
        if (atom(p, w) || input_name(p, w, &i)) return RG_EINVAL;
        *r = RG_IN(i);
        return RG_OK;
    }
    if (depth >= RG_MAX_NODES) return perr(p, "nested deeper than 8 nodes");
    p->pos++;
    if (atom(p, w)) return RG_EINVAL;
    n.op = ops_by_name(w);
    if (n.op == OP_COUNT) return perr(p, "unknown operator");
    const ops_info *o = &ops_table[n.op];
    for (int k = 0; k < o->n_params; k++)
        if (param(p, o->pkind[k], &n.param[k])) return RG_EINVAL;
    for (int k = 0; k < o->arity; k++)
        if (expr(p, &n.in[k], depth + 1)) return RG_EINVAL;
    if (expect(p, ')')) return RG_EINVAL;
    return intern(p, &n, r);
}

rg_status rg_parse(const char *text, rg_graph *g, char *err, size_t errlen) {
    parser p = {text, 0, g, -1, err, errlen};
    memset(g, 0, sizeof *g);
    for (;;) {
        if (g->n_outputs == RG_MAX_OUTPUTS) return perr(&p, "more than 4 outputs");
        if (expr(&p, &g->out[g->n_outputs], 0)) return RG_EINVAL;
        g->n_outputs++;
        skip_ws(&p);
        if (p.s[p.pos] == '\0') break;
        if (p.s[p.pos] != ',') return perr(&p, "expected ',' or the end");
        p.pos++;
    }
    g->n_inputs = p.max_in + 1;
    return rg_validate(g, err, errlen);
}

/* ---- canonical encoding ---- */

size_t rg_encode(const rg_graph *g, uint8_t buf[RG_ENC_MAX]) {
    size_t n = 0;
    buf[n++] = (uint8_t)g->n_nodes;
    buf[n++] = (uint8_t)g->n_inputs;
    buf[n++] = (uint8_t)g->n_outputs;
    for (int j = 0; j < g->n_nodes; j++) {
        const rg_node *nd = &g->node[j];
        const ops_info *o = &ops_table[nd->op];
        buf[n++] = (uint8_t)nd->op;
        for (int k = 0; k < o->n_params; k++) {
            uint32_t u = (uint32_t)nd->param[k] ^ 0x80000000u;
            for (int b = 3; b >= 0; b--) buf[n++] = (uint8_t)(u >> (8 * b));
        }
        for (int k = 0; k < o->arity; k++) buf[n++] = nd->in[k];
    }
    for (int k = 0; k < g->n_outputs; k++) buf[n++] = g->out[k];
    assert(n <= RG_ENC_MAX);
    return n;
}

int rg_compare(const rg_graph *a, const rg_graph *b) {
    uint8_t ea[RG_ENC_MAX], eb[RG_ENC_MAX];
    size_t na = rg_encode(a, ea), nb = rg_encode(b, eb);
    int c = memcmp(ea, eb, na < nb ? na : nb);
    if (c) return c;
    return (na > nb) - (na < nb);
}

int rg_equal(const rg_graph *a, const rg_graph *b) { return rg_compare(a, b) == 0; }

uint64_t rg_hash(const rg_graph *g) {
    uint8_t e[RG_ENC_MAX];
    return XXH3_64bits(e, rg_encode(g, e));
}

/* ---- canonical renaming ---- */

typedef struct {
    int map[RG_MAX_INPUTS]; /* old input -> new, -1 unseen */
    int next;
    int gmap[RG_MAX_GSYMS]; /* old group-count symbol -> new, -1 unseen */
    int gnext;
} renaming;

static void see(renaming *r, int input) {
    if (r->map[input] < 0) r->map[input] = r->next++;
}

/* Visit inputs in rg_format's order: parameters (symbolic sizes), then
 * tensor inputs, depth first. */
static void visit(const rg_graph *g, rg_ref ref, renaming *r) {
    if (RG_IS_INPUT(ref)) {
        see(r, ref);
        return;
    }
    const rg_node *n = &g->node[RG_NODE_INDEX(ref)];
    const ops_info *o = &ops_table[n->op];
    for (int k = 0; k < o->n_params; k++)
        if (o->pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(n->param[k]))
            see(r, RG_SYM_INPUT(n->param[k]));
        else if (RG_IS_SYM_GROUPS(o->pkind[k], n->param[k]) && r->gmap[RG_GSYM_INDEX(n->param[k])] < 0)
            r->gmap[RG_GSYM_INDEX(n->param[k])] = r->gnext++;
    for (int k = 0; k < o->arity; k++) visit(g, n->in[k], r);
}

static void visit_graph(const rg_graph *g, renaming *r) {
    for (int k = 0; k < g->n_outputs; k++) visit(g, g->out[k], r);
}

static rg_ref rename_ref(const renaming *r, rg_ref ref) {
    return RG_IS_INPUT(ref) ? RG_IN(r->map[ref]) : ref;
}

/* g with inputs renamed (unseen inputs are unused, so never referenced). */
static void apply_renaming(const rg_graph *g, const renaming *r, rg_graph *out) {
    *out = *g;
    out->n_inputs = r->next;
    for (int j = 0; j < g->n_nodes; j++) {
        rg_node *n = &out->node[j];
        const ops_info *o = &ops_table[n->op];
        for (int k = 0; k < o->n_params; k++)
            if (o->pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(n->param[k]))
                n->param[k] = RG_SYM_SIZE(r->map[RG_SYM_INPUT(n->param[k])],
                                          RG_SYM_AXIS(n->param[k]));
            else if (RG_IS_SYM_GROUPS(o->pkind[k], n->param[k]))
                n->param[k] = RG_SYM_GROUPS(r->gmap[RG_GSYM_INDEX(n->param[k])]);
        for (int k = 0; k < o->arity; k++) n->in[k] = rename_ref(r, n->in[k]);
    }
    for (int k = 0; k < g->n_outputs; k++) out->out[k] = rename_ref(r, g->out[k]);
}

/* The node order rg_parse gives g's text, without the text: nodes in
 * post-order from the outputs (operands left to right), an equal node
 * (operator, parameters, operands) appearing once. */
typedef struct {
    const rg_graph *g;
    rg_graph *out;
    rg_ref memo[RG_MAX_NODES]; /* old node -> new ref; RG_MAX_REFS unseen */
} reorder;

static rg_ref reorder_ref(reorder *o, rg_ref r) {
    if (RG_IS_INPUT(r)) return r;
    int j = RG_NODE_INDEX(r);
    if (o->memo[j] != RG_MAX_REFS) return o->memo[j];
    const rg_node *n = &o->g->node[j];
    const ops_info *op = &ops_table[n->op];
    rg_node m;
    memset(&m, 0, sizeof m);
    m.op = n->op;
    memcpy(m.param, n->param, (size_t)op->n_params * sizeof *m.param);
    for (int k = 0; k < op->arity; k++) m.in[k] = reorder_ref(o, n->in[k]);
    /* never full: at most as many nodes as g has */
    return o->memo[j] = RG_NODE(node_interned(o->out, &m));
}

static void reorder_nodes(rg_graph *g) {
    rg_graph out;
    memset(&out, 0, sizeof out);
    out.n_inputs = g->n_inputs;
    reorder o = {g, &out, {0}};
    for (int j = 0; j < RG_MAX_NODES; j++) o.memo[j] = RG_MAX_REFS;
    out.n_outputs = g->n_outputs;
    for (int k = 0; k < g->n_outputs; k++) out.out[k] = reorder_ref(&o, g->out[k]);
    *g = out;
}

/* The renaming of src -> dst's inputs and group symbols, in order of first
 * appearance in src then dst. */
static void canon_renaming(const rg_graph *src, const rg_graph *dst, renaming *r) {
    for (int i = 0; i < RG_MAX_INPUTS; i++) r->map[i] = -1;
    for (int i = 0; i < RG_MAX_GSYMS; i++) r->gmap[i] = -1;
    r->next = r->gnext = 0;
    visit_graph(src, r);
    visit_graph(dst, r);
}

void rg_canon_inputs(const rg_graph *src, const rg_graph *dst, int map[RG_MAX_INPUTS]) {
    renaming r;
    canon_renaming(src, dst, &r);
    memcpy(map, r.map, sizeof r.map);
}

void rg_canon_rule(const rg_graph *src, const rg_graph *dst, rg_graph *csrc, rg_graph *cdst) {
    renaming r;
    canon_renaming(src, dst, &r);
    apply_renaming(src, &r, csrc);
    apply_renaming(dst, &r, cdst);
    reorder_nodes(csrc);
    reorder_nodes(cdst);
}
