/* cost.c - the cost model (cost.h): canonical memo keys and their hash
 * table, the reduction of a node to a kernel descriptor with its flops and
 * bytes in kernel.c, dispatch to the measuring backends, the export's
 * fused groups, and the cache file. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "afile.h"

#include "cost/cost.h"
#include "sys/sys.h"
#include "cost/cost_impl.h"
#include "cost/kernel.h"
#include "onnx/groups.h"
#include "win.h"

struct entry {
    uint64_t hash;
    uint8_t *key;
    size_t len;
    double us;
    int traced; /* written to the trace (eg_cost_trace) */
    int scaled; /* counted in the scale of its class (eg_cost_node_estimate) */
};

/* A kernel timed or read from the cache file: log of its analytic price
 * and log(timed / analytic). */
struct scale_pt {
    double la, lr;
};

struct eg_cost {
    eg_cost_kind kind;
    char *path;
    char machine[128];
    struct entry *ent;   /* insertion order (the order eg_cost_save writes) */
    size_t n_ent, cap_ent;
    int32_t *slot;       /* open addressing: index into ent, -1 empty */
    size_t n_slot;       /* a power of two, >= 2 x n_ent */
    uint64_t hits, misses;
    uint64_t fallbacks;  /* kernels the backend could not run */
    uint64_t measured;   /* kernels the backend timed */
    double seconds;      /* wall time spent measuring them */
    size_t loaded;       /* entries read from the cache file */
    uint8_t *kbuf;       /* key scratch */
    size_t klen, kcap;
    int kfail;           /* the key overflowed or allocation failed */
    eg_cost_cpu *cpu;
    eg_cost_cuda *cuda;
    eg_cost_ort *ort;
    FILE *trace;         /* eg_cost_trace: each kernel group timed, each
                            judgment's two deltas */
    eg_cost *shadow;     /* with trace: analytic-cpu, to compare with */
    struct scale_pt *scale[EG_CAL_COUNT]; /* per kernel class, the kernels timed
                                             or read (eg_cost_node_estimate) */
    int scale_n[EG_CAL_COUNT], scale_cap[EG_CAL_COUNT];
    double scale_log; /* the sum of every point's lr */
    int scale_all;    /* and their number */
};

typedef eg_cost_ctx graph_ctx;

#define MAX_GROUP 5 /* conv + bias + relu; add + layernorm + scale + shift; gelu's five */

static const char *const kind_names[EG_COST_KIND_COUNT] = { /* ORDER COSTKIND */
    [EG_COST_ANALYTIC] = "analytic",
    [EG_COST_CPU] = "cpu",
    [EG_COST_CUDA] = "cuda",
    [EG_COST_ORT] = "ort",
    [EG_COST_ANALYTIC_CPU] = "analytic-cpu",
};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == EG_COST_KIND_COUNT, "kind_names");

const char *eg_cost_kind_name(eg_cost_kind k) {
    return (unsigned)k < EG_COST_KIND_COUNT ? kind_names[k] : "?";
}

int eg_cost_kind_parse(const char *name) {
    for (int k = 0; k < EG_COST_KIND_COUNT && name; k++)
        if (strcmp(name, kind_names[k]) == 0) return k;
    return -1;
}

/* ================= canonical keys ================= */

static void key_bytes(eg_cost *c, const void *p, size_t n) {
    if (c->kfail) return;
    if (c->klen + n > EG_COST_MAX_KEY) {
        c->kfail = 1;
        return;
    }
    if (c->klen + n > c->kcap) {
        size_t cap = c->kcap ? c->kcap * 2 : 256;
        while (cap < c->klen + n) cap *= 2;
        uint8_t *b = realloc(c->kbuf, cap);
        if (!b) {
            c->kfail = 1;
            return;
        }
        c->kbuf = b, c->kcap = cap;
    }
    memcpy(c->kbuf + c->klen, p, n);
    c->klen += n;
}

/* Append v as 8 little-endian bytes (straight into the buffer when it
 * has room: a key is built for every node a judgment charges). */
static void key_i64(eg_cost *c, int64_t v) {
    uint8_t b[8], *to = c->klen + 8 <= c->kcap && c->klen + 8 <= EG_COST_MAX_KEY ? c->kbuf + c->klen : b;
    for (int i = 0; i < 8; i++) to[i] = (uint8_t)((uint64_t)v >> (8 * i));
    if (to != b) c->klen += 8;
    else key_bytes(c, b, 8);
}

static void key_str(eg_cost *c, const char *s) {
    size_t n = s ? strlen(s) : 0;
    key_i64(c, (int64_t)n);
    key_bytes(c, s, n);
}

/* A tensor slot: -1 for an omitted one, else dtype, rank, dims. */
static void key_tensor(eg_cost *c, const eg_graph *g, int t) {
    if (t < 0 || t >= g->n_tensors) {
        key_i64(c, -1);
        return;
    }
    const eg_tensor *x = &g->tensor[t];
    key_i64(c, x->dtype);
    key_i64(c, x->shape.rank);
    for (int i = 0; i < x->shape.rank && i < EG_MAX_RANK; i++) key_i64(c, x->shape.dim[i]);
}

static void key_attrs(eg_cost *c, const eg_attrs *a) {
    const int32_t *iv[] = {a->kernel, a->stride, a->pad};
    const int nv[] = {2, 2, 4};
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < nv[j]; i++) key_i64(c, iv[j][i]);
    key_i64(c, a->group);
    key_i64(c, a->axis);
    key_i64(c, a->flags);
    int n = a->n_ints < 0 ? 0 : a->n_ints > EG_MAX_INTS ? EG_MAX_INTS : a->n_ints;
    key_i64(c, n);
    for (int i = 0; i < n; i++) key_i64(c, a->ints[i]);
}

/* One node's part of a key. */
static void key_node(eg_cost *c, const eg_graph *g, const eg_node *n) {
    key_i64(c, n->kind);
    switch (n->kind) {
    case EG_KIND_OPS:
        key_i64(c, n->op);
        for (int i = 0; i < OPS_MAX_PARAMS && (unsigned)n->op < OP_COUNT; i++)
            key_i64(c, i < ops_table[n->op].n_params ? n->param[i] : 0);
        break;
    case EG_KIND_MODEL:
        key_i64(c, n->mop);
        key_attrs(c, &n->attr);
        break;
    case EG_KIND_OPAQUE: /* its cost depends on the outputs only */
        key_str(c, n->domain);
        key_str(c, n->op_type);
        break;
    case EG_KIND_COUNT:
        break;
    }
    if (n->kind != EG_KIND_OPAQUE) {
        key_i64(c, n->n_in);
        for (int k = 0; k < n->n_in; k++) key_tensor(c, g, n->in[k]);
    }
    key_i64(c, n->n_out);
    for (int k = 0; k < n->n_out; k++) key_tensor(c, g, n->out[k]);
}

/* Build the key of the group nodes[0..n) into c->kbuf: the first node's
 * part, then (ort only, whose groups are timed whole) the number of
 * nodes fused into it and theirs. @return 1, or 0 when it would not fit. */
static int build_key(eg_cost *c, const eg_graph *g, const int *nodes, int n) {
    c->klen = 0, c->kfail = 0;
    key_i64(c, 1); /* key layout version */
    key_node(c, g, &g->node[nodes[0]]);
    if (c->kind == EG_COST_ORT) {
        key_i64(c, n - 1);
        for (int k = 1; k < n; k++) key_node(c, g, &g->node[nodes[k]]);
    }
    return !c->kfail;
}

/* ================= the table ================= */

static long find(const eg_cost *c, uint64_t h, const uint8_t *key, size_t len) {
    if (!c->n_slot) return -1;
    for (size_t i = h & (c->n_slot - 1);; i = (i + 1) & (c->n_slot - 1)) {
        int32_t e = c->slot[i];
        if (e < 0) return -1;
        const struct entry *x = &c->ent[e];
        if (x->hash == h && x->len == len && memcmp(x->key, key, len) == 0) return e;
    }
}

static void place(eg_cost *c, size_t e) {
    for (size_t i = c->ent[e].hash & (c->n_slot - 1);; i = (i + 1) & (c->n_slot - 1))
        if (c->slot[i] < 0) {
            c->slot[i] = (int32_t)e;
            return;
        }
}

/* Store key -> us (a copy of key). @return EG_OK, EG_ENOMEM, EG_ELIMIT. */
static eg_status insert(eg_cost *c, uint64_t h, const uint8_t *key, size_t len, double us) {
    if (c->n_ent >= INT32_MAX / 4) return EG_ELIMIT;
    if (c->n_ent == c->cap_ent) {
        size_t cap = c->cap_ent ? c->cap_ent * 2 : 64;
        struct entry *e = realloc(c->ent, cap * sizeof *e);
        if (!e) return EG_ENOMEM;
        c->ent = e, c->cap_ent = cap;
    }
    if (2 * (c->n_ent + 1) > c->n_slot) {
        size_t ns = c->n_slot ? c->n_slot * 2 : 128;
        int32_t *s = malloc(ns * sizeof *s);
        if (!s) return EG_ENOMEM;
        free(c->slot);
        c->slot = s, c->n_slot = ns;
        memset(s, 0xff, ns * sizeof *s);
        for (size_t e = 0; e < c->n_ent; e++) place(c, e);
    }
    uint8_t *k = malloc(len ? len : 1);
    if (!k) return EG_ENOMEM;
    memcpy(k, key, len);
    c->ent[c->n_ent] = (struct entry){h, k, len, us, 0, 0};
    place(c, c->n_ent++);
    return EG_OK;
}

static int measuring_kind(eg_cost_kind k) { return k == EG_COST_CPU || k == EG_COST_CUDA || k == EG_COST_ORT; }

static int cpu_kind(eg_cost_kind k) { return k == EG_COST_CPU || k == EG_COST_ORT || k == EG_COST_ANALYTIC_CPU; }

static double compute(eg_cost *c, const eg_graph *g, const int *nodes, int n_group,
                      const unsigned char *wo) {
    const eg_node *n = &g->node[nodes[0]];
    eg_cost_kern k;
    if (n->kind == EG_KIND_OPAQUE) return eg_cost_opaque_us(g, n);
    if (!eg_cost_kern_of(g, n, &k)) return EG_COST_UNKNOWN_US;
    double t = -1, t0 = eg_now_s();
    int measurable = k.cls != EG_KC_FREE && k.bytes <= EG_COST_MAX_MEASURE;
    int measuring = measuring_kind(c->kind); /* a backend that times kernels (else a roofline) */
    switch (c->kind) {
    case EG_COST_ANALYTIC:
    case EG_COST_ANALYTIC_CPU: break;
    case EG_COST_CPU:
        if (measurable) t = eg_cost_cpu_time(c->cpu, &k);
        break;
    case EG_COST_CUDA:
        if (measurable) t = eg_cost_cuda_time(c->cuda, &k);
        break;
    case EG_COST_ORT:
        if (measurable) t = eg_cost_ort_time(c->ort, g, nodes, n_group, wo);
        break;
    case EG_COST_KIND_COUNT: break;
    }
    if (measuring) c->seconds += eg_now_s() - t0;
    if (t >= 0 && isfinite(t)) {
        c->measured++;
        return t;
    }
    if (measuring && k.cls != EG_KC_FREE) c->fallbacks++;
    return eg_cost_kern_us(&k, cpu_kind(c->kind));
}

static int fused_follower(const eg_cost *c, const eg_graph *g, const graph_ctx *x, int j);

/* Node j and the nodes fused into it at run time (each the only reader of
 * the one before) into nodes[]; only the ort backend times them together
 * (elsewhere they cost nothing and the node alone is timed).
 * @return how many (1 without x). */
static int group_of(const eg_cost *c, const eg_graph *g, const graph_ctx *x, int j, int *nodes) {
    int n = 0;
    nodes[n++] = j;
    while (x && x->uses && x->reader && c->kind == EG_COST_ORT && n < MAX_GROUP) {
        const eg_node *last = &g->node[nodes[n - 1]];
        int t = last->n_out == 1 ? last->out[0] : -1;
        int r = t >= 0 ? x->reader[t] : -1;
        if (r < 0 || x->uses[t] != 1 || !fused_follower(c, g, x, r)) break;
        nodes[n++] = r;
    }
    return n;
}

/* ================= the trace (bench/calibrate.py) ================= */

static const char *const cal_names[] = {
    [EG_CAL_CONV1] = "conv1", [EG_CAL_CONV] = "conv", [EG_CAL_DWCONV] = "dwconv",
    [EG_CAL_GCONV] = "gconv", [EG_CAL_GEMM] = "gemm", [EG_CAL_POOL] = "pool",
    [EG_CAL_EW] = "ew", [EG_CAL_EWMATH] = "ewmath", [EG_CAL_BNORM] = "bnorm",
    [EG_CAL_ROWS] = "rows", [EG_CAL_GAP] = "gap", [EG_CAL_MOVE] = "move",
    [EG_CAL_TRANS] = "trans", [EG_CAL_TRANSN] = "transn", [EG_CAL_VIEW] = "view",
};
_Static_assert(sizeof cal_names / sizeof cal_names[0] == EG_CAL_COUNT, "cal_names");

static int is_layernorm(const eg_node *n) {
    return (n->kind == EG_KIND_OPS && n->op == OP_LAYERNORM) ||
           (n->kind == EG_KIND_MODEL && n->mop == EG_MOP_LAYERNORM);
}

/* The kernel line of entry e, the group nodes[0..n) of g, once per entry:
 * what calibrate.py fits analytic-cpu's constants on. "lnadd" marks a group
 * only onnxruntime times as one (an addition and the layer norm after it),
 * which analytic-cpu charges as two kernels. */
static void trace_kernel(eg_cost *c, const eg_graph *g, const int *nodes, int n, long e) {
    eg_cost_kern k;
    if (c->ent[e].traced || c->kind != EG_COST_ORT) return;
    c->ent[e].traced = 1;
    if (g->node[nodes[0]].kind == EG_KIND_OPAQUE || !eg_cost_kern_of(g, &g->node[nodes[0]], &k)) return;
    int cal = eg_cost_cal_of(&k);
    if (cal < 0) return;
    int lnadd = n > 1 && is_layernorm(&g->node[nodes[1]]);
    fprintf(c->trace, "kern %016llx %s %d %d %d %.17g %.17g %lld %lld %lld %lld %lld %.17g %.17g\n",
            (unsigned long long)c->ent[e].hash, cal_names[cal], (int)k.ew, n, lnadd, k.flops, k.bytes,
            (long long)k.kh, (long long)k.kw, (long long)k.group, (long long)k.c, (long long)k.o,
            c->ent[e].us, eg_cost_kern_us(&k, 1));
}

eg_status eg_cost_trace(eg_cost *c, FILE *f) {
    c->trace = f;
    char err[EG_ERRLEN];
    if (!f || c->shadow) return EG_OK;
    return eg_cost_new(EG_COST_ANALYTIC_CPU, NULL, &c->shadow, err, sizeof err);
}

eg_cost *eg_cost_shadow(const eg_cost *c) { return c->trace ? c->shadow : NULL; }

void eg_cost_trace_pair(eg_cost *c, double d, double d_shadow, double before, double before_shadow, uint32_t rule) {
    if (c->trace)
        fprintf(c->trace, "pair %.17g %.17g %.17g %.17g %u\n", d, d_shadow, before, before_shadow, (unsigned)rule);
}

/* Count memo entry e, the time of node j of g (alone: a group's time is
 * its head's, as the graph's costs charge it), in the scale of its
 * kernel class, once: what eg_cost_node_estimate multiplies analytic
 * prices by. An entry equal to its analytic price was estimated, not
 * timed, and says nothing of the scale. */
static void count_scale(eg_cost *c, const eg_graph *g, int j, long e) {
    eg_cost_kern k;
    if (!measuring_kind(c->kind) || e < 0 || c->ent[e].scaled) return;
    c->ent[e].scaled = 1;
    const eg_node *n = &g->node[j];
    if (n->kind == EG_KIND_OPAQUE || !eg_cost_kern_of(g, n, &k)) return;
    int cls = eg_cost_cal_of(&k);
    double a = eg_cost_kern_us(&k, cpu_kind(c->kind)), us = c->ent[e].us;
    if (cls < 0 || !(a > 0) || !(us > 0) || us == a || !isfinite(us)) return;
    if (c->scale_n[cls] == c->scale_cap[cls]) {
        int cap = c->scale_cap[cls] ? 2 * c->scale_cap[cls] : 16;
        struct scale_pt *p = realloc(c->scale[cls], sizeof *p * (size_t)cap);
        if (!p) return; /* the estimate goes on without this kernel */
        c->scale[cls] = p, c->scale_cap[cls] = cap;
    }
    struct scale_pt pt = {log(a), log(us / a)};
    c->scale[cls][c->scale_n[cls]++] = pt;
    c->scale_log += pt.lr, c->scale_all++;
}

/* log(timed / analytic) at analytic price exp(la) in class cls: between
 * the kernels timed nearest below and above it in analytic price,
 * interpolated in la (their mean where several share one price; the
 * nearest one's beyond the ends). @pre scale_n[cls] > 0. */
static double scale_at(const eg_cost *c, int cls, double la) {
    double lo = -INFINITY, hi = INFINITY, sum_lo = 0, sum_hi = 0;
    int n_lo = 0, n_hi = 0;
    for (int i = 0; i < c->scale_n[cls]; i++) {
        const struct scale_pt *p = &c->scale[cls][i];
        if (p->la <= la && p->la >= lo) {
            if (p->la > lo) lo = p->la, sum_lo = 0, n_lo = 0;
            sum_lo += p->lr, n_lo++;
        }
        if (p->la >= la && p->la <= hi) {
            if (p->la < hi) hi = p->la, sum_hi = 0, n_hi = 0;
            sum_hi += p->lr, n_hi++;
        }
    }
    if (!n_lo) return sum_hi / n_hi;
    if (!n_hi) return sum_lo / n_lo;
    double r_lo = sum_lo / n_lo, r_hi = sum_hi / n_hi;
    return hi > lo ? r_lo + (r_hi - r_lo) * (la - lo) / (hi - lo) : r_lo;
}

static double node_cost(eg_cost *c, const eg_graph *g, int node, const graph_ctx *x) {
    int nodes[MAX_GROUP], n = group_of(c, g, x, node, nodes);
    const unsigned char *wo = x ? x->wo : NULL;
    if (!build_key(c, g, nodes, n)) {
        c->misses++;
        return compute(c, g, nodes, n, wo);
    }
    uint64_t h = XXH3_64bits(c->kbuf, c->klen);
    long e = find(c, h, c->kbuf, c->klen);
    if (e >= 0) {
        c->hits++;
        if (c->trace) trace_kernel(c, g, nodes, n, e);
        count_scale(c, g, node, e);
        return c->ent[e].us;
    }
    c->misses++;
    double us = compute(c, g, nodes, n, wo);
    /* compute does not touch the key buffer; a failed insert only loses
     * the memo. */
    if (insert(c, h, c->kbuf, c->klen, us) == EG_OK) e = (long)c->n_ent - 1;
    if (c->trace && e >= 0) trace_kernel(c, g, nodes, n, e);
    count_scale(c, g, node, e);
    return us;
}

double eg_cost_node_estimate(eg_cost *c, const eg_graph *g, int node) {
    const eg_node *n = &g->node[node];
    eg_cost_kern k;
    if (!measuring_kind(c->kind)) return eg_cost_node(c, g, node);
    if (n->kind == EG_KIND_OPAQUE) return eg_cost_opaque_us(g, n);
    if (!eg_cost_kern_of(g, n, &k)) return EG_COST_UNKNOWN_US;
    int cls = eg_cost_cal_of(&k);
    double a = eg_cost_kern_us(&k, cpu_kind(c->kind));
    if (!(a > 0)) return a;
    if (cls >= 0 && c->scale_n[cls]) return a * exp(scale_at(c, cls, log(a)));
    return c->scale_all ? a * exp(c->scale_log / c->scale_all) : a;
}

uint64_t eg_cost_estimate_epoch(const eg_cost *c) { return (uint64_t)c->scale_all; }

double eg_cost_node(eg_cost *c, const eg_graph *g, int node) { return node_cost(c, g, node, NULL); }

/* 1 when node j is a convolution (conv2d without a fused activation, or a
 * model Conv) whose output t has no reader but the one asking. */
static int conv_alone(const eg_graph *g, const int *uses, int t) {
    int p = t >= 0 ? g->tensor[t].producer : -1;
    if (p < 0 || uses[t] != 1 || (g->tensor[t].flags & EG_TF_OUTPUT)) return 0;
    const eg_node *n = &g->node[p];
    return (n->kind == EG_KIND_OPS && n->op == OP_CONV2D && n->param[2] == OPS_ACT_NONE) ||
           (n->kind == EG_KIND_MODEL && n->mop == EG_MOP_CONV);
}

/* 1 when node j runs inside the convolution before it at run time, so it
 * costs nothing: a bias the export writes into the Conv (eg_conv_bias_of),
 * an Add of a per-channel constant bias to a conv's only output
 * (eg_builtin_post folds it into the Conv's bias), and a Relu of
 * such a conv or conv + bias (runtimes fuse conv, bias and activation:
 * onnxruntime's FusedConv on CPU, cuDNN's conv-bias-activation on GPU).
 * Without this, moving a relu off a conv (relu over a concat of convs)
 * would look cheaper while it runs slower. */
static int fused_into_conv(const eg_graph *g, const int *uses, const unsigned char *wo, int j) {
    const eg_node *n = &g->node[j];
    int is_relu = (n->kind == EG_KIND_OPS && n->op == OP_RELU) ||
                  (n->kind == EG_KIND_MODEL && n->mop == EG_MOP_RELU);
    if (eg_conv_bias_of(g, uses, j) >= 0) return 1; /* the export writes one Conv */
    if (n->kind == EG_KIND_MODEL && n->mop == EG_MOP_ADD && n->n_in == 2) {
        for (int k = 0; k < 2; k++) {
            int t = n->in[k], b = n->in[1 - k];
            if (t < 0 || b < 0 || !conv_alone(g, uses, t)) continue;
            int bp = g->tensor[b].producer;
            int64_t numel = eg_shape_numel(&g->tensor[b].shape);
            const eg_shape *ts = &g->tensor[t].shape;
            int constant = (g->tensor[b].flags & EG_TF_INIT) || (bp >= 0 && wo && wo[bp]);
            if (constant && ts->rank == 4 && numel > 0 && numel == ts->dim[1]) return 1;
        }
        return 0;
    }
    if (!is_relu || n->in[0] < 0) return 0;
    int t = n->in[0], p = g->tensor[t].producer;
    if (conv_alone(g, uses, t)) return 1;
    return p >= 0 && uses[t] == 1 && !(g->tensor[t].flags & EG_TF_OUTPUT) &&
           fused_into_conv(g, uses, wo, p) &&
           ((g->node[p].kind == EG_KIND_MODEL && g->node[p].mop == EG_MOP_ADD) ||
            (g->node[p].kind == EG_KIND_OPS && g->node[p].op == OP_BIAS));
}

/* 1 when node j is written inside the one node reading its output, so it
 * costs nothing of its own (the export writes them so, groups.h): a concat read only
 * by a concat along the same axis (one Concat of all the operands), and a
 * scale on the channels by a constant read only by a bias on them (one
 * BatchNormalization pass). */
static int written_inside(const eg_graph *g, const int *uses, const int *reader,
                          const unsigned char *wo, int j) {
    const eg_node *n = &g->node[j];
    int t = n->out[0], r = t >= 0 ? reader[t] : -1;
    if (n->kind != EG_KIND_OPS || r < 0) return 0;
    if (n->op == OP_CONCAT) return g->node[r].in[0] == t ? eg_concat_inside(g, uses, r, 0) : eg_concat_inside(g, uses, r, 1);
    return n->op == OP_SCALE && eg_bn_pair_of(g, uses, wo, r) == j;
}

/* 1 when node j is a bias on the columns of a matmul's only output: one
 * Gemm at run time (the export writes it so), the bias free. */
static int gemm_bias(const eg_graph *g, const int *uses, int j) { return eg_gemm_of(g, uses, j) >= 0; }

/* 1 when node j is a layer norm (with its scale and shift written as one
 * LayerNormalization) whose input is an addition it alone reads: a pair
 * onnxruntime fuses (SkipLayerNormalization when the addends are 3-D and
 * alike), so the ort backend times it with the addition, as one group
 * headed by the addition. */
static int ln_after_add(const eg_graph *g, const int *uses, int j) {
    const eg_node *n = &g->node[j];
    int ln = (n->kind == EG_KIND_OPS && n->op == OP_LAYERNORM) ||
             (n->kind == EG_KIND_MODEL && n->mop == EG_MOP_LAYERNORM);
    int t = ln ? n->in[0] : -1, p = t >= 0 ? g->tensor[t].producer : -1;
    if (p < 0 || uses[t] != 1 || (g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED))) return 0;
    const eg_node *a = &g->node[p];
    return (a->kind == EG_KIND_OPS && a->op == OP_EWADD) ||
           (a->kind == EG_KIND_MODEL && (a->mop == EG_MOP_ADD || a->mop == EG_MOP_SUM) && a->n_in == 2);
}

/* The node reading t when it is t's only reader and t is internal (not a
 * graph output or pinned); else -1. */
static int only_reader(const eg_graph *g, const graph_ctx *x, int t) {
    if (t < 0 || x->uses[t] != 1 || (g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED))) return -1;
    return x->reader[t];
}

static int is_ops(const eg_graph *g, int j, ops_op op) {
    return j >= 0 && g->node[j].kind == EG_KIND_OPS && g->node[j].op == op;
}

/* 1 when scalar tensor t is a constant of value v (or its value is not at
 * hand: a weight-only computation that folds to it). */
static int scalar_is(const eg_graph *g, const graph_ctx *x, int t, float v) {
    if (t < 0) return 0;
    const eg_tensor *s = &g->tensor[t];
    int p = s->producer;
    if (s->data && eg_shape_numel(&s->shape) == 1) return fabsf(s->data[0] - v) <= 1e-6f * fabsf(v);
    return (s->flags & EG_TF_INIT) || (p >= 0 && x->wo && x->wo[p]);
}

/* 1 when node j is the erf, the "+ 1", the "* x" or the "* 0.5" of the
 * exact GELU 0.5 * x * (1 + erf(x / sqrt 2)) as exports write it (Div,
 * Erf, Add, Mul, Mul), each the only reader of the one before: onnxruntime
 * fuses the chain into one Gelu kernel, charged to the division (the ort
 * backend times the five together), so the four run inside it. A rewrite that breaks the chain (the 0.5 moved
 * into the next convolution's weights) then pays for three kernels,
 * which onnxruntime runs, instead of saving one multiply. */
static int in_gelu(const eg_graph *g, const graph_ctx *x, int j) {
    /* from j back to the "+ 1" */
    int m = is_ops(g, j, OP_EWMUL) ? j : -1, a = is_ops(g, j, OP_SADD) ? j : -1;
    if (is_ops(g, j, OP_ERF) && g->node[j].out[0] >= 0) a = only_reader(g, x, g->node[j].out[0]);
    if (is_ops(g, j, OP_SMUL) && g->node[j].in[0] >= 0) m = g->tensor[g->node[j].in[0]].producer;
    for (int k = 0; k < 2 && a < 0 && is_ops(g, m, OP_EWMUL); k++) {
        int t = g->node[m].in[k], p = t >= 0 ? g->tensor[t].producer : -1;
        if (is_ops(g, p, OP_SADD)) a = p;
    }
    if (a < 0 || !scalar_is(g, x, g->node[a].in[1], 1.0f)) return 0;
    /* the whole chain, forward from the division */
    int et = g->node[a].in[0], e = et >= 0 ? g->tensor[et].producer : -1;
    if (!is_ops(g, e, OP_ERF) || only_reader(g, x, et) != a) return 0;
    int dt = g->node[e].in[0], d = dt >= 0 ? g->tensor[dt].producer : -1; /* x / sqrt 2 */
    if (d < 0 || only_reader(g, x, dt) != e) return 0;
    const eg_node *dn = &g->node[d];
    int div = dn->kind == EG_KIND_MODEL && dn->mop == EG_MOP_DIV && dn->n_in == 2;
    if (!div && !is_ops(g, d, OP_SDIV) && !is_ops(g, d, OP_SMUL)) return 0;
    int xin = dn->in[0], at = g->node[a].out[0];
    m = only_reader(g, x, at);
    if (!is_ops(g, m, OP_EWMUL)) return 0;
    const eg_node *mn = &g->node[m];
    if (!((mn->in[0] == at && mn->in[1] == xin) || (mn->in[1] == at && mn->in[0] == xin))) return 0;
    int h = only_reader(g, x, mn->out[0]);
    if (!is_ops(g, h, OP_SMUL) || !scalar_is(g, x, g->node[h].in[1], 0.5f)) return 0;
    return j == e || j == a || j == m || j == h;
}

static int is_matmul(const eg_graph *g, int j) {
    const eg_node *n = j >= 0 ? &g->node[j] : NULL;
    return n && ((n->kind == EG_KIND_OPS && (n->op == OP_MATMUL || n->op == OP_BMM || n->op == OP_LINEAR)) ||
                 (n->kind == EG_KIND_MODEL && n->mop == EG_MOP_MATMUL));
}

/* 1 when node j multiplies (or divides) by a constant scalar that
 * onnxruntime folds into a MatMul as FusedMatMul's alpha: on an input only
 * that MatMul reads (before), or on a MatMul's only output (after: it runs
 * inside the MatMul, and the ort backend times the two together). Without
 * this, moving attention's scales from Q and K behind their product looks
 * like a multiply saved while onnxruntime ran none (GPT-2 0.966x). */
static int matmul_scale(const eg_graph *g, const graph_ctx *x, int j, int before) {
    const eg_node *n = &g->node[j];
    if (n->kind != EG_KIND_OPS || (n->op != OP_SMUL && n->op != OP_SDIV) || n->in[0] < 0 || n->in[1] < 0)
        return 0;
    int s = n->in[1], sp = g->tensor[s].producer;
    if (!((g->tensor[s].flags & EG_TF_INIT) || (sp >= 0 && x->wo && x->wo[sp]))) return 0;
    if (before) return is_matmul(g, only_reader(g, x, n->out[0]));
    int t = n->in[0];
    return is_matmul(g, g->tensor[t].producer) && only_reader(g, x, t) == j;
}

/* 1 when node j runs inside the node before it (the only reader of that
 * one's output), so it costs nothing of its own. */
static int fused_follower(const eg_cost *c, const eg_graph *g, const graph_ctx *x, int j) {
    return fused_into_conv(g, x->uses, x->wo, j) || gemm_bias(g, x->uses, j) || in_gelu(g, x, j) ||
           matmul_scale(g, x, j, 0) ||
           eg_layernorm_of(g, x->uses, j) >= 0 || (c->kind == EG_COST_ORT && ln_after_add(g, x->uses, j));
}

int eg_cost_skipped(const eg_cost *c, const eg_graph *g, const eg_cost_ctx *x, int j) {
    /* weight-only (folded), written inside its reader, or run inside the
     * node before it (charged with that one's group) */
    return (x->wo && x->wo[j]) || written_inside(g, x->uses, x->reader, x->wo, j) ||
           matmul_scale(g, x, j, 1) || fused_follower(c, g, x, j);
}

double eg_cost_node_in(eg_cost *c, const eg_graph *g, const eg_cost_ctx *x, int j) {
    /* An analytic cost is a function of the node alone: computed here it
     * needs no key, which is most of what charging a node costs (a search
     * judgment charges a few each time), and it is the value the memo holds
     * for that key, unless a cache file filled the memo. */
    int analytic = c->kind == EG_COST_ANALYTIC || c->kind == EG_COST_ANALYTIC_CPU;
    if (analytic && !c->loaded) return compute(c, g, &j, 1, NULL);
    return node_cost(c, g, j, x);
}

double eg_cost_graph_nodes(eg_cost *c, const eg_graph *g, const double *known, double *out) {
    unsigned char *wo = malloc(g->n_nodes ? (size_t)g->n_nodes : 1);
    int *uses = malloc(sizeof *uses * (size_t)(g->n_tensors ? g->n_tensors : 1));
    int *reader = malloc(sizeof *reader * (size_t)(g->n_tensors ? g->n_tensors : 1));
    double sum = 0;
    if (!wo || !uses || !reader) { /* no context: every node alone, none skipped */
        for (int j = 0; j < g->n_nodes; j++) {
            double us = node_cost(c, g, j, NULL);
            if (out) out[j] = us;
            sum += us;
        }
        free(wo), free(uses), free(reader);
        return sum;
    }
    eg_mark_weight_only(g, wo);
    eg_count_uses(g, uses);
    eg_last_readers(g, reader);
    graph_ctx x = {uses, reader, wo};
    /* A node's own cost is its key's alone, except for an ort group head,
     * whose group can change when a rewrite changes its followers: known
     * costs are reused only where a group is one node. */
    if (c->kind == EG_COST_ORT) known = NULL;
    for (int j = 0; j < g->n_nodes; j++) {
        int o = g->node[j].origin;
        double us = known && o > 0 ? known[o - 1] : -1;
        int skip = eg_cost_skipped(c, g, &x, j);
        if (!skip && us < 0) us = node_cost(c, g, j, &x);
        if (out) out[j] = us; /* -1: not costed (skipped, not known) */
        if (!skip) sum += us;
    }
    free(wo), free(uses), free(reader);
    return sum;
}

double eg_cost_graph(eg_cost *c, const eg_graph *g) {
    return eg_cost_graph_nodes(c, g, NULL, NULL);
}

eg_cost_kind eg_cost_kind_of(const eg_cost *c) { return c->kind; }

int eg_cost_second_opinion(eg_cost_kind k) {
    switch (k) {
    case EG_COST_ORT:
    case EG_COST_CPU: return EG_COST_ANALYTIC_CPU;
    case EG_COST_CUDA: return EG_COST_ANALYTIC;
    case EG_COST_ANALYTIC:
    case EG_COST_ANALYTIC_CPU:
    case EG_COST_KIND_COUNT: break;
    }
    return -1;
}

double eg_cost_noise(const eg_cost *c) {
    switch (c->kind) {
    case EG_COST_ANALYTIC:
    case EG_COST_ANALYTIC_CPU: return 0;
    case EG_COST_CPU: /* medians of the same kernel move by a few percent run to run */
    case EG_COST_CUDA:
    case EG_COST_ORT: return 0.02;
    case EG_COST_KIND_COUNT: break;
    }
    return 0;
}

void eg_cost_stats(const eg_cost *c, uint64_t *hits, uint64_t *misses) {
    if (hits) *hits = c->hits;
    if (misses) *misses = c->misses;
}

size_t eg_cost_size(const eg_cost *c) { return c->n_ent; }

uint64_t eg_cost_fallbacks(const eg_cost *c) { return c->fallbacks; }

uint64_t eg_cost_measured(const eg_cost *c) { return c->measured; }

double eg_cost_seconds(const eg_cost *c) { return c->seconds; }

size_t eg_cost_loaded(const eg_cost *c) { return c->loaded; }

/* ================= cache file ================= */

#define MAGIC "eg-cost-cache 1"
#define LINE_MAX_LEN (2 * EG_COST_MAX_KEY + 64)

static int hexval(int ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

/* Parse "HEXKEY US" (no newline) into key and *us.
 * @return NULL, or what is wrong with the line. */
static const char *parse_record(const char *s, uint8_t *key, size_t *len, double *us) {
    const char *sp = strchr(s, ' ');
    if (!sp) return "expected 'HEXKEY MICROSECONDS'";
    size_t nh = (size_t)(sp - s);
    if (nh == 0 || nh % 2 || nh / 2 > EG_COST_MAX_KEY) return "bad key length";
    for (size_t i = 0; i < nh; i += 2) {
        int hi = hexval((unsigned char)s[i]), lo = hexval((unsigned char)s[i + 1]);
        if (hi < 0 || lo < 0) return "key is not lowercase hex";
        key[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    *len = nh / 2;
    const char *num = sp + 1;
    char *end;
    errno = 0;
    if (*num == '\0' || *num == ' ' || *num == '\t') return "missing time";
    *us = strtod(num, &end);
    if (errno || *end != '\0' || !isfinite(*us) || *us < 0) return "bad time";
    return NULL;
}

int eg_cost_load_stream(eg_cost *c, FILE *f, const char *name, char *err, size_t errlen) {
    eg_status rc = EG_OK;
    char *line = malloc(LINE_MAX_LEN + 2), head[sizeof MAGIC + 160];
    uint8_t *key = malloc(EG_COST_MAX_KEY);
    const char *why = NULL;
    long ln = 0;
    snprintf(head, sizeof head, "%s %s %s", MAGIC, kind_names[c->kind], c->machine);
    if (!line || !key) {
        rc = EG_ENOMEM;
        snprintf(err, errlen, "%s: out of memory", name);
        goto cleanup;
    }
    while (fgets(line, LINE_MAX_LEN + 2, f)) {
        size_t n = strlen(line);
        double us = 0;
        size_t klen = 0;
        ln++;
        if (n == 0 || line[n - 1] != '\n') {
            why = n > LINE_MAX_LEN ? "line too long" : "truncated line (no newline, or a NUL byte)";
            break;
        }
        line[n - 1] = '\0';
        if (ln == 1) {
            if (strncmp(line, MAGIC " ", sizeof MAGIC) != 0)
                why = "not a cost cache (expected '" MAGIC " BACKEND MACHINE')";
            else if (strcmp(line, head) != 0)
                why = "made by another backend or machine";
            if (why) break;
            continue;
        }
        if ((why = parse_record(line, key, &klen, &us))) break;
        uint64_t h = XXH3_64bits(key, klen);
        if (find(c, h, key, klen) >= 0) continue; /* a duplicate: the first wins */
        if ((rc = insert(c, h, key, klen, us)) != EG_OK) {
            snprintf(err, errlen, "%s:%ld: %s", name, ln, eg_status_name(rc));
            goto cleanup;
        }
    }
    if (!why && ferror(f)) {
        rc = EG_EIO;
        snprintf(err, errlen, "%s: read error", name);
    } else if (!why && ln == 0) {
        why = "empty file (no header line)";
    }
    if (why) {
        rc = EG_EFORMAT;
        snprintf(err, errlen, "%s:%ld: %s", name, ln, why);
        if (ln == 1 && strncmp(line, MAGIC " ", sizeof MAGIC) == 0) {
            size_t used = strlen(err);
            snprintf(err + used, errlen > used ? errlen - used : 0,
                     " (this model expects '%s'; measured times do not transfer)", head);
        }
    }
cleanup:
    free(line);
    free(key);
    return (int)rc;
}

static eg_status load(eg_cost *c, char *err, size_t errlen) {
    FILE *f = fopen(c->path, "r");
    if (!f) {
        if (errno == ENOENT) return EG_OK;
        snprintf(err, errlen, "%s: cannot read: %s", c->path, strerror(errno));
        return EG_EIO;
    }
    eg_status rc = (eg_status)eg_cost_load_stream(c, f, c->path, err, errlen);
    fclose(f);
    return rc;
}

eg_status eg_cost_save(eg_cost *c, char *err, size_t errlen) {
    if (!c->path) return EG_OK;
    af_file a;
    int bad = af_open(&a, c->path) != 0;
    if (!bad) {
        bad |= fprintf(a.f, "%s %s %s\n", MAGIC, kind_names[c->kind], c->machine) < 0;
        for (size_t e = 0; e < c->n_ent && !bad; e++) {
            const struct entry *x = &c->ent[e];
            for (size_t i = 0; i < x->len; i++) bad |= fprintf(a.f, "%02x", x->key[i]) < 0;
            bad |= fprintf(a.f, " %.17g\n", x->us) < 0;
        }
        if (bad) af_abort(&a);
        else bad = af_commit(&a) != 0;
    }
    if (bad) return eg_errf(err, errlen, EG_EIO, "%s: cannot write: %s", c->path, strerror(errno ? errno : EIO));
    return EG_OK;
}

/* ================= life cycle ================= */

/* Keep the machine id on one line without leading/trailing blanks. */
static void clean_machine(char *m) {
    for (char *p = m; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
    size_t n = strlen(m);
    while (n && m[n - 1] == ' ') m[--n] = '\0';
    if (!n) snprintf(m, 8, "unknown");
}

eg_status eg_cost_new(eg_cost_kind kind, const char *cache_path, eg_cost **out, char *err,
                      size_t errlen) {
    return eg_cost_new_threads(kind, cache_path, 1, out, err, errlen);
}

eg_status eg_cost_new_threads(eg_cost_kind kind, const char *cache_path, int threads, eg_cost **out,
                              char *err, size_t errlen) {
    eg_status rc = EG_OK;
    eg_cost *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c || (cache_path && !(c->path = strdup(cache_path)))) {
        rc = EG_ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }
    c->kind = kind;
    switch (kind) {
    case EG_COST_ANALYTIC:
    case EG_COST_ANALYTIC_CPU: snprintf(c->machine, sizeof c->machine, "any"); break;
    case EG_COST_CPU:
        eg_cost_cpu_machine(c->machine, sizeof c->machine);
        if (eg_cost_cpu_new(&c->cpu, err, errlen) != 0) rc = EG_EUNSUPPORTED;
        break;
    case EG_COST_CUDA:
        if (eg_cost_cuda_new(&c->cuda, c->machine, sizeof c->machine, err, errlen) != 0)
            rc = EG_EUNSUPPORTED;
        break;
    case EG_COST_ORT:
        if (eg_cost_ort_new(threads, &c->ort, c->machine, sizeof c->machine, err, errlen) != 0)
            rc = EG_EUNSUPPORTED;
        break;
    case EG_COST_KIND_COUNT:
        snprintf(err, errlen, "unknown cost backend %d", (int)kind);
        rc = EG_EUNSUPPORTED;
        break;
    }
    if (rc != EG_OK) goto cleanup;
    clean_machine(c->machine);
    if (c->path) rc = load(c, err, errlen);
    c->loaded = c->n_ent;
cleanup:
    if (rc != EG_OK) {
        eg_cost_free(c);
        return rc;
    }
    *out = c;
    return EG_OK;
}

eg_status eg_cost_attach_cache(eg_cost *c, const char *path, char *err, size_t errlen) {
    char *p = strdup(path);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return EG_ENOMEM;
    }
    free(c->path);
    c->path = p;
    eg_status rc = load(c, err, errlen);
    c->loaded = c->n_ent;
    return rc;
}

const char *eg_cost_machine(const eg_cost *c) { return c->machine; }

/* mkdir -p of the directory part of path (mode 0700: the user's own).
 * @return 0, or -1 with errno set. */
static int make_parents(char *path) {
    for (char *s = path + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        int bad = mkdir(path, 0700) != 0 && errno != EEXIST;
        *s = '/';
        if (bad) return -1;
    }
    return 0;
}

int eg_cost_default_path(const eg_cost *c, char *buf, size_t len) {
    const char *dir = getenv("TASOC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    char name[96];
    snprintf(name, sizeof name, "costs-%s-%016llx.txt", kind_names[c->kind],
             (unsigned long long)XXH3_64bits(c->machine, strlen(c->machine)));
    if (dir && *dir) n = snprintf(buf, len, "%s/%s", dir, name);
    else if (xdg && *xdg == '/') n = snprintf(buf, len, "%s/tasoc/%s", xdg, name);
    else if (home && *home == '/') n = snprintf(buf, len, "%s/.cache/tasoc/%s", home, name);
    else return -1;
    if (n < 0 || (size_t)n >= len) return -1;
    return make_parents(buf);
}

const char *eg_cost_deterministic_conflict(int cost_named, eg_cost_kind kind, int verify, int cache_named) {
    if (cost_named && kind != EG_COST_ANALYTIC && kind != EG_COST_ANALYTIC_CPU) return "its cost is analytic-cpu or analytic";
    if (verify) return "verify measures";
    if (cache_named) return "it keeps no cost cache";
    return NULL;
}

eg_status eg_cost_open(const eg_cost_open_opts *o, eg_cost **out, eg_cost_open_info *info, char *err,
                       size_t errlen) {
    int threads = o->threads > 0 ? o->threads : 1;
    memset(info, 0, sizeof *info);
    info->kind = o->pick ? EG_COST_ORT : o->kind;
    eg_status rc = eg_cost_new_threads(info->kind, NULL, threads, out, err, errlen);
    if (rc == EG_EUNSUPPORTED && o->pick) {
        snprintf(info->warning, sizeof info->warning, "%s; costs come from the analytic-cpu roofline and the "
                 "result is not verified in onnxruntime", err);
        info->kind = EG_COST_ANALYTIC_CPU, info->fell_back = 1;
        rc = eg_cost_new_threads(info->kind, NULL, 1, out, err, errlen);
    }
    if (rc != EG_OK) return rc;
    int measures = info->kind == EG_COST_CPU || info->kind == EG_COST_CUDA || info->kind == EG_COST_ORT;
    info->cache = o->cache;
    if (!info->cache && measures && o->default_cache) {
        if (eg_cost_default_path(*out, info->cache_buf, sizeof info->cache_buf) != 0) {
            snprintf(info->warning, sizeof info->warning, "no per-user cost cache (no $HOME, or its cache "
                     "directory cannot be made): every kernel is measured anew");
            return EG_OK;
        }
        info->cache = info->cache_buf;
    }
    if (!info->cache) return EG_OK;
    rc = eg_cost_attach_cache(*out, info->cache, err, errlen);
    if (rc != EG_OK && !o->cache && rc != EG_ENOMEM) {
        snprintf(info->warning, sizeof info->warning, "%s (the cost cache is rewritten at the end)", err);
        rc = EG_OK;
    }
    if (rc != EG_OK) eg_cost_free(*out), *out = NULL;
    return rc;
}

eg_status eg_cost_fork(const eg_cost *c, eg_cost **out) {
    *out = NULL;
    if (c->kind != EG_COST_ANALYTIC && c->kind != EG_COST_ANALYTIC_CPU) return EG_EUNSUPPORTED;
    eg_cost *f = calloc(1, sizeof *f);
    if (!f) return EG_ENOMEM;
    f->kind = c->kind, f->loaded = c->loaded; /* loaded: it answers from the memo as c does */
    memcpy(f->machine, c->machine, sizeof f->machine);
    for (size_t e = 0; e < c->n_ent; e++)
        if (insert(f, c->ent[e].hash, c->ent[e].key, c->ent[e].len, c->ent[e].us) != EG_OK) {
            eg_cost_free(f);
            return EG_ENOMEM;
        }
    *out = f;
    return EG_OK;
}

void eg_cost_join_stats(eg_cost *c, const eg_cost *fork) {
    c->hits += fork->hits;
    c->misses += fork->misses;
}

void eg_cost_free(eg_cost *c) {
    if (!c) return;
    for (size_t e = 0; e < c->n_ent; e++) free(c->ent[e].key);
    free(c->ent);
    free(c->slot);
    free(c->kbuf);
    free(c->path);
    if (c->cpu) eg_cost_cpu_free(c->cpu);
    if (c->cuda) eg_cost_cuda_free(c->cuda);
    eg_cost_ort_free(c->ort);
    eg_cost_free(c->shadow);
    for (int i = 0; i < EG_CAL_COUNT; i++) free(c->scale[i]);
    free(c);
}
