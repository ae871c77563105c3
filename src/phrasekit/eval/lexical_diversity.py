"""Lexical diversity of nearest neighbours (Phrase-BERT, Wang et al. 2021, §5.3 and Table 4).

A phrase space whose nearest neighbours merely repeat the query's words ("interest rates" ->
"interest rate", "higher interest rates") adds little when exploring a corpus; one that also
finds "borrowing costs" and "inflation" captures meaning beyond string overlap. Protocol:

1. a vocabulary of the most frequent words and phrases of a corpus (``build_vocabulary``:
   word types and spaCy noun-chunk / entity phrases, as Phrase-BERT's appendix A.2 does with a
   constituency parser) and source phrases sampled from its multi-word entries
   (``sample_sources``, seeded);
2. each source's top-``k`` (10) vocabulary entries by cosine, the source itself excluded (exact
   match after lower-casing and whitespace normalisation);
3. three metrics per (source, neighbour) pair, averaged over a source's neighbours and then
   over sources (``lexical_diversity``):

   - **% new unigrams** (higher = more diverse): the number of *distinct* neighbour tokens that
     do not occur in the source, divided by the neighbour's length in tokens, x 100
     ("interest rate" -> "rate rises": 1 new type / 2 tokens = 50 %);
   - **LCS-precision** (lower = more diverse): length of the longest common *token* subsequence
     of source and neighbour divided by the neighbour's length in tokens, x 100;
   - **Levenshtein** (higher = more diverse): character edit distance (unit-cost insert,
     delete, substitute) between the normalised source and neighbour strings.

Tokens are the lower-cased word-character runs of a text (inner ``'``, ``-``, ``.`` kept:
"4's", "e-mail", "u.s"); a text without any falls back to its whitespace tokens. The paper
does not define its normalisations exactly (its "% new tokens" of about 5 is not on the same
scale as ours), so compare models within one run, not with the paper's numbers.
"""

from __future__ import annotations

import functools
import gzip
import json
import logging
import random
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz.distance import LCSseq, Levenshtein
from tqdm.auto import tqdm

from phrasekit.encoders.base import Encoder, known_rows, validate_texts
from phrasekit.encoders.cache import encode_cached
from phrasekit.io import Document, input_problem
from phrasekit.paths import utf8_problem
from phrasekit.phrases import PhraseVocabulary, frequent_ngrams
from phrasekit.similarity.index import VectorIndex
from phrasekit.tables import FORMAT_NAMES

logger = logging.getLogger(__name__)

DEFAULT_K = 10

_TOKEN_RE = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*", re.UNICODE)

Neighbor = tuple[str, float]


# ---------------------------------------------------------------------------- string metrics
def normalize_text(text: str) -> str:
    """Lower-cased text with runs of whitespace collapsed (the form compared for self-matches)."""
    return " ".join(text.lower().split())


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (whitespace tokens when it has no word characters)."""
    tokens = _TOKEN_RE.findall(text.lower())
    tokens = tokens if tokens else normalize_text(text).split()
    if not tokens:
        raise ValueError(f"cannot measure an empty text: {text!r}")
    return tokens


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of two strings or token lists."""
    return LCSseq.similarity(a, b)


def levenshtein(a: str, b: str) -> int:
    """Character edit distance between ``a`` and ``b`` (unit-cost insert, delete, substitute)."""
    return Levenshtein.distance(a, b)


def new_unigram_share(source: str, neighbor: str) -> float:
    """Distinct neighbour tokens absent from the source, over the neighbour's token count (0-1)."""
    src = set(tokenize(source))
    toks = tokenize(neighbor)
    return len(set(toks) - src) / len(toks)


def lcs_precision(source: str, neighbor: str) -> float:
    """Longest common token subsequence of source and neighbour over the neighbour's length."""
    toks = tokenize(neighbor)
    return lcs_length(tokenize(source), toks) / len(toks)


def pair_metrics(source: str, neighbor: str) -> tuple[float, float, int]:
    """(new-unigram share, LCS-precision, Levenshtein distance) of one (source, neighbour)."""
    return (
        new_unigram_share(source, neighbor),
        lcs_precision(source, neighbor),
        levenshtein(normalize_text(source), normalize_text(neighbor)),
    )


# ---------------------------------------------------------------------------- neighbour search
def _check_k(k: int) -> int:
    """``k`` as an int >= 1, or a ValueError."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def search_neighbors(
    query_vecs: np.ndarray,
    queries: Sequence[str],
    vocab_vecs: np.ndarray,
    vocab_texts: Sequence[str],
    k: int = DEFAULT_K,
    show_progress: bool = False,
) -> list[list[Neighbor]]:
    """Top-``k`` ``(text, cosine)`` vocabulary entries per query vector, the query text excluded.

    Exact search (``VectorIndex``); vocabulary entries equal to the query after
    ``normalize_text`` are skipped, so each query gets ``min(k, other entries)`` neighbours.
    """
    k = _check_k(k)
    if len(vocab_texts) == 0:
        raise ValueError("the vocabulary is empty")
    if len(query_vecs) != len(queries) or len(vocab_vecs) != len(vocab_texts):
        raise ValueError(
            f"{len(query_vecs)} query vectors for {len(queries)} queries, "
            f"{len(vocab_vecs)} vocabulary vectors for {len(vocab_texts)} entries"
        )
    norm_vocab = [normalize_text(t) for t in vocab_texts]
    copies: dict[str, int] = {}
    for t in norm_vocab:
        copies[t] = copies.get(t, 0) + 1
    norm_queries = [normalize_text(q) for q in queries]
    extra = max((copies.get(q, 0) for q in norm_queries), default=0)
    scores, ids = VectorIndex(vocab_vecs).search(query_vecs, k + extra, show_progress=show_progress)
    out: list[list[Neighbor]] = []
    for qi, q in enumerate(norm_queries):
        hits = [
            (vocab_texts[j], float(s))
            for s, j in zip(scores[qi], ids[qi], strict=True)
            if j >= 0 and norm_vocab[j] != q
        ][:k]
        if not hits:
            raise ValueError(f"the vocabulary has no entry other than the query {queries[qi]!r}")
        out.append(hits)
    return out


def nearest_neighbors(
    encoder: Encoder | Callable[[], Encoder],
    query: str,
    vocab_texts: Sequence[str],
    k: int = DEFAULT_K,
    batch_size: int | None = None,
    show_progress: bool = False,
    cache: str | Path | None = None,
    query_cache: str | Path | None = None,
) -> list[Neighbor]:
    """The ``k`` vocabulary entries closest to ``query`` by cosine, best first, query excluded.

    ``cache``: an ``.npz`` file keeping the vocabulary's vectors (checked, keyed by text and
    encoder name), so the next query on the same vocabulary encodes only the query;
    ``query_cache``: the same for queries outside the vocabulary. ``encoder`` may be a function
    returning the encoder (see :func:`encode_cached`): with every vector cached, it is never
    called, so a repeated query loads no model.
    """
    k = _check_k(k)
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    (query,) = validate_texts([query])
    texts = validate_texts(vocab_texts)
    if not texts:
        raise ValueError("the vocabulary is empty")
    if not hasattr(encoder, "encode"):  # a loader: load at most once for both lookups
        encoder = functools.cache(encoder)
    vocab_vecs = encode_cached(encoder, texts, cache, show_progress=show_progress,
                               batch_size=batch_size or 256)
    rows = [i for i, t in enumerate(texts) if t == query][:1]
    query_vec = vocab_vecs[rows] if rows else \
        encode_cached(encoder, [query], query_cache, show_progress=False)
    return search_neighbors(query_vec, [query], vocab_vecs, texts, k)[0]


# ---------------------------------------------------------------------------- the analysis
@dataclass
class DiversityResult:
    """Lexical-diversity metrics of one encoder (means over sources; see the module docstring)."""

    model: str
    k: int
    n_sources: int
    n_vocab: int
    new_unigram_pct: float
    lcs_precision_pct: float
    levenshtein: float
    mean_cosine: float
    skipped_sources: list[str] = field(default_factory=list)
    neighbors: dict[str, list[Neighbor]] = field(default_factory=dict)

    def to_dict(self, with_neighbors: bool = True) -> dict[str, Any]:
        """JSON-ready dict (neighbour lists as ``[text, cosine]`` pairs, optionally left out)."""
        out = asdict(self)
        out["neighbors"] = (
            {s: [[t, round(c, 6)] for t, c in hits] for s, hits in self.neighbors.items()}
            if with_neighbors
            else {}
        )
        return out


def lexical_diversity(
    encoder: Encoder,
    vocab_texts: Sequence[str],
    sources: Sequence[str],
    k: int = DEFAULT_K,
    batch_size: int | None = None,
    show_progress: bool = False,
    vocab_vecs: np.ndarray | None = None,
) -> DiversityResult:
    """Nearest-neighbour lexical diversity of ``encoder`` for ``sources`` over ``vocab_texts``.

    ``vocab_vecs`` (the encoder's vectors of ``vocab_texts``) may be passed to skip encoding the
    vocabulary. Sources the encoder knows nothing of (e.g. no GloVe word known) have no meaningful
    neighbours: they are left out and listed in ``skipped_sources``.
    """
    k = _check_k(k)
    vocab = validate_texts(vocab_texts)
    if not vocab:
        raise ValueError("the vocabulary is empty")
    srcs = validate_texts(sources)
    if not srcs:
        raise ValueError("no source phrases given")
    if vocab_vecs is None:
        vocab_vecs = encoder.encode(vocab, batch_size=batch_size, show_progress=show_progress)
    elif len(vocab_vecs) != len(vocab):
        raise ValueError(f"{len(vocab_vecs)} vocabulary vectors for {len(vocab)} entries")
    src_vecs = encoder.encode(srcs, batch_size=batch_size)
    zero = ~known_rows(encoder, srcs, src_vecs)
    skipped = [s for s, z in zip(srcs, zero, strict=True) if z]
    if skipped:
        logger.warning("%s: %d source(s) have no known word and are skipped (e.g. %r)",
                       getattr(encoder, "name", "encoder"), len(skipped), skipped[0])
    kept = [s for s, z in zip(srcs, zero, strict=True) if not z]
    if not kept:
        raise ValueError("no source phrase has a known word; nothing to measure")
    hits = search_neighbors(src_vecs[~zero], kept, vocab_vecs, vocab, k)
    per_source = np.zeros((len(kept), 4), dtype=np.float64)
    for i, (src, nbrs) in enumerate(tqdm(list(zip(kept, hits, strict=True)), desc="metrics",
                                         unit="source", disable=not show_progress, leave=False)):
        rows = [pair_metrics(src, text) for text, _ in nbrs]
        per_source[i, :3] = np.mean(rows, axis=0)
        per_source[i, 3] = np.mean([c for _, c in nbrs])
    means = per_source.mean(axis=0)
    return DiversityResult(
        model=str(getattr(encoder, "name", type(encoder).__name__)),
        k=k,
        n_sources=len(kept),
        n_vocab=len(vocab),
        new_unigram_pct=float(100.0 * means[0]),
        lcs_precision_pct=float(100.0 * means[1]),
        levenshtein=float(means[2]),
        mean_cosine=float(means[3]),
        skipped_sources=skipped,
        neighbors=dict(zip(kept, hits, strict=True)),
    )


# ---------------------------------------------------------------------------- vocabulary
def build_vocabulary(
    docs: Sequence[Document | str] | None,
    phrase_vocab: PhraseVocabulary,
    size: int = 20_000,
    word_share: float = 0.4,
    min_count: int = 5,
) -> list[str]:
    """The ``size`` most frequent words and multi-word phrases of a corpus (lower-cased keys).

    Words: alphabetic word types of ``docs`` seen at least ``min_count`` times, stop words and
    single letters dropped (``frequent_ngrams``), most frequent first, at most
    ``word_share * size`` of them (without ``docs``: the single-word entries of
    ``phrase_vocab``). Phrases: the multi-word entries of ``phrase_vocab`` (noun chunks and
    entities) in its rank order, filling the rest.
    Phrase-BERT's vocabulary is built the same way (word types + most frequent phrases).
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    if not 0.0 <= word_share <= 1.0:
        raise ValueError(f"word_share must be in [0, 1], got {word_share}")
    n_words = round(word_share * size)
    if docs is not None:
        rows = frequent_ngrams(docs, n_range=(1, 1), min_count=min_count, min_df=1)
        words = [w for w, _, _ in rows if len(w) > 1][:n_words]
    else:
        words = [w for i, w in enumerate(phrase_vocab.phrases)
                 if phrase_vocab.is_word(i) and phrase_vocab.counts[i] >= min_count][:n_words]
    seen = {normalize_text(w) for w in words}
    phrases: list[str] = []
    for p in phrase_vocab.multiword():
        if len(words) + len(phrases) >= size:
            break
        key = normalize_text(p)
        if key not in seen:
            seen.add(key)
            phrases.append(p)
    vocab = words + phrases
    if not vocab:
        raise ValueError("no words or phrases found for the vocabulary")
    logger.info("vocabulary: %d words + %d phrases", len(words), len(phrases))
    return vocab


def sample_sources(
    candidates: Sequence[str], n: int, seed: int = 0, min_tokens: int = 2
) -> list[str]:
    """``n`` distinct multi-word phrases (>= ``min_tokens`` tokens) drawn from ``candidates``."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    pool = list(dict.fromkeys(c for c in candidates if len(c.split()) >= min_tokens))
    if not pool:
        raise ValueError(f"no candidate phrase has {min_tokens} or more tokens")
    if len(pool) < n:
        logger.warning("only %d multi-word candidates; using all of them as sources", len(pool))
        n = len(pool)
    return random.Random(seed).sample(pool, n)


def read_vocabulary_file(path: str | Path, max_entries: int | None = None) -> list[str]:
    """Vocabulary texts from a file: a ``PhraseVocabulary`` JSON (``.json`` / ``.json.gz``:
    most frequent surface forms, in rank order) or plain text (one entry per non-empty line).

    Entries equal after ``normalize_text`` are kept once (the first); ``max_entries`` keeps the
    first that many.
    """
    path = Path(path)
    problem = input_problem(path, "vocabulary file")
    if problem is not None:
        raise FileNotFoundError(problem)
    if max_entries is not None and max_entries < 1:
        raise ValueError(f"max_entries must be >= 1, got {max_entries}")
    name = path.name.lower()
    plain = name.removesuffix(".gz")
    kind = Path(plain).suffix
    if kind in FORMAT_NAMES and kind not in (".json", ".txt", ".gz"):
        raise ValueError(f"{path}: a vocabulary is plain text (one entry per line) or a phrase "
                         f"vocabulary JSON from `phrasekit phrases`, not {FORMAT_NAMES[kind]}")
    try:
        if name.endswith((".json", ".json.gz")):
            try:
                texts = PhraseVocabulary.read_surface(path)
            except (json.JSONDecodeError, KeyError, TypeError, gzip.BadGzipFile, EOFError) as exc:
                raise ValueError(f"{path}: not a phrase vocabulary JSON ({exc})") from exc
        else:
            opener = gzip.open if name.lower().endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8-sig", newline="\n") as fh:  # BOM: no entry
                texts = [line.strip() for line in fh]
    except UnicodeDecodeError as exc:
        raise ValueError(utf8_problem(str(path), exc, path)) from exc
    out: dict[str, str] = {}
    for t in texts:
        if t and t.strip():
            out.setdefault(normalize_text(t), t.strip())
            if max_entries is not None and len(out) >= max_entries:
                break
    if not out:
        raise ValueError(f"{path}: the vocabulary is empty")
    return list(out.values())
