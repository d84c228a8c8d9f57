#!/usr/bin/env python3
"""bench/export_torch.py - real exports for the bench set: torchvision CNNs and
a BERT-base encoder from transformers, written by torch.onnx.export.

    python3 bench/export_torch.py --list
    python3 bench/export_torch.py MODEL -o FILE
    python3 bench/export_torch.py --all [--dir bench/cache] [--force]

Models (file names in the cache: MODEL.onnx):
  tv_resnet50, tv_resnext50_32x4d, tv_inception_v3, tv_squeezenet1_1,
  tv_densenet121, tv_mnasnet1_0   torchvision, weights=None (never a download)
  hf_bert_base                    transformers BertModel(BertConfig()),
                                  input_ids and attention_mask [1, 128]

Random weights (torch.manual_seed(0) before building each model; every
parameter initialisation leaves constant, such as a norm's weight of ones or
a bias of zeros, randomised too: randomize_parameters), eval mode,
batch 1, fp32, opset 17, the classic TorchScript exporter (dynamo=False where
the installed torch has that switch), its defaults otherwise (constant
folding on: in eval mode BatchNormalization is folded into the Conv before
it, as a user's export would be). inception_v3 is built with
aux_logits=False and init_weights=False, input 299x299; the others take
224x224.

torch, torchvision and transformers are bench dependencies only: when one
is missing this script installs it from PyPI with pip (the default wheels;
several GB with their CUDA libraries), after checking the free disk space.
--all skips a file already in the cache unless --force; it prints the time
each export took.
"""
import argparse
import importlib
import importlib.util
import inspect
import os
import shutil
import subprocess
import sys
import time
import warnings

CNNS = {
    "tv_resnet50": ("resnet50", {}, 224),
    "tv_resnext50_32x4d": ("resnext50_32x4d", {}, 224),
    "tv_inception_v3": ("inception_v3", {"aux_logits": False, "init_weights": False}, 299),
    "tv_squeezenet1_1": ("squeezenet1_1", {}, 224),
    "tv_densenet121": ("densenet121", {}, 224),
    "tv_mnasnet1_0": ("mnasnet1_0", {}, 224),
}
MODELS = list(CNNS) + ["hf_bert_base"]
OPSET = 17
SEQ = 128
PIP_PACKAGES = ["torch", "torchvision", "transformers"]
MIN_FREE_GB = 8


def ensure_packages():
    """Install torch/torchvision/transformers with pip when missing."""
    missing = [p for p in PIP_PACKAGES if importlib.util.find_spec(p) is None]
    if not missing:
        return
    free = shutil.disk_usage(sys.prefix).free / 2**30
    if free < MIN_FREE_GB:
        sys.exit(f"export_torch: {', '.join(missing)} missing and only {free:.1f} GB free "
                 f"(need about {MIN_FREE_GB} GB): not installing")
    print(f"export_torch: installing {' '.join(missing)} from PyPI ({free:.0f} GB free)",
          file=sys.stderr)
    rc = subprocess.run([sys.executable, "-m", "pip", "install", "-q"] + missing).returncode
    if rc:
        sys.exit(f"export_torch: pip install {' '.join(missing)} failed (rc {rc})")
    importlib.invalidate_caches()


def randomize_parameters(model, seed=0):
    """Give every parameter that initialisation left constant a random
    value, as training would: norm weights at exactly 1 and biases at
    exactly 0 (and batchnorm statistics at 0 and 1) let a graph tool delete
    x*1 and x+0, a gain no trained model offers, so comparisons with such
    peers would flatter them. Normal-initialised weights are left as they
    are. Norm scales and variances become uniform in [0.5, 1.5], the rest
    normal with standard deviation 0.1. @return model."""
    import torch
    g = torch.Generator().manual_seed(seed)
    named = list(model.named_parameters()) + [(n, b) for n, b in model.named_buffers()
                                              if n.endswith(("running_mean", "running_var"))]
    with torch.no_grad():
        for name, t in named:
            if not t.is_floating_point() or t.numel() == 0 or not bool((t == t.flatten()[0]).all()):
                continue
            scale_like = name.endswith("running_var") or bool((t == 1).all())
            r = torch.rand(t.shape, generator=g) + 0.5 if scale_like else torch.randn(t.shape, generator=g) * 0.1
            t.copy_(r.to(t.dtype))
    return model


def export(module, args, path, input_names, output_names):
    import torch
    kw = dict(opset_version=OPSET, input_names=input_names, output_names=output_names,
              export_params=True, do_constant_folding=True)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kw["dynamo"] = False
    tmp = path + ".tmp"
    warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export.*")
    with torch.no_grad():
        torch.onnx.export(module, args, tmp, **kw)
    os.replace(tmp, path)


def build(name, path):
    import torch
    torch.manual_seed(0)
    if name in CNNS:
        import torchvision
        fn, extra, size = CNNS[name]
        model = randomize_parameters(getattr(torchvision.models, fn)(weights=None, **extra).eval())
        x = torch.randn(1, 3, size, size)
        export(model, (x,), path, ["input"], ["logits"])
    elif name == "hf_bert_base":
        from transformers import BertConfig, BertModel

        config = BertConfig()  # bert-base: 12 layers, hidden 768, 12 heads
        model = randomize_parameters(BertModel(config).eval())

        class Encoder(torch.nn.Module):
            """Tuple outputs (last_hidden_state, pooler_output)."""

            def __init__(self, bert):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask):
                out = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                return_dict=False)
                return out[0], out[1]

        ids = torch.randint(0, config.vocab_size, (1, SEQ), dtype=torch.int64)
        mask = torch.ones(1, SEQ, dtype=torch.int64)
        export(Encoder(model).eval(), (ids, mask), path, ["input_ids", "attention_mask"],
               ["last_hidden_state", "pooler_output"])
    else:
        sys.exit(f"export_torch: unknown model '{name}' (--list)")
    import onnx
    m = onnx.load(path, load_external_data=False)
    return len(m.graph.node)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("-o", "--output")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--dir", default="bench/cache")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    if args.list:
        print("\n".join(MODELS))
        return
    if args.all:
        todo = [(m, os.path.join(args.dir, m + ".onnx")) for m in MODELS]
    elif args.model and args.output:
        todo = [(args.model, args.output)]
    else:
        ap.error("MODEL -o FILE, --all or --list")
    if not args.force:
        todo = [(m, p) for m, p in todo if args.output or not os.path.isfile(p)]
    if not todo:
        return
    ensure_packages()
    import torch
    torch.set_num_threads(1)
    print(f"export_torch: torch {torch.__version__}", file=sys.stderr)
    failed = 0
    for m, p in todo:
        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
        t0 = time.perf_counter()
        try:
            n = build(m, p)
        except Exception as e:  # noqa: BLE001 - report and go on with the others
            failed += 1
            print(f"{m}: export failed: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        print(f"{m}: {n} nodes -> {p} ({time.perf_counter() - t0:.1f} s)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
