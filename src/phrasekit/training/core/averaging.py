"""Weight averaging against catastrophic forgetting, with the coefficient chosen on dev splits.

PEARL (§3.4) interpolates the fine-tuned weights with the initial ones,
``theta = alpha * fine-tuned + (1 - alpha) * initial``; phrasekit applies the same step to
Phrase-BERT, whose triplet fine-tuning on CPU-sized data otherwise forgets much of what the
packaged MiniLM knew. :func:`select_alpha` tries every candidate ``alpha``, scores the
interpolated model with a caller-supplied function (the dev splits of
:class:`phrasekit.eval.dev.DevScorer`, never a test split) and leaves the module at the best one.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from phrasekit.training.core.cliff_guard import CliffGuard as CliffGuard  # re-exported

logger = logging.getLogger(__name__)


def interpolate_weights(model: nn.Module, initial: dict[str, torch.Tensor], alpha: float,
                        prefixes: tuple[str, ...] = ("backbone.", "proj.")) -> None:
    """In place: theta = alpha * fine-tuned + (1 - alpha) * initial, for tensors under ``prefixes``.

    PEARL's weight averaging against catastrophic forgetting. The char CNN and type head have no
    meaningful initial weights (random), so they keep their trained values.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    with torch.no_grad():
        for name, value in model.state_dict().items():
            if not (name.startswith(prefixes) and name in initial and value.is_floating_point()):
                continue
            start = initial[name].to(device=value.device, dtype=value.dtype)
            if torch.equal(value, start):  # frozen: keep bit-exact (rounding would store deltas)
                continue
            value.mul_(alpha).add_(start, alpha=1.0 - alpha)


def select_alpha(module: nn.Module, initial: dict[str, torch.Tensor], alphas: Sequence[float],
                 score: Callable[[float], dict[str, float]] | None,
                 prefixes: tuple[str, ...], show_progress: bool = True
                 ) -> tuple[float, list[dict[str, Any]]]:
    """Interpolate ``module`` in place at the ``alpha`` with the highest ``score(alpha)["score"]``.

    ``score`` is called with the module already interpolated at ``alpha``; with a single
    candidate (or ``score=None``, which then needs exactly one) nothing is scored. Returns the
    chosen alpha and one row of dev scores per candidate tried.
    """
    best, table = select_alphas(
        module, initial, {"alpha": (prefixes, alphas)},
        (lambda chosen: score(chosen["alpha"])) if score is not None else None,  # type: ignore[misc]
        show_progress=show_progress)
    return best["alpha"], table


def select_alphas(module: nn.Module, initial: dict[str, torch.Tensor],
                  groups: Mapping[str, tuple[tuple[str, ...], Sequence[float]]],
                  score: Callable[[dict[str, float]], dict[str, float]] | None,
                  show_progress: bool = True,
                  admissible: Callable[[list[dict[str, Any]]], list[bool]] | None = None,
                  ) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Like :func:`select_alpha` with one coefficient per group of tensors, over their grid.

    ``groups`` maps a name (the key of that coefficient in the result and the table rows) to
    (tensor-name prefixes, candidate coefficients). PEARL uses it to average its backbone and
    its projection (the character path) by different amounts: the projection of a jointly
    trained char encoder can dominate the vector and is worth choosing separately.
    ``admissible`` (e.g. :class:`CliffGuard`) sees the whole dev table and says which rows
    may be chosen; the best admissible score wins (all rows when it allows none).
    """
    names = list(groups)
    if not names:
        raise ValueError("no parameter groups to average")
    grids = []
    for name in names:
        alphas = tuple(float(a) for a in groups[name][1])
        if not alphas:
            raise ValueError(f"alphas is empty (group {name!r})")
        if any(not 0.0 <= a <= 1.0 for a in alphas):
            raise ValueError(f"every alpha must be in [0, 1], got {alphas} (group {name!r})")
        grids.append(alphas)
    for a, b in itertools.combinations(names, 2):
        if any(p.startswith(q) or q.startswith(p) for p in groups[a][0] for q in groups[b][0]):
            raise ValueError(f"groups {a!r} and {b!r} overlap: each tensor is averaged once")
    candidates = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*grids)]
    if len(candidates) > 1 and score is None:
        raise ValueError("several alphas need a score function to choose between them")

    def interpolate(chosen: dict[str, float]) -> None:
        for name, alpha in chosen.items():
            interpolate_weights(module, initial, alpha, groups[name][0])

    if len(candidates) == 1:
        interpolate(candidates[0])
        return candidates[0], []
    finetuned = {k: v.detach().clone() for k, v in module.state_dict().items()}
    table: list[dict[str, Any]] = []
    best, best_score = candidates[0], float("-inf")
    for chosen in tqdm(candidates, desc="weight averaging (dev)", disable=not show_progress):
        module.load_state_dict(finetuned)
        interpolate(chosen)
        scores = score(chosen)  # type: ignore[misc]
        table.append({**chosen, **scores})
        logger.info("%s: dev %s", chosen, scores)
    allowed = admissible(table) if admissible is not None else [True] * len(table)
    if not any(allowed):
        logger.warning("no averaging coefficient passes the guard; choosing among all")
        allowed = [True] * len(table)
    for chosen, row, ok in zip(candidates, table, allowed, strict=True):
        row["admissible"] = ok
        if ok and row["score"] > best_score:
            best, best_score = chosen, row["score"]
    module.load_state_dict(finetuned)
    interpolate(best)
    return best, table


def undo_interpolation(module: nn.Module, initial: dict[str, torch.Tensor],
                       coefficients: Mapping[tuple[str, ...], float]) -> None:
    """In place, the inverse of :func:`interpolate_weights`:
    ``theta_ft = initial + (theta - initial) / alpha`` for the tensors under each prefix tuple.

    A saved model holds the averaged weights only; this recovers the fine-tuned ones (exactly,
    up to the rounding of the stored deltas) so they can be averaged again or souped.
    """
    for prefixes, alpha in coefficients.items():
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"saved with alpha {alpha} for {prefixes}: the fine-tuned weights "
                             "cannot be recovered (alpha must be in (0, 1])")
    with torch.no_grad():
        for name, value in module.state_dict().items():
            if name not in initial or not value.is_floating_point():
                continue
            for prefixes, alpha in coefficients.items():
                if name.startswith(prefixes):
                    start = initial[name].to(device=value.device, dtype=value.dtype)
                    value.sub_(start).div_(alpha).add_(start)
                    break


def average_modules(modules: Sequence[nn.Module]) -> nn.Module:
    """In place: the first module's floating tensors become the mean over ``modules`` (a uniform
    weight soup, Wortsman et al. 2022); all must share one architecture. Returns the first."""
    if not modules:
        raise ValueError("nothing to average")
    states = [m.state_dict() for m in modules]
    keys = set(states[0])
    for i, state in enumerate(states[1:], start=1):
        if set(state) != keys:
            raise ValueError(f"model {i} has other tensors than model 0: not one architecture")
    with torch.no_grad():
        for name, value in states[0].items():
            if not value.is_floating_point():
                continue
            for state in states[1:]:
                if state[name].shape != value.shape:
                    raise ValueError(f"{name}: shapes {tuple(value.shape)} and "
                                     f"{tuple(state[name].shape)} differ")
                value.add_(state[name].to(value.dtype))
            value.div_(len(states))
    return modules[0]
