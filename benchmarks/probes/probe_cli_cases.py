"""Cases of ``probe_cli.py`` (issue 47): outputs that are inputs or user files, special output
paths, and artefact folders that point outside themselves.

Each builder takes its own empty folder and returns :class:`Case` objects; ``probe_cli.py`` runs
them. The expected outcome of every case is explicit: ``named`` (text the one-line exit-2
message must hold; a tuple means any of them) or ``check`` (a test of the result of exit 0);
a case with both accepts either outcome.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.models.backbones import packaged_model_dir

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "fixtures" / "corpus_small.jsonl"
runner = CliRunner()


@dataclass
class Case:
    """One probe: the arguments, the text the message must hold (refusals) or a check of the
    result (acceptances), and where outputs would appear.

    ``folder`` is hashed before and after (every file, link and node under it): a change to a
    file that is not the output of a successful run is data loss, as is ``intact`` failing
    after the run. ``isolated`` runs the command in a subprocess under ``seconds`` and
    ``max_rss_mb`` (FIFOs, devices, large inputs). ``security``: exit 0 means a file outside an
    artefact folder was read; ``leak`` changes that outside file, and a message that changes
    with it tells the user something about the file. ``env``: environment variables set for the
    run."""

    probe: str
    args: list[str]
    named: str | tuple[str, ...] | None = None
    check: Callable[[], bool] | None = None
    out: Path | None = None
    folder: Path | None = None
    intact: Callable[[], bool] | None = None
    cwd: Path | None = None
    isolated: bool = False
    seconds: float = 120.0
    max_rss_mb: float = 2048.0
    security: bool = False
    leak: Callable[[], None] | None = None
    env: dict[str, str] | None = None


def cli(*args: object) -> list[str]:
    return [str(a) for a in args]


def ok(*args: object) -> bool:
    """The command runs with exit 0 (a later use of an input left intact)."""
    return runner.invoke(app, cli(*args)).exit_code == 0


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def small_corpus(path: Path, n: int = 12) -> Path:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()[:n]
    return write(path, "\n".join(lines) + "\n")


def corpus_and_names(root: Path) -> tuple[Path, Path]:
    """The small corpus and the names file most case builders start from."""
    return small_corpus(root / "in.jsonl"), write(root / "names.txt", NAMES)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def sign(folder: Path, name: str, source: Path | None = None, data: bytes | None = None) -> None:
    """Set ``name``'s manifest entry to the sha256 and size of ``source`` (or ``data``): an
    entry that matches a file wherever it is."""
    m = manifest(folder)
    raw = data if data is not None else Path(source or folder / name).read_bytes()
    m["files"][name] = {"sha256": sha256(raw), "bytes": len(raw)}
    (folder / "manifest.json").write_text(json.dumps(m, indent=2), encoding="utf-8")


def resign(folder: Path) -> None:
    """Recompute the manifest entries of the files inside ``folder`` (hide an edit)."""
    m = manifest(folder)
    for name, entry in m["files"].items():
        path = folder / name
        if path.is_file() and not path.is_symlink() and path.resolve().parent == folder.resolve():
            raw = path.read_bytes()
            entry.update(sha256=sha256(raw), bytes=len(raw))
    (folder / "manifest.json").write_text(json.dumps(m, indent=2), encoding="utf-8")


def edit_json(path: Path, **changes: object) -> None:
    cfg = json.loads(path.read_text(encoding="utf-8"))
    for key, value in changes.items():
        target = cfg
        *parents, leaf = key.split("__")
        for p in parents:
            target = target[p]
        target[leaf] = value
    path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")


def build_index(names: Path, out: Path, *extra: str) -> Path:
    res = runner.invoke(app, cli("index", "build", names, "--out", out, "-m", "string", "-q",
                                 *extra))
    assert res.exit_code == 0, res.output
    return out


def build_topics(corpus: Path, out: Path) -> Path:
    res = runner.invoke(app, cli("topics", corpus, "--out", out, *TOPICS))
    assert res.exit_code == 0, res.output
    return out


def model_copy(dest: Path, name: str = "pearl-minilm") -> Path:
    shutil.copytree(packaged_model_dir(name), dest)
    return dest


def null_device(path: Path) -> Path | None:
    """A character device like /dev/null at ``path`` (never /dev/null itself: a command that
    renames over its --out would replace the system's), or None without CAP_MKNOD."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        return None
    return path


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if ".staging-" in p.name or ".old-" in p.name]


def is_set(folder: Path, *names: str) -> bool:
    return folder.is_dir() and all((folder / n).is_file() for n in ("manifest.json", *names))


#: topics on the 12-document corpus, quick.
TOPICS = ("-m", "string", "-k", "2", "--min-df", "1", "-q")
NAMES = "New York City\nLos Angeles\nChicago\nHouston\nPhoenix\nPhiladelphia\n"


# ------------------------------------------------------------------ --out is an input
def out_is_input_cases(root: Path) -> list[Case]:
    probe = "--out is an input (same, symlink, .., hard link)"
    corpus = small_corpus(root / "in.jsonl", 6)
    jcorpus = small_corpus(root / "in.json", 6)
    lines = write(root / "lines.txt", "paris\nlondon\n")
    left = write(root / "left.csv", "id,title\n1,New York\n2,Chicago\n")
    right = write(root / "right.csv", "id,title\n1,NYC\n2,Chicago IL\n")
    names = write(root / "names.txt", NAMES)
    queries = write(root / "queries.txt", "chicago\n")
    index = build_index(names, root / "idx")
    (root / "sub").mkdir()
    os.symlink(root, root / "dirlink")

    def forms(path: Path) -> list[Path]:
        """The input itself, a symlink to it, a path through `..`, a hard link, and the
        same file through a symlinked folder."""
        link, hard = root / f"link-{path.name}", root / f"hard-{path.name}"
        os.symlink(path.name, link)
        os.link(path, hard)
        return [path, link, root / "sub" / ".." / path.name, hard, root / "dirlink" / path.name]

    cases = []
    for out in forms(corpus):
        cases.append(Case(probe, cli("keyphrases", corpus, "--out", out, "-m", "string", "-q"),
                          "--out"))
    for out in forms(jcorpus):
        cases.append(Case(probe, cli("phrases", jcorpus, "--out", out, "--min-df", "1", "-q"),
                          "--out"))
    for out in forms(lines)[:4]:
        cases.append(Case(probe, cli("encode", lines, "--out", out, "-m", "string", "-q"),
                          "--out"))
    left_forms, right_forms = forms(left), forms(right)
    for out in (left, right, left_forms[1], left_forms[2], right_forms[3], right_forms[4]):
        cases.append(Case(probe, cli("join", left, right, "--left-on", "title", "--right-on",
                                     "title", "--out", out, "-m", "string", "-q"), "--out"))
    for out in forms(queries)[:2]:
        cases.append(Case(probe, cli("index", "query", index, "--queries", queries, "-o", out,
                                     "-q"), "--out"))
    cases += [
        Case(probe, cli("mentions", corpus, "--out", corpus, "-m", "string", "-q"), "--out"),
        Case(probe, cli("topics", corpus, "--out", corpus, *TOPICS), "--out"),
        Case(probe, cli("index", "build", names, "--out", names, "-m", "string", "-q"),
             "--out"),
    ]
    return cases


# ------------------------------------------------------------------ output sets and caches
def output_set_cases(root: Path) -> list[Case]:
    probe = "output sets and caches (user files, inputs inside, links)"
    corpus, names = corpus_and_names(root)
    notes = write(root / "notes.json", '{"mine": true}\n')
    os.symlink("in.jsonl", root / "corpus-link.jsonl")
    tset = build_topics(corpus, root / "tset")
    idx = build_index(names, root / "idx")

    def topics(*extra: object, corpus_: Path = corpus) -> list[str]:
        return cli("topics", corpus_, *extra, *TOPICS)

    def query_works(folder: Path = idx) -> Callable[[], bool]:
        return lambda: ok("index", "query", folder, "chicago", "-k", "1", "-q")

    cases = [Case(probe, topics("--phrase-cache", cache, "--out", root / f"o{i}"),
                  "--phrase-cache", out=root / f"o{i}")
             for i, cache in enumerate((corpus, notes, root / "corpus-link.jsonl",
                                        tset / "topics.json", names))]

    # a user's file added to an earlier output set; an input inside the set
    def with_user_file(folder: Path, name: str) -> Path:
        copy = root / f"{folder.name}-{name.replace('.', '-')}"
        shutil.copytree(folder, copy)
        write(copy / name, "my notes\n")
        return copy

    t_notes, i_notes = with_user_file(tset, "notes.md"), with_user_file(idx, "notes.md")
    t_in, i_in = with_user_file(tset, "x"), with_user_file(idx, "x")
    small_corpus(t_in / "my_corpus.jsonl")
    write(i_in / "my_names.txt", NAMES)
    mine = root / "mine"
    mine.mkdir()
    write(mine / "topics.md", "# my topics\n")
    mine_idx = root / "mine-idx"
    mine_idx.mkdir()
    write(mine_idx / "config.json", "{}\n")
    cases += [
        Case(probe, topics("--out", t_notes), "notes.md"),
        Case(probe, cli("index", "build", names, "--out", i_notes, "-m", "string", "-q"),
             "notes.md", intact=query_works(i_notes)),
        Case(probe, topics("--out", t_in, corpus_=t_in / "my_corpus.jsonl"),
             ("--out", "my_corpus.jsonl")),
        Case(probe, cli("index", "build", i_in / "my_names.txt", "--out", i_in, "-m", "string",
                        "-q"), ("--out", "my_names.txt")),
        Case(probe, topics("--out", mine), ("mine", "topics.md")),
        Case(probe, cli("index", "build", names, "--out", mine_idx, "-m", "string", "-q"),
             ("mine-idx", "config.json")),
        # a set of another kind is not replaced
        Case(probe, topics("--out", idx), ("idx", "entity-index"), intact=query_works()),
        Case(probe, cli("index", "build", names, "--out", tset, "-m", "string", "-q"),
             ("tset", "topics")),
        Case(probe, cli("mentions", corpus, "--out", tset, "-m", "string", "-q"),
             ("tset", "topics")),
    ]
    # query results written into the index folder
    for name in ("names.jsonl", "manifest.json", "new.csv"):
        cases.append(Case(probe, cli("index", "query", idx, "chicago", "-o", idx / name, "-q"),
                          "--out", intact=query_works()))

    # --out a symlink to an earlier set: the link stays, its target holds the new set
    for kind, build, files in (
            ("topics", lambda o: build_topics(corpus, o), ("topics.json",)),
            ("index", lambda o: build_index(names, o), ("names.jsonl", "vectors.npy"))):
        target = build(root / f"{kind}-target")
        os.symlink(target.name, root / f"{kind}-link")
        old = (target / files[0]).stat().st_mtime_ns
        args = (topics("--out", root / f"{kind}-link", "--seed", "1") if kind == "topics" else
                cli("index", "build", root / "names.txt", "--out", root / f"{kind}-link",
                    "-m", "string", "--index", "exact", "-q"))
        if kind == "index":
            write(root / "names.txt", NAMES + "Dallas\n")
        cases.append(Case(probe, args, out=root / f"{kind}-link", check=lambda t=target,
                          k=kind, f=files, o=old: (root / f"{k}-link").is_symlink()
                          and is_set(t, *f) and (t / f[0]).stat().st_mtime_ns > o
                          and not leftovers(root)))
    # plain reruns over an earlier set leave nothing behind
    rerun = build_topics(corpus, root / "rerun")
    cases.append(Case(probe, topics("--out", rerun), out=rerun,
                      check=lambda: is_set(rerun, "topics.json") and not leftovers(root)))
    return cases


# ------------------------------------------------------------------ special output paths
def special_out_cases(root: Path) -> list[Case]:
    probe = "odd output paths (FIFO, device, glob, cwd, long names)"
    corpus = small_corpus(root / "in.jsonl")
    lines = write(root / "lines.txt", "paris\nlondon\n")
    names = write(root / "names.txt", NAMES)
    table = write(root / "t.csv", "id,title\n1,New York\n2,Chicago\n")
    idx = build_index(names, root / "idx")

    def commands(out: Path) -> list[list[str]]:
        return [cli("keyphrases", corpus, "--out", out, "-m", "string", "-q"),
                cli("phrases", corpus, "--out", out, "--min-df", "1", "-q"),
                cli("topics", corpus, "--out", out, *TOPICS),
                cli("encode", lines, "--out", out, "-m", "string", "-q"),
                cli("join", table, table, "--left-on", "title", "--right-on", "title", "--out",
                    out, "-m", "string", "-q"),
                cli("index", "build", names, "--out", out, "-m", "string", "-q"),
                cli("index", "query", idx, "chicago", "-o", out, "-q"),
                cli("mentions", corpus, "--out", out, "-m", "string", "-q")]

    fifo = root / "pipe"
    os.mkfifo(fifo)
    # a command that opens the FIFO blocks: run in a subprocess under a time budget
    cases = [Case(probe, args, "FIFO", isolated=True, seconds=60) for args in commands(fifo)]
    device = null_device(root / "nulldev")
    if device is None:
        print("probe: mknod not permitted; the --out device cases are skipped", file=sys.stderr)
    else:
        cases += [Case(probe, args, "device") for args in commands(device)]

    # glob characters beside outputs whose names they match
    for name in ("r1", "r2"):
        build_topics(corpus, root / name)
        build_index(names, root / f"i{name}")
    write(root / "k1.jsonl", "{}\n")
    for args, out, files in (
            (cli("topics", corpus, "--out", root / "r?", *TOPICS), root / "r?", ("topics.json",)),
            (cli("topics", corpus, "--out", root / "r*", *TOPICS), root / "r*", ("topics.json",)),
            (cli("index", "build", names, "--out", root / "ir?", "-m", "string", "-q"),
             root / "ir?", ("names.jsonl",)),
            (cli("mentions", corpus, "--out", root / "r[12]", "-m", "string", "-q"),
             root / "r[12]", ())):
        cases.append(Case(probe, args, out=out, check=lambda o=out, f=files: is_set(o, *f)))
    out = root / "k?.jsonl"
    cases.append(Case(probe, cli("keyphrases", corpus, "--out", out, "-m", "string", "-q"),
                      out=out, check=lambda o=out: o.is_file()))

    # the current folder (or one holding it) as an output folder
    here = root / "cwd"
    (here / "deeper").mkdir(parents=True)
    write(here / "notes.txt", "mine\n")
    write(here / "deeper" / "notes.txt", "mine\n")
    for cwd, args in (
            (here, cli("topics", corpus, "--out", ".", *TOPICS)),
            (here, cli("topics", corpus, "--out", "./", *TOPICS)),
            (here / "deeper", cli("topics", corpus, "--out", "..", *TOPICS)),
            (here, cli("index", "build", names, "--out", here, "-m", "string", "-q")),
            (here, cli("mentions", corpus, "--out", ".", "-m", "string", "-q"))):
        cases.append(Case(probe, args, "--out", cwd=cwd, folder=here))

    # long but valid names: staging and temporary names must still fit
    for n in (235, 250):
        for kind, args_for in (
                ("k", lambda o: cli("keyphrases", corpus, "--out", o, "-m", "string", "-q")),
                ("t", lambda o: cli("topics", corpus, "--out", o, *TOPICS)),
                ("i", lambda o: cli("index", "build", names, "--out", o, "-m", "string", "-q")),
                ("e", lambda o: cli("encode", lines, "--out", o, "-m", "string", "-q")),
                ("j", lambda o: cli("join", table, table, "--left-on", "title", "--right-on",
                                    "title", "--out", o, "-m", "string", "-q"))):
            suffix = {"k": ".jsonl", "e": ".npy", "j": ".csv"}.get(kind, "")
            out = root / (kind * (n - len(suffix)) + suffix)
            cases.append(Case(probe, args_for(out), out=out,
                              check=lambda o=out: o.exists() and not leftovers(root)))
    return cases


# ------------------------------------------------------------------ members outside artefacts
def outside_cases(root: Path) -> list[Case]:
    """Manifest entries and members that lead outside a saved index or model folder."""
    probe = "artefact members outside the folder (manifest paths, symlinks)"
    names = write(root / "names.txt", NAMES)
    one = write(root / "one.txt", "new york city\n")
    secret = write(root / "x", "secret\n")
    index0 = build_index(names, root / "index0")
    model0 = model_copy(root / "model0")
    cases = []

    def use(folder: Path, kind: str) -> list[str]:
        if kind == "index":
            return cli("index", "query", folder, "chicago", "-k", "1", "-q")
        return cli("encode", one, "--out", root / f"{folder.name}.npy", "-m", folder, "-q")

    def gone(path: Path) -> Callable[[], Callable[[], None]]:
        """A leak probe: remove the outside file (and undo that afterwards)."""
        def leak() -> Callable[[], None]:
            raw = path.read_bytes()
            path.unlink()
            return lambda: path.write_bytes(raw)
        return leak

    for kind, base, member in (("index", index0, "names.jsonl"), ("model", model0, "README.md")):
        def copy(tag: str, base: Path = base, kind: str = kind) -> Path:
            dest = root / f"{kind}-{tag}"
            shutil.copytree(base, dest, symlinks=True)
            return dest

        def case(folder: Path, named: str, leak: Callable[[], Callable[[], None]] | None = None,
                 isolated: bool = False, kind: str = kind) -> Case:
            out = root / f"{folder.name}.npy" if kind == "model" else None
            return Case(probe, use(folder, kind), named, out=out, security=True, leak=leak,
                        isolated=isolated, seconds=60)

        def wrong_hash(folder: Path, name: str) -> Callable[[], Callable[[], None]]:
            """A leak probe: sign the outside entry with a hash that does not match."""
            def leak() -> Callable[[], None]:
                raw = (folder / "manifest.json").read_bytes()
                sign(folder, name, data=b"not it")
                return lambda: (folder / "manifest.json").write_bytes(raw)
            return leak

        # entries naming files outside, signed to match them
        d = copy("dotdot")
        sign(d, "../x", secret)
        cases.append(case(d, "manifest.json", leak=gone(secret)))
        d = copy("dotdot-hash")
        sign(d, "../x", secret)
        cases.append(case(d, "manifest.json", leak=wrong_hash(d, "../x")))
        d = copy("absolute")
        sign(d, str(secret), secret)
        cases.append(case(d, "manifest.json", leak=gone(secret)))
        d = copy("etc-passwd")
        sign(d, "/etc/passwd", Path("/etc/passwd"))
        cases.append(case(d, "manifest.json", leak=wrong_hash(d, "/etc/passwd")))
        d = copy("sub-dotdot")
        (d / "sub").mkdir()
        sign(d, "sub/../../x", secret)
        cases.append(case(d, "manifest.json", leak=gone(secret)))
        # a member replaced by a symlink to a copy outside (same bytes: the hash matches)
        d = copy("member-link")
        outside = root / f"{kind}-{member}"
        shutil.copy(base / member, outside)
        (d / member).unlink()
        os.symlink(outside, d / member)
        cases.append(case(d, member, leak=gone(outside)))
        d = copy("member-relative-link")
        (d / member).unlink()
        os.symlink(f"../{base.name}/{member}", d / member)
        cases.append(case(d, member))
        d = copy("manifest-link")
        shutil.copy(base / "manifest.json", root / f"{kind}-manifest.json")
        (d / "manifest.json").unlink()
        os.symlink(root / f"{kind}-manifest.json", d / "manifest.json")
        cases.append(case(d, "manifest.json"))
        # outside entries that would block or never end: a FIFO, a device
        fifo = root / f"{kind}-pipe"
        os.mkfifo(fifo)
        d = copy("fifo-entry")
        sign(d, f"../{fifo.name}", data=b"")
        cases.append(case(d, "manifest.json", isolated=True))
        d = copy("zero-link")
        (d / member).unlink()
        os.symlink("/dev/zero", d / member)
        cases.append(case(d, member, isolated=True))
    return cases
