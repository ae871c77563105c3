"""PhraseVectorizer on its own (scikit-learn only; its BERTopic round trips are in
test_integrations.py, which needs the bench extra): phrases before their words, the weight
where a topic repeats a phrase (in separate stretches), the cap on weighted phrases,
``min_df="auto"``."""

from __future__ import annotations

import pickle

import numpy as np


def test_phrase_vectorizer_counts_phrases_before_their_words() -> None:
    from sklearn.base import clone

    from phrasekit.integrations import PhraseVectorizer
    from phrasekit.integrations.vectorizer import count_terms

    index = {("bank", "of", "england"): 0, ("bank",): 1, ("england",): 2, ("rates",): 3}
    tokens = [["the", "bank", "of", "england", "raised", "rates"], ["bank", "england"]]
    eaten = count_terms(tokens, index, 4, consume=True).toarray().tolist()
    assert eaten == [[1, 0, 0, 1], [0, 1, 1, 0]]
    kept = count_terms(tokens, index, 4, consume=False).toarray().tolist()
    assert kept == [[1, 1, 1, 1], [0, 1, 1, 0]]
    vec = PhraseVectorizer(words=False, phrase_words=None, phrase_weight=1)
    assert clone(vec).get_params(deep=False) == vec.get_params(deep=False)
    assert "words" not in vec.get_params()  # deep: a plain CountVectorizer's parameters
    assert vec.set_params(consume=False).consume is False
    texts = ["The central bank raised interest rates. Interest rates rose again.",
             "Interest rates fell while the central bank waited."]
    X = vec.fit_transform(texts)
    assert set(vec.get_feature_names_out()) == {"central bank", "interest rates"}
    assert (vec.transform(texts) != X).nnz == 0
    heavy = PhraseVectorizer(words=False, phrase_words=None, phrase_weight=2.5,
                             min_phrase_count=1)
    np.testing.assert_allclose(heavy.fit_transform(texts).toarray(), 2.5 * X.toarray())


def test_phrase_weight_applies_where_a_text_repeats_the_phrase() -> None:
    from phrasekit.integrations import PhraseVectorizer

    texts = ["The central bank raised interest rates. Interest rates rose again.",
             "Interest rates fell while the central bank waited."]
    vec = PhraseVectorizer(words=False, phrase_words=None, phrase_weight=3, min_phrase_count=2,
                           repeat_gap=None)
    X = vec.fit_transform(texts).toarray()
    rates, bank = vec.vocabulary_["interest rates"], vec.vocabulary_["central bank"]
    assert X[:, rates].tolist() == [6.0, 1.0]  # twice in the first text: weighted there only
    assert X[:, bank].tolist() == [1.0, 1.0]  # once in each: never weighted
    np.testing.assert_array_equal(vec.transform(texts).toarray(), X)
    assert vec.transform(texts[1:]).toarray()[0, rates] == 1.0


def test_only_a_texts_most_frequent_phrases_are_weighted() -> None:
    from phrasekit.integrations import PhraseVectorizer

    texts = ["Interest rates rose. Interest rates fell. Interest rates held. The central bank "
             "met. The central bank spoke. The stock market fell. The stock market rose.",
             "The stock market rose. The stock market fell. The central bank waited."]
    vec = PhraseVectorizer(words=False, phrase_words=None, phrase_weight=4, min_phrase_count=2,
                           max_weighted=2, repeat_gap=None)
    X = vec.fit_transform(texts).toarray()
    col = vec.vocabulary_
    # the first text repeats three phrases: its two most frequent are weighted (a tie goes to
    # the phrase first in term order), the third counts as it occurs
    assert X[0, col["interest rates"]] == 12.0
    assert X[0, col["central bank"]] == 8.0 and X[0, col["stock market"]] == 2.0
    assert X[1, col["stock market"]] == 8.0 and X[1, col["central bank"]] == 1.0
    np.testing.assert_array_equal(vec.transform(texts).toarray(), X)
    every = vec.set_params(max_weighted=None).fit_transform(texts).toarray()
    assert every[0, col["stock market"]] == 8.0
    # a vectorizer pickled before the cap and the floor existed weights every phrase, as then
    old = pickle.loads(pickle.dumps(vec))
    del old.__dict__["max_weighted"], old.__dict__["min_phrase_count"]
    del old.__dict__["repeat_gap"]
    assert old.get_params(deep=False)["repeat_gap"] is None
    assert old.get_params(deep=False)["max_weighted"] is None
    np.testing.assert_array_equal(old.transform(texts[1:]).toarray()[0],
                                  vec.set_params(min_phrase_count=1).transform(texts[1:])
                                  .toarray()[0])


def test_a_phrase_every_text_repeats_gives_way_to_the_texts_own() -> None:
    """Under the cap, a text's phrases are ranked by count times c-TF-IDF's idf: "last year",
    in every text, gives way to the phrase this text alone repeats."""
    from phrasekit.integrations import PhraseVectorizer

    texts = ["Last year the central bank met. Last year it rained. Last year the central "
             "bank spoke.", "Last year the stock market fell. Last year it rose.",
             "Last year the team won. Last year the team lost."]
    vec = PhraseVectorizer(words=False, phrase_words=None, phrase_weight=4, min_phrase_count=2,
                           max_weighted=1, repeat_gap=None)
    X = vec.fit_transform(texts).toarray()
    col = vec.vocabulary_
    assert X[0, col["central bank"]] == 8.0 and X[0, col["last year"]] == 3.0
    assert X[1, col["last year"]] == 8.0  # the only phrase this text repeats
    np.testing.assert_array_equal(vec.transform(texts).toarray(), X)
    old = pickle.loads(pickle.dumps(vec))
    del old.__dict__["term_idf_"]  # fitted before the idf: ranked by count, as then
    assert old.transform(texts[:1]).toarray()[0, col["last year"]] == 12.0


def test_a_phrase_repeated_in_one_stretch_of_a_topic_counts_once_toward_the_floor() -> None:
    """BERTopic joins a topic's documents: repeats closer than ``repeat_gap`` tokens are taken
    as one document's and do not earn the weight; the same count spread out does."""
    from phrasekit.integrations import PhraseVectorizer

    filler = " ".join(["Nothing else happened that day."] * 4)  # 20 tokens
    spread = f"Interest rates rose. {filler} Interest rates fell. {filler} Interest rates held."
    close = "The central bank met. The central bank spoke. The central bank waited."
    texts = [f"{spread} {close}", "Interest rates and the central bank."]
    vec = PhraseVectorizer(words=False, phrase_words=None, phrase_weight=5, min_phrase_count=3,
                           max_weighted=None, repeat_gap=10)
    X = vec.fit_transform(texts).toarray()
    rates, bank = vec.vocabulary_["interest rates"], vec.vocabulary_["central bank"]
    assert X[0, rates] == 15.0 and X[0, bank] == 3.0  # three runs / one run of three
    np.testing.assert_array_equal(vec.transform(texts).toarray(), X)
    wide = vec.set_params(repeat_gap=30).fit_transform(texts).toarray()
    assert wide[0, rates] == 3.0  # the filler is shorter than 30 tokens: one run
    every = vec.set_params(repeat_gap=None).fit_transform(texts).toarray()
    assert every[0, rates] == 15.0 and every[0, bank] == 15.0


def test_phrase_vectorizer_min_df_auto_needs_two_topics_only_when_there_are_many() -> None:
    from phrasekit.integrations import PhraseVectorizer
    from phrasekit.integrations.vectorizer import AUTO_MIN_DF_TEXTS

    few = ["The central bank raised interest rates.", "She bought a new mobile phone."]
    vec = PhraseVectorizer(words=False, phrase_words=None)
    second = {t for t in vec.fit(few).get_feature_names_out() if t not in few[0].lower()}
    assert second and "central bank" in vec.vocabulary_  # each text's phrases, with 2 texts
    many = few + ["The central bank waited."] * (AUTO_MIN_DF_TEXTS - 2)
    terms = set(vec.fit(many).get_feature_names_out())
    assert "central bank" in terms and not second & terms  # in one text of many: dropped
    assert second <= set(PhraseVectorizer(words=False, phrase_words=None, min_df=1).fit(
        many).get_feature_names_out())
    assert vec.get_params()["min_df"] == 1  # what BERTopic saves: a plain CountVectorizer's


def test_min_df_auto_keeps_a_term_of_one_topic_that_runs_through_it() -> None:
    """A topic's own name occurs all through its joined documents and is kept; a word that one
    of its documents repeats in one place is not, nor with ``min_df=2``."""
    from phrasekit.integrations import PhraseVectorizer
    from phrasekit.integrations.vectorizer import AUTO_MIN_DF_TEXTS

    topic = "Ybcu4 films of ybcu4 grow. " + " ".join(
        f"Fannie lent {i} dollars to the bank." for i in range(40))
    texts = [topic] + ["The central bank lent money."] * AUTO_MIN_DF_TEXTS
    terms = set(PhraseVectorizer(phrase_words=None).fit(texts).get_feature_names_out())
    assert {"fannie", "bank", "central bank"} <= terms and "ybcu4" not in terms
    plain = set(PhraseVectorizer(phrase_words=None, min_df=2).fit(texts).get_feature_names_out())
    assert "fannie" not in plain and "bank" in plain


def test_documents_that_are_not_text_and_bad_settings_are_refused() -> None:
    """None, NaN or bytes documents were counted as the texts "None", "nan" and "b'...'"; a
    NaN, infinite or negative weight went into the counts BERTopic reads."""
    import pytest

    from phrasekit.integrations import PhraseVectorizer

    docs = ["The neural network works."] * 3
    for bad in (float("nan"), None, b"x"):
        with pytest.raises(TypeError, match=r"raw_documents\[3\] is"):
            PhraseVectorizer().fit_transform([*docs, bad])
    for setting, message in (({"phrase_weight": float("nan")}, "phrase_weight"),
                             ({"phrase_weight": -1.0}, "phrase_weight"),
                             ({"min_df": -1}, "min_df"), ({"max_df": 2.5}, "max_df"),
                             ({"repeat_gap": -1}, "repeat_gap")):
        with pytest.raises(ValueError, match=message):
            PhraseVectorizer(**setting).fit_transform(docs)


def test_words_of_any_script_stay_whole():
    from phrasekit.integrations import PhraseVectorizer
    from phrasekit.text import tokenize

    assert tokenize("Die Zentralbank erhöht die Zinsen in Zürich") == [
        "die", "zentralbank", "erhöht", "die", "zinsen", "in", "zürich"]
    assert tokenize("cafe\u0301 Центральный банк") == ["café", "центральный", "банк"]
    names = PhraseVectorizer(min_df=1).fit(
        ["Die Zentralbank erhöht die Zinsen für Verbraucher."] * 3).get_feature_names_out()
    assert {"erhöht", "für", "verbraucher"} <= set(names) and "erh" not in names
    assert "банк" in PhraseVectorizer(min_df=1).fit(
        ["Центральный банк повысил ставку."] * 3).get_feature_names_out()


def test_fit_counts_as_transform_does_and_hands_out_copies() -> None:
    """A phrase dropped by ``min_df`` ("deep neural network", in one text) had hidden the kept
    "neural network" inside it in ``fit_transform`` alone; ``transform`` of the fitted texts
    returned the very matrix BERTopic then normalises in place, whatever the settings since."""
    import pytest

    from phrasekit.integrations import PhraseVectorizer

    texts = ["We train a deep neural network model.", "A neural network learns.",
             "The neural network is big."] + ["Some other text about cats."] * 17
    vec = PhraseVectorizer()
    X = vec.fit_transform(texts)
    fresh = pickle.loads(pickle.dumps(vec)).transform(texts)  # pickled: no cached matrix
    assert (fresh != X).nnz == 0
    assert X[0, vec.vocabulary_["neural network"]] == 1
    X.data[:] = 0
    assert vec.transform(texts).sum() > 0
    vec = PhraseVectorizer(repeat_gap=None, min_phrase_count=1, max_weighted=None)
    assert vec.fit_transform(texts).max() == 6
    assert vec.set_params(phrase_weight=1.0).transform(texts).max() == 1
    with pytest.raises(ValueError, match="the 3 texts are empty"):
        PhraseVectorizer().fit_transform(["", " ", "\n"])
