"""The test suite needs no Python package that ./configure does not install.

./configure installs exactly python/requirements-dev.txt. A package the
suite finds only because someone installed it by hand passes here and
fails on a fresh machine (pip's bdist_wheel once did: nothing installed
`wheel`), so this test reads what the suite imports and what the package's
build needs, and holds both to that list:
- every third-party module imported by the Python the suite runs (the
  package, its tests, the engine's helper scripts, test/*.py and the Python
  inside test/*.sh) comes from a listed distribution;
- python/pyproject.toml's build requirements and dependencies are listed;
- every listed requirement is installed, at a version its floor allows."""
import ast
import re
import sys
from importlib import metadata

from conftest import ROOT

REQS = ROOT / "python" / "requirements-dev.txt"
# Folders whose modules the scanned files import as local ones (sys.path
# entries the suite sets: pytest's rootdir, PYTHONPATH=python, bench/).
LOCAL_DIRS = [ROOT / "python", ROOT / "python" / "tests", ROOT / "test", ROOT / "bench",
              ROOT / "engine"]


def norm(name):
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_req(line):
    """'name>=1.2  # why' -> ('name', '1.2'), or None for a comment."""
    req = line.split("#")[0].strip()
    if not req:
        return None
    m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:>=\s*([0-9][0-9.]*))?", req)
    assert m, f"{REQS.name}: cannot read requirement '{req}' (a name, optionally >=VERSION)"
    return m.group(1), m.group(2)


def requirements():
    return dict(r for r in map(parse_req, REQS.read_text().splitlines()) if r)


def version_key(v):
    return tuple(int(x) for x in re.findall(r"\d+", v.split("+")[0])[:3])


def python_in_shell(text):
    """The Python heredocs of a shell script: python3 ... <<'TAG' ... TAG, or
    one written to a .py file (cat >x.py <<'TAG')."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = re.search(r"(?:python|\.py\b).*<<-?\s*['\"]?(\w+)['\"]?", lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j].strip() != m.group(1):
                j += 1
            out.append("\n".join(lines[i + 1:j]))
            i = j
        i += 1
    return out


def imported_modules(source):
    """Top-level names of every module imported anywhere in source."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a heredoc with shell text in it: read its import lines
        return set(re.findall(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", source, re.M))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def scanned_sources():
    """(path, Python source) of everything the suite runs as Python."""
    files = sorted((ROOT / "python").rglob("*.py")) + sorted((ROOT / "test").glob("*.py")) + \
        sorted((ROOT / "engine").glob("*.py"))
    for f in files:
        if "build" not in f.relative_to(ROOT).parts:
            yield f, f.read_text()
    for f in sorted((ROOT / "test").glob("*.sh")):
        for src in python_in_shell(f.read_text()):
            yield f, src


def is_local(name):
    return any((d / (name + ".py")).is_file() or (d / name / "__init__.py").is_file()
               for d in LOCAL_DIRS)


def test_imports_come_from_listed_packages():
    listed = {norm(n) for n in requirements()}
    providers = metadata.packages_distributions()
    problems = []
    for path, src in scanned_sources():
        for mod in sorted(imported_modules(src)):
            if mod in sys.stdlib_module_names or is_local(mod):
                continue
            dists = {norm(d) for d in providers.get(mod, [])}
            if not dists:
                problems.append(f"{path.relative_to(ROOT)}: imports '{mod}', which no installed "
                                f"package provides")
            elif not dists & listed:
                problems.append(f"{path.relative_to(ROOT)}: imports '{mod}' (from "
                                f"{', '.join(sorted(dists))}), not in {REQS.name}")
    assert not problems, "\n".join(sorted(set(problems)))


def pyproject_requirements():
    """Names in pyproject.toml's build-system requires, dependencies and
    optional-dependencies (read without a TOML parser: Python 3.8 has none)."""
    text = (ROOT / "python" / "pyproject.toml").read_text()
    names = set()
    for m in re.finditer(r"^(?:requires|dependencies|test)\s*=\s*\[(.*?)\]", text, re.M | re.S):
        for item in re.findall(r"\"([^\"]+)\"", m.group(1)):
            names.add(norm(re.match(r"[A-Za-z0-9._-]+", item).group(0)))
    return names


def test_build_and_package_requirements_are_listed():
    need = pyproject_requirements()
    assert {"setuptools", "wheel", "numpy", "onnx"} <= need  # the parse found them
    missing = need - {norm(n) for n in requirements()}
    assert not missing, f"python/pyproject.toml needs {sorted(missing)}, not in {REQS.name}"


def test_listed_requirements_are_installed():
    problems = []
    for name, floor in requirements().items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name}: not installed (./configure installs it)")
            continue
        if floor and version_key(have) < version_key(floor):
            problems.append(f"{name}: {have} installed, {REQS.name} asks >={floor}")
    assert not problems, "\n".join(problems)
