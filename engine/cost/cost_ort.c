/* cost_ort.c - the onnxruntime cost backend (cost.h, `--cost ort`): a node,
 * or a group onnxruntime fuses, is written as a small ONNX model and timed
 * by the helper engine/cost/ort_cost.py, one long-lived process the engine
 * talks to over a socket (why a process: see verify.h).
 *
 * The small model: the group's nodes, their outside inputs as graph inputs
 * (activations) or initializers (weights: the graph's own values, or
 * generated ones for a weight a rewrite computes, so onnxruntime prepacks
 * them as it does in the real model), the last node's outputs as graph
 * outputs; unknown dims are 1; the model and graph shells are the input
 * model's, so its opset and IR version. eg_save_mem writes it exactly as
 * the optimized model's nodes will be written. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cost/cost_impl.h"
#include "sys/sys.h"
#include "onnx/engine.h"

/* The helper's source, NUL-terminated (.incbin, as ruledb_blob.c). */
extern const char eg_ort_cost_py[];
__asm__(".section .rodata\n"
        ".globl eg_ort_cost_py\n"
        "eg_ort_cost_py:\n"
        ".incbin \"engine/cost/ort_cost.py\"\n"
        ".byte 0\n"
        ".previous\n");

/* A safety net, not a decision: a helper that answers nothing for this
 * long is stopped and the remaining kernels are estimated. Starting it
 * imports onnxruntime, which takes seconds on a loaded machine. */
#define START_TIMEOUT_MS 120000
#define TIME_TIMEOUT_MS 120000
#define MAX_SUB_TENSORS 64

struct eg_cost_ort {
    pid_t pid;
    int fd;          /* our end of the socket; -1 once the helper is gone */
    char line[512];  /* the last reply line */
    char buf[512];   /* bytes read past it */
    size_t buf_len;
};

/* Read one line into o->line within timeout_ms. @return 0, or -1 (the
 * helper closed, timed out or sent a line too long). */
static int read_line(eg_cost_ort *o, int timeout_ms) {
    for (;;) {
        char *nl = memchr(o->buf, '\n', o->buf_len);
        if (nl) {
            size_t n = (size_t)(nl - o->buf);
            memcpy(o->line, o->buf, n);
            o->line[n] = 0;
            o->buf_len -= n + 1;
            memmove(o->buf, nl + 1, o->buf_len);
            return 0;
        }
        if (o->buf_len == sizeof o->buf) return -1;
        struct pollfd p = {o->fd, POLLIN, 0};
        int r = poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        ssize_t k = read(o->fd, o->buf + o->buf_len, sizeof o->buf - o->buf_len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        o->buf_len += (size_t)k;
    }
}

/* MSG_NOSIGNAL: a helper that died gives an error here, not a SIGPIPE
 * that would kill the engine. @return 0 or -1. */
static int send_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k, n -= (size_t)k;
    }
    return 0;
}

/* Stop the helper (end of input, then a kill if it does not go). */
static void stop(eg_cost_ort *o) {
    if (o->fd >= 0) close(o->fd);
    o->fd = -1;
    if (o->pid > 0) {
        int st;
        for (int i = 0; i < 50; i++) { /* up to half a second to leave by itself */
            pid_t r = waitpid(o->pid, &st, WNOHANG);
            if (r == o->pid || (r < 0 && errno != EINTR)) {
                o->pid = 0;
                return;
            }
            nanosleep(&(struct timespec){0, 10000000}, NULL);
        }
        kill(o->pid, SIGKILL);
        while (waitpid(o->pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
    o->pid = 0;
}

int eg_cost_ort_new(int threads, eg_cost_ort **out, char *machine, size_t mlen, char *err,
                    size_t errlen) {
    *out = NULL;
    const char *python = eg_python();
    eg_cost_ort *o = calloc(1, sizeof *o);
    int sv[2];
    if (!o) return snprintf(err, errlen, "out of memory"), -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        free(o);
        return snprintf(err, errlen, "cost ort: socketpair: %s", strerror(errno)), -1;
    }
    char targ[16];
    snprintf(targ, sizeof targ, "%d", threads > 0 ? threads : 1);
    char *argv[] = {(char *)python, "-c", (char *)eg_ort_cost_py, "--threads", targ, NULL};
    if (eg_spawn(argv, sv[1], sv[1], -1, &o->pid) != 0) {
        close(sv[0]), close(sv[1]), free(o);
        return snprintf(err, errlen, "cost ort: fork: %s", strerror(errno)), -1;
    }
    close(sv[1]);
    o->fd = sv[0];
    int rc = read_line(o, START_TIMEOUT_MS);
    if (rc == 0 && strncmp(o->line, "ready ", 6) == 0) {
        char cpu[128];
        snprintf(machine, mlen, "onnxruntime %s, %d thread%s, %s", o->line + 6,
                 threads > 0 ? threads : 1, threads > 1 ? "s" : "",
                 eg_cost_cpu_machine(cpu, sizeof cpu));
        *out = o;
        return 0;
    }
    if (rc == 0 && strncmp(o->line, "err ", 4) == 0)
        snprintf(err, errlen, "cost ort: %s", o->line + 4);
    else
        snprintf(err, errlen, "cost ort: %s did not start the onnxruntime helper (set "
                 "TASOC_PYTHON to a Python 3 with onnxruntime)", python);
    stop(o);
    free(o);
    return -1;
}

void eg_cost_ort_free(eg_cost_ort *o) {
    if (!o) return;
    stop(o);
    free(o);
}

/* ================= the small model ================= */

/* Deterministic stand-in values for a weight a rewrite computes (its value
 * exists only after folding): small, varied, never all zero. */
static float *made_weight(int64_t numel) {
    float *d = malloc(sizeof *d * (size_t)(numel > 0 ? numel : 1));
    uint32_t x = 2463534242u;
    for (int64_t i = 0; d && i < numel; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        d[i] = (float)((double)(x >> 8) / (double)(1u << 24) - 0.5) * 0.1f;
    }
    return d;
}

/* Copy tensor t of g into s as a new tensor (id in *id): name, dtype,
 * shape with unknown dims 1, and its role: an initializer borrowing g's
 * value, an initializer with made values (a computed weight), else a
 * graph input. @return EG_OK, EG_ENOMEM, EG_EUNSUPPORTED. */
static eg_status sub_tensor(eg_graph *s, const eg_graph *g, int t, const unsigned char *wo,
                            int as_input, int *id) {
    const eg_tensor *x = &g->tensor[t];
    eg_status rc = eg_add_tensor(s, x->name, id);
    if (rc != EG_OK) return rc;
    eg_tensor *y = &s->tensor[*id];
    y->dtype = x->dtype;
    y->shape = x->shape;
    if (y->shape.rank < 0) return EG_EUNSUPPORTED;
    for (int i = 0; i < y->shape.rank; i++)
        if (y->shape.dim[i] < 0) y->shape.dim[i] = 1;
    if (!as_input) return EG_OK;
    int p = x->producer;
    if ((x->flags & EG_TF_INIT) && (x->data || x->raw || x->proto)) {
        y->flags = EG_TF_INIT | EG_TF_BORROWED | (x->flags & EG_TF_CONST);
        y->data = x->data, y->raw = x->raw, y->raw_len = x->raw_len;
        y->proto = x->proto, y->proto_len = x->proto_len;
    } else if (p >= 0 && wo && wo[p] && x->dtype == EG_DT_FLOAT) {
        y->flags = EG_TF_INIT;
        y->data = made_weight(eg_shape_numel(&y->shape));
        if (!y->data) return EG_ENOMEM;
    } else {
        y->flags = EG_TF_INPUT;
        s->input[s->n_inputs++] = *id;
    }
    return EG_OK;
}

/* Map g's tensor t into s through the pairs (from[], to[]), adding it
 * when new. @return EG_OK, or an error from sub_tensor / EG_ELIMIT. */
static eg_status map_tensor(eg_graph *s, const eg_graph *g, int t, const unsigned char *wo, int *from,
                            int *to, int *n_map, int as_input, int *id) {
    for (int i = 0; i < *n_map; i++)
        if (from[i] == t) return *id = to[i], EG_OK;
    if (*n_map == MAX_SUB_TENSORS) return EG_ELIMIT;
    eg_status rc = sub_tensor(s, g, t, wo, as_input, id);
    if (rc == EG_OK) from[*n_map] = t, to[(*n_map)++] = *id;
    return rc;
}

/* The ONNX bytes of the model of g's nodes[0..n) (see the header).
 * @pre nodes in topological order, each after the first reading the
 *      previous one's output; none opaque. */
static eg_status sub_model(const eg_graph *g, const int *nodes, int n, const unsigned char *wo,
                           uint8_t **buf, size_t *len, char *err, size_t errlen) {
    eg_graph *s = eg_graph_new();
    int from[MAX_SUB_TENSORS], to[MAX_SUB_TENSORS], n_map = 0;
    eg_status rc = s ? EG_OK : EG_ENOMEM;
    if (rc == EG_OK) {
        s->ir_version = g->ir_version, s->opset = g->opset;
        s->model_shell = g->model_shell, s->model_shell_len = g->model_shell_len;
        s->graph_shell = g->graph_shell, s->graph_shell_len = g->graph_shell_len;
        s->shells_borrowed = 1;
        s->input = malloc(sizeof(int) * MAX_SUB_TENSORS);
        s->output = malloc(sizeof(int) * MAX_SUB_TENSORS);
        if (!s->input || !s->output) rc = EG_ENOMEM;
    }
    for (int j = 0; j < n && rc == EG_OK; j++) {
        const eg_node *x = &g->node[nodes[j]];
        int id;
        rc = eg_add_node(s, x->kind, x->name, x->n_in, 0, x->n_out, &id);
        if (rc != EG_OK) break;
        eg_node *y = &s->node[id];
        y->op = x->op, y->mop = x->mop, y->attr = x->attr;
        memcpy(y->param, x->param, sizeof y->param);
        for (int k = 0; k < x->n_in && rc == EG_OK; k++)
            if (x->in[k] >= 0) rc = map_tensor(s, g, x->in[k], wo, from, to, &n_map, 1, &y->in[k]);
        for (int k = 0; k < x->n_out && rc == EG_OK; k++)
            if (x->out[k] >= 0) rc = map_tensor(s, g, x->out[k], wo, from, to, &n_map, 0, &y->out[k]);
    }
    if (rc == EG_OK) {
        const eg_node *last = &s->node[s->n_nodes - 1];
        for (int k = 0; k < last->n_out; k++)
            if (last->out[k] >= 0) {
                s->tensor[last->out[k]].flags |= EG_TF_OUTPUT;
                s->output[s->n_outputs++] = last->out[k];
            }
        rc = eg_index(s, err, errlen);
    }
    if (rc == EG_OK) rc = eg_save_mem(s, buf, len, err, errlen);
    eg_free(s);
    return rc;
}

double eg_cost_ort_time(eg_cost_ort *o, const struct eg_graph *g, const int *nodes, int n,
                        const unsigned char *wo) {
    if (!o || o->fd < 0) return -1;
    uint8_t *buf = NULL;
    size_t len = 0;
    char err[EG_ERRLEN];
    if (sub_model(g, nodes, n, wo, &buf, &len, err, sizeof err) != EG_OK) return -1;
    char head[64];
    int hl = snprintf(head, sizeof head, "time %zu\n", len);
    double us = -1;
    if (send_all(o->fd, head, (size_t)hl) != 0 || send_all(o->fd, buf, len) != 0 ||
        read_line(o, TIME_TIMEOUT_MS) != 0) {
        stop(o); /* gone or stuck: estimate the rest */
    } else if (strncmp(o->line, "us ", 3) == 0) {
        char *end;
        us = strtod(o->line + 3, &end);
        if (end == o->line + 3 || !isfinite(us) || us < 0) us = -1;
    }
    free(buf);
    return us;
}
