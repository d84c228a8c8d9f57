"""ort_cost.py - the measuring helper behind `engine optimize --cost ort`:
time small ONNX models (one operator, or a group onnxruntime fuses) in
onnxruntime, one after another, for the engine's cost model.

The engine links this file in (engine/cost/cost_ort.c, .incbin) and runs it as
`python3 -c SOURCE --threads T`, talking over stdin and stdout, one
request at a time:

    helper:  ready VERSION            (or "err MESSAGE" and exit 3 when
                                       onnxruntime or numpy is missing)
    engine:  time LEN\\n + LEN bytes   a serialized ModelProto
    helper:  us MICROSECONDS          (or "err MESSAGE": the engine then
                                       estimates that kernel instead)

End of input ends the helper. Every model gets a session as the optimized
model will: CPU provider, ORT_ENABLE_ALL, T intra-op threads, sequential
execution. Its inputs are random (seed 0, float N(0,1), integers 0, a
symbolic dim 1). Two warm-up runs, then runs until 20 ms have passed and
at least 5 were made (at most 200); the median. The fixed cost of a
session.run call from Python (measured once at start on an Identity of
one float: the median of 200 runs) is taken off, and 1 us added back for
the node's own dispatch, so that a model of many nodes costs what its
kernels cost, not what as many Python calls would.
"""
import sys

# A model with one Identity on a float[1] (opset 13, IR 7): the call
# overhead's yardstick, spelled as bytes so the helper needs no `onnx`.
CALIBRATION = bytes.fromhex(
    "08073a3b0a100a017812017922084964656e74697479120563616c69625a0f0a0178120a0a0808"
    "0112040a020801620f0a0179120a0a08080112040a02080142040a00100d")

NODE_US = 1.0       # dispatch of one node in a running model
MIN_RUNS, MAX_RUNS, MIN_MS = 5, 200, 20.0


def main(argv):
    out = sys.stdout
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        out.write(f"err onnxruntime for Python is missing ({e}): pip install onnxruntime numpy\n")
        out.flush()
        return 3
    import time

    threads = 1
    if len(argv) == 2 and argv[0] == "--threads" and argv[1].isdigit() and int(argv[1]) > 0:
        threads = int(argv[1])
    elif argv:
        out.write("err usage: ort_cost.py [--threads T]\n")
        out.flush()
        return 2

    types = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
             "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}

    def session(model):
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 4
        return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])

    def median_ms(s, feed, max_runs):
        s.run(None, feed)
        s.run(None, feed)
        times = []
        total = 0.0
        while len(times) < max_runs and (len(times) < MIN_RUNS or total < MIN_MS):
            t0 = time.perf_counter()
            s.run(None, feed)
            dt = (time.perf_counter() - t0) * 1e3
            times.append(dt)
            total += dt
        times.sort()
        return times[len(times) // 2]

    def feed_of(s):
        rng = np.random.default_rng(0)
        feed = {}
        for inp in s.get_inputs():
            shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
            t = types.get(inp.type)
            if t is None:
                raise ValueError(f"input '{inp.name}' of type {inp.type}")
            if np.issubdtype(t, np.floating):
                feed[inp.name] = rng.standard_normal(shape).astype(t)
            else:
                feed[inp.name] = np.zeros(shape, dtype=t)
        return feed

    s = session(CALIBRATION)
    call_ms = median_ms(s, feed_of(s), MAX_RUNS)
    out.write(f"ready {ort.__version__}\n")
    out.flush()

    inp = sys.stdin.buffer
    while True:
        line = inp.readline()
        if not line:
            return 0
        parts = line.split()
        if len(parts) != 2 or parts[0] != b"time" or not parts[1].isdigit():
            out.write("err bad request\n")
            out.flush()
            return 2
        n = int(parts[1])
        model = inp.read(n)
        if len(model) != n:
            return 0
        try:
            s = session(model)
            ms = median_ms(s, feed_of(s), MAX_RUNS)
            out.write(f"us {max(ms - call_ms, 0.0) * 1e3 + NODE_US:.6g}\n")
        except Exception as e:  # onnxruntime raises its own types for a model it refuses
            msg = " ".join(str(e).split())[:200]
            out.write(f"err {msg}\n")
        out.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
