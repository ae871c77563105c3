"""Issue 47: outputs never replace an input, a cache or a user's file; artefacts read nothing
outside their folder; inputs are bounded and checked; one clear line for each refusal."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.artifacts import (
    MANIFEST,
    IntegrityError,
    remove_stale_siblings,
    staged_folder,
    verify_folder,
    write_manifest,
)
from phrasekit.cli import app
from phrasekit.io import atomic_write, read_corpus

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = FIXTURES / "corpus_small.jsonl"
runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused(res, *named: str) -> None:
    """Exit 2 with one line naming each of ``named``."""
    text = res.output.strip()
    assert res.exit_code == 2, res.output
    assert text.count("\n") == 0 and "Traceback" not in text, text
    for name in named:
        assert name in text, (name, text)


def _index(tmp_path: Path, names: str) -> Path:
    """An entity index (``-m string``) of one name per line of ``names``, at tmp_path/idx."""
    path = tmp_path / "names.txt"
    path.write_text(names, encoding="utf-8")
    idx = tmp_path / "idx"
    assert invoke("index", "build", path, "--out", idx, "-m", "string", "-q").exit_code == 0
    return idx


def _corpus_copy(folder: Path, name: str = "c.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    shutil.copy(CORPUS, path)
    return path


# ---------------------------------------------------------------- outputs vs inputs and caches
@pytest.mark.parametrize("link", [False, True])
def test_out_that_is_the_input_is_refused(tmp_path, link):
    corpus = _corpus_copy(tmp_path)
    out = corpus
    if link:
        out = tmp_path / "link.jsonl"
        out.symlink_to(corpus)
    before = digest(corpus)
    refused(invoke("keyphrases", corpus, "--out", out, "-q"), "--out")
    refused(invoke("phrases", str(corpus), "--out", tmp_path / "x" / ".." / corpus.name, "-q"),
            "--out")
    assert digest(corpus) == before


@pytest.mark.parametrize("cache_name", ["c.jsonl", "notes.json"])
def test_phrase_cache_never_overwrites_a_file_phrasekit_did_not_write(tmp_path, cache_name):
    corpus = _corpus_copy(tmp_path)
    (tmp_path / "notes.json").write_text('{"mine": 1}', encoding="utf-8")
    cache = tmp_path / cache_name
    before = digest(cache)
    res = invoke("topics", corpus, "--phrase-cache", cache, "--out", tmp_path / "o",
                 "-m", "string", "-q")
    refused(res, "--phrase-cache")
    assert digest(cache) == before and not (tmp_path / "o").exists()


def _topic_set(tmp_path: Path, corpus: Path, out: Path):
    return invoke("topics", corpus, "--out", out, "-m", "glove-50d", "-k", "3", "--min-df", "2",
                  "--no-report", "-q")


def test_rerun_into_an_earlier_set_keeps_the_users_files(tmp_path):
    corpus = _corpus_copy(tmp_path)
    out = tmp_path / "tset"
    assert _topic_set(tmp_path, corpus, out).exit_code == 0
    (out / "notes.md").write_text("mine", encoding="utf-8")
    shutil.copy(corpus, out / "my_corpus.jsonl")
    refused(_topic_set(tmp_path, out / "my_corpus.jsonl", out), "--out")
    refused(_topic_set(tmp_path, corpus, out), "manifest does not list")
    assert (out / "notes.md").read_text(encoding="utf-8") == "mine"
    assert (out / "my_corpus.jsonl").is_file()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "topics.md").write_text("my own notes", encoding="utf-8")
    refused(_topic_set(tmp_path, corpus, mine), "mine")
    assert (mine / "topics.md").read_text(encoding="utf-8") == "my own notes"


def test_index_query_cannot_write_into_its_index(tmp_path):
    idx = _index(tmp_path, "Chicago\nHouston\n")
    refused(invoke("index", "query", idx, "chicago", "-o", idx / "names.jsonl", "-q"), "--out")
    res = invoke("index", "query", idx, "chicago", "-k", "1", "-q")
    assert res.exit_code == 0 and "Chicago" in res.output


def test_symlinked_output_folder_is_updated_through_the_link(tmp_path):
    corpus = _corpus_copy(tmp_path)
    target, link = tmp_path / "real-set", tmp_path / "link-set"
    assert _topic_set(tmp_path, corpus, target).exit_code == 0
    link.symlink_to(target)
    first = (target / MANIFEST).read_text(encoding="utf-8")
    res = invoke("topics", corpus, "--out", link, "-m", "glove-50d", "-k", "4", "--min-df", "2",
                 "--no-report", "-q")
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and (target / MANIFEST).read_text(encoding="utf-8") != first
    assert len(json.loads((target / "topics.json").read_text(encoding="utf-8"))["topics"]) == 4
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_fifo_device_and_current_folder_are_refused_as_outputs(tmp_path, monkeypatch):
    corpus = _corpus_copy(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    refused(invoke("keyphrases", corpus, "--out", fifo, "-q"), "FIFO")
    refused(invoke("topics", corpus, "--out", fifo, "-q"), "FIFO")
    refused(invoke("keyphrases", corpus, "--out", "/dev/null", "-q"), "device")
    monkeypatch.chdir(tmp_path)
    refused(invoke("topics", corpus, "--out", ".", "-q"), "current folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "pipe"]


def test_stale_cleanup_matches_its_own_names_exactly(tmp_path):
    """``--out 'r?'`` must not adopt or delete the leftovers of another output named ``ra``."""
    dead = 2**22 + 17  # above the kernel's pid_max default
    other = tmp_path / f".ra.old-{dead}-abcd1234"
    (other / "set").mkdir(parents=True)
    (other / "set" / "x.txt").write_text("ra's", encoding="utf-8")
    remove_stale_siblings(tmp_path / "r?")
    assert other.exists() and not (tmp_path / "r?").exists()
    with atomic_write(tmp_path / "r?") as fh:
        fh.write("x")
    assert other.exists()


def test_long_output_names_stage_within_the_name_limit(tmp_path):
    name = "n" * 245
    with staged_folder(tmp_path / name, "demo") as tmp:
        assert len(tmp.name) <= 255
        (tmp / "a.txt").write_text("a", encoding="utf-8")
    verify_folder(tmp_path / name, "demo")
    with atomic_write(tmp_path / ("f" * 250)) as fh:
        fh.write("x")
    assert (tmp_path / ("f" * 250)).read_text(encoding="utf-8") == "x"


# ------------------------------------------------------------------ artefacts stay in their folder
def _resign(folder: Path, kind: str) -> None:
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    for name in manifest["files"]:
        path = folder / name
        manifest["files"][name] = {"sha256": digest(path), "bytes": path.stat().st_size}
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")


@pytest.mark.parametrize("entry", ["../outside.txt", "/etc/hostname", "a/../../outside.txt"])
def test_manifest_entries_outside_the_folder_are_refused_before_reading(tmp_path, entry):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "a.txt").write_text("a", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("secret", encoding="utf-8")
    write_manifest(folder, "demo")
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    manifest["files"][entry] = {"sha256": digest(tmp_path / "outside.txt"), "bytes": 6}
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(IntegrityError, match="not a plain file name"):
        verify_folder(folder, "demo")


def test_symlinked_member_is_refused_even_when_resigned(tmp_path):
    idx = _index(tmp_path, "Chicago\nHouston\n")
    outside = tmp_path / "outside.jsonl"
    shutil.copy(idx / "names.jsonl", outside)
    (idx / "names.jsonl").unlink()
    (idx / "names.jsonl").symlink_to(outside)
    _resign(idx, "entity-index")
    refused(invoke("index", "query", idx, "chicago", "-q"), "symlink")


def test_symlinked_manifest_is_refused(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "a.txt").write_text("a", encoding="utf-8")
    write_manifest(folder, "demo")
    (folder / MANIFEST).rename(tmp_path / "elsewhere.json")
    (folder / MANIFEST).symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(IntegrityError, match="symlink"):
        verify_folder(folder, "demo")


def test_swapped_ann_graph_is_refused(tmp_path):
    from phrasekit.similarity.retrieval import EntityIndex, EntityIndexError

    names = ["Chicago", "Houston", "San Antonio", "Phoenix", "Dallas", "Austin"]
    EntityIndex.build(names, "string", index="ann").save(tmp_path / "a")
    EntityIndex.build(list(reversed(names)), "string", index="ann").save(tmp_path / "b")
    shutil.copy(tmp_path / "b" / "index.faiss", tmp_path / "a" / "index.faiss")
    _resign(tmp_path / "a", "entity-index")
    with pytest.raises(EntityIndexError, match=r"index\.faiss"):
        EntityIndex.load(tmp_path / "a")
    assert EntityIndex.load(tmp_path / "b").query("Houston", k=1)[0][0][0] == "Houston"


def test_transformers_folder_without_the_models_tensors_is_refused(tmp_path):
    from safetensors.numpy import save_file

    from phrasekit.models.backbones import minilm_path

    folder = tmp_path / "plain"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        if (minilm_path() / name).is_file():
            shutil.copy(minilm_path() / name, folder / name)
    save_file({"foo": np.zeros(3, dtype=np.float32)}, str(folder / "model.safetensors"))
    src = tmp_path / "one.txt"
    src.write_text("new york\n", encoding="utf-8")
    refused(invoke("encode", src, "--out", tmp_path / "v.npy", "-m", folder, "-q"),
            "random weights")
    assert not (tmp_path / "v.npy").exists()


def test_search_parameters_are_bounded(tmp_path):
    from phrasekit.similarity.index import ANNIndex

    with pytest.raises(ValueError, match="ef_search"):
        ANNIndex(8, ef_search=10**12)


# ---------------------------------------------------------------------------- bounded inputs
def test_deeply_nested_json_is_a_clear_error(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"text": "a"}\n' + "[" * 100_000 + "\n", encoding="utf-8")
    refused(invoke("phrases", path, "--out", tmp_path / "p.json", "-q"), "deep.jsonl:2")
    cfg = tmp_path / "deep.json"
    cfg.write_text("[" * 100_000, encoding="utf-8")
    from phrasekit.io import read_json_object

    with pytest.raises(ValueError, match=r"deep\.json"):
        read_json_object(cfg)


@pytest.mark.parametrize(("args", "option"), [
    (["--threads", "100000"], "--threads"), (["--seed", "-1"], "--seed"),
    (["--grounding", "nan"], "--grounding"), (["--grounding", "inf"], "--grounding"),
    (["--workers", "-1"], "--workers"), (["--worker-cpus", "nan"], "--worker-cpus"),
])
def test_numeric_options_are_range_checked_up_front(tmp_path, args, option):
    cmd = "keyphrases" if option == "--threads" else "topics"
    out = tmp_path / ("k.jsonl" if cmd == "keyphrases" else "o")
    refused(invoke(cmd, CORPUS, "--out", out, *args, "-q"), option)
    assert not out.exists()


# ---------------------------------------------------------------------------- contract holes
@pytest.mark.parametrize(("value", "why"), [("null", "must be"), ("{}", "must be"),
                                            ('"0704.0001"', "duplicate")])
def test_document_ids_are_strings_or_integers_and_unique(tmp_path, value, why):
    path = tmp_path / "ids.jsonl"
    path.write_text('{"id": "0704.0001", "text": "a b"}\n'
                    f'{{"id": {value}, "text": "c d"}}\n', encoding="utf-8")
    refused(invoke("phrases", path, "--out", tmp_path / "p.json", "-q"), "ids.jsonl:2", why)


def test_corpus_suffix_is_case_insensitive(tmp_path):
    upper = tmp_path / "corpus.JSONL"
    shutil.copy(CORPUS, upper)
    assert [d.id for d in read_corpus(upper)] == [d.id for d in read_corpus(CORPUS)]


def test_identical_documents_do_not_make_empty_topics(tmp_path):
    path = tmp_path / "same.jsonl"
    path.write_text("".join(json.dumps({"text": "the cat sat on the mat today"}) + "\n"
                            for _ in range(20)), encoding="utf-8")
    refused(invoke("topics", path, "--out", tmp_path / "o", "-m", "string", "-q"), "differ")


def test_join_csv_cells_that_start_like_formulas_are_made_safe(tmp_path):
    table = "id,title\n1,=HYPERLINK(\"x\")\n2,+1\n3,-2\n4,@SUM(A1)\n5,plain\n"
    (tmp_path / "t.csv").write_text(table, encoding="utf-8")
    shutil.copy(tmp_path / "t.csv", tmp_path / "u.csv")
    out = tmp_path / "j.csv"
    res = invoke("join", tmp_path / "t.csv", tmp_path / "u.csv", "--left-on", "title",
                 "--right-on", "title", "--out", out, "-m", "string", "-q")
    assert res.exit_code == 0, res.output
    cells = [c for line in out.read_text(encoding="utf-8").splitlines()[1:]
             for c in line.split(",")]
    assert not [c for c in cells if c.lstrip('"')[:1] in ("=", "+", "@") or c == "-2"]
    assert ",'+1,1,'+1," in out.read_text(encoding="utf-8")
    res = invoke("join", tmp_path / "t.csv", tmp_path / "u.csv", "--left-on", "title",
                 "--right-on", "title", "--out", out, "-m", "string", "--no-csv-safe", "-q")
    assert res.exit_code == 0 and ",+1,1,+1," in out.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------- messages
def test_corpus_that_is_a_fifo_device_or_folder_is_named_as_such(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    refused(invoke("phrases", fifo, "--out", tmp_path / "p.json", "-q"), "FIFO")
    refused(invoke("phrases", "/dev/null", "--out", tmp_path / "p.json", "-q"), "device")
    (tmp_path / "empty").mkdir()
    refused(invoke("phrases", tmp_path / "empty", "--out", tmp_path / "p.json", "-q"),
            "folder")


def test_precision_on_a_model_without_one_is_a_clear_error(tmp_path):
    src = tmp_path / "one.txt"
    src.write_text("paris\n", encoding="utf-8")
    refused(invoke("encode", src, "--out", tmp_path / "v.npy", "-m", "string@bf16", "-q"),
            "string@bf16")


def test_spacy_batches_are_bounded_by_characters():
    """A one-line document of any size goes to spaCy in pieces, batched under
    PIPE_BATCH_CHARS characters, so memory stays bounded (issue 47: 5 MB took 11 GB)."""
    from phrasekit.phrases.extract import PhraseExtractor
    from phrasekit.phrases.pieces import PIPE_BATCH_CHARS, split_long_text

    ex = PhraseExtractor()
    text = "word " * 300_000
    pieces = [(p, (0, i)) for i, p in enumerate(split_long_text(text, ex.max_chars))]
    pieces += [("a short document", (1, 0))] * 100
    seen = 0
    for group, batch, _ in ex._size_classes(pieces):
        longest = max(len(p[0]) for p in group)
        assert batch == 1 or batch * longest <= PIPE_BATCH_CHARS
        seen += len(group)
    assert seen == len(pieces)


def test_weights_of_another_model_are_refused(tmp_path):
    from phrasekit.models.backbones import packaged_model_dir

    folder = shutil.copytree(packaged_model_dir("pearl-minilm"), tmp_path / "mixed")
    shutil.copy(packaged_model_dir("phrase-bert-minilm") / "model.safetensors",
                folder / "model.safetensors")
    _resign(folder, "model")
    src = tmp_path / "one.txt"
    src.write_text("new york\n", encoding="utf-8")
    refused(invoke("encode", src, "--out", tmp_path / "v.npy", "-m", folder, "-q"),
            "model.safetensors")


def test_index_query_csv_is_safe_and_readers_name_fifos(tmp_path):
    idx = _index(tmp_path, "=1+1\n+1\nplain\n")
    names = tmp_path / "names.txt"
    out = tmp_path / "q.csv"
    res = invoke("index", "query", idx, "=1+1", "-k", "3", "-o", out, "-q")
    assert res.exit_code == 0, res.output
    assert ",'=1+1," in out.read_text(encoding="utf-8")
    assert ",=1+1," not in out.read_text(encoding="utf-8")
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    refused(invoke("join", fifo, names, "--left-on", "a", "--right-on", "a", "--out",
                   tmp_path / "j.csv", "-m", "string", "-q"), "FIFO")
    refused(invoke("index", "build", fifo, "--out", tmp_path / "i2", "-q"), "FIFO")
    refused(invoke("join", names, names, "--left-on", "a", "--right-on", "a", "--out",
                   tmp_path / "j.csv", "--threshold", "nan", "-q"), "--threshold")


def test_string_encoder_hashes_long_texts_in_pieces_with_the_same_vector(monkeypatch):
    from phrasekit.encoders import string as string_encoder
    from phrasekit.encoders.string import CharNgramEncoder

    text = " ".join(["alpha", "Überstraße", "new-york", "x"] * 30_000)
    enc = CharNgramEncoder()
    pieces = enc.encode([text, "short"])
    monkeypatch.setattr(string_encoder, "PIECE_CHARS", 10**9)
    assert len(string_encoder._pieces(text)) == 1
    np.testing.assert_allclose(pieces, enc.encode([text, "short"]), atol=1e-6)
    monkeypatch.undo()
    assert len(string_encoder._pieces(text)) > 1


def test_a_write_error_without_a_file_name_names_the_output(tmp_path, monkeypatch):
    """"File too large" (EFBIG from a file size limit) said which output it was writing."""
    import errno

    import phrasekit.cli.models as models_cli

    def too_large(*args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(models_cli, "write_npy_rows", too_large, raising=False)
    src = tmp_path / "one.txt"
    src.write_text("paris\n", encoding="utf-8")
    res = invoke("encode", src, "--out", tmp_path / "v.npy", "-m", "string", "-q")
    refused(res, "File too large", "v.npy")
