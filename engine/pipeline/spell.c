/* spell.c - spellings chosen by cost (search.h, eg_spell): a node that
 * ONNX can write two exact ways, which a runtime's own graph fusions treat
 * differently, is written the way the cost model rates cheaper.
 *
 * One choice today: an addition read only by a layer norm is written as
 * Add (onnxruntime fuses the pair into SkipLayerNormalization when the
 * addends are 3-D and alike) or as a two-input Sum (the same sum, which no
 * fusion matches, so Add-free LayerNormalization runs). Which is faster is
 * a fact about the runtime's kernels, not about the graph: on onnxruntime
 * 1.32 on this project's CPUs the fused kernel is seven times slower than
 * the pair (bench/results/peers.md). So the choice is the cost model's:
 * the ort backend times each spelling as one group (cost.c); the analytic
 * and cpu ones rate both alike and nothing changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"

/* 1 when node j is an addition of two same-shape tensors whose only
 * reader is a layer norm. */
static int residual_add(const eg_graph *g, const int *uses, const int *reader, int j) {
    const eg_node *n = &g->node[j];
    if (n->kind != EG_KIND_OPS || n->op != OP_EWADD || n->n_out != 1) return 0;
    int t = n->out[0], r = t >= 0 ? reader[t] : -1;
    if (r < 0 || uses[t] != 1 || (g->tensor[t].flags & (EG_TF_OUTPUT | EG_TF_PINNED))) return 0;
    const eg_node *m = &g->node[r];
    return m->in[0] == t && ((m->kind == EG_KIND_OPS && m->op == OP_LAYERNORM) ||
                             (m->kind == EG_KIND_MODEL && m->mop == EG_MOP_LAYERNORM));
}

/* Spell node j (an ewadd) as a two-input Sum, or back. */
static void as_sum(eg_node *n, int sum) {
    if (sum) {
        n->kind = EG_KIND_MODEL, n->mop = EG_MOP_SUM;
        memset(&n->attr, 0, sizeof n->attr);
    } else {
        n->kind = EG_KIND_OPS, n->op = OP_EWADD;
    }
}

eg_status eg_spell(eg_graph *g, eg_cost *c, int *n_spelled, char *err, size_t errlen) {
    size_t nn = (size_t)(g->n_nodes ? g->n_nodes : 1), nt = (size_t)(g->n_tensors ? g->n_tensors : 1);
    double *before = malloc(sizeof *before * nn), *after = malloc(sizeof *after * nn);
    int *uses = malloc(sizeof *uses * nt), *reader = malloc(sizeof *reader * nt);
    eg_status rc = EG_OK;
    if (!before || !after || !uses || !reader) {
        snprintf(err, errlen, "spell: out of memory");
        rc = EG_ENOMEM;
        goto cleanup;
    }
    eg_count_uses(g, uses);
    eg_last_readers(g, reader);
    eg_cost_graph_nodes(c, g, NULL, before);
    double keep = 1 - eg_cost_noise(c);
    for (int j = 0; j < g->n_nodes; j++) {
        if (!residual_add(g, uses, reader, j) || before[j] < 0) continue;
        as_sum(&g->node[j], 1);
        eg_cost_graph_nodes(c, g, NULL, after);
        if (after[j] >= 0 && after[j] < before[j] * keep) {
            memcpy(before, after, sizeof *before * (size_t)g->n_nodes);
            if (n_spelled) (*n_spelled)++;
        } else {
            as_sum(&g->node[j], 0);
        }
    }
cleanup:
    free(before), free(after), free(uses), free(reader);
    return rc;
}
