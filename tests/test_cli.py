"""The `phrasekit` command line: commands run end to end, bad input exits with code 2."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def test_help_lists_commands_with_examples():
    res = invoke("--help")
    assert res.exit_code == 0
    for cmd in ("models", "encode", "eval", "phrases", "topics"):
        assert cmd in res.output
    sub = invoke("topics", "--help")
    assert sub.exit_code == 0 and "Example" in sub.output


def _leaf_commands():
    """Every command of the CLI (sub-apps walked), as (name, click command)."""
    import typer

    out, todo = [], [((), typer.main.get_command(app))]
    while todo:
        prefix, cmd = todo.pop()
        subs = getattr(cmd, "commands", None)
        if subs:
            todo += [((*prefix, name), sub) for name, sub in subs.items()]
        else:
            out.append((" ".join(prefix), cmd))
    return sorted(out, key=lambda x: x[0])


def test_every_command_has_example_and_quiet():
    commands = _leaf_commands()
    assert len(commands) >= 15
    for name, cmd in commands:
        assert "Example" in (cmd.help or ""), f"`phrasekit {name} --help` shows no example"
        opts = {o for p in cmd.params for o in p.opts}
        assert "--quiet" in opts, f"`phrasekit {name}` has no --quiet"
        res = invoke(*name.split(), "--help")
        assert res.exit_code == 0 and "Example" in res.output, name


def test_every_output_option_is_spelled_out_and_o():
    """One spelling on every command that writes: --out/-o (never --output)."""
    for name, cmd in _leaf_commands():
        for param in cmd.params:
            assert "--output" not in param.opts, name
            if "-o" in param.opts:
                assert "--out" in param.opts, (name, param.opts)


def test_help_markup_eats_no_bracketed_words():
    """typer renders help as rich markup: a bracket that would open a tag (``[ray]``) must be
    escaped, or ``pip install 'phrasekit[ray]'`` reads ``pip install 'phrasekit'``."""
    from rich.text import Text

    for name, cmd in _leaf_commands():
        for text in [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]:
            assert Text.from_markup(text).plain == text.replace("\\[", "["), (name, text)
    res = runner.invoke(app, ["encode", "--help"], env={"COLUMNS": "100"})
    assert "'phrasekit[ray]'" in res.output


#: Pointers to other documents instead of saying what an option does.
DOC_POINTER = re.compile(r"\bREADME\b|\bpaper\b|\bTables? [0-9IVX]|\bFigure \d|\bdocs/|"
                         r"\b[\w-]+\.md\b(?<!topics\.md)|\bsee the (docs|documentation)",
                         re.IGNORECASE)


def test_help_texts_say_what_instead_of_pointing_to_documents():
    """No command or option help sends the reader to the README, a paper or a table."""
    import typer

    texts = []
    todo = [("phrasekit", typer.main.get_command(app))]
    while todo:
        name, cmd = todo.pop()
        texts.append((name, cmd.help or ""))
        texts += [(f"{name} {p.name}", getattr(p, "help", None) or "") for p in cmd.params]
        todo += [(f"{name} {n}", sub) for n, sub in (getattr(cmd, "commands", None) or {}).items()]
    assert len(texts) > 100
    bad = [(where, " ".join(t.split())) for where, t in texts if DOC_POINTER.search(t)]
    assert not bad, bad
    assert DOC_POINTER.search("as in the paper") and DOC_POINTER.search("see README.md")
    assert not DOC_POINTER.search("writes topics.md and report.html")


def test_models_lists_registry():
    res = invoke("models")
    assert res.exit_code == 0 and "minilm" in res.output and "glove-50d" in res.output


def test_models_marks_the_default_and_aligns_descriptions():
    from phrasekit.cli.models import format_models
    from phrasekit.encoders.cpu import precision_summary
    from phrasekit.registry import DEFAULT_MODEL, TASK_DEFAULTS, available_models

    lines = invoke("models").output.splitlines()
    assert lines[-3:] == precision_summary() and lines[-3].startswith("# this CPU: ")
    lines = lines[:-3]
    assert lines == format_models(available_models(), TASK_DEFAULTS)
    starred = {ln.split()[1] for ln in lines if ln.startswith("*")}
    assert DEFAULT_MODEL in starred and starred == set(TASK_DEFAULTS)
    assert lines[0].startswith("# *: the default model") and "dev score" in lines[1]
    assert max(map(len, lines)) <= 100  # fits 100 columns (it was 268 wide)
    lines = format_models({"a": "short name " * 12, "a-much-longer-name": "long name"},
                          {"a": "encode"}, width=60)
    assert lines[2:] == ["  model               description",
                         "* a                   short name short name short name short",
                         "                        name short name short name short",
                         "                        name short name short name short",
                         "                        name short name short name",
                         "                      default of: encode",
                         "  a-much-longer-name  long name"]


def test_models_json_lists_each_model_with_its_defaults():
    from phrasekit.registry import DEFAULT_MODEL, TASK_DEFAULTS, available_models

    res = invoke("models", "--json")
    assert res.exit_code == 0, res.output
    records = json.loads(res.output)
    assert [r["name"] for r in records] == list(available_models())
    by_name = {r["name"]: r for r in records}
    assert by_name[DEFAULT_MODEL]["default"] and "encode" in by_name[DEFAULT_MODEL]["default_of"]
    assert by_name["string"] == {"name": "string", "default": False, "default_of": None,
                                 "description": available_models()["string"]}
    assert {r["name"] for r in records if r["default"]} == set(TASK_DEFAULTS)


def test_quiet_encode_prints_no_progress_bars(tmp_path):
    """`python -m phrasekit encode -q` in a fresh process with the default model (its
    backbone's weights are loaded by transformers): no progress bar on stderr."""
    import os
    import subprocess
    import sys

    import phrasekit

    src = tmp_path / "p.txt"
    src.write_text("heart attack\nmyocardial infarction\nprotein folding\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(phrasekit.__file__).parents[1])}
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    proc = subprocess.run([sys.executable, "-m", "phrasekit", "encode", str(src), "--out",
                           str(tmp_path / "v.npy"), "-q"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Loading weights" not in proc.stderr and "it/s]" not in proc.stderr, proc.stderr
    assert "%|" not in proc.stderr, proc.stderr  # no tqdm-style bar of any kind
    assert np.load(tmp_path / "v.npy").shape == (3, 384)


def test_encode_writes_npy(tmp_path):
    src = tmp_path / "p.txt"
    src.write_text("heart attack\n\nmyocardial infarction\nprotein folding\n", encoding="utf-8")
    out = tmp_path / "v.npy"
    res = invoke("encode", src, "--out", out, "--model", "glove-50d", "--quiet")
    assert res.exit_code == 2 and "p.txt:2: blank line" in res.output
    assert not out.exists()
    res = invoke("encode", src, "--out", out, "--model", "glove-50d", "--quiet", "--skip-blank")
    assert res.exit_code == 0, res.output
    assert "skipped 1 blank line" in res.output
    vecs = np.load(out)
    assert vecs.shape == (3, 50) and vecs.dtype == np.float32
    half = tmp_path / "h.npy"
    res = invoke("encode", src, "--out", half, "-m", "glove-50d", "-q", "--skip-blank",
                 "--dtype", "float16")
    assert res.exit_code == 0, res.output
    small = np.load(half, mmap_mode="r")
    assert small.dtype == np.float16 and small.shape == (3, 50)
    np.testing.assert_allclose(small, vecs, atol=1e-3)
    res = invoke("encode", src, "--out", half, "-m", "glove-50d", "--dtype", "int8")
    assert res.exit_code == 2 and "--dtype must be one of float32, float16" in res.output


def test_encode_rows_follow_newlines_only(tmp_path):
    src = tmp_path / "p.txt"
    lines = ["heart\u2028attack", "protein\x85folding", "form\x0cfeed", "new york city",
             "paris"]
    src.write_text("\r\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "v.npy"
    res = invoke("encode", src, "--out", out, "--model", "glove-50d", "--quiet")
    assert res.exit_code == 0, res.output
    assert np.load(out).shape == (5, 50)  # 5 lines, 5 rows


@pytest.mark.parametrize("where", ["folder", "under_file", "same_as_input"])
def test_encode_bad_out_refused_before_work(tmp_path, where):
    src = tmp_path / "p.txt"
    src.write_text("paris\n", encoding="utf-8")
    out = {"folder": tmp_path, "under_file": src / "v.npy", "same_as_input": src}[where]
    res = invoke("encode", src, "--out", out, "--model", "glove-50d", "--quiet")
    assert res.exit_code == 2 and str(out) in res.output, res.output
    assert src.read_text(encoding="utf-8") == "paris\n"


@pytest.mark.parametrize(
    ("setup", "fragment"),
    [
        ("missing", "not found"),
        ("empty", "blank line"),
        ("latin1", "UTF-8"),
    ],
)
def test_encode_bad_input_exit_2(tmp_path, setup, fragment):
    src = tmp_path / "p.txt"
    if setup == "empty":
        src.write_text("\n \n", encoding="utf-8")
    elif setup == "latin1":
        src.write_bytes("caf\xe9\n".encode("latin-1"))
    out = tmp_path / "v.npy"
    res = invoke("encode", src, "--out", out, "--model", "glove-50d", "--quiet")
    assert res.exit_code == 2 and fragment in res.output
    assert not out.exists()


def test_unknown_model_exit_2(tmp_path):
    src = tmp_path / "p.txt"
    src.write_text("x y\n", encoding="utf-8")
    res = invoke("encode", src, "--out", tmp_path / "v.npy", "--model", "nope", "--quiet")
    assert res.exit_code == 2 and "known names" in res.output
    (tmp_path / "empty").mkdir()
    res = invoke("encode", src, "--out", tmp_path / "v.npy", "--model", tmp_path / "empty")
    assert res.exit_code == 2 and "not a model folder (no config.json" in res.output
    topics = tmp_path / "topics-model"  # a phrasekit folder that holds no encoder
    topics.mkdir()
    (topics / "config.json").write_text('{"format": "phrasekit-document-topics"}',
                                        encoding="utf-8")
    res = invoke("encode", src, "--out", tmp_path / "v.npy", "--model", topics)
    assert res.exit_code == 2 and "a saved topic model" in res.output
    assert not (tmp_path / "v.npy").exists()


def test_topics_bad_corpus_exit_2(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "ok"}\n{broken\n', encoding="utf-8")
    res = invoke("topics", bad, "--out", tmp_path / "out", "--quiet")
    assert res.exit_code == 2 and "malformed JSON" in res.output
    assert not (tmp_path / "out" / "topics.json").exists()


def test_topics_bad_label_view_exit_2(tmp_path):
    res = invoke("topics", "sample", "--method", "ccl", "--out", tmp_path / "o",
                 "--label-view", "mention", "--quiet")
    assert res.exit_code == 2 and "--label-view" in res.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("spec", ["ppdb", "parrot=2", "ppdb=0", "ppdb=x"])
def test_train_phrase_bert_bad_repeat_source_exit_2(tmp_path, spec):
    res = invoke("train", "phrase-bert", "--out", tmp_path / "o", "--data", tmp_path,
                 "--repeat-source", spec, "--quiet")
    assert res.exit_code == 2 and "--repeat-source" in res.output
    assert not (tmp_path / "o").exists()


def test_topics_bad_k_range_exit_2(tmp_path):
    res = invoke("topics", "sample", "--out", tmp_path / "o", "--k-min", "9", "--k-max", "3")
    assert res.exit_code == 2 and "k-min" in res.output


@pytest.mark.parametrize("extra", [["--fit-docs", "0"], ["--fit-docs", "some"],
                                   ["--method", "pntm", "--fit-docs", "9"]])
def test_topics_bad_fit_docs_exit_2(tmp_path, extra):
    res = invoke("topics", "sample", "--out", tmp_path / "o", *extra)
    assert res.exit_code == 2 and "--fit-docs" in res.output
    assert not (tmp_path / "o").exists()


def test_topics_end_to_end(tmp_path):
    out = tmp_path / "topics"
    corpus = FIXTURES / "corpus_small.jsonl"
    res = invoke("topics", corpus, "--out", out, "--model", "glove-50d", "-k", "4",
                 "--min-df", "2", "--fit-docs", "50", "--quiet")
    assert res.exit_code == 0, res.output
    data = json.loads((out / "topics.json").read_text(encoding="utf-8"))
    assert len(data["topics"]) == 4
    assert data["n_fit_docs"] == 50 < data["n_docs"] == len(data["doc_topics"])
    assert (out / "topics.md").read_text(encoding="utf-8").count("## ") >= 4


def test_phrases_command(tmp_path):
    out = tmp_path / "phrases.json"
    res = invoke("phrases", FIXTURES / "corpus_small.jsonl", "--out", out, "--min-df", "2",
                 "--quiet")
    assert res.exit_code == 0, res.output
    assert out.is_file() and out.stat().st_size > 100


def test_eval_quick_on_fixtures(tmp_path):
    js = tmp_path / "eval.json"
    res = invoke("eval", "--model", "string", "--quick", "--data-dir", FIXTURES / "eval",
                 "--json", js, "--quiet")
    assert res.exit_code == 0, res.output
    assert "string" in res.output and "avg7" in res.output
    assert js.is_file()


def test_eval_json_is_checked_before_the_run_and_never_into_the_data(tmp_path):
    """``--json`` under a file, or onto a benchmark file, is refused before any model
    loads; the data stay as they were."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "eval", data)
    bird = next(data.glob("bird/*"))
    before = bird.read_bytes()
    for target, fragment in ((bird / "x.json", "is a file"),
                             (data / "r.json", "inside the benchmark data folder"),
                             (bird, "writes JSON, not tab-separated text")):
        res = invoke("eval", "--model", "string", "--tasks", "bird", "--data-dir", data,
                     "--json", target, "--quiet")
        assert res.exit_code == 2 and fragment in res.output, res.output
        assert "| model" not in res.output  # refused before the benchmark ran
    assert bird.read_bytes() == before


def test_eval_unknown_task_exit_2():
    res = invoke("eval", "--model", "string", "--tasks", "bird,nosuchtask", "--quiet")
    assert res.exit_code == 2 and "nosuchtask" in res.output


def test_pearl_reaverage_bad_input_exit_2(tmp_path):
    res = invoke("train", "pearl-reaverage", "-m", tmp_path, "-o", tmp_path / "o", "--quiet")
    assert res.exit_code == 2 and "not a PEARL model folder" in res.output
    res = invoke("train", "pearl-reaverage", "-m", tmp_path, "-o", tmp_path / "o",
                 "--proj-alphas", "0,half")
    assert res.exit_code == 2 and "comma-separated numbers" in res.output
    res = invoke("train", "pearl-reaverage", "-m", tmp_path, "-o", tmp_path / "o",
                 "--cliff-guard", "2", "--quiet")
    assert res.exit_code == 2 and "cliff guard needs 0 < margin <= 1" in res.output


def test_train_soup_bad_input_exit_2(tmp_path):
    res = invoke("train", "soup", tmp_path, "-o", tmp_path / "o", "--quiet")
    assert res.exit_code == 2 and "at least two" in res.output
    res = invoke("train", "soup", tmp_path, tmp_path / "b", "-o", tmp_path / "o", "--quiet")
    assert res.exit_code == 2 and "not a model folder" in res.output


# ---------------------------------------------------------------------------- README commands
README = Path(__file__).resolve().parents[1] / "README.md"
#: Options added to a README command in the test so that it runs in seconds (see below).
FAST = {
    "clusters": ["--min-df", "2", "--no-report", "-m", "glove-50d"],
    "pntm": ["--min-df", "2", "--no-report", "-m", "glove-50d"],
    "ccl": ["--no-report", "--ccl-steps", "0", "--max-instances", "200"],
    "eval": ["--quick", "--data-dir", str(FIXTURES / "eval"), "--tasks", "bird,turney"],
}


def readme_commands() -> list[list[str]]:
    """Every command of README.md's ```bash blocks in order, as argument lists (comments
    dropped, `a && b` split into two commands)."""
    text = README.read_text(encoding="utf-8")
    commands: list[list[str]] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            while words:
                cut = words.index("&&") if "&&" in words else len(words)
                commands.append(words[:cut])
                words = words[cut + 1 :]
    return commands


def _fast(args: list[str], corpus: Path) -> list[str]:
    """A README `phrasekit` command made quick: the bundled `sample` corpus becomes ``corpus``,
    and topic mining and eval get the small limits of ``FAST``."""
    args = [str(corpus) if a == "sample" else a for a in args]
    if args[0] != "topics":
        return args + FAST.get(args[0], [])
    method = args[args.index("--method") + 1] if "--method" in args else "clusters"
    if "-k" in args:
        args[args.index("-k") + 1] = "5"
    return args + FAST[method]


def test_readme_commands_run_in_order(tmp_path, monkeypatch):
    """Every README shell command runs, in order, in an empty folder, each `phrasekit` one with
    exit code 0 and `--quiet`, each file it names with --out / --json written.

    Changed so that it takes seconds, not the README's minutes: `sample` (1,863 abstracts) is
    the first 30 documents of the fixture corpus; topic mining runs with --no-report and (not
    ccl, which has none) --min-df 2, with the GloVe model for clusters and PNTM (-k 5 instead
    of 50) and without CCL fine-tuning (--ccl-steps 0, 200 instances); `eval` runs --quick on
    the fixture benchmark data, BiRD and Turney only. The `bash scripts/...` lines (install
    into .venv, run the demo or this suite) are not run here. The printf lines run in a shell,
    unchanged."""
    commands = readme_commands()
    assert ["phrasekit", "phrases", "sample", "--out", "phrases.json"] in commands
    corpus = tmp_path / "corpus30.jsonl"
    lines = (FIXTURES / "corpus_small.jsonl").read_text(encoding="utf-8").splitlines()
    corpus.write_text("\n".join(lines[:30]) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    ran = []
    for words in commands:
        if words[0] == "bash":
            assert words[1].startswith("scripts/") and (README.parent / words[1]).is_file()
            continue
        if words[0] != "phrasekit":
            line = " ".join(w if w == ">" else shlex.quote(w) for w in words)
            subprocess.run(["bash", "-c", line], check=True, cwd=tmp_path, timeout=30)
            continue
        args = _fast(words[1:], corpus)
        res = runner.invoke(app, args if "--help" in args else [*args, "--quiet"])
        assert res.exit_code == 0, (words, res.output)
        for flag in ("--out", "--json"):
            if flag in args:
                assert (tmp_path / args[args.index(flag) + 1]).exists(), words
        ran.append(words[1])
    assert {"encode", "phrases", "neighbors", "topics", "keyphrases", "join", "index",
            "eval"} <= set(ran)
    assert np.load(tmp_path / "vecs.npy").shape[0] == 3
    # `neighbors` reads the vocabulary written as .json.gz the same as the .json one
    assert invoke("phrases", corpus, "--out", "phrases.json.gz", "-q").exit_code == 0
    hits = {}
    for vocab in ("phrases.json", "phrases.json.gz"):
        res = invoke("neighbors", "interest rates", "--vocab", vocab, "-k", "10", "-q")
        assert res.exit_code == 0, res.output
        hits[vocab] = res.output.splitlines()
    assert hits["phrases.json"] == hits["phrases.json.gz"] and len(hits["phrases.json"]) > 3


def test_neighbors_keeps_the_vocabulary_vectors_beside_it(tmp_path):
    vocab = tmp_path / "v.txt"
    vocab.write_text("heart attack\nmyocardial infarction\nprotein folding\n", encoding="utf-8")
    args = ("neighbors", "cardiac arrest", "--vocab", vocab, "-m", "glove-50d", "-k", "2", "-q")
    first = invoke(*args)
    cache = tmp_path / "v.txt.glove-50d.vectors.npz"
    assert first.exit_code == 0 and cache.is_file(), first.output
    stamp = cache.stat().st_mtime_ns
    second = invoke(*args)
    assert second.output == first.output and cache.stat().st_mtime_ns == stamp  # reused
    assert invoke(*args, "--no-cache").output == first.output


def test_neighbors_on_cached_vectors_loads_no_model(tmp_path, monkeypatch):
    vocab = tmp_path / "v.txt"
    vocab.write_text("heart attack\nmyocardial infarction\nprotein folding\n", encoding="utf-8")
    args = ("neighbors", "--vocab", vocab, "-m", "glove-50d", "-k", "2", "-q")
    outside, inside = invoke(*args[:1], "cardiac arrest", *args[1:]), \
        invoke(*args[:1], "heart attack", *args[1:])
    assert outside.exit_code == 0 and inside.exit_code == 0
    assert (tmp_path / "v.txt.glove-50d.queries.npz").is_file()

    def no_model(*_args, **_kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr("phrasekit.cli.match.load", no_model)
    assert invoke(*args[:1], "cardiac arrest", *args[1:]).output == outside.output
    assert invoke(*args[:1], "heart attack", *args[1:]).output == inside.output
    assert invoke(*args[:1], "new query", *args[1:]).exit_code == 1  # needs the model


@pytest.mark.parametrize("command", ["topics", "keyphrases"])
def test_negative_workers_exit_2(tmp_path, command):
    res = invoke(command, "sample", "--out", tmp_path / "o", "--workers", "-1", "--quiet")
    assert res.exit_code == 2 and "--workers" in res.output
    assert not (tmp_path / "o").exists()


def test_mentions_writes_one_table_with_spans_and_vectors(tmp_path):
    import pyarrow.parquet as pq

    from phrasekit.io import read_corpus

    lines = (FIXTURES / "corpus_small.jsonl").read_text(encoding="utf-8").splitlines()
    corpus = tmp_path / "corpus20.jsonl"
    corpus.write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    out = tmp_path / "mentions"
    res = invoke("mentions", corpus, "--out", out, "-m", "glove-50d", "--dtype", "float16",
                 "--doc-vectors", "--workers", "1", "-q")
    assert res.exit_code == 0, res.output
    table = pq.read_table(out / "mentions").to_pydict()  # the folder reads as one dataset
    texts = {d.id: d.text for d in read_corpus(corpus)}
    assert set(table["doc_id"]) == set(texts) and len(table["doc_id"]) > 100
    for doc_id, start, end, surface in zip(table["doc_id"], table["start"], table["end"],
                                           table["surface"], strict=True):
        assert " ".join(texts[doc_id][start:end].split()).replace("\u2019", "'") == surface
    vectors = np.asarray(table["vector"], dtype=np.float32)
    assert vectors.shape == (len(table["doc_id"]), 50)
    norms = np.linalg.norm(vectors, axis=1)  # 0: a phrase with no GloVe word
    assert np.all((np.abs(norms - 1.0) < 2e-3) | (norms == 0)) and np.mean(norms > 0) > 0.9
    docs = pq.read_table(out / "documents").to_pydict()
    assert docs["doc_id"] == list(texts) and np.asarray(docs["vector"]).shape == (20, 50)
    assert docs["words"] == [len(t.split()) for t in texts.values()]
    assert (out / "manifest.json").is_file()
    bare = invoke("mentions", corpus, "--out", tmp_path / "bare", "-m", "none", "--workers", "1",
                  "-q")
    assert bare.exit_code == 0 and "vector" not in pq.read_schema(
        next((tmp_path / "bare" / "mentions").glob("*.parquet"))).names
    assert not (tmp_path / "bare" / "documents").exists()
    refused = ((["--dtype", "int8"], "--dtype"), (["-m", "none", "--doc-vectors"], "model"))
    for args, says in refused:
        bad = invoke("mentions", corpus, "--out", tmp_path / "x", *args)
        assert bad.exit_code == 2 and says in bad.output and not (tmp_path / "x").exists()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine", encoding="utf-8")
    bad = invoke("mentions", corpus, "--out", tmp_path / "other", "-m", "none")
    assert bad.exit_code == 2 and "not replacing" in bad.output
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:3], "{oops"]) + "\n", encoding="utf-8")
    bad = invoke("mentions", broken, "--out", tmp_path / "y", "-m", "none")
    assert bad.exit_code == 2 and "broken.jsonl:4" in bad.output and not (tmp_path / "y").exists()
    again = invoke("mentions", corpus, "--out", out, "-m", "none", "--workers", "1", "-q")
    assert again.exit_code == 0 and not (out / "documents").exists()  # its own folder: replaced


def test_a_cache_dir_that_is_a_file_exit_2(tmp_path):
    (tmp_path / "cache").write_text("mine", encoding="utf-8")
    res = invoke("topics", "sample", "--out", tmp_path / "o", "-m", "glove-50d",
                 "--cache-dir", tmp_path / "cache", "--quiet")
    assert res.exit_code == 2 and "--cache-dir" in res.output and "is a file" in res.output
    assert (tmp_path / "cache").read_text(encoding="utf-8") == "mine"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args", [
    ["index", "query", "{file}", "NYC", "-q"],
    ["topics", "search", "{file}", "graphs"],
    ["eval", "-m", "string", "--tasks", "bird", "--data-dir", "{file}", "-q"],
    ["encode", "{file}", "-o", "{out}", "-m", "{file}", "-q"],
])
def test_a_file_where_a_folder_or_model_is_expected_is_named_as_a_file(tmp_path, args):
    file = tmp_path / "names.txt"
    file.write_text("New York\n", encoding="utf-8")
    res = invoke(*[a.format(file=file, out=tmp_path / "x.npy") for a in args])
    assert res.exit_code == 2, res.output
    assert "a file" in res.output and str(file) in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_cheap_checks_come_before_the_work(tmp_path):
    """Option values, an empty query and a foreign cache file beside a vocabulary are
    refused before spaCy parses, a model loads or a vocabulary is encoded."""
    import numpy as np

    res = invoke("phrases", FIXTURES / "corpus_small.jsonl", "-o", tmp_path / "p.json",
                 "--max-phrases", "0", "-q")
    assert res.exit_code == 2 and "--max-phrases must be at least 1" in res.output
    res = invoke("index", "query", tmp_path, "", "-q")
    assert res.exit_code == 2 and "query 1 is empty" in res.output
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("deep learning\nneural networks\n", encoding="utf-8")
    foreign = tmp_path / "vocab.txt.string.queries.npz"
    np.savez(foreign, mine=np.arange(3))
    res = invoke("neighbors", "graphs", "--vocab", vocab, "-m", "string", "-q")
    assert res.exit_code == 2 and "not an embedding cache written by phrasekit" in res.output
    assert not (tmp_path / "vocab.txt.string.vectors.npz").exists()  # nothing encoded
    assert np.load(foreign)["mine"].tolist() == [0, 1, 2]
