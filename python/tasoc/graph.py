"""graph.py - TASO's graph interface over the engine: load_onnx, optimize,
export_onnx, and the graph builder (new_graph).

A Graph is a handle on the engine's graph (libtasoc.so). A graph built
op by op is written as an ONNX model with the `onnx` package and imported
by the engine's own loader when it is first optimized, costed or
exported, so the engine sees it as it sees any model file.
"""
from __future__ import annotations

import ctypes
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from . import _lib
from ._lib import TasocError

ModelLike = Union[str, "os.PathLike[str]", bytes, onnx.ModelProto]
OPSET = 17  # what the builder writes; onnxruntime runs it
IR_VERSION = 8

_ACTS = {"NONE": None, "RELU": "Relu", "SIGMOID": "Sigmoid", "TANH": "Tanh"}
_PADS = ("SAME", "VALID")
COSTS = ("analytic-cpu", "analytic", "cpu", "cuda", "ort")


@dataclass(frozen=True)
class AppliedRule:
    """A rule on the path to the optimized graph."""
    id: int
    times: int
    text: str  # "SRC => DST", with any 1x1 guard


@dataclass(frozen=True)
class OptimizeResult:
    """What optimize did: the costs (microseconds, under the cost model
    used), why the search stopped ("saturated", "iterations", "e-node
    limit", "budget" or "time limit"), the rules applied and the built-in
    rewrites' counts."""
    cost_before: float
    cost_after: float
    seconds: float
    stop: str
    expanded: int
    generated: int
    kept_input: bool
    rules_dropped: bool
    rules_applied: List[AppliedRule]
    builtins: Dict[str, int] = field(default_factory=dict)
    cost_model: str = "analytic-cpu"
    verified: bool = False          # verify timed the candidates in onnxruntime
    verify_pick: Optional[str] = None   # "input", "search result", "runner-up K", "second opinion", "built-ins alone"
    verify_speedup: float = 1.0     # the returned graph's measured speedup over the input
    verify_seconds: float = 0.0
    warning: Optional[str] = None   # e.g. no onnxruntime: analytic costs, unverified

    @property
    def speedup(self) -> float:
        return self.cost_before / self.cost_after if self.cost_after > 0 else 1.0

    def __str__(self) -> str:
        lines = [f"cost before: {self.cost_before:.1f} us", f"cost after: {self.cost_after:.1f} us",
                 f"search time: {self.seconds:.2f} s (stopped: {self.stop}; expanded "
                 f"{self.expanded}, generated {self.generated})",
                 f"rules applied: {sum(r.times for r in self.rules_applied)}"
                 + (" (result not cheaper: the input is kept)" if self.kept_input else "")]
        lines += [f"  {r.times}x rule {r.id}: {r.text}" for r in self.rules_applied]
        if self.verified:
            lines.append(f"verify: kept the {self.verify_pick} ({self.verify_speedup:.3f}x measured, "
                         f"{self.verify_seconds:.2f} s)")
        return "\n".join(lines)


class Tensor:
    """A tensor of a graph being built: what builder methods take and
    return. dims are known once the builder can infer them."""

    def __init__(self, graph: "Graph", name: str) -> None:
        self.graph = graph
        self.name = name

    @property
    def dims(self) -> Tuple[int, ...]:
        return self.graph._dims(self.name)

    def dim(self, i: int) -> int:
        """The size of axis i (TASO's Tensor.dim)."""
        return self.dims[i]

    def nDim(self) -> int:  # noqa: N802 - TASO's name
        return len(self.dims)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r})"


class Graph:
    """A computation graph: built op by op (new_graph), loaded from ONNX
    (load_onnx) or the result of optimize (then `result` says what the
    search did)."""

    def __init__(self, _handle: Optional[int] = None) -> None:
        self._handle = _handle          # tasoc_graph *, or None until built
        self._nodes: List[onnx.NodeProto] = []
        self._inputs: List[onnx.ValueInfoProto] = []
        self._inits: List[onnx.TensorProto] = []
        self._shapes: Dict[str, Tuple[int, ...]] = {}
        self._n = 0
        self._rng = np.random.default_rng(0)
        self.result: Optional[OptimizeResult] = None

    def __del__(self) -> None:
        h, self._handle = getattr(self, "_handle", None), None
        if h and _lib._lib is not None:
            _lib._lib.tasoc_graph_free(h)

    # ---- the engine's graph ----

    def _built(self) -> bool:
        return bool(self._nodes or self._inputs or self._inits)

    def _engine(self) -> int:
        """The engine's handle; a graph being built is imported now."""
        if self._handle is None:
            if not self._built():
                raise TasocError("the graph is empty: add inputs and operators first", "bad graph")
            self._handle = _load_bytes(self.to_model().SerializeToString(), "<new_graph>")
        return self._handle

    def cost(self, cost: str = "analytic-cpu") -> float:
        """The graph's cost in microseconds under the cost model
        ("analytic-cpu", "analytic", "cpu", "cuda" or "ort"), as optimize
        measures it."""
        _check_choice("cost", cost, COSTS)
        us, err = ctypes.c_double(), _lib.err_buf()
        _lib.check(_lib.lib().tasoc_graph_cost(self._engine(), cost.encode(), ctypes.byref(us),
                                               err, _lib.ERRLEN), err)
        return us.value

    def num_nodes(self) -> int:
        """Nodes in the engine's graph (after its import rewrites)."""
        n = [ctypes.c_int() for _ in range(4)]
        _lib.lib().tasoc_graph_counts(self._engine(), *[ctypes.byref(x) for x in n])
        return n[0].value

    # ---- the builder ----

    def _edit(self) -> None:
        if self._handle is not None:
            raise TasocError("a loaded or optimized graph cannot be extended: build a new one",
                             "unsupported feature")

    def _name(self, kind: str) -> str:
        self._n += 1
        return f"{kind}{self._n}"

    def _dims(self, name: str) -> Tuple[int, ...]:
        if name not in self._shapes:
            try:
                inferred = onnx.shape_inference.infer_shapes(self.to_model(outputs=[]),
                                                             strict_mode=True)
            except Exception as e:  # onnx's InferenceError and its kin
                raise ValueError(f"the graph's shapes do not fit: {e}") from None
            for vi in list(inferred.graph.value_info) + list(inferred.graph.input):
                d = vi.type.tensor_type.shape.dim
                self._shapes[vi.name] = tuple(x.dim_value for x in d)
            for t in self._inits:
                self._shapes[t.name] = tuple(t.dims)
        if name not in self._shapes:
            raise TasocError(f"the shape of '{name}' is unknown", "shape mismatch")
        return self._shapes[name]

    def _dims_or_none(self, name: str) -> Optional[List[int]]:
        """The dims when they can be inferred; else None, and the engine's
        import then says what does not fit."""
        try:
            return list(self._dims(name))
        except (ValueError, TasocError):
            return None

    def _op(self, op_type: str, inputs: Sequence[Union[Tensor, str]], n_out: int = 1,
            **attrs: Any) -> List[Tensor]:
        self._edit()
        names = []
        for t in inputs:
            if isinstance(t, Tensor):
                if t.graph is not self:
                    raise ValueError(f"{op_type}: tensor {t.name} belongs to another graph")
                names.append(t.name)
            else:
                names.append(t)
        outs = [self._name(op_type.lower()) for _ in range(n_out)]
        self._nodes.append(helper.make_node(op_type, names, outs, name=self._name("n_"), **attrs))
        return [Tensor(self, o) for o in outs]

    def _act(self, t: Tensor, activation: str) -> Tensor:
        _check_choice("activation", activation, tuple(_ACTS))
        op = _ACTS[activation]
        return self._op(op, [t])[0] if op else t

    def new_input(self, dims: Sequence[int], name: Optional[str] = None) -> Tensor:
        """A float32 graph input of shape dims."""
        self._edit()
        dims = _dims_arg("dims", dims)
        name = name or self._name("input")
        self._inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims)))
        self._shapes[name] = dims
        return Tensor(self, name)

    def new_weight(self, dims: Sequence[int], data: Optional[Any] = None,
                   name: Optional[str] = None) -> Tensor:
        """A float32 weight (an initializer) of shape dims: data, or random
        values (uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)], seeded per
        graph) when data is None."""
        self._edit()
        dims = _dims_arg("dims", dims)
        if data is None:
            fan_in = max(1, int(np.prod(dims[1:])) if len(dims) > 1 else dims[0])
            bound = 1.0 / np.sqrt(fan_in)
            arr = self._rng.uniform(-bound, bound, size=dims).astype(np.float32)
        else:
            arr = np.asarray(data, dtype=np.float32)
            if arr.size != int(np.prod(dims)):
                raise ValueError(f"new_weight: data has {arr.size} values, dims {dims} want "
                                 f"{int(np.prod(dims))}")
            arr = arr.reshape(dims)
        name = name or self._name("weight")
        self._inits.append(numpy_helper.from_array(arr, name))
        self._shapes[name] = dims
        return Tensor(self, name)

    def conv2d(self, input: Tensor, weight: Tensor, strides: Sequence[int] = (1, 1),
               padding: str = "SAME", activation: str = "NONE") -> Tensor:
        """2-D convolution (NCHW input, OIHW weight; groups from the channel
        counts), padding "SAME" (TensorFlow's: the output is ceil(in /
        stride)) or "VALID", then the activation."""
        _check_choice("padding", padding, _PADS)
        _check_choice("activation", activation, tuple(_ACTS))
        x, w = input.dims, weight.dims
        if len(x) != 4 or len(w) != 4:
            raise ValueError(f"conv2d: input {x} and weight {w} must be 4-D")
        if w[1] <= 0 or x[1] % w[1]:
            raise ValueError(f"conv2d: input channels {x[1]} not a multiple of weight's {w[1]}")
        s = _pair("strides", strides)
        pads = _pads(x[2:], w[2:], s, padding)
        out = self._op("Conv", [input, weight], kernel_shape=list(w[2:]), strides=list(s),
                       pads=pads, group=x[1] // w[1])[0]
        return self._act(out, activation)

    def _pool(self, op: str, input: Tensor, kernels: Sequence[int], strides: Sequence[int],
              padding: str, activation: str, **attrs: Any) -> Tensor:
        _check_choice("padding", padding, _PADS)
        _check_choice("activation", activation, tuple(_ACTS))
        k, s = _pair("kernels", kernels), _pair("strides", strides)
        x = input.dims
        if len(x) != 4:
            raise ValueError(f"{op}: input {x} must be 4-D")
        out = self._op(op, [input], kernel_shape=list(k), strides=list(s),
                       pads=_pads(x[2:], k, s, padding), **attrs)[0]
        return self._act(out, activation)

    def maxpool2d(self, input: Tensor, kernels: Sequence[int], strides: Sequence[int],
                  padding: str = "SAME", activation: str = "NONE") -> Tensor:
        """Max pool over H and W."""
        return self._pool("MaxPool", input, kernels, strides, padding, activation)

    def avgpool2d(self, input: Tensor, kernels: Sequence[int], strides: Sequence[int],
                  padding: str = "SAME", activation: str = "NONE") -> Tensor:
        """Average pool over H and W; the padding counts in the divisor
        (TASO's semantics)."""
        return self._pool("AveragePool", input, kernels, strides, padding, activation,
                          count_include_pad=1)

    def matmul(self, input: Tensor, weight: Tensor, activation: str = "NONE") -> Tensor:
        """Matrix product (numpy's matmul rules), then the activation."""
        return self._act(self._op("MatMul", [input, weight])[0], activation)

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        """Element-wise sum (numpy broadcasting)."""
        return self._op("Add", [x, y])[0]

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        """Element-wise product (numpy broadcasting)."""
        return self._op("Mul", [x, y])[0]

    def relu(self, input: Tensor) -> Tensor:
        return self._op("Relu", [input])[0]

    def sigmoid(self, input: Tensor) -> Tensor:
        return self._op("Sigmoid", [input])[0]

    def tanh(self, input: Tensor) -> Tensor:
        return self._op("Tanh", [input])[0]

    def concat(self, axis: int, inputs: Sequence[Tensor]) -> Tensor:
        """Concatenation of inputs along axis."""
        if not inputs:
            raise ValueError("concat: no inputs")
        return self._op("Concat", list(inputs), axis=_int("axis", axis))[0]

    def split(self, input: Tensor, axis: int, sizes: Union[int, Sequence[int]]) -> List[Tensor]:
        """Split along axis into pieces of the given sizes, or into `sizes`
        equal pieces when it is an int."""
        axis = _int("axis", axis)
        n = input.dims[axis]
        if isinstance(sizes, int):
            if sizes <= 0 or n % sizes:
                raise ValueError(f"split: {n} is not divisible into {sizes} parts")
            sizes = [n // sizes] * sizes
        sizes = [_int("sizes", s) for s in sizes]
        if sum(sizes) != n or any(s <= 0 for s in sizes):
            raise ValueError(f"split: sizes {sizes} do not add up to axis {axis}'s {n}")
        name = self._name("split_sizes")
        self._inits.append(numpy_helper.from_array(np.array(sizes, dtype=np.int64), name))
        return self._op("Split", [input, name], n_out=len(sizes), axis=axis)

    def transpose(self, input: Tensor, perm: Sequence[int], shuffle: bool = False) -> Tensor:
        """Permute the axes (shuffle is TASO's layout hint, ignored)."""
        return self._op("Transpose", [input], perm=[_int("perm", p) for p in perm])[0]

    def reshape(self, input: Tensor, shape: Sequence[int]) -> Tensor:
        """Reshape to shape (ONNX rules: 0 copies, -1 infers a dim)."""
        name = self._name("shape")
        self._inits.append(numpy_helper.from_array(
            np.array([_int("shape", d) for d in shape], dtype=np.int64), name))
        return self._op("Reshape", [input, name])[0]

    def batchnorm(self, input: Tensor, scale: Tensor, bias: Tensor, mean: Tensor,
                  var: Tensor, epsilon: float = 1e-5) -> Tensor:
        """Inference batch normalization over axis 1."""
        return self._op("BatchNormalization", [input, scale, bias, mean, var],
                        epsilon=float(epsilon))[0]

    def to_model(self, outputs: Optional[List[str]] = None) -> onnx.ModelProto:
        """The graph being built as an ONNX model; its outputs are the
        tensors no operator reads (or `outputs`)."""
        if outputs is None:
            read = {i for n in self._nodes for i in n.input}
            outputs = [o for n in self._nodes for o in n.output if o not in read]
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, self._dims_or_none(o))
                for o in outputs]
        g = helper.make_graph(self._nodes, "tasoc_graph", self._inputs, outs, self._inits)
        m = helper.make_model(g, producer_name="tasoc",
                              opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = IR_VERSION
        return m


# ---- helpers ----

def _check_choice(what: str, v: Any, choices: Sequence[str]) -> None:
    if not isinstance(v, str) or v not in choices:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, choices))}, not {v!r}")


def _int(what: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{what} must be an integer, not {v!r}")
    return int(v)


def _dims_arg(what: str, dims: Sequence[int]) -> Tuple[int, ...]:
    if isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
        raise ValueError(f"{what} must be a sequence of positive integers, not {dims!r}")
    out = tuple(_int(what, d) for d in dims)
    if any(d <= 0 for d in out):
        raise ValueError(f"{what} must be positive, not {out}")
    return out


def _pair(what: str, v: Sequence[int]) -> Tuple[int, int]:
    t = _dims_arg(what, v)
    if len(t) != 2:
        raise ValueError(f"{what} must have two values (H, W), not {t}")
    return t  # type: ignore[return-value]


def _pads(hw: Sequence[int], k: Sequence[int], s: Sequence[int], padding: str) -> List[int]:
    """ONNX pads for TensorFlow's SAME (extra padding at the end) or VALID."""
    if padding == "VALID":
        return [0, 0, 0, 0]
    begin, end = [], []
    for n, kk, ss in zip(hw, k, s):
        total = max((-(-n // ss) - 1) * ss + kk - n, 0)
        begin.append(total // 2)
        end.append(total - total // 2)
    return begin + end


def _load_bytes(data: bytes, name: str, dims: Optional[Mapping[str, int]] = None) -> int:
    h, err = ctypes.c_void_p(), _lib.err_buf()
    if not dims:
        _lib.check(_lib.lib().tasoc_load_mem(data, len(data), name.encode(), ctypes.byref(h), err,
                                             _lib.ERRLEN), err)
        return h.value  # type: ignore[return-value]
    names = (ctypes.c_char_p * len(dims))(*(str(k).encode() for k in dims))
    sizes = (ctypes.c_int64 * len(dims))(*(int(v) for v in dims.values()))
    _lib.check(_lib.lib().tasoc_load_mem_dims(data, len(data), name.encode(), names, sizes, len(dims),
                                              ctypes.byref(h), err, _lib.ERRLEN), err)
    return h.value  # type: ignore[return-value]


# ---- TASO's functions ----

def new_graph() -> Graph:
    """An empty graph to build op by op."""
    return Graph()


def load_onnx(model: ModelLike, dims: Optional[Mapping[str, int]] = None) -> Graph:
    """Import an ONNX model: a path, the file's bytes or an
    onnx.ModelProto. dims pins symbolic dimensions, as `engine optimize
    --dim` does: {"batch": 1} reads the dim_param "batch" as 1, so the
    shapes are known and the rules can apply (the graph is then the model
    at that size); {"x:0": 1} sizes axis 0 of graph input "x" when the
    file gives it neither size nor name. Raises TasocError with the engine's message when the
    model cannot be read (the file, the node and the tensor named) or
    names no such dimension."""
    if isinstance(model, onnx.ModelProto):
        return Graph(_load_bytes(model.SerializeToString(), model.graph.name or "<ModelProto>", dims))
    if isinstance(model, (bytes, bytearray, memoryview)):
        return Graph(_load_bytes(bytes(model), "<bytes>", dims))
    if isinstance(model, (str, os.PathLike)):  # external data is read from beside the file
        dims = dims or {}
        h, err = ctypes.c_void_p(), _lib.err_buf()
        names = (ctypes.c_char_p * len(dims))(*(str(k).encode() for k in dims))
        sizes = (ctypes.c_int64 * len(dims))(*(int(v) for v in dims.values()))
        _lib.check(_lib.lib().tasoc_load_file_dims(_lib.fs(model), names, sizes, len(dims), ctypes.byref(h),
                                                   err, _lib.ERRLEN), err)
        return Graph(h.value)
    raise ValueError(f"load_onnx takes a path, bytes or an onnx.ModelProto, not "
                     f"{type(model).__name__}")


def export_onnx(graph: Graph) -> onnx.ModelProto:
    """The graph as an ONNX model (what `engine optimize` would write)."""
    return onnx.load_from_string(export_bytes(graph))


def export_bytes(graph: Graph) -> bytes:
    """The graph as ONNX bytes."""
    if not isinstance(graph, Graph):
        raise ValueError(f"export_onnx takes a Graph, not {type(graph).__name__}")
    L = _lib.lib()
    buf, n, err = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _lib.err_buf()
    _lib.check(L.tasoc_save_mem(graph._engine(), ctypes.byref(buf), ctypes.byref(n), err,
                                _lib.ERRLEN), err)
    try:
        return ctypes.string_at(buf, n.value)
    finally:
        L.tasoc_mem_free(buf)


def optimize(graph: Graph, alpha: Optional[float] = None, budget: Optional[int] = None, print_subst: bool = False,
             cost: Optional[str] = None, time_limit: Optional[float] = None,
             ruledb: Optional[Union[str, "os.PathLike[str]"]] = None,
             cost_cache: Optional[Union[str, "os.PathLike[str]"]] = None, threads: int = 1,
             verify: Optional[bool] = None, verify_runs: int = 20, deterministic: bool = False,
             no_cost_cache: bool = False, search: Optional[str] = None, egraph_iters: int = 0,
             egraph_nodes: int = 0, egraph_passes: int = 0, second_opinion: bool = True) -> Graph:
    """Optimize as `engine optimize` does: built-in rewrites, the
    cost-based search with the rules (the shipped ruledb unless `ruledb`),
    weight folding, and by default a check of the result where it will run.
    time_limit caps the seconds (None: 60, or with deterministic=True 600,
    a safety net: the search's work bounds decide, and the result's warning
    says when the clock stopped it).

    cost: None (the default) measures in onnxruntime ("ort") where it is
    installed and verifies the result, else uses "analytic-cpu" and warns
    (a RuntimeWarning) that the result is unverified; or one of
    "analytic-cpu" (flops and bytes on one CPU core, priced per kernel
    class as onnxruntime runs them), "analytic" (a roofline of a GPU-like
    device, where a kernel launch saved pays: TASO's merges), "cpu"
    (measured here), "cuda", "ort" (measured in onnxruntime with `threads`
    intra-op threads). Measured costs are cached per user, and with "ort"
    verify's choices beside them, so optimizing the same graph again times
    nothing (cost_cache names another file; no_cost_cache=True keeps none).
    verify: None verifies with "ort" costs; True times the result, its
    runners-up, the second opinion (the search under the analytic cost,
    with a measured cost, unless second_opinion=False) and the built-ins alone against the input in onnxruntime and
    returns the fastest (the input unless one is faster beyond the noise;
    at most verify_runs rounds); False never. deterministic=True gives the
    same graph on every run and machine: "analytic-cpu" (or cost
    "analytic"), no verify, no cache. search: "egraph" (the default:
    equality saturation, every rewrite everywhere in an e-graph, then the
    cheapest graph it holds; at most egraph_iters rounds and egraph_nodes
    e-nodes a pass, egraph_passes passes, 0 for the defaults) or
    "backtrack" (the best-first search: alpha keeps graphs under alpha x
    the best cost, 1 to 10, default 1.0; budget caps the graphs expanded,
    default 1000). alpha or budget without search selects "backtrack", as
    TASO's optimize(graph, alpha, budget) did.

    Returns the optimized graph; its `result` (an OptimizeResult) gives
    the costs before and after, the stop reason, the rules applied and what
    verify measured. The input is returned (as a graph) when nothing is
    cheaper or measured faster."""
    if not isinstance(graph, Graph):
        raise ValueError(f"optimize takes a Graph, not {type(graph).__name__}")
    if cost is not None:
        _check_choice("cost", cost, COSTS)
    if search is None:
        search = "backtrack" if alpha is not None or budget is not None else "egraph"
    if time_limit is None:
        time_limit = 600.0 if deterministic else 60.0
    alpha = 1.0 if alpha is None else alpha
    budget = 1000 if budget is None else budget
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
        raise ValueError(f"budget must be a non-negative integer, not {budget!r}")
    L = _lib.lib()
    o = _lib.Opts()
    L.tasoc_opts_init(ctypes.byref(o))
    try:
        o.alpha, o.time_limit, o.budget = float(alpha), float(time_limit), int(budget)
    except (TypeError, ValueError):
        raise ValueError(f"alpha and time_limit must be numbers, not {alpha!r}, {time_limit!r}") \
            from None
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be a positive integer, not {threads!r}")
    if isinstance(verify_runs, bool) or not isinstance(verify_runs, (int, np.integer)) or verify_runs < 1:
        raise ValueError(f"verify_runs must be a positive integer, not {verify_runs!r}")
    o.threads = int(threads)
    o.cost = cost.encode() if cost is not None else None
    o.ruledb = _lib.fs(ruledb) if ruledb is not None else None
    o.cost_cache = _lib.fs(cost_cache) if cost_cache is not None else None
    o.verify = 0 if verify is None else (1 if verify else -1)
    o.verify_runs, o.deterministic, o.no_cost_cache = int(verify_runs), int(bool(deterministic)), \
        int(bool(no_cost_cache))
    if search not in ("backtrack", "egraph"):
        raise ValueError(f"search must be \"backtrack\" or \"egraph\", not {search!r}")
    for name, v in (("egraph_iters", egraph_iters), ("egraph_nodes", egraph_nodes), ("egraph_passes", egraph_passes)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, not {v!r}")
    o.search, o.egraph_iters, o.egraph_nodes = search.encode(), int(egraph_iters), int(egraph_nodes)
    o.egraph_passes = int(egraph_passes)
    o.no_second_opinion = int(not second_opinion)
    best, res, err = ctypes.c_void_p(), ctypes.c_void_p(), _lib.err_buf()
    _lib.check(L.tasoc_optimize(graph._engine(), ctypes.byref(o), ctypes.byref(best),
                                ctypes.byref(res), err, _lib.ERRLEN), err)
    try:
        out = Graph(best.value)
        out.result = _result(res.value)
    finally:
        L.tasoc_result_free(res)
    if out.result.warning:
        warnings.warn(f"tasoc.optimize: {out.result.warning}", RuntimeWarning, stacklevel=2)
    if print_subst:
        print(out.result)
    return out


def _result(res: int) -> OptimizeResult:
    L = _lib.lib()
    s = _lib.Summary()
    L.tasoc_result_summary(res, ctypes.byref(s))
    rules = []
    for k in range(s.n_rules):
        rid, times, text = ctypes.c_uint64(), ctypes.c_uint(), ctypes.c_char_p()
        if L.tasoc_result_rule(res, k, ctypes.byref(rid), ctypes.byref(times),
                               ctypes.byref(text)) == 0:
            rules.append(AppliedRule(rid.value, times.value, text.value.decode()))
    builtins = {k: getattr(s, k) for k in ("bn_folded", "bias_split", "relu_fused", "cse_merged",
                                            "weights_folded", "sum_spelled", "nan_guards_dropped")}
    return OptimizeResult(cost_before=s.cost_before, cost_after=s.cost_after, seconds=s.seconds,
                          stop=s.stop.decode(), expanded=s.expanded, generated=s.generated,
                          kept_input=bool(s.kept_input), rules_dropped=bool(s.rules_dropped),
                          rules_applied=rules, builtins=builtins, cost_model=s.cost_model.decode(),
                          verified=bool(s.verified),
                          verify_pick=s.verify_pick.decode() if s.verify_pick else None,
                          verify_speedup=s.verify_speedup, verify_seconds=s.verify_seconds,
                          warning=s.warning.decode() if s.warning else None)
