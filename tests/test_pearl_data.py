"""PEARL training data: phrase types, hard-negative mining, test-string filter, dataset build."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from phrasekit.encoders.cache import encode_cached, text_key
from phrasekit.phrases import load_spacy
from phrasekit.phrases.types import (
    ENTITY_TYPES,
    LEXICAL_CLASSES,
    PHRASE_TYPES,
    entity_type,
    label_phrases,
    lexical_class,
    type_index,
)
from phrasekit.training.data.leakage import BenchmarkStringFilter, collect_test_strings
from phrasekit.training.data.sources import (
    detokenize,
    jsonl_lines,
    read_ppdb,
    split_bounds,
    strip_outer_punct,
    valid_phrase,
    write_gz_bytes,
    write_gz_text,
)
from phrasekit.training.pearl import data as pearl_data
from phrasekit.training.pearl.data import build_pearl_dataset
from phrasekit.training.pearl.mining import (
    mine_hard_negatives,
    paraphrase_neighbourhood,
    variant_key,
)
from phrasekit.training.pearl.word_synonyms import negation, spelling_variant
from phrasekit.training.phrase_bert import data as phrase_bert_data

FIXTURES = Path(__file__).parent / "fixtures"
PEARL = FIXTURES / "pearl"
EVAL = FIXTURES / "eval"


@pytest.fixture(scope="module")
def nlp():
    return load_spacy()


# ------------------------------------------------------------------------------ phrase types
def test_phrase_type_label_set() -> None:
    assert len(ENTITY_TYPES) == 19 and ENTITY_TYPES[-1] == "OTHER"
    assert len(PHRASE_TYPES) == 95 == len(set(PHRASE_TYPES))
    assert PHRASE_TYPES[0] == "NP-PERSON" and PHRASE_TYPES[-1] == "ADVP-OTHER"
    assert all(PHRASE_TYPES[type_index(t)] == t for t in PHRASE_TYPES)
    assert {t.split("-", 1)[0] for t in PHRASE_TYPES} == set(LEXICAL_CLASSES)
    with pytest.raises(ValueError, match="unknown phrase type"):
        type_index("NP-MISC")


def test_label_phrases_clear_cases(nlp) -> None:
    texts = ["The New York Times", "run quickly", "in the morning", "very happy",
             "very quickly", "New York", "$5 million", "British lamb"]
    labels = dict(zip(texts, label_phrases(texts, nlp, show_progress=False), strict=True))
    assert labels["The New York Times"] == "NP-ORG"
    assert labels["run quickly"] == "VP-OTHER"
    assert labels["in the morning"].startswith("PP-")
    assert labels["very happy"] == "ADJP-OTHER"
    assert labels["very quickly"] == "ADVP-OTHER"
    assert labels["New York"] == "NP-GPE"
    assert labels["$5 million"] == "NP-MONEY"
    assert labels["British lamb"] == "NP-OTHER"  # the entity is only a modifier
    assert all(label in PHRASE_TYPES for label in labels.values())


def test_types_in_context(nlp) -> None:
    doc = nlp("Investors in New York City sold shares quickly.")
    pp = doc[1:5]
    assert lexical_class(pp) == "PP" and entity_type(pp) == "GPE"
    assert lexical_class(doc[5:7]) == "VP" and entity_type(doc[5:7]) == "OTHER"


def test_label_phrases_rejects_bad_input(nlp) -> None:
    with pytest.raises(TypeError):
        label_phrases("a single string", nlp)
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        label_phrases(["ok", "  "], nlp)


# ------------------------------------------------------------------------------ mining
def test_hard_negatives_exclude_self_variants_and_paraphrases(minilm) -> None:
    phrases = ["The New York Times", "the new york times", "New York Time", "New York City",
               "New York Post", "New York", "NYT", "apple pie", "interest rate",
               "interest rates", "rate of interest", "exchange rate", "birth rate"]
    emb = minilm.encode(phrases)
    negs = mine_hard_negatives(phrases, emb, k=4, show_progress=False,
                               exclude={"interest rate": {"rate of interest"},
                                        "New York Times": {"NYT"}})
    nyt = negs["The New York Times"]
    assert {"New York City", "New York Post", "New York"} & set(nyt)
    assert not {"The New York Times", "the new york times", "New York Time", "NYT"} & set(nyt)
    rate = negs["interest rate"]
    assert "rate of interest" not in rate and "interest rates" not in rate
    assert {"exchange rate", "birth rate"} & set(rate)
    assert all(len(v) <= 4 and len(v) == len(set(v)) for v in negs.values())
    assert "apple pie" not in negs  # nothing shares a word or many trigrams with it


def test_hard_negatives_respect_max_cos() -> None:
    phrases = ["red wine", "white wine", "red car"]
    emb = np.asarray([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0]], dtype=np.float32)
    negs = mine_hard_negatives(phrases, emb, max_cos=0.5, show_progress=False)
    assert negs["red wine"] == ["red car"]  # "white wine" is too close for the encoder
    with pytest.raises(ValueError, match="embeddings must be"):
        mine_hard_negatives(phrases, emb[:2], show_progress=False)


def test_variant_key() -> None:
    assert variant_key("The New York Times") == variant_key("new york time")
    assert variant_key("cities") == variant_key("a city")
    assert variant_key("New York") != variant_key("New York City")


# ------------------------------------------------------------------------------ helpers
def test_text_helpers() -> None:
    assert detokenize(["Parkinson", "'", "s", "disease"]) == "Parkinson's disease"
    assert detokenize(["L", "-", "dopa", "(", "x", ")", ","]) == "L-dopa (x),"
    assert strip_outer_punct(", services are .") == "services are"
    assert strip_outer_punct("'s unlikely") == "'s unlikely"
    assert valid_phrase("New York") and not valid_phrase("1996-08-22")
    assert not valid_phrase("a") and not valid_phrase("one two three four five six seven 8 9")
    assert split_bounds(23364) == (16355, 19860) and split_bounds(15532) == (10873, 13203)
    assert spelling_variant("colour", "color") and spelling_variant("fund", "funds")
    assert not spelling_variant("effective", "ineffective")
    assert not spelling_variant("grandson", "grandfather")
    assert negation("intentional", "unintentional") and not negation("fund", "funds")


def test_gzip_writers_are_reproducible(tmp_path: Path) -> None:
    rows = [{"text": "naïve café", "n": 1}, {"text": "b", "n": 2}]
    for i in (1, 2):
        write_gz_text(tmp_path / f"t{i}.gz", jsonl_lines(rows))
        write_gz_bytes(tmp_path / f"b{i}.gz",
                       (x.encode("utf-8") for x in jsonl_lines(rows, compact=True)))
    assert (tmp_path / "t1.gz").read_bytes() == (tmp_path / "t2.gz").read_bytes()
    assert (tmp_path / "b1.gz").read_bytes() == (tmp_path / "b2.gz").read_bytes()
    assert _jsonl(tmp_path / "t1.gz") == _jsonl(tmp_path / "b1.gz") == rows
    with gzip.open(tmp_path / "b1.gz", "rt", encoding="utf-8") as fh:
        assert fh.readline() == '{"text":"naïve café","n":1}\n'


def test_builder_modules_export_their_step_names() -> None:
    for module in (pearl_data, phrase_bert_data):
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module.__name__}.{name}"
    assert pearl_data.BenchmarkStringFilter is BenchmarkStringFilter
    assert pearl_data.read_ppdb is read_ppdb


def test_paraphrase_neighbourhood_two_hops() -> None:
    near = paraphrase_neighbourhood([("thanking you", "Thank everyone", "ppdb"),
                                     ("thanking you", "thank you for asking", "ppdb")])
    assert near["thank everyone"] == {"thanking you", "thank you for asking"}


def test_read_ppdb_splits_fixture() -> None:
    train = read_ppdb(PEARL / "data" / "ppdb" / "ppdb.json", "train")
    assert len(train) == 28 and ("access information", "information accessibility", True) \
        in train


def test_test_string_filter_counts(tmp_path: Path) -> None:
    strings = collect_test_strings(EVAL, strict=False)
    assert "access information" in strings["bird/bird.tsv"]
    filt = BenchmarkStringFilter(strings)
    assert not filt.keep_phrase("Access   Information")  # case and whitespace normalised
    assert not filt.keep_phrase("access information")  # removed again, counted once
    assert filt.keep_phrase("access to information")
    assert not filt.keep_pair("information access", "something else")
    assert filt.summary()["bird/bird.tsv"]["removed_phrases"] == 1
    with pytest.raises(FileNotFoundError):
        collect_test_strings(tmp_path, strict=True)


class _CountingEncoder:
    """A stand-in encoder that records what it was asked to embed."""

    name = "counting"
    dim = 2

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts, batch_size=None, show_progress=False) -> np.ndarray:
        self.seen.extend(texts)
        return np.asarray([[len(t), 1.0] for t in texts], dtype=np.float32)


def test_encode_cached_reuses_rows(tmp_path: Path) -> None:
    cache = tmp_path / "emb.npz"
    enc = _CountingEncoder()
    first = encode_cached(enc, ["ab", "abc"], cache, show_progress=False)
    again = encode_cached(enc, ["abcd", "ab", "ab"], cache, show_progress=False)
    assert enc.seen == ["ab", "abc", "abcd"]
    assert np.array_equal(again[1], first[0]) and np.array_equal(again[1], again[2])
    assert again[0].tolist() == [4.0, 1.0]


def test_encode_cached_stores_digests_not_texts(tmp_path: Path) -> None:
    cache = tmp_path / "emb.npz"
    enc = _CountingEncoder()
    long_texts = [f"{i} " + "word " * 2000 for i in range(50)]  # ~10k characters each
    encode_cached(enc, long_texts, cache, show_progress=False)
    assert cache.stat().st_size < 10_000  # 50 x (16-byte key + 2 floats), not 50 x 10k chars
    with np.load(cache, allow_pickle=False) as z:
        assert "texts" not in z and z["keys"].shape == (50,)


def test_encode_cached_leaves_unmarked_files_and_rebuilds_damaged_caches(tmp_path: Path
                                                                         ) -> None:
    from phrasekit.encoders.cache_files import read_marker, write_marked_npz

    cache = tmp_path / "old.npz"  # the first format: texts, no checksum, no marker
    np.savez(cache, encoder=np.asarray("counting"), texts=np.asarray(["ab", "abc"]),
             embeddings=np.asarray([[2.0, 1.0], [3.0, 1.0]], dtype=np.float32))
    before = cache.read_bytes()
    enc = _CountingEncoder()
    enc.name = "counting"
    with pytest.raises(ValueError, match="not an embedding cache written by phrasekit"):
        encode_cached(enc, ["abc", "xy"], cache, show_progress=False)
    assert cache.read_bytes() == before and enc.seen == []  # left, named, nothing encoded
    cache.unlink()
    first = encode_cached(enc, ["abc", "xy"], cache, show_progress=False)
    assert enc.seen == ["abc", "xy"] and read_marker(cache) is not None
    enc.seen = []
    assert encode_cached(enc, ["abc", "xy"], cache, show_progress=False).tolist() == \
        first.tolist() and enc.seen == []
    with np.load(cache) as z:
        parts = {k: v for k, v in z.items() if k.endswith(("encoder", "keys", "embeddings",
                                                            "sha256"))}
    parts["embeddings"] = parts["embeddings"][::-1].copy()  # rows swapped, checksum kept
    with cache.open("wb") as fh:
        write_marked_npz(fh, "embeddings", "counting", **parts)
    assert encode_cached(enc, ["abc", "xy"], cache, show_progress=False).tolist() == \
        first.tolist() and enc.seen == ["abc", "xy"]


# ------------------------------------------------------------------------------ end to end
@pytest.fixture(scope="module")
def built(tmp_path_factory, minilm, glove, nlp) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("pearl")
    report = build_pearl_dataset(
        out, shared_dir=PEARL, corpora=["mini"], benchmark_dir=EVAL, strict_filter=False,
        encoder=minilm, glove=glove, nlp=nlp, show_progress=False, max_words=10_000)
    return out, report


def _jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_build_outputs_parse(built) -> None:
    out, report = built
    phrases = _jsonl(out / "phrases.jsonl.gz")
    texts = [p["text"] for p in phrases]
    assert len(texts) == report["phrases"] > 50
    assert len({t.lower() for t in texts}) == len(texts)
    assert all(p["type"] in PHRASE_TYPES for p in phrases)
    assert all(valid_phrase(t) for t in texts)
    sources = {p["source"] for p in phrases}
    assert {"corpus:mini", "wordnet", "conll2003", "ppdb"} <= sources
    with gzip.open(out / "paraphrases.tsv.gz", "rt", encoding="utf-8") as fh:
        pairs = [line.rstrip("\n").split("\t") for line in fh]
    assert pairs and all(len(p) == 3 and p[2] in ("wordnet", "ppdb", "ppdb_filtered")
                         for p in pairs)
    with gzip.open(out / "word_synonyms.json.gz", "rt", encoding="utf-8") as fh:
        synonyms = json.load(fh)
    assert synonyms["quickly"][:1] == ["rapidly"]
    negatives = _jsonl(out / "hard_negatives.jsonl.gz")
    text_set = set(texts)
    assert negatives and all(r["text"] in text_set and set(r["negatives"]) <= text_set
                             for r in negatives)
    on_disk = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert on_disk["phrases"] == report["phrases"]
    assert sum(on_disk["lexical_classes"].values()) == report["phrases"]


def test_build_types_and_splits(built) -> None:
    out, report = built
    types = {p["text"]: p["type"] for p in _jsonl(out / "phrases.jsonl.gz")}
    assert types["European Commission"] == "NP-ORG"  # in-context entity label
    assert types["in Brussels"] == "PP-GPE"
    assert types["take a breath"].startswith("VP-")  # WordNet verb lemma
    assert types["a cappella"].split("-")[0] in ("ADVP", "ADJP", "NP")
    assert report["corpora"]["mini"]["skipped_test_split"] == 1
    assert not any("zebra" in t.lower() for t in types)  # only in the test-split document


def test_build_removes_planted_test_string(built) -> None:
    out, report = built
    texts = {p["text"].lower() for p in _jsonl(out / "phrases.jsonl.gz")}
    assert "access information" not in texts
    assert "information accessibility" in texts  # the other side stays a phrase
    with gzip.open(out / "paraphrases.tsv.gz", "rt", encoding="utf-8") as fh:
        assert "access information" not in fh.read().lower()
    bird = report["test_string_filter"]["per_file"]["bird/bird.tsv"]
    assert bird["removed_phrases"] >= 1 and bird["removed_paraphrase_pairs"] >= 1
    assert "access information" in bird["examples"]


def test_build_hard_negatives_skip_paraphrases(built) -> None:
    out, _ = built
    with gzip.open(out / "paraphrases.tsv.gz", "rt", encoding="utf-8") as fh:
        pairs = [line.rstrip("\n").split("\t")[:2] for line in fh]
    near = paraphrase_neighbourhood(pairs)
    for row in _jsonl(out / "hard_negatives.jsonl.gz"):
        key = row["text"].lower()
        assert key not in {n.lower() for n in row["negatives"]}
        assert not near.get(key, set()) & {n.lower() for n in row["negatives"]}


def test_build_rejects_unknown_source(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown sources"):
        build_pearl_dataset(tmp_path, shared_dir=PEARL, sources=["web"])


@pytest.mark.shared
def test_collect_test_strings_shared(shared_data: Path) -> None:
    strings = collect_test_strings(shared_data, strict=True)
    assert len([k for k in strings if k.startswith("autofj/")]) == 2
    assert "double star" in strings["turney2012/turney.txt"]
    assert "thanking you" not in strings["ppdb/ppdb.json [dev+test]"]  # a train string
    assert len(strings["yago_retrieval/yago_test_samples.tsv"]) > 10_000


def test_encode_cached_finds_digests_that_end_in_a_nul_byte(tmp_path: Path) -> None:
    """NumPy reads an ``S16`` item without its trailing NUL bytes; such keys must still hit."""
    texts = [t for t in (f"phrase {i}" for i in range(5000)) if text_key(t).endswith(b"\0")][:3]
    assert len(texts) == 3
    cache = tmp_path / "emb.npz"
    enc = _CountingEncoder()
    first = encode_cached(enc, texts, cache, show_progress=False)
    enc.seen = []
    assert encode_cached(enc, texts, cache, show_progress=False).tolist() == first.tolist()
    assert enc.seen == []


def test_encode_cached_calls_a_loader_only_for_missing_texts(tmp_path: Path) -> None:
    cache = tmp_path / "emb.npz"
    loads: list[int] = []

    def loader() -> _CountingEncoder:
        loads.append(1)
        return _CountingEncoder()

    first = encode_cached(loader, ["ab", "abc"], cache, show_progress=False)
    assert len(loads) == 1
    assert encode_cached(loader, ["abc", "ab"], cache, show_progress=False).tolist() == \
        first[::-1].tolist() and len(loads) == 1  # all cached: nothing loaded
    assert encode_cached(loader, ["abcd"], cache, show_progress=False).tolist() == [[4.0, 1.0]]
    assert len(loads) == 2
