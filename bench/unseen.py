#!/usr/bin/env python3
"""bench/unseen.py - engine optimize on exports the engine was not tuned on,
written the ways users write them today.

    python3 bench/unseen.py [--dir bench/cache/unseen] [--engine out/bin/engine]
                            [--only NAME]... [--out bench/results/unseen.md]
                            [--jsonl bench/results/unseen.jsonl]

Models (random weights, torch.manual_seed(0), every constant-initialised
parameter randomised too, eval mode, batch 1), exported once into --dir
(kept between runs):
  torch.onnx.export with its defaults (the dynamo exporter, opset 18, the
  weights in an external MODEL.onnx.data file):
    d_resnet50, d_mobilenet_v3_large, d_efficientnet_b0, d_convnext_tiny,
    d_swin_t, d_vit_b_16 (torchvision, 224x224), d_llama (LlamaModel, 2
    layers, grouped-query attention), d_distilbert (2 layers), d_gpt2lm
    (GPT2LMHeadModel, 2 layers, the LM head tied to the embedding); ids [1, 32]
  the TorchScript exporter (dynamo=False, opset 17, weights inline):
    ts_maxvit_t (Einsum attention), ts_shufflenet_v2, ts_r3d_18 (3-D convs),
    ts_t5enc (T5 encoder, 2 layers), ts_wav2vec2 (1-D convs, group norm),
    ts_albert (ALBERT, 2 layers sharing one layer's weights), ts_resnet18_fp16,
    ts_poolformer_s12 and ts_mixer_s16 (timm: pooling and MLP-mixer blocks)
  onnxruntime's own quantizer (QDQ, 4 random calibration images) on
    ts_resnet18: q_resnet18
  older and rarer forms (TorchScript exporter unless named):
    ts_resnet18_op9, ts_squeezenet_op7 (old opsets), ts_lstm_lm (2-layer
    LSTM), ts_gru_clf (1-D conv, bidirectional GRU), ts_unet (ConvTranspose,
    Resize), ts_ssdlite (SSDlite320 detection: NonMaxSuppression, TopK,
    shapes that depend on the data), ts_whisper_enc, ts_clip_text, ts_bart
    (encoder-decoder, two inputs), ts_resnet18_train (training-mode
    BatchNormalization), q_mobilenet_v2 (onnxruntime's QOperator format:
    QLinearConv), qd_clip_text (dynamic quantization: MatMulInteger),
    sk_mlp (skl2onnx, ai.onnx.ml, a batch axis with neither size nor name)

For each: `engine optimize MODEL -o OUT` with the default options, but
--time-limit 1000 so the machine's load cannot change the answer (the
budget of 200 expansions stops it); then
  - exit status and wall time;
  - onnxruntime (CPU, ORT_DISABLE_ALL, so nothing is rewritten behind our
    back) on input and output with the same random inputs (float normal,
    integer ids in [0, 100), symbolic dims as 1): max over outputs of
    max|a-b| / max|a|;
  - the files' sizes (with their external data files), output / input;
  - the engine's census (rule-visible and opaque nodes, known shapes) and
    its cost before and after (the default cost: onnxruntime's, measured,
    with verify).
A model passes when the exit status is 0 and the outputs agree within
1e-4 (fp16: 2e-3); an output more than 1% larger than the input is noted
beside the pass (a copied weight would show there; a rewrite a cost picks,
such as two 1x1 convs merged into one larger kernel, may too).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

DYNAMO_TV = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "convnext_tiny", "swin_t", "vit_b_16"]
TS_TV = {"maxvit_t": (1, 3, 224, 224), "shufflenet_v2_x1_0": (1, 3, 224, 224)}


def _ids():
    import torch
    return torch.randint(0, 1000, (1, 32))


class _Hidden:
    """forward(ids) -> the model's last hidden state (or logits)."""

    @staticmethod
    def wrap(m, field, **kw):
        import torch

        class W(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, ids):
                return getattr(self.m(ids, **kw), field)
        return W().eval()


def export(name, path):
    """Write model `name` to path, every constant-initialised parameter
    randomised first (export_torch.randomize_parameters: a trained model
    has no norm weights of exactly 1 nor biases of exactly 0). @return
    None, or why it could not."""
    import torch
    from export_torch import randomize_parameters
    plain_export = torch.onnx.export

    def randomized_export(model, *args, **kw):
        return plain_export(randomize_parameters(model), *args, **kw)
    torch.onnx.export = randomized_export
    try:
        return export_model(name, path)
    finally:
        torch.onnx.export = plain_export


def export_model(name, path):
    import torch
    import torchvision
    import transformers
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    img = torch.randn(1, 3, 224, 224)
    T = transformers
    if name.startswith("d_") and name[2:] in DYNAMO_TV:
        m = getattr(torchvision.models, name[2:])(weights=None).eval()
        torch.onnx.export(m, (img,), path)
    elif name == "d_llama":
        cfg = T.LlamaConfig(num_hidden_layers=2, hidden_size=256, intermediate_size=512, num_attention_heads=4,
                            num_key_value_heads=2, vocab_size=1000)
        torch.onnx.export(_Hidden.wrap(T.LlamaModel(cfg).eval(), "last_hidden_state", use_cache=False), (_ids(),), path)
    elif name == "d_distilbert":
        m = T.DistilBertModel(T.DistilBertConfig(n_layers=2)).eval()
        torch.onnx.export(_Hidden.wrap(m, "last_hidden_state"), (_ids(),), path)
    elif name == "d_gpt2lm":
        m = T.GPT2LMHeadModel(T.GPT2Config(n_layer=2)).eval()
        torch.onnx.export(_Hidden.wrap(m, "logits", use_cache=False), (_ids(),), path)
    elif name == "ts_maxvit_t" or name == "ts_shufflenet_v2":
        tv = "maxvit_t" if name == "ts_maxvit_t" else "shufflenet_v2_x1_0"
        m = getattr(torchvision.models, tv)(weights=None).eval()
        torch.onnx.export(m, (img,), path, dynamo=False, opset_version=17)
    elif name == "ts_r3d_18":
        m = torchvision.models.video.r3d_18(weights=None).eval()
        torch.onnx.export(m, (torch.randn(1, 3, 8, 112, 112),), path, dynamo=False, opset_version=17)
    elif name == "ts_t5enc":
        m = T.T5EncoderModel(T.T5Config(num_layers=2, d_model=256, d_ff=512, num_heads=4, vocab_size=1000)).eval()
        torch.onnx.export(_Hidden.wrap(m, "last_hidden_state"), (_ids(),), path, dynamo=False, opset_version=17)
    elif name == "ts_wav2vec2":
        m = T.Wav2Vec2Model(T.Wav2Vec2Config(num_hidden_layers=2, hidden_size=256, intermediate_size=512,
                                             num_attention_heads=4)).eval()
        torch.onnx.export(_Hidden.wrap(m, "last_hidden_state"), (torch.randn(1, 16000),), path, dynamo=False,
                          opset_version=17)
    elif name == "ts_albert":
        m = T.AlbertModel(T.AlbertConfig(num_hidden_layers=2, hidden_size=768, intermediate_size=3072,
                                         num_attention_heads=12)).eval()
        torch.onnx.export(_Hidden.wrap(m, "last_hidden_state"), (_ids(),), path, dynamo=False, opset_version=17)
    elif name == "ts_resnet18_fp16":
        m = torchvision.models.resnet18(weights=None).eval().half()
        torch.onnx.export(m, (img.half(),), path, dynamo=False, opset_version=17)
    elif name == "q_resnet18":
        from onnxruntime.quantization import QuantFormat
        fp = path + ".fp32.onnx"
        torch.onnx.export(torchvision.models.resnet18(weights=None).eval(), (img,), fp, dynamo=False,
                          opset_version=17, input_names=["x"])
        quantize_on_images(fp, path, QuantFormat.QDQ)
        os.remove(fp)
    elif name in TIMM:
        import timm
        m = timm.create_model(TIMM[name], pretrained=False).eval()
        torch.onnx.export(m, (img,), path, dynamo=False, opset_version=17)
    elif name in OLD_FORMS:
        return export_old_form(name, path)
    else:
        return "unknown model"
    return None


def quantize_on_images(fp, path, fmt):
    """onnxruntime's static quantizer on model fp (input "x", an image),
    calibrated on 4 random images, into path in format fmt."""
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader, quantize_static
    rng = np.random.default_rng(0)

    class Images(CalibrationDataReader):
        n = 0

        def get_next(self):
            self.n += 1
            return {"x": rng.random((1, 3, 224, 224), dtype=np.float32)} if self.n <= 4 else None
    quantize_static(fp, path, Images(), quant_format=fmt)


# timm models whose blocks are pooling or MLP mixers (TorchScript exporter)
TIMM = {"ts_poolformer_s12": "poolformer_s12", "ts_mixer_s16": "mixer_s16_224"}

OLD_FORMS = ["ts_resnet18_op9", "ts_squeezenet_op7", "ts_lstm_lm", "ts_gru_clf", "ts_unet", "ts_ssdlite",
             "ts_whisper_enc", "ts_clip_text", "ts_bart", "ts_resnet18_train", "q_mobilenet_v2", "qd_clip_text",
             "sk_mlp"]


def export_old_form(name, path):
    """The models of the 'older and rarer forms' group. @return None, or why not."""
    import numpy as np
    import torch
    import torchvision
    import transformers as T
    nn = torch.nn
    img = torch.randn(1, 3, 224, 224)

    def ts(m, args, opset=17, **kw):
        torch.onnx.export(m.eval(), args, path, dynamo=False, opset_version=opset, **kw)

    class LSTMLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.e, self.l, self.o = nn.Embedding(100, 32), nn.LSTM(32, 64, num_layers=2, batch_first=True), \
                nn.Linear(64, 100)

        def forward(self, x):
            return self.o(self.l(self.e(x))[0])

    class GRUClf(nn.Module):
        def __init__(self):
            super().__init__()
            self.c, self.g = nn.Conv1d(8, 16, 3, padding=1), nn.GRU(16, 24, bidirectional=True, batch_first=True)
            self.o = nn.Linear(48, 4)

        def forward(self, x):
            return self.o(self.g(torch.relu(self.c(x)).transpose(1, 2))[0][:, -1])

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                    nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
            self.d2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU())
            self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
            self.u1 = nn.Sequential(nn.Conv2d(32, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 2, 1))

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(a)
            c = nn.functional.interpolate(b, scale_factor=2, mode="bilinear", align_corners=False)[:, :16]
            return self.u1(torch.cat([a, self.up(b) + c], 1))

    def hidden(m, field, **kw):
        return _Hidden.wrap(m.eval(), field, **kw)

    small = dict(d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128)
    if name == "ts_resnet18_op9":
        ts(torchvision.models.resnet18(weights=None), (img,), opset=9)
    elif name == "ts_squeezenet_op7":
        ts(torchvision.models.squeezenet1_0(weights=None), (img,), opset=7)
    elif name == "ts_lstm_lm":
        ts(LSTMLM(), (torch.randint(0, 100, (1, 16)),), opset=14)
    elif name == "ts_gru_clf":
        ts(GRUClf(), (torch.randn(1, 8, 20),), opset=14)
    elif name == "ts_unet":
        ts(UNet(), (torch.randn(1, 3, 64, 64),), opset=13)
    elif name == "ts_ssdlite":
        m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                        num_classes=5)
        ts(m, ([torch.rand(3, 320, 320)],))
    elif name == "ts_whisper_enc":
        cfg = T.WhisperConfig(num_mel_bins=16, max_source_positions=50, **small)
        enc = T.WhisperModel(cfg).get_encoder()
        ts(hidden(enc, "last_hidden_state"), (torch.randn(1, 16, 100),))
    elif name == "ts_clip_text":
        m = T.CLIPTextModel(T.CLIPTextConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                             num_attention_heads=4, vocab_size=1000, max_position_embeddings=32))
        ts(hidden(m, "pooler_output"), (torch.randint(0, 1000, (1, 16)),))
    elif name == "ts_bart":
        m = T.BartModel(T.BartConfig(vocab_size=500, max_position_embeddings=64, **small)).eval()

        class Bart(nn.Module):
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, x, y):
                return self.m(input_ids=x, decoder_input_ids=y).last_hidden_state
        ts(Bart(), (torch.randint(0, 500, (1, 12)), torch.randint(0, 500, (1, 8))))
    elif name == "ts_resnet18_train":
        m = torchvision.models.resnet18(weights=None).train()
        torch.onnx.export(m, (torch.randn(2, 3, 64, 64),), path, dynamo=False, opset_version=15,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    elif name in ("q_mobilenet_v2", "qd_clip_text"):
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic
        fp = path + ".fp32.onnx"
        if name == "qd_clip_text":
            export_old_form("ts_clip_text", fp)
            quantize_dynamic(fp, path, weight_type=QuantType.QInt8)
        else:
            from onnxruntime.quantization.shape_inference import quant_pre_process
            torch.onnx.export(torchvision.models.mobilenet_v2(weights=None).eval(), (img,), fp, dynamo=False,
                              opset_version=13, input_names=["x"])
            quant_pre_process(fp, fp)  # the QOperator quantizer needs every value's type
            quantize_on_images(fp, path, QuantFormat.QOperator)
        os.remove(fp)
    elif name == "sk_mlp":
        from skl2onnx import to_onnx
        from sklearn.neural_network import MLPClassifier
        rng = np.random.default_rng(0)
        x = rng.standard_normal((200, 8)).astype(np.float32)
        est = MLPClassifier(hidden_layer_sizes=(16,), max_iter=50, random_state=0).fit(x, (x[:, 0] > 0).astype(int))
        with open(path, "wb") as f:
            f.write(to_onnx(est, x[:1], options={"zipmap": False}).SerializeToString())
    return None


MODELS = ["d_resnet50", "d_mobilenet_v3_large", "d_efficientnet_b0", "d_convnext_tiny", "d_swin_t", "d_vit_b_16",
          "d_llama", "d_distilbert", "d_gpt2lm", "ts_maxvit_t", "ts_shufflenet_v2", "ts_r3d_18", "ts_t5enc",
          "ts_wav2vec2", "ts_albert", "ts_resnet18_fp16", "q_resnet18"] + list(TIMM) + OLD_FORMS


def size_with_data(path):
    """The model file and every external data file it names."""
    import onnx
    total = os.path.getsize(path)
    m = onnx.load(path, load_external_data=False)
    locs = {e.value for t in m.graph.initializer for e in t.external_data if e.key == "location"}
    for loc in locs:
        total += os.path.getsize(os.path.join(os.path.dirname(path), loc))
    return total


def max_rel_err(a, b):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sa = ort.InferenceSession(a, so, providers=["CPUExecutionProvider"])
    sb = ort.InferenceSession(b, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sa.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if "int" in i.type:
            feeds[i.name] = rng.integers(0, 100, shape).astype(np.int64)
        else:
            dt = np.float16 if "float16" in i.type else np.float32
            feeds[i.name] = rng.standard_normal(shape).astype(dt)
    worst = 0.0
    for x, y in zip(sa.run(None, feeds), sb.run(None, feeds)):
        x, y = x.astype(np.float64), y.astype(np.float64)
        if x.shape != y.shape:
            return float("inf")
        if not x.size:  # a detector that found nothing: nothing to compare but the shape
            continue
        worst = max(worst, float(np.max(np.abs(x - y)) / max(float(np.max(np.abs(x))), 1e-30)))
    return worst


def run_one(engine, d, name):
    row = {"model": name}
    src = os.path.join(d, name + ".onnx")
    if not os.path.exists(src):
        t = time.time()
        try:
            why = export(name, src)
        except Exception as e:  # an exporter that cannot write the model: recorded, not fatal
            why = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        if why:
            row["status"] = "export failed: " + why
            return row
        row["export_s"] = round(time.time() - t, 1)
    out = os.path.join(d, "out", name + ".onnx")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    t = time.time()
    p = subprocess.run([engine, "optimize", src, "-o", out, "--time-limit", "1000"], capture_output=True, text=True)
    row["seconds"] = round(time.time() - t, 2)
    row["exit"] = p.returncode
    m = re.search(r"census: (\d+) nodes: (\d+) rule-visible, (\d+) model ops, (\d+) opaque; shapes known for "
                  r"(\d+) of (\d+)", p.stderr)
    if m:
        row.update(nodes=int(m[1]), visible=int(m[2]), opaque=int(m[4]),
                   shapes=f"{m[5]}/{m[6]}")
    for key, pat in (("cost_before", r"^cost before: ([0-9.]+)"), ("cost_after", r"^cost after: ([0-9.]+)"),
                     ("rules", r"^rules applied: (\d+)")):
        f = re.search(pat, p.stdout, re.M)
        if f:
            row[key] = float(f[1])
    if p.returncode:
        row["status"] = "engine failed: " + (p.stderr.strip().splitlines() or ["?"])[-1][:200]
        return row
    try:
        row["max_rel_err"] = max_rel_err(src, out)
    except Exception as e:  # onnxruntime refusing the output is a failure of ours
        row["status"] = f"onnxruntime: {str(e).splitlines()[0][:200]}"
        return row
    row["size_ratio"] = round(size_with_data(out) / size_with_data(src), 4)
    tol = 2e-3 if "fp16" in name else 1e-4
    row["status"] = "pass" if row["max_rel_err"] <= tol else "FAIL"
    if row["status"] == "pass" and row["size_ratio"] > 1.01:
        row["status"] = f"pass, {100 * (row['size_ratio'] - 1):.0f}% larger"
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=os.path.join(HERE, "cache", "unseen"))
    ap.add_argument("--engine", default=os.path.join(ROOT, "out", "bin", "engine"))
    ap.add_argument("--only", action="append")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "unseen.md"))
    ap.add_argument("--jsonl", default=os.path.join(HERE, "results", "unseen.jsonl"))
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    names = a.only or MODELS
    rows = []
    for name in names:
        row = run_one(a.engine, a.dir, name)
        rows.append(row)
        print(json.dumps(row), flush=True)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    import onnxruntime
    import torch
    lines = ["# Exports the engine was not tuned on", "",
             f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, commit {commit}, torch {torch.__version__}, "
             f"onnxruntime {onnxruntime.__version__}. Produced by `python3 bench/unseen.py` (its docstring says how "
             "each model is exported and what is checked). `engine optimize` with its defaults and "
             "--time-limit 1000 (the budget of 200 expansions stops it).", "",
             "| model | status | nodes | rule-visible | opaque | shapes known | cost before -> after (us) | rules "
             "| max rel err | size out/in | s |", "|---|---|--:|--:|--:|--:|---|--:|--:|--:|--:|"]
    for r in rows:
        cost = f"{r['cost_before']:.1f} -> {r['cost_after']:.1f}" if "cost_after" in r else ""
        err = f"{r['max_rel_err']:.1e}" if "max_rel_err" in r else ""
        lines.append(f"| {r['model']} | {r['status']} | {r.get('nodes', '')} | {r.get('visible', '')} | "
                     f"{r.get('opaque', '')} | {r.get('shapes', '')} | {cost} | {int(r.get('rules', 0))} | {err} | "
                     f"{r.get('size_ratio', '')} | {r.get('seconds', '')} |")
    n_pass = sum(r["status"].startswith("pass") for r in rows)
    lines += ["", f"{n_pass} of {len(rows)} pass."]
    if not a.only:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(a.jsonl, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    print("\n".join(lines))
    return 0 if n_pass == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
