#!/usr/bin/env python3
"""bench/models.py - the six architectures TASO is judged on, as ONNX.

    python3 bench/models.py --list
    python3 bench/models.py MODEL -o FILE [--seed N] [--no-bn]
                            [--basic-layernorm] [--bert-2d]
    python3 bench/models.py --all [--dir bench/cache]

Models: resnet50, resnext50, inception_v3, squeezenet, nasnet_a, bert_base.
Batch 1, fp32, opset 17, random weights (fixed seed), built with
onnx.helper and numpy only. Each model is checked with
onnx.checker.check_model(full_check=True) before it is written.

The graphs follow what torch.onnx.export (eval mode, opset 17, no constant
folding) emits: Conv without bias followed by BatchNormalization (Conv with
bias where the network has no BN, e.g. SqueezeNet; --no-bn gives Conv with
bias everywhere, i.e. BN folded as with do_constant_folding), Relu, MaxPool,
AveragePool, GlobalAveragePool, Flatten and Gemm (transB=1) for the
classifier; Dropout is left out (identity in eval mode).

Simplifications (documented, deliberate):
- inception_v3: no auxiliary classifier (eval mode drops it anyway).
- nasnet_a: NASNet-A Mobile (4 @ 1056; stem 32 filters, F = 44) with the
  cell wiring of the usual PyTorch port: normal cells of five combinations
  (separable 3x3/5x5 convs, 3x3 average pools, identities, adds) and
  reduction cells (separable 3x3/5x5/7x7 stride 2, max/avg pools,
  adds), each cell's inputs adjusted by ReLU-Conv1x1-BN. Where the previous
  cell's output has twice the spatial size, the two-path "factorized
  reduction" is replaced by one path: ReLU, AveragePool 1x1 stride 2,
  Conv1x1, BN. The two stem cells are ordinary reduction cells. No
  auxiliary head, no drop-path.
- bert_base: the encoder only (12 layers, hidden 768, 12 heads, seq 128,
  FFN 3072): the input is the embedding output, a float tensor
  [1, 128, 768]; no attention mask, no pooler. Q/K/V/output/FFN are MatMul
  + Add with the weights as initializers, scores divided by sqrt(64),
  Softmax, Gelu via Erf (x * 0.5 * (1 + erf(x / sqrt 2))), LayerNorm as
  opset-17 LayerNormalization (--basic-layernorm: ReduceMean, Sub, Mul,
  ReduceMean, Add, Sqrt, Div, Mul, Add instead). --bert-2d drops the batch
  axis: activations [128, 768] as in TASO's BERT, so that the projection
  MatMuls are plain 2-D products (the engine's opspecs matmul).
"""
import argparse
import math
import os
import sys
from collections import namedtuple

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # what torch writes for opset 17

# A feature map while building a CNN: its value name, channels, height, width.
T = namedtuple("T", "name c h w")


def out_size(n, k, s, p0, p1, ceil=False):
    num = n + p0 + p1 - k
    return (-(-num // s) if ceil else num // s) + 1


class Builder:
    """Collects nodes and initializers; names values uniquely."""

    def __init__(self, name, seed, bn=True):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.bn = bn
        self.nodes = []
        self.inits = []
        self.count = {}

    def fresh(self, base):
        k = self.count.get(base, 0)
        self.count[base] = k + 1
        return f"{base}_{k}"

    def init(self, base, array):
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, base, shape, std):
        return self.init(base, (self.rng.standard_normal(shape) * std).astype(np.float32))

    def const(self, base, values, dtype=np.int64):
        return self.init(base, np.asarray(values, dtype=dtype))

    def op(self, op_type, inputs, **attrs):
        out = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out + "_n", **attrs))
        return out

    # CNN pieces --------------------------------------------------------

    def conv(self, x, cout, k, s=1, p=None, groups=1, bn=None, relu=True, eps=1e-5,
             gain=2.0, bn_scale=(0.5, 1.5), bias=None):
        """Conv (+ BatchNormalization) (+ Relu). k, s, p: int or (h, w).
        Weights: normal with std sqrt(gain / fan_in) (He for gain 2); BN
        scale uniform in bn_scale (small on residual branches so that the
        random network's activations stay of order 1). A bias only without
        BN unless bias says otherwise."""
        kh, kw = (k, k) if isinstance(k, int) else k
        sh, sw = (s, s) if isinstance(s, int) else s
        if p is None:
            p = (kh // 2, kw // 2)
        ph, pw = (p, p) if isinstance(p, int) else p
        use_bn = self.bn if bn is None else (bn and self.bn)
        fan_in = (x.c // groups) * kh * kw
        w = self.weight("w", (cout, x.c // groups, kh, kw), math.sqrt(gain / fan_in))
        ins = [x.name, w]
        if (not use_bn) if bias is None else bias:
            ins.append(self.weight("b", (cout,), 0.01))
        y = self.op("Conv", ins, kernel_shape=[kh, kw], strides=[sh, sw],
                    pads=[ph, pw, ph, pw], dilations=[1, 1], group=groups)
        if use_bn:
            y = self.batchnorm(y, cout, eps, bn_scale)
        if relu:
            y = self.op("Relu", [y])
        return T(y, cout, out_size(x.h, kh, sh, ph, ph), out_size(x.w, kw, sw, pw, pw))

    def batchnorm(self, y, c, eps=1e-5, scale_range=(0.5, 1.5)):
        r = self.rng
        scale = self.init("bn_scale", r.uniform(*scale_range, c).astype(np.float32))
        bias = self.init("bn_bias", r.normal(0, 0.1, c).astype(np.float32))
        mean = self.init("bn_mean", r.normal(0, 0.1, c).astype(np.float32))
        var = self.init("bn_var", r.uniform(0.5, 1.5, c).astype(np.float32))
        return self.op("BatchNormalization", [y, scale, bias, mean, var],
                       epsilon=eps, momentum=0.9)

    def bn_only(self, x):
        return x._replace(name=self.batchnorm(x.name, x.c))

    def relu(self, x):
        return x._replace(name=self.op("Relu", [x.name]))

    def pool(self, x, kind, k, s, p=0, ceil=False, count_pad=False):
        attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p],
                     ceil_mode=int(ceil))
        if kind == "MaxPool":
            attrs["dilations"] = [1, 1]
        else:
            attrs["count_include_pad"] = int(count_pad)
        y = self.op(kind, [x.name], **attrs)
        return T(y, x.c, out_size(x.h, k, s, p, p, ceil), out_size(x.w, k, s, p, p, ceil))

    def add(self, a, b):
        assert (a.c, a.h, a.w) == (b.c, b.h, b.w), (a, b)
        return a._replace(name=self.op("Add", [a.name, b.name]))

    def concat(self, xs):
        assert len({(x.h, x.w) for x in xs}) == 1, xs
        return T(self.op("Concat", [x.name for x in xs], axis=1),
                 sum(x.c for x in xs), xs[0].h, xs[0].w)

    def classifier(self, x, classes=1000, relu_first=False):
        if relu_first:
            x = self.relu(x)
        g = self.op("GlobalAveragePool", [x.name])
        f = self.op("Flatten", [g], axis=1)
        w = self.weight("fc_w", (classes, x.c), 1.0 / math.sqrt(x.c))
        b = self.weight("fc_b", (classes,), 0.01)
        return self.op("Gemm", [f, w, b], alpha=1.0, beta=1.0, transB=1)

    def finish(self, inputs, outputs):
        graph = helper.make_graph(self.nodes, self.name, inputs, outputs, self.inits)
        model = helper.make_model(graph, producer_name="bench/models.py",
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        onnx.checker.check_model(model, full_check=True)
        return model


def image_input(b, size):
    x = T("input", 3, size, size)
    vi = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])
    return x, vi


def logits_output(name):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 1000])


# ResNet-50 / ResNeXt-50 (torchvision v1.5: stride on the 3x3) ------------

def resnet(name, seed, bn, groups, width_per_group):
    b = Builder(name, seed, bn)
    x, vi = image_input(b, 224)
    x = b.conv(x, 64, 7, 2, 3)
    x = b.pool(x, "MaxPool", 3, 2, 1)
    for stage, (planes, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
        width = planes * width_per_group // 64 * groups
        for i in range(blocks):
            stride = 2 if (i == 0 and stage > 0) else 1
            y = b.conv(x, width, 1)
            y = b.conv(y, width, 3, stride, 1, groups=groups)
            y = b.conv(y, planes * 4, 1, relu=False, bn_scale=(0.1, 0.3),
                       gain=2.0 if bn else 0.05)
            short = x
            if i == 0:
                short = b.conv(x, planes * 4, 1, stride, 0, relu=False)
            x = b.relu(b.add(y, short))
    out = b.classifier(x)
    return b.finish([vi], [logits_output(out)])


def resnet50(seed, bn=True, **_):
    return resnet("resnet50", seed, bn, groups=1, width_per_group=64)


def resnext50(seed, bn=True, **_):
    return resnet("resnext50_32x4d", seed, bn, groups=32, width_per_group=4)


# SqueezeNet 1.1 (no BN in the original: Conv with bias) -----------------

def squeezenet(seed, **_):
    b = Builder("squeezenet1_1", seed, bn=False)
    x, vi = image_input(b, 224)

    def fire(x, squeeze, e1, e3):
        s = b.conv(x, squeeze, 1)
        return b.concat([b.conv(s, e1, 1), b.conv(s, e3, 3, 1, 1)])

    x = b.conv(x, 64, 3, 2, 0)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    x = fire(x, 16, 64, 64)
    x = fire(x, 16, 64, 64)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    x = fire(x, 32, 128, 128)
    x = fire(x, 32, 128, 128)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    x = fire(x, 48, 192, 192)
    x = fire(x, 48, 192, 192)
    x = fire(x, 64, 256, 256)
    x = fire(x, 64, 256, 256)
    x = b.conv(x, 1000, 1)  # final conv + relu, then global average pool
    g = b.op("GlobalAveragePool", [x.name])
    out = b.op("Flatten", [g], axis=1)
    return b.finish([vi], [logits_output(out)])


# Inception-v3 (torchvision; BasicConv2d = Conv + BN(eps 1e-3) + Relu) ---

def inception_v3(seed, bn=True, **_):
    b = Builder("inception_v3", seed, bn)
    x, vi = image_input(b, 299)

    def c(x, cout, k, s=1, p=0):
        return b.conv(x, cout, k, s, p, eps=1e-3)

    def avg(x):
        return b.pool(x, "AveragePool", 3, 1, 1, count_pad=True)

    def block_a(x, pool_features):
        b1 = c(x, 64, 1)
        b5 = c(c(x, 48, 1), 64, 5, 1, 2)
        b3 = c(c(c(x, 64, 1), 96, 3, 1, 1), 96, 3, 1, 1)
        bp = c(avg(x), pool_features, 1)
        return b.concat([b1, b5, b3, bp])

    def block_b(x):
        b3 = c(x, 384, 3, 2)
        bd = c(c(c(x, 64, 1), 96, 3, 1, 1), 96, 3, 2)
        return b.concat([b3, bd, b.pool(x, "MaxPool", 3, 2)])

    def block_c(x, c7):
        b1 = c(x, 192, 1)
        b7 = c(c(c(x, c7, 1), c7, (1, 7), 1, (0, 3)), 192, (7, 1), 1, (3, 0))
        bd = c(x, c7, 1)
        bd = c(bd, c7, (7, 1), 1, (3, 0))
        bd = c(bd, c7, (1, 7), 1, (0, 3))
        bd = c(bd, c7, (7, 1), 1, (3, 0))
        bd = c(bd, 192, (1, 7), 1, (0, 3))
        bp = c(avg(x), 192, 1)
        return b.concat([b1, b7, bd, bp])

    def block_d(x):
        b3 = c(c(x, 192, 1), 320, 3, 2)
        b7 = c(c(c(x, 192, 1), 192, (1, 7), 1, (0, 3)), 192, (7, 1), 1, (3, 0))
        b7 = c(b7, 192, 3, 2)
        return b.concat([b3, b7, b.pool(x, "MaxPool", 3, 2)])

    def block_e(x):
        b1 = c(x, 320, 1)
        s = c(x, 384, 1)
        b3 = b.concat([c(s, 384, (1, 3), 1, (0, 1)), c(s, 384, (3, 1), 1, (1, 0))])
        d = c(c(x, 448, 1), 384, 3, 1, 1)
        bd = b.concat([c(d, 384, (1, 3), 1, (0, 1)), c(d, 384, (3, 1), 1, (1, 0))])
        bp = c(avg(x), 192, 1)
        return b.concat([b1, b3, bd, bp])

    x = c(x, 32, 3, 2)
    x = c(x, 32, 3)
    x = c(x, 64, 3, 1, 1)
    x = b.pool(x, "MaxPool", 3, 2)
    x = c(x, 80, 1)
    x = c(x, 192, 3)
    x = b.pool(x, "MaxPool", 3, 2)
    x = block_a(x, 32)
    x = block_a(x, 64)
    x = block_a(x, 64)
    x = block_b(x)
    for c7 in (128, 160, 160, 192):
        x = block_c(x, c7)
    x = block_d(x)
    x = block_e(x)
    x = block_e(x)
    assert (x.c, x.h, x.w) == (2048, 8, 8), x
    out = b.classifier(x)
    return b.finish([vi], [logits_output(out)])


# NASNet-A Mobile ----------------------------------------------------------

def nasnet_a(seed, bn=True, **_):
    b = Builder("nasnet_a_mobile", seed, bn)
    x, vi = image_input(b, 224)

    def sep(x, cout, k, s):
        """ReLU, depthwise kxk (stride s) + pointwise 1x1, BN."""
        x = b.relu(x)
        x = b.conv(x, x.c, k, s, k // 2, groups=x.c, bn=False, relu=False, bias=False)
        return b.conv(x, cout, 1, relu=False, gain=0.5, bn_scale=(0.3, 0.6))

    def branch(x, cout, k, s=1):
        """The NASNet separable branch: two separable convs."""
        return sep(sep(x, cout, k, s), cout, k, 1)

    def adjust(x, f, h):
        """ReLU-Conv1x1-BN to f channels, halving the size first if needed."""
        x = b.relu(x)
        if x.h != h:
            assert out_size(x.h, 1, 2, 0, 0) == h, (x, h)
            x = b.pool(x, "AveragePool", 1, 2)
        return b.conv(x, f, 1, relu=False)

    def avg3(x, s=1):
        return b.pool(x, "AveragePool", 3, s, 1)

    def normal(x, prev, f):
        right = adjust(x, f, x.h)
        left = adjust(prev, f, x.h)
        c0 = b.add(branch(right, f, 5), branch(left, f, 3))
        c1 = b.add(branch(left, f, 5), branch(left, f, 3))
        c2 = b.add(avg3(right), left)
        c3 = b.add(avg3(left), avg3(left))
        c4 = b.add(branch(right, f, 3), right)
        return b.concat([left, c0, c1, c2, c3, c4])

    def reduction(x, prev, f):
        right = adjust(x, f, x.h)
        left = adjust(prev, f, x.h)
        c0 = b.add(branch(right, f, 5, 2), branch(left, f, 7, 2))
        c1 = b.add(b.pool(right, "MaxPool", 3, 2, 1), branch(left, f, 7, 2))
        c2 = b.add(avg3(right, 2), branch(left, f, 5, 2))
        c3 = b.add(avg3(c0), c1)
        c4 = b.add(branch(c0, f, 3), b.pool(right, "MaxPool", 3, 2, 1))
        return b.concat([c1, c2, c3, c4])

    f = 44  # penultimate filters 1056 / 24
    stem = b.conv(x, 32, 3, 2, 0, relu=False)
    s0 = reduction(stem, stem, f // 4)
    s1 = reduction(s0, stem, f // 2)
    prev, cur = s0, s1
    for i, mult in enumerate((1, 2, 4)):
        if i > 0:
            prev, cur = cur, reduction(cur, prev, f * mult)
        for _ in range(4):
            prev, cur = cur, normal(cur, prev, f * mult)
    assert (cur.c, cur.h, cur.w) == (1056, 7, 7), cur
    out = b.classifier(cur, relu_first=True)
    return b.finish([vi], [logits_output(out)])


# BERT-base encoder -------------------------------------------------------

def bert_base(seed, basic_layernorm=False, two_d=False, **_):
    b = Builder("bert_base", seed)
    seq, hid, heads, ffn, layers = 128, 768, 12, 3072, 12
    dh = hid // heads
    # two_d: activations [seq, hidden] (as TASO's BERT) instead of [1, seq, hidden]
    lead = [] if two_d else [1]
    vi = helper.make_tensor_value_info("input", TensorProto.FLOAT, lead + [seq, hid])
    x = "input"

    def linear(x, n_in, n_out):
        w = b.weight("w", (n_in, n_out), 0.02)
        y = b.op("MatMul", [x, w])
        return b.op("Add", [y, b.weight("b", (n_out,), 0.02)])

    def layernorm(x):
        gamma = b.init("ln_g", b.rng.uniform(0.8, 1.2, hid).astype(np.float32))
        beta = b.init("ln_b", b.rng.normal(0, 0.02, hid).astype(np.float32))
        if not basic_layernorm:
            return b.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-12)
        mean = b.op("ReduceMean", [x], axes=[-1], keepdims=1)  # axes attr in opset 17
        d = b.op("Sub", [x, mean])
        var = b.op("ReduceMean", [b.op("Mul", [d, d])], axes=[-1], keepdims=1)
        eps = b.const("eps", 1e-12, np.float32)
        std = b.op("Sqrt", [b.op("Add", [var, eps])])
        return b.op("Add", [b.op("Mul", [b.op("Div", [d, std]), gamma]), beta])

    def heads_of(x, perm):
        r = b.op("Reshape", [x, b.const("shape", lead + [seq, heads, dh])])
        if two_d:
            perm = [p - 1 for p in perm[1:]]
        return b.op("Transpose", [r], perm=perm)

    scale = b.const("sqrt_dh", math.sqrt(dh), np.float32)
    sqrt2 = b.const("sqrt2", math.sqrt(2.0), np.float32)
    one = b.const("one", 1.0, np.float32)
    half = b.const("half", 0.5, np.float32)
    for _ in range(layers):
        q = heads_of(linear(x, hid, hid), [0, 2, 1, 3])
        k = heads_of(linear(x, hid, hid), [0, 2, 3, 1])
        v = heads_of(linear(x, hid, hid), [0, 2, 1, 3])
        scores = b.op("Div", [b.op("MatMul", [q, k]), scale])
        probs = b.op("Softmax", [scores], axis=-1)
        perm = [1, 0, 2] if two_d else [0, 2, 1, 3]
        ctx = b.op("Transpose", [b.op("MatMul", [probs, v])], perm=perm)
        ctx = b.op("Reshape", [ctx, b.const("shape", lead + [seq, hid])])
        x = layernorm(b.op("Add", [linear(ctx, hid, hid), x]))
        h = linear(x, hid, ffn)
        erf = b.op("Erf", [b.op("Div", [h, sqrt2])])
        h = b.op("Mul", [b.op("Mul", [h, b.op("Add", [erf, one])]), half])
        x = layernorm(b.op("Add", [linear(h, ffn, hid), x]))
    out = helper.make_tensor_value_info(x, TensorProto.FLOAT, lead + [seq, hid])
    return b.finish([vi], [out])


MODELS = {
    "resnet50": (resnet50, "ResNet-50, 224x224, Conv+BN"),
    "resnext50": (resnext50, "ResNeXt-50 32x4d, 224x224, grouped Conv+BN"),
    "inception_v3": (inception_v3, "Inception-v3, 299x299, Conv+BN(eps 1e-3)"),
    "squeezenet": (squeezenet, "SqueezeNet 1.1, 224x224, Conv with bias"),
    "nasnet_a": (nasnet_a, "NASNet-A Mobile 4@1056, 224x224, separable convs"),
    "bert_base": (bert_base, "BERT-base encoder, 12 layers, seq 128, hidden 768"),
}


def build(name, seed=1, bn=True, basic_layernorm=False, two_d=False):
    fn = MODELS[name][0]
    return fn(seed, bn=bn, basic_layernorm=basic_layernorm, two_d=two_d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", help="one of --list")
    ap.add_argument("-o", "--output", help="output file (default DIR/MODEL.onnx)")
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "cache"))
    ap.add_argument("--list", action="store_true", help="list the models")
    ap.add_argument("--all", action="store_true", help="build every model into --dir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-bn", action="store_true", help="Conv with bias instead of Conv+BN")
    ap.add_argument("--basic-layernorm", action="store_true",
                    help="bert_base: LayerNorm from basic ops")
    ap.add_argument("--bert-2d", action="store_true",
                    help="bert_base: activations [128, 768], no batch axis")
    a = ap.parse_args()
    if a.list:
        for name, (_, desc) in MODELS.items():
            print(f"{name:14} {desc}")
        return 0
    names = list(MODELS) if a.all else [a.model]
    if names == [None] or any(n not in MODELS for n in names):
        ap.error(f"name a model: {', '.join(MODELS)}")
    if a.output and len(names) > 1:
        ap.error("-o with one model only")
    for name in names:
        path = a.output or os.path.join(a.dir, name + ".onnx")
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        model = build(name, a.seed, not a.no_bn, a.basic_layernorm, a.bert_2d)
        tmp = path + ".tmp"
        onnx.save(model, tmp)
        os.replace(tmp, path)
        print(f"{name}: {len(model.graph.node)} nodes -> {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
