"""Structural re-parameterization by the rules: the multi-branch conv
blocks of test/multibranch_blocks.py (RepVGG, ACNet, ... in the training
form torch exports), optimized by equality saturation (search="egraph",
deterministic), compute what they computed (onnxruntime, 1e-4), and the
families the shipped rules can collapse become one Conv, as the hand
collapse is (depthwise and grouped convs too: their rules hold for any
group count; a depthwise block's batchnorm-only branch through the
depthwise identity kernel; a pool branch through the pool kernel and a 1x1
conv taken into the kernel before it; a conv of a bias-free 1x1 conv as
one kernel; FastViT's RepMixer, a batchnorm-only branch subtracted and a
layer scale, through the biases of a difference made one). The near misses (not one conv at the border) are held to
their values only."""
import sys

import onnx
import pytest

import tasoc
from conftest import ROOT, assert_same_outputs

sys.path.insert(0, str(ROOT / "test"))
import multibranch_blocks as mb  # noqa: E402

COLLAPSED = ["repvgg", "repvgg_s2", "acnet", "two_convs_sum", "two_convs_sum_1x1", "two_dwconvs_sum",
             "two_dwconvs_sum_1x1", "grouped_convs_sum_1x1", "five_dwconvs_sum", "dw_multibranch",
             "avgpool_branch", "conv1x1_then_kxk", "repmixer"]
CASES = [(n, f) for f in mb.FORMS for n in mb.FAMILIES + mb.NEAR_MISSES if f == "bn" or mb.has_ts_form(n)]


def convs(m: onnx.ModelProto) -> int:
    return sum(n.op_type in ("Conv", "FusedConv") for n in m.graph.node)


def optimized(model: onnx.ModelProto) -> onnx.ModelProto:
    g = tasoc.load_onnx(model.SerializeToString())
    return tasoc.export_onnx(tasoc.optimize(g, deterministic=True, search="egraph"))


@pytest.mark.parametrize("name,form", CASES, ids=[f"{n}-{f}" for n, f in CASES])
def test_block(name, form):
    train, ref = mb.build(name, form=form)
    out = optimized(train)
    onnx.checker.check_model(out, full_check=True)
    assert_same_outputs(train, out, tol=1e-4)
    if name in COLLAPSED:
        assert convs(out) == convs(ref) == 1
        assert all(n.op_type in ("Conv", "Relu") for n in out.graph.node)
    assert convs(out) <= convs(train)


def test_passes():
    """A chain of four merges under a small e-node limit: one pass stops
    after a merge or two, passes that restart from their result finish it."""
    train, _ = mb.build("five_dwconvs_sum")
    g = tasoc.load_onnx(train.SerializeToString())
    one = tasoc.export_onnx(tasoc.optimize(g, deterministic=True, search="egraph", egraph_nodes=3000, egraph_passes=1))
    four = tasoc.export_onnx(tasoc.optimize(g, deterministic=True, search="egraph", egraph_nodes=3000, egraph_passes=4))
    assert convs(one) >= 3 and convs(four) == 1
    assert_same_outputs(train, four, tol=1e-4)


def test_same_bytes():
    train, _ = mb.build("repvgg")
    assert optimized(train).SerializeToString() == optimized(train).SerializeToString()


def test_search_option_checked():
    train, _ = mb.build("two_convs_sum")
    g = tasoc.load_onnx(train.SerializeToString())
    with pytest.raises(ValueError):
        tasoc.optimize(g, deterministic=True, search="saturate")
    with pytest.raises(ValueError):
        tasoc.optimize(g, deterministic=True, search="egraph", egraph_iters=-1)
    with pytest.raises(ValueError):
        tasoc.optimize(g, deterministic=True, search="egraph", egraph_passes=-1)


def test_kernels_as_inputs():
    """conv1x1_then_kxk with its kernels graph inputs, not weights: the
    kernel product of the 3x3 after the 1x1 cannot be folded, so the export
    writes it (a Transpose of the 1x1 kernel, a Conv over the 3x3 one), and
    the model computes what the two convs did."""
    train, _ = mb.build("conv1x1_then_kxk", form="ts")
    kernels = [i for i in train.graph.initializer if len(i.dims) == 4]
    for k in kernels:
        train.graph.input.append(onnx.helper.make_tensor_value_info(k.name, onnx.TensorProto.FLOAT, list(k.dims)))
        train.graph.initializer.remove(k)
    out = optimized(train)
    onnx.checker.check_model(out, full_check=True)
    assert_same_outputs(train, out, tol=1e-4)
    ops = [n.op_type for n in out.graph.node]
    assert "Transpose" in ops and convs(out) == 2 < convs(train)
