"""``FacetEncoder``: a trained multi-facet model as a phrasekit encoder plus its facet scores.

``phrasekit.load(model_folder)`` returns one. ``encode`` is the paper's **Emb** (the mean of
the encoder's contextual word vectors, L2-normalised), so the model drops into every
cosine-based benchmark. ``facets`` gives the K unit codebook embeddings F_u in the word space,
and the methods below are the paper's uses of them (formulas in :mod:`.scores`):

- ``sc_similarity(a, b)``: -SC (Eq. 5) of aligned pairs;
- ``asym_score(hypo, hyper)``: Eq. 7, > 0 when ``hyper`` looks like the hypernym;
- ``word_importance(text)``: Eq. 6 weights of a text's words;
- ``nearest_words(facets)`` / ``describe(text)``: each facet's nearest words with cosines
  (the paper's Table 1).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from phrasekit.encoders.base import Encoder, validate_texts
from phrasekit.encoders.facets import scores
from phrasekit.encoders.facets.model import FacetModel, FacetOutput, load_facet_model, make_batch
from phrasekit.encoders.facets.words import WordSpace
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.settings import torch_threads
from phrasekit.text import tokenize

logger = logging.getLogger(__name__)

#: Nearest words are searched among this many most frequent GloVe words (rarer entries are
#: mostly names, typos and foreign tokens that make facets hard to read).
NEAREST_VOCAB = 50_000


class FacetEncoder(Encoder):
    """A facet model with its word space; Emb vectors via ``encode``, facets via ``facets``."""

    default_batch_size = 256

    def __init__(self, model: FacetModel, word_space: WordSpace,
                 word_counts: np.ndarray | None = None, name: str = "facets",
                 config: dict[str, Any] | None = None, num_threads: int | None = None,
                 score_steps: int = scores.SCORE_STEPS) -> None:
        self.model = model.eval()
        self.word_space = word_space
        self.word_counts = word_counts
        self.name = name
        self.dim = int(model.config.hidden_dim)
        self.config = dict(config or {})
        self.num_threads = num_threads
        self.score_steps = int(score_steps)
        self.model_path: Path | None = None
        self._probs: np.ndarray | None = None

    @classmethod
    def from_pretrained(cls, path: str | Path, name: str | None = None,
                        num_threads: int | None = None, precision: str = "fp32",
                        ) -> FacetEncoder:
        """Load a model folder written by :func:`.save_facet_model`."""
        if precision != "fp32":
            raise ValueError(f"facet models support precision fp32 only, got {precision!r}")
        model, word_space, counts, config = load_facet_model(path)
        enc = cls(model, word_space, counts, name=name or Path(path).name, config=config,
                  num_threads=num_threads)
        enc.model_path = Path(path)
        logger.info("loaded facet model %s (%s, K=%d)", path, model.config.granularity,
                    model.n_facets)
        return enc

    @property
    def n_facets(self) -> int:
        return self.model.n_facets

    @property
    def granularity(self) -> str:
        return self.model.config.granularity

    def __repr__(self) -> str:
        return (f"FacetEncoder(name={self.name!r}, {self.granularity}, K={self.n_facets}, "
                f"dim={self.dim})")

    # ------------------------------------------------------------------ forward passes
    def _sort_key(self, text: str) -> int:
        return len(text.split())

    def _forward(self, texts: Sequence[str]) -> FacetOutput:
        ids = [self.word_space.text_ids(t) for t in texts]
        with torch.inference_mode(), torch_threads(self.num_threads):
            return self.model(make_batch(ids, self.model.config.max_len))

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        return self._forward(texts).embedding.numpy()

    def facets(self, texts: str | Iterable[str], batch_size: int | None = None,
               show_progress: bool = False) -> np.ndarray:
        """(n, K, word_dim) float32 unit facets F_u of each text, in input order."""
        items = validate_texts(texts)
        out = np.zeros((len(items), self.n_facets, self.word_space.dim), dtype=np.float32)
        for idx in self._batches(items, batch_size, f"facets[{self.name}]", show_progress):
            out[idx] = self._forward([items[i] for i in idx]).unit_facets.numpy()
        return out

    # ------------------------------------------------------------------ words
    def word_vectors(self, text: str, content_only: bool = True) -> tuple[list[str], np.ndarray]:
        """The known words of ``text`` and their unit vectors (N, d): content words only
        (no stop words) unless there are none or ``content_only`` is False."""
        ws = self.word_space
        ids = ws.text_ids(text, unknown=None)
        if content_only:
            content = [i for i in ids if ws.is_content(ws.words[i])]
            ids = content or ids
        return [ws.words[i] for i in ids], ws.unit[ids] if ids else np.zeros((0, ws.dim),
                                                                             np.float32)

    def word_probabilities(self) -> np.ndarray:
        """p(w) over the word space: the training corpora's counts, Zipf's estimate elsewhere."""
        if self._probs is None:
            self._probs = self.word_space.probabilities(self.word_counts)
        return self._probs

    # ------------------------------------------------------------------ scores
    def sc_similarity(self, a: str | Iterable[str], b: str | Iterable[str]) -> np.ndarray:
        """-SC (Eq. 5) of each aligned pair ``(a[i], b[i])``: higher is more similar."""
        left, right = validate_texts(a), validate_texts(b)
        if len(left) != len(right):
            raise ValueError(f"a and b must be aligned: {len(left)} vs {len(right)} texts")
        if not left:
            return np.zeros(0, dtype=np.float32)
        fa, fb = self._facets_of(left + right, len(left))
        return -scores.sc_distance(fa, fb, steps=self.score_steps)

    def asym_score(self, hypo: str | Iterable[str], hyper: str | Iterable[str]) -> np.ndarray:
        """Eq. 7 of each aligned pair: > 0 when ``hyper[i]`` looks like a hypernym of
        ``hypo[i]`` (its words are rebuilt well by the hyponym's facets, not vice versa)."""
        lo, hi = validate_texts(hypo), validate_texts(hyper)
        if len(lo) != len(hi):
            raise ValueError(f"hypo and hyper must be aligned: {len(lo)} vs {len(hi)} texts")
        if not lo:
            return np.zeros(0, dtype=np.float32)
        f_lo, f_hi = self._facets_of(lo + hi, len(lo))
        w_lo = [self._known_words(t, i, "hypo")[1] for i, t in enumerate(lo)]
        w_hi = [self._known_words(t, i, "hyper")[1] for i, t in enumerate(hi)]
        return scores.asym_scores(f_lo, w_lo, f_hi, w_hi, steps=self.score_steps)

    def word_importance(self, text: str) -> list[tuple[str, float]]:
        """Eq. 6: every known word of ``text`` (stop words included) with its importance."""
        (item,) = validate_texts([text])
        words, vecs = self.word_vectors(item, content_only=False)
        if not words:
            return []
        weights = scores.word_importance(vecs, self.facets([item])[0])
        return [(w, float(x)) for w, x in zip(words, weights, strict=True)]

    def nearest_words(self, facet_vectors: np.ndarray, n: int = 5,
                      vocab_limit: int | None = NEAREST_VOCAB) -> list[list[tuple[str, float]]]:
        """The ``n`` nearest words (cosine) of each vector in ``facet_vectors`` ((K, d) or
        (d,)), among the ``vocab_limit`` most frequent words of the word space."""
        vecs = np.asarray(facet_vectors, dtype=np.float32)
        if vecs.ndim == 1:
            vecs = vecs[None, :]
        if vecs.ndim != 2 or vecs.shape[1] != self.word_space.dim:
            raise ValueError(f"facet_vectors must be (K, {self.word_space.dim}), "
                             f"got {vecs.shape}")
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        table = self.word_space.unit[: vocab_limit or len(self.word_space)]
        sims = l2_normalize(vecs) @ table.T
        top = np.argsort(-sims, axis=1)[:, :n]
        words = self.word_space.words
        return [[(words[j], float(sims[r, j])) for j in row] for r, row in enumerate(top)]

    def describe(self, text: str, n: int = 5) -> list[list[tuple[str, float]]]:
        """Table 1 for one text: per facet, its ``n`` nearest words with cosines."""
        (item,) = validate_texts([text])
        return self.nearest_words(self.facets([item])[0], n=n)

    # ------------------------------------------------------------------ helpers
    def _facets_of(self, texts: list[str], split: int) -> tuple[np.ndarray, np.ndarray]:
        """Facets of ``texts`` (each distinct text once), cut into the first ``split`` rows
        and the rest."""
        unique = list(dict.fromkeys(texts))
        pos = {t: i for i, t in enumerate(unique)}
        f = self.facets(unique)[[pos[t] for t in texts]]
        return f[:split], f[split:]

    def _known_words(self, text: str, i: int, side: str) -> tuple[list[str], np.ndarray]:
        words, vecs = self.word_vectors(text)
        if not words:
            raise ValueError(f"{side}[{i}] {text!r} has no word in the {self.word_space.name} "
                             f"vocabulary (tokens: {tokenize(text)[:5]})")
        return words, vecs


def format_facet_table(text: str, table: Sequence[Sequence[tuple[str, float]]]) -> str:
    """Table 1 as text: the input, then one line per facet with its nearest words, e.g.
    ``e1  government 0.817, civil 0.762, citizens 0.748``."""
    lines = [f"{text} <eos>"]
    width = len(f"e{len(table)}")
    for k, row in enumerate(table, start=1):
        words = ", ".join(f"{w} {c:.3f}" for w, c in row)
        lines.append(f"{f'e{k}':<{width}}  {words}")
    return "\n".join(lines)
