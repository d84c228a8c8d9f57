#!/usr/bin/env python3
"""test/multibranch_blocks.py - small ONNX models of "structural
re-parameterization" blocks: multi-branch conv blocks that are linear up to
their final Relu and collapse into a single Conv. Pure onnx + numpy (no
torch), for the tests and bench/multibranch.py.

    python3 test/multibranch_blocks.py OUT_DIR

writes, for every family, OUT_DIR/NAME_train.onnx (the branches as separate
nodes), OUT_DIR/NAME_ts_train.onnx (the same block as torch's exporters write
it by default, where that differs) and OUT_DIR/NAME_ref.onnx (the hand
collapse: one Conv, then Relu), checks each pair in onnxruntime and prints
the max relative error (exit status 1 if any family's exceeds 1e-4). The
near misses (NEAR_MISSES) are printed too, for information: their naive
collapse is wrong at the borders by design.

API:
    FAMILIES                     the family names (all collapse exactly)
    NEAR_MISSES                  families whose one-conv collapse is NOT exact
    FORMS                        ("bn", "ts")
    build(name, seed=0, form="bn") -> (train_model, ref_model)
    write_all(dir, forms=FORMS)  -> [(name, train_path, ref_path), ...]
    check(train, ref, seed=0)    -> max relative error (models or paths)

Every model: opset 17, IR version 8, float32, input "x" [1, 16, 14, 14],
output "y", random weights from numpy.random.RandomState(seed) (conv weights
normal / sqrt(fan-in); BatchNormalization in inference mode with scale
N(1, 0.3), bias and mean N(0, 0.3), var U(0.5, 1.5), epsilon 1e-5).

The two training forms:
  "bn"  every conv+BN branch as Conv (no bias) -> BatchNormalization, the
        BN-only identity branch as a BatchNormalization of the input; what
        torch.onnx.export(..., dynamo=False, do_constant_folding=False)
        writes, and what a graph from another framework typically holds.
  "ts"  what torch.onnx.export writes for an eval-mode model by default,
        TorchScript exporter (opset 17) and dynamo exporter alike: each
        Conv -> BN pair is already folded into one Conv with a bias; a BN
        with no Conv before it (the identity branch, a BN after a pooling)
        stays a BatchNormalization (epsilon, momentum 0.9, training_mode 0).
Branches are summed with a left-to-right chain of Add, as torch writes
`a + b + c`, then Relu.

The families and what makes each collapse exact (K: the 3x3 kernel of the
reference, b: its bias, s = scale / sqrt(var + eps), t = bias - mean * s):
  repvgg            3x3 conv+BN + 1x1 conv+BN + BN identity, stride 1,
                    pads 1 / 0. K = s3*W3 + pad(s1*W1) + pad(s_id*I), exact:
                    a 1x1 kernel zero-padded to 3x3 with the 3x3's pad 1
                    reads the same pixel; the identity is the 1x1 delta.
  repvgg_s2         the same at stride 2 without the identity (the
                    downsampling block): exact, the 3x3's centre tap at pad
                    1 reads pixel 2*o as the 1x1 at pad 0 does.
  acnet             3x3 + 1x3 + 3x1 conv+BN (pads 1 / (0,1) / (1,0)): exact
                    when every branch is centred (pad = (k-1)/2 per axis).
  dw_multibranch    depthwise (group 16) 3x3 conv+BN + depthwise 1x1 conv+BN
                    + BN identity (MobileOne-like): exact, per channel.
  conv1x1_then_kxk  1x1 conv (no bias, no BN) -> 3x3 conv+BN (pad 1), plus a
                    3x3 conv+BN branch. K = sum_m W3[o,m] W1[m,i]: exact only
                    because the 1x1 has no bias: the 3x3's zero padding of
                    the 1x1's output equals the 1x1 of the zero-padded input
                    only then. With a bias (or a BN) on the 1x1 the padded
                    border reads 0 where the collapse reads the bias
                    (near miss conv1x1_bias_then_kxk).
  avgpool_branch    1x1 conv (no bias) -> AveragePool 3x3 stride 1 pad 1
                    count_include_pad=1 -> BN, plus a 3x3 conv+BN branch.
                    The pool is the depthwise conv of 1/9 with zero padding,
                    so K = s*W1/9 (all nine taps): exact because nothing
                    before the pool has a bias. The BN sits after the pool
                    for that reason: a 1x1 conv+BN *before* the pool (near
                    miss avgpool_branch_bn_first) pads the BN's bias with
                    zeros, wrong at the borders (DBB's fix is a
                    BN-and-pad layer that pads with the bias value).
  two_convs_sum     Conv3x3(x) + Conv3x3(x), plain convs with biases:
                    K = W_a + W_b, exact.
  two_convs_sum_1x1 Conv3x3(x) + Conv1x1(x) (pad 1 / 0): exact.
  two_dwconvs_sum, two_dwconvs_sum_1x1, grouped_convs_sum_1x1
                    the same two with depthwise convs (group 16) and with
                    group 4: exact, group by group.
  five_dwconvs_sum  four depthwise 3x3 convs and a depthwise 1x1, summed
                    left to right (MobileOne's depthwise branches, as torch
                    folds their BNs): exact; a chain of four merges.
  repmixer          FastViT's RepMixer, depthwise: x + gamma * (mixer(x) -
                    norm(x)), the mixer dw_multibranch's three branches
                    summed, the norm a BN identity, gamma a [C,1,1] layer
                    scale (Mul by an initializer). K = delta + gamma *
                    (K_mixer - K_norm), b = gamma * (b_mixer - b_norm):
                    exact, every branch centred and linear.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR = 8
C = 16   # channels
HW = 14  # spatial size
EPS = 1e-5
FORMS = ("bn", "ts")
FAMILIES = ["repvgg", "repvgg_s2", "acnet", "dw_multibranch", "conv1x1_then_kxk", "avgpool_branch",
            "two_convs_sum", "two_convs_sum_1x1", "two_dwconvs_sum", "two_dwconvs_sum_1x1",
            "grouped_convs_sum_1x1", "five_dwconvs_sum", "repmixer"]
NEAR_MISSES = ["conv1x1_bias_then_kxk", "avgpool_branch_bn_first"]
TOL = 1e-4


class _Block:
    """One block under construction: the training graph's nodes and
    initializers, and the running sum of the collapsed kernel and bias
    (float64; 3x3, the reference's stride and group)."""

    def __init__(self, name, seed, form, stride=1, group=1):
        if form not in FORMS:
            raise ValueError(f"form {form!r}: one of {FORMS}")
        self.name, self.form, self.stride, self.group = name, form, stride, group
        self.rng = np.random.RandomState(seed)
        self.nodes, self.inits = [], []
        self.K = np.zeros((C, C // group, 3, 3))
        self.b = np.zeros(C)
        self.n = 0

    def _id(self, what):
        self.n += 1
        return f"{what}{self.n}"

    def init(self, what, arr):
        name = self._id(what)
        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name))
        return name

    def weight(self, cout, cin, kh, kw):
        return self.rng.standard_normal((cout, cin, kh, kw)) / np.sqrt(cin * kh * kw)

    def bn_params(self):
        r = self.rng
        return (r.normal(1.0, 0.3, C), r.normal(0.0, 0.3, C), r.normal(0.0, 0.3, C), r.uniform(0.5, 1.5, C))

    def node(self, op, inputs, **attrs):
        out = self._id(op.lower() + "_")
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, w, b=None, pads=(0, 0, 0, 0), stride=None, group=None):
        """A Conv node of weight w (float64 array), bias b (or none)."""
        ins = [x, self.init("w", w)] + ([self.init("b", b)] if b is not None else [])
        return self.node("Conv", ins, kernel_shape=list(w.shape[2:]), pads=list(pads),
                         strides=[stride or self.stride] * 2, group=group or self.group, dilations=[1, 1])

    def bn(self, x, p):
        g, beta, mean, var = p
        return self.node("BatchNormalization", [x] + [self.init(k, v) for k, v in
                                                      zip(("scale", "bias", "mean", "var"), p)],
                         epsilon=EPS, momentum=0.9, training_mode=0)

    def conv_bn(self, x, w, pads, stride=None, group=None):
        """Conv (no bias) -> BN in form "bn"; the folded Conv with bias in
        form "ts". @return (output, folded weight, folded bias)."""
        p = self.bn_params()
        s, t = fold(p)
        wf, bf = w * s[:, None, None, None], t
        if self.form == "bn":
            out = self.bn(self.conv(x, w, None, pads, stride, group), p)
        else:
            out = self.conv(x, wf, bf, pads, stride, group)
        return out, wf, bf

    def bn_identity(self, x):
        """The BN-only identity branch (a BatchNormalization in both forms)."""
        p = self.bn_params()
        s, t = fold(p)
        delta = np.zeros((C, C // self.group, 3, 3))
        for o in range(C):
            delta[o, o if self.group == 1 else 0, 1, 1] = 1.0
        self.add_kernel(delta * s[:, None, None, None], t)
        return self.bn(x, p)

    def add_kernel(self, k, b):
        self.K += embed3(k)
        self.b += b

    def models(self, branches):
        """Sum the branch outputs (a left-to-right Add chain), Relu: the
        training model; one Conv of the collapsed kernel, Relu: the reference."""
        acc = branches[0]
        for br in branches[1:]:
            acc = self.node("Add", [acc, br])
        self.nodes.append(helper.make_node("Relu", [acc], ["y"], name="relu"))
        ho = (HW + 2 - 3) // self.stride + 1
        train = _model(self.nodes, self.name + "_train", self.inits, ho)
        ref_inits = [numpy_helper.from_array(self.K.astype(np.float32), "W"),
                     numpy_helper.from_array(self.b.astype(np.float32), "B")]
        ref_nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1], strides=[self.stride] * 2, group=self.group,
                                      dilations=[1, 1]),
                     helper.make_node("Relu", ["c"], ["y"], name="relu")]
        ref = _model(ref_nodes, self.name + "_ref", ref_inits, ho)
        onnx.checker.check_model(train, full_check=True)
        onnx.checker.check_model(ref, full_check=True)
        return train, ref


def fold(p):
    """BN (scale, bias, mean, var) as y = s*x + t."""
    g, beta, mean, var = p
    s = g / np.sqrt(var + EPS)
    return s, beta - mean * s


def embed3(k):
    """A kernel of odd size <= 3 per axis, centred in 3x3 (zero elsewhere)."""
    kh, kw = k.shape[2:]
    out = np.zeros(k.shape[:2] + (3, 3))
    out[:, :, (3 - kh) // 2:(3 - kh) // 2 + kh, (3 - kw) // 2:(3 - kw) // 2 + kw] = k
    return out


def _model(nodes, name, inits, ho):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, HW, HW])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, ho, ho])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="multibranch_blocks")
    m.ir_version = IR
    return m


P1, P0 = (1, 1, 1, 1), (0, 0, 0, 0)


def _repvgg(B, x, stride):
    a, w3, b3 = B.conv_bn(x, B.weight(C, C, 3, 3), P1)
    B.add_kernel(w3, b3)
    c, w1, b1 = B.conv_bn(x, B.weight(C, C, 1, 1), P0)
    B.add_kernel(w1, b1)
    if stride == 1:
        # timm's RepVggBlock: identity = bn(x); x = conv_1x1(x) + conv_kxk(x); x += identity
        return [c, a, B.bn_identity(x)]
    return [c, a]


def _acnet(B, x):
    outs = []
    for kh, kw, pads in ((3, 3, P1), (1, 3, (0, 1, 0, 1)), (3, 1, (1, 0, 1, 0))):
        o, w, b = B.conv_bn(x, B.weight(C, C, kh, kw), pads)
        B.add_kernel(w, b)
        outs.append(o)
    return outs


def _dw(B, x):
    a, w3, b3 = B.conv_bn(x, B.weight(C, 1, 3, 3), P1)
    B.add_kernel(w3, b3)
    c, w1, b1 = B.conv_bn(x, B.weight(C, 1, 1, 1), P0)
    B.add_kernel(w1, b1)
    return [a, c, B.bn_identity(x)]


def _conv1x1_then_kxk(B, x, bias1):
    w1 = B.weight(C, C, 1, 1)
    b1 = B.rng.normal(0.0, 0.3, C) if bias1 else None
    m = B.conv(x, w1, b1, P0)
    o, w3, b3 = B.conv_bn(m, B.weight(C, C, 3, 3), P1)
    k = np.einsum("omhw,mi->oihw", w3, w1[:, :, 0, 0])
    bias = b3 + (np.einsum("omhw,m->o", w3, b1) if bias1 else 0.0)  # right away from the borders only
    B.add_kernel(k, bias)
    a, wa, ba = B.conv_bn(x, B.weight(C, C, 3, 3), P1)
    B.add_kernel(wa, ba)
    return [o, a]


def _avgpool(B, x, bn_first):
    w1 = B.weight(C, C, 1, 1)
    pool = dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1, ceil_mode=0)
    if bn_first:  # the near miss: conv+BN, then the pool pads the BN's bias with zeros
        o, wf, bf = B.conv_bn(x, w1, P0)
        o = B.node("AveragePool", [o], **pool)
    else:
        p = B.bn_params()
        s, t = fold(p)
        wf, bf = w1 * s[:, None, None, None], t
        o = B.bn(B.node("AveragePool", [B.conv(x, w1, None, P0)], **pool), p)
    B.K += np.repeat(np.repeat(wf, 3, axis=2), 3, axis=3) / 9.0
    B.b += bf
    a, wa, ba = B.conv_bn(x, B.weight(C, C, 3, 3), P1)
    B.add_kernel(wa, ba)
    return [o, a]


def _repmixer(B, x):
    """FastViT's RepMixer: x + gamma * (mixer(x) - norm(x)), the mixer a
    depthwise 3x3 conv+BN, a depthwise 1x1 conv+BN and a BN-only branch
    summed, the norm a BN-only branch, gamma a per-channel layer scale
    (a [C,1,1] initializer)."""
    a, w3, b3 = B.conv_bn(x, B.weight(C, 1, 3, 3), P1)
    B.add_kernel(w3, b3)
    c, w1, b1 = B.conv_bn(x, B.weight(C, 1, 1, 1), P0)
    B.add_kernel(w1, b1)
    mixer = B.node("Add", [B.node("Add", [a, c]), B.bn_identity(x)])
    k_mix, b_mix = B.K.copy(), B.b.copy()
    B.K[:], B.b[:] = 0.0, 0.0
    norm = B.bn_identity(x)
    gamma = B.rng.normal(1.0, 0.3, C)
    scaled = B.node("Mul", [B.node("Sub", [mixer, norm]), B.init("gamma", gamma.reshape(C, 1, 1))])
    B.K = gamma[:, None, None, None] * (k_mix - B.K)
    B.K[:, 0, 1, 1] += 1.0  # the residual x, depthwise
    B.b = gamma * (b_mix - B.b)
    return [x, scaled]


def _convs(B, x, ks):
    """One conv with a bias per kernel size in ks, all of x."""
    out = []
    for k in ks:
        w, b = B.weight(C, C // B.group, k, k), B.rng.normal(0.0, 0.3, C)
        out.append(B.conv(x, w, b, P1 if k == 3 else P0))
        B.add_kernel(w, b)
    return out


def _two_convs(B, x, k2):
    return _convs(B, x, (3, k2))


_BUILDERS = {
    "repvgg": (dict(), lambda B, x: _repvgg(B, x, 1)),
    "repvgg_s2": (dict(stride=2), lambda B, x: _repvgg(B, x, 2)),
    "acnet": (dict(), _acnet),
    "dw_multibranch": (dict(group=C), _dw),
    "conv1x1_then_kxk": (dict(), lambda B, x: _conv1x1_then_kxk(B, x, False)),
    "avgpool_branch": (dict(), lambda B, x: _avgpool(B, x, False)),
    "two_convs_sum": (dict(), lambda B, x: _two_convs(B, x, 3)),
    "two_convs_sum_1x1": (dict(), lambda B, x: _two_convs(B, x, 1)),
    "two_dwconvs_sum": (dict(group=C), lambda B, x: _two_convs(B, x, 3)),
    "two_dwconvs_sum_1x1": (dict(group=C), lambda B, x: _two_convs(B, x, 1)),
    "grouped_convs_sum_1x1": (dict(group=4), lambda B, x: _two_convs(B, x, 1)),
    "five_dwconvs_sum": (dict(group=C), lambda B, x: _convs(B, x, (3, 3, 3, 3, 1))),
    "repmixer": (dict(group=C), _repmixer),
    "conv1x1_bias_then_kxk": (dict(), lambda B, x: _conv1x1_then_kxk(B, x, True)),
    "avgpool_branch_bn_first": (dict(), lambda B, x: _avgpool(B, x, True)),
}


def build(name, seed=0, form="bn"):
    """@return (train_model, ref_model), onnx ModelProtos with input "x" and
    output "y", both checked by onnx.checker. form: "bn" (Conv -> BN nodes)
    or "ts" (as torch's exporters write it: Conv+BN pre-folded)."""
    if name not in _BUILDERS:
        raise KeyError(f"unknown family {name!r}: one of {FAMILIES + NEAR_MISSES}")
    kw, body = _BUILDERS[name]
    B = _Block(name, seed, form, **kw)
    return B.models(body(B, "x"))


def has_ts_form(name):
    """Whether form "ts" differs from form "bn" (the family has a Conv -> BN)."""
    t, _ = build(name, form="bn")
    s, _ = build(name, form="ts")
    return [n.op_type for n in t.graph.node] != [n.op_type for n in s.graph.node]


def write_all(d, forms=FORMS, names=None):
    """Write NAME_train.onnx (form "bn"), NAME_ts_train.onnx (form "ts",
    where it differs) and NAME_ref.onnx into d. @return [(label,
    train_path, ref_path)], label NAME or NAME_ts."""
    os.makedirs(d, exist_ok=True)
    out = []
    for name in names or FAMILIES:
        for form in forms:
            if form == "ts" and not has_ts_form(name):
                continue
            train, ref = build(name, form=form)
            label = name if form == "bn" else name + "_ts"
            tp, rp = os.path.join(d, label + "_train.onnx"), os.path.join(d, name + "_ref.onnx")
            onnx.save(train, tp)
            onnx.save(ref, rp)
            out.append((label, tp, rp))
    return out


def _session(m):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    src = m if isinstance(m, str) else m.SerializeToString()
    return ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])


def check(train, ref, seed=0):
    """Run both (ModelProtos or paths) in onnxruntime (CPU, graph
    optimizations off) on the same N(0,1) input. @return max over outputs of
    max|a - b| / max|a| (a: train's output), inf on a shape mismatch."""
    st, sr = _session(train), _session(ref)
    rng = np.random.RandomState(seed)
    feed = {}
    for i in st.get_inputs():
        feed[i.name] = rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
    worst = 0.0
    for a, b in zip(st.run(None, feed), sr.run(None, feed)):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            return float("inf")
        worst = max(worst, float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-30)))
    return worst


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    bad = 0
    for label, tp, rp in write_all(argv[1]):
        e = check(tp, rp)
        ok = e <= TOL
        bad += not ok
        print(f"{label:24s} max rel err {e:.2e}  {'ok' if ok else 'FAIL'}")
    for name in NEAR_MISSES:
        for form in FORMS:
            t, r = build(name, form=form)
            print(f"{name + ('_ts' if form == 'ts' else ''):24s} max rel err {check(t, r):.2e}  "
                  "(near miss: the naive one-conv collapse is wrong at the borders)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
