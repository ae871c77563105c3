"""Probe the command line with bad and tricky inputs and tabulate what happened.

Each case runs one command (in-process) and is either expected to be refused (exit 2 with one
line naming the file or option) or accepted with a correct result. Columns: cases tried, clear
exit-2 errors, crashes (exit 1, a traceback, or a message not naming the culprit), wrong with
exit 0 (a refusal expected, or a result that fails its check), partial outputs (files left
behind by a failed command), correct exit 0.

    python benchmarks/probe_cli.py
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test suite's case lists

from phrasekit.cli import app
from phrasekit.models.backbones import packaged_model_dir
from phrasekit.similarity.retrieval import EntityIndex
from phrasekit.training.facets_data import CorpusSpec, FacetDataConfig, build_facet_dataset
from tests.test_corruption import NAMES, _index_cases, _model_cases, flip, truncate

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "corpus_small.jsonl"
runner = CliRunner()


@dataclass
class Case:
    """One probe: the arguments, the text the message must hold (refusals) or a check of the
    result (acceptances), and where outputs would appear."""

    probe: str
    args: list[str]
    named: str | None = None
    check: Callable[[], bool] | None = None
    out: Path | None = None


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


def classify(case: Case) -> str:
    """Run one case and name its outcome."""
    before = case.out.exists() if case.out is not None else False
    res = runner.invoke(app, case.args)
    text = res.output.strip()
    if case.check is not None:
        if res.exit_code == 0:
            return "correct exit 0" if case.check() else "wrong with exit 0"
        return "crash"
    if res.exit_code == 0:
        return "wrong with exit 0"
    if case.out is not None and case.out.exists() and not before:
        return "partial output"
    one_line = text.count("\n") == 0 and "Traceback" not in text
    if res.exit_code == 2 and one_line and case.named is not None and case.named in text:
        return "clear exit 2"
    print(f"[{case.probe}] {case.args[:2]}: exit {res.exit_code}: {text[:300]}",
          file=sys.stderr)
    return "crash"


def main() -> None:
    cols = ["cases", "clear exit 2", "crash", "wrong with exit 0", "partial output",
            "correct exit 0"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cases = [*_corpus_cases(root), *_encode_cases(root), *_join_cases(root),
                 *_model_and_index_cases(root),
                 *_path_cases(root), *_template_cases(root), *_checkpoint_cases(root)]
        table: dict[str, Counter[str]] = {}
        for case in cases:
            counts = table.setdefault(case.probe, Counter())
            counts["cases"] += 1
            counts[classify(case)] += 1
    print("| probe class | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for probe, counts in table.items():
        print(f"| {probe} | " + " | ".join(str(counts[c]) for c in cols) + " |")
    total = sum(table.values(), Counter())
    print("| **all** | " + " | ".join(str(total[c]) for c in cols) + " |")
    print(json.dumps({c: total[c] for c in cols}))


if __name__ == "__main__":
    main()
