"""The guard that keeps a weight-averaging coefficient below the dev "cliff" of entity clustering.

Apart from :mod:`phrasekit.training.core.averaging` (torch), so that a training config can check its
margin without importing torch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CliffGuard:
    """Keeps the averaging coefficient well below the dev "cliff" of entity clustering.

    Fine-tuned PEARL models keep their entity clusters up to some coefficient and then lose
    them abruptly (BC5CDR NMI 60 -> 3), and the test cliff can come at a smaller coefficient
    than the dev cliff, hence the margin below it. The cliff is the smallest ``key`` value
    (``alpha``) at which any of ``metrics`` falls below ``drop`` times its best over the grid;
    admissible are the rows with ``key < margin * cliff``. Without a cliff every row is admissible.
    """

    metrics: tuple[str, ...] = ("conll2003_dev", "bc5cdr_dev")
    margin: float = 0.5
    drop: float = 0.5
    key: str = "alpha"

    def __post_init__(self) -> None:
        if not 0 < self.margin <= 1 or not 0 < self.drop < 1:
            raise ValueError(f"cliff guard needs 0 < margin <= 1 and 0 < drop < 1, got margin "
                             f"{self.margin}, drop {self.drop}")

    def cliff(self, table: list[dict[str, Any]]) -> float | None:
        """The smallest coefficient at which a clustering dev score collapses, or None."""
        cliffs = []
        for metric in self.metrics:
            rows = [r for r in table if metric in r]
            if not rows:
                continue
            best = max(r[metric] for r in rows)
            cliffs += [r[self.key] for r in rows if r[metric] < self.drop * best]
        return min(cliffs) if cliffs else None

    def __call__(self, table: list[dict[str, Any]]) -> list[bool]:
        cliff = self.cliff(table)
        if cliff is None:
            return [True] * len(table)
        logger.info("dev cliff at %s %.2f: admissible below %.3f", self.key, cliff,
                    self.margin * cliff)
        return [r[self.key] < self.margin * cliff for r in table]
