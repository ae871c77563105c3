"""Token attributes read as arrays (TokenTable, DocSpans, pattern_runs) against spaCy's own
Token objects, and the encoder's token limit used by the keyphrase document pass."""

from __future__ import annotations

import numpy as np
import pytest

from phrasekit.phrases.extract import (
    DEFAULT_SPACY_MODEL,
    HEAD_POS,
    LEADING_STRIP_WORDS,
    PATTERN_POS,
    load_spacy,
    pattern_spans,
)
from phrasekit.phrases.keyphrase_candidates import DocSpans
from phrasekit.phrases.keyphrases import KeyphraseExtractor
from phrasekit.phrases.token_table import TokenTable, left_edges, noun_chunks, pattern_runs

# Symbols that are also tags ("POS" for 's), hyphens, brackets, a curly apostrophe, line
# breaks, numbers and double spaces: the cases where an array lookup could differ from spaCy.
TEXTS = [
    "Standard & Poor's (S&P) cut India's rating; the rupee hit a two-year high.\n\n"
    "Its borrowers’ creditworthiness fell  after 3 quarters of state-owned bank losses.",
    "Support vector machines (SVM) for [protein] function prediction\nWe train a "
    "radial basis function {RBF) kernel on many of the sequence profiles.",
    "Your 2 new high-speed trains and their many long-distance routes: what’s next?",
]


@pytest.fixture(scope="module")
def docs():
    nlp = load_spacy(DEFAULT_SPACY_MODEL, exclude=("lemmatizer", "ner"))
    return [nlp(t) for t in TEXTS]


def _lead(tok) -> bool:  # the token rule the arrays replace
    return (tok.pos_ in {"DET", "PRON", "CCONJ", "SCONJ", "ADP", "PART", "NUM", "SYM", "PUNCT",
                         "SPACE", "AUX", "INTJ", "X"}
            or tok.is_punct or tok.is_space or tok.like_num
            or tok.tag_ in ("PRP$", "WP$", "POS") or tok.lower_ in LEADING_STRIP_WORDS)


def test_table_reads_what_the_tokens_say(docs) -> None:
    for doc, text in zip(docs, TEXTS, strict=True):
        table = TokenTable.of(doc, text)
        assert table._text is text  # the parsed text is used, not rebuilt
        spans = DocSpans(table)
        for tok in doc:
            i = tok.i
            assert table.token_text(i) == tok.text
            assert bool(table.space_after[i]) == bool(tok.whitespace_)
            assert bool(table.is_punct[i]) == tok.is_punct and bool(table.like_num[i]) == (
                tok.like_num)
            assert spans.lead[i] == _lead(tok), tok.text
            assert spans.trail[i] == (tok.is_punct or tok.is_space or tok.tag_ == "POS")
            assert spans.head[i] == (tok.pos_ in HEAD_POS)
        for start, end in [(0, 3), (2, 9), (0, len(doc))]:
            joined = "".join(t.text_with_ws for t in doc[start : end - 1]) + doc[end - 1].text
            assert table.span_text(start, end) == joined


def test_possessive_tag_is_stripped_from_the_end(docs) -> None:
    """"POS" is a spaCy symbol: its id is not the string's hash."""
    table = TokenTable.of(docs[0], TEXTS[0])
    spans = DocSpans(table)
    start = next(t.i for t in docs[0] if t.text == "Standard")
    assert spans.clean(start, start + 4) == (start, start + 3)  # "Standard & Poor 's"
    assert spans.surface(start, start + 3) == "standard & poor"
    assert spans.pieces(start, start + 6) == [(start, start + 3), (start + 5, start + 6)]


def test_a_text_that_does_not_fit_falls_back_to_the_doc(docs) -> None:
    table = TokenTable.of(docs[2], TEXTS[2] + " extra")
    assert table._text is None and table.text == docs[2].text


def test_pattern_runs_match_a_token_walk(docs) -> None:
    for doc in docs:
        expected, start = [], None
        for tok in doc:
            ok = tok.pos_ in PATTERN_POS or (start is not None and tok.text == "-")
            if ok and "\n" not in tok.text and not tok.is_space:
                start = tok.i if start is None else start
                continue
            if start is not None:
                expected.append((start, tok.i))
                start = None
        if start is not None:
            expected.append((start, len(doc)))
        assert pattern_runs(TokenTable.of(doc), PATTERN_POS) == expected
        assert [(s.start, s.end) for s in pattern_spans(doc)] == expected
    assert any(b - a > 1 for a, b in pattern_runs(TokenTable.of(docs[2]), PATTERN_POS))


COORDINATED = ("The board approved budgets, salaries and pensions for nurses, teachers and "
               "the police, and its chairman thanked them.")


def test_noun_chunks_from_arrays_match_spacys(docs) -> None:
    nlp = load_spacy(DEFAULT_SPACY_MODEL, exclude=("lemmatizer", "ner"))
    for doc in [*docs, nlp(COORDINATED)]:
        expected = [(s.start, s.end) for s in doc.noun_chunks]
        assert noun_chunks(TokenTable.of(doc)) == expected
        assert [int(left_edges(TokenTable.of(doc).head)[t.i]) for t in doc] == \
            [t.left_edge.i for t in doc]
    coordinated = noun_chunks(TokenTable.of(nlp(COORDINATED)))
    assert len(coordinated) >= 6  # conjuncts ("salaries", "pensions", ...) are chunks too


def test_noun_chunks_without_a_parse_fail_as_spacy_does() -> None:
    import spacy

    doc = spacy.blank("en")("support vector machines")
    with pytest.raises(ValueError):
        noun_chunks(TokenTable.of(doc))


def test_token_limit_cuts_and_restores(minilm) -> None:
    text = "the bank raised its interest rates again " * 40
    full = minilm.encode([text])
    own = minilm.max_seq_length
    with minilm.token_limit(16) as enc:
        assert enc is minilm and minilm.max_seq_length == 16
        cut = minilm.encode([text])
    assert minilm.max_seq_length == own
    assert not np.allclose(cut, full, atol=1e-4)
    with minilm.token_limit(own + 100), minilm.token_limit(None):
        assert minilm.max_seq_length == own
    with pytest.raises(RuntimeError), minilm.token_limit(8):
        raise RuntimeError("inside")
    assert minilm.max_seq_length == own


def test_doc_tokens_is_a_setting(minilm) -> None:
    ex = KeyphraseExtractor(minilm)
    assert ex.settings()["doc_tokens"] == 192
    assert ex.set_params(doc_tokens=None).doc_tokens is None
    with pytest.raises(ValueError, match="doc_tokens"):
        KeyphraseExtractor(minilm, doc_tokens=4)
