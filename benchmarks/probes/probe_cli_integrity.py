"""Cases of ``probe_cli.py`` for issue 63: caches that must never take a user's file, settings
checked before work, outputs kept out of installed packages and model folders, documents with
no known word, formula cells on stdout and in slice tables, dates at the ends of the range, and
saved topic models whose files disagree.

Each builder takes its own empty folder and returns :class:`Case` objects, as in
``probe_cli_cases.py``; ``env`` sets environment variables for a case's run.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
from probe_cli_cases import CORPUS, Case, cli, runner, write

from phrasekit.artifacts import write_manifest
from phrasekit.cli import app
from phrasekit.models.backbones import minilm_path, packaged_model_dir

#: A quick documents-method fit: GloVe, three topics.
FIT = ("-m", "glove-50d", "-k", "3", "--min-df", "2", "--no-report", "-q")
UNKNOWN = [f"qzxvk{i} blorfing{i} wuzzlepop{i} grimbly{i}" for i in range(20)]
DANGER = ("=", "+", "-", "@", "\t", "\r")


def _records(path: Path, extra: dict[int, dict[str, str]] | None = None,
             fields: dict[str, str] | None = None) -> Path:
    """The fixture corpus with ``fields`` added to every record, ``extra`` to some."""
    lines = []
    for i, line in enumerate(CORPUS.read_text(encoding="utf-8").splitlines()):
        rec = json.loads(line)
        rec.update(fields or {})
        rec.update((extra or {}).get(i, {}))
        lines.append(json.dumps(rec))
    return write(path, "\n".join(lines) + "\n")


def _marked(folder: Path) -> bool:
    """Every ``docs-*.npz`` cache file in ``folder`` starts with the cache's marker."""
    files = list(folder.glob("docs-*.npz"))
    return bool(files) and all(b"phrasekit-cache.json" in f.read_bytes()[:80] for f in files)


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0xFF
    elif how == "cut":
        data = data[: len(data) // 2]
    else:
        data = bytearray()
    path.write_bytes(bytes(data))


# ------------------------------------------------------------------ caches
def cache_cases(root: Path) -> list[Case]:
    probe = "caches own only their files (vector and phrase caches)"
    corpus = _records(root / "corpus.jsonl")
    cases = []
    for mb in ("0", "2048"):
        vectors = root / f"vectors-{mb}"
        vectors.mkdir()
        np.savez(vectors / "my_embeddings.npz", encoder=np.asarray("minilm"),
                 embeddings=np.ones((4, 8), np.float32))
        (vectors / "docs-notes.npz").write_bytes(b"my own notes")
        out = root / f"user-{mb}"
        cases.append(Case(probe, cli("topics", corpus, "--out", out, *FIT), out=out,
                          folder=vectors,
                          env={"PHRASEKIT_VECTOR_CACHE": str(vectors),
                               "PHRASEKIT_VECTOR_CACHE_MB": mb},
                          check=lambda v=vectors: (v / "my_embeddings.npz").is_file()
                          and (v / "docs-notes.npz").read_bytes() == b"my own notes"))
    for how in ("flip", "cut", "empty"):
        vectors = root / f"damaged-{how}"
        env = {"PHRASEKIT_VECTOR_CACHE": str(vectors)}
        first = runner.invoke(app, cli("topics", corpus, "--out", root / f"first-{how}", *FIT),
                              env=env)
        assert first.exit_code == 0, first.output
        for path in vectors.glob("docs-*.npz"):
            _damage(path, how)
        out = root / f"again-{how}"
        cases.append(Case(probe, cli("topics", corpus, "--out", out, *FIT), out=out,
                          folder=root / "none", env=env,
                          check=lambda v=vectors, o=out: _marked(v) and (o / "topics.json")
                          .is_file()))
    phrases = root / "phrases.json.gz"
    first = runner.invoke(app, cli("topics", corpus, "--out", root / "p0", "--phrase-cache",
                                   phrases, *FIT))
    assert first.exit_code == 0, first.output
    _damage(phrases, "cut")
    cases.append(Case(probe, cli("topics", corpus, "--out", root / "p1", "--phrase-cache",
                                 phrases, *FIT), out=phrases, folder=root / "none",
                      check=lambda: (root / "p1" / "topics.json").is_file()))
    return cases


# ------------------------------------------------------------------ settings and options
def setting_cases(root: Path) -> list[Case]:
    probe = "settings and options checked before work (env, bins, precision, usage)"
    corpus = _records(root / "dated.jsonl", fields={"date": "2020-01-15"})
    lines = write(root / "p.txt", "paris\nlondon\n")
    cases = []
    for value in ("nan", "inf", "abc", "-1"):
        out = root / f"mb-{value}"
        cases.append(Case(probe, cli("topics", corpus, "--out", out, *FIT),
                          "PHRASEKIT_VECTOR_CACHE_MB", out=out,
                          env={"PHRASEKIT_VECTOR_CACHE_MB": value}))
    for name, value in (("PHRASEKIT_DEVICE", "gpu"), ("PHRASEKIT_VECTOR_CACHE", str(lines))):
        cases.append(Case(probe, cli("encode", lines, "--out", root / "e.npy", "-q"), name,
                          out=root / "e.npy", env={name: value}))
    out = root / "bins"
    cases.append(Case(probe, cli("topics", corpus, "--out", out, "--time-field", "date",
                                 "--time-bins", "100000000", *FIT), "--time-bins", out=out,
                      isolated=True, seconds=120, max_rss_mb=2048))
    cases.append(Case(probe, cli("encode", lines, "--out", root / "p.npy", "-m", "minilm@int8",
                                 "--precision", "bf16", "-q"), "--precision",
                      out=root / "p.npy"))
    for args, named in (((lines, "--out", root / "b.npy", "--batch-size", "abc"),
                         "--batch-size"), ((lines,), "--out"), ((lines, "-o", root / "u.npy",
                                                                  "--nope"), "--nope")):
        cases.append(Case(probe, cli("encode", *args, "-q"), named))
    return cases


# ------------------------------------------------------------------ where outputs go
def _undo(written: Path) -> bool:
    """An export the command should have refused: removed again (it went into installed
    files), and the case counted wrong."""
    shutil.rmtree(written, ignore_errors=True)
    return False


def place_cases(root: Path) -> list[Case]:
    probe = "outputs kept out of packages and model folders; --save-model vs --out; ./-"
    corpus = _records(root / "corpus.jsonl")
    cases = [Case(probe, cli("export", name, "--out", folder / "st", "-q"), "--out",
                  out=folder / "st", check=lambda f=folder / "st": _undo(f))
             for name, folder in (("pearl-minilm", packaged_model_dir("pearl-minilm")),
                                  ("minilm", minilm_path()))]
    mine = root / "mine"
    mine.mkdir()
    write(mine / "notes.md", "mine")
    cases.append(Case(probe, cli("export", "minilm", "--out", mine, "-q"), "mine",
                      seconds=8))
    for out, save in ((root / "t13", root / "t13" / "model"), (root / "t14", root / "t14")):
        cases.append(Case(probe, cli("topics", corpus, "--out", out, "--save-model", save,
                                     *FIT), "--save-model", out=out))
    write(root / "p.txt", "paris\nlondon\n")
    cases.append(Case(probe, cli("encode", "p.txt", "--out", "./-", "-m", "glove-50d", "-q"),
                      cwd=root, check=lambda: np.load(root / "-").shape == (2, 50)))
    return cases


# ------------------------------------------------------------------ unknown words
def unknown_cases(root: Path) -> list[Case]:
    probe = "documents with no known word (topics apply, student, encoder placement)"
    corpus = _records(root / "corpus.jsonl")
    model = root / "model"
    fit = runner.invoke(app, cli("topics", corpus, "--out", root / "fit", "--save-model", model,
                                 "--fit-docs", "50", *FIT))
    assert fit.exit_code == 0, fit.output
    unknown = write(root / "unknown.jsonl", "".join(
        json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(UNKNOWN)))

    def unassigned(out: Path) -> bool:
        data = json.loads((out / "topics.json").read_text(encoding="utf-8"))
        return [d["topic"] for d in data["doc_topics"]] == [None] * len(UNKNOWN)

    cases = []
    for placement in ("fit", "encoder"):
        out = root / f"apply-{placement}"
        cases.append(Case(probe, cli("topics", "apply", model, unknown, "--out", out,
                                     "--placement", placement, "--no-report", "-q"), out=out,
                          check=lambda o=out: unassigned(o)))
    return cases


# ------------------------------------------------------------------ formula cells
def _stdout_safe(args: list[str]) -> bool:
    res = runner.invoke(app, args)
    cells = [c for row in csv.reader(res.output.splitlines()[1:]) for c in row]
    return res.exit_code == 0 and bool(cells) and not any(c.startswith(DANGER) for c in cells)


def formula_cases(root: Path) -> list[Case]:
    probe = "formula cells on stdout and in slice tables (join -, topics_per_class.csv)"
    formulas = ('=HYPERLINK("x")', "+1", "-2", "@SUM(A1)")
    table = write(root / "t.csv", "id,title\n" + "".join(
        f'{i},"{f.replace(chr(34), chr(34) * 2)}"\n' for i, f in enumerate(formulas)))
    join = cli("join", table, table, "--left-on", "title", "--right-on", "title", "--out", "-",
               "-m", "string", "-q")
    cases = [Case(probe, join, check=lambda: _stdout_safe(join))]
    corpus = _records(root / "classes.jsonl", extra={i: {"label": f} for i, f in
                                                     enumerate(formulas * 20)})
    out = root / "per-class"

    def safe_classes() -> bool:
        with (out / "topics_per_class.csv").open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
        return bool(rows) and not any(r["class"].startswith(DANGER) for r in rows)

    cases.append(Case(probe, cli("topics", corpus, "--out", out, "--class-field", "label",
                                 *FIT), out=out, check=safe_classes))
    return cases


# ------------------------------------------------------------------ dates
def date_cases(root: Path) -> list[Case]:
    probe = "dates at the ends of the range (--time-field)"
    cases = []
    for i, stamp in enumerate(("0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00")):
        corpus = _records(root / f"dated{i}.jsonl", extra={5: {"date": stamp}},
                          fields={"date": "2020-01-15"})
        out = root / f"d{i}"
        cases.append(Case(probe, cli("topics", corpus, "--out", out, "--time-field", "date",
                                     *FIT), f"dated{i}.jsonl:6", out=out))
    corpus = _records(root / "edge.jsonl", extra={5: {"date": "0001-01-01T05:00:00+05:00"}},
                      fields={"date": "9999-12-31T23:00:00+01:00"})
    out = root / "edge"
    cases.append(Case(probe, cli("topics", corpus, "--out", out, "--time-field", "date",
                                 "--time-bins", "year", *FIT), out=out,
                      check=lambda: (out / "topics_over_time.csv").is_file()))
    return cases


# ------------------------------------------------------------------ saved models
def saved_model_cases(root: Path) -> list[Case]:
    probe = "saved topic models whose files disagree (named by file and field)"
    corpus = _records(root / "corpus.jsonl")
    saved = root / "saved"
    fit = runner.invoke(app, cli("topics", corpus, "--out", root / "fit", "--save-model", saved,
                                 *FIT))
    assert fit.exit_code == 0, fit.output
    edits = {"topics": lambda c: c.update(n_topics_=c["n_topics_"] + 1),
             "ids": lambda c: c["doc_ids"].pop(),
             "vocabulary": lambda c: c["vocabulary"]["terms"].pop(),
             "encoder": lambda c: c["encoder"].update(spec="/etc")}
    cases = []
    for name, edit in edits.items():
        model = root / f"model-{name}"
        shutil.copytree(saved, model)
        config = json.loads((model / "config.json").read_text(encoding="utf-8"))
        edit(config)
        write(model / "config.json", json.dumps(config))
        write_manifest(model, "phrasekit-document-topics")
        out = root / f"out-{name}"
        cases.append(Case(probe, cli("topics", "apply", model, corpus, "--out", out, "-q"),
                          f"{model.name}/config.json: ", out=out))
    return cases


GROUPS = [
    ("caches own only their files (vector and phrase caches)", cache_cases),
    ("settings and options checked before work (env, bins, precision, usage)", setting_cases),
    ("outputs kept out of packages and model folders; --save-model vs --out; ./-", place_cases),
    ("documents with no known word (topics apply, student, encoder placement)", unknown_cases),
    ("formula cells on stdout and in slice tables (join -, topics_per_class.csv)",
     formula_cases),
    ("dates at the ends of the range (--time-field)", date_cases),
    ("saved topic models whose files disagree (named by file and field)", saved_model_cases),
]
