"""Weight averaging with a dev-chosen coefficient (shared by PEARL and Phrase-BERT)."""

from __future__ import annotations

import pytest
import torch

from phrasekit.training.core.averaging import CliffGuard, select_alpha, select_alphas


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


def test_select_alphas_searches_the_grid_of_both_groups():
    torch.manual_seed(0)
    module = torch.nn.Sequential()
    module.add_module("a", torch.nn.Linear(3, 2))
    module.add_module("b", torch.nn.Linear(3, 2))
    initial = {f"{m}.{k}": torch.zeros_like(v) for m in "ab"
               for k, v in getattr(module, m).state_dict().items()}
    tuned_a, tuned_b = module.a.weight.detach().clone(), module.b.weight.detach().clone()
    target_a, target_b = 0.5 * tuned_a, 0.0 * tuned_b  # the optimum: a half-way, b at its start

    def score(chosen: dict[str, float]) -> dict[str, float]:
        err = (module.a.weight - target_a).abs().sum() + (module.b.weight - target_b).abs().sum()
        return {"score": -float(err.detach())}

    groups = {"alpha": (("a.",), (0.5, 1.0)), "alpha_proj": (("b.",), (0.0, 0.5, 1.0))}
    best, table = select_alphas(module, initial, groups, score, show_progress=False)
    assert best == {"alpha": 0.5, "alpha_proj": 0.0}
    assert len(table) == 6 and {"alpha", "alpha_proj", "score"} <= set(table[0])
    assert torch.allclose(module.a.weight, target_a) and torch.allclose(module.b.weight, target_b)
    with pytest.raises(ValueError, match="overlap"):
        select_alphas(module, initial, {"x": (("a.",), (0.5,)), "y": (("a.w",), (0.5,))}, None)


def test_pearl_averaging_groups_tie_the_projection_when_asked():
    from phrasekit.training.pearl.averaging import averaging_groups
    from phrasekit.training.pearl.config import PearlTrainingConfig

    cfg = PearlTrainingConfig(data_dir="d", out_dir="o", proj_alphas=(0.0, 0.5, 1.0))
    groups = averaging_groups(cfg)
    assert groups["alpha"][0] == ("backbone.",) and groups["alpha_proj"][0] == ("proj.",)
    assert groups["alpha_proj"][1] == cfg.proj_alphas
    fixed = averaging_groups(PearlTrainingConfig(data_dir="d", out_dir="o", alpha=0.4))
    assert fixed == {"alpha": (("backbone.", "proj."), (0.4,))}
    both = averaging_groups(PearlTrainingConfig(data_dir="d", out_dir="o", alpha=0.4,
                                                alpha_proj=0.0))
    assert both == {"alpha": (("backbone.",), (0.4,)), "alpha_proj": (("proj.",), (0.0,))}
    tied = averaging_groups(PearlTrainingConfig(data_dir="d", out_dir="o"))  # the default
    assert tied["alpha"][0] == ("backbone.", "proj.") and "alpha_proj" not in tied


def test_undo_interpolation_inverts_interpolate_weights():
    from phrasekit.training.core.averaging import interpolate_weights, undo_interpolation

    module, initial = _pair()
    initial = {k: torch.full_like(v, 0.5) for k, v in initial.items()}
    tuned = {k: v.clone() for k, v in module.state_dict().items()}
    interpolate_weights(module, initial, 0.3, ("lin.",))
    assert not torch.allclose(module.lin.weight, tuned["lin.weight"])
    undo_interpolation(module, initial, {("lin.",): 0.3})
    for k, v in module.state_dict().items():
        assert torch.allclose(v, tuned[k], atol=1e-6), k
    with pytest.raises(ValueError, match="cannot be recovered"):
        undo_interpolation(module, initial, {("lin.",): 0.0})


def test_average_modules_is_the_mean_and_checks_the_architecture():
    from phrasekit.training.core.averaging import average_modules

    torch.manual_seed(0)
    a, b, c = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    want = (a.weight + b.weight + c.weight).detach() / 3
    assert average_modules([a, b, c]) is a
    assert torch.allclose(a.weight, want)
    with pytest.raises(ValueError, match="shapes"):
        average_modules([a, torch.nn.Linear(4, 2)])
    with pytest.raises(ValueError, match="architecture"):
        average_modules([a, torch.nn.Sequential(torch.nn.Linear(3, 2))])
    with pytest.raises(ValueError, match="nothing"):
        average_modules([])


def test_cliff_guard_keeps_alpha_well_below_the_dev_collapse():
    # BC5CDR dev holds up to 0.7 and collapses at 0.85 (the pattern of PEARL soups)
    table = [{"alpha": a, "conll2003_dev": 44.0, "bc5cdr_dev": b, "score": s}
             for a, b, s in ((0.3, 64.0, 70.0), (0.4, 64.5, 70.5), (0.5, 64.4, 71.0),
                             (0.7, 63.6, 71.5), (0.85, 3.0, 55.0))]
    guard = CliffGuard(margin=0.5)
    assert guard.cliff(table) == 0.85
    assert guard(table) == [True, True, False, False, False]  # alpha < 0.425
    steady = [dict(r, bc5cdr_dev=60.0) for r in table]
    assert guard.cliff(steady) is None and all(guard(steady))


def test_select_alphas_chooses_the_best_admissible_row():
    module, initial = _pair()
    tuned = module.lin.weight.detach().clone()

    def score(chosen: dict[str, float]) -> dict[str, float]:  # higher alpha scores higher
        return {"score": chosen["alpha"]}

    best, table = select_alphas(module, initial, {"alpha": (("lin.",), (0.2, 0.4, 0.8))}, score,
                                show_progress=False,
                                admissible=lambda rows: [r["alpha"] < 0.5 for r in rows])
    assert best == {"alpha": 0.4} and [r["admissible"] for r in table] == [True, True, False]
    assert torch.allclose(module.lin.weight, 0.4 * tuned)
    # a guard that allows nothing falls back to the plain best
    best, _ = select_alphas(module, initial, {"alpha": (("lin.",), (0.2, 0.8))}, score,
                            show_progress=False, admissible=lambda rows: [False] * len(rows))
    assert best == {"alpha": 0.8}
