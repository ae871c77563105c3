"""Development-split scores for model selection (never the test splits).

Used to choose training-time knobs such as PEARL's weight-averaging coefficient. Cheap on
purpose (about half a minute for MiniLM on 2 cores):
- ``conll2003_dev`` / ``bc5cdr_dev``: KMeans NMI over the mentions of ``dev.json`` (CoNLL
  restricted to PER/LOC/ORG as in the test set), with the test protocol's KMeans (k = #types,
  ``n_init=10``, mean over seeds 0-4; :func:`phrasekit.eval.clustering.kmeans_scores`). Why
  not one cheaper run: with one seed and ``n_init=3``, BC5CDR dev of one Phrase-BERT model
  ranged 60.6-66.2 over five seeds (64.6-66.1 with ``n_init=10``), a swing of up to 1.4
  points of ``score`` that could decide the averaging coefficient by luck;
- ``ppdb_dev`` / ``ppdb_filtered_dev``: ROC-AUC of the cosine between the two phrases of each
  dev-split pair (no probe: it ranks embeddings by how well similarity alone separates
  paraphrases).
- ``alias_dev`` (when a PEARL data folder with ``aliases.tsv.gz`` is given): top-1 canonical
  retrieval of real aliases (DBpedia redirects, :mod:`phrasekit.eval.aliases`), reported per
  alias kind (``alias_dev_<kind>``, not part of the mean).
- ``related_dev`` (when ``related.tsv.gz`` is given or sits beside the alias file): ROC-AUC of
  cosine over co-occurring against random entity names (:mod:`phrasekit.eval.relatedness`).
``score`` is the mean of the four (five or six with ``alias_dev`` and ``related_dev``), in
percent.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from phrasekit.encoders.base import Encoder
from phrasekit.eval.aliases import AliasScorer
from phrasekit.eval.base import embed_unique, percent, rowwise_cosine
from phrasekit.eval.clustering import SEEDS, kmeans_scores
from phrasekit.eval.ppdb import FILES, load_pairs, split_bounds
from phrasekit.eval.relatedness import RelatednessScorer

logger = logging.getLogger(__name__)

CLUSTER_TYPES = {"conll2003": ("PER", "LOC", "ORG"), "bc5cdr": ("Chemical", "Disease")}


def dev_mentions(path: Path, types: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(mention strings, types) of a UCTopic-format JSON-lines file, in order."""
    mentions, labels = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            for sent, spans in zip(rec["sentences"], rec["ner"], strict=False):
                for start, end, label in spans:
                    if label in types:
                        mentions.append(" ".join(sent[start : end + 1]))
                        labels.append(label)
    return mentions, labels


def dev_pairs(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Dev split (file order, 70/15/15) of a PPDB-format file: (left, right, labels)."""
    pairs = load_pairs(path)
    lo, hi = split_bounds(len(pairs))
    dev = pairs[lo:hi]
    return [p[0] for p in dev], [p[1] for p in dev], np.array([p[2] for p in dev])


@dataclass
class DevScorer:
    """Loads the dev splits once; ``__call__(encoder)`` returns the per-set scores and ``score``.

    ``aliases``: an alias file or a PEARL data folder holding one (adds ``alias_dev``).
    ``related``: a relatedness file or a PEARL data folder holding one (adds ``related_dev``).
    """

    data_dir: Path
    max_mentions: int = 6000
    kmeans_seeds: tuple[int, ...] = SEEDS
    aliases: Path | None = None
    related: Path | None = None

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)
        self.alias_scorer = AliasScorer(self.aliases, "dev") if self.aliases else None
        self.related_scorer = RelatednessScorer(self.related, "dev") if self.related else None
        self.mentions = {}
        for name, types in CLUSTER_TYPES.items():
            m, y = dev_mentions(self.data_dir / name / "dev.json", types)
            self.mentions[name] = (m[: self.max_mentions], y[: self.max_mentions])
        self.pairs = {name: dev_pairs(self.data_dir / rel) for name, rel in FILES.items()}

    def strings(self) -> list[str]:
        """Every dev string (so training data can be checked against them)."""
        out: list[str] = []
        for m, _ in self.mentions.values():
            out.extend(m)
        for a, b, _ in self.pairs.values():
            out.extend(a)
            out.extend(b)
        for scorer in (self.alias_scorer, self.related_scorer):
            if scorer is not None:
                out.extend(scorer.strings())
        return out

    def __call__(self, encoder: Encoder) -> dict[str, float]:
        """Dev scores in percent; ``score`` is their mean."""
        scores: dict[str, float] = {}
        for name, (mentions, labels) in self.mentions.items():
            emb = embed_unique(encoder, mentions)
            scores[f"{name}_dev"] = kmeans_scores(emb, labels, self.kmeans_seeds)["nmi"]
        for name, (a, b, labels) in self.pairs.items():
            emb = embed_unique(encoder, a + b)
            cos = rowwise_cosine(emb[: len(a)], emb[len(a) :])
            scores[f"{name}_dev"] = percent(roc_auc_score(labels, cos))
        for scorer in (self.alias_scorer, self.related_scorer):
            if scorer is not None:
                scores.update(scorer(encoder))
        mean_of = [v for k, v in scores.items() if not k.startswith("alias_dev_")]
        scores["score"] = round(float(np.mean(mean_of)), 2)
        return scores
