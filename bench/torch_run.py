#!/usr/bin/env python3
"""bench/torch_run.py - an ONNX model run end to end with torch, to time a
graph on a GPU where onnxruntime has no GPU provider (bench/gpu.sh).

    python3 bench/torch_run.py MODEL.onnx [OPT.onnx] [--device cuda|cpu]
                               [--runs N] [--warmup N] [--seed N]

Prints one JSON line:
    {"model", "device", "ms", "graph_ms", "max_rel_err_vs_ort",
     ["opt_ms", "opt_graph_ms", "speedup", "graph_speedup", "aa"]}
or, when torch or the device is missing, {"model", "device", "skipped": WHY}
(exit 0: a missing device is a finding, not a failure).

How it runs: a small interpreter walks the graph in its topological order
and calls the torch function of each node (the operators of bench/models.py
and of what `engine optimize` writes; any other operator stops the run with
its name). Its outputs are checked against onnxruntime on the CPU
(max_rel_err_vs_ort, norm-wise as bench/ort_compare.py): a number timed by
a wrong interpreter would mean nothing. TF32 is off, so the GPU computes in
float32 as the cost backend's kernels and onnxruntime do.

How it times: ms is the median wall time of one eager run (torch
synchronised after it), launch overhead included; graph_ms the median of a
CUDA graph replay of the same run (the kernels alone, closer to a sum of
per-kernel costs); both over --runs alternating rounds, the optimized
model's (OPT) interleaved with the input's and with a second copy of the
input (aa: the A/A ratio, what "no difference" looks like in this run).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_compare import max_rel_err, random_inputs, session  # noqa: E402


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def conv_pads(a, rank):
    pads = list(a.get("pads", [0] * (2 * rank)))
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID"):
        raise NotImplementedError("auto_pad " + a["auto_pad"].decode())
    return pads


class Interp:
    """The graph's nodes as a list of closures over a torch value table."""

    def __init__(self, model, torch, device):
        self.t = torch
        self.dev = device
        self.g = model.graph
        # integer constants (shapes, axes, sizes) stay on the host: reading
        # them (.tolist()) then needs no device sync, which a CUDA graph
        # capture would refuse
        self.consts = {}
        for i in self.g.initializer:
            v = torch.from_numpy(numpy_helper.to_array(i).copy())
            self.consts[i.name] = v if not v.is_floating_point() else v.to(device)
        self.ops = {name[3:]: getattr(self, name) for name in dir(self) if name.startswith("op_")}
        for n in self.g.node:
            if n.op_type not in self.ops or n.domain not in ("", "ai.onnx"):
                raise NotImplementedError(f"operator {n.domain or 'ai.onnx'}.{n.op_type}")

    def run(self, feeds):
        env = dict(self.consts)
        env.update(feeds)
        for n in self.g.node:
            ins = [env[x] if x else None for x in n.input]
            outs = self.ops[n.op_type](ins, attrs(n))
            if not isinstance(outs, (list, tuple)):
                outs = [outs]
            for name, v in zip(n.output, outs):
                if name:
                    env[name] = v
        return [env[o.name] for o in self.g.output]

    # ---- operators (ONNX semantics for the attribute values used) ----
    def op_Identity(self, x, a): return x[0]
    def op_Dropout(self, x, a): return x[0]
    def op_Relu(self, x, a): return self.t.relu(x[0])
    def op_Sigmoid(self, x, a): return self.t.sigmoid(x[0])
    def op_Tanh(self, x, a): return self.t.tanh(x[0])
    def op_Erf(self, x, a): return self.t.erf(x[0])
    def op_Sqrt(self, x, a): return self.t.sqrt(x[0])
    def op_Exp(self, x, a): return self.t.exp(x[0])
    def op_Neg(self, x, a): return -x[0]
    def op_IsNaN(self, x, a): return self.t.isnan(x[0])
    def op_Add(self, x, a): return x[0] + x[1]
    def op_Sub(self, x, a): return x[0] - x[1]
    def op_Mul(self, x, a): return x[0] * x[1]
    def op_Div(self, x, a): return x[0] / x[1]
    def op_Pow(self, x, a): return self.t.pow(x[0], x[1])
    def op_MatMul(self, x, a): return self.t.matmul(x[0], x[1])
    def op_Where(self, x, a): return self.t.where(x[0], x[1], x[2])
    def op_Sum(self, x, a): return sum(x[1:], x[0])
    def op_Shape(self, x, a):
        return self.t.tensor(list(x[0].shape), dtype=self.t.int64, device=self.dev)
    def op_Cast(self, x, a):
        types = {1: self.t.float32, 6: self.t.int32, 7: self.t.int64, 9: self.t.bool,
                 11: self.t.float64}
        return x[0].to(types[a["to"]])

    def op_Clip(self, x, a):
        lo = x[1] if len(x) > 1 and x[1] is not None else a.get("min")
        hi = x[2] if len(x) > 2 and x[2] is not None else a.get("max")
        return self.t.clamp(x[0], min=lo, max=hi)

    def op_HardSigmoid(self, x, a):
        return self.t.clamp(x[0] * a.get("alpha", 0.2) + a.get("beta", 0.5), 0, 1)

    def op_HardSwish(self, x, a): return self.t.nn.functional.hardswish(x[0])

    def op_Conv(self, x, a):
        w = x[1]
        rank = w.dim() - 2
        pads = conv_pads(a, rank)
        begin, end = pads[:rank], pads[rank:]
        inp = x[0]
        if begin != end:  # torch pads symmetrically: pad by hand
            flat = []
            for i in reversed(range(rank)):
                flat += [begin[i], end[i]]
            inp = self.t.nn.functional.pad(inp, flat)
            begin = [0] * rank
        f = [None, self.t.nn.functional.conv1d, self.t.nn.functional.conv2d,
             self.t.nn.functional.conv3d][rank]
        return f(inp, w, x[2] if len(x) > 2 else None, stride=a.get("strides", [1] * rank),
                 padding=begin, dilation=a.get("dilations", [1] * rank), groups=a.get("group", 1))

    def pool(self, x, a, kind):
        k = a["kernel_shape"]
        rank = len(k)
        pads = conv_pads(a, rank)
        begin, end = pads[:rank], pads[rank:]
        s = a.get("strides", [1] * rank)
        ceil = bool(a.get("ceil_mode", 0))
        F = self.t.nn.functional
        flat = []
        for i in reversed(range(rank)):
            flat += [begin[i], end[i]]
        if kind == "max":
            inp = F.pad(x[0], flat, value=-math.inf) if any(pads) else x[0]
            return F.max_pool2d(inp, k, s, 0, ceil_mode=ceil)
        # average: the sum over the window (pad cells are zeros) divided by
        # the cells counted: all of them (count_include_pad) or the real ones
        inp = F.pad(x[0], flat) if any(pads) else x[0]
        total = F.avg_pool2d(inp, k, s, 0, ceil_mode=ceil, count_include_pad=True)
        if a.get("count_include_pad", 0) or not any(pads):
            return total
        ones = self.t.ones((1, 1) + tuple(x[0].shape[2:]), dtype=x[0].dtype, device=x[0].device)
        real = F.avg_pool2d(F.pad(ones, flat), k, s, 0, ceil_mode=ceil, count_include_pad=True)
        return total / real

    def op_MaxPool(self, x, a): return self.pool(x, a, "max")
    def op_AveragePool(self, x, a): return self.pool(x, a, "avg")

    def op_GlobalAveragePool(self, x, a):
        return x[0].mean(dim=tuple(range(2, x[0].dim())), keepdim=True)

    def op_BatchNormalization(self, x, a):
        return self.t.nn.functional.batch_norm(x[0], x[3], x[4], x[1], x[2], False, 0.0,
                                               a.get("epsilon", 1e-5))

    def op_Gemm(self, x, a):
        A = x[0].t() if a.get("transA", 0) else x[0]
        B = x[1].t() if a.get("transB", 0) else x[1]
        y = a.get("alpha", 1.0) * (A @ B)
        if len(x) > 2 and x[2] is not None:
            y = y + a.get("beta", 1.0) * x[2]
        return y

    def op_Flatten(self, x, a):
        ax = a.get("axis", 1) % max(x[0].dim(), 1) if a.get("axis", 1) < 0 else a.get("axis", 1)
        return x[0].reshape(int(np.prod(x[0].shape[:ax])), -1)

    def op_Reshape(self, x, a):
        shape = [int(v) for v in x[1].tolist()]
        shape = [x[0].shape[i] if v == 0 and not a.get("allowzero", 0) else v
                 for i, v in enumerate(shape)]
        return x[0].reshape(shape)

    def op_Transpose(self, x, a):
        return x[0].permute(a.get("perm", list(reversed(range(x[0].dim())))))

    def op_Concat(self, x, a): return self.t.cat(x, dim=a["axis"])

    def op_Split(self, x, a):
        ax = a.get("axis", 0)
        sizes = x[1].tolist() if len(x) > 1 and x[1] is not None else a.get("split")
        if sizes is None:
            n = a["num_outputs"] if "num_outputs" in a else None
            if n is None:
                raise NotImplementedError("Split without sizes or num_outputs")
            sizes = [x[0].shape[ax] // n] * n
        return self.t.split(x[0], [int(s) for s in sizes], dim=ax)

    def op_Slice(self, x, a):
        y = x[0]
        starts, ends = x[1].tolist(), x[2].tolist()
        axes = x[3].tolist() if len(x) > 3 and x[3] is not None else list(range(len(starts)))
        steps = x[4].tolist() if len(x) > 4 and x[4] is not None else [1] * len(starts)
        idx = [slice(None)] * y.dim()
        for s, e, ax, st in zip(starts, ends, axes, steps):
            if st != 1:
                raise NotImplementedError("Slice with a step")
            n = y.shape[ax]
            s = max(0, min(n, s + n if s < 0 else s))
            e = max(0, min(n, e + n if e < 0 else e))
            idx[ax] = slice(s, e)
        return y[tuple(idx)]

    def op_Softmax(self, x, a): return self.t.softmax(x[0], dim=a.get("axis", -1))

    def op_LayerNormalization(self, x, a):
        ax = a.get("axis", -1) % x[0].dim()
        shape = x[0].shape[ax:]
        return self.t.nn.functional.layer_norm(x[0], shape, x[1],
                                               x[2] if len(x) > 2 else None,
                                               a.get("epsilon", 1e-5))

    def op_ReduceMean(self, x, a):
        axes = a.get("axes") or (x[1].tolist() if len(x) > 1 and x[1] is not None else None)
        keep = bool(a.get("keepdims", 1))
        return x[0].mean(dim=tuple(axes), keepdim=keep) if axes else x[0].mean()

    def op_Unsqueeze(self, x, a):
        y = x[0]
        axes = a.get("axes") or x[1].tolist()
        for ax in sorted(v % (y.dim() + len(axes)) for v in axes):
            y = y.unsqueeze(ax)
        return y

    def op_Squeeze(self, x, a):
        axes = a.get("axes") or (x[1].tolist() if len(x) > 1 else None)
        if not axes:
            return x[0].squeeze()
        return x[0].squeeze(tuple(v % x[0].dim() for v in axes))

    def op_Gather(self, x, a):
        ax = a.get("axis", 0) % x[0].dim()
        idx = x[1].to(x[0].device)
        idx = self.t.where(idx < 0, idx + x[0].shape[ax], idx)
        y = self.t.index_select(x[0], ax, idx.reshape(-1))
        return y.reshape(list(x[0].shape[:ax]) + list(x[1].shape) + list(x[0].shape[ax + 1:]))

    def op_Constant(self, x, a):
        v = self.t.from_numpy(numpy_helper.to_array(a["value"]).copy())
        return v.to(self.dev) if v.is_floating_point() else v


def load_torch(device, cudnn_search=True):
    """@return (torch, None) or (None, why). cudnn_search: convolutions use
    the fastest cuDNN algorithm found by trying them (cudnn.benchmark), as
    onnxruntime's CUDA provider does by default and as --cost cuda measures;
    without it, cuDNN's heuristic pick."""
    try:
        import torch
    except ImportError:
        return None, "no torch"
    if device == "cuda" and not torch.cuda.is_available():
        return None, "no device"
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = cudnn_search
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch, None


def timer(torch, device, interp, feeds):
    """Two callables: one eager run, and one CUDA graph replay (None on the
    CPU or when capture fails); each returns its wall time in ms."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def eager():
        sync()
        t0 = time.perf_counter()
        with torch.no_grad():
            interp.run(feeds)
        sync()
        return (time.perf_counter() - t0) * 1e3

    if device != "cuda":
        return eager, None
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(2):
                interp.run(feeds)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.no_grad():
            interp.run(feeds)
    except Exception as e:  # capture refuses host syncs (.tolist of a device shape)
        print(f"torch_run: no CUDA graph: {str(e).splitlines()[0][:120]}", file=sys.stderr)
        return eager, None

    def replay():
        sync()
        t0 = time.perf_counter()
        graph.replay()
        sync()
        return (time.perf_counter() - t0) * 1e3

    return eager, replay


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("opt", nargs="?")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--runs", type=int, default=30, help="alternating rounds (default 30)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name")
    ap.add_argument("--cudnn-heuristic", action="store_true",
                    help="cuDNN's heuristic algorithm pick instead of the fastest found by trying")
    a = ap.parse_args()
    rec = {"model": a.name or os.path.basename(a.model), "device": a.device}
    torch, why = load_torch(a.device, not a.cudnn_heuristic)
    if torch is None:
        rec["skipped"] = why
        print(json.dumps(rec))
        return 0
    if a.device == "cuda":
        rec["gpu"] = torch.cuda.get_device_name(0)
    paths = [a.model] + ([a.opt] if a.opt else [])
    sess = session(a.model, 1)
    feeds_np = random_inputs(sess, a.seed)
    feeds = {k: torch.from_numpy(v).to(a.device) for k, v in feeds_np.items()}
    interps = [Interp(onnx.load(p), torch, a.device) for p in paths]
    with torch.no_grad():
        got = [[v.cpu().numpy() for v in it.run(feeds)] for it in interps]
    rec["max_rel_err_vs_ort"] = max_rel_err(sess.run(None, feeds_np), got[0])
    if a.opt:
        rec["opt_max_rel_err_vs_input"] = max_rel_err(got[0], got[1])
    # the input twice (A/A), then the optimized model, alternating
    timers = [timer(torch, a.device, it, feeds) for it in [interps[0]] + interps]
    times = [([], []) for _ in timers]
    for _ in range(a.warmup):
        for eager, _replay in timers:
            eager()
    for _ in range(a.runs):
        for (eager, replay), (te, tg) in zip(timers, times):
            te.append(eager())
            if replay:
                tg.append(replay())
    med = [(statistics.median(te), statistics.median(tg) if tg else None) for te, tg in times]
    rec["ms"], rec["graph_ms"] = med[0]
    rec["aa"] = med[0][0] / med[1][0]
    if a.opt:
        rec["opt_ms"], rec["opt_graph_ms"] = med[2]
        rec["speedup"] = med[0][0] / med[2][0]
        if med[0][1] and med[2][1]:
            rec["graph_speedup"] = med[0][1] / med[2][1]
    print(json.dumps(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
