"""Run the phrase benchmark over one or more encoders and format the result table.

``run_benchmark(["minilm", "string"], tasks=None)`` validates everything first (task names, data
folder, every required file, model names), then loads each model in turn, runs the tasks,
logs the time of each, and optionally writes a JSON report atomically after every task.
``format_table(result)`` renders the summary as a markdown table (one row per model).

Typo robustness: ``run_benchmark(..., noise="typo")`` runs the noise-capable tasks (bird,
autofj) on test data with seeded character noise, as tasks named ``bird+typo`` and
``autofj+typo`` (their own table columns). With ``tasks=None`` it runs all noise-capable tasks;
naming another task together with a noise is a ValueError that lists the supported ones.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from phrasekit import __version__
from phrasekit.encoders.base import Encoder
from phrasekit.eval.autofj import AutoFJTask
from phrasekit.eval.autofj_join import AutoFJJoinTask
from phrasekit.eval.base import Task, check_noise, markdown_table
from phrasekit.eval.bird import BirdTask
from phrasekit.eval.clustering import EntityClusteringTask
from phrasekit.eval.ppdb import PPDBTask
from phrasekit.eval.stsb import STSBTask
from phrasekit.eval.turney import TurneyTask
from phrasekit.eval.yago import YagoProxyTask
from phrasekit.io import write_json
from phrasekit.registry import as_encoder, check_model_name
from phrasekit.settings import data_dir as default_data_dir
from phrasekit.settings import torch_threads

logger = logging.getLogger(__name__)

TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        BirdTask(),
        TurneyTask(),
        TurneyTask(with_reversed=True),
        PPDBTask("ppdb"),
        PPDBTask("ppdb_filtered"),
        EntityClusteringTask("conll2003"),
        EntityClusteringTask("bc5cdr"),
        AutoFJTask(),
        AutoFJJoinTask("hybrid"),
        AutoFJJoinTask("cosine"),
        YagoProxyTask(),
        STSBTask(),
    )
}
"""Every benchmark task by name, in table order."""

AVG7: tuple[str, ...] = ("ppdb", "ppdb_filtered", "turney", "bird", "conll2003", "bc5cdr", "autofj")
"""The seven tasks of PEARL's average (main metrics; NMI for the clustering tasks)."""

NOISE_TASKS: tuple[str, ...] = tuple(n for n, t in TASKS.items() if t.supports_noise)
"""The tasks that accept test-side noise (``run_benchmark(noise=...)``)."""

CLUSTERING = ("conll2003", "bc5cdr")

_HEADERS = {"conll2003": "conll2003 (NMI)", "bc5cdr": "bc5cdr (NMI)"}


def parse_tasks(tasks: str | Sequence[str] | None) -> list[str]:
    """Task names from a list or a comma-separated string (None/empty -> all, in table order).

    Raises ValueError listing the known tasks when a name is unknown. Duplicates are dropped.
    """
    if tasks is None:
        return list(TASKS)
    names = tasks.split(",") if isinstance(tasks, str) else list(tasks)
    names = [n.strip() for n in names if n and n.strip()]
    if not names:
        return list(TASKS)
    unknown = [n for n in names if n not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; known tasks: {', '.join(TASKS)}")
    return list(dict.fromkeys(names))


def main_metric_of(task: str) -> str | None:
    """The main metric of a task name, noisy variants included (``bird+typo`` -> ``pearson``)."""
    base = TASKS.get(task.split("+", 1)[0])
    return base.main_metric if base is not None else None


def resolve_tasks(tasks: str | Sequence[str] | None, noise: str | None = None) -> list[Task]:
    """The task objects to run: :func:`parse_tasks`, each with ``noise`` if one is given.

    With a noise, ``tasks=None`` (or empty) means every noise-capable task; naming a task that
    does not support noise raises ValueError listing the ones that do.
    """
    check_noise(noise)
    if noise is None:
        return [TASKS[n] for n in parse_tasks(tasks)]
    empty = tasks is None or not [t for t in (tasks.split(",") if isinstance(tasks, str)
                                              else tasks) if t and t.strip()]
    names = list(NOISE_TASKS) if empty else parse_tasks(tasks)
    unsupported = [n for n in names if n not in NOISE_TASKS]
    if unsupported:
        raise ValueError(f"noise {noise!r} is not supported by task(s) {unsupported}; "
                         f"tasks with noise support: {', '.join(NOISE_TASKS)}")
    return [TASKS[n].with_noise(noise) for n in names]


def avg7(scores: dict[str, float]) -> float | None:
    """Mean of the AVG7 main metrics (percent), or None unless all seven are present and finite."""
    vals = [scores.get(t) for t in AVG7]
    if any(v is None or not math.isfinite(v) for v in vals):
        return None
    return sum(vals) / len(vals)  # type: ignore[arg-type]


@dataclass
class TaskResult:
    """Metrics (percent) of one task for one model, with the wall time it took."""

    task: str
    metrics: dict[str, float]
    seconds: float

    @property
    def main(self) -> float:
        """The task's main metric."""
        metric = main_metric_of(self.task)
        return self.metrics.get(metric, math.nan) if metric else math.nan


@dataclass
class ModelResult:
    """All task results of one model."""

    model: str
    dim: int
    load_seconds: float = 0.0
    tasks: dict[str, TaskResult] = field(default_factory=dict)

    def main_scores(self) -> dict[str, float]:
        """Task name -> main metric."""
        return {name: r.main for name, r in self.tasks.items()}

    def summary(self) -> dict[str, float | None]:
        """The table row: every task's main metric (None if not run), clustering ACC, avg7.

        Noisy variants (``bird+typo``) that ran are added after the clean tasks; avg7 uses the
        clean tasks only.
        """
        scores = self.main_scores()
        row: dict[str, float | None] = {name: scores.get(name) for name in TASKS}
        row.update({name: v for name, v in scores.items() if name not in TASKS})
        for name in CLUSTERING:
            r = self.tasks.get(name)
            row[f"{name}_acc"] = r.metrics.get("acc") if r else None
        row["avg7"] = avg7(scores)
        return row

    @property
    def seconds(self) -> float:
        """Total wall time: loading plus every task."""
        return self.load_seconds + sum(r.seconds for r in self.tasks.values())


@dataclass
class BenchmarkResult:
    """The outcome of :func:`run_benchmark`: one :class:`ModelResult` per model, in order."""

    models: list[ModelResult]
    tasks: list[str]
    quick: bool
    data_dir: str
    num_threads: int | None = None
    noise: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (NaN -> None): settings, per-task metrics + seconds, summary."""
        return _json_safe({
            "phrasekit_version": __version__,
            "quick": self.quick,
            "data_dir": self.data_dir,
            "num_threads": self.num_threads,
            "noise": self.noise,
            "tasks": list(self.tasks),
            "main_metrics": {t: main_metric_of(t) for t in self.tasks},
            "avg7_tasks": list(AVG7),
            "models": [
                {
                    "model": m.model,
                    "dim": m.dim,
                    "load_seconds": round(m.load_seconds, 3),
                    "seconds": round(m.seconds, 3),
                    "tasks": {
                        name: {"metrics": r.metrics, "seconds": round(r.seconds, 3)}
                        for name, r in m.tasks.items()
                    },
                    "summary": m.summary(),
                }
                for m in self.models
            ],
        })


    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchmarkResult:
        """Rebuild a result from :meth:`to_dict` output (e.g. to re-print or merge saved runs)."""
        models = [
            ModelResult(
                model=m["model"], dim=m["dim"], load_seconds=m.get("load_seconds", 0.0),
                tasks={
                    name: TaskResult(name, {k: (math.nan if v is None else v)
                                            for k, v in entry["metrics"].items()},
                                     entry.get("seconds", 0.0))
                    for name, entry in m["tasks"].items()
                },
            )
            for m in data["models"]
        ]
        return cls(models=models, tasks=list(data["tasks"]), quick=bool(data["quick"]),
                   data_dir=str(data.get("data_dir", "")), num_threads=data.get("num_threads"),
                   noise=data.get("noise"))


def load_report(*paths: str | Path) -> BenchmarkResult:
    """Read one or more JSON reports written by :func:`run_benchmark` into one result."""
    parts = [BenchmarkResult.from_dict(json.loads(Path(p).read_text(encoding="utf-8")))
             for p in paths]
    if not parts:
        raise ValueError("give at least one report path")
    tasks = list(dict.fromkeys(t for r in parts for t in r.tasks))
    return BenchmarkResult(
        models=[m for r in parts for m in r.models], tasks=tasks,
        quick=any(r.quick for r in parts), data_dir=parts[0].data_dir,
        num_threads=parts[0].num_threads, noise=next((r.noise for r in parts if r.noise), None),
    )


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_safe(v) for v in obj]
    return obj


def resolve_data_dir(data_dir: str | Path | None) -> Path:
    """The benchmark data folder: ``data_dir`` if given, else ``settings.data_dir()``.

    Raises FileNotFoundError (naming PHRASEKIT_DATA / PHRASEKIT_SHARED) when it is missing.
    """
    if data_dir is None:
        return default_data_dir(required=True)  # type: ignore[return-value]
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        what = "is a file, not a folder" if path.exists() else "not found"
        raise FileNotFoundError(
            f"benchmark data folder {path}: {what} (set PHRASEKIT_DATA or PHRASEKIT_SHARED, "
            "or pass an existing folder)"
        )
    return path


def _check_model(model: str | Path | Encoder) -> None:
    """Fail fast on a model name that ``phrasekit.load`` would not accept."""
    if isinstance(model, Encoder):
        return
    check_model_name(model)


def run_benchmark(
    model_names: Sequence[str | Path | Encoder] | str | Encoder,
    tasks: str | Sequence[str] | None = None,
    data_dir: str | Path | None = None,
    quick: bool = False,
    json_path: str | Path | None = None,
    show_progress: bool = True,
    num_threads: int | None = None,
    noise: str | None = None,
) -> BenchmarkResult:
    """Evaluate each model (a registered name, a model folder or an ``Encoder``) on ``tasks``.

    Everything is validated before any model is loaded: unknown task or model names (and a bad
    ``num_threads`` or ``json_path``) raise ValueError, a missing data folder or file raises
    FileNotFoundError. With ``json_path`` the
    report is (re)written atomically after every task, so an interrupted run keeps its results.
    ``num_threads`` sets torch's intra-op threads for the run (restored afterwards): on a busy
    2-core machine one thread can be several times faster than two.
    ``noise`` (e.g. ``"typo"``) runs the noise-capable tasks on perturbed test data instead
    (see :func:`resolve_tasks`); the same seed gives every model the same noisy strings.
    """
    if isinstance(model_names, str | Path | Encoder):
        model_names = [model_names]
    models = list(model_names)
    if not models:
        raise ValueError("give at least one model")
    task_objs = resolve_tasks(tasks, noise)
    for m in models:
        _check_model(m)
    if num_threads is not None and num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    if json_path is not None and Path(json_path).is_dir():
        raise ValueError(f"json_path {json_path} is a directory; give a file name")
    root = resolve_data_dir(data_dir)
    for task in task_objs:
        task.check_data(root)

    result = BenchmarkResult(models=[], tasks=[t.name for t in task_objs], quick=quick,
                             data_dir=str(root), num_threads=num_threads, noise=noise)
    with torch_threads(num_threads):
        _run_all(result, models, task_objs, root, quick, json_path, show_progress)
    if json_path is not None:
        write_report(result, json_path)
    return result


def _run_all(
    result: BenchmarkResult,
    models: list[str | Path | Encoder],
    task_objs: list[Task],
    root: Path,
    quick: bool,
    json_path: str | Path | None,
    show_progress: bool,
) -> None:
    """Load each model in turn and run every task on it, filling ``result`` in place."""
    bar = tqdm(total=len(models) * len(task_objs), desc="benchmark", unit="task",
               disable=not show_progress)
    try:
        for model in models:
            t0 = time.perf_counter()
            encoder = as_encoder(model)
            load_s = time.perf_counter() - t0
            logger.info("loaded %s (dim %d) in %.1f s", encoder.name, encoder.dim, load_s)
            mres = ModelResult(model=encoder.name, dim=encoder.dim, load_seconds=load_s)
            result.models.append(mres)
            for task in task_objs:
                name = task.name
                bar.set_description(f"{encoder.name}:{name}")
                t0 = time.perf_counter()
                metrics = task.run(encoder, root, quick=quick)
                secs = time.perf_counter() - t0
                mres.tasks[name] = TaskResult(name, metrics, secs)
                logger.info("%s %s: %s=%.2f (%.1f s)", encoder.name, name, task.main_metric,
                            metrics[task.main_metric], secs)
                if json_path is not None:
                    write_report(result, json_path)
                bar.update(1)
            logger.info("%s: total %.1f s", encoder.name, mres.seconds)
    finally:
        bar.close()


def write_report(result: BenchmarkResult, path: str | Path) -> None:
    """Write ``result.to_dict()`` as JSON, atomically."""
    write_json(path, result.to_dict())


def _fmt(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.1f}"


def _columns(result: BenchmarkResult) -> list[str]:
    """Every clean task in table order, each followed by its noisy variants that ran."""
    ran = list(dict.fromkeys([*result.tasks, *(t for m in result.models for t in m.tasks)]))
    cols: list[str] = []
    for name in TASKS:
        cols.append(name)
        cols.extend(t for t in ran if t not in TASKS and t.split("+", 1)[0] == name)
    return cols


def format_table(result: BenchmarkResult, timings: bool = False) -> str:
    """Markdown table: one row per model, one column per task (main metric, one decimal).

    Columns: bird, turney, turney10, ppdb, ppdb_filtered, conll2003 (NMI), bc5cdr (NMI),
    autofj, autofj_join, autofj_join_cosine, yago_proxy, stsb, avg7 ('-' for tasks not run;
    avg7 only when all seven ran).
    A noisy variant that ran (``bird+typo``) gets its column right after its clean task.
    When a clustering task ran, a second table gives its Hungarian ACC; with ``timings`` a
    third gives the seconds per task.
    """
    columns = _columns(result)
    headers = ["model", *(_HEADERS.get(t, t) for t in columns), "avg7"]
    rows = []
    for m in result.models:
        s = m.summary()
        rows.append([m.model, *(_fmt(s.get(t)) for t in columns), _fmt(s["avg7"])])
    parts = [markdown_table(headers, rows)]
    if any(t in result.tasks for t in CLUSTERING):
        acc_rows = [[m.model, *(_fmt(m.summary()[f"{t}_acc"]) for t in CLUSTERING)]
                    for m in result.models]
        parts.append(markdown_table(["model", *(f"{t} (ACC)" for t in CLUSTERING)], acc_rows))
    if timings:
        t_rows = [[m.model, f"{m.load_seconds:.1f}",
                   *(f"{m.tasks[t].seconds:.1f}" if t in m.tasks else "-" for t in result.tasks),
                   f"{m.seconds:.1f}"] for m in result.models]
        parts.append(markdown_table(["seconds", "load", *result.tasks, "total"], t_rows))
    return "\n\n".join(parts)
