"""Keyphrases per document (KeyphraseExtractor), the Inspec metrics and `phrasekit keyphrases`."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.eval.keyphrases import (
    distinct_keys,
    evaluate_inspec,
    prf_at_k,
    score_keyphrases,
)
from phrasekit.io import Document
from phrasekit.phrases.keyphrase_candidates import (
    brackets_balanced,
    phrase_key,
    suppress_contained,
    unpaired_brackets,
)
from phrasekit.phrases.keyphrases import KeyphraseExtractor

# Inspec-like abstracts (title, line break, abstract), written for these tests.
SVM_IDS = (
    "Support vector machines for network intrusion detection\n"
    "Network intrusion detection systems monitor traffic for attacks. We train support vector "
    "machines on connection records and compare them with decision trees and neural networks. "
    "The support vector machines detect unknown attacks with a low false alarm rate, and "
    "feature selection reduces the training time of the intrusion detection system."
)
ROBOT = (
    "Path planning for mobile robots in dynamic environments\n"
    "A mobile robot must plan collision-free paths among moving obstacles. The proposed path "
    "planning algorithm combines a probabilistic roadmap with a velocity obstacle model, so the "
    "robot replans in real time. Experiments with a wheeled mobile robot show shorter paths "
    "and fewer collisions than potential field methods."
)
NEURAL = (
    "Neural networks for handwriting recognition\n"
    "A neural network recognises handwritten digits. We compare a deep neural network, a "
    "convolutional neural network and a recurrent neural network model with neural network "
    "ensembles, and study how neural networks generalise on a postal code database."
)
# A real abstract of the bundled sample corpus (arXiv 0704.0143, CC0) with a parenthesis that
# once gave the candidate "instanton liquid density (gluon condensate".
INSTANTON = (
    "Instanton Liquid at Finite Temperature and Chemical Potential of Quarks\n"
    "Instanton liquid in heated and strongly interacting matter is studied using the "
    "variational principle. The dependence of the instanton liquid density (gluon condensate) "
    "on the temperature and the quark chemical potential is determined under the assumption "
    "that, at finite temperatures, the dominant contribution is given by an ensemble of "
    "calorons. The respective one-loop effective quark Lagrangian is used."
)
# Brackets of every kind, in and around noun phrases, written for these tests.
BRACKETS = (
    "Support vector machines (SVM) for [protein] function prediction\n"
    "We train support vector machines (SVM) with a radial basis function {RBF) kernel on the "
    "original polynomials u(t) and the sequence profiles [PSSM] of each protein family. "
    "The kernel width (a free parameter) is tuned by cross validation."
)

runner = CliRunner()


@pytest.fixture(scope="module")
def extractor(minilm) -> KeyphraseExtractor:
    return KeyphraseExtractor(minilm, top_n=10)


@pytest.fixture(scope="module")
def results(extractor: KeyphraseExtractor):
    return extractor.extract([SVM_IDS, ROBOT, NEURAL])


# ---------------------------------------------------------------------------- matching + metrics
def test_phrase_key_stems_and_ignores_punctuation_and_case() -> None:
    assert phrase_key("Anti-spam acts") == phrase_key("anti spam act") == "anti spam act"
    assert phrase_key("Neural Networks") == phrase_key("neural network")
    assert phrase_key("Kamp's theorem") == phrase_key("kamp s theorems")
    assert phrase_key("support vector machines") != phrase_key("support vector")
    assert phrase_key("--") == ""


def test_distinct_keys_removes_stemmed_duplicates_in_order() -> None:
    keys = distinct_keys(["Neural networks", "decision tree", "neural network", "!", "trees"])
    assert keys == ["neural network", "decis tree", "tree"]
    with pytest.raises(TypeError):
        distinct_keys("neural network")


def test_prf_at_k_hand_made() -> None:
    pred = ["neural networks", "Neural network", "support vector machines", "dogs", "cat"]
    gold = ["neural network", "support-vector machine", "decision trees", "decision trees"]
    # distinct predictions: neural network, support vector machine, dog, cat (4 < 5)
    p, r, f = prf_at_k(pred, gold, 5)
    assert (p, r) == pytest.approx((2 / 4, 2 / 3))
    assert f == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert prf_at_k(pred, gold, 1) == pytest.approx((1.0, 1 / 3, 0.5))
    assert prf_at_k(["cat"], gold, 5) == (0.0, 0.0, 0.0)
    assert prf_at_k([], gold, 5) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="k must be"):
        prf_at_k(pred, gold, 0)
    with pytest.raises(ValueError, match="gold"):
        prf_at_k(pred, ["..."], 5)


def test_score_keyphrases_means_over_documents() -> None:
    preds = [["a b", "c d"], [], ["x"]]
    golds = [["a b", "e f"], ["g"], []]  # the third has no gold: skipped
    m = score_keyphrases(preds, golds, ks=(1, 2))
    assert m["n_docs"] == 2 and m["n_skipped"] == 1
    assert m["P@1"] == pytest.approx(50.0)  # (1 + 0) / 2
    assert m["R@2"] == pytest.approx(25.0)  # (1/2 + 0) / 2
    assert m["F1@2"] == pytest.approx(25.0)  # doc 1: P = R = 1/2
    with pytest.raises(ValueError, match="prediction lists"):
        score_keyphrases([["a"]], [["a"], ["b"]])


def test_unpaired_brackets_and_balance() -> None:
    assert unpaired_brackets(["density", "(", "gluon", "condensate"]) == {1}
    assert unpaired_brackets(["machines", "(", "svm", ")"]) == set()
    assert unpaired_brackets(["u(t", ")"]) == set()
    assert unpaired_brackets(["{", "rbf", ")", "kernel"]) == {0, 2}  # wrong kind: both unpaired
    assert unpaired_brackets(["a", "]", "[", "b"]) == {1, 2}
    assert brackets_balanced("f(x) [y] {z}") and brackets_balanced("no brackets")
    for text in ("instanton liquid density (gluon condensate", "1)-shell sort", "u(t", "a (b]"):
        assert not brackets_balanced(text)


def test_suppress_contained_keeps_the_higher_scored() -> None:
    keys = ["instanton liquid", "instanton liquid densiti", "densiti", "quark", "liquid quark"]
    scores = np.array([0.9, 0.7, 0.8, 0.5, 0.6])
    # "instanton liquid" (0.9) beats its container; "densiti" (0.8) is then free; "liquid
    # quark" (0.6) beats "quark" (0.5), which it contains
    assert suppress_contained(keys, scores) == [0, 2, 4]
    assert suppress_contained(keys, np.array([0.1, 0.9, 0.2, 0.6, 0.5])) == [1, 3]
    # "instanton" is a word run, "instant" only a prefix: not contained
    assert suppress_contained(["instant", "instanton liquid"], np.array([0.2, 0.3])) == [0, 1]
    assert suppress_contained([], np.zeros(0)) == []


# ---------------------------------------------------------------------------- extraction
def test_central_phrases_rank_high(results) -> None:
    svm, robot, neural = ([p for p, _ in r] for r in results)
    assert {"support vector machines", "network intrusion detection"} & set(svm[:3])
    assert {"path planning", "mobile robots", "mobile robot"} & set(robot[:3])
    assert "handwriting recognition" in neural[:2]
    assert any("neural network" in p for p in neural[:3])
    assert len(svm) == len(robot) == 10
    # by default "deep / convolutional / recurrent neural network ..." give way to the top
    # phrase "neural networks" they contain: one place for the concept
    assert sum("neural network" in p for p in neural) == 1 and 3 <= len(neural) < 10


def _nested_pairs(phrases: list[str]) -> list[tuple[str, str]]:
    """Pairs (inner, outer) of phrases whose stemmed word sequence lies inside the other's."""
    keys = {p: f" {phrase_key(p)} " for p in phrases}
    return [(a, b) for a, b in itertools.permutations(phrases, 2) if keys[a] in keys[b]]


@pytest.mark.parametrize("diversity", [0.0, 0.3])
def test_suppress_nested_switches_the_containment_rule(minilm, diversity) -> None:
    """"neural networks" sits inside "deep / convolutional / recurrent neural network ...":
    kept side by side without the rule, one place for the concept with it."""
    lists = {nested: KeyphraseExtractor(minilm, top_n=10, diversity=diversity,
                                        suppress_nested=nested).extract([NEURAL])[0]
             for nested in (False, True)}
    kept = [p for p, _ in lists[False]]
    suppressed = [p for p, _ in lists[True]]
    assert _nested_pairs(kept) and not _nested_pairs(suppressed)
    assert sum("neural network" in p for p in kept) >= 2
    assert sum("neural network" in p for p in suppressed) == 1
    assert 3 <= len(suppressed) < len(kept)  # the rule leaves fewer candidates
    for r in lists.values():  # the best phrase is the same; each list sorted by score
        scores = [s for _, s in r]
        assert scores == sorted(scores, reverse=True)
    assert lists[False][0] == lists[True][0]


@pytest.mark.parametrize("nested", [False, True])
def test_rank_with_precomputed_similarities_is_the_same(minilm, nested) -> None:
    ext = KeyphraseExtractor(minilm, top_n=5, suppress_nested=nested)
    cands = ext.find_candidates([NEURAL, ROBOT])
    doc_vecs, cand_vecs = ext.embed(cands)
    for c, d, v in zip(cands, doc_vecs, cand_vecs, strict=True):
        assert ext.rank(c, d, v, v @ v.T) == ext.rank(c, d, v)


def test_candidates_are_clean_and_grouped(results) -> None:
    for r in results:
        phrases = [p for p, _ in r]
        keys = [phrase_key(p) for p in phrases]
        assert len(set(keys)) == len(keys)  # "neural network(s)" listed once
        for p in phrases:
            assert p == p.lower() and "\n" not in p and len(p.split()) <= 5
            assert p.split()[0] not in {"the", "a", "an", "we", "and", "of", "with"}


@pytest.mark.parametrize(("diversity", "nested"), [(0.0, False), (0.3, False), (0.3, True)])
def test_lists_are_balanced_sorted_and_free_of_stemmed_duplicates(minilm, diversity,
                                                                  nested) -> None:
    """Every candidate has paired brackets, each list is by descending score with no two
    phrases equal after stemming, and with ``suppress_nested`` none is a word run of another."""
    ext = KeyphraseExtractor(minilm, top_n=15, diversity=diversity, suppress_nested=nested)
    lists = ext.extract([INSTANTON, BRACKETS, SVM_IDS, NEURAL])
    everything = {p for c in ext.find_candidates([INSTANTON, BRACKETS]) for p in c.phrases}
    for r in lists:
        scores = [s for _, s in r]
        assert scores == sorted(scores, reverse=True)
        phrases = [p for p, _ in r]
        assert len({phrase_key(p) for p in phrases}) == len(phrases)
        assert all(brackets_balanced(p) for p in phrases), phrases
        if nested:
            assert not _nested_pairs(phrases), phrases
    assert all(brackets_balanced(p) for p in everything)
    # spans are cut at an unpaired bracket, not dropped: both sides stay candidates
    assert {"instanton liquid density", "gluon condensate", "support vector machines", "svm",
            "function prediction", "kernel width", "free parameter"} <= everything


def test_mmr_changes_the_list_and_removes_near_duplicates(minilm) -> None:
    plain = KeyphraseExtractor(minilm, top_n=5, diversity=0.0).extract([ROBOT])[0]
    mmr = KeyphraseExtractor(minilm, top_n=5, diversity=0.7).extract([ROBOT])[0]
    assert [p for p, _ in plain] != [p for p, _ in mmr]
    assert plain[0][0] == mmr[0][0]  # MMR starts from the most relevant phrase
    scores = [s for _, s in plain]
    assert scores == sorted(scores, reverse=True)
    assert {p for p, _ in mmr} <= {p for p, _ in KeyphraseExtractor(
        minilm, top_n=50, diversity=0.0).extract([ROBOT])[0]}  # same candidates, reordered

    def max_pair_cosine(phrases):
        v = minilm.encode([p for p, _ in phrases])
        return max(float(v[i] @ v[j]) for i, j in itertools.combinations(range(len(v)), 2))

    assert max_pair_cosine(mmr) < max_pair_cosine(plain)


def test_documents_and_edge_cases(extractor: KeyphraseExtractor) -> None:
    as_doc = extractor.extract([Document("x", ROBOT, {})])
    as_str = extractor.extract([ROBOT])
    assert as_doc == as_str
    assert extractor.extract([]) == []
    assert extractor.extract(["Hello!"]) == [[]]  # no noun phrase: no keyphrases
    many = KeyphraseExtractor(extractor.encoder_, top_n=50).extract([ROBOT])[0]
    assert 10 < len(many) < 50  # fewer candidates than asked for


@pytest.mark.parametrize(
    ("docs", "error", "fragment"),
    [
        (None, TypeError, "None"),
        ("one string", TypeError, "single string"),
        (["fine text", None], TypeError, r"docs\[1\]"),
        (["fine text", "  "], ValueError, r"docs\[1\] is empty"),
    ],
)
def test_bad_documents_raise(extractor, docs, error, fragment) -> None:
    with pytest.raises(error, match=fragment):
        extractor.extract(docs)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"top_n": 0}, ValueError),
        ({"top_n": 2.5}, TypeError),
        ({"diversity": 1.5}, ValueError),
        ({"diversity": float("nan")}, ValueError),
        ({"candidates": "ngrams"}, ValueError),
        ({"max_words": 0}, ValueError),
        ({"position_weight": -1.0}, ValueError),
        ({"suppress_nested": "yes"}, TypeError),
        ({"encoder": 5}, TypeError),
        ({"encoder": "no-such-model"}, ValueError),
    ],
)
def test_bad_params_raise(kwargs, error) -> None:
    with pytest.raises(error):
        KeyphraseExtractor(**kwargs)


def test_set_params_clone_and_repr(extractor: KeyphraseExtractor) -> None:
    """scikit-learn's contract: ``clone`` copies the settings, ``set_params`` changes them in
    place and returns the extractor (the loaded encoder kept)."""
    from sklearn.base import clone

    other = clone(extractor)
    assert other.settings() == extractor.settings() and other is not extractor
    other.encoder_  # noqa: B018 - loads it
    loaded = other._encoder
    assert other.set_params(top_n=3, diversity=0.2, suppress_nested=False) is other
    assert other.top_n == 3 and other.diversity == 0.2 and extractor.top_n == 10
    assert other.get_params()["suppress_nested"] is False
    assert other.encoder_ is loaded
    assert "KeyphraseExtractor(" in repr(other) and other.settings()["top_n"] == 3
    with pytest.raises(ValueError, match="unknown"):
        other.set_params(colour="red")
    with pytest.raises(ValueError, match="diversity"):
        other.set_params(diversity=3.0)
    assert other.diversity == 0.2


# ---------------------------------------------------------------------------- CLI
def _corpus(tmp_path, texts, **fields):
    path = tmp_path / "docs.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i, t in enumerate(texts):
            fh.write(json.dumps({"id": f"d{i}", "text": t, **fields}) + "\n")
    return path


def test_cli_writes_jsonl_and_scores_gold(tmp_path) -> None:
    corpus = _corpus(tmp_path, [SVM_IDS, ROBOT],
                     keyphrases=["support vector machines", "intrusion detection"])
    out = tmp_path / "kp.jsonl"
    res = runner.invoke(app, ["keyphrases", str(corpus), "--out", str(out), "-n", "3",
                              "--gold-field", "keyphrases", "--quiet", "--threads", "1"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [x["id"] for x in lines] == ["d0", "d1"]
    assert all(len(x["keyphrases"]) == 3 for x in lines)
    first = lines[0]["keyphrases"][0]
    assert set(first) == {"phrase", "score"} and isinstance(first["score"], float)
    assert "2 documents" in res.output and "F1@10" in res.output


def test_a_split_field_of_numbers_is_matched_as_text(tmp_path) -> None:
    """--split 1 on a corpus whose split field is the number 1 said "no document has split
    '1' (splits present: 1)"."""
    corpus = _corpus(tmp_path, [ROBOT], split=1)
    res = runner.invoke(app, ["keyphrases", str(corpus), "-n", "2", "--split", "1", "-q"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.strip().splitlines()[-1])["id"] == "d0"


def test_cli_stdout_without_out(tmp_path) -> None:
    corpus = tmp_path / "docs.txt"
    corpus.write_text(ROBOT.replace("\n", " ") + "\n", encoding="utf-8")
    res = runner.invoke(app, ["keyphrases", str(corpus), "-n", "2", "--quiet"])
    assert res.exit_code == 0, res.output
    rec = json.loads(res.stdout.strip().splitlines()[-1])
    assert rec["id"] == "0" and len(rec["keyphrases"]) == 2


def test_cli_help_has_example() -> None:
    res = runner.invoke(app, ["keyphrases", "--help"])
    assert res.exit_code == 0 and "Example" in res.output
    assert "--keep-nested" in res.output and "--suppress-nested" in res.output


def test_cli_nested_switch(tmp_path) -> None:
    corpus = _corpus(tmp_path, [NEURAL])
    lists = {}
    for flag in ("--keep-nested", "--suppress-nested"):
        out = tmp_path / f"{flag[2:]}.jsonl"
        res = runner.invoke(app, ["keyphrases", str(corpus), "--out", str(out), "--quiet",
                                  "--threads", "1", flag])
        assert res.exit_code == 0, res.output
        lists[flag] = [k["phrase"] for k in json.loads(out.read_text())["keyphrases"]]
    assert _nested_pairs(lists["--keep-nested"])
    assert not _nested_pairs(lists["--suppress-nested"])


@pytest.mark.parametrize(
    ("setup", "args", "fragment"),
    [
        ("missing", [], "not found"),
        ("ok", ["--diversity", "2"], "diversity"),
        ("ok", ["-n", "0"], "--top-n"),
        ("ok", ["--candidates", "ngrams"], "candidates"),
        ("ok", ["--model", "no-such-model"], "unknown model"),
        ("ok", ["--split", "test"], "no document has split"),
        ("ok", ["--gold-field", "keyphrases"], "keyphrases"),
        ("empty", [], "empty"),
    ],
)
def test_cli_bad_input_exit_2(tmp_path, setup, args, fragment) -> None:
    if setup == "missing":
        corpus = tmp_path / "nope.jsonl"
    else:
        corpus = _corpus(tmp_path, [ROBOT, "" if setup == "empty" else SVM_IDS], split="dev")
    res = runner.invoke(app, ["keyphrases", str(corpus), "--quiet", *args])
    assert res.exit_code == 2, res.output
    assert fragment in res.output
    if setup == "empty":  # the corpus and the document's line are named
        assert f"{corpus}:2: " in res.output
    if {"--split", "--gold-field"} & set(args):  # the corpus is named
        assert f"{corpus}: " in res.output


# ---------------------------------------------------------------------------- Inspec (shared)
@pytest.mark.shared
def test_inspec_dev_sample_in_sane_range(shared_corpora, extractor) -> None:
    if not (shared_corpora / "inspec" / "documents.jsonl").is_file():
        pytest.skip("the shared Inspec corpus is absent")
    m = evaluate_inspec(extractor, split="dev", limit=20, corpora=shared_corpora)
    assert m["n_docs"] == 20
    # the whole dev split scores F1@10 39 with the defaults; KeyBERT's n-grams about 10
    assert 20.0 < m["F1@10"] < 60.0
    assert 15.0 < m["F1@5"] < 60.0
    assert np.isfinite(m["seconds"])


def test_cli_default_model_is_minilm_at_precision_fast(tmp_path, monkeypatch) -> None:
    """`keyphrases` with no -m uses MiniLM at precision fast (bf16 where the CPU has it, else
    int8 where it measures faster); -m keeps what the user named."""
    import phrasekit.cli.keyphrases as cli_kp
    from phrasekit.registry import KEYPHRASES_MODEL

    seen: list[object] = []

    class Spy(KeyphraseExtractor):
        def __init__(self, encoder="minilm", **kw):
            seen.append(encoder)
            super().__init__(encoder, **kw)

    monkeypatch.setattr(cli_kp, "KeyphraseExtractor", Spy)
    corpus = _corpus(tmp_path, [ROBOT])
    for extra in ([], ["-m", "minilm"]):
        res = runner.invoke(app, ["keyphrases", str(corpus), "-n", "2", "--quiet",
                                  "--threads", "1", "--no-cache", *extra])
        assert res.exit_code == 0, res.output
    assert seen[0] == KEYPHRASES_MODEL == "minilm@fast" and "minilm" in seen
    assert KeyphraseExtractor().encoder == "minilm@fast"


def test_cli_reads_stdin(tmp_path) -> None:
    """CORPUS `-`: JSON lines (ids kept) or one document per line; errors name stdin:LINE."""
    jsonl = json.dumps({"id": "svm", "text": SVM_IDS}) + "\n\n" + json.dumps(
        {"id": "robot", "text": ROBOT}) + "\n"
    res = runner.invoke(app, ["keyphrases", "-", "-n", "2", "--quiet", "--no-cache"],
                        input=jsonl)
    assert res.exit_code == 0, res.output
    recs = [json.loads(x) for x in res.stdout.strip().splitlines()]
    assert [r["id"] for r in recs] == ["svm", "robot"]
    assert all(len(r["keyphrases"]) == 2 for r in recs)
    plain = runner.invoke(app, ["keyphrases", "-", "-n", "1", "--quiet", "--no-cache"],
                          input=SVM_IDS.replace("\n", " ") + "\n")
    assert plain.exit_code == 0 and json.loads(plain.stdout.splitlines()[-1])["id"] == "0"
    dup = runner.invoke(app, ["keyphrases", "-", "--quiet"],
                        input='{"id": "a", "text": "x y"}\n{"id": "a", "text": "z"}\n')
    assert dup.exit_code == 2 and "stdin:2: duplicate document id 'a'" in dup.output
    empty = runner.invoke(app, ["keyphrases", "-", "--quiet"], input="\n")
    assert empty.exit_code == 2 and "stdin: no document" in empty.output


def test_worker_processes_find_the_same_candidates(minilm, monkeypatch) -> None:
    """Candidates found in worker processes (which return them, not parsed documents) equal
    those found in this process, documents split into pieces included."""
    import phrasekit.phrases.keyphrases as kp

    texts = [SVM_IDS, ROBOT, NEURAL, INSTANTON, BRACKETS] * 2
    texts[1] = " ".join([ROBOT] * 400)  # over spaCy's 100,000-character piece: split
    one = KeyphraseExtractor(minilm).find_candidates(texts)
    monkeypatch.setattr(kp, "pipe_processes", lambda n, p: p)
    two = KeyphraseExtractor(minilm, n_process=2).find_candidates(texts)
    assert two == one and max(one[1].counts) >= 800  # "mobile robot(s)" in both pieces


def test_workers_receive_settings_not_the_loaded_encoder(monkeypatch) -> None:
    """The encoder loads in this process while the workers parse, and a pickled extractor (what
    each worker task receives) leaves it out: the keyphrases equal those of one process."""
    import pickle

    import phrasekit.phrases.keyphrases as kp

    texts = [SVM_IDS, ROBOT, NEURAL, INSTANTON, BRACKETS]
    one = KeyphraseExtractor("minilm").extract(texts)
    monkeypatch.setattr(kp, "pipe_processes", lambda n, p: p)
    two = KeyphraseExtractor("minilm", n_process=2)
    assert two.extract(texts) == one
    assert two._encoder is not None  # loaded meanwhile, in this process
    assert len(pickle.dumps(two)) < 10_000
    assert pickle.loads(pickle.dumps(two))._encoder is None


def test_spacy_batches_are_bounded_by_characters() -> None:
    """Pieces stay in order, a batch holds at most so many texts and characters, and a text
    longer than the bound goes alone (spaCy's memory follows a batch's characters)."""
    from phrasekit.phrases.keyphrase_candidates import char_batches

    pieces = [("a" * n, i) for i, n in enumerate([10, 10, 10, 95, 5, 300, 1, 1, 1, 1])]
    batches = list(char_batches(pieces, max_texts=3, max_chars=100))
    assert [p for b in batches for p in b] == pieces
    assert [[i for _, i in b] for b in batches] == [[0, 1, 2], [3, 4], [5], [6, 7, 8], [9]]
    assert all(len(b) == 1 or sum(len(t) for t, _ in b) <= 100 for b in batches)


def test_numpy_strings_lone_surrogates_and_a_cache_file() -> None:
    """NumPy strings reached spaCy, which takes only str; a lone surrogate and a cache_dir
    that is a file failed inside spaCy or the cache, the latter after the parsing."""
    import numpy as np

    kx = KeyphraseExtractor(encoder="glove-50d", top_n=3)
    doc = "Protein folding is predicted by deep neural networks."
    assert kx.extract(np.array([doc])) == kx.extract([doc])
    with pytest.raises(ValueError, match=r"docs\[0\] holds a lone surrogate"):
        kx.extract(["protein folding \ud800 networks"])
    with pytest.raises(ValueError, match="is a file, not a folder"):
        KeyphraseExtractor(encoder="glove-50d", cache_dir=__file__).extract([doc])
