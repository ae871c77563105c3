"""PEARL data augmentation (phrasekit.phrases.augment): one-edit ops, typo noise, the three
augmentation levels and the Augmenter's level switching."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from phrasekit.phrases.augment import (
    CHAR_OPS,
    KEYBOARD,
    Augmenter,
    CharAugment,
    PhraseAugment,
    TokenAugment,
    delete_char,
    insert_char,
    keyboard_replace,
    match_case,
    paraphrase_map,
    random_char_edit,
    swap_chars,
    typo_noise,
)

WORDS = ["Times", "newspaper", "NYC", "adult", "Men's", "e-mail", "York", "abc"]


def edit_distance(a: str, b: str, transpositions: bool = False) -> int:
    """Levenshtein distance (optimal string alignment when ``transpositions``)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if (transpositions and i > 1 and j > 1 and a[i - 1] == b[j - 2]
                    and a[i - 2] == b[j - 1]):
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def test_edit_distance_helper():
    assert edit_distance("adult", "adlut") == 2
    assert edit_distance("adult", "adlut", transpositions=True) == 1
    assert edit_distance("kitten", "sitting") == 3


@pytest.mark.parametrize("name", list(CHAR_OPS))
def test_each_char_op_makes_exactly_one_edit(name):
    op = CHAR_OPS[name]
    rng = random.Random(0)
    for word in WORDS:
        for _ in range(20):
            out = op(word, rng)
            assert out != word
            assert edit_distance(word, out, transpositions=True) == 1, (name, word, out)
            if name == "swap":
                assert sorted(out) == sorted(word) and edit_distance(word, out) == 2
            elif name == "delete":
                assert len(out) == len(word) - 1
            elif name == "insert":
                assert len(out) == len(word) + 1
            else:
                assert len(out) == len(word)


def test_short_or_non_alphabetic_words_are_left_alone():
    rng = random.Random(0)
    for op in (*CHAR_OPS.values(), random_char_edit):
        for word in ("of", "a", "", "2012", "--", "1.5"):
            assert op(word, rng) == word
    assert swap_chars("aaa", rng) == "aaa"  # no transposition can change it
    assert random_char_edit("aaa", rng) != "aaa"  # but another op can
    assert delete_char("ab", rng, min_len=2) in {"a", "b"}


def test_only_letters_are_edited():
    rng = random.Random(1)
    for _ in range(50):
        for op in (swap_chars, delete_char, keyboard_replace):
            out = op("a1-b2", rng)
            assert [c for c in out if not c.isalpha()] == ["1", "-", "2"]


def test_keyboard_table_and_replacement_uses_a_neighbour_keeping_case():
    assert set(KEYBOARD["g"]) == set("fhtyvb")
    assert set(KEYBOARD["q"]) == set("wa")
    assert set(KEYBOARD["m"]) == set("njk")
    assert all(c in KEYBOARD[n] for c, ns in KEYBOARD.items() for n in ns)  # symmetric
    assert len(KEYBOARD) == 26
    rng = random.Random(0)
    for word in ("Gap", "NYC", "street"):
        for _ in range(30):
            out = keyboard_replace(word, rng)
            (i,) = [k for k, (a, b) in enumerate(zip(word, out, strict=True)) if a != b]
            assert out[i].lower() in KEYBOARD[word[i].lower()]
            assert out[i].isupper() == word[i].isupper()


def test_insert_into_all_caps_stays_upper():
    rng = random.Random(3)
    assert all(insert_char("NASA", rng).isupper() for _ in range(20))


def test_typo_noise_p0_identity_and_p1_edits_every_long_word_once():
    text = "The  New York Times of 2012\tin NYC"
    rng = random.Random(0)
    assert typo_noise(text, rng, p=0.0) == text
    for seed in range(20):
        out = typo_noise(text, random.Random(seed), p=1.0)
        a, b = text.split(" "), out.split(" ")  # whitespace is preserved exactly
        assert len(a) == len(b) and out.count("\t") == 1
        for wa, wb in zip(text.split(), out.split(), strict=True):
            long_word = len(wa) >= 3 and any(c.isalpha() for c in wa)
            assert edit_distance(wa, wb, transpositions=True) == (1 if long_word else 0)
    with pytest.raises(ValueError, match="p must be"):
        typo_noise(text, rng, p=1.5)


def test_typo_noise_rate_and_determinism():
    words = " ".join(["phrase"] * 2000)
    out = typo_noise(words, random.Random(7), p=0.3)
    changed = sum(a != b for a, b in zip(words.split(), out.split(), strict=True))
    assert 500 < changed < 700
    assert typo_noise(words, random.Random(7), p=0.3) == out
    assert typo_noise(words, random.Random(8), p=0.3) != out


def test_char_augment_edits_exactly_one_word():
    aug = CharAugment()
    for seed in range(30):
        text = "The New York Times"
        out = aug(text, random.Random(seed))
        assert out is not None
        diffs = [(a, b) for a, b in zip(text.split(), out.split(), strict=True) if a != b]
        assert len(diffs) == 1 and edit_distance(*diffs[0], transpositions=True) == 1
    assert aug("of a", random.Random(0)) is None
    assert aug("", random.Random(0)) is None


def test_token_augment_synonyms_keep_capitalisation():
    syn = {"new": ["novel"], "york": ["yorkshire"], "newspaper": ["paper", "NYC daily"]}
    aug = TokenAugment(syn, swap=False, max_replacements=1)
    outs = {aug("New York newspaper,", random.Random(s)) for s in range(40)}
    assert outs == {"Novel York newspaper,", "New Yorkshire newspaper,",
                    "New York paper,", "New York NYC daily,"}  # trailing comma kept
    assert aug("NEW", random.Random(0)) == "NOVEL"
    assert aug("unknown words", random.Random(0)) is None
    assert match_case("york", "NYC") == "NYC" and match_case("York", "big apple") == "Big apple"
    many = TokenAugment(syn, swap=False, max_replacements=3)
    words = ["new", "york", "newspaper"]
    counts = Counter()
    for seed in range(60):
        out = many(" ".join(words), random.Random(seed))
        if out is not None and len(out.split()) == 3:
            counts[sum(a != b for a, b in zip(words, out.split(), strict=True))] += 1
    assert set(counts) >= {1, 2}  # one or more tokens replaced


def test_token_augment_swap():
    aug = TokenAugment()
    assert aug("New York", random.Random(0)) == "York New"
    assert aug("York", random.Random(0)) is None
    assert aug("go go", random.Random(0)) is None
    out = aug("a  b c", random.Random(1))
    assert out in {"b  a c", "a  c b"}  # whitespace stays in place


def test_paraphrase_map_is_symmetric_and_normalised():
    pmap = paraphrase_map([("The New York Times", "NYTimes"), ("the  new york times", "NYT"),
                           ("NYTimes", "The New York Times"), ("same", "Same"), ("", "x")])
    assert pmap == {"the new york times": ["NYTimes", "NYT"],
                    "nytimes": ["The New York Times"], "nyt": ["the new york times"]}
    aug = PhraseAugment(pmap)
    assert aug("NYT", random.Random(0)) == "the new york times"
    assert aug("THE new   York Times", random.Random(0)) in {"NYTimes", "NYT"}
    assert aug("New York Post", random.Random(0)) is None


def test_augmenter_levels_disabled_are_never_used():
    syn = {"new": ["novel"], "times": ["epochs"]}
    pmap = paraphrase_map([("The New York Times", "NYTimes")])
    texts = ["The New York Times", "New York newspaper", "AI", "of"]
    for char, token, phrase in [(True, False, False), (False, True, False), (False, False, True),
                                (True, True, False), (False, True, True), (False, False, False)]:
        aug = Augmenter(char, token, phrase, synonyms=syn, paraphrases=pmap)
        allowed = {lv for lv, on in zip(("char", "token", "phrase"), (char, token, phrase),
                                        strict=True) if on}
        if char:
            allowed.add("char_fallback")
        rng = random.Random(0)
        used = Counter(aug.augment(t, rng)[1] for _ in range(50) for t in texts)
        assert set(used) - {"identity"} <= allowed, (char, token, phrase, used)
        assert aug.levels == [lv for lv in ("char", "token", "phrase") if lv in allowed]
    none = Augmenter(False, False, False)
    assert none("The New York Times", random.Random(0)) == "The New York Times"


def test_augmenter_prefers_phrase_and_falls_back():
    pmap = paraphrase_map([("The New York Times", "NYTimes")])
    aug = Augmenter(synonyms={"new": ["novel"]}, paraphrases=pmap)
    rng = random.Random(0)
    used = Counter(aug.augment("The New York Times", rng)[1] for _ in range(600))
    assert used["phrase"] > 300 and used["char"] > 0 and used["token"] > 0
    # no paraphrase and no synonym, one token: only the char level can work
    only = Counter(aug.augment("Times", rng)[1] for _ in range(50))
    assert set(only) == {"char"}
    # a two-letter word: last resort is a char edit ignoring the minimum length
    out, level = aug.augment("AI", random.Random(0))
    assert level == "char_fallback" and out != "AI"
    assert Augmenter(char=False).augment("AI", random.Random(0)) == ("AI", "identity")


def test_augmenter_deterministic_and_describe():
    pmap = paraphrase_map([("adult male", "grown man")])
    aug = Augmenter(synonyms={"adult": ["grown"]}, paraphrases=pmap,
                    weights={"char": 2.0, "token": 1.0, "phrase": 0.0})
    texts = ["adult male", "New York", "typo robustness test"] * 20
    a = [aug(t, rng) for rng in [random.Random(5)] for t in texts]
    b = [aug(t, rng) for rng in [random.Random(5)] for t in texts]
    assert a == b
    desc = aug.describe()
    assert json.loads(json.dumps(desc)) == desc
    assert desc["weights"] == {"char": 2.0, "token": 1.0, "phrase": 0.0}
    assert desc["levels"] == ["char", "token", "phrase"]
    assert desc["token"]["synonym_words"] == 1 and desc["phrase"]["paraphrase_keys"] == 2
    with pytest.raises(ValueError, match="unknown augmentation level"):
        Augmenter(weights={"word": 1.0})
    with pytest.raises(ValueError, match="weights"):
        Augmenter(weights={"char": -1.0})
