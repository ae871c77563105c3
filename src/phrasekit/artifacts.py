"""Saved artefacts that are whole or absent, and checked when read back.

An artefact folder (model folder, entity index, topic output set) carries ``manifest.json``:
each file's sha256 and size (and the shape of ``.npy`` arrays), written last. Readers call
:func:`verify_folder`, which refuses a folder whose files do not match, naming the file.

:func:`staged_folder` builds a folder beside its target and swaps it in with one atomic
``renameat2(RENAME_EXCHANGE)`` (two renames with recovery where the kernel lacks it), so a crash
leaves the old set or the new one, never a mix; leftovers of killed processes are removed on
the next write.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from phrasekit.io import pid_alive, read_json_object, umask, write_json
from phrasekit.paths import check_output, is_inside, own_siblings, real, stem, what_is

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
#: The manifest of a folder of Parquet files: Parquet readers take such a folder as one dataset,
#: skipping names that start with "_" (like Spark's ``_SUCCESS``) but failing on other files.
DATASET_MANIFEST = "_manifest.json"
MANIFEST_FORMAT = "phrasekit-manifest"
_STAGING, _OLD = "staging", "old"


class IntegrityError(ValueError):
    """A saved artefact whose files do not match its manifest (corrupt, swapped or partial)."""


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def tensors_digest(tensors: dict[str, Any], meta: dict[str, Any]) -> str:
    """sha256 over ``meta`` (as sorted JSON) and each torch tensor's name, dtype, shape and
    bytes: stored inside a single-file artefact (checkpoint, feature cache) and recomputed at
    load, so flipped bytes are refused instead of used."""
    import torch

    digest = hashlib.sha256(json.dumps(meta, sort_keys=True).encode("utf-8"))
    for name in sorted(tensors):
        value = tensors[name].detach().contiguous()
        digest.update(f"{name}|{value.dtype}|{tuple(value.shape)}|".encode())
        digest.update(value.view(torch.uint8).reshape(-1).numpy())
    return digest.hexdigest()


def _entry(path: Path) -> dict[str, Any]:
    """Manifest entry of one file: sha256, bytes, and dtype/shape of an ``.npy`` array."""
    entry: dict[str, Any] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    if path.suffix == ".npy":
        import numpy as np

        arr = np.load(path, mmap_mode="r", allow_pickle=False)
        entry.update(dtype=str(arr.dtype), shape=list(arr.shape))
    return entry


def _files(folder: Path) -> list[str]:
    """Relative POSIX names of the regular files under ``folder`` (the manifest excluded)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.name not in (MANIFEST, DATASET_MANIFEST))


def write_manifest(folder: str | Path, kind: str, name: str = MANIFEST) -> dict[str, Any]:
    """Hash every file of ``folder`` into its manifest ``name`` (written last, atomically)."""
    folder = Path(folder)
    manifest = {"format": MANIFEST_FORMAT, "kind": kind,
                "files": {name: _entry(folder / name) for name in _files(folder)}}
    write_json(folder / name, manifest)
    return manifest


def read_manifest(folder: str | Path) -> dict[str, Any] | None:
    """The folder's manifest (``manifest.json``, or ``_manifest.json`` in a Parquet dataset),
    or None when it has none or an unreadable one."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        path = Path(folder) / DATASET_MANIFEST
    if not path.is_file() or path.is_symlink():  # a link out of the folder is not read
        return None
    try:
        manifest = read_json_object(path)
    except (OSError, ValueError):
        return None
    ok = manifest.get("format") == MANIFEST_FORMAT and isinstance(manifest.get("files"), dict)
    return manifest if ok else None


def member_path(folder: Path, name: Any, where: Path) -> Path:
    """The path of manifest entry ``name`` inside ``folder``: a plain relative name with no
    ``..``, absolute or drive part, naming a regular file (not a symlink) that resolves inside
    the folder; anything else raises :class:`IntegrityError` before a byte is read."""
    if (not isinstance(name, str) or not name or "\\" in name or "\x00" in name
            or name.startswith("/") or any(p in ("", ".", "..") for p in name.split("/"))):
        raise IntegrityError(f"{where}: entry {name!r} is not a plain file name inside the "
                             "folder; refusing to read it")
    path = folder / name
    parts = [folder / "/".join(name.split("/")[:i + 1]) for i in range(name.count("/") + 1)]
    if any(p.is_symlink() for p in parts):
        raise IntegrityError(f"{path}: is a symlink; an artefact's files must be inside its "
                             "folder, so it is not read")
    if not is_inside(path, folder):
        raise IntegrityError(f"{path}: resolves outside {folder}; refusing to read it")
    return path


def verify_folder(folder: str | Path, kind: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """Check ``folder`` against its manifest: every entry a plain name inside the folder (no
    symlink, ``..`` or absolute path: checked before any file is opened), present with its size
    and sha256, ``required`` files listed; raise :class:`IntegrityError` naming the first bad
    file. Loaders read only listed files."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: {'is a file, not' if folder.exists() else 'no such'} "
                                f"folder (a saved {kind} is a folder)")
    for name in (MANIFEST, DATASET_MANIFEST):
        if (folder / name).is_symlink():
            raise IntegrityError(f"{folder / name}: is a symlink; an artefact's files must be "
                                 "inside its folder, so it is not read")
    manifest = read_manifest(folder)
    where = folder / MANIFEST
    if manifest is None:
        what = "an unreadable" if where.exists() else "no"
        raise IntegrityError(f"{folder}: {what} {MANIFEST}, so its files cannot be checked "
                             "(an interrupted save, or not written by this phrasekit); save it "
                             "again")
    if manifest.get("kind") != kind:
        raise IntegrityError(f"{where}: holds a {manifest.get('kind')!r}, expected a {kind!r}")
    files: dict[str, Any] = manifest["files"]
    paths = {name: member_path(folder, name, where) for name in files}
    for name in required:
        if name not in files:
            raise IntegrityError(f"{where}: does not list {name}")
    for name, entry in files.items():
        path = paths[name]
        if not path.is_file():
            raise IntegrityError(f"{path}: listed in {MANIFEST} but missing")
        if (not isinstance(entry, dict) or path.stat().st_size != entry.get("bytes")
                or sha256_file(path) != entry.get("sha256")):
            raise IntegrityError(f"{path}: contents differ from {MANIFEST} (corrupt, edited or "
                                 "swapped file)")
    return manifest


# ---------------------------------------------------------------- atomic folder replacement
def _libc_renameat2() -> Any:
    name = ctypes.util.find_library("c")
    func = getattr(ctypes.CDLL(name, use_errno=True), "renameat2", None) if name else None
    if func is not None:
        func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                         ctypes.c_uint]
    return func


_RENAMEAT2 = _libc_renameat2()
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one atomic step; False where the system cannot."""
    if _RENAMEAT2 is None:
        return False
    rc = _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


def _sibling(path: Path, tag: str) -> Path:
    """A fresh folder beside ``path`` named for this process (``.STEM.TAG-PID-XXXXXXXX``)."""
    return Path(tempfile.mkdtemp(prefix=f".{stem(path.name)}.{tag}-{os.getpid()}-",
                                 dir=path.parent))


def remove_stale_siblings(path: Path) -> None:
    """Delete staging/old folders beside ``path`` left by processes that no longer run (matched
    by exact name, never by a pattern made of user text), and put an old set back where a
    killed two-rename swap left none at ``path``."""
    if not path.parent.is_dir():
        return
    for tag in (_OLD, _STAGING):
        for sib, pid in own_siblings(path.parent, f".{stem(path.name)}.{tag}-", r"-[a-z0-9_]+"):
            if pid_alive(pid) or sib.is_symlink() or not sib.is_dir():
                continue
            if tag == _OLD and not os.path.lexists(path) and (sib / "set").is_dir():
                os.replace(sib / "set", path)
                logger.warning("restored %s from an interrupted replacement", path)
            shutil.rmtree(sib, ignore_errors=True)


def _swap_in(staged: Path, path: Path) -> None:
    """Move ``staged`` to ``path``, replacing what is there in one step where possible."""
    if not path.exists():
        os.replace(staged, path)
        return
    if exchange(staged, path):
        shutil.rmtree(staged, ignore_errors=True)  # now holds the old set
        return
    old = _sibling(path, _OLD)
    os.replace(path, old / "set")
    os.replace(staged, path)
    shutil.rmtree(old, ignore_errors=True)


def _unlisted(path: Path, listed: set[str]) -> str | None:
    """The first entry under ``path`` (file, folder or link) that the manifest does not list."""
    for root, dirs, names in os.walk(path):
        for name in sorted(dirs + names):
            rel = (Path(root) / name).relative_to(path).as_posix()
            full = Path(root) / name
            if full.is_symlink() or (not full.is_dir() and rel not in listed):
                return rel
            if full.is_dir() and not any(f.startswith(rel + "/") for f in listed):
                return rel
    return None


def _kind_name(kind: str) -> str:
    """A set's kind as messages name it: ``phrasekit <kind>`` (once)."""
    return kind if kind.startswith("phrasekit") else f"phrasekit {kind}"


def check_replaceable(path: Path, kind: str) -> None:
    """Raise ``ValueError`` unless an existing folder ``path`` may be replaced by a new ``kind``
    set: it is empty, or holds exactly one earlier ``kind`` set and nothing its manifest does
    not list (a user's own file there is named, and nothing is replaced)."""
    if not any(path.iterdir()):
        return
    manifest = read_manifest(path)
    if manifest is None:
        raise ValueError(f"{path} holds other files but no phrasekit manifest (not an earlier "
                         f"{_kind_name(kind)}); not replacing it: choose a new or empty folder")
    if manifest.get("kind") != kind:
        raise ValueError(f"{path} holds a {manifest.get('kind')!r} set, not a {_kind_name(kind)}; "
                         "not replacing it: choose a new or empty folder")
    listed = {str(n) for n in manifest["files"]} | {MANIFEST, DATASET_MANIFEST}
    extra = _unlisted(path, listed)
    if extra is not None:
        raise ValueError(f"{path / extra}: not part of the earlier {kind} in {path} (its "
                         "manifest does not list it); move it out or choose another folder, "
                         "nothing was replaced")


#: What a training run writes into its folder: the checkpoint, the model, the report, and the
#: data, teacher vectors and char pre-training it builds there (hidden temporary names aside).
RUN_NAMES = frozenset({"checkpoint.safetensors", "model", "report.json", "data", "teachers",
                       "char_mimicry", "shards"})


def check_own_names(path: Path, names: frozenset[str] | set[str], writer: str,
                    option: str = "--out") -> set[str]:
    """The names in folder ``path`` (hidden ones aside), after refusing (``ValueError``) one
    that ``writer`` never writes there: a folder it rewrites holds nothing of the user's."""
    if not path.is_dir():
        return set()
    found = {p.name for p in path.iterdir() if not p.name.startswith(".")}
    foreign = sorted(found - names)
    if foreign:
        raise ValueError(f"{option} {path} holds {path / foreign[0]}, which {writer} does "
                         f"not write; choose a new or empty folder (or one {writer} wrote "
                         "before)")
    return found


def check_run_folder(path: str | Path, option: str = "--out") -> None:
    """Raise ``ValueError`` unless ``path`` is absent, empty or an earlier run's folder (only
    names a run writes, a checkpoint or model beside a report, and a ``model/`` that is an
    earlier phrasekit set): a run resumes there and replaces its own files, so a user's file
    among them is refused before any work, never overwritten after hours of training."""
    path = Path(path)
    names = check_own_names(path, RUN_NAMES, "a phrasekit training run", option)
    if not names:
        return
    if names == {"report.json"}:
        raise ValueError(f"{option} {path} holds only a report.json, no checkpoint or model of "
                         "an earlier run; choose a new or empty folder")
    model = path / "model"
    if model.is_dir() and any(model.iterdir()) and read_manifest(model) is None:
        raise ValueError(f"{option} {model} holds files but no phrasekit manifest (not an "
                         "earlier run's model); choose a new or empty folder")


def output_folder(path: str | Path) -> Path:
    """The folder an output ``path`` names: a symlink to a folder is followed (its target is
    replaced, the link kept)."""
    path = Path(path)
    return real(path) if path.is_symlink() else path


def check_folder_path(path: str | Path, inputs: tuple[str | Path, ...] = (),
                      option: str = "--out") -> Path:
    """Raise ``ValueError`` unless ``path`` is a folder or can become one (not a file, FIFO or
    device, not the current folder or one of ``inputs``, under a writable folder); the
    message names ``option``."""
    path = Path(path)
    check_output(path, option, inputs, folder=True)
    if os.path.lexists(path) and not output_folder(path).is_dir():
        raise ValueError(f"{path} is not a folder (it is {what_is(path)})")
    check_parent_writable(output_folder(path))
    return path


def check_output_folder(path: str | Path, kind: str, option: str = "--out") -> Path:
    """Validate an output folder before long work: absent, or a folder ``staged_folder`` may
    replace; its parent creatable. Raises ``ValueError`` naming the path (and ``option``)."""
    path = check_folder_path(path, option=option)
    target = output_folder(path)
    if target.exists():
        check_replaceable(target, kind)
    return path


def check_parent_writable(path: Path) -> None:
    """Raise ``ValueError`` unless ``path``'s nearest existing ancestor is a writable folder."""
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{path}: folder {parent} is not writable")
    try:  # permissions can say yes where the file system says no (/proc, a read-only mount)
        fd, probe = tempfile.mkstemp(prefix=".phrasekit-probe.", dir=parent)
    except OSError as exc:
        raise ValueError(f"{path}: cannot write in folder {parent} ({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def _usual_modes(folder: Path) -> None:
    """Files a library wrote through a private temporary file (mode 0600: sentence-transformers'
    safetensors) get the usual mode, as every other output file."""
    usual = 0o666 & ~umask()
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o077 == 0:
            os.chmod(path, usual)


@contextlib.contextmanager
def staged_folder(path: str | Path, kind: str, manifest: str = MANIFEST) -> Iterator[Path]:
    """Yield an empty folder beside ``path`` (beside a symlink's target); when the block
    succeeds, write its manifest (named ``manifest``) and swap it in for ``path`` at once (an
    existing ``path`` must pass :func:`check_replaceable`, checked again just before)."""
    path = output_folder(check_output_folder(path, kind, option="output folder"))
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_siblings(path)
    staged = _sibling(path, _STAGING)
    try:
        yield staged
        _usual_modes(staged)
        write_manifest(staged, kind, manifest)
        os.chmod(staged, 0o777 & ~umask())
        if path.exists():
            check_replaceable(path, kind)  # a user's file added during the run is kept
        _swap_in(staged, path)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
