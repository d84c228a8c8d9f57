"""tasoc - the tasoc superoptimizer from Python, with TASO's interface.

    import tasoc as taso
    graph = taso.new_graph()
    x = graph.new_input(dims=(1, 128, 56, 56))
    w = graph.new_weight(dims=(128, 128, 3, 3))
    y = graph.relu(graph.conv2d(input=x, weight=w, strides=(1, 1), padding="SAME"))
    new_graph = taso.optimize(graph, alpha=1.0, budget=1000)
    print(new_graph.result)                 # costs, stop reason, rules applied
    onnx.save(taso.export_onnx(new_graph), "out.onnx")

load_onnx / optimize / export_onnx call the engine's C library
(libtasoc.so, engine/api/tasoc.h) through ctypes; synth / prove / check run
the synth and prove programs and read their files with the library.
"""
from ._lib import TasocError
from .graph import (AppliedRule, Graph, OptimizeResult, Tensor, export_bytes, export_onnx,
                    load_onnx, new_graph, optimize)
from .rules import (CheckResult, ProveResult, Rule, RuleDB, RuleDBInfo, SynthResult, Verdict,
                    check, prove, ruledb, shipped_ruledb_path, synth)

__version__ = "0.1.0"


def engine_version() -> str:
    """The C library's version."""
    from . import _lib
    return _lib.lib().tasoc_version().decode()


__all__ = ["TasocError", "Graph", "Tensor", "OptimizeResult", "AppliedRule", "new_graph",
           "load_onnx", "export_onnx", "export_bytes", "optimize", "synth", "prove", "check",
           "ruledb", "RuleDB", "RuleDBInfo", "Rule", "SynthResult", "ProveResult", "CheckResult",
           "Verdict", "shipped_ruledb_path", "engine_version"]
