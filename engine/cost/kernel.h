/* kernel.h - private to cost/: a node as a kernel and its analytic price
 * (kernel.c), for cost.c. Apart from cost_impl.h, which the CUDA backend
 * (C++) reads without the graph types. */
#ifndef EG_COST_KERNEL_H
#define EG_COST_KERNEL_H

#include "cost/cost_impl.h"
#include "ir/graph.h"

/* Node n of g as a kernel: its class, shapes, flops and bytes.
 * @return 1, or 0 for a node no kernel describes. */
int eg_cost_kern_of(const eg_graph *g, const eg_node *n, eg_cost_kern *k);

/* The analytic price of k in microseconds: analytic-cpu's calibrated table
 * (cpu 1) or the GPU-like roofline (cpu 0). */
double eg_cost_kern_us(const eg_cost_kern *k, int cpu);

/* An opaque node's price: its bytes moved at memory speed. */
double eg_cost_opaque_us(const eg_graph *g, const eg_node *n);

#endif
