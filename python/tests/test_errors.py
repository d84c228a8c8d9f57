"""Error cases: each raises a Python exception carrying the engine's
message (TasocError) or, for a malformed argument, ValueError."""
import onnx
import pytest

import tasoc
from conftest import CORPUS


def small_graph() -> tasoc.Graph:
    g = tasoc.new_graph()
    x = g.new_input(dims=(1, 4, 8, 8))
    w = g.new_weight(dims=(4, 4, 3, 3))
    g.relu(g.conv2d(input=x, weight=w, strides=(1, 1), padding="SAME"))
    return g


def test_missing_file(tmp_path):
    p = tmp_path / "nowhere.onnx"
    with pytest.raises(tasoc.TasocError) as e:
        tasoc.load_onnx(p)
    assert str(p) in str(e.value) and e.value.status == "i/o error"


def test_garbage_bytes(tmp_path):
    junk = bytes(range(256)) * 4
    with pytest.raises(tasoc.TasocError) as e:
        tasoc.load_onnx(junk)
    assert e.value.status == "malformed model" and "not a valid ONNX model" in str(e.value)
    p = tmp_path / "junk.onnx"
    p.write_bytes(junk)
    with pytest.raises(tasoc.TasocError, match=str(p)):
        tasoc.load_onnx(str(p))


def test_empty_and_truncated():
    with pytest.raises(tasoc.TasocError):
        tasoc.load_onnx((CORPUS / "attention.onnx").read_bytes()[:100])


@pytest.mark.parametrize("arg", [42, None, 3.5, ["x"]])
def test_load_bad_argument(arg):
    with pytest.raises(ValueError):
        tasoc.load_onnx(arg)


@pytest.mark.parametrize("kw,match", [
    ({"cost": "gpu"}, "cost must be one of"),
    ({"budget": -1}, "budget"),
    ({"budget": 1.5}, "budget"),
    ({"alpha": "big"}, "alpha"),
])
def test_optimize_bad_argument(kw, match):
    with pytest.raises(ValueError, match=match):
        tasoc.optimize(small_graph(), **kw)


@pytest.mark.parametrize("kw,match", [
    ({"alpha": 0.5}, "alpha wants a number in"),
    ({"time_limit": -1}, "time_limit"),
])
def test_optimize_range_from_engine(kw, match):
    with pytest.raises(tasoc.TasocError, match=match):
        tasoc.optimize(small_graph(), **kw)


def test_optimize_bad_ruledb(tmp_path):
    p = tmp_path / "rules.tasodb"
    p.write_bytes(b"\x93garbage")
    with pytest.raises(tasoc.TasocError, match="rules.tasodb"):
        tasoc.optimize(small_graph(), ruledb=p)
    with pytest.raises(tasoc.TasocError, match="missing.tasodb"):
        tasoc.optimize(small_graph(), ruledb=tmp_path / "missing.tasodb")


def test_optimize_not_a_graph():
    with pytest.raises(ValueError):
        tasoc.optimize(onnx.ModelProto())
    with pytest.raises(ValueError):
        tasoc.export_onnx("model.onnx")


@pytest.mark.parametrize("kw,match", [
    ({"padding": "FULL"}, "padding"),
    ({"activation": "GELU"}, "activation"),
    ({"strides": (1,)}, "strides"),
    ({"strides": (0, 1)}, "strides"),
])
def test_builder_bad_argument(kw, match):
    g = tasoc.new_graph()
    x = g.new_input(dims=(1, 4, 8, 8))
    w = g.new_weight(dims=(4, 4, 3, 3))
    args = {"input": x, "weight": w, "strides": (1, 1), "padding": "SAME", **kw}
    with pytest.raises(ValueError, match=match):
        g.conv2d(**args)


def test_builder_shape_errors():
    g = tasoc.new_graph()
    with pytest.raises(ValueError):
        g.new_input(dims=(1, -4))
    x = g.new_input(dims=(1, 6, 8, 8))
    with pytest.raises(ValueError, match="channels"):
        g.conv2d(input=x, weight=g.new_weight(dims=(4, 4, 3, 3)))
    with pytest.raises(ValueError, match="data has"):
        g.new_weight(dims=(2, 2), data=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="sizes"):
        g.split(x, 1, [2, 2])
    other = tasoc.new_graph().new_input(dims=(1, 6, 8, 8))
    with pytest.raises(ValueError, match="another graph"):
        g.add(x, other)
    a = g.new_input(dims=(2, 3))
    b = g.new_input(dims=(4, 5))
    g.matmul(a, b)
    with pytest.raises(tasoc.TasocError) as e:  # the engine's own shape check
        g.cost()
    assert e.value.status == "shape mismatch"


def test_empty_graph():
    with pytest.raises(tasoc.TasocError, match="empty"):
        tasoc.export_onnx(tasoc.new_graph())


def test_loaded_graph_is_not_extended():
    g = tasoc.load_onnx(CORPUS / "convs.onnx")
    with pytest.raises(tasoc.TasocError):
        g.new_input(dims=(1, 2))
