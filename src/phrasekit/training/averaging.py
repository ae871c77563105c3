"""Weight averaging against catastrophic forgetting, with the coefficient chosen on dev splits.

PEARL (§3.4) interpolates the fine-tuned weights with the initial ones,
``theta = alpha * fine-tuned + (1 - alpha) * initial``; phrasekit applies the same step to
Phrase-BERT, whose triplet fine-tuning on CPU-sized data otherwise forgets much of what the
packaged MiniLM knew. :func:`select_alpha` tries every candidate ``alpha``, scores the
interpolated model with a caller-supplied function (the dev splits of
:class:`phrasekit.eval.dev.DevScorer`, never a test split) and leaves the module at the best one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from phrasekit.encoders.pearl import interpolate_weights

logger = logging.getLogger(__name__)


def select_alpha(module: nn.Module, initial: dict[str, torch.Tensor], alphas: Sequence[float],
                 score: Callable[[float], dict[str, float]] | None,
                 prefixes: tuple[str, ...], show_progress: bool = True
                 ) -> tuple[float, list[dict[str, Any]]]:
    """Interpolate ``module`` in place at the ``alpha`` with the highest ``score(alpha)["score"]``.

    ``score`` is called with the module already interpolated at ``alpha``; with a single
    candidate (or ``score=None``, which then needs exactly one) nothing is scored. Returns the
    chosen alpha and one row of dev scores per candidate tried.
    """
    alphas = tuple(float(a) for a in alphas)
    if not alphas:
        raise ValueError("alphas is empty")
    if any(not 0.0 <= a <= 1.0 for a in alphas):
        raise ValueError(f"every alpha must be in [0, 1], got {alphas}")
    if len(alphas) > 1 and score is None:
        raise ValueError("several alphas need a score function to choose between them")
    if len(alphas) == 1:
        interpolate_weights(module, initial, alphas[0], prefixes)
        return alphas[0], []
    finetuned = {k: v.detach().clone() for k, v in module.state_dict().items()}
    table: list[dict[str, Any]] = []
    best_alpha, best_score = alphas[0], float("-inf")
    for alpha in tqdm(alphas, desc="weight averaging (dev)", disable=not show_progress):
        module.load_state_dict(finetuned)
        interpolate_weights(module, initial, alpha, prefixes)
        scores = score(alpha)  # type: ignore[misc]
        table.append({"alpha": alpha, **scores})
        logger.info("alpha %.2f: dev %s", alpha, scores)
        if scores["score"] > best_score:
            best_alpha, best_score = alpha, scores["score"]
    module.load_state_dict(finetuned)
    interpolate_weights(module, initial, best_alpha, prefixes)
    return best_alpha, table
