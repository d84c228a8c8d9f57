/* cost_calib.h - analytic-cpu's constants per kernel class, fitted by
 * bench/calibrate.py fit to kernels measured in onnxruntime (GENERATED:
 * rerun it to recalibrate; do not edit by hand).
 *
 * Machine: AMD EPYC, onnxruntime 1.32.0, 1 thread.
 * Fitted 2026-11-27 on 5107 kernels from 39 models
 * (the bench set and bench/unseen.py). us = launch_us + flops * us_per_flop
 * + bytes * us_per_byte; a class with too few kernels keeps the roofline
 * (launch 1 us, 50 GFLOP/s, 10 GB/s, summed). Kernels per class:
 * conv1 582, conv 897, dwconv 87, gconv 14, gemm 166, pool 68, ew 940, ewmath 203, bnorm 1, rows 5, gap 6, move 622, trans 846, view 670.
 * Included by cost.c only. */
#ifndef EG_COST_CALIB_H
#define EG_COST_CALIB_H
#include "cost_impl.h"

#define EG_COST_CALIB_MACHINE "AMD EPYC, onnxruntime 1.32.0, 1 thread"

static const eg_cost_calib eg_cost_calib_table[] = {
    [EG_CAL_CONV1] = {2.13764, 9.44349e-06, 1.04497e-05},
    [EG_CAL_CONV] = {1.54342, 8.79823e-06, 0},
    [EG_CAL_DWCONV] = {2.13435, 1.02938e-05, 3.65676e-05},
    [EG_CAL_GCONV] = {32.1861, 0, 0.000167654},
    [EG_CAL_GEMM] = {1.43706, 9.24759e-06, 8.55408e-06},
    [EG_CAL_POOL] = {2.40992, 1.68282e-05, 3.45907e-05},
    [EG_CAL_EW] = {1.10267, 3.57178e-06, 1.34845e-05},
    [EG_CAL_EWMATH] = {1.03318, 5.63679e-05, 2.11659e-05},
    [EG_CAL_BNORM] = {1, 2e-05, 0.0001},
    [EG_CAL_ROWS] = {1.06053, 0.000115321, 0},
    [EG_CAL_GAP] = {1.59509, 0.000165045, 0},
    [EG_CAL_MOVE] = {1.3912, 0, 1.28433e-05},
    [EG_CAL_TRANS] = {1.07999, 0, 1.95293e-05},
    [EG_CAL_VIEW] = {1.21501, 0, 7.69062e-06},
};
_Static_assert(sizeof eg_cost_calib_table / sizeof eg_cost_calib_table[0] == EG_CAL_COUNT,
               "eg_cost_calib_table");

#endif
