"""bench/report.py - what every bench/results/*.md begins with: when, at
which commit, on how many cores and how busy the machine was."""
import os
import re
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What `engine optimize` prints, read by the benches that run it: verify's
# candidates as its rows name them (engine/verify/verify.c), what it wrote
# ("verify: writing the ..."), and the search's seconds and stop reason
# (the backtracking search's "search time:" line or the e-graph's
# "saturation:" line).
VERIFY_CANDIDATES = r"search result|runner-up [0-9]|second opinion|built-ins alone"
VERIFY_PICK = VERIFY_CANDIDATES + r"|input"
WROTE_RE = re.compile(r"^verify: writing the (" + VERIFY_PICK + ")", re.M)
SEARCH_RE = re.compile(r"(?:search time|saturation): ([0-9.]+) s \(stopped: ([a-z -]+);")


def commit():
    """The short hash of HEAD, or "?" outside a git checkout."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip() or "?"


def header(title, what=""):
    """The title line, a blank, then one line: time, commit, cores, the load
    average at the end of the run, and `what` (the command, the runtime)."""
    head = commit()
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    return [f"# {title}", "",
            f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, commit {head}, {os.cpu_count()} cores; "
            f"load average at the end: {load}." + (f" {what}" if what else ""), ""]
