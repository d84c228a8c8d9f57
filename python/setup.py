"""setup.py - copies the C build (out/lib/libtasoc.so, the synth and prove
programs, the axioms and the shipped ruledb) into the package as
tasoc/_native, so an installed tasoc needs no source tree. Run `./configure
&& ninja` first; $TASOC_BUILD_DIR names another build directory (relative
to the repository's top)."""
import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NATIVE = [  # (source, destination under tasoc/_native)
    ("{build}/lib/libtasoc.so", "libtasoc.so"),
    ("{build}/bin/synth", "bin/synth"),
    ("{build}/bin/prove", "bin/prove"),
    ("{root}/opspecs/axioms.ax", "opspecs/axioms.ax"),
    ("{root}/opspecs/wrong.ax", "opspecs/wrong.ax"),
    ("{root}/ruledb/pruned.tasodb", "ruledb/pruned.tasodb"),  # the built-in set
    ("{root}/ruledb/default.tasodb", "ruledb/default.tasodb"),  # the full set it was pruned from
]


class BuildPy(build_py):
    """build_py that also copies the native files into the build."""

    def run(self):
        super().run()
        build = Path(os.environ.get("TASOC_BUILD_DIR", "out"))
        build = build if build.is_absolute() else ROOT / build  # pip runs us elsewhere
        for src, dst in NATIVE:
            s = Path(src.format(build=build, root=ROOT))
            if not s.exists():
                raise SystemExit(f"tasoc: {s} is missing: run ./configure && ninja in {ROOT} "
                                 "before pip install ./python")
            d = Path(self.build_lib) / "tasoc" / "_native" / dst
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, d)


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPy}, distclass=BinaryDistribution)
