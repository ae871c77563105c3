"""Hard-negative mining for PEARL (paper §3.4): phrases that look alike but mean something else.

For every phrase, candidates are the phrases that share a content word with it (an inverted
index over lower-cased tokens, without stopwords and very frequent words) or many character
trigrams (a cheap stand-in for a small edit distance). Candidates are ranked by surface
similarity (mean of the token Jaccard and the character-trigram Jaccard) and the best
``max_candidates`` are kept; the encoder then scores them, and those with a cosine below
``max_cos`` become hard negatives, lowest cosine first ("The New York Times" -> "New York City",
"New York Post"). The phrase itself, its case / determiner / plural variants ("the new york
times", "New York Time") and any known paraphrase are never returned
(:func:`paraphrase_neighbourhood` gives the phrases within two paraphrase links).

Everything is sparse or batched numpy: the surface similarities come from sparse
phrase-by-feature products and the cosines only from dot products over each candidate list,
so 150k phrases take a minute or two on two cores.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.training.data.sources import english_stop_words, normalize

logger = logging.getLogger(__name__)

_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_DETERMINERS = frozenset({"a", "an", "the"})


def normalize_text(text: str) -> str:
    """Lower-case and collapse whitespace (the key used for paraphrase exclusion)."""
    return " ".join(text.lower().split())


def surface_tokens(text: str) -> list[str]:
    """Lower-cased word tokens of a phrase (hyphenated words split, possessive kept attached)."""
    return _WORD_RE.findall(text.lower().replace("’", "'"))


def _singular(tok: str) -> str:
    """A crude singular form: strips a possessive and a plural ending ("cities" -> "city")."""
    if tok.endswith("'s"):
        tok = tok[:-2]
    if len(tok) > 4 and tok.endswith("ies"):
        return tok[:-3] + "y"
    if len(tok) > 4 and tok.endswith(("ches", "shes", "sses", "xes", "zes")):
        return tok[:-2]
    if len(tok) > 3 and tok.endswith("s") and not tok.endswith(("ss", "us", "is")):
        return tok[:-1]
    return tok


def variant_key(text: str) -> str:
    """Key shared by case, determiner, hyphenation and plural variants of the same phrase."""
    toks = [_singular(t) for t in surface_tokens(text) if t not in _DETERMINERS]
    return " ".join(toks) if toks else normalize_text(text)


def char_trigrams(text: str) -> set[str]:
    """Character trigrams of the normalised phrase, padded with a space on each side."""
    s = f" {normalize_text(text)} "
    return {s[i : i + 3] for i in range(len(s) - 2)}


def _binary_matrix(rows: list[list[int]], n_cols: int) -> sp.csr_matrix:
    """CSR 0/1 matrix from per-row column-id lists (ids already unique per row)."""
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    indices = np.fromiter((c for r in rows for c in r), dtype=np.int32, count=int(indptr[-1]))
    data = np.ones(len(indices), dtype=np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(len(rows), n_cols))


def _features(texts: Sequence[str], stop: frozenset[str]) -> tuple[
    sp.csr_matrix, np.ndarray, sp.csr_matrix, np.ndarray
]:
    """(content-token matrix, token-set sizes, trigram matrix, trigram-set sizes)."""
    tok_ids: dict[str, int] = {}
    tri_ids: dict[str, int] = {}
    tok_rows: list[list[int]] = []
    tri_rows: list[list[int]] = []
    for text in texts:
        toks = {t for t in surface_tokens(text) if t not in stop and len(t) > 1}
        tok_rows.append([tok_ids.setdefault(t, len(tok_ids)) for t in toks])
        tri_rows.append([tri_ids.setdefault(g, len(tri_ids)) for g in char_trigrams(text)])
    tok = _binary_matrix(tok_rows, len(tok_ids))
    tri = _binary_matrix(tri_rows, len(tri_ids))
    tok_sizes = np.diff(tok.indptr).astype(np.float32)
    tri_sizes = np.diff(tri.indptr).astype(np.float32)
    return tok, tok_sizes, tri, tri_sizes


def _keep_columns(m: sp.csr_matrix, max_df: int) -> sp.csc_matrix:
    """``m`` with the columns of document frequency 1 or above ``max_df`` zeroed, as CSC."""
    df = np.diff(m.tocsc().indptr)
    keep = (df >= 2) & (df <= max_df)
    return (m @ sp.diags(keep.astype(np.float32))).tocsr()


def _jaccard(inter: sp.csr_matrix, row_sizes: np.ndarray, col_sizes: np.ndarray,
             start: int) -> sp.csr_matrix:
    """Turn a batch of intersection counts into Jaccard similarities, in place."""
    inter = inter.tocsr()
    rows = np.repeat(np.arange(inter.shape[0]), np.diff(inter.indptr)) + start
    union = row_sizes[rows] + col_sizes[inter.indices] - inter.data
    inter.data = inter.data / np.maximum(union, 1.0)
    return inter


def _exclusion_codes(
    texts: Sequence[str], exclude: Mapping[str, set[str]] | None
) -> np.ndarray:
    """Sorted int64 codes ``i * n + j`` of the (phrase, paraphrase) index pairs to skip."""
    if not exclude:
        return np.zeros(0, dtype=np.int64)
    n = len(texts)
    by_key: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        by_key.setdefault(normalize_text(t), []).append(i)
    codes: list[int] = []
    for a, others in exclude.items():
        ia = by_key.get(normalize_text(a))
        if not ia:
            continue
        for b in others:
            for j in by_key.get(normalize_text(b), ()):
                for i in ia:
                    codes.append(i * n + j)
                    codes.append(j * n + i)
    return np.unique(np.asarray(codes, dtype=np.int64))


def paraphrase_neighbourhood(pairs: Iterable[Sequence[str]], hops: int = 2
                             ) -> dict[str, set[str]]:
    """``{phrase: phrases within hops paraphrase links}`` (normalised keys), never negatives.

    Two hops also keep paraphrases of a shared paraphrase apart from each other ("thank
    everyone" and "thank you for asking", both paraphrases of "thanking you").
    """
    direct: dict[str, set[str]] = defaultdict(set)
    for a, b, *_ in pairs:
        ka, kb = normalize(a), normalize(b)
        direct[ka].add(kb)
        direct[kb].add(ka)
    out: dict[str, set[str]] = {}
    for key, first in direct.items():
        reach = set(first)
        frontier = set(first)
        for _ in range(hops - 1):
            frontier = {y for x in frontier for y in direct[x]} - reach - {key}
            reach |= frontier
        out[key] = reach
    return out


@dataclass
class _SurfaceIndex:
    """Sparse surface features of the phrases, variant keys and the excluded pairs."""

    tok: sp.csr_matrix
    tok_sizes: np.ndarray
    tok_keep: sp.csr_matrix
    tri: sp.csr_matrix
    tri_sizes: np.ndarray
    tri_keep: sp.csr_matrix
    vkeys: np.ndarray
    excl: np.ndarray

    @classmethod
    def build(cls, phrases: Sequence[str], exclude: Mapping[str, set[str]] | None,
              max_df: int, max_trigram_df: int) -> _SurfaceIndex:
        tok, tok_sizes, tri, tri_sizes = _features(phrases, english_stop_words())
        vkeys = np.unique(np.asarray([variant_key(t) for t in phrases], dtype=object),
                          return_inverse=True)[1].reshape(-1)
        return cls(tok, tok_sizes, _keep_columns(tok, max_df).T.tocsr(), tri, tri_sizes,
                   _keep_columns(tri, max_trigram_df).T.tocsr(), vkeys,
                   _exclusion_codes(phrases, exclude))

    def candidates(self, start: int, stop: int, min_surface: float, max_candidates: int
                   ) -> np.ndarray:
        """(stop - start, max_candidates) ids of the surface-nearest phrases, best first, -1
        padded; the phrase's own variants, excluded pairs and weak matches left out."""
        n = self.tok.shape[0]
        jt = _jaccard(self.tok[start:stop] @ self.tok_keep, self.tok_sizes, self.tok_sizes,
                      start)
        jc = _jaccard(self.tri[start:stop] @ self.tri_keep, self.tri_sizes, self.tri_sizes,
                      start)
        score = ((jt + jc) * 0.5).tocsr()
        rows = np.repeat(np.arange(score.shape[0]), np.diff(score.indptr)) + start
        cols = score.indices
        bad = (self.vkeys[cols] == self.vkeys[rows]) | (score.data < min_surface)
        if len(self.excl):
            bad |= np.isin(rows.astype(np.int64) * n + cols, self.excl, assume_unique=False)
        score.data[bad] = 0.0
        score.eliminate_zeros()
        return _top_candidates(score, max_candidates)


def _top_candidates(score: sp.csr_matrix, max_candidates: int) -> np.ndarray:
    """Per row, the column ids of the ``max_candidates`` highest scores, best first."""
    cand = np.full((score.shape[0], max_candidates), -1, dtype=np.int64)
    for r in range(score.shape[0]):
        lo, hi = score.indptr[r], score.indptr[r + 1]
        if lo == hi:
            continue
        data, idx = score.data[lo:hi], score.indices[lo:hi]
        if hi - lo > max_candidates:
            top = np.argpartition(-data, max_candidates - 1)[:max_candidates]
            data, idx = data[top], idx[top]
        cand[r, : len(idx)] = idx[np.argsort(-data, kind="stable")]
    return cand


def _pick_negatives(phrases: Sequence[str], emb: np.ndarray, start: int, cand: np.ndarray,
                    k: int, max_cos: float) -> dict[str, list[str]]:
    """Up to ``k`` candidates per phrase with cosine below ``max_cos``, lowest first."""
    valid = cand >= 0
    if not valid.any():
        return {}
    stop = start + len(cand)
    cos = np.einsum("bd,bkd->bk", emb[start:stop], emb[np.where(valid, cand, 0)])
    cos = np.where(valid & (cos < max_cos), cos, np.inf)
    order = np.argsort(cos, axis=1, kind="stable")[:, :k]
    out: dict[str, list[str]] = {}
    for r in range(len(cand)):
        picked = [phrases[cand[r, c]] for c in order[r] if np.isfinite(cos[r, c])]
        if picked:
            out[phrases[start + r]] = picked
    return out


def mine_hard_negatives(
    phrases: list[str],
    embeddings: np.ndarray,
    k: int = 4,
    max_candidates: int = 30,
    max_cos: float = 0.75,
    exclude: dict[str, set[str]] | None = None,
    show_progress: bool = True,
    max_df: int = 2000,
    max_trigram_df: int = 300,
    min_surface: float = 0.1,
    batch_size: int = 1024,
) -> dict[str, list[str]]:
    """Up to ``k`` hard negatives per phrase: lexically close, but far apart for the encoder.

    Args:
        phrases: the phrases (unique texts); ``embeddings[i]`` embeds ``phrases[i]``.
        embeddings: (n, d) phrase embeddings; rows are L2-normalised here, so dot = cosine.
        k: negatives kept per phrase (lowest cosine first).
        max_candidates: surface-nearest candidates scored by the encoder per phrase.
        max_cos: only candidates with cosine below this are negatives (higher ones are
            likely paraphrases or near-duplicates).
        exclude: known paraphrases, ``{phrase: {paraphrase, ...}}`` (matched after
            lower-casing and whitespace normalisation, in both directions).
        show_progress: show a tqdm progress bar.
        max_df: content tokens found in more phrases than this are not used for retrieval
            (they would make every phrase a candidate of every other).
        max_trigram_df: same for character trigrams.
        min_surface: candidates need at least this surface similarity (0..1).
        batch_size: phrases per sparse product / cosine batch.

    Returns:
        ``{phrase: [negative, ...]}`` for the phrases with at least one negative.
    """
    n = len(phrases)
    if embeddings.ndim != 2 or embeddings.shape[0] != n:
        raise ValueError(
            f"embeddings must be (len(phrases), d) = ({n}, d), got {tuple(embeddings.shape)}"
        )
    if k < 1 or max_candidates < 1 or batch_size < 1:
        raise ValueError("k, max_candidates and batch_size must be >= 1")
    if n < 2:
        return {}
    emb = np.asarray(embeddings, dtype=np.float32)
    emb = l2_normalize(emb)
    index = _SurfaceIndex.build(phrases, exclude, max_df, max_trigram_df)
    logger.info("mining hard negatives for %d phrases (%d token / %d trigram features, "
                "%d excluded pairs)", n, index.tok.shape[1], index.tri.shape[1],
                len(index.excl) // 2)
    out: dict[str, list[str]] = {}
    starts = range(0, n, batch_size)
    bar = tqdm(starts, total=len(starts), desc="hard negatives", unit="batch",
               disable=not show_progress, leave=False)
    for start in bar:
        stop = min(start + batch_size, n)
        cand = index.candidates(start, stop, min_surface, max_candidates)
        out.update(_pick_negatives(phrases, emb, start, cand, k, max_cos))
    logger.info("hard negatives: %d of %d phrases have at least one", len(out), n)
    return out
