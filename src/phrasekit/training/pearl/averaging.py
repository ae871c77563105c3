"""What follows PEARL's fine-tuning: weight averaging with the initial model (the coefficients
chosen on dev splits), saving the model folder, and re-averaging or souping saved runs.

The fine-tuned weights of a saved model can be recovered from its averaged ones
(:func:`recover_finetuned_pearl`), so :func:`reaverage_pearl` and :func:`soup_pearl` need no
checkpoint: they recover, (average the runs,) choose the coefficients again and save.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from phrasekit.encoders.pearl import PearlEncoder, PearlModel, read_pearl_config
from phrasekit.eval.dev import DevScorer
from phrasekit.eval.relatedness import related_file
from phrasekit.io import write_json
from phrasekit.settings import data_dir as shared_data_dir
from phrasekit.training.core.averaging import (
    CliffGuard,
    average_modules,
    select_alphas,
    undo_interpolation,
)
from phrasekit.training.core.config import portable_path, portable_settings
from phrasekit.training.pearl.config import PearlTrainingConfig, alias_path, build_model

logger = logging.getLogger(__name__)

Groups = dict[str, tuple[tuple[str, ...], tuple[float, ...]]]

#: Settings that must agree for PEARL runs to be souped (``seed`` fixes the random initial
#: weights of the char CNN, projection and type head; vary ``data_seed`` instead).
_SOUP_MUST_MATCH = ("backbone", "seed", "use_char", "use_type", "type_head_on",
                    "char_pretrain_steps", "max_seq_length", "freeze_embeddings",
                    "supersense_weight", "adapter_rank")


def averaging_groups(cfg: PearlTrainingConfig) -> Groups:
    """Weight-averaging grid: the backbone's ``alpha`` and, unless tied, the projection's.

    The projection carries the char encoder's contribution (it starts as ``[I, 0]``); trained
    jointly, that path can outweigh the backbone and scatter entity clusters, so its coefficient
    can be chosen on dev separately (``proj_alphas``, or fixed with ``alpha_proj``). By default
    it is tied to ``alpha`` (see the README for why), and so it is when ``alpha`` is fixed and
    ``alpha_proj`` is not (fixed ones need no dev data).
    """
    alphas = (cfg.alpha,) if cfg.alpha is not None else tuple(cfg.alphas)
    tied = cfg.proj_alphas is None or cfg.alpha is not None
    if cfg.alpha_proj is None and tied:
        return {"alpha": (("backbone.", "proj."), alphas)}
    proj = (cfg.alpha_proj,) if cfg.alpha_proj is not None else tuple(cfg.proj_alphas or ())
    return {"alpha": (("backbone.",), alphas), "alpha_proj": (("proj.",), proj)}


def _n_candidates(groups: Groups) -> int:
    return int(np.prod([len(alphas) for _, alphas in groups.values()]))


def pearl_dev_dir(explicit: str | Path | None, cfg: PearlTrainingConfig) -> Path | None:
    """Where the dev splits are: ``explicit``, else the shared data folder, but only when the
    averaging grid leaves a choice to make (fixed coefficients need no shared data)."""
    if explicit:
        return Path(explicit)
    return shared_data_dir() if _n_candidates(averaging_groups(cfg)) > 1 else None


def dev_scorer(cfg: PearlTrainingConfig, dev_dir: Path | None) -> DevScorer:
    """The dev scorer of α selection: the four dev splits, plus the alias dev split when the
    run's alias file exists (:func:`alias_path`) and ``cfg.alias_dev`` is on, plus entity
    relatedness when ``related.tsv.gz`` sits beside it and ``cfg.related_dev`` is on."""
    aliases = alias_path(cfg)
    related = related_file(aliases)
    found = {"alias": (cfg.alias_dev, aliases), "relatedness": (cfg.related_dev, related)}
    use = {k: on and path.is_file() for k, (on, path) in found.items()}
    for kind, (on, path) in found.items():
        if on and not use[kind]:
            logger.info("no %s: dev selection without the %s dev score", path, kind)
    return DevScorer(dev_dir, aliases=aliases if use["alias"] else None,
                     related=related if use["relatedness"] else None)


def averaged_initial_weights(cfg: PearlTrainingConfig) -> dict[str, torch.Tensor]:
    """The initial weights that weight averaging interpolates towards: backbone and projection
    of a freshly built model (heads and the char CNN are never averaged)."""
    return {k: v for k, v in build_model(cfg).state_dict().items()
            if k.startswith(("backbone.", "proj."))}


def finish_pearl(cfg: PearlTrainingConfig, model: PearlModel, dev_dir: Path | None,
                 steps_done: int, train_seconds: float, history: list[dict[str, Any]],
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Choose the averaging coefficient on dev splits, save ``out_dir/model`` and the report
    (``out_dir/report.json``, which names the model folder relative to itself)."""
    model.eval()
    out = Path(cfg.out_dir)
    t0 = time.perf_counter()
    groups = averaging_groups(cfg)
    scorer = dev_scorer(cfg, dev_dir) if _n_candidates(groups) > 1 else None
    chosen, dev_table = select_alphas(
        model, averaged_initial_weights(cfg), groups,
        (lambda c: scorer(PearlEncoder(model, name=str(c)))) if scorer else None,
        show_progress=cfg.show_progress,
        admissible=CliffGuard(margin=cfg.cliff_margin) if cfg.cliff_margin else None)
    best_alpha = chosen["alpha"]
    alpha_proj = chosen.get("alpha_proj", best_alpha)
    training = {"settings": portable_settings(cfg), "steps": steps_done, "alpha": best_alpha,
                "alpha_proj": alpha_proj, "train_minutes": round(train_seconds / 60, 2),
                "dev": dev_table, "history": history, **(extra or {})}
    model.config.extra = {"alpha": best_alpha, "alpha_proj": alpha_proj, "steps": steps_done}
    model_dir = model.cpu().save_pretrained(out / "model", extra_config={"training": training})
    size_mb = sum(f.stat().st_size for f in model_dir.iterdir()) / 2**20
    report = {**training, "selection_minutes": round((time.perf_counter() - t0) / 60, 2),
              "model_dir": str(model_dir), "model_mb": round(size_mb, 2)}
    write_json(out / "report.json", {**report, "model_dir": model_dir.name})
    logger.info("saved %s (alpha %.2f, projection alpha %.2f, %.1f MB)", model_dir, best_alpha,
                alpha_proj, size_mb)
    return report


def recover_finetuned_pearl(model_dir: str | Path) -> tuple[PearlTrainingConfig, PearlModel,
                                                             dict[str, Any]]:
    """A PEARL model folder saved by ``train pearl`` with its fine-tuned weights restored.

    The folder holds ``theta0 + alpha * (theta_ft - theta0)`` for the backbone (and likewise with
    ``alpha_proj`` for the projection), so with both coefficients above 0 the fine-tuned weights
    come back exactly, up to the rounding of the stored deltas. Returns the run's training
    config, the model and the saved training report.
    """
    config = read_pearl_config(model_dir)
    training = config.get("training")
    if not training or "settings" not in training:
        raise ValueError(f"{model_dir}: no training report in config.json; only models saved "
                         "by `phrasekit train pearl` can be re-averaged or souped")
    alpha = float(training["alpha"])
    alpha_proj = float(training.get("alpha_proj", alpha))
    known = set(PearlTrainingConfig.__dataclass_fields__)
    settings = {k: v for k, v in training["settings"].items() if k in known}
    settings["alphas"] = tuple(settings.get("alphas") or PearlTrainingConfig.alphas)
    if settings.get("proj_alphas") is not None:
        settings["proj_alphas"] = tuple(settings["proj_alphas"])
    cfg = PearlTrainingConfig(**settings)
    model = PearlModel.from_pretrained(model_dir)
    undo_interpolation(model, build_model(cfg).state_dict(),
                       {("backbone.",): alpha, ("proj.",): alpha_proj})
    return cfg, model, training


def _rechoose(cfg: PearlTrainingConfig, out_dir: str | Path, dev_data_dir: str | Path | None,
              alphas: tuple[float, ...] | None, proj_alphas: tuple[float, ...] | None,
              show_progress: bool, cliff_margin: float | None = None,
              aliases: str | Path | None = None) -> PearlTrainingConfig:
    """``cfg`` of a saved run, set up to choose its averaging coefficients again (on the alias
    dev split too when ``aliases`` names an alias file)."""
    return replace(cfg, out_dir=str(out_dir), alpha=None, alpha_proj=None,
                   alias_file=str(aliases) if aliases else cfg.alias_file,
                   alphas=tuple(alphas or cfg.alphas), proj_alphas=proj_alphas,
                   cliff_margin=cfg.cliff_margin if cliff_margin is None else cliff_margin,
                   dev_data_dir=str(dev_data_dir) if dev_data_dir else None,
                   show_progress=show_progress)


def reaverage_pearl(model_dir: str | Path, out_dir: str | Path,
                    dev_data_dir: str | Path | None = None,
                    alphas: tuple[float, ...] | None = None,
                    proj_alphas: tuple[float, ...] | None = None,
                    show_progress: bool = True,
                    cliff_margin: float | None = None,
                    aliases: str | Path | None = None) -> dict[str, Any]:
    """Choose the averaging coefficients of a saved PEARL model again, without its checkpoint:
    the fine-tuned weights are recovered (:func:`recover_finetuned_pearl`), averaged again over
    the new grid, chosen on dev splits (with ``aliases``: the alias dev split too), and saved to
    ``out_dir/model``."""
    if cliff_margin:
        CliffGuard(margin=cliff_margin)  # bad settings fail before the run is read
    cfg, model, training = recover_finetuned_pearl(model_dir)
    cfg = _rechoose(cfg, out_dir, dev_data_dir, alphas, proj_alphas, show_progress, cliff_margin,
                    aliases)
    before = {"alpha": training["alpha"],
              "alpha_proj": training.get("alpha_proj", training["alpha"])}
    logger.info("re-averaging %s (saved at alpha %s / %s)", model_dir, before["alpha"],
                before["alpha_proj"])
    return finish_pearl(cfg, model, pearl_dev_dir(dev_data_dir, cfg),
                        steps_done=int(training["steps"]),
                        train_seconds=float(training.get("train_minutes", 0.0)) * 60,
                        history=list(training.get("history", [])),
                        extra={"reaveraged_from": before})


def _check_soupable(model_dirs: list[str | Path], configs: list[PearlTrainingConfig]) -> None:
    """Only runs from the same initial weights (and architecture) can be averaged."""
    first = asdict(configs[0])
    for d, cfg in zip(model_dirs[1:], configs[1:], strict=True):
        other = asdict(cfg)
        bad = [k for k in _SOUP_MUST_MATCH if other[k] != first[k]]
        if bad:
            raise ValueError(f"{d} differs from {model_dirs[0]} in {bad}: only runs from the same "
                             "initial weights can be averaged (same --seed; vary --data-seed)")


def soup_pearl(model_dirs: list[str | Path], out_dir: str | Path,
               dev_data_dir: str | Path | None = None,
               alphas: tuple[float, ...] | None = None,
               proj_alphas: tuple[float, ...] | None = None,
               show_progress: bool = True,
               cliff_margin: float | None = None) -> dict[str, Any]:
    """Average the fine-tuned weights of PEARL runs that started from the same weights (a
    uniform model soup), then choose the averaging coefficients with the initial model on dev."""
    if len(model_dirs) < 2:
        raise ValueError("a soup needs at least two model folders")
    if cliff_margin:
        CliffGuard(margin=cliff_margin)  # bad settings fail before the runs are read
    runs = [recover_finetuned_pearl(d) for d in model_dirs]
    _check_soupable(model_dirs, [cfg for cfg, _, _ in runs])
    model = average_modules([m for _, m, _ in runs])
    if model.config.delta_rank:  # the mean of n rank-r changes has rank n * r at most
        model.config.delta_rank *= len(runs)
    cfg = _rechoose(runs[0][0], out_dir, dev_data_dir, alphas, proj_alphas, show_progress,
                    cliff_margin)
    logger.info("souping %d PEARL runs: %s", len(runs), ", ".join(map(str, model_dirs)))
    soup_of = [{"model": portable_path(d, parts=2), "alpha": t["alpha"],
                "seed": t["settings"].get("seed"), "data_seed": t["settings"].get("data_seed")}
               for d, (_, _, t) in zip(model_dirs, runs, strict=True)]
    return finish_pearl(cfg, model, pearl_dev_dir(dev_data_dir, cfg),
                        steps_done=sum(int(t["steps"]) for _, _, t in runs),
                        train_seconds=60 * sum(float(t.get("train_minutes", 0.0))
                                               for _, _, t in runs),
                        history=[], extra={"soup_of": soup_of})
