"""Where phrasekit finds the shared benchmark data and corpora (tests, benchmarks, ``eval``).

One setting decides it: ``PHRASEKIT_SHARED`` (the folder holding ``data/`` and ``corpora/``).
``PHRASEKIT_DATA`` and ``PHRASEKIT_CORPORA`` override the two sub-folders individually.
Without them, phrasekit looks for a ``shared/`` folder beside the current directory or beside
any parent of the current directory or of the installed package (the layout of a checkout).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path


class SharedDataMissingError(FileNotFoundError):
    """Raised when benchmark data or corpora are needed but cannot be found."""


def _candidates() -> list[Path]:
    starts = [Path.cwd().resolve(), Path(__file__).resolve().parent]
    seen: list[Path] = []
    for start in starts:
        for parent in [start, *start.parents]:
            cand = parent / "shared"
            if cand not in seen:
                seen.append(cand)
    return seen


def shared_dir(required: bool = True) -> Path | None:
    """The shared folder (with ``data/`` and ``corpora/``), or None / an error when absent."""
    env = os.environ.get("PHRASEKIT_SHARED")
    if env:
        path = Path(env).expanduser()
        if path.is_dir():
            return path
        if required:
            raise SharedDataMissingError(f"PHRASEKIT_SHARED={env!r} is not a directory")
        return None
    for cand in _candidates():
        if (cand / "data").is_dir() or (cand / "corpora").is_dir():
            return cand
    if required:
        raise SharedDataMissingError(
            "shared benchmark data not found: set PHRASEKIT_SHARED to the folder that holds "
            "data/ and corpora/ (or PHRASEKIT_DATA to the data folder itself)"
        )
    return None


def _sub_dir(env_name: str, sub: str, required: bool) -> Path | None:
    env = os.environ.get(env_name)
    if env:
        path = Path(env).expanduser()
        if path.is_dir():
            return path
        if required:
            raise SharedDataMissingError(f"{env_name}={env!r} is not a directory")
        return None
    root = shared_dir(required=required)
    if root is None:
        return None
    path = root / sub
    if path.is_dir():
        return path
    if required:
        raise SharedDataMissingError(f"{path} does not exist")
    return None


def data_dir(required: bool = True) -> Path | None:
    """The benchmark datasets folder (``PHRASEKIT_DATA`` or ``<shared>/data``)."""
    return _sub_dir("PHRASEKIT_DATA", "data", required)


def corpora_dir(required: bool = True) -> Path | None:
    """The corpora folder (``PHRASEKIT_CORPORA`` or ``<shared>/corpora``)."""
    return _sub_dir("PHRASEKIT_CORPORA", "corpora", required)


def cache_dir() -> Path:
    """phrasekit's cache folder for files made once per machine (e.g. unpacked weights):
    ``PHRASEKIT_CACHE``, else ``$XDG_CACHE_HOME/phrasekit``, else ``~/.cache/phrasekit``."""
    env = os.environ.get("PHRASEKIT_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "phrasekit"


def vector_cache_dir() -> Path:
    """Where ``topics`` and ``keyphrases`` keep document and phrase vectors between runs
    (``PHRASEKIT_VECTOR_CACHE``, else ``<cache_dir>/vectors``), so a re-run on the same
    corpus and model encodes nothing."""
    env = os.environ.get("PHRASEKIT_VECTOR_CACHE")
    return Path(env).expanduser() if env else cache_dir() / "vectors"


def onnx_cache_dir() -> Path:
    """Where ONNX Runtime graphs exported from a model's weights, and the speeds measured on
    this CPU, are kept (``PHRASEKIT_ONNX_CACHE``, else ``<cache_dir>/onnx``)."""
    env = os.environ.get("PHRASEKIT_ONNX_CACHE")
    return Path(env).expanduser() if env else cache_dir() / "onnx"


def vector_cache_budget() -> int:
    """Bytes the default vector cache may hold (``PHRASEKIT_VECTOR_CACHE_MB``, default 2048):
    the files used least recently are removed beyond it. A value that is not a finite number
    of megabytes >= 0 raises ``ValueError`` naming the setting."""
    raw = os.environ.get("PHRASEKIT_VECTOR_CACHE_MB", "").strip() or "2048"
    try:
        mb = float(raw)
    except ValueError:
        mb = math.nan
    if not math.isfinite(mb) or mb < 0 or mb > MAX_CACHE_MB:
        raise ValueError(f"PHRASEKIT_VECTOR_CACHE_MB must be a number of megabytes >= 0 (at "
                         f"most {MAX_CACHE_MB}), got {raw!r}")
    return int(mb * 2**20)


#: The largest vector cache budget taken (1 PiB in MB): beyond it a number is a typo.
MAX_CACHE_MB = 2**30


def _check_folder_setting(name: str) -> None:
    env = os.environ.get(name)
    if not env:  # unset or empty: the default folder
        return
    path = Path(env).expanduser()
    if os.path.lexists(path) and not path.is_dir():
        raise ValueError(f"{name}={env!r} is not a folder (it is a file or something else)")


def check_environment() -> None:
    """Check every PHRASEKIT_* setting a command may read, before any work: each bad value
    raises ``ValueError`` naming the setting (one line, exit code 2 from the CLI)."""
    vector_cache_budget()
    for name in ("PHRASEKIT_CACHE", "PHRASEKIT_VECTOR_CACHE", "PHRASEKIT_ONNX_CACHE"):
        _check_folder_setting(name)
    device = os.environ.get("PHRASEKIT_DEVICE")
    if device is not None and device.strip():
        name = device.strip().lower()
        if name not in ("auto", "cpu") and not re.fullmatch(r"cuda(:\d+)?", name):
            raise ValueError(f"PHRASEKIT_DEVICE must be auto, cpu, cuda or cuda:N, got "
                             f"{device!r}")
    malloc = os.environ.get("PHRASEKIT_MALLOC", "").strip().lower()
    if malloc not in ("", "default"):
        raise ValueError(f"PHRASEKIT_MALLOC must be 'default' (or unset), got "
                         f"{os.environ['PHRASEKIT_MALLOC']!r}")


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Set torch's intra-op thread count to ``n`` inside a block, then restore it (None: as is).

    Encoders and commands scope their thread setting with this instead of changing it for the
    whole process.
    """
    if not n:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)
