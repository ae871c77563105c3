"""Phrase-BERT: triplet data (paraphrases, masked contexts, test-string filter), triplet loss,
schedule, a tiny resumable training run whose model folder loads and obeys the encoder
contract, and bad-input errors. Real fixture data (tests/fixtures/pearl, tests/fixtures/eval)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import phrasekit
from phrasekit.cli import app
from phrasekit.encoders.phrase_bert import FORMAT as PHRASE_BERT_FORMAT
from phrasekit.encoders.phrase_bert import load_phrase_bert
from phrasekit.models.folders import model_folder_format
from phrasekit.training.core.losses import TripletLoss
from phrasekit.training.data.leakage import BenchmarkStringFilter, collect_test_strings
from phrasekit.training.data.sources import normalize
from phrasekit.training.phrase_bert.contexts import (
    build_context_triplets,
    masked_window,
    vocabulary_occurrences,
)
from phrasekit.training.phrase_bert.data import (
    CONTEXT_FILE,
    PARAPHRASE_FILE,
    build_phrase_bert_dataset,
    read_triplets,
)
from phrasekit.training.phrase_bert.paraphrases import labelled_ppdb_triplets
from phrasekit.training.phrase_bert.task import (
    PhraseBertTask,
    PhraseBertTrainingConfig,
    batch_schedule,
    load_triplets,
    train_phrase_bert,
)
from phrasekit.training.phrase_bert.words import (
    content_word,
    content_words,
    corrupt_phrase,
    lexically_disjoint,
)

FIXTURES = Path(__file__).parent / "fixtures"
PEARL = FIXTURES / "pearl"
EVAL = FIXTURES / "eval"
MASK = "[MASK]"
TEXTS = ["hot dog", "frankfurter", "central bank", "The New York Times reported on Monday."]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from phrasekit.models.backbones import minilm_path

    return AutoTokenizer.from_pretrained(str(minilm_path()))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, tokenizer) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("pb") / "data"
    report = build_phrase_bert_dataset(
        out, shared_dir=PEARL, corpora=["mini"], benchmark_dir=EVAL, strict_filter=False,
        context_tokens=24, tokenizer=tokenizer, show_progress=False)
    return out, report


# ------------------------------------------------------------------------------ data
def test_lexical_diversity_rules():
    assert lexically_disjoint("complete control", "full power of the system")
    assert not lexically_disjoint("thanking you", "thank everyone")  # shared stem
    assert not lexically_disjoint("nut sedge", "nutsedge")  # compound
    assert not lexically_disjoint("a cappella", "a capella")  # spelling variant
    assert not lexically_disjoint("of the", "in a")  # no content word at all
    assert content_words("The (Bank) of England,") == ["bank", "england"]
    assert content_word(",") is None and content_word("the") is None


def test_binomials_are_recognised_and_dropped():
    from phrasekit.training.data.sources import Synset
    from phrasekit.training.phrase_bert.paraphrases import is_binomial, without_binomials

    assert is_binomial("Ursus horribilis", "noun.animal")
    assert not is_binomial("grizzly bear", "noun.animal")
    assert not is_binomial("English violet", "noun.person")  # only in animal/plant synsets
    assert not is_binomial("Independence Day", "noun.plant")
    bear = Synset("1-n", "n", ["grizzly", "grizzly bear", "Ursus horribilis"], [], "noun.animal")
    day = Synset("2-n", "n", ["Fourth of July", "Independence Day"], [], "noun.time")
    kept, dropped = without_binomials([bear, day])
    assert dropped == 1 and kept[0].members == ["grizzly", "grizzly bear"] and kept[1] is day


def test_paraphrase_positives_share_no_content_word(dataset):
    out, report = dataset
    rows = read_triplets(out / PARAPHRASE_FILE)
    assert len(rows) == report["paraphrase_triplets"] > 10
    assert {r["source"] for r in rows} <= {"ppdb", "ppdb_filtered", "wordnet"}
    for r in rows:
        assert lexically_disjoint(r["anchor"], r["positive"]), r
        assert not set(content_words(r["anchor"])) & set(content_words(r["positive"]))


def test_triplets_with_null_or_blank_fields_are_refused(tmp_path):
    """A null field was read as the text "None" and a blank one trained as a phrase."""
    import gzip
    import json

    for name, rec, message in (("null", {"anchor": None, "positive": "b", "negative": "c"},
                                "not a triplet record"),
                               ("blank", {"anchor": " ", "positive": "b", "negative": "c"},
                                "empty anchor")):
        path = tmp_path / f"{name}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
        with pytest.raises(ValueError, match=f":1: {message}"):
            read_triplets(path)


def test_negatives_differ_in_exactly_one_content_word(dataset):
    rows = read_triplets(dataset[0] / PARAPHRASE_FILE)
    for r in rows:
        a, n = r["anchor"].split(), r["negative"].split()
        assert len(a) == len(n), r
        diff = [i for i, (x, y) in enumerate(zip(a, n, strict=True)) if x != y]
        assert len(diff) == 1, r
        i = diff[0]
        assert content_word(a[i]) and content_word(n[i]), r
        assert content_word(n[i]) not in content_words(r["positive"]), r


def test_corrupt_phrase_is_seeded():
    vocab = ["fluid", "river", "tower", "control"]
    one = corrupt_phrase("complete control", vocab, random.Random(3))
    assert one == corrupt_phrase("complete control", vocab, random.Random(3))
    assert one != "complete control" and len(one.split()) == 2
    assert corrupt_phrase("of the", vocab, random.Random(0)) is None  # no non-stopword
    capital = corrupt_phrase("Bank", ["river"], random.Random(0))
    assert capital == "River"


def test_context_mask_replaces_the_phrase(dataset):
    out, report = dataset
    rows = read_triplets(out / CONTEXT_FILE)
    assert len(rows) == report["context_triplets"] > 5
    docs = [json.loads(line) for line in (PEARL / "corpora/mini/documents.jsonl").open()]
    train_text = [" ".join(d["text"].split()) for d in docs if d["split"] == "train"]
    for r in rows:
        assert r["positive"].count(MASK) == 1 and r["negative"].count(MASK) == 1
        restored = r["positive"].replace(MASK, r["anchor"])
        assert any(restored in t for t in train_text), r
        assert normalize(r["anchor"]) not in normalize(r["negative"]), r
        assert r["positive"] != r["negative"]
        assert len(r["anchor"].split()) >= 2
    assert not any("zebra" in r["positive"] for r in rows)  # the test-split document
    assert report["corpora"]["mini"]["skipped_test_split"] == 1


def test_masked_window_is_centred_and_sized(tokenizer):
    words = [f"w{i}" for i in range(400)]
    text = " ".join([*words[:200], "central", "bank", *words[200:]])
    start = text.index("central bank")
    ctx = masked_window(text, start, start + len("central bank"), tokenizer, 60)
    n_tokens = len(tokenizer(ctx, add_special_tokens=False)["input_ids"])
    assert 50 <= n_tokens <= 60 and ctx.count(MASK) == 1 and "central" not in ctx
    left, right = ctx.split(MASK)
    assert abs(len(left.split()) - len(right.split())) <= 2
    near_start = masked_window(text, 0, 2, tokenizer, 60)  # "w0" at the very start
    assert near_start.startswith(MASK) and len(tokenizer(near_start)["input_ids"]) <= 62


def test_vocabulary_occurrences_find_cached_phrases():
    texts = {0: "Tony Blair met the Prime Minister. The prime minister's office said no.",
             1: "No phrase here."}
    found = vocabulary_occurrences(texts, ["prime minister", "Tony Blair", "word"])
    assert sorted(found) == ["prime minister", "tony blair"]
    spans = [texts[0][s:e] for _, s, e in found["prime minister"]]
    assert spans == ["Prime Minister"]  # "minister's" is another word
    assert found["tony blair"] == [(0, 0, 10)]


def test_cached_phrase_vocabulary_replaces_spacy(tmp_path, tokenizer):
    from phrasekit.io import read_corpus
    from phrasekit.phrases import PhraseExtractor, load_spacy

    mini = PEARL / "corpora" / "mini"
    vocab = PhraseExtractor(spacy_model=load_spacy()).extract(read_corpus(mini))
    assert "zebra crossing festival" in vocab  # built on every document, test split included
    vocab.to_json(tmp_path / "mini.json.gz")
    report = build_phrase_bert_dataset(
        tmp_path / "d", shared_dir=PEARL, corpora=["mini"], benchmark_dir=EVAL,
        strict_filter=False, max_paraphrase=0, context_tokens=24, tokenizer=tokenizer,
        phrase_vocabs={"mini": tmp_path / "mini.json.gz"}, show_progress=False)
    assert report["context"]["phrases_from"] == {"mini": "vocabulary"}
    rows = read_triplets(tmp_path / "d" / CONTEXT_FILE)
    assert report["paraphrase_triplets"] == 0 and len(rows) == report["context_triplets"] > 5
    for r in rows:  # only texts of the train split are searched
        assert "zebra" not in r["anchor"].lower() and r["positive"].count(MASK) == 1


def test_test_strings_are_removed_and_counted(dataset, tokenizer):
    out, report = dataset
    para = report["paraphrase"]["dropped"]
    # the planted BiRD pair and the real "completely unacceptable" pairs of PPDB dev/test
    assert para["ppdb:test_string"] >= 2
    filt = report["test_string_filter"]
    assert filt["removed_paraphrase_pairs"] == sum(
        v for k, v in para.items() if k.endswith(":test_string"))
    assert filt["per_file"]["bird/bird.tsv"]["removed_paraphrase_pairs"] >= 1
    test = set().union(*collect_test_strings(EVAL, strict=False).values())
    for name in (PARAPHRASE_FILE, CONTEXT_FILE):
        for r in read_triplets(out / name):
            assert normalize(r["anchor"]) not in test and normalize(r["positive"]) not in test
    # context phrases: a phrase that is a test string never becomes a triplet
    pieces = [("mini", "Investors said the stock market fell. The central bank raised rates.")]
    text = pieces[0][1]
    occ = {"stock market": [(0, text.index("stock"), text.index(" fell"))],
           "central bank": [(0, text.index("central"), text.index(" raised"))]}
    filt2 = BenchmarkStringFilter({"bird/bird.tsv": {"stock market"}})
    rows, stats = build_context_triplets(pieces, occ, tokenizer, filt2, random.Random(0), 10,
                                         24)
    assert stats["dropped"]["test_string"] == 1 and filt2.removed_phrases_unique == 1
    assert rows == []  # the one phrase left has no context from another document


def test_labelled_ppdb_triplets_use_judged_train_pairs_only():
    from phrasekit.training.data.sources import read_ppdb
    from phrasekit.training.data.sources import strip_outer_punct as strip

    data = PEARL / "data"
    judged = {name: {(strip(a), strip(b), y)
                     for a, b, y in read_ppdb(data / name / f"{name}.json", "train")}
              for name in ("ppdb", "ppdb_filtered")}

    def has(name: str, a: str, b: str, label: bool) -> bool:
        return (a, b, label) in judged[name] or (b, a, label) in judged[name]

    rows, stats = labelled_ppdb_triplets(data, ["ppdb", "ppdb_filtered"],
                                         BenchmarkStringFilter({}), BenchmarkStringFilter({}),
                                         random.Random(0))
    assert stats["triplets_per_source"]["ppdb_filtered:labelled"] >= 3
    for r in rows:
        name = r["source"].split(":")[0]
        assert has(name, r["anchor"], r["positive"], True)
        assert has(name, r["anchor"], r["negative"], False)
    again, _ = labelled_ppdb_triplets(data, ["ppdb", "ppdb_filtered"], BenchmarkStringFilter({}),
                                      BenchmarkStringFilter({}), random.Random(0))
    assert again == rows  # seeded
    # a judged negative that is a benchmark string is never used
    banned = rows[0]["negative"]
    filt = BenchmarkStringFilter({"x/test": {normalize(banned)}})
    rows2, _ = labelled_ppdb_triplets(data, ["ppdb_filtered", "ppdb"], BenchmarkStringFilter({}),
                                      filt, random.Random(0))
    assert all(r["negative"] != banned for r in rows2) and filt.removed_phrases_unique == 1


# ------------------------------------------------------------------------------ loss, schedule
def test_triplet_loss_hand_computed():
    a = torch.tensor([[0.0, 0.0], [0.0, 0.0]])
    p = torch.tensor([[3.0, 4.0], [1.0, 0.0]])  # distances 5 and 1
    n = torch.tensor([[6.0, 8.0], [0.0, 1.0]])  # distances 10 and 1
    # row 1: max(0, 1 - 10 + 5) = 0; row 2: max(0, 1 - 1 + 1) = 1
    assert TripletLoss(1.0)(a, p, n).item() == pytest.approx(0.5)
    # margin 6: row 1 max(0, 6 - 10 + 5) = 1, row 2: 6
    assert TripletLoss(6.0)(a, p, n).item() == pytest.approx(3.5)
    x = a.clone().requires_grad_(True)
    TripletLoss(1.0)(x, p, n).backward()
    assert torch.isfinite(x.grad).all()
    with pytest.raises(ValueError, match="margin"):
        TripletLoss(0.0)
    with pytest.raises(ValueError, match="shapes"):
        TripletLoss()(a, p, n[:1])


def test_batch_schedule():
    steps = batch_schedule({"paraphrase": 10, "context": 5}, 4, 2, seed=1)
    assert len(steps) == 2 * (3 + 2)
    again = batch_schedule({"paraphrase": 10, "context": 5}, 4, 2, seed=1)
    assert [(k, i.tolist()) for k, i in steps] == [(k, i.tolist()) for k, i in again]
    first = steps[:5]
    for kind, n in (("paraphrase", 10), ("context", 5)):
        seen = sorted(i for k, idx in first if k == kind for i in idx.tolist())
        assert seen == list(range(n))  # every triplet once per epoch


def test_lr_schedule_spans_every_planned_step(dataset, tmp_path):
    cfg = _cfg(dataset[0], tmp_path, 2, warmup=0.1)
    task = PhraseBertTask(cfg, load_triplets(cfg), torch.nn.Linear(2, 2))
    total = len(task.schedule)
    assert total > cfg.max_steps  # max_steps stops early; the schedule stays the epoch's
    warm = max(1, int(0.1 * total))
    assert task.lr_factor(0) == pytest.approx(1 / warm) and task.lr_factor(warm - 1) == 1.0
    assert task.lr_factor(total - 1) == pytest.approx(1 / (total - warm))


# ------------------------------------------------------------------------------ training
def _cfg(data: Path, out: Path, steps: int, **kw) -> PhraseBertTrainingConfig:
    kw.setdefault("alpha", 1.0)  # the plain fine-tuned weights (no dev data needed)
    return PhraseBertTrainingConfig(data_dir=str(data), out_dir=str(out), batch_size=4,
                                    max_steps=steps, checkpoint_every=2, context_tokens=32,
                                    show_progress=False, **kw)


def _checkpoint_tensors(run: Path, prefix: str = "model.") -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return {k: v for k, v in load_file(str(run / "checkpoint.safetensors")).items()
            if k.startswith(prefix)}


def test_training_run_model_folder_and_resume(dataset, tmp_path, minilm):
    data = dataset[0]
    torch.set_num_threads(1)
    straight = train_phrase_bert(_cfg(data, tmp_path / "a", 3))
    assert straight["steps"] == 3 and not straight["complete"]
    assert straight["history"][-1]["step"] == 3 and straight["seconds_per_step"]
    # 2 steps, a restart, 1 more == 3 steps straight (same batches, dropout, Adam state)
    train_phrase_bert(_cfg(data, tmp_path / "b", 2))
    resumed = train_phrase_bert(_cfg(data, tmp_path / "b", 3))
    assert resumed["steps"] == 3 and [r["step"] for r in resumed["history"]] == [2, 3]
    assert sum(resumed["steps_done_per_kind"].values()) == 3
    ta, tb = _checkpoint_tensors(tmp_path / "a", ""), _checkpoint_tensors(tmp_path / "b", "")
    assert ta.keys() == tb.keys() and any(k.startswith("exp_avg.") for k in ta)
    for k in ta:  # weights and Adam moments: bit-exact
        assert torch.equal(ta[k], tb[k]), k
    # the model folder: fp16 deltas over MiniLM, loadable by phrasekit.load
    folder = tmp_path / "a" / "model"
    assert model_folder_format(folder) == PHRASE_BERT_FORMAT
    config = json.loads((folder / "config.json").read_text())
    assert config["format"] == "phrasekit-phrase-bert" and config["training"]["steps"] == 3
    assert config["training"]["settings"]["data_dir"] == "data"
    for saved in (folder / "config.json", tmp_path / "a" / "report.json"):
        text = saved.read_text()  # no machine-specific folders
        assert str(tmp_path) not in text and str(data.parent) not in text
    enc = phrasekit.load(str(folder))
    vecs = enc.encode(TEXTS)
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(enc.encode(TEXTS[::-1]), vecs[::-1], atol=1e-5)  # input order kept
    assert enc.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        enc.encode([None])
    base = minilm.encode(TEXTS)
    cos = (vecs * base).sum(axis=1)
    assert np.all(cos > 0.9) and not np.allclose(vecs, base, atol=1e-6)  # trained, not far
    # the benchmark runs on the folder
    from phrasekit.eval.runner import run_benchmark

    result = run_benchmark([str(folder)], tasks=["bird"], data_dir=EVAL, show_progress=False)
    assert np.isfinite(result.models[0].main_scores()["bird"])
    # an int8 copy (phrasekit quantize) loads by the same path and stays close
    out = CliRunner().invoke(app, ["quantize", str(folder), "--out", str(tmp_path / "q8")])
    assert out.exit_code == 0, out.output
    q8 = phrasekit.load(str(tmp_path / "q8")).encode(TEXTS)
    assert np.abs(q8 - vecs).max() < 0.1 * np.abs(vecs - base).max()
    # other settings cannot resume this run
    with pytest.raises(ValueError, match="different settings"):
        train_phrase_bert(_cfg(data, tmp_path / "b", 3, lr=1e-4))


def test_weight_averaging_with_minilm(dataset, tmp_path, minilm):
    data = dataset[0]
    torch.set_num_threads(1)
    tuned = train_phrase_bert(_cfg(data, tmp_path / "t", 2, lr=1e-3))
    back = train_phrase_bert(_cfg(data, tmp_path / "z", 2, lr=1e-3, alpha=0.0))
    assert tuned["alpha"] == 1.0 and back["alpha"] == 0.0 and back["dev"] == []
    base = minilm.encode(TEXTS)
    # alpha 0 is the packaged MiniLM again (no deltas); alpha 1 moved away from it
    assert np.allclose(phrasekit.load(back["model_dir"]).encode(TEXTS), base, atol=1e-5)
    assert not np.allclose(phrasekit.load(tuned["model_dir"]).encode(TEXTS), base, atol=1e-3)
    with pytest.raises(ValueError, match="alpha"):
        _cfg(data, tmp_path, 1, alpha=1.5).validate()
    with pytest.raises(ValueError, match="alphas"):
        _cfg(data, tmp_path, 1, alpha=None, alphas=()).validate()
    # choosing alpha needs the dev splits: missing ones fail before any training step
    with pytest.raises(FileNotFoundError):
        train_phrase_bert(_cfg(data, tmp_path / "nodev", 2, alpha=None,
                               dev_data_dir=str(tmp_path / "no-such-data")))
    assert not (tmp_path / "nodev" / "checkpoint.safetensors").exists()


def test_soup_averages_the_fine_tuned_weights_of_two_seeds(dataset, tmp_path):
    from phrasekit.training.phrase_bert.task import recover_finetuned_phrase_bert, soup_phrase_bert
    from phrasekit.training.soups.soup import soup_models

    data = dataset[0]
    torch.set_num_threads(1)
    train_phrase_bert(_cfg(data, tmp_path / "s0", 2, lr=1e-3))
    train_phrase_bert(_cfg(data, tmp_path / "s1", 2, lr=1e-3, seed=1, alpha=0.5))
    a, b = _checkpoint_tensors(tmp_path / "s0"), _checkpoint_tensors(tmp_path / "s1")
    assert any(not torch.equal(a[k], b[k]) for k in a)  # the seeds trained differently
    report = soup_models([tmp_path / "s0" / "model", tmp_path / "s1" / "model"],
                         tmp_path / "soup", alphas=(1.0,), show_progress=False)
    assert report["alpha"] == 1.0 and report["method"] == "phrase-bert soup"
    assert [r["seed"] for r in report["soup_of"]] == [0, 1]
    # the soup's weights are the mean of both runs' fine-tuned weights (s1 saved at alpha 0.5
    # is recovered first); deltas are stored in float16, hence the tolerance
    _, soup, _ = recover_finetuned_phrase_bert(tmp_path / "soup" / "model")
    state = soup.state_dict()
    for key, value in a.items():
        name = key[len("model."):]
        if value.is_floating_point() and not torch.equal(value, b[key]):
            assert torch.allclose(state[name], (value + b[key]) / 2, atol=2e-3), name
    assert phrasekit.load(str(tmp_path / "soup" / "model")).encode(TEXTS).shape == (4, 384)
    with pytest.raises(ValueError, match="at least two"):
        soup_phrase_bert([tmp_path / "s0" / "model"], tmp_path / "x")
    with pytest.raises(ValueError, match="ingredient"):
        soup_models([tmp_path / "s0" / "model", tmp_path / "s1" / "model"], tmp_path / "s0")
    with pytest.raises(FileNotFoundError, match="not a model folder"):
        soup_models([tmp_path / "s0" / "model", tmp_path / "nothing"], tmp_path / "y")
    with pytest.raises(ValueError, match="given twice"):  # one run is no soup
        soup_models([tmp_path / "s0" / "model", tmp_path / "s0" / "." / "model"], tmp_path / "z")


def test_ablations_select_the_datasets(dataset, tmp_path):
    data = dataset[0]
    only_ctx = load_triplets(_cfg(data, tmp_path, 1, use_paraphrase=False))
    only_para = load_triplets(_cfg(data, tmp_path, 1, use_context=False, max_paraphrase=5))
    assert list(only_ctx) == ["context"] and list(only_para) == ["paraphrase"]
    assert len(only_para["paraphrase"]) == 5
    plain = load_triplets(_cfg(data, tmp_path, 1, use_context=False))["paraphrase"]
    source = plain[0]["source"]
    repeated = load_triplets(_cfg(data, tmp_path, 1, use_context=False,
                                  source_repeat={source: 3}))["paraphrase"]
    n = sum(r["source"] == source for r in plain)
    assert len(repeated) == len(plain) + 2 * n
    assert sum(r["source"] == source for r in repeated) == 3 * n
    with pytest.raises(ValueError, match="source_repeat"):
        _cfg(data, tmp_path, 1, source_repeat={source: 0}).validate()


# ------------------------------------------------------------------------------ bad input
def test_bad_inputs(dataset, tmp_path):
    data = dataset[0]
    with pytest.raises(ValueError, match="both datasets"):
        _cfg(data, tmp_path, 1, use_paraphrase=False, use_context=False).validate()
    with pytest.raises(ValueError, match="batch_size"):
        PhraseBertTrainingConfig(str(data), str(tmp_path), batch_size=0).validate()
    with pytest.raises(ValueError, match="margin"):
        PhraseBertTrainingConfig(str(data), str(tmp_path), margin=-1).validate()
    with pytest.raises(FileNotFoundError, match="phrase-bert-data"):
        PhraseBertTrainingConfig(str(tmp_path / "none"), str(tmp_path)).validate()
    with pytest.raises(ValueError, match="no paraphrase triplets"):
        load_triplets(_cfg(data, tmp_path, 1, max_paraphrase=0))
    with pytest.raises(ValueError, match="unknown paraphrase sources"):
        build_phrase_bert_dataset(tmp_path, shared_dir=PEARL, paraphrase_sources=["parrot"])
    with pytest.raises(ValueError, match="both 0"):
        build_phrase_bert_dataset(tmp_path, shared_dir=PEARL, max_paraphrase=0, max_context=0)
    with pytest.raises(FileNotFoundError):
        load_phrase_bert(tmp_path)
    bad = tmp_path / "bad.jsonl.gz"
    import gzip

    with gzip.open(bad, "wt") as fh:
        fh.write('{"anchor": "a", "positive": ""}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl.gz:1"):
        read_triplets(bad)

    runner = CliRunner()
    res = runner.invoke(app, ["train", "phrase-bert", "--out", str(tmp_path / "r"), "--data",
                              str(data), "--no-paraphrase", "--no-context", "-q"])
    assert res.exit_code == 2 and "nothing to train" in res.output
    res = runner.invoke(app, ["train", "phrase-bert", "--out", str(tmp_path / "r"), "--data",
                              str(tmp_path / "missing"), "-q"])
    assert res.exit_code == 2 and "phrase-bert-data" in res.output
    res = runner.invoke(app, ["train", "phrase-bert-data", "--out", str(tmp_path / "d"),
                              "--shared", str(PEARL), "--phrase-vocab", "nofile", "-q"])
    assert res.exit_code == 2 and "CORPUS=FILE" in res.output
