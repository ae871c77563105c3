"""The faster spaCy pipeline annotates exactly as spaCy's own (phrases/spacy_speed.py)."""

from __future__ import annotations

import pytest

spacy = pytest.importorskip("spacy")

from phrasekit.phrases import spacy_speed  # noqa: E402
from phrasekit.phrases.extract import DEFAULT_SPACY_MODEL, load_spacy  # noqa: E402
from phrasekit.phrases.spacy_speed import POS_RULER, PosRuler, speed_up  # noqa: E402


def _annotations(docs) -> list[tuple]:
    return [(t.pos_, t.tag_, t.dep_, t.head.i) for d in docs for t in d]


def test_pos_ruler_annotates_as_the_attribute_ruler(small_corpus: list) -> None:
    """On real abstracts (plus expletive "there is", "ain't" and runs of spaces), every
    token's POS, TAG, DEP and head and every noun chunk equal the original pipeline's."""
    texts = [d.text for d in small_corpus[:40]] + [
        "There is a cat.  There were   dogs, but it ain't so.\n\nIs that what you do?"]
    fast = load_spacy(DEFAULT_SPACY_MODEL, ("lemmatizer", "ner"))
    assert isinstance(fast.get_pipe("attribute_ruler"), PosRuler)
    orig = spacy.load(DEFAULT_SPACY_MODEL, exclude=["lemmatizer", "ner"])
    assert not isinstance(orig.get_pipe("attribute_ruler"), PosRuler)
    a, b = list(fast.pipe(texts)), list(orig.pipe(texts))
    assert _annotations(a) == _annotations(b)
    assert [[c.text for c in d.noun_chunks] for d in a] == [
        [c.text for c in d.noun_chunks] for d in b]
    assert sum(t.pos_ == "NOUN" for d in a for t in d) > 500


def test_a_lemmatizing_pipeline_keeps_spacys_ruler() -> None:
    """With a lemmatizer, LEMMA and MORPH are read, so the ruler stays spaCy's."""
    nlp = spacy.load(DEFAULT_SPACY_MODEL, exclude=["ner"])
    assert "lemmatizer" in nlp.pipe_names
    assert not isinstance(speed_up(nlp).get_pipe("attribute_ruler"), PosRuler)


def test_an_unknown_pattern_form_keeps_spacys_ruler() -> None:
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("attribute_ruler")
    ruler.add([[{"LOWER": "x"}]], {"POS": "NOUN"})
    assert PosRuler.from_ruler(ruler) is not None
    ruler.add([[{"LENGTH": {">=": 3}}]], {"POS": "NOUN"})
    assert PosRuler.from_ruler(ruler) is None
    assert POS_RULER not in speed_up(nlp).pipe_names
    assert not isinstance(nlp.get_pipe("attribute_ruler"), PosRuler)


def test_pos_ruler_precedence_and_targets() -> None:
    """A later rule wins over an earlier one, and a two-token rule sets its indexed token."""
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("attribute_ruler")
    ruler.add([[{"LOWER": "run"}]], {"POS": "VERB"})
    ruler.add([[{"LOWER": {"IN": ["run", "walk"]}}]], {"POS": "NOUN"})
    ruler.add([[{"LOWER": "a"}, {"LOWER": {"REGEX": "^w"}}]], {"POS": "PROPN"}, index=1)
    doc = PosRuler.from_ruler(ruler)(nlp.make_doc("run a walk"))
    assert [t.pos_ for t in doc] == ["NOUN", "", "PROPN"]


@pytest.mark.parametrize("faster", [True, False])
def test_choose_ops_follows_the_measurement(monkeypatch: pytest.MonkeyPatch,
                                            faster: bool) -> None:
    from thinc.api import NumpyOps, get_current_ops, set_current_ops

    before = get_current_ops()
    set_current_ops(NumpyOps())
    monkeypatch.setattr(spacy_speed, "numpy_gemm_is_faster", lambda: faster)
    try:
        spacy_speed.choose_ops()
        assert get_current_ops().use_blis is (not faster)
    finally:
        set_current_ops(before)


def test_the_gemm_measurement_is_a_bool() -> None:
    assert spacy_speed.numpy_gemm_is_faster() in (True, False)
