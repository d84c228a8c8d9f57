"""The example of TASO's README, unchanged but for `import tasoc as taso`
and where it saves, run end to end: the file it writes passes
onnx.checker and computes in onnxruntime what the unoptimized graph does."""
import textwrap

import onnx

from conftest import assert_same_outputs

TASO_README_EXAMPLE = textwrap.dedent('''\
    import tasoc as taso
    import onnx

    #Build DNN model
    graph = taso.new_graph()
    input = graph.new_input(dims=(1,128,56,56))
    w1 = graph.new_weight(dims=(128,128,3,3))
    w2 = graph.new_weight(dims=(128,128,1,1))
    w3 = graph.new_weight(dims=(128,128,3,3))
    left = graph.conv2d(input=input, weight=w1, strides=(1,1), padding="SAME", activation="RELU")
    left = graph.conv2d(input=input, weight=w3, strides=(1,1), padding="SAME")
    right = graph.conv2d(input=input, weight=w2, strides=(1,1), padding="SAME", activation="RELU")
    output = graph.add(left, right)
    output = graph.relu(output)

    #Optimize DNN model
    new_graph = taso.optimize(graph)
    onnx_model = taso.export_onnx(new_graph)
    onnx.save(onnx_model, "/path/to/save/new/onnx/model")
    ''')


def run_example(code: str, out_path: str) -> dict:
    ns: dict = {}
    exec(compile(code.replace("/path/to/save/new/onnx/model", out_path), "example", "exec"), ns)
    return ns


def test_readme_example_end_to_end(tmp_path):
    out = tmp_path / "model.onnx"
    ns = run_example(TASO_README_EXAMPLE, str(out))
    import tasoc as taso
    optimized = onnx.load(str(out))
    onnx.checker.check_model(optimized, full_check=True)
    original = taso.export_onnx(ns["graph"])
    onnx.checker.check_model(original, full_check=True)
    assert_same_outputs(original, optimized)
    r = ns["new_graph"].result
    assert r.stop in ("saturated", "iterations", "e-node limit", "budget", "time limit")
    assert r.cost_after <= r.cost_before
    # the default measures in onnxruntime and verifies what it returns (the
    # input when nothing is cheaper); without onnxruntime it is the roofline
    if r.cost_model == "ort":
        assert r.verified or r.kept_input
    else:
        assert ns["new_graph"].cost(r.cost_model) == r.cost_after


def test_readme_example_intended_chain(tmp_path):
    """The figure's graph (the second conv reads the first's output)."""
    code = TASO_README_EXAMPLE.replace(
        'left = graph.conv2d(input=input, weight=w3', 'left = graph.conv2d(input=left, weight=w3')
    out = tmp_path / "chain.onnx"
    ns = run_example(code, str(out))
    import tasoc as taso
    optimized = onnx.load(str(out))
    onnx.checker.check_model(optimized, full_check=True)
    assert_same_outputs(taso.export_onnx(ns["graph"]), optimized)
    assert len(optimized.graph.output) == 1
