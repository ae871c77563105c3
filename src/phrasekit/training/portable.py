"""Settings as saved in run reports and model configs: no absolute paths.

A report travels with its run folder (copied to another machine, shipped with a model), so
the folders it names are kept as the user gave them when relative and reduced to their name
when absolute.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any


def portable_path(path: str | Path) -> str:
    """``path`` as given when relative, else its last component (the folder's name)."""
    p = Path(path)
    return p.name if p.is_absolute() else str(p)


def portable_settings(cfg: Any, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """``asdict(cfg)`` without the ``drop`` keys, every ``*_dir`` field made portable."""
    return {k: portable_path(v) if k.endswith("_dir") and isinstance(v, str | Path) else v
            for k, v in asdict(cfg).items() if k not in drop}
