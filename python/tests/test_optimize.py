"""optimize on models where rules apply, the result object, round trips
through a path / bytes / ModelProto, every builder operator end to end
in onnxruntime, and handle lifetimes."""
import gc
import warnings

import numpy as np
import onnx
import pytest

import tasoc
from conftest import CORPUS, assert_same_outputs


def test_attention_merges_projections():
    g = tasoc.load_onnx(CORPUS / "attention.onnx")
    before = g.cost()
    opt = tasoc.optimize(g, alpha=1.05, budget=200, deterministic=True)
    r = opt.result
    assert isinstance(r, tasoc.OptimizeResult)
    assert r.cost_before == pytest.approx(before)
    assert r.cost_after < r.cost_before and r.speedup > 1
    assert r.stop in ("saturated", "budget", "time limit") and not r.kept_input
    assert r.rules_applied and all(a.times >= 1 and "=>" in a.text for a in r.rules_applied)
    assert opt.cost() == pytest.approx(r.cost_after)
    assert "cost before" in str(r)
    out = tasoc.export_onnx(opt)
    onnx.checker.check_model(out, full_check=True)
    assert_same_outputs(onnx.load(str(CORPUS / "attention.onnx")), out)
    assert opt.num_nodes() > 0


def test_optimize_is_deterministic_and_matches_path_bytes_proto():
    path = CORPUS / "attention.onnx"
    outs = [tasoc.export_bytes(tasoc.optimize(tasoc.load_onnx(src), alpha=1.05, budget=200,
                                                           deterministic=True))
            for src in (path, str(path), path.read_bytes(), onnx.load(str(path)))]
    assert all(o == outs[0] for o in outs)


def test_kept_input_is_the_input_bytes():
    path = CORPUS / "opaque.onnx"
    opt = tasoc.optimize(tasoc.load_onnx(path), deterministic=True)
    if opt.result.kept_input:
        assert tasoc.export_bytes(opt) == path.read_bytes()


def test_budget_zero_and_time_limit():
    g = tasoc.load_onnx(CORPUS / "inception.onnx")
    r = tasoc.optimize(g, budget=0, deterministic=True).result
    assert r.stop == "budget" and r.expanded == 0
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        r = tasoc.optimize(g, time_limit=0.0, deterministic=True).result
    assert r.stop == "time limit"  # the e-graph search checks the clock before its first round
    assert any("time limit stopped the search" in str(w.message) for w in said)  # deterministic: said
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no clock warning: the work bounds stop it (600 s net)
        assert tasoc.optimize(g, deterministic=True).result.stop != "time limit"


def test_cost_models():
    g = tasoc.load_onnx(CORPUS / "convs.onnx")
    assert g.cost() > 0 and g.cost("cpu") > 0
    # a graph's cost is the CPU roofline by default; "analytic" the GPU-like one
    assert g.cost() == g.cost("analytic-cpu") and g.cost("analytic") != g.cost()
    assert tasoc.optimize(g, budget=5, deterministic=True).result.cost_model == "analytic-cpu"
    r = tasoc.optimize(g, cost="cpu", budget=5).result
    assert r.cost_model == "cpu" and r.cost_after <= r.cost_before


def test_cost_ort_measures_in_onnxruntime(tmp_path):
    g = tasoc.load_onnx(CORPUS / "post_ln.onnx")
    assert g.cost("ort") > 0
    cache = tmp_path / "ort.txt"
    opt = tasoc.optimize(g, cost="ort", budget=20, threads=2, cost_cache=cache)
    r = opt.result
    assert r.cost_model == "ort" and r.cost_after <= r.cost_before and "sum_spelled" in r.builtins
    assert cache.read_text().startswith("eg-cost-cache 1 ort onnxruntime ")
    assert ", 2 threads, " in cache.read_text().splitlines()[0]
    assert_same_outputs(onnx.load(str(CORPUS / "post_ln.onnx")), tasoc.export_onnx(opt))
    with pytest.raises(ValueError):
        tasoc.optimize(g, cost="ort", threads=0)


def test_input_freed_before_result():
    g = tasoc.load_onnx(CORPUS / "attention.onnx")
    opt = tasoc.optimize(g, budget=50, deterministic=True)
    del g
    gc.collect()
    onnx.checker.check_model(tasoc.export_onnx(opt), full_check=True)


def test_every_builder_operator():
    g = tasoc.new_graph()
    x = g.new_input(dims=(1, 8, 16, 16))
    w = g.new_weight(dims=(8, 8, 3, 3))
    w1 = g.new_weight(dims=(8, 8, 1, 1), data=np.eye(8, dtype=np.float32).reshape(8, 8, 1, 1))
    c = g.conv2d(input=x, weight=w, strides=(1, 1), padding="SAME", activation="RELU")
    c1 = g.conv2d(input=x, weight=w1, strides=(1, 1), padding="SAME", activation="SIGMOID")
    assert c.dims == (1, 8, 16, 16) and c.dim(1) == 8 and c.nDim() == 4
    v = g.conv2d(input=x, weight=w, strides=(2, 2), padding="VALID")
    assert v.dims == (1, 8, 7, 7)
    s2 = g.conv2d(input=x, weight=w, strides=(2, 2), padding="SAME")
    assert s2.dims == (1, 8, 8, 8)
    m = g.maxpool2d(input=g.add(c, c1), kernels=(3, 3), strides=(1, 1), padding="SAME")
    a = g.avgpool2d(input=g.mul(c, c1), kernels=(2, 2), strides=(2, 2), padding="VALID",
                    activation="RELU")
    assert a.dims == (1, 8, 8, 8)
    cat = g.concat(1, [m, g.tanh(m)])
    p, q = g.split(cat, 1, [8, 8])
    halves = g.split(p, 1, 2)
    assert [h.dims[1] for h in halves] == [4, 4]
    bn = g.batchnorm(q, g.new_weight(dims=(8,), data=np.ones(8)), g.new_weight(dims=(8,)),
                     g.new_weight(dims=(8,)), g.new_weight(dims=(8,), data=np.full(8, 2.0)))
    t = g.transpose(g.relu(bn), perm=(0, 2, 3, 1))
    r = g.reshape(t, (1, 256, 8))
    mm = g.matmul(r, g.new_weight(dims=(8, 4)), activation="RELU")
    g.sigmoid(mm)
    g.add(a, s2)
    original = g.to_model()
    onnx.checker.check_model(original, full_check=True)
    opt = tasoc.optimize(g, alpha=1.05, budget=50, deterministic=True)
    out = tasoc.export_onnx(opt)
    onnx.checker.check_model(out, full_check=True)
    assert_same_outputs(original, out)
    assert_same_outputs(original, tasoc.export_onnx(g))


def test_two_parallel_convs_merge_under_alpha():
    """Two convs reading one input, summed: TASO's figure's merge."""
    g = tasoc.new_graph()
    x = g.new_input(dims=(1, 16, 14, 14))
    a = g.conv2d(input=x, weight=g.new_weight(dims=(16, 16, 1, 1)), strides=(1, 1))
    b = g.conv2d(input=x, weight=g.new_weight(dims=(16, 16, 1, 1)), strides=(1, 1))
    g.relu(g.add(a, b))
    opt = tasoc.optimize(g, alpha=1.05, deterministic=True)
    assert opt.result.cost_after <= opt.result.cost_before
    assert_same_outputs(g.to_model(), tasoc.export_onnx(opt))


def test_shipped_ruledb_is_read():
    db = tasoc.ruledb()
    assert db.info.kind == "rules" and len(db) == db.info.n_rules > 1000
    first = db.rule(0)
    assert first.verdict == "proved" and first.src and first.dst
    with pytest.raises(IndexError):
        db.rule(len(db))
    assert tasoc.ruledb(tasoc.shipped_ruledb_path()).info == db.info


def test_default_measures_and_verifies(tmp_path, monkeypatch):
    """The default, as engine optimize's: onnxruntime's costs, cached per
    user, and the result timed against the input; the graph returned
    computes what the input computes."""
    monkeypatch.setenv("TASOC_CACHE_DIR", str(tmp_path / "cache"))
    src = onnx.load(str(CORPUS / "attention.onnx"))
    opt = tasoc.optimize(tasoc.load_onnx(src), budget=50, verify_runs=3)
    r = opt.result
    assert r.cost_model == "ort" and r.warning is None
    if not r.kept_input or r.verified:
        assert r.verified and r.verify_pick in ("input", "search result", "runner-up 1", "runner-up 2",
                                                "second opinion", "built-ins alone")
        assert r.verify_seconds > 0 and r.verify_speedup > 0 and "verify: kept the" in str(r)
    assert [p.name for p in (tmp_path / "cache").iterdir()][0].startswith("costs-ort-")
    assert_same_outputs(src, tasoc.export_onnx(opt))
    again = tasoc.optimize(tasoc.load_onnx(src), budget=50, verify=False)
    assert again.result.cost_model == "ort" and not again.result.verified


def test_second_opinion_off(tmp_path, monkeypatch):
    """second_opinion=False (engine optimize --no-second-opinion): verify
    never writes the search under the analytic cost; the graph computes
    what the input computes."""
    monkeypatch.setenv("TASOC_CACHE_DIR", str(tmp_path / "cache"))
    src = onnx.load(str(CORPUS / "attention.onnx"))
    opt = tasoc.optimize(tasoc.load_onnx(src), verify_runs=3, second_opinion=False)
    assert opt.result.cost_model == "ort" and opt.result.verify_pick != "second opinion"
    assert_same_outputs(src, tasoc.export_onnx(opt))


def test_default_without_onnxruntime_warns_and_is_deterministic(tmp_path, monkeypatch):
    """No onnxruntime for the helper: the analytic cost, a RuntimeWarning
    that the result is unverified, and deterministic's graph."""
    fake = tmp_path / "py"
    fake.write_text("#!/bin/sh\necho 'err onnxruntime for Python is missing: pip install onnxruntime'\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("TASOC_PYTHON", str(fake))
    g = tasoc.load_onnx(CORPUS / "attention.onnx")
    with pytest.warns(RuntimeWarning, match="not verified"):
        opt = tasoc.optimize(g, budget=50)
    assert opt.result.cost_model == "analytic-cpu" and not opt.result.verified
    assert "pip install onnxruntime" in opt.result.warning
    det = tasoc.optimize(g, budget=50, deterministic=True)
    assert tasoc.export_bytes(opt) == tasoc.export_bytes(det)
    with pytest.raises(tasoc.TasocError, match="deterministic"):
        tasoc.optimize(g, deterministic=True, cost="ort")
