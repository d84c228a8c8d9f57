/* rules_int.h - private to rules.c, match.c, apply.c, trial.c and rematch.c: the ruleset's
 * layout and each rule's matching plan. Not part of the public API. */
#ifndef EG_RULES_INT_H
#define EG_RULES_INT_H

#include "rewrite/rules.h"

/* How a plan step finds the graph node for src node `node`. ORDER STEP */
typedef enum {
    EG_STEP_ANCHOR,   /* the node eg_match_all starts from */
    EG_STEP_PRODUCER, /* producer of input `pos` of bound src node `from` */
    EG_STEP_CONSUMER, /* a reader (at input `pos`) of bound ref `from` */
    EG_STEP_SCAN      /* any graph node with its operator (disconnected src) */
} eg_step_kind;

typedef struct {
    eg_step_kind kind;
    int node; /* src node bound by this step */
    int from; /* PRODUCER: src node; CONSUMER: an rg_ref */
    int pos;  /* input position */
} eg_step;

/* Where a free parameter (ops.h: free) takes its value: parameter k of src
 * node j, as EG_SITE(j, k); -1 for a parameter that is not free. */
#define EG_SITE(j, k) ((signed char)((j) * OPS_MAX_PARAMS + (k)))
#define EG_SITE_NODE(s) ((s) / OPS_MAX_PARAMS)
#define EG_SITE_PARAM(s) ((s) % OPS_MAX_PARAMS)

typedef struct {
    int n_steps;              /* = src.n_nodes */
    eg_step step[RG_MAX_NODES];
    unsigned char is_out[RG_MAX_NODES]; /* src node j is a rule output */
    /* free parameters: the first src parameter writing the same label, for
     * each src and each dst parameter (the match requires src's to agree
     * with it; the rewrite copies it into dst's) */
    signed char src_site[RG_MAX_NODES][OPS_MAX_PARAMS];
    signed char dst_site[RG_MAX_NODES][OPS_MAX_PARAMS];
    /* bit i: rule input xi must be a 1x1 kernel (rank 4, dims 2 and 3 of
     * 1): the rule wrote it (enlarge 1x1 xi), which rules.c strips */
    uint8_t kernel1;
    /* 1 when each dst output reads (through dst) every rule input its src
     * output reads: the rewrite then keeps every path between the nodes
     * it leaves (eg_ruleset_keeps_paths) */
    uint8_t keeps_paths;
    /* 1 when dst multiplies by constant zeros src does not have (more
     * enlarge, imm, iconv and poolk nodes): such a rewrite is refused on a
     * value that may be infinite or NaN (range.h: eg_mark_nonfinite) */
    uint8_t adds_zeros;
    /* with adds_zeros, bit i: dst divides by rule input xi, which must be
     * an initializer without zeros (else x / 0 = inf meets the zeros) */
    uint8_t divisors;
    /* src's and dst's operators (rg_ops_written): derive.c narrows a
     * derivation to the rules over an equation's own operators */
    ops_set ops;
} eg_plan;

/* Plans as a tree: routes (a rule's src found step by step from one of
 * its nodes) whose first d steps find and bind the same src nodes the same
 * way share a path of d tree nodes, so matching tries a graph node once for
 * all of them (engine/rewrite/match.c). A tree node is one step: what it binds is
 * src node step.node of its representative rule `rep` (every rule below it
 * has the same step and the same src node there). Its children are
 * kids[kid .. kid + n_kid) and the rules whose routes end with it
 * ends[end .. end + n_end) (ruleset order). */
typedef struct {
    eg_step step;
    uint32_t rep;
    uint32_t kid, n_kid;
    uint32_t end, n_end;
} eg_tnode;

typedef struct {
    eg_tnode *node;
    uint32_t *kids, *ends;     /* tree node ids, rule ids */
    size_t n;
    uint32_t root[OP_COUNT], n_root[OP_COUNT]; /* the first steps by the
                                  operator of the node they start from:
                                  kids[root[op] .. root[op] + n_root[op]) */
} eg_tree;

struct eg_ruleset {
    rdb_rule *rule;
    eg_plan *plan;
    unsigned char *reversed; /* rule i is a file rule read right to left */
    size_t *mate;            /* the rule that is rule i's reverse, or EG_NO_MATE */
    size_t n, n_skipped;
    char stale[RDB_ERRLEN]; /* eg_ruleset_stale: "" unless the file was stale */
    uint32_t op_start[OP_COUNT + 1]; /* rules by anchor op: by_op[op_start[op]..] */
    uint32_t *by_op;
    uint32_t *rank;                  /* rank[i]: rule i's position in by_op */
    eg_tree tree;                    /* the plans, from src's first output
                                        (eg_match_all) */
    eg_tree touch;                   /* every rule from each of its src
                                        nodes (eg_match_touching); empty
                                        with has_scan */
    int has_scan;                    /* a plan has a SCAN step: a match can
                                        bind nodes anywhere (rematch.c) */
};

/* Every match of g that binds a node j with touched[j] set (eg_rematch
 * finds a rewritten graph's new matches so), each binding of src nodes to
 * graph nodes once: it is found from the first src node, in src order,
 * that binds a touched node. Unlike eg_match_all, bindings of a
 * multi-output rule to the same nodes in another order are all reported
 * (eg_match_all reports the first of them in its order), and the order is
 * not eg_match_all's. @pre !rs->has_scan. @return EG_OK or EG_ENOMEM. */
eg_status eg_match_touching(const eg_ruleset *rs, const eg_graph *g, const unsigned char *touched,
                            eg_match_fn fn, void *arg);

/* Dst node j as the rewrite writes it (operator, parameters; inputs and
 * outputs left to the caller): a free parameter takes the value the match
 * gave it in src, a 1x1 conv is written SAME. in, shape: the rule inputs'
 * and dst values' shapes (rg_infer_shapes). apply.c builds with it and
 * trial.c judges with it, so both write the same node.
 * @return EG_OK, or EG_ESHAPE when a size does not evaluate. */
eg_status eg_dst_node_op(const eg_graph *g, const eg_plan *p, const rg_graph *dst, int j,
                         const eg_match *m, const ten_shape *in, const ten_shape *shape, eg_node *n);

/* 1 when w is a 1x1 kernel (what a rule's (enlarge 1x1 xi) guard and the
 * SAME spelling of a 1x1 conv ask for). */
static inline int eg_kernel_1x1(const ten_shape *w) {
    return w->rank == 4 && w->dim[2] == 1 && w->dim[3] == 1;
}

/* 1 when value v of parameter k of op in a rule is matched as a free
 * parameter: a label kind (ops.h: free) or a group-count symbol (rgraph.h),
 * any value, the same wherever the rule writes the same one. */
static inline int eg_param_free(ops_op op, int k, int32_t v) {
    ops_pkind kind = ops_table[op].pkind[k];
    return ops_pkind_table[kind].free || RG_IS_SYM_GROUPS(kind, v);
}

/* The value a match gives the free parameter at `site` (nm[j]: the graph
 * node matched by src node j). */
static inline int32_t eg_site_value(const eg_graph *g, const int *nm, signed char site) {
    return g->node[nm[EG_SITE_NODE(site)]].param[EG_SITE_PARAM(site)];
}

#endif
