/* axparse.h - the operator axioms as text: parse opspecs/axioms.ax into
 * typed terms that prove (Z3) and axcheck (reference semantics) consume.
 *
 * Overview. An axiom file is a sequence of s-expressions, one per axiom:
 *
 *     file    := { axiom }
 *     axiom   := "(" "axiom" NAME STRING "(" { decl } ")" term term ")"
 *     decl    := "(" VAR SORT ")"
 *     term    := VAR | LITERAL | NUMBER
 *              | "(" OP { param } { term } ")"
 *              | "(" "dim" axis-term term ")"
 *
 * - `;` starts a comment that runs to the end of the line.
 * - NAME is kebab-case ([a-z][a-z0-9-]*), unique in the file; STRING is the
 *   one-line comment in double quotes (escapes \" and \\, no newline).
 * - VAR is an identifier [a-z][a-z0-9_]*; SORT is `tensor` or the name of a
 *   parameter kind in ops_pkind_table (axis stride pad act kernel groups
 *   size). Every declared variable must occur in the axiom; every variable
 *   used must be declared.
 * - An operator application lists its parameters first, in
 *   ops_table[op].pname order, then its tensor inputs:
 *   `(conv2d s p NONE g x w)`. A parameter position takes a variable of
 *   that kind, a LITERAL parsed by ops_param_parse for that kind (`1`,
 *   `SAME`, `RELU`, `3x3`; any atom not starting with a lowercase letter
 *   is a literal), or, for kind size only, `(dim AXIS TENSOR)`: the size of
 *   a tensor term along an axis. Tensor positions take tensor terms, and
 *   a NUMBER there (`-1`, `2`, `0.5`: an optional minus and at most
 *   AX_MAX_DIGITS digits, up to AX_MAX_DECIMALS after a point) is a rank-0
 *   tensor holding that value: `(smul y -1)` is -y. Only axioms write
 *   numbers (no operator makes them), so prove takes a number as an
 *   uninterpreted tensor num(value) of rank 0 that only the axioms relate
 *   to anything, and axcheck as the value in the fingerprint field.
 * - The two sides of an axiom are tensor terms; the axiom states they are
 *   equal for every value of the variables that makes both sides well
 *   shaped (axcheck.h tests exactly that).
 *
 * Representation. All terms of a set live in one pool (ax_set.term),
 * children before parents; an axiom's terms are the contiguous id range
 * [first_term, end_term), its two sides are ids in that range, and a
 * variable term refers to its axiom's declaration by index.
 *
 * Worked example:
 *
 *     ax_set s;
 *     char err[AX_ERRLEN];
 *     const char *txt =
 *         "(axiom ewadd-comm \"x + y = y + x\"\n"
 *         "  ((x tensor) (y tensor))\n"
 *         "  (ewadd x y) (ewadd y x))\n";
 *     if (ax_parse_string(txt, strlen(txt), "inline", &s, err) != AX_OK) {
 *         fprintf(stderr, "%s\n", err);   // "inline:3:4: ..."
 *         return 1;
 *     }
 *     const ax_axiom *a = &s.axiom[0];
 *     const ax_term *l = &s.term[a->lhs];  // kind AX_TAPP, op OP_EWADD
 *     // s.term[l->arg[0]] is AX_TVAR with value 0 (= a->var[0], "x")
 *     ax_free(&s);
 *
 * Hostile input never crashes the parser: every limit below is checked and
 * reported as an error with its position.
 */
#ifndef AXPARSE_H
#define AXPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

#define AX_ERRLEN 320
#define AX_MAX_NAME 63          /* axiom, variable, operator, literal atoms */
#define AX_MAX_COMMENT 200      /* the comment string */
#define AX_MAX_VARS 16          /* variables per axiom (fits the uint32_t mask) */
#define AX_MAX_AXIOM_TERMS 256  /* terms per axiom */
#define AX_MAX_TERMS (1 << 20)  /* terms per set */
#define AX_MAX_AXIOMS 4096      /* axioms per set */
#define AX_MAX_DEPTH 48         /* nesting of parentheses */
#define AX_MAX_FILE (16 << 20)  /* bytes of an axiom file */
#define AX_MAX_ARGS (OPS_MAX_PARAMS + OPS_MAX_ARITY)
#define AX_MAX_DIGITS 9         /* digits of a NUMBER: value / den fit int32 */
#define AX_MAX_DECIMALS 6       /* of them, after the point */

/* A sort is a parameter kind (ops_pkind) or AX_SORT_TENSOR. */
#define AX_SORT_TENSOR ((int)PK_COUNT)

/* Status codes; AX_OK is 0. */
typedef enum {
    AX_OK = 0,
    AX_ESYNTAX, /* the text is not a valid axiom file; err says where and why */
    AX_ELIMIT,  /* a fixed limit (terms, variables, name length...) exceeded */
    AX_EIO,     /* the file could not be read */
    AX_ENOMEM
} ax_status;

typedef enum {
    AX_TVAR, /* value = variable index in the axiom */
    AX_TLIT, /* value = the parameter value; sort = its kind */
    AX_TAPP, /* op applied to arg[0..n_args): parameters, then tensor inputs */
    AX_TDIM, /* size of arg[1] (a tensor term) along arg[0] (an axis term) */
    AX_TNUM  /* a rank-0 tensor holding value / den (den a power of 10) */
} ax_term_kind;

typedef struct {
    ax_term_kind kind;
    int sort;              /* AX_SORT_TENSOR or an ops_pkind */
    int op;                /* AX_TAPP: an ops_op; otherwise OP_COUNT */
    int32_t value;         /* AX_TVAR: variable index; AX_TLIT: the value */
    int n_args;
    int arg[AX_MAX_ARGS];  /* term ids, all smaller than this term's id */
    uint32_t vars;         /* bit i set when variable i occurs in the term */
    int line, col;         /* where the term starts */
    int32_t den;           /* AX_TNUM: the value is value / den */
} ax_term;

typedef struct {
    char name[AX_MAX_NAME + 1];
    int sort;
} ax_var;

typedef struct {
    char name[AX_MAX_NAME + 1];
    char comment[AX_MAX_COMMENT + 1];
    int line;                      /* of the opening parenthesis */
    int n_vars;
    ax_var var[AX_MAX_VARS];       /* in declaration order */
    int lhs, rhs;                  /* term ids */
    int first_term, end_term;      /* the axiom's terms: [first_term, end_term) */
} ax_axiom;

typedef struct {
    char file[128];      /* the name used in messages (truncated) */
    ax_term *term;
    int n_terms, cap_terms;
    ax_axiom *axiom;
    int n_axioms, cap_axioms;
} ax_set;

/* Parse len bytes of text (need not be NUL-terminated) into *out.
 * fname names the text in messages.
 * @return AX_OK with *out filled (release with ax_free); otherwise a status
 *         with "FNAME:LINE:COL: what is wrong" in err and *out empty (no
 *         ax_free needed, though calling it is harmless). */
int ax_parse_string(const char *text, size_t len, const char *fname,
                    ax_set *out, char err[AX_ERRLEN]);

/* Read and parse the file at path; as ax_parse_string, plus AX_EIO when it
 * cannot be read and AX_ELIMIT above AX_MAX_FILE bytes. */
int ax_parse_file(const char *path, ax_set *out, char err[AX_ERRLEN]);

/* Release a set filled by a parser; leaves it empty. NULL-safe. */
void ax_free(ax_set *s);

/* @return the index of the axiom called name, or -1. */
int ax_find(const ax_set *s, const char *name);

/* "tensor" or the parameter kind's name. @pre 0 <= sort <= AX_SORT_TENSOR */
const char *ax_sort_name(int sort);

/* Render term t of axiom a in the file syntax, e.g. "(conv2d s SAME NONE g
 * x w)", truncated to fit n bytes (always NUL-terminated when n > 0).
 * @return buf */
char *ax_term_str(const ax_set *s, const ax_axiom *a, int t, char *buf,
                  size_t n);

#endif
