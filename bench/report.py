"""bench/report.py - what every bench/results/*.md begins with: when, at
which commit, on how many cores and how busy the machine was."""
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
