"""Seeded and zero-shot document topics on 80 real arXiv abstracts of six archives."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from phrasekit.io import Document
from phrasekit.topics import DocumentTopicModel

SEEDS = [["galaxy", "stars", "luminosity", "telescope"],
         ["protein", "cells", "gene", "evolution"]]
NAMES = ["astronomy", "biology", "computer networks"]


def _gold(docs: list[Document], model: DocumentTopicModel, topic: int) -> Counter:
    return Counter(d.meta["label"] for d, t in zip(docs, model.doc_labels_, strict=True)
                   if t == topic)


@pytest.mark.parametrize("encoder", ["minilm", "glove-50d"])
def test_seeded_topics_gather_their_archives_and_keep_k(small_corpus: list[Document],
                                                        encoder: str) -> None:
    """With the documents pulled a quarter of the way toward their seeds, each seed's topic is
    mostly its archive's. (At the default pull, 0, the seeds only start their topics: at the K
    of 6 chosen for MiniLM here its biology seed's topic ends with 3 q-bio and 7 cs abstracts;
    docs/methods/topics.md, "Seeded and zero-shot topics".)"""
    pull = {"seed_pull": 0.25}
    kwargs = {"encoder": encoder, "min_df": 2, "k_range": (3, 6)}
    plain = DocumentTopicModel(**kwargs).fit(small_corpus)
    seeded = DocumentTopicModel(seed_topics=SEEDS, **pull, **kwargs).fit(small_corpus)
    assert seeded.n_topics_ == plain.n_topics_ and seeded.k_scores_ == plain.k_scores_
    astro, bio = seeded.seeded_topics_
    assert astro != bio
    assert _gold(small_corpus, seeded, astro).most_common(1)[0][0] == "astro-ph"
    assert _gold(small_corpus, seeded, bio).most_common(1)[0][0] == "q-bio"
    assert (np.asarray(seeded.doc_labels_) >= 0).all()
    many = DocumentTopicModel(seed_topics=SEEDS * 3, n_topics=4, encoder="glove-50d",
                              min_df=2).fit(small_corpus)
    assert many.n_topics_ == 6  # K is raised to the number of seed lists


def test_zero_shot_names_whole_topics(small_corpus: list[Document], tmp_path: Path) -> None:
    """Names take whole topics of the unguided clustering: each topic found without names lies
    in one topic of the named fit, so no named topic has a discovered duplicate."""
    kwargs = {"encoder": "minilm", "n_topics": 5, "min_df": 2}
    plain = DocumentTopicModel(**kwargs).fit(small_corpus)
    model = DocumentTopicModel(zero_shot_topics=NAMES, zero_shot_min_similarity=0.2,
                               **kwargs).fit(small_corpus)
    named = {label: t for t, label in model.custom_labels_.items()}
    assert set(named) == set(NAMES)
    assert _gold(small_corpus, model, named["astronomy"]).most_common(1)[0][0] == "astro-ph"
    pairs = set(zip(plain.doc_labels_, model.doc_labels_, strict=True))
    assert len({a for a, _ in pairs}) == len(pairs)  # each plain topic went to one topic
    assert model.n_topics_ == len(pairs) - sum(
        len({a for a, b in pairs if b == t}) - 1 for t in named.values())
    assert model.topic_label(named["biology"]) == "biology"
    back = DocumentTopicModel.load(model.save(tmp_path / "m"))
    assert back.topic_label(named["biology"]) == "biology"


def test_zero_shot_owners_follow_the_centres() -> None:
    """A topic goes to its most similar name when at least the threshold; a name always takes
    its home topic (positive and not nearer another name); a topic nearer another name is not
    taken."""
    from phrasekit.topics.exploration.guided import _name_owners

    sim = np.array([[0.30, 0.05],    # home of name 0
                    [0.12, 0.02],    # above 0.1, nearest name 0
                    [0.06, 0.08],    # home of name 1 (0.08 > 0), though under 0.1
                    [0.04, -0.2],    # under 0.1 and not a home: stays discovered
                    [-0.1, -0.3]])
    assert _name_owners(sim, 0.1).tolist() == [0, 0, 1, -1, -1]
    assert _name_owners(sim, 1.0).tolist() == [0, -1, 1, -1, -1]
    assert _name_owners(sim, -1.0).tolist() == [0, 0, 1, 0, 0]
    assert _name_owners(-np.abs(sim), 1.0).tolist() == [-1] * 5


def test_zero_shot_extremes(small_corpus: list[Document],
                            caplog: pytest.LogCaptureFixture) -> None:
    kwargs = {"encoder": "glove-50d", "n_topics": 4, "min_df": 2, "zero_shot_topics": NAMES}
    homes = DocumentTopicModel(zero_shot_min_similarity=1.0, **kwargs).fit(small_corpus)
    assert homes.n_topics_ == 4 and len(homes.custom_labels_) <= len(NAMES)
    every = DocumentTopicModel(zero_shot_min_similarity=-1.0, **kwargs).fit(small_corpus)
    assert set(every.custom_labels_.values()) <= set(NAMES)
    assert every.n_topics_ == len(every.custom_labels_)  # every topic taken by a name
    twins = {k: v for k, v in kwargs.items() if k != "zero_shot_topics"}
    same = DocumentTopicModel(zero_shot_topics=["astronomy", "Astronomy"],  # one vector
                              zero_shot_min_similarity=1.0, **twins).fit(small_corpus)
    assert list(same.custom_labels_.values()) == ["astronomy"]
    assert "zero-shot names that took no topic: Astronomy" in caplog.text


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"seed_topics": ["inflation"]}, "non-empty list of phrases"),
    ({"seed_topics": []}, "non-empty list"),
    ({"seed_topics": [["rate", " "]]}, "non-empty strings"),
    ({"zero_shot_topics": "economy"}, "non-empty list"),
    ({"zero_shot_topics": ["a", "a"]}, "twice"),
    ({"zero_shot_topics": ["a"], "zero_shot_min_similarity": 2}, r"\[-1, 1\]"),
    ({"zero_shot_topics": ["a"], "seed_topics": [["b"]]}, "not both"),
    ({"seed_topics": [["b"]], "seed_pull": 1.5}, r"seed_pull must be a number in \[0, 1\]"),
])
def test_bad_guidance_is_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DocumentTopicModel(**kwargs).check_params()


@pytest.mark.parametrize("pull", [0.0, 0.25])
def test_seed_pull_moves_the_clustered_vectors_only_when_asked(
        small_corpus: list[Document], monkeypatch: pytest.MonkeyPatch, pull: float) -> None:
    """k-means clusters the documents' own vectors at ``seed_pull=0`` (the seeds only start the
    topics) and vectors moved toward the seeds above it; the topics' centres and the stored
    document vectors are the documents' own either way."""
    import phrasekit.topics.exploration.guided as guided

    seen: list[np.ndarray] = []

    class Recording(guided.KMeans):
        def fit(self, X, y=None, sample_weight=None):
            seen.append(np.array(X))
            return super().fit(X, y, sample_weight)

    monkeypatch.setattr(guided, "KMeans", Recording)
    kwargs = {"encoder": "glove-50d", "min_df": 2, "k_range": (3, 6)}
    model = DocumentTopicModel(seed_topics=SEEDS, seed_pull=pull, **kwargs).fit(small_corpus)
    X = model.doc_embeddings_
    clustered = seen[-1]
    assert clustered.shape == X.shape
    assert np.allclose(clustered, X, atol=1e-6) == (pull == 0.0)
    assert len(set(model.seeded_topics_)) == len(SEEDS)
