"""Weight averaging with a dev-chosen coefficient (shared by PEARL and Phrase-BERT)."""

from __future__ import annotations

import pytest
import torch

from phrasekit.training.averaging import select_alpha


def _pair() -> tuple[torch.nn.Linear, dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2)
    initial = {f"lin.{k}": torch.zeros_like(v) for k, v in layer.state_dict().items()}
    module = torch.nn.Sequential()
    module.add_module("lin", layer)
    return module, initial


def test_select_alpha_picks_the_best_dev_score_and_leaves_the_module_there():
    module, initial = _pair()
    tuned = module.lin.weight.detach().clone()
    target = 0.4 * tuned  # the dev optimum: 40% of the way from the initial (zero) weights
    tried = []

    def score(alpha: float) -> dict[str, float]:
        tried.append(alpha)
        return {"score": -float((module.lin.weight.detach() - target).abs().sum())}

    best, table = select_alpha(module, initial, (0.2, 0.4, 0.7, 1.0), score, prefixes=("lin.",),
                               show_progress=False)
    assert best == 0.4 and tried == [0.2, 0.4, 0.7, 1.0]
    assert [row["alpha"] for row in table] == tried
    assert max(table, key=lambda r: r["score"])["alpha"] == 0.4
    assert torch.allclose(module.lin.weight, target)  # interpolated once, from the tuned weights


def test_single_alpha_needs_no_score_and_bad_alphas_fail():
    module, initial = _pair()
    tuned = module.lin.weight.detach().clone()
    best, table = select_alpha(module, initial, (0.5,), None, prefixes=("lin.",))
    assert best == 0.5 and table == [] and torch.allclose(module.lin.weight, 0.5 * tuned)
    with pytest.raises(ValueError, match="score function"):
        select_alpha(module, initial, (0.5, 1.0), None, prefixes=("lin.",))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        select_alpha(module, initial, (0.5, 1.5), lambda a: {"score": 0.0}, prefixes=("lin.",))
    with pytest.raises(ValueError, match="empty"):
        select_alpha(module, initial, (), None, prefixes=("lin.",))
