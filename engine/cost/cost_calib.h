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
#include "cost/cost_impl.h"

#define EG_COST_CALIB_MACHINE "AMD EPYC, onnxruntime 1.32.0, 1 thread"

static const eg_cost_calib eg_cost_calib_table[] = {
    [EG_CAL_CONV1] = {1.29679, 9.28501e-06, 1.81791e-05},
    [EG_CAL_CONV] = {1.29679, 9.6833e-06, 0},
    [EG_CAL_DWCONV] = {1.29679, 7.77154e-06, 5.34925e-05},
    [EG_CAL_GCONV] = {1.29679, 1.00018e-15, 0.000241114},
    [EG_CAL_GEMM] = {1.29679, 1.06477e-05, 8.64333e-06},
    [EG_CAL_POOL] = {1.29679, 1.80447e-05, 3.72955e-05},
    [EG_CAL_EW] = {1.29679, 0.000115117, 3.97148e-06},
    [EG_CAL_EWMATH] = {1.29679, 6.84846e-05, 1.9801e-05},
    [EG_CAL_BNORM] = {1.29679, 0.000115117, 3.97148e-06},
    [EG_CAL_ROWS] = {1.29679, 0.000114847, 0},
    [EG_CAL_GAP] = {1.29679, 0.000172205, 1.45645e-05},
    [EG_CAL_MOVE] = {1.29679, 0, 1.40341e-05},
    [EG_CAL_TRANS] = {1.29679, 0, 2.66727e-05},
    [EG_CAL_TRANSN] = {1.29679, 0, 0.00040769},
    [EG_CAL_VIEW] = {1.29679, 0, 8.25662e-06},
};
_Static_assert(sizeof eg_cost_calib_table / sizeof eg_cost_calib_table[0] == EG_CAL_COUNT,
               "eg_cost_calib_table");

#endif
