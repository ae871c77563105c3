"""WordNet noun supersenses as phrase labels, and PEARL's optional supersense head."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from phrasekit.phrases.supersenses import NOUN_SUPERSENSES, SupersenseLexicon

# A few real OEWN 2025 rows (synset_id, pos, lexfile, members; the other columns left empty).
ROWS = [
    ("14583362-n", "n", "noun.state", "hypertension"),
    ("14280776-n", "n", "noun.state", "renal failure|kidney failure"),
    ("03066450-n", "n", "noun.artifact", "cocaine|cocain"),
    ("14932303-n", "n", "noun.substance", "lithium|Li|atomic number 3"),
    ("00163406-n", "n", "noun.act", "seizure|confiscation|arrogation"),
    ("14104945-n", "n", "noun.state", "seizure|ictus|raptus"),
    ("08437235-n", "n", "noun.group", "bank|banking company"),
    ("09234116-n", "n", "noun.object", "bank"),
    ("00001740-v", "v", "verb.body", "breathe|take a breath"),
]


def write_wordnet(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "synsets.tsv.gz", "wt", encoding="utf-8") as fh:
        fh.write("synset_id\tpos\tlexfile\tmembers\tdefinition\thypernyms\tili\n")
        for row in ROWS:
            fh.write("\t".join(row) + "\t\t\t\n")
    return folder


@pytest.fixture()
def lexicon(tmp_path) -> SupersenseLexicon:
    return SupersenseLexicon.from_wordnet(write_wordnet(tmp_path / "wordnet"))


def test_head_word_supersenses(lexicon):
    def top(phrase: str) -> str | None:
        d = lexicon.distribution(phrase)
        return None if d is None else NOUN_SUPERSENSES[int(np.argmax(d))]

    assert top("Hypertension") == "noun.state"
    assert top("acute renal failure") == "noun.state"  # two-word compound of the head
    assert top("cocaine abuse of teenagers") is None  # head "abuse" is unknown
    assert top("crack cocaine") == "noun.artifact"
    assert top("lithium in the water") == "noun.substance"  # head before the preposition
    # an ambiguous head spreads its mass over its senses; plurals find the singular lemma
    d = lexicon.distribution("generalized seizures")
    assert d is not None and d.sum() == pytest.approx(1.0)
    assert d[NOUN_SUPERSENSES.index("noun.act")] == pytest.approx(0.5)
    assert lexicon.distribution("breathe") is None  # verbs are not noun labels
    assert lexicon.distribution("") is None and lexicon.distribution("   ") is None
    targets, known = lexicon.distributions(["hypertension", "the quick fox"])
    assert known.tolist() == [True, False] and targets[1].sum() == 0


def test_lexicon_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="data/wordnet"):
        SupersenseLexicon.from_wordnet(tmp_path)
    (tmp_path / "bad").mkdir()
    with gzip.open(tmp_path / "bad" / "synsets.tsv.gz", "wt") as fh:
        fh.write("id\tkind\n1\tn\n")
    with pytest.raises(ValueError, match="expected columns"):
        SupersenseLexicon.from_wordnet(tmp_path / "bad")


def test_soft_label_loss_ignores_unlabelled_rows():
    from phrasekit.training.core.losses import SoftLabelLoss

    loss = SoftLabelLoss()
    logits = torch.tensor([[2.0, 0.0], [0.0, 0.0], [5.0, -5.0]])
    targets = torch.tensor([[1.0, 0.0], [0.5, 0.5], [0.0, 0.0]])
    expected = (-torch.log_softmax(logits[0], 0)[0]
                - 0.5 * torch.log_softmax(logits[1], 0).sum()) / 2
    assert loss(logits, targets).item() == pytest.approx(expected.item(), rel=1e-6)
    assert loss(logits, torch.zeros(3, 2)).item() == 0.0
    with pytest.raises(ValueError, match="shapes differ"):
        loss(logits, targets[:, :1])


def test_pearl_trains_and_saves_a_supersense_head(tmp_path):
    from phrasekit.encoders.pearl import PearlEncoder
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    data = tmp_path / "data"
    data.mkdir()
    phrases = ["hypertension", "renal failure", "cocaine", "lithium", "seizures", "bank",
               "chronic hypertension", "crack cocaine", "lithium carbonate salt", "the bank",
               "quick brown fox", "ran away"]
    with gzip.open(data / "phrases.jsonl.gz", "wt", encoding="utf-8") as fh:
        for p in phrases:
            kind = "VP-OTHER" if p == "ran away" else "NP-OTHER"
            fh.write(json.dumps({"text": p, "type": kind}) + "\n")
    with gzip.open(data / "paraphrases.tsv.gz", "wt", encoding="utf-8") as fh:
        fh.write("kidney failure\trenal failure\ttest\n")
    with gzip.open(data / "word_synonyms.json.gz", "wt", encoding="utf-8") as fh:
        json.dump({}, fh)
    with gzip.open(data / "hard_negatives.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": "cocaine", "negatives": ["cocoa"]}) + "\n")
    cfg = PearlTrainingConfig(data_dir=str(data), out_dir=str(tmp_path / "run"), batch_size=6,
                              max_steps=2, alpha=0.5, max_seq_length=12, show_progress=False,
                              supersense_weight=1.0,
                              wordnet_dir=str(write_wordnet(tmp_path / "wordnet")))
    report = train_pearl(cfg)
    assert report["supersenses"]["coverage"] == pytest.approx(9 / 12)  # not fox, ran away, salt
    assert cfg.fingerprint() != PearlTrainingConfig(**{**cfg.__dict__, "supersense_weight": 0.0}
                                                    ).fingerprint()
    encoder = PearlEncoder.from_pretrained(tmp_path / "run" / "model")
    top = encoder.predict_supersenses(["hypertension", "lithium"], top=3)
    assert len(top) == 2 and all(label in NOUN_SUPERSENSES for label, _ in top[0])
    assert sum(p for _, p in top[0]) <= 1.0 + 1e-6
    with pytest.raises(ValueError, match="supersense_weight"):
        PearlTrainingConfig(data_dir=str(data), out_dir="o", supersense_weight=-1).validate()


def test_models_without_the_head_say_so():
    from phrasekit.encoders.pearl import PearlConfig, PearlEncoder, PearlModel

    encoder = PearlEncoder(PearlModel(PearlConfig(types=["A"])))
    with pytest.raises(ValueError, match="no supersense head"):
        encoder.predict_supersenses(["hypertension"])
