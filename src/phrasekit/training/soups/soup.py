"""Model soups: average the fine-tuned weights of several runs of one recipe.

A uniform soup (Wortsman et al., 2022, "Model soups") of runs that start from the same weights
and differ only in their data order is a model of the same size whose weights are the mean of
the runs' fine-tuned weights; it usually beats each run and removes the question of which seed
to ship. :func:`soup_models` recovers each saved run's fine-tuned weights, averages them, and
then, as each run did, interpolates with the initial weights at the coefficient the dev splits
choose (never a test split). PEARL runs must share ``seed`` (the random initial weights of the
char CNN and heads) and differ in ``data_seed``; Phrase-BERT has no random modules, so any seeds
of one recipe can be souped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from phrasekit.models.folders import PEARL_FORMAT, PHRASE_BERT_FORMAT, model_folder_format
from phrasekit.training.pearl.averaging import soup_pearl
from phrasekit.training.phrase_bert.task import soup_phrase_bert


def soup_models(model_dirs: list[str | Path], out_dir: str | Path,
                dev_data_dir: str | Path | None = None,
                alphas: tuple[float, ...] | None = None,
                proj_alphas: tuple[float, ...] | None = None,
                show_progress: bool = True,
                cliff_margin: float | None = None) -> dict[str, Any]:
    """Soup saved PEARL or Phrase-BERT model folders (all of one kind) into ``out_dir/model``;
    returns the run report (also ``out_dir/report.json``)."""
    if len(model_dirs) < 2:
        raise ValueError("a soup needs at least two model folders")
    seen: dict[Path, Path] = {}
    for d in model_dirs:
        if Path(d).resolve() in seen:
            raise ValueError(f"{d} is given twice (as {seen[Path(d).resolve()]}): a soup "
                             "averages different runs")
        seen[Path(d).resolve()] = Path(d)
    for d in model_dirs:
        if not (Path(d) / "config.json").is_file():
            raise FileNotFoundError(f"{d} is not a model folder (no config.json)")
    if Path(out_dir).resolve() in {Path(d).resolve().parent for d in model_dirs}:
        raise ValueError(f"--out {out_dir} is the run folder of an ingredient; choose a new one")
    formats = {model_folder_format(d) for d in model_dirs}
    if formats == {PEARL_FORMAT}:
        return soup_pearl(list(model_dirs), out_dir, dev_data_dir=dev_data_dir, alphas=alphas,
                          proj_alphas=proj_alphas, show_progress=show_progress,
                          cliff_margin=cliff_margin)
    if formats == {PHRASE_BERT_FORMAT}:
        if proj_alphas is not None or cliff_margin is not None:
            raise ValueError("proj_alphas and cliff_margin apply to PEARL models only")
        return soup_phrase_bert(list(model_dirs), out_dir, dev_data_dir=dev_data_dir,
                                alphas=alphas, show_progress=show_progress)
    raise ValueError(f"can soup PEARL or Phrase-BERT model folders of one kind, got formats "
                     f"{sorted(map(str, formats))}")
