"""Engines that apply a pipeline stage to shards: ``local`` (this process) and ``ray`` (Ray
Data actors on a local or remote Ray cluster). Both give the same results; ``run_stage`` adds
the shard store, so finished shards are reused when a killed job is run again."""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from tqdm.auto import tqdm

from phrasekit.pipeline.shards import ShardStore, bytes_table, shard_key, table_bytes

logger = logging.getLogger(__name__)

ENGINES = ("local", "ray")
#: Exceptions of a lost worker or node; anything else (a bad input, a bug) is not retried.
_LOST = ("ActorDiedError", "ActorUnavailableError", "NodeDiedError", "ObjectLostError",
         "OwnerDiedError", "RayActorError", "WorkerCrashedError")


class Stage(ABC):
    """One step of the corpus pipeline, applied shard by shard: built on the driver, sent to
    every worker, ``setup`` once there (load a model), then called on input tables."""

    name: str = "stage"

    @abstractmethod
    def fingerprint(self) -> str:
        """Everything that changes the output for a given input (model, settings)."""

    def setup(self) -> None:  # noqa: B027 (optional hook)
        """Load what the stage needs, once per worker."""

    @abstractmethod
    def __call__(self, table: pa.Table) -> pa.Table:
        """The output table of one input shard."""


class Engine(ABC):
    """Applies a stage to ``(key, input bytes)`` shards, yielding ``(key, output table)`` as
    each finishes (in any order)."""

    name: str = "engine"

    @abstractmethod
    def map(self, stage: Stage, items: Sequence[tuple[str, bytes]]
            ) -> Iterator[tuple[str, pa.Table]]:
        """Run ``stage`` on every shard."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release what the engine started."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalEngine(Engine):
    """Every shard in this process, one after the other."""

    name = "local"

    def map(self, stage: Stage, items: Sequence[tuple[str, bytes]]
            ) -> Iterator[tuple[str, pa.Table]]:
        if items:
            stage.setup()
        for key, data in items:
            yield key, stage(bytes_table(data))


class _StageActor:
    """A Ray Data actor holding one set-up stage; each batch holds one shard."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        stage.setup()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = [table_bytes(self.stage(bytes_table(bytes(d)))) for d in batch["data"]]
        return {"key": np.asarray(batch["key"]), "data": np.asarray(out, dtype=object)}


def import_ray() -> Any:
    """The ``ray`` module, or an ImportError naming the extra that installs it."""
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise ImportError("--engine ray needs Ray: pip install 'phrasekit[ray]'") from exc
    return ray


def token_auth_env() -> dict[str, str]:
    """``RAY_AUTH_MODE=token`` when a Ray token is at hand and no mode is set: Ray 2.60 heads
    started by ``ray start`` require the cluster's token (``~/.ray/auth_token`` or
    ``RAY_AUTH_TOKEN``), which a driver only sends in token mode."""
    has_token = "RAY_AUTH_TOKEN" in os.environ or (Path.home() / ".ray/auth_token").is_file()
    return {"RAY_AUTH_MODE": "token"} if has_token and "RAY_AUTH_MODE" not in os.environ \
        else {}


class RayEngine(Engine):
    """Shards as rows of a Ray Dataset, mapped by a pool of actors (``workers`` of them, each
    with ``cpus_per_worker`` CPUs, placed by Ray on the cluster's nodes) that each load the stage's
    model once. Finished shards stream back to the driver. When a worker or a node is lost,
    the shards not yet back are submitted again to what is left of the cluster (up to
    ``max_attempts`` runs).

    ``address``: a running cluster (``host:port`` of its head, or ``auto``); None starts a
    local Ray with ``workers * cpus_per_worker`` CPUs (default: all cores) and stops it on
    ``close``.
    """

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None,
                 cpus_per_worker: float = 1.0, max_attempts: int = 3,
                 quiet: bool = False) -> None:
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if cpus_per_worker <= 0 or max_attempts < 1:
            raise ValueError("cpus_per_worker must be > 0 and max_attempts >= 1")
        if address is not None:  # before Ray is imported: it reads the mode once
            os.environ.update(token_auth_env())
        self.ray = import_ray()
        self._started = not self.ray.is_initialized()
        if self._started:
            cpus = None if address else int(np.ceil((workers or os.cpu_count() or 1)
                                                    * cpus_per_worker))
            self.ray.init(address=address, num_cpus=cpus, include_dashboard=False,
                          log_to_driver=False,
                          logging_level=logging.ERROR if quiet else logging.WARNING)
        for name in ("ray", "ray.data"):
            logging.getLogger(name).setLevel(logging.ERROR if quiet else logging.WARNING)
        ctx = self.ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        ctx.enable_auto_log_stats = False
        self.workers = workers
        self.cpus_per_worker = float(cpus_per_worker)
        self.max_attempts = int(max_attempts)
        self.quiet = quiet

    def pool_size(self, n_items: int) -> int:
        """Actors for ``n_items`` shards: ``workers``, else as many as the cluster's CPUs
        hold now (fewer after a node is lost), never more than the shards."""
        size = self.workers
        if size is None:
            cpus = float(self.ray.available_resources().get("CPU", 0.0)) \
                or float(self.ray.cluster_resources().get("CPU", 1.0))
            size = int(cpus // self.cpus_per_worker)
        return max(1, min(size, n_items))

    def _run(self, stage: Stage, items: Sequence[tuple[str, bytes]]
             ) -> Iterator[tuple[str, pa.Table]]:
        rows = [{"key": k, "data": d} for k, d in items]
        ds = self.ray.data.from_items(rows, override_num_blocks=len(rows))
        pool = self.ray.data.ActorPoolStrategy(size=self.pool_size(len(rows)),
                                               max_tasks_in_flight_per_actor=1)
        out = ds.map_batches(_StageActor, fn_constructor_args=(stage,), batch_size=1,
                             compute=pool, num_cpus=self.cpus_per_worker)
        for row in out.iter_rows():
            yield str(row["key"]), bytes_table(bytes(row["data"]))

    def map(self, stage: Stage, items: Sequence[tuple[str, bytes]]
            ) -> Iterator[tuple[str, pa.Table]]:
        pending = dict(items)
        attempt = 1
        while pending:
            try:
                for key, table in self._run(stage, list(pending.items())):
                    if pending.pop(key, None) is not None:
                        yield key, table
                if pending:
                    raise RuntimeError(f"ray: {len(pending)} shard(s) came back without output")
            except Exception as exc:
                if attempt >= self.max_attempts or not worker_lost(exc):
                    raise
                attempt += 1
                logger.warning("ray: a worker was lost (%s); submitting the %d unfinished "
                               "shards again", type(exc).__name__, len(pending))

    def close(self) -> None:
        if self._started and self.ray.is_initialized():
            self.ray.shutdown()


def worker_lost(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it wraps) says a worker or node died."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ in _LOST or any(n in str(exc) for n in _LOST):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def make_engine(name: str = "local", address: str | None = None, workers: int | None = None,
                cpus_per_worker: float = 1.0, quiet: bool = False) -> Engine:
    """The engine called ``name`` (``local`` or ``ray``); ``address`` is Ray's only."""
    if name not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {name!r}")
    if name == "local":
        if address is not None:
            raise ValueError("--address needs --engine ray")
        return LocalEngine()
    return RayEngine(address=address, workers=workers, cpus_per_worker=cpus_per_worker,
                     quiet=quiet)


def run_stage(stage: Stage, inputs: Iterable[pa.Table], engine: Engine,
              store: ShardStore | str | Path | None = None, show_progress: bool = False
              ) -> list[pa.Table]:
    """``stage`` applied to every input table through ``engine``: the outputs in input order.
    With a ``store`` (or its folder), finished shards are read back instead of recomputed and
    new ones are written there as they arrive. ``inputs`` may be a generator: each table is
    serialised as it comes, so only the serialised shards still to run are kept."""
    if store is not None and not isinstance(store, ShardStore):
        store = ShardStore(store)
    fingerprint = stage.fingerprint()
    keys: list[str] = []
    results: dict[str, pa.Table] = {}
    todo: dict[str, bytes] = {}
    for table in inputs:
        payload = table_bytes(table)
        key = shard_key(fingerprint, payload)
        keys.append(key)
        if key in results or key in todo:
            continue
        done = store.get(key) if store is not None else None
        if done is not None:
            results[key] = done
        else:
            todo[key] = payload
    if store is not None and results:
        logger.info("%s: %d shards reused from %s, %d to run", stage.name, len(results),
                    store.folder, len(todo))
    with tqdm(total=len(todo), desc=f"{stage.name}[{engine.name}]", unit="shard",
              disable=not show_progress or not todo, leave=False) as bar:
        for key, table in engine.map(stage, list(todo.items())):
            if store is not None:
                store.put(key, table)
            results[key] = table
            bar.update()
    return [results[k] for k in keys]
