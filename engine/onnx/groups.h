/* groups.h - the nodes the export writes as one ONNX node (prefix eg_):
 * written once here, read by the export (out_ops.c plans its nodes with
 * them) and by the cost model (cost.c charges such a group as one kernel,
 * the way the runtime meets it). uses: eg_count_uses of g.
 */
#ifndef EG_GROUPS_H
#define EG_GROUPS_H

#include "ir/graph.h"

/* The layernorm node j belongs to, when j is the scale that alone reads a
 * layernorm's output on its axis, or the bias that alone reads such a
 * scale's: the export writes the chain as one LayerNormalization and the
 * cost model charges it as one (uses: eg_count_uses of g).
 * @return the layernorm's node id, or -1. */
int eg_layernorm_of(const eg_graph *g, const int *uses, int j);

/* The matmul bias node j joins as one Gemm: j a bias on axis 1 of a rank-2
 * value that only a matmul writes and only j reads (not a graph output,
 * not pinned, not j's own bias), from opset 7 on (Gemm's broadcast C).
 * @return the matmul's node id, or -1. */
int eg_gemm_of(const eg_graph *g, const int *uses, int j);

/* The conv bias node j joins as one Conv (its bias input B): j a bias on
 * axis 1 of the output of a conv2d without a fused activation, that only
 * j reads (not a graph output, not j's own bias). @return the conv's node
 * id, or -1. */
int eg_conv_bias_of(const eg_graph *g, const int *uses, int j);

/* 1 when input k of concat node o is written by a concat along the same
 * axis that only o reads (not a graph output, not pinned): the export
 * writes the two as one Concat of all the operands. */
int eg_concat_inside(const eg_graph *g, const int *uses, int o, int k);

/* The scale bias node j pairs with as one BatchNormalization (mean 0,
 * variance 1): j a bias on axis 1 of a value that only a scale on axis 1
 * writes and only j reads, both by constant vectors of the channel count
 * (float initializers, or with wo, eg_mark_weight_only's flags, values
 * the built-ins will fold), from opset 9 on. @return the scale's node id,
 * or -1. */
int eg_bn_pair_of(const eg_graph *g, const int *uses, const unsigned char *wo, int j);

#endif
