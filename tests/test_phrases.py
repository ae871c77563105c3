"""Phrase extraction (spaCy noun chunks + entities) and the PhraseVocabulary."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from phrasekit.io import Document, read_corpus
from phrasekit.phrases import (
    NOUN_CHUNK,
    PhraseExtractor,
    PhraseVocabulary,
    frequent_ngrams,
    sample_by_words,
    split_long_text,
)

FIXTURE = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"

HAND_MADE = [
    Document("d0", "The central bank raised interest rates. Interest rates are high.", {}),
    Document("d1", "The Central Bank cut interest rates.", {}),
    Document("d2", "Football fans love the stadium.", {}),
]


@pytest.fixture(scope="module")
def extractor() -> PhraseExtractor:
    return PhraseExtractor()


@pytest.fixture(scope="module")
def hand_vocab(extractor: PhraseExtractor) -> PhraseVocabulary:
    return extractor.extract(HAND_MADE)


@pytest.fixture(scope="module")
def fixture_vocab(extractor: PhraseExtractor) -> PhraseVocabulary:
    return extractor.extract(read_corpus(FIXTURE))


def _keys(occurrences):
    return [key for key, _, _ in occurrences]


def test_noun_chunks_and_entities_found(extractor: PhraseExtractor) -> None:
    [occ] = extractor.extract_texts(
        ["Their new phone, which Apple released in May, was a great success in the UK."]
    )
    found = {key: source for key, _, source in occ}
    assert found["new phone"] == NOUN_CHUNK  # "Their" stripped
    assert found["great success"] == NOUN_CHUNK  # "a" stripped
    assert found["apple"] == "ORG"
    assert found["uk"] == "GPE"  # entity and noun chunk "the UK" count once, as the entity
    assert _keys(occ).count("uk") == 1
    assert "which" not in found and "may" not in found  # pronoun chunk, DATE entity


def test_pronouns_dropped(extractor: PhraseExtractor) -> None:
    [occ] = extractor.extract_texts(["He said it was good. They left with them. Which one?"])
    assert not {"he", "it", "they", "them", "which"} & set(_keys(occ))


def test_numeric_entities_dropped_unless_asked(extractor: PhraseExtractor) -> None:
    text = ["The company paid $5 million in 2004 for 300 tonnes of steel."]
    [default] = extractor.extract_texts(text)
    assert _keys(default) == ["company", "steel"]
    [kept] = PhraseExtractor(exclude_entity_types=()).extract_texts(text)
    sources = {key: source for key, _, source in kept}
    assert sources["$5 million"] == "MONEY"
    assert sources["2004"] == "DATE"


def test_determiner_stripping_keeps_surface_map(extractor: PhraseExtractor) -> None:
    vocab = extractor.extract(
        [
            "The Prime Minister met the press.",
            "Our prime minister spoke.",
            "This prime minister left.",
        ]
    )
    i = vocab.index("prime minister")
    assert vocab.surface_forms[i] == {"Prime Minister": 1, "prime minister": 2}
    assert vocab.surface[i] == "prime minister"  # most frequent surface form
    assert vocab.counts[i] == 3 and vocab.doc_freq[i] == 3
    no_strip = PhraseExtractor(strip_determiners=False, lowercase=False).extract(
        ["The Prime Minister met the press."]
    )
    assert "The Prime Minister" in no_strip


def test_counts_and_doc_freq_hand_made(hand_vocab: PhraseVocabulary) -> None:
    v = hand_vocab
    assert v.doc_ids == ["d0", "d1", "d2"]
    rates, bank = v.index("interest rates"), v.index("central bank")
    assert (v.counts[rates], v.doc_freq[rates]) == (3, 2)
    assert (v.counts[bank], v.doc_freq[bank]) == (2, 2)
    assert v.surface_forms[rates] == {"Interest rates": 1, "interest rates": 2}
    assert v.sources[bank] == {"NOUN_CHUNK": 1, "ORG": 1}
    assert v.doc_phrases[0] == {"central bank": 1, "interest rates": 2}
    assert v.doc_phrases[1] == {"central bank": 1, "interest rates": 1}
    assert v.doc_phrases[2] == {"football fans": 1, "stadium": 1}
    assert v.phrases[:2] == ["interest rates", "central bank"]  # ranked by df, then count
    assert v.is_word(v.index("stadium")) and not v.is_word(rates)
    assert v.words() == ["stadium"]
    assert v.n_words == 1 and len(v) == 4


def test_filter(hand_vocab: PhraseVocabulary) -> None:
    f = hand_vocab.filter(min_df=2)
    assert f.phrases == ["interest rates", "central bank"]
    assert f.doc_phrases[2] == {} and f.n_docs == 3
    assert hand_vocab.filter(min_count=3).phrases == ["interest rates"]
    assert hand_vocab.filter(max_phrases=1).phrases == ["interest rates"]
    assert hand_vocab.filter(kind="words").phrases == ["stadium"]
    assert "stadium" not in hand_vocab.filter(kind="phrases")
    assert hand_vocab.filter(max_df=0.5).phrases == ["football fans", "stadium"]
    with pytest.raises(ValueError):
        hand_vocab.filter(min_df=0)
    with pytest.raises(ValueError):
        hand_vocab.filter(kind="nouns")


def test_json_round_trip(hand_vocab: PhraseVocabulary, tmp_path: Path) -> None:
    text = hand_vocab.to_json()
    assert json.loads(text)["format"] == "phrasekit.phrase_vocabulary"
    back = PhraseVocabulary.from_json(text)
    assert back.to_dict() == hand_vocab.to_dict()
    for name in ("vocab.json", "vocab.json.gz", "V.JSON.GZ"):
        hand_vocab.to_json(tmp_path / name)
        gzipped = (tmp_path / name).read_bytes()[:2] == b"\x1f\x8b"
        assert gzipped == name.lower().endswith(".gz")  # "V.JSON.GZ" was plain JSON
        again = PhraseVocabulary.from_json(tmp_path / name)
        assert again.to_dict() == hand_vocab.to_dict()
        assert again.doc_phrases == hand_vocab.doc_phrases
    with pytest.raises(ValueError, match="not a phrase vocabulary"):
        PhraseVocabulary.from_dict({"format": "other"})


def test_fixture_corpus(fixture_vocab: PhraseVocabulary) -> None:
    v = fixture_vocab
    assert v.n_docs == 80
    assert sum(1 for d in v.doc_phrases if d) == 80
    assert v.n_words > 100 and len(v.multiword()) > 100
    assert "boundary conditions" in v and "paper" in v
    assert all(not any(c in p for c in "$\\{}^_") for p in v.phrases)  # LaTeX rejected
    assert all(len(p.split()) <= 6 for p in v.phrases)
    assert not {"we", "it", "this paper", "the paper"} & set(v.phrases)
    assert v.params["max_tokens"] == 6


def test_long_documents_are_split(caplog: pytest.LogCaptureFixture) -> None:
    text = ("The central bank raised interest rates again.\n\n" * 40).strip()
    pieces = split_long_text(text, 200)
    assert all(len(p) <= 200 for p in pieces) and "".join(pieces) == text
    with caplog.at_level(logging.WARNING, logger="phrasekit.phrases.extract"):
        vocab = PhraseExtractor(max_chars=200).extract([text])
    assert "split into pieces" in caplog.text
    assert vocab.counts[vocab.index("interest rates")] == 40


def _as_written(text: str) -> str:
    return " ".join(text.split()).replace("\u2019", "'")


def test_mentions_locate_each_occurrence_in_its_document(extractor: PhraseExtractor) -> None:
    docs = read_corpus(FIXTURE)[:12]
    found = extractor.mentions(docs)
    assert [[m[2:] for m in f] for f in found] == extractor.occurrences(docs)
    for doc, mentions in zip(docs, found, strict=True):
        assert mentions and [m[0] for m in mentions] == sorted(m[0] for m in mentions)
        for start, end, key, surface, _ in mentions:
            assert _as_written(doc.text[start:end]) == surface and key == surface.lower()


def test_mentions_of_split_documents_keep_document_offsets() -> None:
    text = " ".join(f"Bank {i} raised interest rates in Frankfurt." for i in range(30))
    found = PhraseExtractor(max_chars=200).mentions([text])[0]
    assert sum(m[2] == "interest rates" for m in found) == 30  # none lost at a cut
    for start, end, _, surface, _ in found:
        assert _as_written(text[start:end]) == surface


def test_bad_input(extractor: PhraseExtractor) -> None:
    with pytest.raises(ValueError, match="empty"):
        extractor.extract([])
    with pytest.raises(TypeError):
        extractor.extract("a single string")
    with pytest.raises(TypeError):
        extractor.extract([1, 2])
    with pytest.raises(ValueError):
        PhraseExtractor(noun_chunks=False, entities=False)


def test_frequent_ngrams() -> None:
    rows = frequent_ngrams(read_corpus(FIXTURE), min_count=3)
    grams = {g: (c, df) for g, c, df in rows}
    assert grams["boundary conditions"][0] >= 3
    assert all(g.split()[0] not in {"the", "of", "a"} for g in grams)
    assert rows == sorted(rows, key=lambda r: (-r[1], -r[2], r[0]))


def test_pos_chunker_skips_the_parser_and_finds_noun_phrases() -> None:
    pos = PhraseExtractor(chunker="pos", entities=False)
    assert set(pos.excluded_pipes()) == {"lemmatizer", "parser", "ner"}
    assert "parser" not in pos.nlp.pipe_names and "ner" not in pos.nlp.pipe_names
    occ = pos.extract_texts(["The central bank raised interest rates quickly.",
                             "Rates were high in the new stadium."])
    assert set(_keys(occ[0])) == {"central bank", "interest rates"}
    assert set(_keys(occ[1])) == {"rates", "new stadium"}  # "high" alone ends in no noun
    assert PhraseExtractor().excluded_pipes() == ("lemmatizer",)
    with pytest.raises(ValueError, match="chunker"):
        PhraseExtractor(chunker="regex")


def test_pos_chunker_vocabulary_matches_the_parser_on_the_fixture() -> None:
    docs = read_corpus(FIXTURE)
    parser = PhraseExtractor().extract(docs)
    pos = PhraseExtractor(chunker="pos", entities=False).extract(docs)
    frequent = {p for p, c in zip(parser.phrases, parser.doc_freq, strict=True) if c >= 3}
    found = set(pos.phrases)
    assert len(frequent & found) >= 0.6 * len(frequent)
    assert pos.params["chunker"] == "pos" and parser.params["chunker"] == "parser"


def test_sample_by_words_is_seeded_ordered_and_bounded() -> None:
    docs = [Document(str(i), " ".join(["w"] * (i + 1)), {}) for i in range(50)]
    a = sample_by_words(docs, 200, seed=3)
    assert a == sample_by_words(docs, 200, seed=3)
    assert [d.id for d in a] == sorted((d.id for d in a), key=int)
    words = sum(len(d.text.split()) for d in a)
    assert 200 <= words < 200 + 50
    assert sample_by_words(docs, None) == docs
    assert sample_by_words(docs, 10**6) == docs


def test_worker_processes_find_what_one_process_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces parsed in worker processes (which return occurrences only) give the same
    mentions, in the same order, as parsing in this process; shares keep the pieces' order."""
    import phrasekit.phrases.pieces as pieces
    from phrasekit.phrases.parallel import shares

    docs = read_corpus(FIXTURE)[:24]
    one = PhraseExtractor(chunker="pos", entities=False).mentions(docs)
    monkeypatch.setattr(pieces, "MIN_CHARS_PER_PROCESS", 1)
    two = PhraseExtractor(chunker="pos", entities=False, n_process=2).mentions(docs)
    assert two == one and sum(map(len, one)) > 50
    pieces = [("x" * n, (n, 0)) for n in (5, 50, 5, 5, 40, 10)]
    cut = shares(pieces, 3)
    assert [p for s in cut for p in s] == pieces and all(cut) and len(cut) <= 3


class _Owner:
    """A picklable stand-in for an extractor: ``pooled`` sends it to the workers."""

    nlp = None

    def __init__(self) -> None:
        self.seen: list[str] = []

    def work(self, task: int) -> int:
        return task * 2


def test_pooled_runs_meanwhile_after_forking_and_unfreezes() -> None:
    """``meanwhile`` runs once, in this process, while the workers work; the objects frozen
    for the workers are unfrozen when the pool is done."""
    import gc

    from phrasekit.phrases.parallel import pooled

    owner = _Owner()
    got = sorted(pooled(owner, [1, 2, 3], _Owner.work, 2,
                        meanwhile=lambda: owner.seen.append("loaded")))
    assert got == [2, 4, 6]
    assert owner.seen == ["loaded"]
    assert gc.get_freeze_count() == 0


def test_extractor_follows_scikit_learns_parameter_contract() -> None:
    """A topic model given an extractor could not be cloned, nor its ``extractor__*``
    parameters set: the extractor's ``get_params`` took no ``deep``."""
    from sklearn.base import clone

    from phrasekit.topics import DocumentTopicModel

    model = DocumentTopicModel(extractor=PhraseExtractor(max_tokens=4))
    copy = clone(model)
    assert copy.extractor is not model.extractor
    assert copy.extractor.get_params() == model.extractor.get_params()
    assert model.set_params(extractor__max_tokens=3).extractor.max_tokens == 3
    assert model.get_params()["extractor__max_tokens"] == 3
    with pytest.raises(ValueError, match="max_tokens"):
        PhraseExtractor().set_params(max_tokens=0)
    with pytest.raises(ValueError, match="invalid parameter"):
        PhraseExtractor().set_params(colour="red")
    assert PhraseExtractor().set_params(reject_pattern=None)._reject is None
    for keep_all in ((), [], None):  # the documented "keep every entity type" clones too
        assert clone(PhraseExtractor(exclude_entity_types=keep_all)).settings()[
            "exclude_entity_types"] == []
    assert PhraseExtractor().settings()["max_tokens"] == 6
