"""Running and observing one case of ``probe_cli.py``: what a folder holds before and after
(for data loss), and a subprocess under a time and peak-RSS budget (for FIFOs, devices and
large inputs)."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from probe_cli_cases import Case

_HASHES: dict[tuple[str, int, int, int, int], str] = {}
LEFTOVER = re.compile(r"\.staging-|\.old-|\.tmp$")


def _signature(path: str) -> str:
    """What a path is and holds: a file's sha256 (cached by inode, size and times), a link's
    target, a node's kind."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(path)
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if not stat.S_ISREG(st.st_mode):
        return f"node:{stat.S_IFMT(st.st_mode)}:{st.st_rdev}"
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return "file:" + _HASHES[key]


def snapshot(paths: list[Path]) -> dict[str, str]:
    """Every path under ``paths`` (symlinks not followed) with its signature."""
    seen: dict[str, str] = {}
    for top in map(str, paths):
        if not os.path.lexists(top):
            continue
        seen[top] = _signature(top)
        if seen[top] == "dir":
            for folder, dirs, files in os.walk(top):
                for name in dirs + files:
                    path = os.path.join(folder, name)
                    seen[path] = _signature(path)
    return seen


def under(path: str, tops: list[str]) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in tops)


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                data = fh.read()
        except OSError:
            continue
        fields = data[data.rfind(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, pp in parents.items() if pp == parent and p not in tree]
        tree.update(children)
        frontier += children
    return sum(rss.get(p, 0) for p in tree)


def run_isolated(case: Case) -> tuple[int, str, str | None]:
    """Run ``phrasekit ARGS`` in its own session; kill it past its time or peak-RSS budget.
    Returns the exit code, the output and what budget it broke (or None)."""
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-m", "phrasekit", *case.args], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=case.cwd, start_new_session=True,
                                env={**os.environ, **(case.env or {})})
        start, peak, over, status, usage = time.monotonic(), 0, None, 0, None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _tree_rss(proc.pid))
            elapsed = time.monotonic() - start
            if peak > case.max_rss_mb * 2**20:
                over = f"peak RSS over {case.max_rss_mb:.0f} MB after {elapsed:.0f} s"
            elif elapsed > case.seconds:
                over = f"still running after {case.seconds:.0f} s"
            if over:
                os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.1)
        proc.returncode = os.waitstatus_to_exitcode(status)
        peak = max(peak, usage.ru_maxrss * 1024 if usage else 0)
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    seconds = time.monotonic() - start
    if seconds > 20 or peak > 1 << 30:
        print(f"  [{case.probe}] {case.args[0]}: {seconds:.0f} s, peak RSS {peak / 2**20:.0f} MB",
              file=sys.stderr)
    return proc.returncode, text, over
