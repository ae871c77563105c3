"""Phrase extraction over worker processes that return occurrences, not parsed documents.

spaCy's own ``nlp.pipe(n_process=N)`` tokenizes and serializes every document in the calling
process and sends back whole parsed ``Doc`` objects, which that process reads again: on two
cores the calling process is the bottleneck (1,000 bbc_news articles: 15.9 s with two
workers against 21.0 s with none). Here each worker tokenizes, tags and finds the phrases of
its own share of the pieces, and returns only the occurrence tuples.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

#: Tasks per worker: smaller shares balance the workers and move the progress bar.
TASKS_PER_WORKER = 4

Piece = tuple[str, tuple[int, int]]


def _shard_occurrences(extractor: Any, pieces: list[Piece], batch_size: int,
                       positions: bool) -> list[tuple[tuple[int, int], list[Any]]]:
    """One worker's share: every piece's ``(key, occurrences)`` (see ``PhraseExtractor``)."""
    nlp = extractor.nlp
    strings: dict[str, str] = {}
    with nlp.memory_zone():
        return [(key, extractor._occurrences_of(sdoc, key[1], positions, strings))
                for sdoc, key in nlp.pipe(pieces, as_tuples=True, batch_size=batch_size)]


def shares(pieces: Sequence[Piece], n: int) -> list[list[Piece]]:
    """``pieces`` cut into ``n`` runs of about equal characters, in order."""
    total = sum(len(p[0]) for p in pieces)
    out: list[list[Piece]] = [[]]
    done = 0
    for piece in pieces:
        if done >= total * len(out) / n and out[-1]:
            out.append([])
        out[-1].append(piece)
        done += len(piece[0])
    return out


def pooled_occurrences(extractor: Any, pieces: Sequence[Piece], batch_size: int,
                       n_process: int, positions: bool, strings: dict[str, str]
                       ) -> Iterator[tuple[tuple[int, int], list[Any]]]:
    """``(key, occurrences)`` of every piece, parsed in ``n_process`` forked workers (each
    inherits the loaded spaCy pipeline); equal strings are stored once, in ``strings``."""
    extractor.nlp  # loaded here, so that forked workers inherit it  # noqa: B018
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    tasks = shares(pieces, n_process * TASKS_PER_WORKER)
    with ProcessPoolExecutor(n_process, mp_context=ctx) as pool:
        futures = [pool.submit(_shard_occurrences, extractor, task, batch_size, positions)
                   for task in tasks]
        for future in as_completed(futures):
            for key, found in future.result():
                yield key, [tuple(strings.setdefault(t, t) if isinstance(t, str) else t
                                  for t in m) for m in found]
