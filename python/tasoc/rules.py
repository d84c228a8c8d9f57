"""rules.py - rule generation from Python: synth, prove and check run the
programs (out/bin/synth, out/bin/prove), and RuleDB reads their files with
the library's checked ruledb reader (libtasoc.so). Results are structured:
counts, per-rule verdicts, the rules themselves."""
from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Union

from . import _lib
from ._lib import TasocError

PathLike = Union[str, "os.PathLike[str]"]


def _bin(name: str) -> Path:
    d = os.environ.get("TASOC_BIN")
    if d:
        return Path(d) / name
    return _lib.native_path(name, "TASOC_BIN_" + name.upper(), "bin/" + name, "out/bin/" + name)


def _opspecs(name: str) -> Path:
    return _lib.native_path(name, "TASOC_OPSPECS_" + name.split(".")[0].upper(),
                            "opspecs/" + name, "opspecs/" + name)


def _run(argv: List[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        raise TasocError(f"{argv[0]}: {e}", "i/o error") from None


def _fail(p: subprocess.CompletedProcess, argv: List[str]) -> TasocError:
    msg = (p.stderr.strip() or p.stdout.strip() or f"exit status {p.returncode}")
    name = Path(argv[0]).name
    return TasocError(msg if msg.startswith(name + ":") else f"{name}: {msg}", "failed")


@dataclass(frozen=True)
class Rule:
    """A proved rule: src => dst in the axioms' s-expression syntax."""
    id: int
    verdict: str
    src: str
    dst: str


@dataclass(frozen=True)
class RuleDBInfo:
    """A ruledb file's facts: its kind ("rules" or "candidates"), how many
    rules or classes, and the generator's counts."""
    kind: str
    n_rules: int
    n_classes: int
    max_ops: int
    seed: int
    counts: Dict[str, int]


class RuleDB:
    """A ruledb file read by the library (rules or synth's candidates).
    Iterating gives the rules."""

    def __init__(self, path: Optional[PathLike] = None) -> None:
        """Read path, or the ruledb shipped inside the library when None."""
        L, h, err = _lib.lib(), ctypes.c_void_p(), _lib.err_buf()
        if path is None:
            rc = L.tasoc_ruledb_shipped(ctypes.byref(h), err, _lib.ERRLEN)
        else:
            rc = L.tasoc_ruledb_open(_lib.fs(path), ctypes.byref(h), err, _lib.ERRLEN)
        _lib.check(rc, err)
        self._h = h.value
        self.path = Path(path) if path is not None else None
        i = _lib.RuledbInfo()
        L.tasoc_ruledb_info_get(self._h, ctypes.byref(i))
        self.info = RuleDBInfo(kind=i.kind.decode(), n_rules=i.n_rules, n_classes=i.n_classes,
                               max_ops=i.max_ops, seed=i.seed,
                               counts={k: getattr(i, k) for k in
                                       ("graphs", "classes", "proved", "failed", "pruned")})

    def __del__(self) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h and _lib._lib is not None:
            _lib._lib.tasoc_ruledb_close(h)

    def __len__(self) -> int:
        return self.info.n_rules if self.info.kind == "rules" else self.info.n_classes

    def rule(self, i: int) -> Rule:
        """Rule i (0-based, file order)."""
        rid, verdict = ctypes.c_uint64(), ctypes.c_char_p()
        src, dst = ctypes.create_string_buffer(4096), ctypes.create_string_buffer(4096)
        if _lib.lib().tasoc_ruledb_rule(self._h, i, ctypes.byref(rid), ctypes.byref(verdict),
                                        src, 4096, dst, 4096):
            raise IndexError(f"rule {i}: out of range or not a rules file")
        return Rule(rid.value, verdict.value.decode(), src.value.decode(), dst.value.decode())

    def __iter__(self) -> Iterator[Rule]:
        for i in range(self.info.n_rules if self.info.kind == "rules" else 0):
            yield self.rule(i)


def ruledb(path: Optional[PathLike] = None) -> RuleDB:
    """Read a ruledb file (None: the shipped rules)."""
    return RuleDB(path)


def shipped_ruledb_path() -> Path:
    """The shipped ruledb file, the one built into the engine (installed with
    the package, or the source tree's): the full set pruned by derivability."""
    return _lib.native_path("pruned.tasodb", "TASOC_RULEDB", "ruledb/pruned.tasodb",
                            "ruledb/pruned.tasodb")


@dataclass(frozen=True)
class SynthResult:
    """synth's candidates file and what it holds."""
    path: Path
    classes: int
    graphs: int
    seconds: float
    info: RuleDBInfo
    log: str = ""


@dataclass(frozen=True)
class ProveResult:
    """prove's ruledb and its counts (proved, failed, pruned)."""
    path: Path
    rules: int
    proved: int
    failed: int
    pruned: int
    seconds: float
    info: RuleDBInfo
    log: str = ""


@dataclass(frozen=True)
class Verdict:
    id: int
    verdict: str       # "proved", "refuted", "unknown", "budget", "clock", "error"
    why: str = ""


@dataclass(frozen=True)
class CheckResult:
    """prove --check: every rule re-proved? ok is True when all were;
    counts per verdict, the verdicts themselves, the failing ones."""
    ok: bool
    n_rules: int
    counts: Dict[str, int]
    verdicts: List[Verdict]
    exit_status: int
    seconds: float
    log: str = ""

    @property
    def failed(self) -> List[Verdict]:
        return [v for v in self.verdicts if v.verdict != "proved"]


def _out_path(output: Optional[PathLike], stem: str) -> Path:
    if output is not None:
        return Path(output)
    return Path(tempfile.mkdtemp(prefix="tasoc-")) / stem


def synth(output: Optional[PathLike] = None, max_ops: int = 3, ops: Optional[Sequence[str]] = None,
          types: Optional[Sequence[str]] = None, seed: int = 1, threads: Optional[int] = None,
          shard: Optional[str] = None, extra: Sequence[str] = ()) -> SynthResult:
    """Enumerate graphs of up to max_ops operators (from ops, default all)
    and write their classes of equal fingerprints (out/bin/synth). output
    defaults to a file in a new temporary directory."""
    out = _out_path(output, "candidates.tasodb")
    argv = [str(_bin("synth")), "-o", str(out), "--max-ops", str(int(max_ops)), "--seed",
            str(int(seed)), "-q"]
    if ops:
        argv += ["--ops", ",".join(ops)]
    if types:
        argv += ["--types", ",".join(types)]
    if threads:
        argv += ["--threads", str(int(threads))]
    if shard:  # a shard writes a shard file, not candidates: the drivers join them
        raise ValueError("synth(shard=...): a divided run writes shard files that "
                         "`synth --merge-part` joins; run prove/divided/local.sh or slurm.sh")
    argv += list(extra)
    t0 = time.monotonic()
    p = _run(argv)
    if p.returncode != 0:
        raise _fail(p, argv)
    db = RuleDB(out)
    return SynthResult(path=out, classes=db.info.n_classes, graphs=db.info.counts["graphs"],
                       seconds=time.monotonic() - t0, info=db.info, log=p.stderr)


def _prove_opts(axioms: Optional[PathLike], jobs: Optional[int], max_instances: Optional[int],
                rlimit: Optional[int], timeout_ms: Optional[int]) -> List[str]:
    argv = ["--axioms", str(axioms if axioms is not None else _opspecs("axioms.ax"))]
    for opt, v in (("--jobs", jobs), ("--max-instances", max_instances), ("--rlimit", rlimit),
                   ("--timeout", timeout_ms)):
        if v is not None:
            argv += [opt, str(int(v))]
    return argv


def prove(candidates: PathLike, output: Optional[PathLike] = None, jobs: Optional[int] = None,
          max_instances: Optional[int] = None, rlimit: Optional[int] = None,
          timeout_ms: Optional[int] = None, axioms: Optional[PathLike] = None,
          extra: Sequence[str] = ()) -> ProveResult:
    """Decide synth's candidates with Z3 against the axioms and write the
    proved, pruned rules (out/bin/prove)."""
    out = _out_path(output, "rules.tasodb")
    argv = [str(_bin("prove")), os.fspath(candidates), "-o", str(out), "-q"]
    argv += _prove_opts(axioms, jobs, max_instances, rlimit, timeout_ms) + list(extra)
    t0 = time.monotonic()
    p = _run(argv)
    if p.returncode != 0:
        raise _fail(p, argv)
    db = RuleDB(out)
    c = db.info.counts
    return ProveResult(path=out, rules=db.info.n_rules, proved=c["proved"], failed=c["failed"],
                       pruned=c["pruned"], seconds=time.monotonic() - t0, info=db.info,
                       log=p.stderr)


def check(ruledb: Optional[PathLike] = None, jobs: Optional[int] = None,
          max_instances: Optional[int] = None, rlimit: Optional[int] = None,
          timeout_ms: Optional[int] = None, axioms: Optional[PathLike] = None) -> CheckResult:
    """Re-prove every rule of a ruledb (default: the shipped one), as CI
    does with `prove --check`; the verdict of every rule comes back."""
    path = Path(ruledb) if ruledb is not None else shipped_ruledb_path()
    argv = [str(_bin("prove")), "--check", str(path), "--verdicts", "-q"]
    argv += _prove_opts(axioms, jobs, max_instances, rlimit, timeout_ms)
    t0 = time.monotonic()
    p = _run(argv)
    verdicts = []
    for line in p.stdout.splitlines():
        head, _, why = line.partition(":")
        parts = head.split()
        if len(parts) == 2 and parts[0].isdigit():
            verdicts.append(Verdict(int(parts[0]), parts[1], why.strip()))
    if p.returncode not in (0, 1, 2) or (p.returncode == 2 and not verdicts):
        raise _fail(p, argv)
    counts: Dict[str, int] = {}
    for v in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    return CheckResult(ok=p.returncode == 0, n_rules=len(verdicts), counts=counts,
                       verdicts=verdicts, exit_status=p.returncode,
                       seconds=time.monotonic() - t0, log=p.stderr)
