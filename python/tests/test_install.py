"""`pip install ./python` works: the package installs (no build isolation,
no dependencies fetched: those are this machine's) with the native files
inside it, and the installed copy runs the TASO README example from
another directory with no environment pointing at the source tree."""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import ROOT
from test_taso_example import TASO_README_EXAMPLE


def test_pip_install(tmp_path):
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASOC_")}
    env["TASOC_BUILD_DIR"] = os.environ.get("TASOC_BUILD_DIR", str(ROOT / "out"))
    subprocess.run(pip + ["wheel", "--no-build-isolation", "--no-deps", "-w", str(tmp_path / "w"),
                          str(ROOT / "python")], check=True, env=env)
    wheel = next((tmp_path / "w").glob("tasoc-*.whl"))
    assert "none-any" not in wheel.name  # a platform wheel: it holds a shared library
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("libtasoc.so", "bin/synth", "bin/prove", "opspecs/axioms.ax",
              "ruledb/pruned.tasodb", "ruledb/default.tasodb"):
        assert "tasoc/_native/" + f in names
    site = tmp_path / "site"
    subprocess.run(pip + ["install", "--no-deps", "--target", str(site), str(wheel)], check=True,
                   env=env)
    env = {k: v for k, v in env.items() if k != "TASOC_BUILD_DIR"}
    env["PYTHONPATH"] = str(site)
    out = tmp_path / "example.onnx"
    code = TASO_README_EXAMPLE.replace("/path/to/save/new/onnx/model", str(out)) + \
        "print(taso.__file__); print(taso.check(taso.prove(taso.synth(max_ops=2, ops=['relu']).path).path).ok)\n"
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0].startswith(str(site)) and p.stdout.splitlines()[1] == "True"
    assert out.exists()
