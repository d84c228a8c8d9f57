/* kernel1.h - rules that hold for 1x1 convolution kernels only (prefix k1_).
 *
 * A rule carries no shapes: the engine applies it wherever both sides are
 * well shaped. avgpool(conv(x, w)) = conv(avgpool(x), w) holds when w is a
 * 1x1 kernel (a pointwise conv mixes channels cell by cell) and not for a
 * 3x3 one, so as it stands stage 2 of decide.h refutes it at other shapes
 * and Z3 cannot prove it. Written with (enlarge 1x1 w) for w -- well shaped
 * only when w is 1x1, and then w itself -- it is a rule, and the axioms
 * about pointwise convs are stated that way (avgpool-conv1x1,
 * conv1x1-same-valid). So a pair that was not proved as it stands, from a
 * class where input xi is a 1x1 kernel that a convolution reads as its
 * weight, is decided again with every reading of xi replaced by
 * (enlarge 1x1 xi) on both sides (prove's run.c). The engine reads
 * (enlarge 1x1 xi) in a rule as "xi, which must be a 1x1 kernel"
 * (engine/rules.c), so such rules match the kernels models have. */
#ifndef KERNEL1_H
#define KERNEL1_H

#include <stdint.h>

#include "ruledb.h"

/* The inputs of class c to guard, as a bit mask (bit i: xi): rank 4 with
 * 1x1 spatial dims at the class shapes, read as a conv2d weight by a
 * member. 0 when there are none. */
uint32_t k1_inputs(const rdb_class *c);

/* g with each input of mask it reads replaced by one (enlarge 1x1 xi)
 * node, placed first. @pre g valid. @return 1 when something was wrapped,
 * 0 when g reads none of mask (out = g), -1 when the nodes would not fit
 * RG_MAX_NODES. */
int k1_wrap(const rg_graph *g, uint32_t mask, rg_graph *out);

#endif
