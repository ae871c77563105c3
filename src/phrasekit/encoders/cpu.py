"""What the CPU is: its model name and feature flags (``/proc/cpuinfo``), for speed choices
made at run time (bf16 where it is native, the runtime measured fastest per CPU)."""

from __future__ import annotations

from pathlib import Path


def cpu_flags() -> set[str]:
    """The CPU's feature flags (``/proc/cpuinfo``; empty where it cannot be read)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return {f for line in text.splitlines() if line.startswith("flags")
            for f in line.split(":", 1)[1].split()}


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``unknown CPU`` where it cannot be read)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    return next((line.split(":", 1)[1].strip() for line in text.splitlines()
                 if line.startswith("model name")), "unknown CPU")
