/* cost_calib.h - analytic-cpu's constants per kernel class, fitted by
 * bench/calibrate.py fit to kernels measured in onnxruntime (GENERATED:
 * rerun it to recalibrate; do not edit by hand).
 *
 * Machine: AMD EPYC, onnxruntime 1.32.0, 1 thread.
 * Fitted 2026-11-27 on 5150 kernels from 39 models
 * (the bench set and bench/unseen.py). us = launch_us + flops * us_per_flop
 * + bytes * us_per_byte, one launch_us for all; a class with under 3
 * kernels is priced as ew (the cheap element-wise ops). Kernels per class:
 * conv1 582, conv 903, dwconv 87, gconv 14, gemm 166, pool 68, ew 977, ewmath 202, bnorm 1, rows 5, gap 6, move 622, trans 701, transn 146, view 670.
 * Included by cost.c only. */
#ifndef EG_COST_CALIB_H
#define EG_COST_CALIB_H
#include "cost_impl.h"

#define EG_COST_CALIB_MACHINE "AMD EPYC, onnxruntime 1.32.0, 1 thread"

static const eg_cost_calib eg_cost_calib_table[] = {
    [EG_CAL_CONV1] = {1.14784, 9.27806e-06, 1.53001e-05},
    [EG_CAL_CONV] = {1.14784, 8.84843e-06, 0},
    [EG_CAL_DWCONV] = {1.14784, 9.42364e-06, 4.14635e-05},
    [EG_CAL_GCONV] = {1.14784, 1.07394e-06, 0.000167654},
    [EG_CAL_GEMM] = {1.14784, 9.3633e-06, 8.74452e-06},
    [EG_CAL_POOL] = {1.14784, 1.61303e-05, 3.7081e-05},
    [EG_CAL_EW] = {1.14784, 7.01004e-06, 1.3109e-05},
    [EG_CAL_EWMATH] = {1.14784, 5.48663e-05, 2.12583e-05},
    [EG_CAL_BNORM] = {1.14784, 7.01004e-06, 1.3109e-05},
    [EG_CAL_ROWS] = {1.14784, 0.000115112, 0},
    [EG_CAL_GAP] = {1.14784, 0.000185982, 0},
    [EG_CAL_MOVE] = {1.14784, 0, 1.32137e-05},
    [EG_CAL_TRANS] = {1.14784, 0, 1.86156e-05},
    [EG_CAL_TRANSN] = {1.14784, 0, 7.72606e-05},
    [EG_CAL_VIEW] = {1.14784, 0, 7.78995e-06},
};
_Static_assert(sizeof eg_cost_calib_table / sizeof eg_cost_calib_table[0] == EG_CAL_COUNT,
               "eg_cost_calib_table");

#endif
