"""Engines that apply a pipeline stage to shards: ``local`` (this process) and ``ray`` (a pool
of Ray actors on a local or remote Ray cluster). Both give the same results and both stream:
input shards are read as workers take them, so the driver holds only the shards in flight.
``iter_stage`` adds the shard store, so finished shards are reused when a killed job is run
again."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from abc import ABC, abstractmethod
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from tqdm.auto import tqdm

from phrasekit.pipeline.shards import ShardStore, bytes_table, shard_key, table_bytes

logger = logging.getLogger(__name__)

ENGINES = ("local", "ray")
#: Exceptions of a lost worker or node, subclasses included; anything else (a bad input, a bug)
#: is not retried.
_LOST = frozenset({"ActorDiedError", "ActorUnavailableError", "NodeDiedError", "ObjectLostError",
                   "OwnerDiedError", "RayActorError", "WorkerCrashedError"})


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
    each finishes (in any order). ``items`` is read only as workers become free, so a
    generator of shards is never held whole."""

    name: str = "engine"
    #: whether stages run in the driver's process (a model loaded there is used as is)
    in_process: bool = False

    @abstractmethod
    def map(self, stage: Stage, items: Iterable[tuple[str, bytes]]
            ) -> Iterator[tuple[str, pa.Table]]:
        """Run ``stage`` on every shard."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release what the engine started."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalEngine(Engine):
    """Shards on this machine: in this process one after the other, or with ``workers`` > 1
    in that many worker processes (spawned, each setting the stage up once and using its
    share of the CPU threads), at most two shards in flight per worker."""

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = int(workers)

    @property
    def in_process(self) -> bool:
        """Whether stages run in this process (so a model loaded here can be used as is)."""
        return self.workers == 1

    def map(self, stage: Stage, items: Iterable[tuple[str, bytes]]
            ) -> Iterator[tuple[str, pa.Table]]:
        if not self.in_process:
            yield from self._map_processes(stage, iter(items))
            return
        ready = False
        for key, data in items:
            if not ready:
                stage.setup()
                ready = True
            yield key, stage(bytes_table(data))

    def _map_processes(self, stage: Stage, items: Iterator[tuple[str, bytes]]
                       ) -> Iterator[tuple[str, pa.Table]]:
        import concurrent.futures as cf
        import multiprocessing

        from phrasekit.threads import choose_threads

        threads = max(1, choose_threads() // self.workers)  # the free cores, shared
        flight: dict[cf.Future, str] = {}
        with cf.ProcessPoolExecutor(self.workers, multiprocessing.get_context("spawn"),
                                    initializer=_process_setup,
                                    initargs=(stage, threads)) as pool:
            for key, data in items:
                flight[pool.submit(_process_run, data)] = key
                while len(flight) >= 2 * self.workers:
                    yield from _collect(flight, cf.FIRST_COMPLETED)
            while flight:
                yield from _collect(flight, cf.FIRST_COMPLETED)


#: The stage a local worker process has set up (``_process_setup``).
_PROCESS_STAGE: list[Stage] = []


def _process_setup(stage: Stage, threads: int) -> None:
    """Set ``stage`` up in a local worker process, with ``threads`` torch threads."""
    import sys

    stage.setup()
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    _PROCESS_STAGE[:] = [stage]


def _process_run(data: bytes) -> bytes:
    return table_bytes(_PROCESS_STAGE[0](bytes_table(data)))


def _collect(flight: dict[Any, str], when: str) -> Iterator[tuple[str, pa.Table]]:
    """Wait for shards of ``flight`` (concurrent futures) and yield those done."""
    import concurrent.futures as cf

    done, _ = cf.wait(list(flight), return_when=when)
    for fut in done:
        yield flight.pop(fut), bytes_table(fut.result())


class _StageActor:
    """A Ray actor holding one set-up stage; each call maps one serialised shard."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        stage.setup()

    def run(self, data: bytes) -> bytes:
        return table_bytes(self.stage(bytes_table(data)))


def import_ray() -> Any:
    """The ``ray`` module, or an ImportError naming the extra that installs it."""
    try:
        import ray
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


class _RayRun:
    """One ``RayEngine.map`` run: up to ``size`` actors, started as work arrives, each with
    at most ``depth`` shards in flight. A shard is read only when an actor has room for it
    and it is fewer than ``2 * depth`` shards per actor past the oldest one still running (so
    a slow actor cannot make the caller hold many finished shards waiting for it). A lost actor is
    dropped, the pool shrinks to what is left, and its shards are run again (up to
    ``max_attempts`` tries each)."""

    def __init__(self, ray: Any, stage: Stage, options: dict[str, Any], size: int,
                 source: Iterator[tuple[str, bytes]], max_attempts: int, depth: int = 2
                 ) -> None:
        self.ray = ray
        self.stage_ref = ray.put(stage)  # sent once, shared by every actor
        self.options = options
        self.size = size
        self.depth = depth
        self.source = source
        self.max_attempts = max_attempts
        self.load: dict[Any, int] = {}  # actor -> shards in flight
        self.flight: dict[Any, tuple[Any, int, str, bytes]] = {}  # ref -> actor, shard
        self.queue: deque[tuple[int, str, bytes]] = deque()  # read, not yet submitted
        self.tries: Counter[str] = Counter()
        self.read = 0

    def _free_actor(self) -> Any | None:
        """An actor with room for one more shard (a new one while the pool is not full)."""
        if len(self.load) < self.size:
            actor = self.ray.remote(_StageActor).options(**self.options).remote(self.stage_ref)
            self.load[actor] = 0
            return actor
        actor = min(self.load, key=self.load.__getitem__, default=None)
        return actor if actor is not None and self.load[actor] < self.depth else None

    def fill(self) -> None:
        """Submit shards while an actor has room: those to run again first, then new ones."""
        ahead = 2 * self.depth * max(self.size, 1)
        while True:
            if not self.queue:
                oldest = min((f[1] for f in self.flight.values()), default=self.read)
                item = next(self.source, None) if self.read - oldest < ahead else None
                if item is None:
                    return
                self.queue.append((self.read, *item))
                self.read += 1
            actor = self._free_actor()
            if actor is None:
                return
            seq, key, data = self.queue.popleft()
            self.tries[key] += 1
            self.flight[actor.run.remote(data)] = (actor, seq, key, data)
            self.load[actor] += 1

    def next_done(self) -> tuple[str, bytes | None]:
        """The next finished shard's key and output; None when its worker was lost (the
        shard is queued again); any other failure is raised."""
        (ref,), _ = self.ray.wait(list(self.flight), num_returns=1)
        actor, seq, key, data = self.flight.pop(ref)
        if actor in self.load:
            self.load[actor] -= 1
        try:
            return key, self.ray.get(ref)
        except Exception as exc:
            if not worker_lost(exc):
                raise
            if self.tries[key] >= self.max_attempts:
                raise RuntimeError(f"ray: shard {key[:12]} lost its worker "
                                   f"{self.tries[key]} times") from exc
            if self.load.pop(actor, None) is not None:
                logger.warning("ray: a worker was lost (%s); its shards go to the %d left",
                               type(exc).__name__, len(self.load))
                self.size = len(self.load)
            self.queue.appendleft((seq, key, data))
            return key, None

    def close(self) -> None:
        """Stop the actors (and what they still run), releasing their CPUs for the next
        stage."""
        for actor in self.load:
            with contextlib.suppress(Exception):
                self.ray.kill(actor)
        self.flight.clear()
        self.load.clear()


class RayEngine(Engine):
    """Shards mapped by a pool of Ray actors (``workers`` of them, each with
    ``cpus_per_worker`` CPUs, spread by Ray over the cluster's nodes) that each load the
    stage's model once. The driver streams: it reads a shard only when an actor has room for
    it (two in flight per actor) and yields results as they come back, so its memory does not
    grow with the corpus. A shard whose worker or node was lost is run again on the actors
    left (up to ``max_attempts`` tries per shard).

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
            check_reachable(address)
            os.environ.update(token_auth_env())
        self.ray = import_ray()
        self._started = not self.ray.is_initialized()
        if self._started:
            cpus = None if address else int(np.ceil((workers or os.cpu_count() or 1)
                                                    * cpus_per_worker))
            self.ray.init(address=address, num_cpus=cpus, include_dashboard=False,
                          log_to_driver=False,
                          logging_level=logging.ERROR if quiet else logging.WARNING)
        logging.getLogger("ray").setLevel(logging.ERROR if quiet else logging.WARNING)
        self.workers = workers
        self.cpus_per_worker = float(cpus_per_worker)
        self.max_attempts = int(max_attempts)
        self.quiet = quiet

    def pool_size(self) -> int:
        """Actors to start: ``workers``, at most as many as the cluster's CPUs hold (an actor
        the cluster has no CPUs for would never start, and the shards sent to it would never
        come back); by default as many as its free CPUs hold now (fewer after a node is
        lost)."""
        total = float(self.ray.cluster_resources().get("CPU", 0.0))
        if self.workers is not None:
            size = min(self.workers, int(total // self.cpus_per_worker))
            if size < self.workers:
                logger.warning("ray: %d workers asked, the cluster has CPUs for %d",
                               self.workers, size)
        else:
            free = float(self.ray.available_resources().get("CPU", 0.0))
            size = int((free or total) // self.cpus_per_worker)
        if size < 1:
            raise RuntimeError(f"ray: no room left in the cluster for a worker of "
                               f"{self.cpus_per_worker:g} CPUs")
        return size

    def map(self, stage: Stage, items: Iterable[tuple[str, bytes]]
            ) -> Iterator[tuple[str, pa.Table]]:
        options = {"num_cpus": self.cpus_per_worker, "max_restarts": 0,
                   "max_task_retries": 0, "scheduling_strategy": "SPREAD"}
        run = _RayRun(self.ray, stage, options, self.pool_size(), iter(items),
                      self.max_attempts)
        try:
            while True:
                run.fill()
                if not run.flight:
                    if not run.queue:
                        return
                    run.size = self.pool_size()  # every actor was lost: start new ones
                    continue
                key, out = run.next_done()
                if out is not None:
                    yield key, bytes_table(out)
        finally:
            run.close()

    def close(self) -> None:
        if self._started and self.ray.is_initialized():
            self.ray.shutdown()


def worker_lost(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it wraps) says a worker or node died."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if getattr(exc, "actor_init_failed", False):
            return False  # the worker's setup failed (a bad model or setting): not retried
        # subclasses count: a shard output whose node died before the driver fetched it
        # raises ObjectReconstructionFailedError, an ObjectLostError
        if _LOST.intersection(c.__name__ for c in type(exc).__mro__) or any(
                n in str(exc) for n in _LOST):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """A ``host:port`` head answers a TCP connection within ``timeout`` seconds (Ray itself
    retries an unreachable head for minutes, logging as it goes)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return  # "auto" and other forms: Ray's own checks, which fail at once
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ValueError(f"--address {address}: no Ray head answers there ({exc})") from None


def make_engine(name: str = "local", address: str | None = None, workers: int | None = None,
                cpus_per_worker: float = 1.0, quiet: bool = False) -> Engine:
    """The engine called ``name`` (``local`` or ``ray``); ``address`` is Ray's only."""
    if name not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {name!r}")
    if name == "local":
        if address is not None:
            raise ValueError("--address needs --engine ray")
        return LocalEngine(workers or 1)
    return RayEngine(address=address, workers=workers, cpus_per_worker=cpus_per_worker,
                     quiet=quiet)


class _InOrder:
    """Shard outputs put back into input order: each input's key is noted as it is read;
    outputs wait here only until every earlier one is back."""

    def __init__(self) -> None:
        self.order: deque[str] = deque()
        self.ready: dict[str, pa.Table] = {}
        self.wanted: Counter[str] = Counter()  # a shard given twice is run once

    def expect(self, key: str) -> None:
        self.order.append(key)
        self.wanted[key] += 1

    def release(self) -> Iterator[pa.Table]:
        """The outputs now at the head of the order."""
        while self.order and self.order[0] in self.ready:
            key = self.order.popleft()
            self.wanted[key] -= 1
            yield self.ready[key] if self.wanted[key] else self.ready.pop(key)


def iter_stage(stage: Stage, inputs: Iterable[pa.Table], engine: Engine,
               store: ShardStore | str | Path | None = None, show_progress: bool = False,
               total: int | None = None) -> Iterator[pa.Table]:
    """``stage`` applied to every input table through ``engine``, yielding the outputs in
    input order as they become available. Inputs are read only as the engine takes work, so
    memory holds the shards in flight, not the corpus. With a ``store`` (or its folder),
    finished shards are read back instead of recomputed and new ones are written there as
    they arrive. ``total``: the number of inputs, for the progress bar."""
    if store is not None and not isinstance(store, ShardStore):
        store = ShardStore(store)
    fingerprint = stage.fingerprint()
    out = _InOrder()
    running: set[str] = set()
    reused = 0

    def todo() -> Iterator[tuple[str, bytes]]:
        nonlocal reused
        for table in inputs:
            payload = table_bytes(table)
            key = shard_key(fingerprint, payload)
            out.expect(key)
            if key in out.ready or key in running:
                continue
            done = store.get(key) if store is not None else None
            if done is not None:
                out.ready[key] = done
                reused += 1
            else:
                running.add(key)
                yield key, payload

    with tqdm(total=total, desc=f"{stage.name}[{engine.name}]", unit="shard",
              disable=not show_progress, leave=False) as bar:
        for key, table in engine.map(stage, todo()):
            if store is not None:
                store.put(key, table)
            running.discard(key)
            out.ready[key] = table
            for done in out.release():
                bar.update()
                yield done
        for done in out.release():
            bar.update()
            yield done
    if out.order:
        raise RuntimeError(f"{stage.name}: {len(out.order)} shard(s) came back without output")
    if store is not None and reused:
        logger.info("%s: %d shards reused from %s", stage.name, reused, store.folder)


def run_stage(stage: Stage, inputs: Iterable[pa.Table], engine: Engine,
              store: ShardStore | str | Path | None = None, show_progress: bool = False
              ) -> list[pa.Table]:
    """``iter_stage``'s outputs as a list, in input order."""
    return list(iter_stage(stage, inputs, engine, store, show_progress))
