"""ort_time.py - the timing helper behind `engine optimize --verify`: time an
ONNX model and candidate rewrites of it in onnxruntime, end to end.

The engine links this file in (engine/verify/verify.c, .incbin) and runs it as
`python3 -c SOURCE ARGS`; it is not imported from anywhere else.

    python3 ort_time.py --threads T --runs N --warmup W INPUT CAND...

    python3 ort_time.py ... [--screen S] [--min-runs M] [--max-err E]
                        [--min-gain G] [--sample-ms T] INPUT CAND...

Every model gets one session (CPU provider, ORT_ENABLE_ALL, T intra-op
threads that do not spin-wait after a run, sequential execution) and the same random inputs (seed 0; float
N(0,1), integers in [0, 2), booleans false; a symbolic dim is 1). After W
warm-up runs each (the first is the run whose outputs are compared), rounds run every session once in turn, with INPUT
run a second time at the end of each round (the A/A: what the machine's
noise alone makes of two identical models). A model's time in a round is
the mean of as many consecutive runs as make T ms (default 5; the input's
time decides how many, the same count for every model), so a model of
microseconds is not timed at the clock's jitter. Each candidate's outputs are
compared with INPUT's; one whose error exceeds E (default 1e-4) cannot be
kept, so it is not timed past the first round.

Rounds end at N, or earlier once they have decided (so a big model costs
a few rounds, not N), by rules on the rounds alone, never on a clock:
- after S rounds (default 3) a candidate clearly slower than the leader
  (the candidate of highest median ratio) leaves the rounds: its 75th
  percentile below the leader's 25th and its median below the leader's by
  a factor of more than 1 + twice the noise (ratios compare as factors: a
  candidate 20x slower leaves even when a loaded machine makes the noise
  large);
- from round M on (default 5), the rounds stop when every candidate still
  in them is decided: its 25th percentile above 1 + noise (faster), or its
  75th below it (not faster beyond the noise).
The noise is max(G, |A/A median - 1|, half the A/A's interquartile
range), G defaulting to 0.005: the threshold engine/verify/verify.c's pick uses.
One line per model on stdout, tab-separated:

    model  INDEX  MEDIAN_MS  MIN_MS  MAX_REL_ERR  ROUNDS

(INDEX 0 is INPUT, 1.. the candidates, -1 the A/A session; MAX_REL_ERR is
max |a - b| / max |a| over the outputs, 0 for INPUT), then

    ratios INDEX  MEDIAN  LO  HI

per candidate: the per-round ratio INPUT time / candidate time over the
rounds it ran in, its median and the 25th and 75th percentiles (the spread). A candidate onnxruntime
refuses or fails on, or with another number of outputs, is not timed: its
lines read 0 ms, MAX_REL_ERR inf, ratios 0 (a message on stderr says why). Errors go to stderr with a
non-zero exit: 3 when onnxruntime or numpy is missing, 2 otherwise.
"""
import sys
import time


def pct(v, q):
    v = sorted(v)
    x = q * (len(v) - 1)
    lo = int(x)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (x - lo)


def quartiles(base, other):
    """25th, 50th and 75th percentiles of the per-round ratio base / other
    (over the rounds both ran in)."""
    r = [a / b for a, b in zip(base, other)] or [0.0]
    return pct(r, 0.25), pct(r, 0.5), pct(r, 0.75)


def noise_of(aa, min_gain):
    """What two identical models differ by in these rounds (verify.c's rule)."""
    return max(min_gain, abs(aa[1] - 1), (aa[2] - aa[0]) / 2)


def reps_for(run, sample_ms=5.0):
    """How many consecutive calls of run() make one sample of sample_ms:
    the middle of three probes decides (one call of a 0.08 ms model times
    the clock's and the scheduler's jitter, not the model)."""
    probe = []
    for _ in range(3):
        t0 = time.perf_counter()
        run()
        probe.append((time.perf_counter() - t0) * 1e3)
    return max(1, min(1000, int(sample_ms / max(sorted(probe)[1], 1e-3)) + 1))


def sample_ms(run, reps):
    """One sample: the mean time of reps consecutive calls of run(), ms."""
    t0 = time.perf_counter()
    for _ in range(reps):
        run()
    return (time.perf_counter() - t0) * 1e3 / reps


def main(argv):
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        print(f"onnxruntime for Python is missing ({e}): pip install onnxruntime", file=sys.stderr)
        return 3

    args = {"--threads": 1, "--runs": 20, "--warmup": 3, "--screen": 3, "--min-runs": 5,
            "--max-err": 1e-4, "--min-gain": 0.005, "--sample-ms": 5.0}
    paths = []
    i = 0
    while i < len(argv):
        if argv[i] in args and i + 1 < len(argv):
            args[argv[i]] = type(args[argv[i]])(argv[i + 1])
            i += 2
        else:
            paths.append(argv[i])
            i += 1
    if len(paths) < 2 or args["--runs"] < 1:
        print("usage: ort_time.py [--threads T] [--runs N] [--warmup W] INPUT CAND...", file=sys.stderr)
        return 2

    def session(path):
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = args["--threads"]
        # Several sessions take turns in one process: a pool that spins after
        # its run would take the cores from the next session's run.
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

    types = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
             "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}
    try:
        def candidate(p):  # a candidate onnxruntime refuses is reported, not timed
            try:
                return session(p)
            except Exception as e:
                print(f"{p}: onnxruntime refuses it: {' '.join(str(e).split())[:200]}", file=sys.stderr)
                return None

        sessions = [session(paths[0])] + [candidate(p) for p in paths[1:]] + [session(paths[0])]
        rng = np.random.default_rng(0)
        feed = {}
        # a symbolic dim takes the size a candidate pinned it to (engine
        # optimize --dim), else 1
        pinned = {}
        for sess in sessions[1:-1]:
            for ci in sess.get_inputs() if sess else []:
                for k, d in enumerate(ci.shape):
                    if isinstance(d, int) and d > 0:
                        pinned.setdefault((ci.name, k), d)
        for inp in sessions[0].get_inputs():
            shape = [d if isinstance(d, int) and d > 0 else pinned.get((inp.name, k), 1)
                     for k, d in enumerate(inp.shape)]
            t = types.get(inp.type)
            if t is None:
                print(f"{paths[0]}: input '{inp.name}' of type {inp.type} is not supported", file=sys.stderr)
                return 2
            if np.issubdtype(t, np.floating):
                feed[inp.name] = rng.standard_normal(shape).astype(t)
            elif t == np.bool_:
                feed[inp.name] = np.zeros(shape, dtype=t)
            else:
                feed[inp.name] = rng.integers(0, 2, size=shape).astype(t)
        ref = sessions[0].run(None, feed)
        errs = [0.0]
        for k, p in enumerate(paths[1:], 1):
            try:
                out = sessions[k].run(None, feed) if sessions[k] else None
            except Exception as e:
                print(f"{p}: onnxruntime fails on it: {' '.join(str(e).split())[:200]}", file=sys.stderr)
                out = None
            if out is None or len(out) != len(ref):
                sessions[k] = None  # not comparable: never picked, not timed
                errs.append(float("inf"))
                continue
            e = 0.0
            for a, b in zip(ref, out):
                a = np.asarray(a, dtype=np.float64)
                b = np.asarray(b, dtype=np.float64)
                if a.shape != b.shape:
                    e = float("inf")
                    break
                scale = float(np.max(np.abs(a))) if a.size else 0.0
                diff = float(np.max(np.abs(a - b))) if a.size else 0.0
                e = max(e, diff / scale if scale > 0 else diff)
            errs.append(e)
        # the run that gave each model's outputs above was its first warm-up
        # (the A/A session's comes here)
        for k, s in enumerate(sessions):
            for _ in range(max(args["--warmup"] - (k != len(sessions) - 1), 0) if s else 0):
                s.run(None, feed)
        aa = len(sessions) - 1
        live = [k for k in range(1, aa) if sessions[k] and errs[k] <= args["--max-err"]]
        # A sample is the mean of enough consecutive runs to last
        # --sample-ms: a model of microseconds timed run by run measures
        # the clock's and the scheduler's jitter, not the model.
        reps = reps_for(lambda: sessions[0].run(None, feed), args["--sample-ms"])
        times = [[] for _ in sessions]
        for r in range(1, args["--runs"] + 1):
            for k in [0] + (live if r > 1 else [k for k in range(1, aa) if sessions[k]]) + [aa]:
                times[k].append(sample_ms(lambda: sessions[k].run(None, feed), reps))
            if not live:
                break
            q = {k: quartiles(times[0], times[k]) for k in live}
            noise = noise_of(quartiles(times[0], times[aa]), args["--min-gain"])
            if r == args["--screen"] and len(live) > 1:
                lead = q[max(live, key=lambda k: q[k][1])]
                live = [k for k in live if not (q[k][2] < lead[0] and q[k][1] * (1 + 2 * noise) < lead[1])]
            if r >= args["--min-runs"] and all(q[k][0] > 1 + noise or q[k][2] < 1 + noise for k in live):
                break
    except Exception as e:  # onnxruntime raises its own types for a model it refuses
        print(f"onnxruntime: {e}", file=sys.stderr)
        return 2

    for k, t in enumerate(times):  # a candidate not timed: 0 ms, error inf, ratio 0
        idx = -1 if k == len(sessions) - 1 else k
        err = errs[k] if idx >= 0 else 0.0
        print(f"model\t{idx}\t{pct(t, 0.5) if t else 0:.6g}\t{min(t) if t else 0:.6g}\t{err:.6g}\t{len(t)}")
    for k in range(1, len(sessions)):
        idx = -1 if k == len(sessions) - 1 else k
        lo, med, hi = quartiles(times[0], times[k])
        print(f"ratios\t{idx}\t{med:.6g}\t{lo:.6g}\t{hi:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
