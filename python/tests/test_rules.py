"""Rule generation from Python: synth -> prove -> check on a small
vocabulary, check on a shipped ruledb (every rule re-proved), and their
errors."""
from pathlib import Path

import pytest

import tasoc

ROOT = Path(__file__).resolve().parents[2]


def test_synth_prove_check_small(tmp_path):
    s = tasoc.synth(tmp_path / "cand.tasodb", max_ops=2, ops=["ewadd", "ewmul", "relu"],
                    types=["act"], threads=1)
    assert s.path.exists() and s.info.kind == "candidates" and s.classes > 0 and s.graphs > 0
    p = tasoc.prove(s.path, tmp_path / "rules.tasodb", jobs=1)
    assert p.info.kind == "rules" and p.rules > 0 and p.proved > 0
    rules = list(tasoc.ruledb(p.path))
    assert len(rules) == p.rules and all(r.verdict == "proved" for r in rules)
    c = tasoc.check(p.path, jobs=1)
    assert c.ok and c.exit_status == 0 and c.n_rules == p.rules
    assert c.counts == {"proved": p.rules} and c.failed == []
    opt = tasoc.optimize(tasoc.load_onnx(tasoc.export_onnx(_relu_relu())), ruledb=p.path, deterministic=True)
    assert opt.result.cost_after <= opt.result.cost_before


def _relu_relu() -> tasoc.Graph:
    g = tasoc.new_graph()
    x = g.new_input(dims=(1, 4, 8, 8))
    g.relu(g.relu(x))
    return g


def test_check_shipped_ruledb():
    # ruledb/pruned.tasodb: the built-in set, re-proved in seconds; the full
    # set it was pruned from (ruledb/default.tasodb) takes minutes, and
    # test/cli_prove.sh re-proves it with the same code
    path = ROOT / "ruledb" / "pruned.tasodb"
    c = tasoc.check(path)
    n = tasoc.ruledb(path).info.n_rules
    assert c.ok, c.failed[:10]
    assert c.exit_status == 0 and c.n_rules == n and c.counts == {"proved": n}
    assert tasoc.ruledb().info == tasoc.ruledb(path).info  # the built-in set
    assert tasoc.ruledb(ROOT / "ruledb" / "default.tasodb").info.n_rules > n  # pruned from the full one


def test_errors(tmp_path):
    junk = tmp_path / "junk.tasodb"
    junk.write_bytes(b"not msgpack at all")
    with pytest.raises(tasoc.TasocError, match="junk.tasodb"):
        tasoc.check(junk)
    with pytest.raises(tasoc.TasocError, match="junk.tasodb"):
        tasoc.prove(junk, tmp_path / "out.tasodb")
    with pytest.raises(tasoc.TasocError, match="junk.tasodb"):
        tasoc.ruledb(junk)
    with pytest.raises(tasoc.TasocError):
        tasoc.synth(tmp_path / "c.tasodb", max_ops=2, ops=["nosuchop"])
