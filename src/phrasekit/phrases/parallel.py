"""spaCy over worker processes that return what the caller keeps, not parsed documents.

spaCy's own ``nlp.pipe(n_process=N)`` tokenizes and serializes every text in the calling
process and sends back whole parsed ``Doc`` objects, which that process reads again: on two
cores the calling process is the bottleneck (1,000 bbc_news articles, tagger only: 15.9 s
with two workers against 21.0 s with none). Here each forked worker tokenizes, parses and
reads its own share of the texts, and returns only the small results (phrase occurrences,
keyphrase candidates).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, TypeVar

from phrasekit.encoders.allocator import keep_freed_memory

#: Linux's prctl option: the signal a process gets when its parent dies.
PR_SET_PDEATHSIG = 1
#: Tasks per worker: smaller shares balance the workers and move the progress bar.
TASKS_PER_WORKER = 4

Piece = tuple[str, Any]
R = TypeVar("R")
T = TypeVar("T")


def shares(pieces: Sequence[Piece], n: int,
           unit: Callable[[Piece], Hashable] | None = None) -> list[list[Piece]]:
    """``pieces`` (``(text, key)``) cut into at most ``n`` runs of about equal characters, in
    order; with ``unit``, never between two pieces of the same unit (one document's parts)."""
    total = sum(len(p[0]) for p in pieces)
    out: list[list[Piece]] = [[]]
    done = 0
    for piece in pieces:
        full = done >= total * len(out) / n and out[-1]
        if full and (unit is None or unit(piece) != unit(out[-1][-1])):
            out.append([])
        out[-1].append(piece)
        done += len(piece[0])
    return out


def pooled(owner: Any, tasks: Sequence[T], work: Callable[[Any, T], R], n_process: int,
           meanwhile: Callable[[], object] | None = None) -> Iterator[R]:
    """``work(owner, task)`` of every task, in ``n_process`` forked workers (each inherits
    ``owner``'s loaded spaCy pipeline), in the order the tasks finish. ``meanwhile`` runs in
    this process once the workers have forked (loading a model there costs the workers
    part of one core instead of the run one core's time on its own)."""
    owner.nlp  # loaded here, so that forked workers inherit it  # noqa: B018
    keep_freed_memory()
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    # Frozen objects (the loaded pipelines and models) are never scanned by the workers'
    # garbage collector, nor their pages copied for it: 1,000 bbc_news articles, 4% less CPU
    # (benchmarks/speed/keyphrase_candidates_speed.py).
    gc.freeze()
    pool = ProcessPoolExecutor(n_process, mp_context=ctx, initializer=_worker_start,
                               initargs=(os.getpid(),))
    try:
        futures = [pool.submit(work, owner, task) for task in tasks]
        if meanwhile is not None:
            meanwhile()
        pending = set(futures)
        while pending:  # woken twice a second, so that Ctrl-C and SIGTERM are seen at once
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    except BaseException:  # Ctrl-C, SIGTERM, an error: leave now, not after the whole parse
        _stop(pool)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        gc.unfreeze()


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel a pool's pending shares and end its workers now (the pool offers no public way
    to end the running ones, which shutting down would wait for)."""
    pool.shutdown(wait=False, cancel_futures=True)
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _worker_start(parent: int) -> None:
    """Each worker dies with ``parent`` (so a ``kill -9`` of a command leaves no worker behind,
    waiting forever on its task queue), takes SIGTERM's default action, and multiplies on one
    thread: the workers already use every core."""
    from threadpoolctl import threadpool_limits

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)
    threadpool_limits(1)


def _occurrences_task(extractor: Any, task: tuple[list[Piece], int, bool]
                      ) -> list[tuple[tuple[int, int], list[Any]]]:
    """One worker's share for ``PhraseExtractor``: every piece's ``(key, occurrences)``."""
    pieces, batch_size, positions = task
    nlp = extractor.nlp
    strings: dict[str, str] = {}
    with nlp.memory_zone():
        return [(key, extractor._occurrences_of(sdoc, key[1], positions, strings))
                for sdoc, key in nlp.pipe(pieces, as_tuples=True, batch_size=batch_size)]


def pooled_occurrences(extractor: Any, groups: Sequence[tuple[Sequence[Piece], int]],
                       n_process: int, positions: bool, strings: dict[str, str]
                       ) -> Iterator[tuple[tuple[int, int], list[Any]]]:
    """``(key, occurrences)`` of every piece of a ``PhraseExtractor``, ``groups`` of pieces
    each with its ``nlp.pipe`` batch size, parsed in one pool of ``n_process`` workers; equal
    strings are stored once, in ``strings``."""
    tasks = [(task, batch_size, positions) for pieces, batch_size in groups
             for task in shares(pieces, n_process * TASKS_PER_WORKER)]
    for done in pooled(extractor, tasks, _occurrences_task, n_process):
        for key, found in done:
            yield key, [tuple(strings.setdefault(t, t) if isinstance(t, str) else t
                              for t in m) for m in found]
