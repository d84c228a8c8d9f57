"""conftest.py - shared helpers of the tasoc package's tests: the source
tree's paths and an onnxruntime comparison of two models (onnxruntime is
required: a missing one fails the tests, it does not skip them)."""
from pathlib import Path
from typing import List

import numpy as np
import onnx
import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "test" / "corpus" / "onnx"

_NP = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64,
       onnx.TensorProto.INT32: np.int32, onnx.TensorProto.BOOL: np.bool_,
       onnx.TensorProto.DOUBLE: np.float64}


def feeds(model: onnx.ModelProto, seed: int = 0) -> dict:
    """Random inputs for every graph input that is not an initializer."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    out = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim]
        dt = _NP[tt.elem_type]
        out[vi.name] = (rng.standard_normal(dims) if dt in (np.float32, np.float64)
                        else rng.integers(0, 2, dims)).astype(dt)
    return out


def run_ort(model: onnx.ModelProto, inputs: dict) -> List[np.ndarray]:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, inputs)


def assert_same_outputs(a: onnx.ModelProto, b: onnx.ModelProto, tol: float = 1e-4) -> None:
    """a and b compute the same outputs (max |x-y| <= tol * max |x|)."""
    assert [o.name for o in a.graph.output] == [o.name for o in b.graph.output]
    x = feeds(a)
    for ya, yb in zip(run_ort(a, x), run_ort(b, x)):
        assert ya.shape == yb.shape and ya.dtype == yb.dtype
        if ya.dtype.kind != "f":
            assert np.array_equal(ya, yb)
            continue
        scale = max(float(np.abs(ya).max()) if ya.size else 0.0, 1e-6)
        assert ya.size == 0 or float(np.abs(ya - yb).max()) <= tol * scale


@pytest.fixture
def corpus() -> Path:
    return CORPUS
