"""BiRD bigram relatedness: correlation of cosine similarity with human relatedness scores.

Protocol (Phrase-BERT / PEARL / multi-facet paper): ``bird/bird.tsv`` (tab-separated, one
header line, 3,345 pairs); for every pair embed ``term1`` and ``term2``, score
cosine(term1, term2) and report the Pearson r (main metric ``pearson``) and the Spearman rho
(``spearman``) against ``relatedness score`` over all pairs, in percent. PEARL maps the cosine
to (cos + 1) / 2 first, which changes neither correlation. Quick mode: the first 200 pairs.

Typo robustness (``BirdTask(noise="typo")``, named ``bird+typo``): the second phrase
(``term2``) of every pair is perturbed (see :func:`phrasekit.eval.base.perturb`); ``term1``
stays clean, so each pair compares a clean phrase with a possibly misspelt one, as a query
against a dictionary entry would. term2 is the more varied side (term1 repeats across the
pairs of one target), so perturbing it gives more distinct noisy strings.
"""

from __future__ import annotations

import logging
from pathlib import Path

from phrasekit.encoders.base import Encoder
from phrasekit.eval.base import Task, numbers, pair_correlations, read_tsv

logger = logging.getLogger(__name__)

FILE = "bird/bird.tsv"
HEADER = ("pair", "term1", "term2", "term2: unigram or bigram", "source", "relation",
          "relatedness score")
QUICK_N = 200


def load_bird(data_dir: Path) -> list[tuple[str, str, float]]:
    """The (term1, term2, relatedness score) triples of BiRD, in file order."""
    path = Path(data_dir) / FILE
    rows = read_tsv(path, header=HEADER, min_fields=7, texts=(1, 2))
    return [(r[1], r[2], score) for r, score in zip(rows, numbers(rows, 6, path), strict=True)]


class BirdTask(Task):
    """Pearson r (and Spearman) between cosine(term1, term2) and BiRD relatedness, all pairs."""

    name = "bird"
    main_metric = "pearson"
    required = (FILE,)
    description = "BiRD bigram relatedness, Pearson r of cosine vs score"
    supports_noise = True

    def __init__(self, noise: str | None = None) -> None:
        self._set_noise(noise)

    def evaluate(self, encoder: Encoder, data_dir: Path, quick: bool = False) -> dict[str, float]:
        """Correlate cosine similarities with the gold scores."""
        triples = load_bird(data_dir)
        if quick:
            triples = triples[:QUICK_N]
        if self.noise:
            noisy = self.perturb([t[1] for t in triples])
            triples = [(a, b, score) for (a, _, score), b in zip(triples, noisy, strict=True)]
        return pair_correlations(encoder, triples)
