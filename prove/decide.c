/* decide.c - one candidate pair: evaluation at the class shapes, at
 * variants of them, then Z3 (see decide.h). */
#include "decide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axcheck.h"

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

const char *dc_class_name(dc_class c) {
    switch (c) {
    case DC_PROVED: return "proved";
    case DC_DERIVED: return "derived from known rules";
    case DC_REFUTED: return "refuted by evaluation";
    case DC_UNKNOWN: return "unknown";
    case DC_BUDGET: return "budget";
    case DC_CLOCK: return "clock";
    case DC_ERROR: return "error";
    case DC_CLASS_COUNT: break;
    }
    return "?";
}

/* The class a status has unless the caller knows better (stage_z3). */
static dc_class class_of(rdb_proof s) {
    switch (s) {
    case RDB_PROVED: return DC_PROVED;
    case RDB_REFUTED: return DC_REFUTED;
    case RDB_TIMEOUT: return DC_BUDGET;
    case RDB_UNKNOWN:
    case RDB_UNCHECKED:
    case RDB_PROOF_COUNT: break;
    }
    return DC_UNKNOWN;
}

static int set(dc_result *r, rdb_proof status, int stage, const char *why) {
    r->status = status;
    r->cls = class_of(status);
    r->stage = stage;
    snprintf(r->why, sizeof r->why, "%s", why);
    return 0;
}

static int out_of_memory(dc_result *r, int stage) {
    set(r, RDB_UNKNOWN, stage, "out of memory evaluating");
    r->cls = DC_ERROR;
    return -1;
}

/* ---- evaluation ---- */

static void free_all(ten *t, int n) {
    for (int i = 0; i < n; i++) ten_free(&t[i]);
}

/* Evaluate a and b on random inputs of the given shapes; *equal set.
 * @return 0, 1 when a graph is ill-shaped there, -1 out of memory. */
static int eval_pair(const rg_graph *a, const rg_graph *b, const ten_shape *shapes, int n,
                     uint64_t seed, int *equal) {
    ten in[RG_MAX_INPUTS], oa[RG_MAX_OUTPUTS], ob[RG_MAX_OUTPUTS];
    char err[RG_ERRLEN];
    int rc = 0, made = 0;
    memset(in, 0, sizeof in);
    for (; made < n && rc == 0; made++) {
        if (ten_alloc(&in[made], &shapes[made]) != 0) rc = -1;
        else ten_fill_random(&in[made], &seed);
    }
    rg_status ra = rc ? RG_ENOMEM : rg_eval(a, in, oa, err, sizeof err);
    rg_status rb = ra ? ra : rg_eval(b, in, ob, err, sizeof err);
    if (ra == RG_OK && rb == RG_OK) {
        *equal = 1;
        for (int k = 0; k < a->n_outputs; k++) *equal &= ten_equal(&oa[k], &ob[k]);
        free_all(ob, b->n_outputs);
    }
    if (ra == RG_OK) free_all(oa, a->n_outputs);
    free_all(in, made);
    if (ra == RG_ENOMEM || rb == RG_ENOMEM) return -1;
    return ra != RG_OK || rb != RG_OK ? 1 : 0;
}

/* ---- stage 1: the class shapes ---- */

int dc_shapes(const rg_graph *a, const rg_graph *b, const ten_shape *shapes, int n,
              uint64_t seed, dc_result *r) {
    int equal = 0;
    uint64_t t0 = now_ms();
    memset(r, 0, sizeof *r);
    set(r, RDB_UNCHECKED, 1, "");
    if (a->n_outputs != b->n_outputs) return set(r, RDB_REFUTED, 1, "different numbers of outputs");
    int rc = eval_pair(a, b, shapes, n, seed, &equal);
    if (rc == 1) rc = set(r, RDB_REFUTED, 1, "ill-shaped at the class shapes");
    else if (rc == 0 && !equal) set(r, RDB_REFUTED, 1, "sides differ at the class shapes");
    else if (rc < 0) out_of_memory(r, 1);
    r->millis = now_ms() - t0;
    return rc;
}

/* ---- stage 2: variants of the class shapes ---- */

static int32_t random_dim(uint64_t *rng) { return 1 + (int32_t)(ten_rand_next(rng) % DC_MAX_DIM); }

/* Give every distinct dim value a new random value or keep it (each with
 * probability 1/2): equal dims stay equal, coincidences between a dim and
 * a literal parameter (a split point, a kernel size) break. */
static void remap_values(ten_shape *s, int n, uint64_t *rng) {
    int32_t from[RG_MAX_INPUTS * TEN_MAX_RANK], to[RG_MAX_INPUTS * TEN_MAX_RANK];
    int m = 0;
    for (int i = 0; i < n; i++)
        for (int a = 0; a < s[i].rank; a++) {
            int k = 0;
            while (k < m && from[k] != s[i].dim[a]) k++;
            if (k == m) {
                from[m] = s[i].dim[a];
                to[m++] = ten_rand_next(rng) & 1 ? random_dim(rng) : s[i].dim[a];
            }
            s[i].dim[a] = to[k];
        }
}

/* Change one dim of one input: breaks a coincidence between equal dims
 * (a square matrix, equal channel counts). */
static void move_one(ten_shape *s, int n, uint64_t *rng) {
    int i = (int)(ten_rand_next(rng) % (uint64_t)n);
    if (s[i].rank) s[i].dim[ten_rand_next(rng) % (uint64_t)s[i].rank] = random_dim(rng);
}

/* 1 when no value of g (shapes v from rg_infer_shapes) is large. */
static int small(const rg_graph *g, const ten_shape *v, int n) {
    for (int i = 0; i < n; i++)
        if (ten_numel(&v[RG_IN(i)]) > DC_MAX_CELLS) return 0;
    for (int j = 0; j < g->n_nodes; j++)
        if (ten_numel(&v[RG_NODE(j)]) > DC_MAX_CELLS) return 0;
    return 1;
}

/* A variant of the class shapes for which both graphs are well shaped,
 * small, and different from the class shapes. @return 1 when found. */
static int variant(const rg_graph *a, const rg_graph *b, const ten_shape *shapes, int n,
                   uint64_t *rng, ten_shape *out) {
    ten_shape va[RG_MAX_REFS], vb[RG_MAX_REFS];
    memcpy(out, shapes, (size_t)n * sizeof *out);
    if (ten_rand_next(rng) % 3) remap_values(out, n, rng);
    else move_one(out, n, rng);
    int same = 1;
    for (int i = 0; i < n; i++) same &= ten_shape_eq(&out[i], &shapes[i]);
    return !same && rg_infer_shapes(a, out, va, NULL, 0) == RG_OK &&
           rg_infer_shapes(b, out, vb, NULL, 0) == RG_OK && small(a, va, a->n_inputs) &&
           small(b, vb, b->n_inputs);
}

static void describe(const ten_shape *s, int n, char *buf, size_t len) {
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k < len; i++) {
        char t[64];
        int w = snprintf(buf + k, len - k, "%sx%d=%s", i ? " " : "", i, ten_shape_str(&s[i], t));
        k += w > 0 ? (size_t)w : 0;
    }
}

/* Try DC_VARIANTS variants, evaluate the first DC_EVALS well-shaped ones.
 * @return 0 (refuted or not), -1 out of memory. */
static int stage_variants(const rg_graph *a, const rg_graph *b, const ten_shape *shapes, int n,
                          uint64_t seed, dc_result *r) {
    ten_shape v[RG_MAX_INPUTS];
    int evals = 0;
    for (int t = 0; t < DC_VARIANTS && evals < DC_EVALS; t++) {
        int equal = 0;
        if (!variant(a, b, shapes, n, &seed, v)) continue;
        evals++;
        int rc = eval_pair(a, b, v, n, ten_rand_next(&seed), &equal);
        if (rc < 0) return out_of_memory(r, 2);
        if (rc == 0 && !equal) {
            char d[DC_WHYLEN - 40];
            describe(v, n, d, sizeof d);
            snprintf(r->why, sizeof r->why, "sides differ at other shapes: %s", d);
            r->status = RDB_REFUTED;
            r->cls = DC_REFUTED;
            r->stage = 2;
            return 0;
        }
    }
    return 0;
}

/* ---- a rule without shapes: axcheck's search ---- */

/* Output k of a and b as an identity in the axiom syntax, over the inputs
 * either side reads. @return the length, or 0 when it does not fit. */
static size_t identity_text(const rg_graph *a, const rg_graph *b, int k, char *buf, size_t len) {
    uint32_t used = 0;
    const rg_graph *g[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        for (int j = 0; j < g[s]->n_nodes; j++) used |= rg_node_inputs(&g[s]->node[j]);
        for (int o = 0; o < g[s]->n_outputs; o++)
            if (RG_IS_INPUT(g[s]->out[o])) used |= 1u << g[s]->out[o];
    }
    size_t n = (size_t)snprintf(buf, len, "(axiom rule \"\" (");
    for (int i = 0; i < RG_MAX_INPUTS && n < len; i++)
        if (used >> i & 1) n += (size_t)snprintf(buf + n, len - n, "(x%d tensor)", i);
    if (n < len) n += (size_t)snprintf(buf + n, len - n, ") ");
    if (n < len) n += rg_format_output(a, k, buf + n, len - n);
    if (n < len) n += (size_t)snprintf(buf + n, len - n, " ");
    if (n < len) n += rg_format_output(b, k, buf + n, len - n);
    if (n < len) n += (size_t)snprintf(buf + n, len - n, ")");
    return n + 1 < len ? n : 0;
}

int dc_rule_eval(const rg_graph *a, const rg_graph *b, int n_instances, uint64_t seed,
                 dc_result *r) {
    char text[4096], err[AX_ERRLEN];
    memset(r, 0, sizeof *r);
    set(r, RDB_UNCHECKED, 2, "");
    if (a->n_outputs != b->n_outputs) return set(r, RDB_REFUTED, 1, "different numbers of outputs");
    for (int k = 0; k < a->n_outputs; k++) {
        ax_set s;
        axc_result ar;
        size_t n = identity_text(a, b, k, text, sizeof text);
        int prc = n ? ax_parse_string(text, n, "rule", &s, err) : AX_ELIMIT;
        if (prc == AX_ENOMEM) return out_of_memory(r, 2);
        if (prc != AX_OK) continue; /* not an identity axcheck can read: Z3 alone */
        int crc = axc_check(&s, 0, n_instances, seed + (uint64_t)k, &ar);
        ax_free(&s);
        if (crc == AXC_EEVAL) return out_of_memory(r, 2);
        if (crc == AXC_EMISMATCH) {
            snprintf(r->why, sizeof r->why, "output %d differs at %.200s", k, ar.instance);
            r->status = RDB_REFUTED;
            r->cls = DC_REFUTED;
            return 0;
        }
    }
    return 0;
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
    case ZE_BUDGET: return set(r, RDB_TIMEOUT, 3, why);
    case ZE_TIMEOUT:
        set(r, RDB_TIMEOUT, 3, why);
        r->cls = DC_CLOCK;
        return 0;
    case ZE_ILLSHAPED: return set(r, RDB_UNKNOWN, 3, why);
    case ZE_ERROR: break;
    }
    set(r, RDB_UNKNOWN, 3, why);
    r->cls = DC_ERROR;
    dc_worker_close(w); /* a context after an error is not trusted again */
    return -1;
}

int dc_decide(dc_worker *w, const rg_graph *a, const rg_graph *b, const ten_shape *shapes,
              int n_shapes, uint64_t seed, dc_result *out) {
    uint64_t t0 = now_ms();
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->status = RDB_UNKNOWN;
    if (a->n_outputs != b->n_outputs) rc = set(out, RDB_REFUTED, 1, "different numbers of outputs");
    if (rc == 0 && out->status != RDB_REFUTED && w->cfg->general && shapes)
        rc = stage_variants(a, b, shapes, n_shapes, seed ^ 0x6a09e667f3bcc909ull, out);
    if (rc == 0 && out->status != RDB_REFUTED) rc = stage_z3(w, a, b, out);
    /* Z3 first, then the known rules, and only on what it proved: most
     * pairs it cannot prove give no rule either way, and a derivation that
     * fails costs a bounded saturation; and Z3's lanes see the same checks
     * with --known as without, so it proves the same pairs */
    int known = 0;
    if (rc == 0 && out->status == RDB_PROVED && w->cfg->known &&
        (known = w->cfg->known(w->cfg->known_arg, a, b)) < 0)
        rc = out_of_memory(out, 3);
    if (rc == 0 && known) out->cls = DC_DERIVED;
    out->millis = now_ms() - t0;
    return rc;
}

void dc_worker_close(dc_worker *w) {
    ze_close(w->z);
    w->z = NULL;
    w->uses = 0;
}
