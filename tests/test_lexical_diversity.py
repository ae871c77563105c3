"""Lexical diversity of nearest neighbours: string metrics, neighbour search, vocabulary."""

from __future__ import annotations

import json

import numpy as np
import pytest

from phrasekit.eval.lexical_diversity import (
    build_vocabulary,
    lcs_length,
    lcs_precision,
    levenshtein,
    lexical_diversity,
    nearest_neighbors,
    new_unigram_share,
    pair_metrics,
    read_vocabulary_file,
    sample_sources,
    search_neighbors,
    tokenize,
)
from phrasekit.phrases import PhraseVocabulary

VOCAB = ["king", "queen", "banana", "apple", "car", "truck", "Natural  Language processing",
         "interest rate", "bank of england", "football match"]


# ---------------------------------------------------------------------------- string metrics
@pytest.mark.parametrize(
    ("a", "b", "dist"),
    [("kitten", "sitting", 3), ("flaw", "lawn", 2), ("", "abc", 3), ("abc", "", 3),
     ("same", "same", 0), ("interest rates", "interest rate", 1), ("ab", "ba", 2),
     ("", "", 0), ("café", "cafe", 1), ("日本語", "日本", 1), ("🙂 ok", "ok", 2),
     ("e\u0301", "é", 2), ("Zürich", "zurich", 2)],
)
def test_levenshtein_hand_checked(a: str, b: str, dist: int) -> None:
    assert levenshtein(a, b) == dist
    assert levenshtein(b, a) == dist


def test_lcs_length_hand_checked() -> None:
    assert lcs_length("ABCBDAB", "BDCABA") == 4  # e.g. BCBA
    assert lcs_length(["bank", "of", "england"], ["the", "bank", "of", "england"]) == 3
    assert lcs_length(["a", "b"], ["b", "a"]) == 1
    assert lcs_length([], ["x"]) == 0
    assert lcs_length("", "") == 0 and lcs_length("abc", "") == 0
    assert lcs_length("日本語", "本語日") == 2
    assert lcs_length("🙂a🙂", "a🙂") == 2
    assert lcs_length(["zürich", "bank"], ["bank", "of", "zürich"]) == 1


def test_tokenize_keeps_inner_punctuation_and_lowercases() -> None:
    assert tokenize("BBC Radio 4's  e-mail") == ["bbc", "radio", "4's", "e-mail"]
    assert tokenize("%") == ["%"]  # no word characters: whitespace tokens
    with pytest.raises(ValueError, match="empty"):
        tokenize("   ")


def test_new_unigram_share_hand_checked() -> None:
    assert new_unigram_share("interest rate", "rate rises") == pytest.approx(1 / 2)
    assert new_unigram_share("interest rates", "rates of interest") == pytest.approx(1 / 3)
    # distinct new types over the neighbour's length: {new, york} / 3 tokens
    assert new_unigram_share("city", "new new york") == pytest.approx(2 / 3)
    assert new_unigram_share("natural language processing", "computational linguistics") == 1.0
    assert new_unigram_share("Interest Rates", "interest rates") == 0.0


def test_lcs_precision_hand_checked() -> None:
    assert lcs_precision("bank of england", "the bank of england") == pytest.approx(3 / 4)
    assert lcs_precision("interest rates", "rates of interest") == pytest.approx(1 / 3)
    assert lcs_precision("natural language processing", "computational linguistics") == 0.0
    assert lcs_precision("prime minister", "Prime Minister") == 1.0


def test_pair_metrics_levenshtein_on_normalised_strings() -> None:
    new, lcs_p, lev = pair_metrics("Interest  Rates", "interest rate")
    assert (new, lcs_p, lev) == (pytest.approx(1.0 / 2), pytest.approx(1 / 2), 1)


# ---------------------------------------------------------------------------- neighbour search
def test_search_neighbors_excludes_query_and_its_duplicates() -> None:
    texts = ["a b", "A  B", "c", "d"]
    vecs = np.array([[1, 0], [1, 0], [0.8, 0.6], [0, 1]], dtype=np.float32)
    hits = search_neighbors(np.array([[1, 0]], dtype=np.float32), ["a b"], vecs, texts, k=2)
    assert [t for t, _ in hits[0]] == ["c", "d"]
    assert hits[0][0][1] == pytest.approx(0.8)
    # k larger than the other entries: all of them
    hits = search_neighbors(np.array([[0, 1]], dtype=np.float32), ["x"], vecs, texts, k=10)
    assert [t for t, _ in hits[0]] == ["d", "c", "a b", "A  B"]


def test_nearest_neighbors_glove(glove) -> None:
    hits = nearest_neighbors(glove, "truck", VOCAB, k=3)
    assert len(hits) == 3
    assert hits[0][0] == "car"
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert "truck" not in [t for t, _ in hits]
    # the source is excluded after lower-casing and whitespace normalisation
    hits = nearest_neighbors(glove, "natural language PROCESSING", VOCAB, k=len(VOCAB))
    assert "Natural  Language processing" not in [t for t, _ in hits]
    assert len(hits) == len(VOCAB) - 1
    assert nearest_neighbors(glove, "king", VOCAB, k=1)[0][0] == "queen"


def test_lexical_diversity_glove_matches_its_neighbours(glove) -> None:
    sources = ["interest rates", "football game", "zzqxv qqwvz"]  # the last: no GloVe word
    res = lexical_diversity(glove, VOCAB, sources, k=3)
    assert res.skipped_sources == ["zzqxv qqwvz"]
    assert res.n_sources == 2 and res.n_vocab == len(VOCAB) and res.k == 3
    assert set(res.neighbors) == {"interest rates", "football game"}
    assert res.neighbors["football game"][0][0] == "football match"
    rows = [[pair_metrics(s, t) for t, _ in hits] for s, hits in res.neighbors.items()]
    per_source = np.array([np.mean(r, axis=0) for r in rows])
    assert res.new_unigram_pct == pytest.approx(100 * per_source[:, 0].mean())
    assert res.lcs_precision_pct == pytest.approx(100 * per_source[:, 1].mean())
    assert res.levenshtein == pytest.approx(per_source[:, 2].mean())
    d = res.to_dict()
    assert d["neighbors"]["football game"][0][0] == "football match"
    assert res.to_dict(with_neighbors=False)["neighbors"] == {}


def test_lexical_diversity_reuses_given_vectors(glove) -> None:
    vecs = glove.encode(VOCAB)
    a = lexical_diversity(glove, VOCAB, ["interest rates"], k=2, vocab_vecs=vecs)
    b = lexical_diversity(glove, VOCAB, ["interest rates"], k=2)
    assert a.neighbors == b.neighbors
    with pytest.raises(ValueError, match="vectors"):
        lexical_diversity(glove, VOCAB, ["interest rates"], vocab_vecs=vecs[:3])


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_bad_k(glove, k) -> None:
    with pytest.raises(ValueError, match="k must be"):
        nearest_neighbors(glove, "car", VOCAB, k=k)
    with pytest.raises(ValueError, match="k must be"):
        lexical_diversity(glove, VOCAB, ["car"], k=k)


def test_bad_input_errors(glove) -> None:
    with pytest.raises(ValueError, match="vocabulary is empty"):
        nearest_neighbors(glove, "car", [])
    with pytest.raises(ValueError, match="vocabulary is empty"):
        lexical_diversity(glove, [], ["car"])
    with pytest.raises(ValueError, match="no source phrases"):
        lexical_diversity(glove, VOCAB, [])
    with pytest.raises(ValueError, match="no entry other than"):
        nearest_neighbors(glove, "Car", ["car", "CAR "])
    with pytest.raises(TypeError):
        nearest_neighbors(glove, None, VOCAB)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty"):
        nearest_neighbors(glove, "  ", VOCAB)
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        lexical_diversity(glove, ["car", ""], ["truck"])
    with pytest.raises(ValueError, match="has a known word"):
        lexical_diversity(glove, VOCAB, ["zzqxv qqwvz"])


# ---------------------------------------------------------------------------- vocabulary
def _phrase_vocab() -> PhraseVocabulary:
    blair = ("tony blair", "Tony Blair", "PERSON")
    occ = [
        [("interest rates", "interest rates", "NOUN_CHUNK"), ("bank", "bank", "NOUN_CHUNK"),
         ("bank of england", "Bank of England", "ORG")],
        [("interest rates", "Interest rates", "NOUN_CHUNK"), blair],
        [("interest rates", "interest rates", "NOUN_CHUNK"), blair],
    ]
    return PhraseVocabulary.from_occurrences(["0", "1", "2"], occ)


def test_build_vocabulary_words_then_phrases() -> None:
    docs = ["Rates rose and rates fell.", "Rates rose again, the bank said.", "Bank rates."]
    pv = _phrase_vocab()
    vocab = build_vocabulary(docs, pv, size=4, word_share=0.5, min_count=2)
    # words by count (rates 4, bank 2, rose 2 -> 2 slots: rates, then bank before rose), then
    # phrases in the vocabulary's rank order (doc freq)
    assert vocab == ["rates", "bank", "interest rates", "tony blair"]
    assert build_vocabulary(None, pv, size=10, word_share=0.5, min_count=1) == [
        "bank", "interest rates", "tony blair", "bank of england"]
    with pytest.raises(ValueError, match="size"):
        build_vocabulary(docs, pv, size=0)
    with pytest.raises(ValueError, match="word_share"):
        build_vocabulary(docs, pv, word_share=1.5)


def test_sample_sources_multiword_seeded() -> None:
    cands = ["a", "b c", "d e f", "g h", "i", "j k"]
    s1 = sample_sources(cands, 3, seed=1)
    assert s1 == sample_sources(cands, 3, seed=1)
    assert len(set(s1)) == 3 and all(len(s.split()) >= 2 for s in s1)
    assert sorted(sample_sources(cands, 10, seed=0)) == ["b c", "d e f", "g h", "j k"]
    with pytest.raises(ValueError, match="no candidate"):
        sample_sources(["a", "b"], 2)
    with pytest.raises(ValueError, match="n must be"):
        sample_sources(cands, 0)


def test_read_vocabulary_file_text_and_json(tmp_path) -> None:
    txt = tmp_path / "vocab.txt"
    txt.write_text("interest rates\n\nInterest  Rates\nbank\n", encoding="utf-8")
    assert read_vocabulary_file(txt) == ["interest rates", "bank"]
    assert read_vocabulary_file(txt, max_entries=1) == ["interest rates"]
    js = tmp_path / "vocab.json.gz"
    _phrase_vocab().to_json(js)
    assert read_vocabulary_file(js) == ["interest rates", "Tony Blair", "bank", "Bank of England"]
    with pytest.raises(FileNotFoundError):
        read_vocabulary_file(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        read_vocabulary_file(empty)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a phrase vocabulary"):
        read_vocabulary_file(bad)
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match="UTF-8"):
        read_vocabulary_file(latin)


def test_cli_neighbors(tmp_path) -> None:
    from typer.testing import CliRunner

    from phrasekit.cli import app

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("heart attack\nmyocardial infarction\nstock market\ninterest rates\n"
                     "cardiac arrest\nfootball match\n", encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["neighbors", "heart attack", "--vocab", str(vocab), "-k", "2",
                              "--model", "glove-50d", "--quiet"])
    assert res.exit_code == 0, res.output
    rows = [line.split("\t") for line in res.output.strip().splitlines()]
    assert rows[0] == ["rank", "neighbor", "cosine"] and len(rows) == 3
    assert "heart attack" not in [r[1] for r in rows[1:]]
    res = runner.invoke(app, ["neighbors", "heart attack", "--vocab", str(vocab), "-k", "2",
                              "--model", "glove-50d", "--quiet", "--json"])
    assert res.exit_code == 0, res.output
    found = json.loads(res.output)
    assert found["query"] == "heart attack" and found["model"] == "glove-50d"
    assert [[n["rank"], n["neighbor"], f"{n['cosine']:.4f}"] for n in found["neighbors"]] == [
        [int(r[0]), r[1], r[2]] for r in rows[1:]]
    bad = runner.invoke(app, ["neighbors", "x", "--vocab", str(vocab), "-k", "0"])
    assert bad.exit_code == 2 and "-k" in bad.output
    bad = runner.invoke(app, ["neighbors", "x", "--vocab", str(tmp_path / "missing.txt")])
    assert bad.exit_code == 2
