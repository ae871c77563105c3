"""Placing documents in fitted document topics: the documents outside the fitted sample
(streamed in blocks, by the student or the encoder), and document vectors against the
topics' centres (``transform``, ``applied_to``); documents with no word the model knows are
left unassigned (``topics.core.placement``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

import numpy as np
from tqdm.auto import tqdm

from phrasekit.encoders.cache import iter_document_vectors
from phrasekit.io import Document, iter_known_documents
from phrasekit.text import TokenDocs
from phrasekit.topics.core.placement import ASSIGN_BLOCK, place, sq_distances, without_unknown
from phrasekit.topics.core.terms import presence_matrix
from phrasekit.topics.exploration.explore import NearestDocs


class TopicPlacer:
    """Mixin of :class:`~phrasekit.topics.DocumentTopicModel`: placing documents."""

    def _assign_rest(self, docs: Iterable[Document | str], show_progress: bool,
                     given: np.ndarray | None = None) -> None:
        """The documents outside the sample, streamed in blocks: placed (``given``: every
        document's vector, else by the student or encoded), with their nearest topic, shares
        and term count; topic sizes and typical documents (``typical_texts_``: the texts of
        those outside the sample) over all of them."""
        n, k, index = len(self.doc_ids_), self.n_topics_, self.sample_index_
        labels = np.full(n, -1, dtype=np.int64)
        shares = np.zeros((n, k), dtype=np.float32)
        n_terms = np.zeros(n, dtype=np.int64)
        labels[index], shares[index] = self.doc_labels_, self.doc_topics_
        n_terms[index] = self.doc_n_phrases_
        nearest = NearestDocs(k, self.n_typical)
        nearest.add(index, labels[index], sq_distances(self.doc_embeddings_,
                                                        self.cluster_centers_))
        in_sample = np.zeros(n, dtype=bool)
        in_sample[index] = True
        again = iter_known_documents(docs, self.doc_ids_, "the corpus changed while it was read")
        rest = ((i, d.text) for i, d in again if not in_sample[i])
        blocks = iter(lambda: list(islice(rest, ASSIGN_BLOCK)), [])
        kept: dict[int, str] = {}
        for block, rows, d2, block_shares in self._placed_blocks(blocks, show_progress, given):
            shares[rows] = block_shares
            labels[rows] = np.where(block_shares.any(axis=1), block_shares.argmax(axis=1), -1)
            P = presence_matrix(TokenDocs(t for _, t in block), self.vocabulary_.terms, "csr")
            n_terms[rows] = np.asarray(P.sum(axis=1)).ravel()
            if d2 is not None:  # typical documents are judged on transformer vectors only
                nearest.add(rows, labels[rows], d2)
                texts = {**kept, **dict(block)}  # keep only the typical ones' texts
                kept = {r: texts[r] for r in map(int, np.concatenate(nearest.rows))
                        if r in texts}
        self.doc_labels_, self.doc_topics_, self.doc_n_phrases_ = labels, shares, n_terms
        self.topic_doc_counts_ = [int(x) for x in np.bincount(labels[labels >= 0], minlength=k)]
        self.typical_docs_ = [[(int(d), round(float(shares[d, t]), 4)) for d in nearest.rows[t]]
                              for t in range(k)]
        self.typical_texts_ = kept

    def _placed_blocks(self, blocks: Iterable[list[tuple[int, str]]], show_progress: bool,
                       given: np.ndarray | None = None
                       ) -> Iterator[tuple[list[tuple[int, str]], np.ndarray, np.ndarray | None,
                                           np.ndarray]]:
        """``(block, rows, squared distances or None, shares)`` of each block of documents
        outside the sample: placed by their ``given`` vectors, by the student, or encoded and
        placed by the encoder."""
        if given is not None:
            for block in blocks:
                rows = np.asarray([i for i, _ in block], dtype=np.int64)
                _, d2, block_shares = self._place(given[rows])
                yield block, rows, d2, block_shares
            return
        if self.placement == "student":
            bar = tqdm(blocks, desc="topics[student]", unit="block", disable=not show_progress,
                       leave=False)
            for block in bar:
                rows = np.asarray([i for i, _ in block], dtype=np.int64)
                yield block, rows, None, self.student_.predict_proba([t for _, t in block])
            return
        max_words = getattr(self, "max_words", None)
        for block, X in iter_document_vectors(self.encoder_, blocks,
                                              lambda b: [t for _, t in b], self.chunk_size,
                                              self.max_chunks, show_progress,
                                              max_words=max_words):
            X = without_unknown(self.encoder_, X, [t for _, t in block], self.chunk_size,
                                self.max_chunks, max_words)
            _, d2, block_shares = self._place(X)
            yield block, np.asarray([i for i, _ in block], dtype=np.int64), d2, block_shares

    def _place(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Document vectors against the fitted topics (``placement.place``)."""
        return place(X, self.doc_mean_, self.cluster_centers_)

