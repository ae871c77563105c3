"""What several benchmark scripts share: the argument parser that shows the script's docstring
as its help, the corpus options, a cold child process that prints JSON, the CPU's name for a
table's caption, and the way to import another group's script.

The scripts live in ``benchmarks/<group>/`` and run as ``python benchmarks/<group>/<script>.py``;
each puts ``benchmarks/`` on the import path first::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
    from _common import bench_parser, cpu_name
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent


def use_group(group: str) -> None:
    """Make the scripts of ``benchmarks/<group>/`` importable (a script's own folder already is)."""
    path = str(BENCHMARKS / group)
    if path not in sys.path:
        sys.path.insert(0, path)


def bench_parser(doc: str, corpus: str | None = None) -> argparse.ArgumentParser:
    """An argument parser whose help is ``doc`` as written; with ``corpus``, also the corpus
    options (:func:`add_corpus_args`, ``corpus`` the default ``--corpus``)."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    if corpus is not None:
        add_corpus_args(ap, corpus)
    return ap


def add_corpus_args(ap: argparse.ArgumentParser, corpus: str) -> None:
    """The options naming the input: ``--corpus`` (default ``corpus``), ``--n-docs`` and
    ``--replicate``."""
    ap.add_argument("--corpus", default=corpus,
                    help="a corpus folder name under the shared corpora, or a path")
    ap.add_argument("--n-docs", type=int, default=None, help="first N documents only")
    ap.add_argument("--replicate", default="1", help="comma-separated repetition factors")


def corpus_source(name: str) -> Path:
    """``name`` as a path, else the shared corpus folder of that name."""
    from phrasekit.settings import corpora_dir

    return Path(name) if Path(name).exists() else corpora_dir() / name


def child_json(code: str, args: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh Python process with ``args`` and read the JSON object it prints
    last (a cold measurement, unaffected by what this process has loaded)."""
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def cpu_name() -> str:
    """The CPU's model name and the flags that decide the arithmetic (``lscpu``'s words)."""
    from phrasekit.encoders.cpu import cpu_flags, cpu_model, shown_flags

    shown = shown_flags(cpu_flags())
    return f"{cpu_model()}, {os.cpu_count()} cores ({', '.join(shown) or 'no AVX2'})"
