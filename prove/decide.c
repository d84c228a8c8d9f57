/* decide.c - one candidate pair: evaluation at the class shapes, at random
 * other shapes (axcheck), then Z3 (see decide.h). */
#include "decide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axcheck.h"

/* Bytes of the identity text built for stage 2: a graph of 8 nodes printed
 * as a tree stays far below this; a longer one skips the stage. */
#define DC_TEXT_MAX 8192

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static int set(dc_result *r, rdb_proof status, int stage, const char *why) {
    r->status = status;
    r->stage = stage;
    snprintf(r->why, sizeof r->why, "%s", why);
    return 0;
}

/* ---- stage 1: the class shapes ---- */

static void free_all(ten *t, int n) {
    for (int i = 0; i < n; i++) ten_free(&t[i]);
}

/* Outputs of g on inputs in, compared with want; *equal set. @return 0,
 * 1 when g is ill-shaped there, -1 out of memory. */
static int eval_compare(const rg_graph *a, const rg_graph *b, const ten *in, int *equal) {
    ten oa[RG_MAX_OUTPUTS], ob[RG_MAX_OUTPUTS];
    char err[RG_ERRLEN];
    rg_status ra = rg_eval(a, in, oa, err, sizeof err);
    if (ra != RG_OK) return ra == RG_ESHAPE ? 1 : -1;
    rg_status rb = rg_eval(b, in, ob, err, sizeof err);
    if (rb != RG_OK) {
        free_all(oa, a->n_outputs);
        return rb == RG_ESHAPE ? 1 : -1;
    }
    *equal = 1;
    for (int k = 0; k < a->n_outputs; k++) *equal &= ten_equal(&oa[k], &ob[k]);
    free_all(oa, a->n_outputs);
    free_all(ob, b->n_outputs);
    return 0;
}

int dc_shapes(const rg_graph *a, const rg_graph *b, const ten_shape *shapes, int n,
              uint64_t seed, dc_result *r) {
    ten in[RG_MAX_INPUTS];
    int rc = 0, equal = 1, made = 0;
    uint64_t t0 = now_ms();
    memset(r, 0, sizeof *r);
    memset(in, 0, sizeof in);
    set(r, RDB_UNCHECKED, 1, "");
    if (a->n_outputs != b->n_outputs) return set(r, RDB_REFUTED, 1, "different numbers of outputs");
    for (; made < n && rc == 0; made++) {
        if (ten_alloc(&in[made], &shapes[made]) != 0) rc = -1;
        else ten_fill_random(&in[made], &seed);
    }
    if (rc == 0) rc = eval_compare(a, b, in, &equal);
    if (rc == 1) rc = set(r, RDB_REFUTED, 1, "ill-shaped at the class shapes");
    else if (rc == 0 && !equal) set(r, RDB_REFUTED, 1, "sides differ at the class shapes");
    else if (rc < 0) set(r, RDB_UNKNOWN, 1, "out of memory evaluating");
    free_all(in, made);
    r->millis = now_ms() - t0;
    return rc;
}

/* ---- stage 2: other shapes ---- */

/* Inputs used by the subterm at ref r (inputs and symbolic sizes). */
static uint32_t used_inputs(const rg_graph *g, rg_ref r) {
    if (RG_IS_INPUT(r)) return 1u << r;
    const rg_node *n = &g->node[RG_NODE_INDEX(r)];
    const ops_info *o = &ops_table[n->op];
    uint32_t m = 0;
    for (int k = 0; k < o->n_params; k++)
        if (o->pkind[k] == PK_SIZE && RG_IS_SYM_SIZE(n->param[k]))
            m |= 1u << RG_SYM_INPUT(n->param[k]);
    for (int k = 0; k < o->arity; k++) m |= used_inputs(g, n->in[k]);
    return m;
}

/* "(axiom pair "k" ((x0 tensor)...) LHS RHS)" for output k.
 * @return 0, or -1 when it does not fit. */
static int identity_text(const rg_graph *a, const rg_graph *b, int k, char *buf, size_t n) {
    uint32_t used = used_inputs(a, a->out[k]) | used_inputs(b, b->out[k]);
    size_t len = (size_t)snprintf(buf, n, "(axiom pair \"output %d\" (", k);
    for (int i = 0; i < RG_MAX_INPUTS && len < n; i++)
        if (used >> i & 1) len += (size_t)snprintf(buf + len, n - len, "(x%d tensor)", i);
    if (len + 2 >= n) return -1;
    len += (size_t)snprintf(buf + len, n - len, ") ");
    len += rg_format_output(a, k, buf + len, n - len);
    if (len + 2 >= n) return -1;
    len += (size_t)snprintf(buf + len, n - len, " ");
    len += rg_format_output(b, k, buf + len, n - len);
    if (len + 2 >= n) return -1;
    snprintf(buf + len, n - len, ")");
    return 0;
}

static int stage_general(const rg_graph *a, const rg_graph *b, uint64_t seed, dc_result *r) {
    char *text = malloc(DC_TEXT_MAX);
    int rc = 0;
    if (!text) {
        set(r, RDB_UNKNOWN, 2, "out of memory");
        return -1;
    }
    for (int k = 0; k < a->n_outputs && rc == 0 && r->status != RDB_REFUTED; k++) {
        ax_set s;
        axc_result ar;
        char err[AX_ERRLEN];
        if (identity_text(a, b, k, text, DC_TEXT_MAX) != 0) continue;
        if (ax_parse_string(text, strlen(text), "pair", &s, err) != AX_OK) continue;
        int st = axc_check(&s, 0, DC_GENERAL_INSTANCES, seed + (uint64_t)k, &ar);
        if (st == AXC_EMISMATCH) {
            const char *at = strstr(ar.msg, "sides differ on ");
            snprintf(r->why, sizeof r->why, "sides differ at other shapes: %.200s",
                     at ? at + 16 : ar.instance);
            r->status = RDB_REFUTED;
            r->stage = 2;
        } else if (st == AXC_EEVAL) {
            set(r, RDB_UNKNOWN, 2, "out of memory evaluating");
            rc = -1;
        }
        ax_free(&s);
    }
    free(text);
    return rc;
}

/* ---- stage 3: Z3 ---- */

static ze_verdict prove(dc_worker *w, const rg_graph *a, const rg_graph *b, char *why) {
    if (w->z && w->uses >= DC_RECYCLE) dc_worker_close(w);
    if (!w->z && ze_open(w->cfg->axioms, w->cfg->plan, &w->z, why, ZE_WHYLEN) != 0)
        return ZE_ERROR;
    w->uses++;
    return ze_prove_graphs(w->z, a, b, &w->cfg->lim, why);
}

static int stage_z3(dc_worker *w, const rg_graph *a, const rg_graph *b, dc_result *r) {
    char why[ZE_WHYLEN];
    ze_verdict v = prove(w, a, b, why);
    switch (v) {
    case ZE_PROVED: return set(r, RDB_PROVED, 3, "");
    case ZE_UNKNOWN: return set(r, RDB_UNKNOWN, 3, why);
    case ZE_TIMEOUT: return set(r, RDB_TIMEOUT, 3, why);
    case ZE_ILLSHAPED: return set(r, RDB_UNKNOWN, 3, why);
    case ZE_ERROR: break;
    }
    set(r, RDB_UNKNOWN, 3, why);
    dc_worker_close(w); /* a context after an error is not trusted again */
    return -1;
}

int dc_decide(dc_worker *w, const rg_graph *a, const rg_graph *b, uint64_t seed, dc_result *out) {
    uint64_t t0 = now_ms();
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->status = RDB_UNKNOWN;
    if (a->n_outputs != b->n_outputs) rc = set(out, RDB_REFUTED, 1, "different numbers of outputs");
    if (rc == 0 && out->status != RDB_REFUTED && w->cfg->general)
        rc = stage_general(a, b, seed ^ 0x6a09e667f3bcc909ull, out);
    if (rc == 0 && out->status != RDB_REFUTED) rc = stage_z3(w, a, b, out);
    out->millis = now_ms() - t0;
    return rc;
}

void dc_worker_close(dc_worker *w) {
    ze_close(w->z);
    w->z = NULL;
    w->uses = 0;
}
