"""Probe the command line with bad and tricky inputs and tabulate what happened.

Each case runs one command (in-process, or in a subprocess under a time and memory budget for
FIFOs, devices and large inputs) and is either expected to be refused (exit 2 with one line
naming the file or option) or accepted with a correct result. Columns: cases tried, clear
exit-2 errors, crashes (exit 1, a traceback, or a message not naming the culprit), wrong with
exit 0 (a refusal expected, or a result that fails its check), partial outputs (files left
behind by a failed command, or staging leftovers), data loss (a file the user did not name as
output changed or vanished, or the output of a failed command changed), security (a file
outside an artefact folder was read with exit 0, or the message changes with that file), hang
or memory (over the case's time or peak-RSS budget), correct exit 0. Every case lands in one
column; the first that applies of: hang/memory, data loss, security, partial output, then the
exit code.

    python benchmarks/probes/probe_cli.py                  # all cases (a 5 MB single-line document)
    python benchmarks/probes/probe_cli.py --only FIFO      # probe classes whose name holds FIFO
    python benchmarks/probes/probe_cli.py --big            # the large-input cases with 50 MB

Cases not in their expected column are listed on stderr, one line each.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the test suite's case lists
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the case files beside this one
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from probe_cli_cases import (
    CORPUS,
    Case,
    out_is_input_cases,
    output_set_cases,
    outside_cases,
    runner,
    special_out_cases,
)
from probe_cli_inputs import (
    contract_cases,
    csv_cases,
    deep_json_cases,
    large_cases,
    message_cases,
    option_cases,
    resigned_cases,
)
from probe_cli_integrity import GROUPS as INTEGRITY_GROUPS
from probe_cli_run import LEFTOVER, run_isolated, snapshot, under

from phrasekit.cli import app
from phrasekit.models.backbones import packaged_model_dir
from phrasekit.similarity.retrieval import EntityIndex
from phrasekit.training.facets.data import (
    CorpusSpec,
    FacetDataConfig,
    build_facet_dataset,
)
from tests.test_corruption import NAMES, _index_cases, _model_cases, flip, truncate

COLUMNS = ["cases", "clear exit 2", "crash", "wrong with exit 0", "partial output", "data loss",
           "security", "hang/memory", "correct exit 0"]


def _corpus_cases(root: Path) -> list[Case]:
    good = CORPUS.read_bytes()
    bad = {
        "missing.jsonl": None,
        "latin1.jsonl": '{"text": "caf\u00e9"}\n'.encode("latin-1"),
        "broken.jsonl": b'{"text": "a"}\n{"text": \n',
        "nofield.jsonl": b'{"body": "a"}\n',
        "array.jsonl": b'["a"]\n',
        "empty.jsonl": b"",
        "flipped.jsonl.gz": None,
        "truncated.jsonl.gz": gzip.compress(good)[:300],
        "garbage.jsonl.gz": b"\x1f\x8b\x08\x00garbage",
        "nodocs": None,
    }
    cases = []
    for name, data in bad.items():
        path = root / name
        if name == "flipped.jsonl.gz":
            path.write_bytes(gzip.compress(good))
            flip(path)
        elif name == "nodocs":
            path.mkdir()
        elif data is not None:
            path.write_bytes(data)
        for cmd, out in (("phrases", root / f"{name}.p.json"), ("topics", root / f"{name}.t"),
                         ("keyphrases", root / f"{name}.k.jsonl")):
            cases.append(Case("corpus files (phrases, topics, keyphrases)",
                              [cmd, str(path), "--out", str(out), "-q"], name, out=out))
    return cases


def _encode_cases(root: Path) -> list[Case]:
    def lines(name: str, text: str) -> Path:
        (root / name).write_text(text, encoding="utf-8", newline="")
        return root / name

    ok = lines("ok.txt", "paris\n")
    cases = []
    for name, data in (("missing.txt", None), ("blank.txt", "a\n\nb\n"), ("blanks.txt", "\n \n")):
        path = lines(name, data) if data is not None else root / name
        cases.append(Case("encode inputs", ["encode", str(path), "--out", str(root / "e.npy"),
                                            "-m", "glove-50d", "-q"], name, out=root / "e.npy"))
    (root / "latin.txt").write_bytes("caf\u00e9\n".encode("latin-1"))
    cases.append(Case("encode inputs", ["encode", str(root / "latin.txt"), "--out",
                                        str(root / "e.npy"), "-q"], "latin.txt",
                      out=root / "e.npy"))
    for out, named in ((root, str(root)), (ok / "v.npy", "ok.txt"), (ok, "ok.txt")):
        cases.append(Case("encode inputs", ["encode", str(ok), "--out", str(out), "-q"], named))
    for opt, value in (("--model", "no-such-model"), ("--precision", "fp8"),
                       ("--batch-size", "0")):
        cases.append(Case("encode inputs", ["encode", str(ok), "--out", str(root / "e.npy"),
                                            opt, value, "-q"], value, out=root / "e.npy"))
    for name, text, rows in (("seps.txt", "a\u2028b\nc\x85d\ne\x0cf\n", 3),
                             ("crlf.txt", "new york\r\nparis\r\n", 2)):
        path, out = lines(name, text), root / f"{name}.npy"
        cases.append(Case("encode inputs", ["encode", str(path), "--out", str(out), "-m",
                                            "glove-50d", "-q"],
                          check=lambda o=out, n=rows: np.load(o).shape[0] == n))
    return cases


def _join_cases(root: Path) -> list[Case]:
    """Tables with repeated columns, ragged rows, bad encoding; --out that is an input."""
    tables = {
        "good.csv": "id,title\n1,New York\n2,Chicago\n",
        "dupcol.csv": "title,title\nNew York,NYC\n",
        "ragged.csv": "id,title\n1,New York,extra\n",
        "nocol.csv": "id,name\n1,New York\n",
        "emptycell.csv": "id,title\n1,\n",
        "unterminated.csv": 'id,title\n1,"New York\n',
    }
    for name, text in tables.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "latin.csv").write_bytes("id,title\n1,caf\u00e9\n".encode("latin-1"))
    good = root / "good.csv"

    def join(left: Path, right: Path, out: Path, *extra: str) -> list[str]:
        return ["join", str(left), str(right), "--left-on", "title", "--right-on", "title",
                "--out", str(out), "-m", "string", "-q", *extra]

    out = root / "j.csv"
    cases = [Case("join tables", join(root / name, good, out), name, out=out)
             for name in (*list(tables)[1:], "latin.csv", "missing.csv")]
    cases += [Case("join tables", join(good, root / "dupcol.csv", out), "dupcol.csv", out=out),
              Case("join tables", join(good, good, good), "good.csv"),
              Case("join tables", join(good, good, out, "--how", "outer"), "--how", out=out),
              Case("join tables", join(good, good, out, "--how", "left"),
                   check=lambda: len(out.read_text(encoding="utf-8").splitlines()) == 3)]
    return cases


def _model_and_index_cases(root: Path) -> list[Case]:
    src = root / "one.txt"
    src.write_text("new york city\n", encoding="utf-8")
    cases = []
    for name, (damage, named) in _model_cases().items():
        model = root / f"model-{name.replace(' ', '-')}"
        shutil.copytree(packaged_model_dir("pearl-minilm"), model)
        damage(model, packaged_model_dir("phrase-bert-minilm"))
        out = root / f"{model.name}.npy"
        cases.append(Case("model folders (flip, truncate, swap, edit)",
                          ["encode", str(src), "--out", str(out), "-m", str(model), "-q"],
                          named, out=out))
    EntityIndex.build(NAMES, "minilm", index="ann").save(root / "idx-a")
    EntityIndex.build(list(reversed(NAMES)), "minilm", index="ann").save(root / "idx-b")
    for name, (damage, named) in _index_cases().items():
        index = root / f"idx-{name.replace(' ', '-').replace(',', '')}"
        shutil.copytree(root / "idx-a", index)
        damage(index, root / "idx-b")
        cases.append(Case("saved indexes (flip, truncate, swap, reorder, edit)",
                          ["index", "query", str(index), "chicago", "-k", "1", "-q"], named))
    return cases


def _path_cases(root: Path) -> list[Case]:
    afile = root / "a-file"
    afile.write_text("x", encoding="utf-8")
    under = afile / "out"
    names = root / "names.txt"
    names.write_text("paris\nlondon\n", encoding="utf-8")
    return [Case("output paths (under a file, a file for a folder)", args, "a-file") for args in (
        ["topics", str(CORPUS), "--out", str(under), "-q"],
        ["topics", str(CORPUS), "--out", str(afile), "-q"],
        ["phrases", str(CORPUS), "--out", str(under), "-q"],
        ["keyphrases", str(CORPUS), "--out", str(under), "-q"],
        ["index", "build", str(names), "--out", str(under), "-q"],
        ["index", "build", str(names), "--out", str(afile), "-q"],
        ["train", "facets", "--data", str(root), "--out", str(afile), "-q"],
    )]


def _template_cases(root: Path) -> list[Case]:
    cases = []
    for stem in ("__JS__", "{{ js }}", "</script><script>alert(1)"):
        folder = root / f"tpl{len(cases)}"
        folder.mkdir()
        corpus = folder / f"{stem.replace('/', '_')}.jsonl"
        shutil.copy(CORPUS, corpus)
        out = folder / "out"
        cases.append(Case("report templating (corpus names)",
                          ["topics", str(corpus), "-m", "string", "-k", "3", "--out", str(out),
                           "-q"],
                          check=lambda o=out: (o / "report.html").read_text(
                              encoding="utf-8").count("<script>") == 1))
    return cases


def _checkpoint_cases(root: Path) -> list[Case]:
    """A `train facets` run, its checkpoint damaged, then resumed (or run with fewer steps)."""
    corpora = root / "corpora" / "arxiv80"
    corpora.mkdir(parents=True)
    shutil.copy(CORPUS, corpora / "documents.jsonl")
    build_facet_dataset(FacetDataConfig(
        out_dir=str(root / "facet-data"), granularity="phrase", corpora=(CorpusSpec("arxiv80"),),
        corpora_dir=str(root / "corpora"), phrase_cache_dirs=(), val_fraction=0.1,
        show_progress=False, exclude_eval_sentences=False, max_per_phrase=20))

    def train(out: Path, steps: int) -> list[str]:
        return ["train", "facets", "--data", str(root / "facet-data"), "--batch-size", "32",
                "--max-steps", str(steps), "--out", str(out), "-q"]

    cases = []
    damages = {"flip data": lambda p: flip(p, 0.7), "flip header": lambda p: flip(p, 0.002),
               "truncate": truncate, "empty": lambda p: p.write_bytes(b""), "fewer steps": None}
    for name, damage in damages.items():
        out = root / f"run-{name.replace(' ', '-')}"
        assert runner.invoke(app, train(out, 20)).exit_code == 0
        if damage is not None:
            damage(out / "checkpoint.safetensors")
        cases.append(Case("checkpoints (resume after damage)",
                          train(out, 10 if damage is None else 40), "checkpoint.safetensors"))
    return cases


# ------------------------------------------------------------------ running a case
def _silence_closed_handlers() -> None:
    """Loggers that kept the stream of an earlier in-process run (closed by CliRunner) would
    print '--- Logging error ---' into the next run's output: point them at a sink."""
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    for lg in loggers:
        for handler in lg.handlers:
            stream = getattr(handler, "stream", None)
            if stream is not None and getattr(stream, "closed", False):
                handler.stream = io.StringIO()


def run_inprocess(case: Case) -> tuple[int, str, str | None]:
    _silence_closed_handlers()
    here = os.getcwd()
    start = time.monotonic()
    try:
        if case.cwd is not None:
            os.chdir(case.cwd)
        res = runner.invoke(app, case.args, env=case.env)
    finally:
        os.chdir(here)
    seconds = time.monotonic() - start
    over = f"took {seconds:.0f} s (budget {case.seconds:.0f} s)" if seconds > case.seconds \
        else None
    return res.exit_code, res.output, over


def run(case: Case) -> tuple[int, str, str | None]:
    return run_isolated(case) if case.isolated else run_inprocess(case)


def classify(case: Case) -> tuple[str, str]:
    """Run one case; name its outcome (and say what happened)."""
    watch = [p for p in (case.folder, case.out) if p is not None]
    watch += [Path(a) for a in case.args if os.path.isfile(a) and not stat.S_ISFIFO(
        os.stat(a).st_mode)]
    outs = [] if case.out is None else [str(case.out), os.path.realpath(case.out)]
    before = snapshot(watch)
    existed = case.out is not None and os.path.lexists(case.out)
    code, output, over = run(case)
    text = output.strip()
    what = f"exit {code}: {' '.join(text.split())[:150]}"
    after = snapshot(watch)
    if over:
        return "hang/memory", f"{over}; {what}"
    lost = [p for p, sig in before.items() if after.get(p) != sig
            and not (code == 0 and under(p, outs))]
    if lost:
        return "data loss", f"changed or removed: {', '.join(lost[:3])}; {what}"
    if case.intact is not None and not case.intact():
        return "data loss", f"an input no longer works; {what}"
    if case.security and code == 0:
        return "security", f"read outside the folder accepted; {what}"
    if case.leak is not None:
        undo = case.leak()
        code2, output2, _ = run(case)
        undo()
        if (code2, output2.strip()) != (code, text):
            return "security", (f"message depends on the outside file: {what} | then exit "
                                f"{code2}: {' '.join(output2.split())[:150]}")
    left = [p for p in after if p not in before and LEFTOVER.search(os.path.basename(p))]
    if left:
        return "partial output", f"left behind: {', '.join(left[:3])}; {what}"
    if code == 0:
        if case.check is not None:
            try:
                good = case.check()
            except Exception as exc:  # a check that cannot read the result: wrong
                good, what = False, f"{what} (check: {type(exc).__name__}: {exc})"
            return ("correct exit 0", what) if good else ("wrong with exit 0", what)
        return "wrong with exit 0", what
    if case.out is not None and os.path.lexists(case.out) and not existed:
        return "partial output", f"{case.out} left; {what}"
    one_line = text.count("\n") == 0 and "Traceback" not in text and "Usage:" not in text
    named = (case.named,) if isinstance(case.named, str) else case.named or ()
    if code == 2 and one_line and any(n in text for n in named):
        return "clear exit 2", what
    return "crash", what


# ------------------------------------------------------------------ the probe classes
_FACET_DATA: dict[str, Path] = {}


def facet_data(root: Path) -> Path:
    """A small facet training set (built once per run)."""
    if "path" not in _FACET_DATA:
        corpora = root / "facet-corpora" / "arxiv80"
        corpora.mkdir(parents=True)
        shutil.copy(CORPUS, corpora / "documents.jsonl")
        build_facet_dataset(FacetDataConfig(
            out_dir=str(root / "facet-data"), granularity="phrase",
            corpora=(CorpusSpec("arxiv80"),), corpora_dir=str(root / "facet-corpora"),
            phrase_cache_dirs=(), val_fraction=0.1, show_progress=False,
            exclude_eval_sentences=False, max_per_phrase=20))
        _FACET_DATA["path"] = root / "facet-data"
    return _FACET_DATA["path"]


def groups(big: bool) -> list[tuple[str, Callable[[Path], list[Case]]]]:
    """(probe class, builder) in run order; a builder gets an empty folder of its own."""
    return [
        ("corpus files (phrases, topics, keyphrases)", _corpus_cases),
        ("encode inputs", _encode_cases),
        ("join tables", _join_cases),
        ("model folders and saved indexes (flip, truncate, swap, reorder, edit)",
         _model_and_index_cases),
        ("output paths (under a file, a file for a folder)", _path_cases),
        ("report templating (corpus names)", _template_cases),
        ("checkpoints (resume after damage)", _checkpoint_cases),
        ("--out is an input (same, symlink, .., hard link)", out_is_input_cases),
        ("output sets and caches (user files, inputs inside, links)", output_set_cases),
        ("odd output paths (FIFO, device, glob, cwd, long names)", special_out_cases),
        ("artefact members outside the folder (manifest paths, symlinks)", outside_cases),
        ("artefacts re-signed or foreign (swapped graph, other weights, plain folders)",
         resigned_cases),
        ("deeply nested JSON (corpus, vocabulary, manifest, config)", deep_json_cases),
        ("numeric options out of range",
         lambda root: option_cases(root, facet_data(root.parent))),
        ("contract (unknown words, document ids, suffix case, identical documents)",
         contract_cases),
        ("CSV formula cells (join, index query)", csv_cases),
        ("corpus and option messages (FIFO, device, folder, missing, model@precision)",
         message_cases),
        ("large inputs (time and memory budget)",
         lambda root: large_cases(root, 50 if big else 5)),
        *INTEGRITY_GROUPS,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="SUBSTRING",
                        help="run only the probe classes whose name holds SUBSTRING "
                             "(case-insensitive; repeat for several)")
    parser.add_argument("--big", action="store_true",
                        help="large-input cases with a 50 MB document instead of 5 MB")
    parser.add_argument("--list", action="store_true", help="list the probe classes and exit")
    parser.add_argument("--verbose", action="store_true",
                        help="list every case on stderr, not only those out of their column")
    opts = parser.parse_args()
    chosen = [(title, build) for title, build in groups(opts.big)
              if not opts.only or any(o.lower() in title.lower() for o in opts.only)]
    if opts.list or not chosen:
        print("\n".join(title for title, _ in groups(opts.big)))
        sys.exit(0 if opts.list else 2)
    table: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        os.environ.setdefault("PHRASEKIT_VECTOR_CACHE", str(root / "vector-cache"))
        for n, (title, build) in enumerate(chosen):
            folder = root / f"g{n:02d}"
            folder.mkdir()
            cases = build(folder)
            print(f"{title}: {len(cases)} cases", file=sys.stderr)
            for case in cases:
                case.folder = case.folder or folder
                outcome, what = classify(case)
                counts = table.setdefault(case.probe, Counter())
                counts["cases"] += 1
                counts[outcome] += 1
                expected = ({"clear exit 2"} if case.named is not None else set()) | (
                    {"correct exit 0"} if case.check is not None else set())
                if outcome not in expected or opts.verbose:
                    args = " ".join(case.args).replace(str(folder) + "/", "").replace(
                        str(root) + "/", "")
                    print(f"[{outcome}] {args[:300]} -> {what}", file=sys.stderr)
    print("| probe class | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for probe, counts in table.items():
        print(f"| {probe} | " + " | ".join(str(counts[c]) for c in COLUMNS) + " |")
    total = sum(table.values(), Counter())
    print("| **all** | " + " | ".join(str(total[c]) for c in COLUMNS) + " |")
    print(json.dumps({c: total[c] for c in COLUMNS}))


if __name__ == "__main__":
    main()
