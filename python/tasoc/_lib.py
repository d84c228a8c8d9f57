"""_lib.py - the ctypes binding of libtasoc.so (engine/api/tasoc.h).

Finds the shared library and declares every function's signature; the
rest of the package calls only what is declared here. A non-zero status
becomes a TasocError carrying the engine's own message.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (POINTER, Structure, byref, c_char_p, c_double, c_int, c_size_t, c_uint,
                    c_uint32, c_uint64, c_void_p)
from pathlib import Path
from typing import Optional

API_VERSION = 5
ERRLEN = 320

_HERE = Path(__file__).resolve().parent
# The source tree (python/tasoc -> the repository), for use without installing.
_REPO = _HERE.parent.parent


class TasocError(Exception):
    """An error the engine reported. The message is the engine's own (it
    names the file, the node, the tensor or the rule); `status` names the
    kind ("i/o error", "malformed model", "bad graph", "shape mismatch",
    ...) and `code` is the engine's status number (eg_status; 0 for errors
    found before the engine was called)."""

    def __init__(self, message: str, status: str = "error", code: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def native_path(name: str, env: str, installed: str, tree: str) -> Path:
    """Where a native file is: $env, else the copy installed with the
    package (tasoc/_native/...), else the build in the source tree."""
    if os.environ.get(env):
        return Path(os.environ[env])
    for p in (_HERE / "_native" / installed, _REPO / tree):
        if p.exists():
            return p
    raise TasocError(f"{name} not found (tried ${env}, {_HERE / '_native' / installed}, "
                     f"{_REPO / tree}): run ./configure && ninja, then pip install ./python",
                     "i/o error")


class Opts(Structure):
    _fields_ = [("alpha", c_double), ("time_limit", c_double), ("budget", c_uint64),
                ("cost", c_char_p), ("ruledb", c_char_p), ("cost_cache", c_char_p), ("threads", ctypes.c_int),
                ("verify", ctypes.c_int), ("verify_runs", ctypes.c_int), ("deterministic", ctypes.c_int),
                ("no_cost_cache", ctypes.c_int), ("search", c_char_p), ("egraph_iters", ctypes.c_int),
                ("egraph_nodes", ctypes.c_int), ("egraph_passes", ctypes.c_int),
                ("no_second_opinion", ctypes.c_int)]


class Summary(Structure):
    _fields_ = [("cost_before", c_double), ("cost_after", c_double), ("seconds", c_double),
                ("expanded", c_uint64), ("generated", c_uint64), ("duplicates", c_uint64),
                ("rejected", c_uint64), ("pruned", c_uint64), ("stop", c_char_p),
                ("kept_input", c_int), ("rules_dropped", c_int), ("n_rules", c_size_t),
                ("bn_folded", c_int), ("bias_split", c_int), ("relu_fused", c_int),
                ("cse_merged", c_int), ("weights_folded", c_int), ("sum_spelled", c_int),
                ("nan_guards_dropped", c_int), ("cost_model", c_char_p), ("verified", c_int),
                ("verify_pick", c_char_p), ("verify_speedup", c_double), ("verify_seconds", c_double),
                ("warning", c_char_p)]


class RuledbInfo(Structure):
    _fields_ = [("kind", c_char_p), ("n_rules", c_size_t), ("n_classes", c_size_t),
                ("max_ops", c_uint32), ("seed", c_uint64), ("graphs", c_uint64),
                ("classes", c_uint64), ("proved", c_uint64), ("failed", c_uint64),
                ("pruned", c_uint64)]


_ERR = (ctypes.c_char * ERRLEN)
_lib: Optional[ctypes.CDLL] = None


def _declare(lib: ctypes.CDLL) -> None:
    vp, pvp = c_void_p, POINTER(c_void_p)
    sigs = {
        "tasoc_api_version": (c_int, []),
        "tasoc_version": (c_char_p, []),
        "tasoc_status_name": (c_char_p, [c_int]),
        "tasoc_opts_init": (None, [POINTER(Opts)]),
        "tasoc_load_file": (c_int, [c_char_p, pvp, c_char_p, c_size_t]),
        "tasoc_load_file_dims": (c_int, [c_char_p, POINTER(c_char_p), POINTER(ctypes.c_int64), c_int, pvp,
                                         c_char_p, c_size_t]),
        "tasoc_load_mem": (c_int, [c_char_p, c_size_t, c_char_p, pvp, c_char_p, c_size_t]),
        "tasoc_load_mem_dims": (c_int, [c_char_p, c_size_t, c_char_p, POINTER(c_char_p),
                                        POINTER(ctypes.c_int64), c_int, pvp, c_char_p, c_size_t]),
        "tasoc_save_mem": (c_int, [vp, POINTER(POINTER(ctypes.c_uint8)), POINTER(c_size_t),
                                   c_char_p, c_size_t]),
        "tasoc_mem_free": (None, [vp]),
        "tasoc_graph_counts": (None, [vp] + [POINTER(c_int)] * 4),
        "tasoc_graph_cost": (c_int, [vp, c_char_p, POINTER(c_double), c_char_p, c_size_t]),
        "tasoc_graph_free": (None, [vp]),
        "tasoc_optimize": (c_int, [vp, POINTER(Opts), pvp, pvp, c_char_p, c_size_t]),
        "tasoc_result_summary": (None, [vp, POINTER(Summary)]),
        "tasoc_result_rule": (c_int, [vp, c_size_t, POINTER(c_uint64), POINTER(c_uint),
                                      POINTER(c_char_p)]),
        "tasoc_result_free": (None, [vp]),
        "tasoc_ruledb_open": (c_int, [c_char_p, pvp, c_char_p, c_size_t]),
        "tasoc_ruledb_shipped": (c_int, [pvp, c_char_p, c_size_t]),
        "tasoc_ruledb_info_get": (None, [vp, POINTER(RuledbInfo)]),
        "tasoc_ruledb_rule": (c_int, [vp, c_size_t, POINTER(c_uint64), POINTER(c_char_p),
                                      c_char_p, c_size_t, c_char_p, c_size_t]),
        "tasoc_ruledb_close": (None, [vp]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args


def lib() -> ctypes.CDLL:
    """The loaded library (loaded once, on first use)."""
    global _lib
    if _lib is None:
        path = native_path("libtasoc.so", "TASOC_LIB", "libtasoc.so", "out/lib/libtasoc.so")
        try:
            handle = ctypes.CDLL(str(path))
        except OSError as e:
            raise TasocError(f"{path}: cannot load: {e}", "i/o error") from None
        _declare(handle)
        if handle.tasoc_api_version() != API_VERSION:
            raise TasocError(f"{path}: C API version {handle.tasoc_api_version()}, "
                             f"this package needs {API_VERSION}: rebuild and reinstall", "i/o error")
        _lib = handle
    return _lib


def err_buf() -> ctypes.Array:
    return _ERR()


def check(rc: int, err: ctypes.Array) -> None:
    """Raise the engine's message when rc is not 0."""
    if rc != 0:
        status = lib().tasoc_status_name(rc).decode()
        raise TasocError(err.value.decode(errors="replace"), status, rc)


def fs(path: "os.PathLike[str] | str") -> bytes:
    return os.fsencode(os.fspath(path))


__all__ = ["TasocError", "lib", "err_buf", "check", "Opts", "Summary", "RuledbInfo", "byref",
           "native_path", "fs"]
