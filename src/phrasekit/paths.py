"""The output-path policy: what phrasekit may write or replace, checked before work starts.

An output never resolves (through symlinks, ``..``, hard links or case) to an input or a cache,
never lies inside an input folder, and a folder output never holds an input. FIFOs, devices
and sockets are refused as inputs' and outputs' stand-ins, named as what they are, and so is
the current folder (or one that holds it) as an output folder. Staging and temp names derived
from an output name stay within the file-name limit for any valid name.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import gzip
import hashlib
import os
import re
import site
import stat
import sysconfig
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: The longest file name most file systems take (bytes, ext4/xfs/btrfs/tmpfs).
NAME_MAX = 255
#: Output names longer than this get a shortened, hashed stem in their staging and temp names.
_STEM_MAX = 180
#: The longest CSV / TSV field read: a long document in one cell is input, not an error
#: (Python's ``csv`` stops at 131,072 characters by default).
CSV_FIELD_LIMIT = 2**31 - 1


def csv_reader(fh: Iterable[str], **options: Any) -> Any:
    """``csv.reader(fh, **options)`` reading fields of any length (``CSV_FIELD_LIMIT``)."""
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    return csv.reader(fh, **options)


def special_kind(path: str | Path) -> str | None:
    """``"a FIFO"``, ``"a character device"``, ``"a block device"`` or ``"a socket"`` when
    ``path`` (followed through symlinks) is one, else None (also when it does not exist)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return None


def what_is(path: str | Path) -> str:
    """A short description of what is at ``path``, for messages ("a folder", "a FIFO", ...)."""
    kind = special_kind(path)
    if kind is not None:
        return kind
    path = Path(path)
    if path.is_dir():
        return "a folder"
    if path.is_file():
        return "a file"
    if path.is_symlink():
        return "a broken symlink"
    return "missing"


def real(path: str | Path) -> Path:
    """``path`` absolute, with symlinks and ``..`` resolved (as far as it exists)."""
    return Path(os.path.realpath(os.path.abspath(path)))


def same_path(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name the same file: the same resolved path, or one inode (a hard
    link, or another case of the name on a case-insensitive file system)."""
    if real(a) == real(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def is_inside(child: str | Path, folder: str | Path) -> bool:
    """Whether ``child`` resolves to ``folder`` itself or to a path under it."""
    child_real, folder_real = real(child), real(folder)
    if child_real == folder_real or child_real.is_relative_to(folder_real):
        return True
    try:  # the same folder reached by another name (bind mount, case-insensitive name)
        return any(os.path.samefile(p, folder) for p in (child, *Path(child).absolute().parents)
                   if os.path.exists(p))
    except (OSError, ValueError):
        return False


#: Files that mark a folder as a saved phrasekit artefact (see ``phrasekit.artifacts``).
ARTEFACT_MARKERS = ("manifest.json", "_manifest.json")


def is_artefact(path: str | Path) -> bool:
    """Whether ``path`` is a folder saved by phrasekit (a model, an index, an output set)."""
    return Path(path).is_dir() and any((Path(path) / m).exists() for m in ARTEFACT_MARKERS)


#: Files that mark a folder as a model's (transformers, sentence-transformers, phrasekit).
MODEL_MARKERS = ("config.json", "modules.json", "model.safetensors", "tokenizer.json")


def is_model_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding a model (an artefact, or a transformers or
    sentence-transformers folder)."""
    return is_artefact(path) or (Path(path).is_dir()
                                 and any((Path(path) / m).exists() for m in MODEL_MARKERS))


@functools.lru_cache(maxsize=1)
def protected_roots() -> tuple[tuple[Path, str], ...]:
    """Folders no output may be written into: phrasekit's own package (its packaged models
    among its files) and the folders Python installs packages in (model weight packages)."""
    roots = [(Path(__file__).resolve().parent, "phrasekit's own package files")]
    found = [sysconfig.get_paths().get(k) for k in ("purelib", "platlib")]
    with contextlib.suppress(AttributeError):  # site lacks these in some virtualenvs
        found += [*site.getsitepackages(), site.getusersitepackages()]
    for folder in dict.fromkeys(f for f in found if f):
        if Path(folder).is_dir():
            roots.append((Path(folder), "installed Python packages"))
    return tuple(roots)


def check_not_protected(out: str | Path, option: str) -> None:
    """Refuse, with ``ValueError`` naming ``option``, an output inside an installed package's
    files or phrasekit's own (where the packaged models live)."""
    for root, what in protected_roots():
        if is_inside(out, root):
            raise ValueError(f"{option} {out} is inside {what} ({root}); outputs never go "
                             "into installed files or a model's folder: write elsewhere")


def check_output(out: str | Path, option: str, inputs: Iterable[str | Path] = (),
                 folder: bool = False) -> Path:
    """Refuse, with ``ValueError`` naming ``option``, an output that is a FIFO/device/socket,
    any of ``inputs`` (or inside an input artefact folder), the current folder or one that holds it
    (for a folder output), or a folder output that holds one of ``inputs``."""
    out = Path(out)
    kind = special_kind(out)
    if kind is not None:
        raise ValueError(f"{option} {out} is {kind}, not a regular "
                         f"{'folder' if folder else 'file'}; give a path to write to")
    check_not_protected(out, option)
    if folder and is_inside(Path.cwd(), out):
        raise ValueError(f"{option} {out} is the current folder or holds it, and an output "
                         "folder is replaced as a whole; give a new folder")
    for path in inputs:
        if str(path) == "-":
            _check_not_stdin(out, option, folder)
            continue
        if not os.path.lexists(path):
            continue
        if same_path(out, path):
            what = "folder" if Path(path).is_dir() else "file"
            raise ValueError(f"{option} {out} is the input {what} {path}; it would be "
                             "overwritten, so write elsewhere")
        if is_artefact(path) and is_inside(out, path):
            raise ValueError(f"{option} {out} is inside the input folder {path} (a saved "
                             "phrasekit artefact, checked file by file); write elsewhere")
        if is_model_folder(path) and is_inside(out, path):
            raise ValueError(f"{option} {out} is inside the model folder {path}; outputs "
                             "never go into a model's folder: write elsewhere")
        if folder and is_inside(path, out):
            raise ValueError(f"{option} {out} holds the input {path}, and an output folder is "
                             "replaced as a whole; write elsewhere")
    return out


def _check_not_stdin(out: Path, option: str, folder: bool) -> None:
    """Refuse an output that is (or, for a folder, holds) the file stdin is read from
    (``cmd - -o f < f``)."""
    try:
        st = os.fstat(0)
    except (OSError, ValueError):
        return
    if not stat.S_ISREG(st.st_mode):
        return
    files = [out]
    if folder and out.is_dir():
        files = [Path(root, name) for root, _dirs, names in os.walk(out) for name in names]
    for path in files:
        try:
            other = os.stat(path)
        except (OSError, ValueError):
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            where = "is" if path == out else "holds"
            raise ValueError(f"{option} {out} {where} the file stdin reads ('-'); it would be "
                             "overwritten, so write elsewhere")


def stem(name: str) -> str:
    """``name`` as used inside staging and temp names: itself when short, else its head and a
    hash, so ``.STEM.staging-PID-XXXXXXXX`` fits the file-name limit for any valid name."""
    if len(os.fsencode(name)) <= _STEM_MAX:
        return name
    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
    head = os.fsencode(name)[:_STEM_MAX - 17].decode("utf-8", errors="ignore")
    return f"{head}~{digest}"


def own_siblings(folder: Path, prefix: str, pattern: str) -> list[tuple[Path, int]]:
    """Entries of ``folder`` named exactly ``prefix`` + ``PID`` + ``pattern`` (a regular
    expression for the rest, user text never used as a pattern), with their writer's pid."""
    expr = re.compile(re.escape(prefix) + r"(\d+)" + pattern)
    found = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        match = expr.fullmatch(name)
        if match:
            found.append((folder / name, int(match.group(1))))
    return found


def utf8_problem(name: str, exc: UnicodeDecodeError, path: str | Path | None = None) -> str:
    """``NAME:LINE: not valid UTF-8 (...)``: the line of the first undecodable byte, read
    again line by line from ``path`` (gzipped too), else counted in the bytes ``exc`` holds
    when they are the whole input (standard input)."""
    line = None
    if path is not None:
        path = Path(path)
        opener = gzip.open if path.suffix.lower() == ".gz" else open
        try:
            with opener(path, "rb") as fh:
                line = next((n for n, raw in enumerate(fh, start=1) if not _decodes(raw)),
                            None)
        except (OSError, EOFError, zlib.error):
            line = None
    elif isinstance(exc.object, bytes):
        line = exc.object[:exc.start].count(b"\n") + 1
    where = name if line is None else f"{name}:{line}"
    return f"{where}: not valid UTF-8 (byte 0x{exc.object[exc.start]:02x}: {exc.reason})"


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


#: The files a corpus folder is read from: the first of these, else its ``*.parquet`` shards.
CORPUS_FOLDER_FILES = ("documents.jsonl", "documents.jsonl.gz")


def is_shard_name(name: str) -> bool:
    """Whether an entry of a corpus folder is a Parquet shard: ``.parquet`` in any case, not
    hidden (``.x``, macOS's ``._x``) nor marked private (``_x``, as Spark marks its own)."""
    return name.lower().endswith(".parquet") and not name.startswith((".", "_"))


def corpus_shards(folder: Path) -> list[Path]:
    """The Parquet shard files of a corpus folder, in name order."""
    return sorted(p for p in folder.iterdir() if is_shard_name(p.name) and p.is_file())


def read_with_folder(folder: Path, path: Path) -> bool:
    """Whether ``path`` (a file or folder about to be written) would be read as part of the
    corpus folder ``folder``: one of :data:`CORPUS_FOLDER_FILES`, or, in a folder of Parquet
    shards (no documents file), a ``.parquet`` entry right inside it (a symlink judged by its
    target)."""
    target = real(path) if path.is_symlink() else Path(os.path.abspath(path))
    if not folder.is_dir() or real(target.parent) != real(folder):
        return False
    shards = not any((folder / name).is_file() for name in CORPUS_FOLDER_FILES)
    return target.name in CORPUS_FOLDER_FILES or (shards and is_shard_name(target.name))
