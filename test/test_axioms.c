/* test_axioms.c - the axioms are a model of the reference semantics: every
 * axiom in opspecs/axioms.ax holds on random well-shaped instances, every
 * identity in opspecs/wrong.ax is refuted, and the parser reports (never
 * crashes on) bad input. OPSPECS_DIR overrides the "opspecs" directory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axcheck.h"
#include "axparse.h"

#define AXIOM_INSTANCES 30 /* per axiom; at least MIN_FOUND must be found */
#define MIN_FOUND 20
#define MIN_DISTINCT 10
#define WRONG_INSTANCES 400

static ax_set good, wrong;

static const char *spec_path(const char *file, char *buf, size_t n) {
    const char *dir = getenv("OPSPECS_DIR");
    snprintf(buf, n, "%s/%s", dir && *dir ? dir : "opspecs", file);
    return buf;
}

static int load(const char *file, ax_set *s) {
    char path[512], err[AX_ERRLEN];
    if (ax_parse_file(spec_path(file, path, sizeof path), s, err) == AX_OK) return 0;
    fprintf(stderr, "%s\n", err);
    return -1;
}

/* ---------------------------------------------------------------- axioms */

/* State: the axiom index, smuggled through the pointer. */
static void test_axiom_holds(void **state) {
    int i = (int)(intptr_t)*state - 1;
    axc_result r;
    int rc = axc_check(&good, i, AXIOM_INSTANCES, 0x5eed0000u + (uint64_t)i, &r);
    if (rc != AXC_OK) fail_msg("%s", r.msg);
    if (r.found < MIN_FOUND || r.distinct < MIN_DISTINCT)
        fail_msg("axiom %s: only %d instances (%d distinct) in %d attempts",
                 good.axiom[i].name, r.found, r.distinct, r.attempts);
}

/* Names every DESIGN.md property maps to; guards against deletions. */
static void test_axiom_list_complete(void **state) {
    static const char *const need[] = {
        "ewadd-assoc", "ewadd-comm", "ewmul-assoc", "ewmul-comm",
        "ewmul-ewadd-distrib", "smul-assoc", "smul-ewadd", "smul-ewmul",
        "smul-transpose", "smul-matmul-left", "smul-matmul-right", "smul-concat",
        "smul-conv-input", "smul-conv-weight", "relu-conv-fuse", "relu-concat",
        "relu-transpose", "relu-split0", "relu-split1", "conv-ewadd-input",
        "conv-ewadd-weight", "conv-sum-concat", "matmul-sum-concat",
        "concat-ewadd", "concat-ewmul", "concat-conv-batch", "concat-conv-channels",
        "matmul-assoc", "split0-concat", "split1-concat", "concat-assoc",
        "matmul-concat-cols", "matmul-ewadd-right", "transpose-involution",
        "transpose-matmul", "transpose-concat0", "concat-exchange",
        "transpose-ewadd", "transpose-ewmul", "avgpool-concat0", "avgpool-concat1",
        "maxpool-concat0", "maxpool-concat1", "conv-poolk", "conv-iconv",
        "matmul-imm-right", "ewmul-ones", "avgpool-iconv", "conv-enlarge", "conv-dwiconv", "conv-kmul-1x1",
        /* the operators of real models: activations, biases, scales */
        "sigmoid-concat", "tanh-transpose", "erf-split0", "bias-bias", "scale-bias",
        "bias-concat", "bias-concat-axis", "bias-split0", "conv-scale", "matmul-scale-right",
        /* row operators and permutations */
        "softmax1-concat0", "layernorm3-split02", "permute-relu", "permute0213-0213",
        "permute0231-0312", "permute0213-concat1", "permute0132-layernorm3", "bmm-assoc",
        "bmm-sum-concat", "permute0132-bmm"};
    (void)state;
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (ax_find(&good, need[i]) < 0) fail_msg("axiom %s missing", need[i]);
    assert_in_range(good.n_axioms, 45, 1000); /* a sanity bound: the file parsed whole */
}

/* Rendering each axiom and parsing it again gives the same terms. */
static void test_axiom_roundtrip(void **state) {
    (void)state;
    for (int i = 0; i < good.n_axioms; i++) {
        const ax_axiom *a = &good.axiom[i];
        char text[2048], l[512], r[512], l2[512], r2[512], err[AX_ERRLEN];
        int n = snprintf(text, sizeof text, "(axiom %s \"c\" (", a->name);
        for (int v = 0; v < a->n_vars; v++)
            n += snprintf(text + n, sizeof text - (size_t)n, "(%s %s)", a->var[v].name,
                          ax_sort_name(a->var[v].sort));
        snprintf(text + n, sizeof text - (size_t)n, ") %s %s)",
                 ax_term_str(&good, a, a->lhs, l, sizeof l),
                 ax_term_str(&good, a, a->rhs, r, sizeof r));
        ax_set s;
        if (ax_parse_string(text, strlen(text), "rt", &s, err) != AX_OK)
            fail_msg("%s: %s", text, err);
        assert_string_equal(l, ax_term_str(&s, &s.axiom[0], s.axiom[0].lhs, l2, sizeof l2));
        assert_string_equal(r, ax_term_str(&s, &s.axiom[0], s.axiom[0].rhs, r2, sizeof r2));
        ax_free(&s);
    }
}

/* ---------------------------------------------------------------- wrong */

static void expect_refuted(const char *name) {
    int i = ax_find(&wrong, name);
    axc_result r;
    if (i < 0) fail_msg("wrong.ax has no %s", name);
    int rc = axc_check(&wrong, i, WRONG_INSTANCES, 0xbad0000u + (uint64_t)i, &r);
    if (rc != AXC_EMISMATCH)
        fail_msg("false identity %s not refuted: status %d, %d instances (%s)", name, rc,
                 r.found, r.msg);
    assert_non_null(strstr(r.msg, "sides differ on"));
}

static void test_wrong_all_refuted(void **state) {
    (void)state;
    assert_true(wrong.n_axioms >= 5);
    for (int i = 0; i < wrong.n_axioms; i++) expect_refuted(wrong.axiom[i].name);
}

static void test_wrong_split_concat(void **state) {
    (void)state;
    expect_refuted("split-nested-concat");
}

static void test_wrong_grouped_conv(void **state) {
    (void)state;
    expect_refuted("grouped-conv-concat");
}

static void test_wrong_basic(void **state) {
    (void)state;
    expect_refuted("relu-ewadd");
    expect_refuted("matmul-comm");
    expect_refuted("transpose-matmul-unreversed");
}

/* ---------------------------------------------------------------- axcheck */

static int parse_one(const char *text, ax_set *s) {
    char err[AX_ERRLEN];
    int rc = ax_parse_string(text, strlen(text), "inline", s, err);
    if (rc != AX_OK) print_error("%s\n", err);
    return rc;
}

static void test_check_mistyped(void **state) {
    ax_set s;
    axc_result r;
    (void)state;
    assert_int_equal(parse_one("(axiom never \"rank 2 and rank 4 at once\" ((x tensor))"
                               " (matmul x (conv2d 1 SAME NONE 1 x x)) x)", &s), AX_OK);
    assert_int_equal(axc_check(&s, 0, 2, 1, &r), AXC_ENOINSTANCE);
    assert_non_null(strstr(r.msg, "inline:1: axiom never: no well-shaped instance"));
    assert_int_equal(r.found, 0);
    assert_int_equal(axc_check(&s, 1, 2, 1, &r), AXC_EARG);
    assert_int_equal(axc_check(&s, 0, 0, 1, &r), AXC_EARG);
    ax_free(&s);
}

static void test_check_deterministic(void **state) {
    axc_result a, b, c;
    (void)state;
    int i = ax_find(&good, "conv-sum-concat");
    assert_true(i >= 0);
    assert_int_equal(axc_check(&good, i, 5, 77, &a), AXC_OK);
    assert_int_equal(axc_check(&good, i, 5, 77, &b), AXC_OK);
    assert_int_equal(axc_check(&good, i, 5, 78, &c), AXC_OK);
    assert_string_equal(a.instance, b.instance);
    assert_int_equal(a.nodes, b.nodes);
    assert_string_not_equal(a.instance, c.instance);
}

/* A number in a tensor position is a rank-0 tensor of that value: it
 * parses, prints back as written, and axcheck evaluates it exactly, so a
 * true identity with -1 or 0.5 holds and a false one is refuted. */
static void test_numbers(void **state) {
    ax_set s;
    axc_result r;
    char buf[256];
    (void)state;
    assert_int_equal(parse_one("(axiom n \"c\" ((x tensor) (y tensor))"
                               " (ewsub x y) (ewadd x (smul y -1)))"
                               "(axiom h \"c\" ((x tensor)) (smul (smul x 0.5) 2) x)"
                               "(axiom w \"c\" ((x tensor)) (smul (smul x -0.25) 2) x)"
                               "(axiom z \"c\" ((x tensor)) (smul x 0) (smul x 0.000))",
                               &s),
                     AX_OK);
    const ax_term *m = &s.term[s.term[s.axiom[0].rhs].arg[1]];
    assert_int_equal(s.term[m->arg[1]].kind, AX_TNUM);
    assert_int_equal(s.term[m->arg[1]].value, -1);
    assert_int_equal(s.term[m->arg[1]].den, 1);
    assert_string_equal(ax_term_str(&s, &s.axiom[0], s.axiom[0].rhs, buf, sizeof buf),
                        "(ewadd x (smul y -1))");
    assert_string_equal(ax_term_str(&s, &s.axiom[2], s.axiom[2].lhs, buf, sizeof buf),
                        "(smul (smul x -0.25) 2)");
    assert_string_equal(ax_term_str(&s, &s.axiom[3], s.axiom[3].rhs, buf, sizeof buf),
                        "(smul x 0.000)");
    assert_int_equal(axc_check(&s, 0, 20, 5, &r), AXC_OK);
    assert_int_equal(axc_check(&s, 1, 20, 5, &r), AXC_OK);
    assert_int_equal(axc_check(&s, 2, 200, 5, &r), AXC_EMISMATCH);
    assert_int_equal(axc_check(&s, 3, 20, 5, &r), AXC_OK);
    ax_free(&s);
}

/* A size parameter from a dim term tracks the shape it reads. */
static void test_check_dim_values(void **state) {
    ax_set s;
    axc_result r;
    (void)state;
    assert_int_equal(parse_one("(axiom d \"c\" ((x tensor) (y tensor))"
                               " (split0 1 (dim 1 x) (concat 1 x y)) x)", &s), AX_OK);
    assert_int_equal(axc_check(&s, 0, 25, 3, &r), AXC_OK);
    assert_true(r.found >= MIN_FOUND);
    ax_free(&s);
}

/* ---------------------------------------------------------------- parser */

typedef struct {
    int id;
    const char *text;
    int status;
    int line;
    const char *fragment;
} parse_case;

#define HDR "(axiom a \"c\" "
static const parse_case bad_cases[] = {
    {1, HDR "((x tensor)) (frob x) x)", AX_ESYNTAX, 1, "unknown operator 'frob'"},
    {2, HDR "((x tensor)) (relu x x) x)", AX_ESYNTAX, 1, "wrong arity: relu takes 0 parameters then 1"},
    {3, HDR "((x tensor) (s stride))\n (conv2d s SAME NONE s x x) x)", AX_ESYNTAX, 2,
     "variable 's' has sort stride, expected groups"},
    {4, HDR "((x tensor)) (concat x x x) x)", AX_ESYNTAX, 1, "variable 'x' has sort tensor, expected axis"},
    {5, HDR "((x tensor)) (relu SAME) x)", AX_ESYNTAX, 1, "expected a tensor, got 'SAME'"},
    {6, HDR "((x tensor))\n\n (relu q) x)", AX_ESYNTAX, 3, "undeclared variable 'q'"},
    {7, HDR "((x tensor)\n (y tensor)) (relu x) x)", AX_ESYNTAX, 2, "unused variable 'y'"},
    {8, HDR "((x tensor)) x x)\n" HDR "((x tensor)) x x)", AX_ESYNTAX, 2,
     "duplicate axiom name 'a' (first at line 1)"},
    {9, "\n" HDR "((x tensor)) x (relu x)", AX_ESYNTAX, 2, "unbalanced parens: '(' is never closed"},
    {10, HDR "((x tensor)) x x))", AX_ESYNTAX, 1, "unbalanced parens: unexpected ')'"},
    {11, "(axiom a \"c\n ((x tensor)) x x)", AX_ESYNTAX, 1, "unterminated string"},
    {12, HDR "((x tensor) (w tensor)) (conv2d 1 MEDIUM NONE 1 x w) x)", AX_ESYNTAX, 1,
     "bad pad literal 'MEDIUM'"},
    {13, HDR "((w tensor)) (enlarge 3y3 w) w)", AX_ESYNTAX, 1, "bad kernel literal '3y3'"},
    {14, HDR "((x matrix)) x x)", AX_ESYNTAX, 1, "unknown sort 'matrix'"},
    {15, HDR "((x tensor)) (concat (dim 0 x) x x) x)", AX_ESYNTAX, 1, "(dim ...) is a size, but axis"},
    {16, HDR "((x tensor) (x tensor)) x x)", AX_ESYNTAX, 1, "variable 'x' declared twice"},
    {17, HDR "((a tensor)(b tensor)(c tensor)(d tensor)(e tensor)(f tensor)(g tensor)"
         "(h tensor)(i tensor)(j tensor)(k tensor)(l tensor)(m tensor)(n tensor)"
         "(o tensor)(p tensor)(q tensor)) a a)", AX_ELIMIT, 1, "more than 16 variables"},
    {18, HDR "((xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx tensor)) x x)",
     AX_ELIMIT, 1, "token longer than 63 characters"},
    {19, HDR "((x tensor)) x)", AX_ESYNTAX, 1, "incomplete axiom: missing the right-hand side"},
    {20, HDR "((x tensor)) x x x)", AX_ESYNTAX, 1, "unexpected element after the right-hand side"},
    {21, "(lemma a \"c\" ((x tensor)) x x)", AX_ESYNTAX, 1, "expected (axiom ...)"},
    {22, "\n  foo", AX_ESYNTAX, 2, "expected '(' to start an axiom"},
    {23, "(axiom Foo \"c\" ((x tensor)) x x)", AX_ESYNTAX, 1, "expected a kebab-case axiom name"},
    {24, "(axiom a c ((x tensor)) x x)", AX_ESYNTAX, 1, "expected a comment string"},
    {25, HDR "((x tensor)) x \x01x)", AX_ESYNTAX, 1, "invalid character 0x01"},
    {26, HDR "((x tensor)) (concat (relu x) x x) x)", AX_ESYNTAX, 1,
     "expected axis, got an application of relu"},
    {27, HDR "((x tensor)) (split0 0 (dim 0) x) x)", AX_ESYNTAX, 1, "wrong arity: dim takes"},
    {28, HDR "((x tensor)) (split0 0 (dim x x) x) x)", AX_ESYNTAX, 1,
     "variable 'x' has sort tensor, expected axis"},
    {29, "(axiom a \"c\\n\" ((x tensor)) x x)", AX_ESYNTAX, 1, "bad escape in string"},
    {30, HDR "((x tensor)) (relu ()) x)", AX_ESYNTAX, 1, "empty list"},
    {31, HDR "((x tensor)) (\"relu\" x) x)", AX_ESYNTAX, 1, "expected an operator name"},
    {32, HDR "(x) x x)", AX_ESYNTAX, 1, "expected a declaration (NAME SORT)"},
    {33, HDR "((X tensor)) x x)", AX_ESYNTAX, 1, "bad variable name 'X'"},
    {34, HDR "x x x)", AX_ESYNTAX, 1, "expected the variable list"},
    {35, HDR "((x tensor)) \"x\" x)", AX_ESYNTAX, 1, "unexpected string"},
    {36, HDR "((x tensor) (a axis)) x a)", AX_ESYNTAX, 1, "variable 'a' has sort axis, expected tensor"},
    {37, HDR "((x tensor)) (split0 0 0 x) x)", AX_ESYNTAX, 1, "bad size literal '0'"},
    {39, HDR "((x tensor)) (smul x 1.5.2) x)", AX_ESYNTAX, 1, "expected a tensor, got '1.5.2'"},
    {40, HDR "((x tensor)) (smul x 0.1234567) x)", AX_ESYNTAX, 1, "up to 6 of them after"},
    {41, HDR "((x tensor)) (smul x 1000000000) x)", AX_ESYNTAX, 1, "at most 9 digits"},
    {42, HDR "((x tensor)) (smul x -) x)", AX_ESYNTAX, 1, "expected a tensor, got '-'"},
    {43, HDR "((x tensor)) (smul x 2.) x)", AX_ESYNTAX, 1, "expected a tensor, got '2.'"},
    {38, "; only a comment\n(axiom a \"c\" ((x tensor)) x x) ; trailing\n)", AX_ESYNTAX, 3,
     "unexpected ')'"},
};

/* "inline:LINE:COL: ..." -> LINE */
static int msg_line(const char *err) {
    int line = -1;
    const char *p = strchr(err, ':');
    if (p) sscanf(p + 1, "%d", &line);
    return line;
}

static void test_parse_errors(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const parse_case *c = &bad_cases[i];
        char err[AX_ERRLEN] = "";
        ax_set s;
        int rc = ax_parse_string(c->text, strlen(c->text), "inline", &s, err);
        if (rc != c->status || !strstr(err, c->fragment) || msg_line(err) != c->line ||
            strncmp(err, "inline:", 7) != 0)
            fail_msg("case %d: status %d, message \"%s\"; want status %d, line %d, \"%s\"",
                     c->id, rc, err, c->status, c->line, c->fragment);
        assert_int_equal(s.n_axioms, 0);
        assert_null(s.term);
    }
}

/* Nesting, term count and comment length limits, built programmatically. */
static void expect_error(const char *text, int status, const char *fragment) {
    char err[AX_ERRLEN] = "";
    ax_set s;
    int rc = ax_parse_string(text, strlen(text), "gen", &s, err);
    if (rc != status || !strstr(err, fragment))
        fail_msg("status %d \"%s\"; want %d \"%s\"", rc, err, status, fragment);
}

/* A balanced ewadd tree over x of the given depth. */
static size_t tree(char *buf, size_t n, int depth) {
    if (depth == 0) return (size_t)snprintf(buf, n, "x");
    size_t k = (size_t)snprintf(buf, n, "(ewadd ");
    k += tree(buf + k, n - k, depth - 1);
    buf[k++] = ' ';
    k += tree(buf + k, n - k, depth - 1);
    buf[k++] = ')';
    buf[k] = '\0';
    return k;
}

static void test_parse_limits(void **state) {
    static char buf[1 << 16];
    (void)state;
    size_t k = (size_t)snprintf(buf, sizeof buf, HDR "((x tensor)) ");
    for (int i = 0; i < AX_MAX_DEPTH + 2; i++) k += (size_t)snprintf(buf + k, sizeof buf - k, "(relu ");
    k += (size_t)snprintf(buf + k, sizeof buf - k, "x");
    for (int i = 0; i < AX_MAX_DEPTH + 2; i++) buf[k++] = ')';
    snprintf(buf + k, sizeof buf - k, " x)");
    expect_error(buf, AX_ELIMIT, "nested deeper than");

    k = (size_t)snprintf(buf, sizeof buf, HDR "((x tensor)) ");
    k += tree(buf + k, sizeof buf - k, 8); /* 511 terms */
    snprintf(buf + k, sizeof buf - k, " x)");
    expect_error(buf, AX_ELIMIT, "axiom has more than 256 terms");

    k = (size_t)snprintf(buf, sizeof buf, "(axiom a \"");
    memset(buf + k, 'c', AX_MAX_COMMENT + 1);
    k += AX_MAX_COMMENT + 1;
    snprintf(buf + k, sizeof buf - k, "\" ((x tensor)) x x)");
    expect_error(buf, AX_ELIMIT, "comment longer than");
}

static void test_parse_nul_byte(void **state) {
    static const char text[] = HDR "((x tensor)) x\0 x)";
    char err[AX_ERRLEN];
    ax_set s;
    (void)state;
    assert_int_equal(ax_parse_string(text, sizeof text - 1, "nul", &s, err), AX_ESYNTAX);
    assert_non_null(strstr(err, "nul:1:28: invalid character 0x00"));
}

static void test_parse_ok(void **state) {
    static const char text[] =
        "; header\n"
        "(axiom split-dim \"a \\\"quoted\\\" comment\"\n"
        "  ((a axis) (x tensor) (y tensor))\n"
        "  (split0 a (dim a x) (concat a x y))\n"
        "  x)\n";
    char err[AX_ERRLEN], buf[128];
    ax_set s;
    (void)state;
    assert_int_equal(ax_parse_string(text, strlen(text), "ok", &s, err), AX_OK);
    assert_int_equal(s.n_axioms, 1);
    const ax_axiom *a = &s.axiom[0];
    assert_string_equal(a->name, "split-dim");
    assert_string_equal(a->comment, "a \"quoted\" comment");
    assert_int_equal(a->line, 2);
    assert_int_equal(a->n_vars, 3);
    assert_int_equal(a->var[0].sort, PK_AXIS);
    const ax_term *l = &s.term[a->lhs];
    assert_int_equal(l->kind, AX_TAPP);
    assert_int_equal(l->op, OP_SPLIT0);
    assert_int_equal(l->vars, 7u);
    assert_int_equal(s.term[l->arg[1]].kind, AX_TDIM);
    assert_int_equal(s.term[a->rhs].kind, AX_TVAR);
    for (int t = a->first_term; t < a->end_term; t++)
        for (int k = 0; k < s.term[t].n_args; k++) assert_true(s.term[t].arg[k] < t);
    assert_string_equal(ax_term_str(&s, a, a->lhs, buf, sizeof buf),
                        "(split0 a (dim a x) (concat a x y))");
    assert_string_equal(ax_term_str(&s, a, a->lhs, buf, 8), "(split0");
    assert_int_equal(ax_find(&s, "split-dim"), 0);
    assert_int_equal(ax_find(&s, "nope"), -1);
    ax_free(&s);
    assert_int_equal(ax_parse_string("", 0, "empty", &s, err), AX_OK);
    assert_int_equal(s.n_axioms, 0);
    ax_free(&s);
}

static void test_parse_missing_file(void **state) {
    char err[AX_ERRLEN];
    ax_set s;
    (void)state;
    assert_int_equal(ax_parse_file("/nonexistent/axioms.ax", &s, err), AX_EIO);
    assert_non_null(strstr(err, "/nonexistent/axioms.ax: cannot open"));
}

static char *slurp(const char *file, size_t *len) {
    char path[512];
    FILE *f = fopen(spec_path(file, path, sizeof path), "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    *len = buf ? fread(buf, 1, 1 << 20, f) : 0;
    fclose(f);
    return buf;
}

/* Prefixes of axioms.ax parse or fail cleanly; a prefix ending inside an
 * axiom is never accepted with that axiom. */
static void test_parse_prefixes(void **state) {
    size_t len;
    char *text = slurp("axioms.ax", &len), err[AX_ERRLEN];
    (void)state;
    assert_non_null(text);
    /* every cut in the first 8 KiB (each kind of token, comment and
     * string is cut there at every byte), then 500 cuts spread over the
     * rest: every prefix would parse 4 GB (minutes, more under ASan) */
    size_t dense = len < 8192 ? len : 8192, stride = len > dense ? (len - dense) / 500 + 1 : 1;
    for (size_t n = 0;; n = n < dense ? n + 1 : n + stride < len ? n + stride : len) {
        char *copy = malloc(n ? n : 1); /* exact size: ASan sees any overread */
        memcpy(copy, text, n);
        ax_set s;
        err[0] = '\0';
        int rc = ax_parse_string(copy, n, "prefix", &s, err);
        if (rc != AX_OK && strncmp(err, "prefix:", 7) != 0)
            fail_msg("prefix %zu: status %d without a message", n, rc);
        assert_true(rc != AX_OK || s.n_axioms <= good.n_axioms);
        ax_free(&s);
        free(copy);
        if (n == len) break; /* the whole file last */
    }
    free(text);
}

/* Random byte edits of axioms.ax never crash the parser. */
static void test_parse_mutations(void **state) {
    size_t len;
    char *text = slurp("axioms.ax", &len), err[AX_ERRLEN];
    uint64_t rng = 12345;
    static const char alphabet[] = "()\";\n x1aS\\\x80\x01-";
    (void)state;
    assert_non_null(text);
    for (int it = 0; it < 3000; it++) {
        char *copy = malloc(len);
        memcpy(copy, text, len);
        for (int e = 0; e < 3; e++)
            copy[ten_rand_next(&rng) % len] =
                alphabet[ten_rand_next(&rng) % (sizeof alphabet - 1)];
        ax_set s;
        ax_parse_string(copy, len, "mut", &s, err);
        ax_free(&s);
        free(copy);
    }
    free(text);
}

/* ---------------------------------------------------------------- main */

static int setup(void **state) {
    (void)state;
    return load("axioms.ax", &good) || load("wrong.ax", &wrong);
}

static int teardown(void **state) {
    (void)state;
    ax_free(&good);
    ax_free(&wrong);
    return 0;
}

/* One group, so TAP output has one plan: the fixed tests, then one test
 * per axiom named after it. */
int main(void) {
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_limits),
        cmocka_unit_test(test_parse_nul_byte),
        cmocka_unit_test(test_parse_missing_file),
        cmocka_unit_test(test_parse_prefixes),
        cmocka_unit_test(test_parse_mutations),
        cmocka_unit_test(test_axiom_list_complete),
        cmocka_unit_test(test_axiom_roundtrip),
        cmocka_unit_test(test_check_mistyped),
        cmocka_unit_test(test_check_deterministic),
        cmocka_unit_test(test_check_dim_values),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_wrong_basic),
        cmocka_unit_test(test_wrong_split_concat),
        cmocka_unit_test(test_wrong_grouped_conv),
        cmocka_unit_test(test_wrong_all_refuted),
    };
    size_t n_fixed = sizeof fixed / sizeof fixed[0];
    if (setup(NULL) != 0) return 1;
    struct CMUnitTest *all = calloc(n_fixed + (size_t)good.n_axioms, sizeof *all);
    if (!all) return 1;
    memcpy(all, fixed, sizeof fixed);
    for (int i = 0; i < good.n_axioms; i++)
        all[n_fixed + (size_t)i] = (struct CMUnitTest){
            good.axiom[i].name, test_axiom_holds, NULL, NULL, (void *)(intptr_t)(i + 1)};
    int failed = _cmocka_run_group_tests("opspecs axioms", all,
                                         n_fixed + (size_t)good.n_axioms, NULL, NULL);
    free(all);
    teardown(NULL);
    return failed ? 1 : 0;
}
