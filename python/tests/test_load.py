"""Every model of test/corpus/onnx through load_onnx (a path, bytes and an
onnx.ModelProto) and export_onnx: the bad_ ones are refused with the
engine's message naming the file; the others load, export, pass
onnx.checker when the input does, and compute what the input computes
in onnxruntime when onnxruntime runs the input (opset 7 and up)."""
from pathlib import Path

import numpy as np
import onnx
import pytest

import tasoc
from conftest import CORPUS, assert_same_outputs, feeds, run_ort

MODELS = sorted(p.name for p in CORPUS.glob("*.onnx"))


def test_corpus_is_there():
    assert len(MODELS) >= 50


def _input_ok(path: Path) -> bool:
    try:
        onnx.checker.check_model(onnx.load(str(path)), full_check=True)
        return True
    except Exception:
        return False


@pytest.mark.parametrize("name", MODELS)
def test_corpus_model(name):
    path = CORPUS / name
    if name.startswith("bad_"):
        with pytest.raises(tasoc.TasocError) as e:
            tasoc.load_onnx(path)
        assert str(path) in str(e.value) and e.value.code != 0
        with pytest.raises(tasoc.TasocError):
            tasoc.load_onnx(path.read_bytes())
        return
    try:
        g = tasoc.load_onnx(str(path))
    except tasoc.TasocError as e:
        # fuzz_ models are the fuzzer's finds: refusing one is allowed, with a message.
        assert name.startswith("fuzz_") and str(path) in str(e), str(e)
        return
    out = tasoc.export_onnx(g)
    assert isinstance(out, onnx.ModelProto)
    assert tasoc.export_bytes(tasoc.load_onnx(path.read_bytes())) == tasoc.export_bytes(g)
    if not _input_ok(path):
        return
    onnx.checker.check_model(out, full_check=True)
    original = onnx.load(str(path))
    assert tasoc.export_bytes(tasoc.load_onnx(original)) == tasoc.export_bytes(g)
    opset = next((o.version for o in original.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 7:
        return  # onnxruntime guarantees opsets 7 and up only (Add-6 has no kernel)
    try:
        run_ort(original, feeds(original))
    except Exception:
        return  # onnxruntime cannot run the input itself
    assert_same_outputs(original, out)


def test_load_dims_pins_a_symbolic_batch():
    """dims= reads a dim_param as a size (engine optimize --dim): the
    symbolic batch N of inception.onnx becomes 2 in every shape, the graph
    optimizes, and the result computes what the input computes at batch 2;
    a name the model lacks is refused, naming it."""
    path = CORPUS / "inception.onnx"
    free = tasoc.load_onnx(path)
    assert free.num_nodes() > 0
    for model in (path, str(path), path.read_bytes(), onnx.load(str(path))):
        g = tasoc.load_onnx(model, dims={"N": 2})
        out = tasoc.export_onnx(g)
        assert [d.dim_value for d in out.graph.input[0].type.tensor_type.shape.dim] == [2, 4, 6, 6]
    best = tasoc.optimize(g, budget=20, deterministic=True)
    f = {"x": np.random.default_rng(0).standard_normal((2, 4, 6, 6)).astype(np.float32)}
    for a, b in zip(run_ort(onnx.load(str(path)), f), run_ort(tasoc.export_onnx(best), f)):
        assert a.shape[0] == 2 and np.max(np.abs(a - b)) <= 1e-4 * max(1.0, float(np.max(np.abs(a))))
    with pytest.raises(tasoc.TasocError) as e:
        tasoc.load_onnx(path, dims={"batch": 1})
    assert "'batch'" in str(e.value)
    with pytest.raises(tasoc.TasocError):
        tasoc.load_onnx(path, dims={"N": 0})


def test_load_dims_sizes_an_anonymous_axis():
    """dims={"x:0": 2} sizes axis 0 of graph input x when the file gives it
    neither size nor name (skl2onnx writes its batch so): every shape is
    then known, and the export declares the size."""
    m = onnx.load(str(CORPUS / "inception.onnx"))
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.shape.dim[0].Clear()
    g = tasoc.load_onnx(m, dims={"x:0": 2})
    out = tasoc.export_onnx(g)
    assert [d.dim_value for d in out.graph.input[0].type.tensor_type.shape.dim] == [2, 4, 6, 6]
    with pytest.raises(tasoc.TasocError) as e:
        tasoc.load_onnx(m, dims={"x:1": 4})  # axis 1 has a size
    assert "'x:1'" in str(e.value)


def test_load_external_data(tmp_path):
    """A model whose weights lie in an external data file (torch.onnx.export
    writes MODEL.onnx.data by default): load_onnx(path) reads them from
    beside the file, with dims= too, and the export computes what the input
    computes; its bytes alone are refused, saying why."""
    m = onnx.load(str(CORPUS / "conv_bn_relu.onnx"))
    src = tmp_path / "model.onnx"
    onnx.save(onnx.ModelProto.FromString(m.SerializeToString()), str(src), save_as_external_data=True,
              location="model.onnx.data", size_threshold=0)
    assert (tmp_path / "model.onnx.data").exists()
    assert any(t.external_data for t in onnx.load(str(src), load_external_data=False).graph.initializer)
    for g in (tasoc.load_onnx(src), tasoc.load_onnx(str(src), dims={})):
        assert_same_outputs(m, tasoc.export_onnx(g))
    with pytest.raises(tasoc.TasocError) as e:
        tasoc.load_onnx(src.read_bytes())
    assert "external file" in str(e.value) and "read from memory" in str(e.value)
