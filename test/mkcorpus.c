/* mkcorpus.c - write small valid ruledb files for the CLI tests and the fuzz
 * seed corpus: `mkcorpus DIR` writes DIR/rules.tasodb and
 * DIR/candidates.tasodb (plus DIR/rules-b.tasodb, an overlapping rule set
 * for diff and merge tests). */
#include <stdio.h>
#include <string.h>

#include "ruledb.h"

typedef struct {
    const char *src, *dst;
    rdb_proof status;
    uint64_t millis;
} mkc_rule;

/* Rule set A: plain, symbolic-size, multi-output and constant rules. */
static const mkc_rule rules_a[] = {
    {"(matmul x0 (matmul x1 x2))", "(matmul (matmul x0 x1) x2)", RDB_PROVED, 3},
    {"(ewadd x0 x1)", "(ewadd x1 x0)", RDB_PROVED, 1},
    {"(transpose (transpose x0))", "x0", RDB_PROVED, 2},
    {"(split0 1 (dim 1 x0) (concat 1 x0 x1)), (split1 1 (dim 1 x0) (concat 1 x0 x1))",
     "x0, x1", RDB_PROVED, 12},
    {"(relu (conv2d 1 SAME NONE 1 x0 x1))", "(conv2d 1 SAME RELU 1 x0 x1)", RDB_PROVED, 5},
    {"(avgpool 3x3 1 SAME x0)", "(conv2d 1 SAME NONE 1 x0 (poolk 3x3 x0))", RDB_UNKNOWN, 10000},
};

/* Rule set B: overlaps A in two rules, adds two. */
static const mkc_rule rules_b[] = {
    {"(ewadd x0 x1)", "(ewadd x1 x0)", RDB_PROVED, 4},
    {"(transpose (transpose x0))", "x0", RDB_PROVED, 2},
    {"(ewmul x0 (ones x0))", "x0", RDB_PROVED, 7},
    {"(transpose (matmul x0 x1))", "(matmul (transpose x1) (transpose x0))", RDB_PROVED, 9},
};

static const char *const class_members[][3] = {
    {"(ewadd x0 x1)", "(ewadd x1 x0)", NULL},
    {"(relu (conv2d 1 SAME NONE 1 x0 x1))", "(conv2d 1 SAME RELU 1 x0 x1)", NULL},
    {"(relu (split0 0 2 x0)), (relu (split1 0 2 x0))",
     "(split0 0 2 (relu x0)), (split1 0 2 (relu x0))", NULL},
};

static int parse(const char *text, rg_graph *g) {
    char err[RG_ERRLEN];
    if (rg_parse(text, g, err, sizeof err) == RG_OK) return 0;
    fprintf(stderr, "mkcorpus: %s: %s\n", text, err);
    return -1;
}

static rdb_file *make_rules(const mkc_rule *t, size_t n, uint64_t seed) {
    rdb_file *f = rdb_new(RDB_RULES);
    for (size_t i = 0; f && i < n; i++) {
        rg_graph src, dst;
        rdb_prover pv = {"z3", "4.8", t[i].millis, t[i].status};
        if (parse(t[i].src, &src) || parse(t[i].dst, &dst)) return rdb_free(f), NULL;
        if (dst.n_inputs < src.n_inputs) dst.n_inputs = src.n_inputs; /* unused inputs */
        if (rdb_add_rule(f, &src, &dst, &pv) != RDB_OK) return rdb_free(f), NULL;
    }
    if (!f) return NULL;
    snprintf(f->gen.tool, sizeof f->gen.tool, "mkcorpus");
    snprintf(f->gen.version, sizeof f->gen.version, "1");
    f->gen.seed = seed;
    f->gen.max_ops = 3;
    f->gen.counts.proved = n;
    f->gen.n_notes = 1;
    snprintf(f->gen.notes[0], RDB_NOTE_LEN, "timeout_ms=10000");
    return f;
}

static rdb_file *make_candidates(void) {
    rdb_file *f = rdb_new(RDB_CANDIDATES);
    size_t n = sizeof class_members / sizeof class_members[0];
    for (size_t i = 0; f && i < n; i++) {
        rdb_class *c;
        uint8_t fp[16] = {0};
        fp[0] = (uint8_t)(i + 1); /* little-endian residues 1+i and 0 */
        if (rdb_add_class(f, fp, i == 2 ? 16 : 8, 2 + i, &c) != RDB_OK) return rdb_free(f), NULL;
        for (int m = 0; class_members[i][m]; m++) {
            rg_graph g;
            if (parse(class_members[i][m], &g) || rdb_class_add_member(c, &g) != RDB_OK)
                return rdb_free(f), NULL;
            /* every input an NCHW activation: enough for a format corpus */
            while (c->n_shapes < g.n_inputs)
                c->shapes[c->n_shapes++] = (ten_shape){4, {1, 2, 4, 4}};
        }
    }
    if (!f) return NULL;
    snprintf(f->gen.tool, sizeof f->gen.tool, "mkcorpus");
    f->gen.max_ops = 2;
    f->gen.ops = OPS_SET_BIT(OP_EWADD) | OPS_SET_BIT(OP_CONV2D) | OPS_SET_BIT(OP_RELU) | OPS_SET_BIT(OP_SPLIT0) |
                 OPS_SET_BIT(OP_SPLIT1);
    f->gen.counts.graphs = 1000;
    f->gen.counts.classes = n;
    f->gen.timings.wall_ms = 42;
    return f;
}

static int save(const char *dir, const char *name, rdb_file *f) {
    char path[4096], err[RDB_ERRLEN];
    int rc = -1;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!f) fprintf(stderr, "mkcorpus: cannot build %s\n", name);
    else if (rdb_write(path, f, err, sizeof err) != RDB_OK) fprintf(stderr, "mkcorpus: %s\n", err);
    else rc = 0;
    rdb_free(f);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: mkcorpus DIR\n"
                        "writes DIR/rules.tasodb, DIR/rules-b.tasodb, DIR/candidates.tasodb\n");
        return 2;
    }
    int bad = save(argv[1], "rules.tasodb",
                   make_rules(rules_a, sizeof rules_a / sizeof rules_a[0], 1));
    bad |= save(argv[1], "rules-b.tasodb",
                make_rules(rules_b, sizeof rules_b / sizeof rules_b[0], 2));
    bad |= save(argv[1], "candidates.tasodb", make_candidates());
    return bad ? 1 : 0;
}
