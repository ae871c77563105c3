"""Bad input found by probing the CLI as a hostile user would: each case exits 2 with one line
naming the file (and line) or the flag, and writes or replaces nothing."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phrasekit.eval.base import numbers, read_tsv

runner = CliRunner()


def _files(tmp: Path) -> None:
    (tmp / "ok.txt").write_text("new york city\nlos angeles\nparis\n", encoding="utf-8")
    (tmp / "ws.txt").write_text("  \n\t\n", encoding="utf-8")
    (tmp / "L.jsonl").write_text('{"title": "x"}\n', encoding="utf-8")
    (tmp / "R.csv").write_text("title\ny\n", encoding="utf-8")
    (tmp / "docs.jsonl").write_text(
        "".join(f'{{"id": "{i}", "text": "a text about topic {i}"}}\n' for i in range(12)),
        encoding="utf-8")
    (tmp / "blank.jsonl").write_text('{"id": "a", "text": "   "}\n', encoding="utf-8")
    (tmp / "kempt.jsonl").write_text('{"id": "x", "text": "hello world"}\n\n'
                                     '{"id": "a", "text": ""}\n', encoding="utf-8")
    (tmp / "self.txt").write_text("bank\n", encoding="utf-8")
    (tmp / "docs.txt").write_text("the bank raised rates\nthe striker scored\n", encoding="utf-8")
    (tmp / "p.tsv").write_text("a cat sat\ta cat was sitting\n", encoding="utf-8")
    (tmp / "n.parquet").write_bytes(b"PAR1 not text")
    (tmp / "wdu").mkdir()
    (tmp / "wdu" / "manifest.json").write_text('{"mine": true}', encoding="utf-8")
    (tmp / "run1").mkdir()
    (tmp / "run1" / "report.json").write_text('{"my": "report"}', encoding="utf-8")
    (tmp / "run2").mkdir()
    (tmp / "run2" / "notes.txt").write_text("mine", encoding="utf-8")
    (tmp / "corpus").mkdir()
    (tmp / "corpus" / "documents.jsonl").write_text('{"id": 1, "text": "a text"}\n',
                                                     encoding="utf-8")


TOPICS = "topics docs.jsonl -o t -m glove-50d -q --no-cache"

#: (command line, the error line it must give)
CASES = [
    ("encode -m glove-50d -q ok.txt -o w.npy --work-dir wdu",
     r"wdu/manifest\.json: not a phrasekit shard manifest"),
    ("encode -m glove-50d -q ok.txt -o w.npy --work-dir .", r"--work-dir \. is the current folder"),
    ("encode -m glove-50d -q ok.txt -o w.npy --work-dir w.npy",
     r"--work-dir w\.npy overlaps w\.npy"),
    ("phrases corpus -o p.json -q --work-dir corpus/shards",
     r"--work-dir corpus/shards overlaps corpus"),
    ("train uctopic --data corpus -o run1 -q --max-steps 1",
     r"--out run1 holds only a report\.json"),
    ("train pearl --data corpus -o run2 -q",
     r"run2/notes\.txt, which a phrasekit training run does not write"),
    ("encode -m glove-50d -q ws.txt -o e.npy --skip-blank",
     r"ws\.txt: no lines to read \(only 2 blank lines\)"),
    ("pairs -m no-such-model p.tsv -o x.parquet",
     r"x\.parquet: this command writes tab-separated text.*not Parquet"),
    ("index query idx foo -o q.parquet", r"writes CSV.*not Parquet"),
    ("index query idx foo --column x", r"--column names the query column"),
    ("index query idx --queries nope.txt", r"queries file not found: nope\.txt"),
    ("index query idx --queries ws.txt", r"ws\.txt: no names \(only blank lines"),
    ("index build -m glove-50d -q n.parquet -o idx",
     r"n\.parquet: a names file is plain text .* not \.parquet"),
    ("join -m glove-50d -q L.jsonl R.csv --left-on title --right-on title -o j.csv",
     r"L\.jsonl: JSON lines is not a table format"),
    ("eval -m glove-50d --tasks '' --quick -q", r"--tasks '' names no task"),
    ("eval -m glove-50d --tasks bird -q --aliases nope.tsv.gz",
     r"--aliases nope\.tsv\.gz: not found"),
    (f"{TOPICS} -k 2 --sentences 5", r"--sentences applies to the pntm method, not documents"),
    (f"{TOPICS} -k 2 --ccl-steps 3", r"--ccl-steps applies to the ccl method"),
    (f"{TOPICS} --method ccl --min-df 2",
     r"--min-df applies to the documents, clusters and pntm methods, not ccl"),
    (f"{TOPICS} --method pntm --k-min 3", r"--k-min applies to .*, not pntm"),
    (f"{TOPICS} -k 2 --k-min 3", r"-k fixes the number of topics"),
    (f"{TOPICS} --k-max 3", r"--k-max 3 is below the smallest K the documents method tries"),
    (f"{TOPICS} --max-phrases 0", r"--max-phrases must be at least 1"),
    ("topics docs.jsonl -o t.json -m glove-50d -q",
     r"--out t\.json: this command writes a folder, and the name ends in \.json"),
    ("train subtst --task msrp -o s --topics 0 --train-topics -q",
     r"--train-topics trains the topic matrix, and --topics 0 has none"),
    ("topics blank.jsonl -o t -m glove-50d -q --no-cache -k 2 --min-df 1",
     r"blank\.jsonl: the corpus is empty: no documents with words"),
    ("neighbors bank --vocab self.txt -m glove-50d -q --no-cache",
     r"self\.txt: the vocabulary has no entry other than the query 'bank'"),
    ("mentions docs.txt -o mn --text-field body -m none -q",
     r"docs\.txt: a plain-text corpus is one document per line"),
    ("mentions docs.jsonl -o mn -m none --dtype float16 -q",
     r"--dtype sets the vectors' number type, and -m none"),
    ("phrases docs.jsonl -o p.json --worker-cpus 2 -q",
     r"--worker-cpus sets the CPUs of each Ray worker: it needs --engine ray"),
    ("phrases docs.jsonl -o p.json --min-df 1000 -q --workers 1",
     r"docs\.jsonl: no phrase found in 12 documents with --min-df 1000"),
    ("facets 'real property' -m facets-phrase-k3 -k 10 -q",
     r"-k and --sentence pick a packaged facet model; --model names one"),
    ("facets 'real property' -n 10000000 -q", r"-n must be in \[1, 50000\]"),
    ("encode docs.jsonl -o v.npy -m string -q",
     r"docs\.jsonl: encode reads a text file \(one phrase per line\) .* not JSON lines"),
    ("train pearl --data corpus -o r -q --max-minutes nan", r"--max-minutes must be between"),
    ("train pearl --data corpus -o r -q --teachers mpnet", r"--teachers need --distill-weight > 0"),
    ("train phrase-bert --data corpus -o r -q --no-paraphrase --max-paraphrase 5",
     r"--max-paraphrase limits the paraphrase triplets"),
    ("train phrase-bert --data corpus -o r -q --no-context --max-paraphrase 0",
     r"--max-paraphrase and --max-context leave no triplet to train on"),
    ("train pearl --data corpus -o r -q --alpha 0.3 --alphas 0.1,0.2",
     r"--alpha fixes the averaging coefficient and --alphas lists those tried on dev"),
    ("train pearl --data corpus -o r -q --alias-batch 8",
     r"--alias-batch is read only with --alias-weight > 0"),
    ("train pearl --data corpus -o r -q --no-char-encoder --lr-char 0.01",
     r"--lr-char is read only with --char-encoder"),
    ("train pearl --data corpus -o r -q --no-type-loss --type-weight 3",
     r"--type-weight is read only with --type-loss"),
    ("train pearl --data corpus -o r -q --train-layers 99", r"--train-layers is 99, but minilm"),
    ("train pearl --data corpus -o r -q --hard-negatives -1", r"--hard-negatives must be >= 0"),
    *((f"train {cmd} -o run2 -q", rf"run2/notes\.txt, which `train {cmd}` does not write")
      for cmd in ("pearl-data", "phrase-bert-data", "uctopic-data", "facets-data")),
    ("keyphrases corpus -o corpus/documents.jsonl -q",
     r"--out corpus/documents\.jsonl would be read as part of the corpus folder corpus"),
    ("neighbors bank --vocab docs.jsonl -m glove-50d -q --no-cache",
     r"docs\.jsonl: a vocabulary is plain text .* not JSON lines"),
    ("eval -m glove-50d --tasks bird --alias-split test", r"--alias-split chooses the split"),
    ("train subtst --task msrp -o s --topics 0 --lda-corpus docs.jsonl -q",
     r"--lda-corpus adds documents to the topics' LDA, and --topics 0 trains none"),
    ("topics docs.jsonl -o t -m glove-50d -q --time-bins year", r"--time-bins bins the dates"),
    ("topics docs.jsonl -o t -m glove-50d -q --k-max 500",
     r"docs\.jsonl: --k-max 500 is above the corpus' 12 documents"),
    ("topics docs.jsonl -o t -m glove-50d -q --method clusters --cache-dir cd",
     r"--cache-dir applies to the documents and pntm methods, not clusters"),
    ("keyphrases docs.jsonl -o k.jsonl --no-csv-safe -q",
     r"--no-csv-safe applies to CSV and tab-separated outputs, not JSON lines"),
    ("train pearl --data corpus -o r -q --teachers nope --distill-weight 1",
     r"--teachers: unknown model 'nope'"),
    ("eval -m glove-50d --tasks bird --json -", r"--json -: the table goes to stdout"),
    ("eval -m glove-50d --tasks bird --json x.csv", r"x\.csv: this command writes JSON, not CSV"),
    ("train facets --data corpus -o r -q -k 0", r"-k must be in \[1, 256\], got 0"),
    ("train uctopic --data corpus -o r -q --max-length 100000",
     r"--max-length must be in \[8, 512\]"),
    ("train subtst --task msrp -o run2 -q", r"run2 holds other files but no phrasekit manifest"),
    ("train pearl-reaverage -m corpus -o r -q --aliases nope",
     r"--aliases nope: no alias file there"),
    ("keyphrases -q kempt.jsonl -o k.jsonl", r"kempt\.jsonl:3: document 'a' has an empty 'text'"),
    ("keyphrases -q docs.jsonl -o k.jsonl --candidates foo", r"--candidates must be one of"),
]


@pytest.mark.parametrize(("line", "message"), CASES, ids=[c[0][:40] for c in CASES])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(line, message, tmp_path,
                                                             monkeypatch):
    from phrasekit.cli import app

    monkeypatch.chdir(tmp_path)
    _files(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    res = runner.invoke(app, shlex.split(line))
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert pytest.importorskip("re").search(message, lines[0]), lines[0]
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before  # nothing written, nothing replaced


def test_a_number_cell_that_is_not_one_is_named_by_its_line(tmp_path):
    path = tmp_path / "bird.tsv"
    path.write_text("a\tb\tscore\nx\ty\t0.5\n\nu\tv\tabc\n", encoding="utf-8")
    rows = read_tsv(path, header=("a", "b", "score"))
    with pytest.raises(ValueError, match=r"bird\.tsv:4: 'abc' is not a finite number"):
        numbers(rows, 2, path)


def test_a_work_dir_may_hold_the_runs_caches_and_a_rerun_resumes(tmp_path, monkeypatch):
    """Not refused: a phrase cache inside --work-dir, on the first run and the rerun."""
    from phrasekit.cli import app

    monkeypatch.chdir(tmp_path)
    _files(tmp_path)
    corpus = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"
    args = shlex.split(f"topics {corpus} -o t -m glove-50d -q --no-cache -k 3 --min-df 2 "
                       "--no-report --work-dir wd --phrase-cache wd/phrases.json.gz")
    for _ in range(2):
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    assert (tmp_path / "wd" / "phrases.json.gz").is_file()


@pytest.mark.parametrize("cmd", ["facets-data", "uctopic-data"])
def test_a_data_build_of_a_missing_corpus_creates_no_folder(cmd, tmp_path, monkeypatch):
    from phrasekit.cli import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpora").mkdir()
    monkeypatch.setenv("PHRASEKIT_SHARED", str(tmp_path))
    res = runner.invoke(app, ["train", cmd, "-o", "deep/out", "--corpus", "nope", "-q"])
    assert res.exit_code == 2 and "'nope' not found" in res.stderr, res.output
    assert not (tmp_path / "deep").exists()
