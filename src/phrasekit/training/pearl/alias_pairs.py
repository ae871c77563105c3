"""Real aliases as PEARL positives: train-split DBpedia redirects (alias -> canonical name).

Each step takes ``alias_batch`` pairs of the train split of ``aliases.tsv.gz`` (a per-epoch
permutation of its own, so switching the term on leaves the phrase batches unchanged) and
``alias_negatives`` hard negatives per pair: other canonical names that share the canonical's
first token ("mazda mx-5" against "mazda rx-7"). The alias term is InfoNCE of each alias
against its canonical, the other canonicals of the step and the hard negatives, weighted by
``alias_weight`` next to PEARL's own InfoNCE.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from pathlib import Path

from phrasekit.eval.aliases import read_alias_split

logger = logging.getLogger(__name__)


class AliasPositives:
    """The train-split alias pairs and the canonicals grouped by first token."""

    def __init__(self, path: str | Path, kinds: tuple[str, ...] | None = None) -> None:
        rows = read_alias_split(path, "train")
        self.pairs = [(a, c) for a, c, kind in rows if kinds is None or kind in kinds]
        if not self.pairs:
            raise ValueError(f"{path}: no train-split alias pair of the kinds {kinds}")
        groups: dict[str, set[str]] = defaultdict(set)
        for _, canonical in self.pairs:
            groups[canonical.split()[0]].add(canonical)
        self.by_first = {tok: sorted(names) for tok, names in groups.items() if len(names) > 1}
        logger.info("alias positives: %d train pairs, %d first tokens shared by several "
                    "canonicals", len(self.pairs), len(self.by_first))

    def negatives(self, canonical: str, exclude: set[str], k: int, rng: random.Random
                  ) -> list[str]:
        """Up to ``k`` other canonicals with the same first token, none in ``exclude``."""
        group = self.by_first.get(canonical.split()[0], [])
        picked = rng.sample(group, min(len(group), k + 4))
        return [c for c in picked if c != canonical and c not in exclude][:k]

    def texts(self, indices: list[int], k: int, rng: random.Random) -> tuple[list[str], int]:
        """``aliases + canonicals + negatives`` of the pairs at ``indices``, and the pair count."""
        aliases = [self.pairs[i][0] for i in indices]
        canonicals = [self.pairs[i][1] for i in indices]
        in_step = set(canonicals) | set(aliases)
        negatives: list[str] = []
        for canonical in canonicals:
            found = self.negatives(canonical, in_step, k, rng)
            negatives.extend(found)
            in_step.update(found)
        return aliases + canonicals + negatives, len(indices)
