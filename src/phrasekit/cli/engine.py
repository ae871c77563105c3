"""``--engine``, ``--address``, ``--worker-cpus`` and ``--work-dir``: where a corpus command's
heavy stages run, and where their finished shards are kept so that a killed run resumes."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phrasekit.cli.common import BadInputError
from phrasekit.cli.options import ConfigOptions
from phrasekit.encoders.base import Encoder
from phrasekit.pipeline import (
    ENGINES,
    Engine,
    ShardedEncoder,
    ShardStore,
    make_engine,
)
from phrasekit.pipeline.shards import MANIFEST
from phrasekit.registry import load

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class EngineSettings:
    """The engine options every corpus command takes."""

    engine: str = "local"
    address: str | None = None
    worker_cpus: float = 1.0
    work_dir: Path | None = None


#: ``--engine``, ``--address``, ``--worker-cpus``, ``--work-dir`` (``@with_config(run=...)``).
ENGINE_OPTIONS = ConfigOptions(EngineSettings, help={
    # \\[ escapes the bracket from typer's rich markup, which would eat "[ray]"
    "engine": "Where the heavy stages run: local (this process) or ray (actors on a Ray "
              "cluster, see --address; needs pip install 'phrasekit\\[ray]'). Both give the "
              "same results.",
    "address": "--engine ray: the cluster's head as host:port (or auto: the cluster this "
               "machine belongs to). Default: start Ray on this machine for the run.",
    "worker_cpus": "--engine ray: CPUs each worker actor reserves (its torch threads).",
    "work_dir": "Folder for the finished shards of the run (Parquet files and a manifest): "
                "a run killed mid-way and started again with the same input and settings "
                "redoes only the missing shards. Default with --engine ray: <out>.shards next "
                "to the output, removed once the run succeeds; given, it is kept.",
})


@dataclass
class Run:
    """An open engine and the shard store of one command (``store`` None: no resuming)."""

    engine: Engine
    store: ShardStore | None


def check_engine(engine: str, address: str | None, worker_cpus: float) -> None:
    """Refuse a bad engine setting before any work starts."""
    if engine not in ENGINES:
        raise BadInputError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if address is not None and engine != "ray":
        raise BadInputError("--address needs --engine ray")
    if worker_cpus <= 0:
        raise BadInputError(f"--worker-cpus must be positive, got {worker_cpus}")
    if worker_cpus != EngineSettings.worker_cpus and engine != "ray":
        raise BadInputError("--worker-cpus sets the CPUs of each Ray worker: it needs --engine "
                            "ray")


@contextlib.contextmanager
def open_run(settings: dict[str, Any], out: Path | None, workers: int | None = None,
             quiet: bool = False) -> Iterator[Run | None]:
    """The engine and shard store of a command writing ``out`` (``settings``: the
    ``ENGINE_OPTIONS`` values; ``workers``: Ray actors, None: one per cluster CPU); None for
    the plain local path (``--engine local`` without ``--work-dir``). A default work folder is
    removed when the block succeeds and kept when it fails, for the rerun."""
    engine, address = settings["engine"], settings["address"]
    worker_cpus, work_dir = settings["worker_cpus"], settings["work_dir"]
    check_engine(engine, address, worker_cpus)
    if engine == "local" and work_dir is None:
        yield None
        return
    default = work_dir is None and out is not None
    folder = out.with_name(out.name + ".shards") if default and out is not None else work_dir
    _check_work_folder(folder, default)
    try:
        eng = make_engine(engine, address=address, workers=workers,
                          cpus_per_worker=worker_cpus, quiet=quiet)
    except ImportError as exc:
        raise BadInputError(str(exc)) from None
    store = None if folder is None else ShardStore(folder)
    with eng:
        yield Run(eng, store)
    if default and store is not None:
        store.remove()
        logger.info("removed the finished shards in %s", folder)


def _check_work_folder(folder: Path | None, default: bool) -> None:
    """Refuse a work folder that is a file, or a default one (``<out>.shards``, removed after
    the run) that holds files no run wrote: they are the user's, not phrasekit's to delete."""
    if folder is None:
        return
    if folder.exists() and not folder.is_dir():
        raise BadInputError(f"{folder}: the shard folder of this run is a file; remove it or "
                            f"give --work-dir another folder")
    foreign = ShardStore.foreign_files(folder)
    if default and foreign:
        raise BadInputError(f"{folder}: the shard folder of this run holds files phrasekit did "
                            f"not write ({', '.join(foreign[:3])}); move them or give "
                            f"--work-dir")
    if MANIFEST in foreign:  # a work folder of the user's may hold files, not this name
        raise BadInputError(f"{folder / MANIFEST}: not a phrasekit shard manifest, and the "
                            f"shard store would replace it; give --work-dir another folder")


def encoder_for(run: Run | None, model: str, **options: Any) -> Encoder:
    """Model ``model`` loaded here, or sharded over the run's engine (loaded by each worker)."""
    return load(model, **options) if run is None \
        else ShardedEncoder(model, run.engine, run.store, **options)
