/* axparse.c - axiom files: a bounded s-expression reader, then a typed
 * conversion of each top-level form into terms (syntax in axparse.h). */
#include "axparse.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s-expressions of one top-level form; reset for every axiom, so memory
 * stays bounded whatever the file size. */
#define SX_MAX_NODES 2048

typedef enum { SX_ATOM, SX_STRING, SX_LIST } sx_type;

typedef struct {
    sx_type type;
    int line, col;
    size_t off, len;    /* atom text, or raw string contents, in the input */
    int first, next;    /* list children as a linked list; -1 ends */
    int n;              /* number of children */
} sx_node;

typedef struct {
    const char *text;
    size_t len, pos;
    int line, col;
    const char *fname;
    char *err;
    sx_node node[SX_MAX_NODES];
    int n_nodes;
    ax_set *set;
    ax_axiom *ax;       /* the axiom being converted */
    uint32_t used;      /* variables of ax referenced so far */
} ax_parser;

static int fail(ax_parser *p, int rc, int line, int col, const char *fmt, ...) {
    int n = snprintf(p->err, AX_ERRLEN, "%s:%d:%d: ", p->fname, line, col);
    if (n < 0 || n >= AX_ERRLEN) return rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, AX_ERRLEN - (size_t)n, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- reader ---------------------------------------------------------- */

static int at_end(const ax_parser *p) { return p->pos >= p->len; }
static unsigned char peek(const ax_parser *p) { return (unsigned char)p->text[p->pos]; }

static void advance(ax_parser *p) {
    if (p->text[p->pos] == '\n') {
        p->line++;
        p->col = 1;
    } else {
        p->col++;
    }
    p->pos++;
}

/* Characters an atom may contain: printable ASCII except the delimiters. */
static int atom_char(unsigned char c) {
    return c > 0x20 && c < 0x7f && c != '(' && c != ')' && c != '"' && c != ';';
}

static void skip_space(ax_parser *p) {
    while (!at_end(p)) {
        unsigned char c = peek(p);
        if (c == ';') {
            while (!at_end(p) && peek(p) != '\n') advance(p);
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            advance(p);
        } else {
            return;
        }
    }
}

static int new_node(ax_parser *p, sx_type type, int *id) {
    if (p->n_nodes >= SX_MAX_NODES)
        return fail(p, AX_ELIMIT, p->line, p->col,
                    "axiom has more than %d elements", SX_MAX_NODES);
    sx_node *n = &p->node[p->n_nodes];
    *n = (sx_node){type, p->line, p->col, p->pos, 0, -1, -1, 0};
    *id = p->n_nodes++;
    return AX_OK;
}

static int read_string(ax_parser *p, int id) {
    sx_node *n = &p->node[id];
    advance(p); /* the opening quote */
    n->off = p->pos;
    while (!at_end(p) && peek(p) != '"') {
        unsigned char c = peek(p);
        if (c == '\n' || c == '\r')
            break;
        if (c < 0x20 || c == 0x7f)
            return fail(p, AX_ESYNTAX, p->line, p->col,
                        "invalid character 0x%02x in string", c);
        if (c == '\\') {
            advance(p);
            if (at_end(p) || (peek(p) != '"' && peek(p) != '\\'))
                return fail(p, AX_ESYNTAX, p->line, p->col,
                            "bad escape in string (only \\\" and \\\\)");
        }
        advance(p);
    }
    if (at_end(p) || peek(p) != '"')
        return fail(p, AX_ESYNTAX, n->line, n->col, "unterminated string");
    n->len = p->pos - n->off;
    advance(p);
    return AX_OK;
}

static int read_atom(ax_parser *p, int id) {
    sx_node *n = &p->node[id];
    if (!atom_char(peek(p)))
        return fail(p, AX_ESYNTAX, p->line, p->col, "invalid character 0x%02x",
                    peek(p));
    while (!at_end(p) && atom_char(peek(p))) advance(p);
    n->len = p->pos - n->off;
    if (n->len > AX_MAX_NAME)
        return fail(p, AX_ELIMIT, n->line, n->col,
                    "token longer than %d characters", AX_MAX_NAME);
    return AX_OK;
}

static int read_sx(ax_parser *p, int depth, int *id);

static int read_list(ax_parser *p, int depth, int id) {
    int rc, child, last = -1;
    if (depth >= AX_MAX_DEPTH)
        return fail(p, AX_ELIMIT, p->line, p->col,
                    "parentheses nested deeper than %d", AX_MAX_DEPTH);
    advance(p);
    for (;;) {
        skip_space(p);
        if (at_end(p))
            return fail(p, AX_ESYNTAX, p->node[id].line, p->node[id].col,
                        "unbalanced parens: '(' is never closed");
        if (peek(p) == ')') break;
        if ((rc = read_sx(p, depth + 1, &child)) != AX_OK) return rc;
        if (last < 0) p->node[id].first = child;
        else p->node[last].next = child;
        last = child;
        p->node[id].n++;
    }
    advance(p);
    return AX_OK;
}

/* Read one element. @pre not at end, whitespace skipped. */
static int read_sx(ax_parser *p, int depth, int *id) {
    unsigned char c = peek(p);
    int rc;
    if (c == ')')
        return fail(p, AX_ESYNTAX, p->line, p->col, "unbalanced parens: unexpected ')'");
    sx_type t = c == '(' ? SX_LIST : c == '"' ? SX_STRING : SX_ATOM;
    if ((rc = new_node(p, t, id)) != AX_OK) return rc;
    if (t == SX_LIST) return read_list(p, depth, *id);
    if (t == SX_STRING) return read_string(p, *id);
    return read_atom(p, *id);
}

/* ---- conversion helpers ---------------------------------------------- */

/* Copy an atom's text into buf (AX_MAX_NAME + 1 bytes). */
static const char *atom_text(const ax_parser *p, const sx_node *n, char *buf) {
    size_t len = n->len > AX_MAX_NAME ? AX_MAX_NAME : n->len;
    memcpy(buf, p->text + n->off, len);
    buf[len] = '\0';
    return buf;
}

static int is_atom(const ax_parser *p, const sx_node *n, const char *s) {
    return n->type == SX_ATOM && n->len == strlen(s) &&
           memcmp(p->text + n->off, s, n->len) == 0;
}

static int is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* [a-z][a-z0-9<extra>]* */
static int is_ident(const char *s, char extra) {
    if (!is_lower(*s)) return 0;
    for (s++; *s; s++)
        if (!is_lower(*s) && !is_digit(*s) && *s != extra) return 0;
    return 1;
}

/* Element i of a list. @pre i < list->n (callers check the length). */
static const sx_node *kid(const ax_parser *p, const sx_node *list, int i) {
    int c = list->first;
    while (c >= 0 && i-- > 0) c = p->node[c].next;
    assert(c >= 0);
    return &p->node[c < 0 ? 0 : c]; /* the clamp keeps -O2 bounds analysis quiet */
}

const char *ax_sort_name(int sort) {
    return sort == AX_SORT_TENSOR ? "tensor" : ops_pkind_table[sort].name;
}

static int sort_by_name(const char *s) {
    if (strcmp(s, "tensor") == 0) return AX_SORT_TENSOR;
    for (int k = 0; k < PK_COUNT; k++)
        if (strcmp(ops_pkind_table[k].name, s) == 0) return k;
    return -1;
}

static int find_var(const ax_axiom *a, const char *name) {
    for (int i = 0; i < a->n_vars; i++)
        if (strcmp(a->var[i].name, name) == 0) return i;
    return -1;
}

/* ---- the set's pools --------------------------------------------------- */

static int grow(void **arr, int *cap, int need, size_t elem, int limit) {
    if (need <= *cap) return AX_OK;
    if (need > limit) return AX_ELIMIT;
    int ncap = *cap ? *cap : 64;
    while (ncap < need) ncap = ncap > limit / 2 ? limit : ncap * 2;
    void *q = realloc(*arr, (size_t)ncap * elem);
    if (!q) return AX_ENOMEM;
    *arr = q;
    *cap = ncap;
    return AX_OK;
}

static int push_term(ax_parser *p, const sx_node *at, const ax_term *t, int *id) {
    ax_set *s = p->set;
    if (s->n_terms - p->ax->first_term >= AX_MAX_AXIOM_TERMS)
        return fail(p, AX_ELIMIT, at->line, at->col,
                    "axiom has more than %d terms", AX_MAX_AXIOM_TERMS);
    int rc = grow((void **)&s->term, &s->cap_terms, s->n_terms + 1,
                  sizeof *s->term, AX_MAX_TERMS);
    if (rc == AX_ELIMIT)
        return fail(p, rc, at->line, at->col, "more than %d terms", AX_MAX_TERMS);
    if (rc != AX_OK) return fail(p, rc, at->line, at->col, "out of memory");
    s->term[s->n_terms] = *t;
    s->term[s->n_terms].line = at->line;
    s->term[s->n_terms].col = at->col;
    *id = s->n_terms++;
    return AX_OK;
}

/* ---- terms -------------------------------------------------------------- */

static int conv_term(ax_parser *p, const sx_node *n, int want, int *id);

static int conv_var(ax_parser *p, const sx_node *n, const char *name, int want,
                    int *id) {
    int v = find_var(p->ax, name);
    if (v < 0)
        return fail(p, AX_ESYNTAX, n->line, n->col, "undeclared variable '%s'", name);
    if (p->ax->var[v].sort != want)
        return fail(p, AX_ESYNTAX, n->line, n->col,
                    "variable '%s' has sort %s, expected %s", name,
                    ax_sort_name(p->ax->var[v].sort), ax_sort_name(want));
    p->used |= 1u << v;
    ax_term t = {AX_TVAR, want, OP_COUNT, v, 0, {0}, 1u << v, 0, 0};
    return push_term(p, n, &t, id);
}

/* A NUMBER (axparse.h) as value / den. @return 0, or -1 if s is not one. */
static int parse_number(const char *s, int32_t *value, int32_t *den) {
    int64_t v = 0, d = 1;
    int neg = *s == '-', digits = 0, decimals = -1;
    for (s += neg; *s; s++) {
        if (*s == '.' && decimals < 0) {
            decimals = 0;
            continue;
        }
        if (*s < '0' || *s > '9' || ++digits > AX_MAX_DIGITS) return -1;
        if (decimals >= 0 && ++decimals > AX_MAX_DECIMALS) return -1;
        v = 10 * v + (*s - '0');
        if (decimals > 0) d *= 10;
    }
    if (digits == 0 || decimals == 0) return -1;
    *value = (int32_t)(neg ? -v : v);
    *den = (int32_t)d;
    return 0;
}

static int conv_atom(ax_parser *p, const sx_node *n, int want, int *id) {
    char buf[AX_MAX_NAME + 1];
    atom_text(p, n, buf);
    if (is_lower(buf[0])) return conv_var(p, n, buf, want, id);
    if (want == AX_SORT_TENSOR) {
        ax_term t = {AX_TNUM, AX_SORT_TENSOR, OP_COUNT, 0, 0, {0}, 0, 0, 0, 1};
        if (parse_number(buf, &t.value, &t.den) == 0) return push_term(p, n, &t, id);
        return fail(p, AX_ESYNTAX, n->line, n->col,
                    "expected a tensor, got '%s' (a number is an optional minus and at "
                    "most %d digits, up to %d of them after a point)",
                    buf, AX_MAX_DIGITS, AX_MAX_DECIMALS);
    }
    int32_t v;
    if (ops_param_parse((ops_pkind)want, buf, &v) != OPS_OK)
        return fail(p, AX_ESYNTAX, n->line, n->col, "bad %s literal '%s'",
                    ax_sort_name(want), buf);
    ax_term t = {AX_TLIT, want, OP_COUNT, v, 0, {0}, 0, 0, 0};
    return push_term(p, n, &t, id);
}

/* Convert the elements after the head of list n into t->arg, one sort each. */
static int conv_args(ax_parser *p, const sx_node *n, const int *sorts, ax_term *t) {
    int rc;
    for (int i = 0; i < t->n_args; i++) {
        if ((rc = conv_term(p, kid(p, n, i + 1), sorts[i], &t->arg[i])) != AX_OK)
            return rc;
        t->vars |= p->set->term[t->arg[i]].vars;
    }
    return AX_OK;
}

static int conv_dim(ax_parser *p, const sx_node *n, int want, int *id) {
    static const int sorts[2] = {PK_AXIS, AX_SORT_TENSOR};
    if (want != PK_SIZE)
        return fail(p, AX_ESYNTAX, n->line, n->col,
                    "(dim ...) is a size, but %s expected", ax_sort_name(want));
    if (n->n != 3)
        return fail(p, AX_ESYNTAX, n->line, n->col,
                    "wrong arity: dim takes an axis and a tensor");
    ax_term t = {AX_TDIM, PK_SIZE, OP_COUNT, 0, 2, {0}, 0, 0, 0};
    int rc = conv_args(p, n, sorts, &t);
    return rc ? rc : push_term(p, n, &t, id);
}

static int conv_app(ax_parser *p, const sx_node *n, const char *name, int want,
                    int *id) {
    ops_op op = ops_by_name(name);
    if (op == OP_COUNT)
        return fail(p, AX_ESYNTAX, n->line, n->col, "unknown operator '%s'", name);
    if (want != AX_SORT_TENSOR)
        return fail(p, AX_ESYNTAX, n->line, n->col,
                    "expected %s, got an application of %s", ax_sort_name(want), name);
    const ops_info *o = &ops_table[op];
    if (n->n - 1 != o->n_params + o->arity)
        return fail(p, AX_ESYNTAX, n->line, n->col,
                    "wrong arity: %s takes %d parameters then %d tensors, got %d "
                    "arguments", name, o->n_params, o->arity, n->n - 1);
    int sorts[AX_MAX_ARGS];
    for (int i = 0; i < o->n_params; i++) sorts[i] = (int)o->pkind[i];
    for (int i = 0; i < o->arity; i++) sorts[o->n_params + i] = AX_SORT_TENSOR;
    ax_term t = {AX_TAPP, AX_SORT_TENSOR, op, 0, o->n_params + o->arity, {0}, 0, 0, 0};
    int rc = conv_args(p, n, sorts, &t);
    return rc ? rc : push_term(p, n, &t, id);
}

/* Nesting is bounded by the reader (AX_MAX_DEPTH), so is this recursion. */
static int conv_term(ax_parser *p, const sx_node *n, int want, int *id) {
    char head[AX_MAX_NAME + 1];
    if (n->type == SX_STRING)
        return fail(p, AX_ESYNTAX, n->line, n->col, "unexpected string");
    if (n->type == SX_ATOM) return conv_atom(p, n, want, id);
    if (n->n == 0) return fail(p, AX_ESYNTAX, n->line, n->col, "empty list");
    const sx_node *h = kid(p, n, 0);
    if (h->type != SX_ATOM)
        return fail(p, AX_ESYNTAX, h->line, h->col, "expected an operator name");
    if (is_atom(p, h, "dim")) return conv_dim(p, n, want, id);
    return conv_app(p, n, atom_text(p, h, head), want, id);
}

/* ---- axioms ------------------------------------------------------------- */

static int conv_decl(ax_parser *p, const sx_node *d) {
    ax_axiom *a = p->ax;
    char name[AX_MAX_NAME + 1], sort[AX_MAX_NAME + 1];
    if (d->type != SX_LIST || d->n != 2 || kid(p, d, 0)->type != SX_ATOM ||
        kid(p, d, 1)->type != SX_ATOM)
        return fail(p, AX_ESYNTAX, d->line, d->col,
                    "expected a declaration (NAME SORT)");
    const sx_node *nn = kid(p, d, 0), *sn = kid(p, d, 1);
    if (!is_ident(atom_text(p, nn, name), '_'))
        return fail(p, AX_ESYNTAX, nn->line, nn->col,
                    "bad variable name '%s' (want [a-z][a-z0-9_]*)", name);
    if (find_var(a, name) >= 0)
        return fail(p, AX_ESYNTAX, nn->line, nn->col, "variable '%s' declared twice", name);
    int s = sort_by_name(atom_text(p, sn, sort));
    if (s < 0) return fail(p, AX_ESYNTAX, sn->line, sn->col, "unknown sort '%s'", sort);
    if (a->n_vars >= AX_MAX_VARS)
        return fail(p, AX_ELIMIT, d->line, d->col, "more than %d variables", AX_MAX_VARS);
    snprintf(a->var[a->n_vars].name, sizeof a->var[0].name, "%s", name);
    a->var[a->n_vars++].sort = s;
    return AX_OK;
}

static int conv_decls(ax_parser *p, const sx_node *l) {
    int rc;
    if (l->type != SX_LIST)
        return fail(p, AX_ESYNTAX, l->line, l->col,
                    "expected the variable list ((NAME SORT) ...)");
    for (int c = l->first; c >= 0; c = p->node[c].next)
        if ((rc = conv_decl(p, &p->node[c])) != AX_OK) return rc;
    return AX_OK;
}

static int conv_header(ax_parser *p, const sx_node *form) {
    ax_axiom *a = p->ax;
    char name[AX_MAX_NAME + 1];
    const sx_node *nn = kid(p, form, 1), *cn = kid(p, form, 2);
    if (nn->type != SX_ATOM || !is_ident(atom_text(p, nn, name), '-'))
        return fail(p, AX_ESYNTAX, nn->line, nn->col,
                    "expected a kebab-case axiom name");
    int prev = ax_find(p->set, name);
    if (prev >= 0)
        return fail(p, AX_ESYNTAX, nn->line, nn->col,
                    "duplicate axiom name '%s' (first at line %d)", name,
                    p->set->axiom[prev].line);
    if (cn->type != SX_STRING)
        return fail(p, AX_ESYNTAX, cn->line, cn->col, "expected a comment string");
    if (cn->len > AX_MAX_COMMENT)
        return fail(p, AX_ELIMIT, cn->line, cn->col,
                    "comment longer than %d characters", AX_MAX_COMMENT);
    snprintf(a->name, sizeof a->name, "%s", name);
    size_t k = 0;
    for (size_t i = 0; i < cn->len; i++) { /* unescape \" and \\ */
        if (p->text[cn->off + i] == '\\') i++;
        a->comment[k++] = p->text[cn->off + i];
    }
    a->comment[k] = '\0';
    return AX_OK;
}

static int check_used(ax_parser *p, const sx_node *decls) {
    for (int i = 0; i < p->ax->n_vars; i++) {
        if (p->used & (1u << i)) continue;
        const sx_node *d = kid(p, decls, i);
        return fail(p, AX_ESYNTAX, d->line, d->col, "unused variable '%s'",
                    p->ax->var[i].name);
    }
    return AX_OK;
}

static int conv_axiom(ax_parser *p, const sx_node *form) {
    static const char *const part[] = {"'axiom'", "the axiom name", "the comment string",
                                       "the variable list", "the left-hand side",
                                       "the right-hand side"};
    int rc;
    if (form->n == 0 || !is_atom(p, kid(p, form, 0), "axiom"))
        return fail(p, AX_ESYNTAX, form->line, form->col, "expected (axiom ...)");
    if (form->n < 6)
        return fail(p, AX_ESYNTAX, form->line, form->col, "incomplete axiom: missing %s",
                    part[form->n]);
    if (form->n > 6) {
        const sx_node *x = kid(p, form, 6);
        return fail(p, AX_ESYNTAX, x->line, x->col,
                    "unexpected element after the right-hand side");
    }
    p->ax->line = form->line;
    p->ax->first_term = p->set->n_terms;
    if ((rc = conv_header(p, form)) != AX_OK) return rc;
    if ((rc = conv_decls(p, kid(p, form, 3))) != AX_OK) return rc;
    if ((rc = conv_term(p, kid(p, form, 4), AX_SORT_TENSOR, &p->ax->lhs)) != AX_OK)
        return rc;
    if ((rc = conv_term(p, kid(p, form, 5), AX_SORT_TENSOR, &p->ax->rhs)) != AX_OK)
        return rc;
    p->ax->end_term = p->set->n_terms;
    return check_used(p, kid(p, form, 3));
}

/* Read and convert the next top-level form. @pre not at end. */
static int parse_form(ax_parser *p) {
    ax_set *s = p->set;
    int rc, id;
    if (peek(p) != '(' && peek(p) != ')')
        return fail(p, AX_ESYNTAX, p->line, p->col, "expected '(' to start an axiom");
    p->n_nodes = 0;
    if ((rc = read_sx(p, 0, &id)) != AX_OK) return rc;
    rc = grow((void **)&s->axiom, &s->cap_axioms, s->n_axioms + 1, sizeof *s->axiom,
              AX_MAX_AXIOMS);
    if (rc != AX_OK)
        return fail(p, rc, p->node[id].line, p->node[id].col,
                    rc == AX_ELIMIT ? "more than %d axioms" : "out of memory",
                    AX_MAX_AXIOMS);
    p->ax = &s->axiom[s->n_axioms];
    memset(p->ax, 0, sizeof *p->ax);
    p->used = 0;
    if ((rc = conv_axiom(p, &p->node[id])) != AX_OK) return rc;
    s->n_axioms++;
    return AX_OK;
}

int ax_parse_string(const char *text, size_t len, const char *fname, ax_set *out,
                    char err[AX_ERRLEN]) {
    int rc = AX_OK;
    memset(out, 0, sizeof *out);
    snprintf(out->file, sizeof out->file, "%s", fname);
    ax_parser *p = calloc(1, sizeof *p); /* ~80 KB of nodes: not on the stack */
    if (!p) {
        snprintf(err, AX_ERRLEN, "%s: out of memory", fname);
        return AX_ENOMEM;
    }
    p->text = text;
    p->len = len;
    p->line = p->col = 1;
    p->fname = out->file;
    p->err = err;
    p->set = out;
    for (skip_space(p); rc == AX_OK && !at_end(p); skip_space(p))
        rc = parse_form(p);
    free(p);
    if (rc != AX_OK) ax_free(out);
    return rc;
}

/* Read the whole file; @return AX_OK with *buf malloc'd. */
static int read_file(FILE *f, char **buf, size_t *len) {
    size_t cap = 0, n = 0;
    char *b = NULL;
    for (;;) {
        if (n == cap) {
            if (cap >= AX_MAX_FILE) { free(b); return AX_ELIMIT; }
            cap = cap ? cap * 2 : 1 << 14;
            char *q = realloc(b, cap);
            if (!q) { free(b); return AX_ENOMEM; }
            b = q;
        }
        size_t k = fread(b + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    if (ferror(f)) { free(b); return AX_EIO; }
    *buf = b;
    *len = n;
    return AX_OK;
}

int ax_parse_file(const char *path, ax_set *out, char err[AX_ERRLEN]) {
    char *buf = NULL;
    size_t len = 0;
    int rc;
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, AX_ERRLEN, "%s: cannot open", path);
        return AX_EIO;
    }
    rc = read_file(f, &buf, &len);
    fclose(f);
    if (rc == AX_OK) rc = ax_parse_string(buf, len, path, out, err);
    else snprintf(err, AX_ERRLEN, "%s: %s", path,
                  rc == AX_ELIMIT ? "file too large" : rc == AX_EIO ? "read error"
                                                                   : "out of memory");
    free(buf);
    return rc;
}

void ax_free(ax_set *s) {
    if (!s) return;
    free(s->term);
    free(s->axiom);
    s->term = NULL;
    s->axiom = NULL;
    s->n_terms = s->cap_terms = s->n_axioms = s->cap_axioms = 0;
}

int ax_find(const ax_set *s, const char *name) {
    for (int i = 0; i < s->n_axioms; i++)
        if (strcmp(s->axiom[i].name, name) == 0) return i;
    return -1;
}

/* ---- rendering ---------------------------------------------------------- */

typedef struct {
    char *buf;
    size_t n, len;
} ax_out;

static void put(ax_out *o, const char *s) {
    size_t k = strlen(s);
    if (o->len + 1 >= o->n) return;
    if (k > o->n - o->len - 1) k = o->n - o->len - 1;
    memcpy(o->buf + o->len, s, k);
    o->len += k;
    o->buf[o->len] = '\0';
}

/* value / den in decimal, as the axiom file wrote it (den a power of 10). */
static void render_number(int32_t value, int32_t den, char buf[24]) {
    int64_t v = value < 0 ? -(int64_t)value : value;
    int len = snprintf(buf, 24, "%s%lld", value < 0 ? "-" : "", (long long)(v / den));
    if (den > 1) buf[len++] = '.';
    for (int64_t d = den / 10; d >= 1 && len < 23; d /= 10) buf[len++] = (char)('0' + v / d % 10);
    buf[len] = '\0';
}

static void render(const ax_set *s, const ax_axiom *a, int t, ax_out *o) {
    const ax_term *tm = &s->term[t];
    char lit[24];
    switch (tm->kind) {
    case AX_TNUM: render_number(tm->value, tm->den, lit), put(o, lit); return;
    case AX_TVAR: put(o, a->var[tm->value].name); return;
    case AX_TLIT: put(o, ops_param_str((ops_pkind)tm->sort, tm->value, lit)); return;
    case AX_TAPP: put(o, "("); put(o, ops_table[tm->op].name); break;
    case AX_TDIM: put(o, "(dim"); break;
    }
    for (int i = 0; i < tm->n_args; i++) {
        put(o, " ");
        render(s, a, tm->arg[i], o);
    }
    put(o, ")");
}

char *ax_term_str(const ax_set *s, const ax_axiom *a, int t, char *buf, size_t n) {
    ax_out o = {buf, n, 0};
    if (n == 0) return buf;
    buf[0] = '\0';
    render(s, a, t, &o);
    return buf;
}
