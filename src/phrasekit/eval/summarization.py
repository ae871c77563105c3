"""Unsupervised extractive summarization on BBC News Summary (Chang et al., §3.4, Table 5).

Data: ``bbc_news_summary/documents.jsonl.gz`` (2,225 articles), minus the 98 exact duplicates
listed in ``duplicates.tsv`` (``duplicate_id`` rows dropped): **2,127 articles**. The reference
of an article is its extractive summary, ``summary_sentences`` (spans copied verbatim from the
article).

Sentences (:func:`split_article`): the article body (the title line is dropped: it is never
part of a reference), one block per line, cut after every ``.``, ``!`` or ``?`` (optionally
followed by closing quotes or brackets) that is followed by whitespace, with no abbreviation
rules. That is how the references were cut: every reference span is then a run of whole
article sentences except 11 of the 17,445 (fragments such as ``he said.`` exist in the
references for the same reason).

Budget (how many sentences a method selects), two settings:

- ``3``: three sentences, the paper's CNN/Daily Mail setting (Lead-3);
- ``ref``: the number of article sentences the reference covers (a reference span that is no
  run of whole sentences counts 1); mean 7.9 — the BBC references are ~45% of the article, so
  this is the fairer setting here.

Methods (selected sentences are output in article order):

- ``lead``: the first ``budget`` sentences (Lead-3 at budget 3);
- ``random``: ``budget`` sentences drawn without replacement (seeded per article);
- ``sent_emb``: greedy Eq. 8 with each sentence as one vector, the normalised average of its
  known words' raw GloVe vectors (the paper's "Sent Emb (GloVe)");
- ``w_emb``: greedy Eq. 8 with each sentence as the set of its words' unit vectors, the gain
  divided by the sentence's word count ("W Emb (GloVe)");
- ``facets``: greedy Eq. 8 with each sentence as its K unit facets from a sentence facet model
  ("Ours (K)").

Eq. 8 (Kobayashi et al., 2015; ``greedy_summary``): the document
words are all known-word tokens of the body (repeats kept) as unit vectors, weighted by
``γ_w = α / (α + p(w))`` (α = 1e-4, p(w) the word space's Zipf estimate, as for STS-B).

Scores: ROUGE-1 and ROUGE-2 F1 (percent, mean over articles) of the ``rouge-score`` package
(Porter stemming, its default tokenizer), the selected sentences against the reference spans;
``len``: mean summary length in words (whitespace tokens). ``rouge-score`` is imported lazily,
in :func:`rouge_f1` only.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phrasekit.encoders.facets.scores import greedy_summary, sif_weights
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.eval.base import require_path

logger = logging.getLogger(__name__)

FILE = "bbc_news_summary/documents.jsonl.gz"
DUPLICATES = "bbc_news_summary/duplicates.tsv"
ALPHA = 1e-4
SEED = 0
METHODS = ("lead", "random", "sent_emb", "w_emb", "facets")
_END = re.compile(r"[.!?][\"')\]]*(\s+)")


@dataclass(frozen=True)
class Article:
    """One article: its body sentences and its reference summary.

    Attributes:
        id: ``<category>/<number>``.
        sentences: the body's sentences (:func:`split_article`).
        reference: the reference spans (``summary_sentences``), whitespace-normalised.
        reference_units: indices of the article sentences the reference covers, sorted.
        unaligned: reference spans that are no run of whole article sentences.
    """

    id: str
    sentences: tuple[str, ...]
    reference: tuple[str, ...]
    reference_units: tuple[int, ...]
    unaligned: int = 0

    @property
    def budget(self) -> int:
        """The ``ref`` budget: sentences covered by the reference (+1 per unaligned span)."""
        return max(1, len(self.reference_units) + self.unaligned)


def _norm(text: str) -> str:
    return " ".join(text.split())


def split_article(body: str) -> list[str]:
    """Sentences of an article body the way the BBC references were cut: each line is a
    block; a block is cut after ``.``/``!``/``?`` (plus closing quotes/brackets) followed by
    whitespace; no abbreviation rules."""
    out: list[str] = []
    for line in body.split("\n"):
        line = _norm(line)
        if not line:
            continue
        pos = 0
        for m in _END.finditer(line):
            out.append(line[pos : m.start(1)])
            pos = m.end(1)
        if pos < len(line):
            out.append(line[pos:])
    return [s for s in out if s]


def align_reference(sentences: Sequence[str], reference: Sequence[str]
                    ) -> tuple[tuple[int, ...], int]:
    """(indices of the sentences covered by the reference spans, number of spans that are no
    run of whole consecutive sentences)."""
    covered: set[int] = set()
    unaligned = 0
    for span in reference:
        span = _norm(span)
        found = False
        for i, s in enumerate(sentences):
            if not span.startswith(s):
                continue
            acc, j = s, i
            while len(acc) < len(span) and j + 1 < len(sentences):
                j += 1
                acc = f"{acc} {sentences[j]}"
            if acc == span:
                covered.update(range(i, j + 1))
                found = True
                break
        unaligned += not found
    return tuple(sorted(covered)), unaligned


def load_duplicates(data_dir: str | Path) -> set[str]:
    """The ``duplicate_id`` column of ``duplicates.tsv`` (the rows to drop)."""
    path = require_path(Path(data_dir), DUPLICATES)
    out: set[str] = set()
    with open(path, encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        if header[:2] != ["duplicate_id", "first_id"]:
            raise ValueError(f"{path}: unexpected header {header}")
        for lineno, line in enumerate(fh, start=2):
            if line.strip():
                f = line.rstrip("\n").split("\t")
                if len(f) < 2:
                    raise ValueError(f"{path}:{lineno}: need 2 tab-separated fields")
                out.add(f[0])
    return out


def load_bbc_summaries(data_dir: str | Path, limit: int | None = None,
                       drop_duplicates: bool = True) -> list[Article]:
    """The articles in file order (duplicates dropped), each split into sentences and aligned
    with its reference; ``limit``: the first ``limit`` kept articles."""
    data_dir = Path(data_dir)
    path = require_path(data_dir, FILE)
    dups = load_duplicates(data_dir) if drop_duplicates else set()
    out: list[Article] = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if limit is not None and len(out) >= limit:
                break
            if not line.strip():
                continue
            d = json.loads(line)
            try:
                doc_id, text, spans = d["id"], d["text"], d["summary_sentences"]
            except KeyError as exc:
                raise ValueError(f"{path}:{lineno}: missing field {exc}") from exc
            if doc_id in dups:
                continue
            lines = text.split("\n")
            sentences = split_article("\n".join(lines[1:]))
            reference = tuple(_norm(s) for s in spans if _norm(s))
            if not sentences or not reference:
                raise ValueError(f"{path}:{lineno}: article {doc_id} has no sentence or no "
                                 "reference")
            units, unaligned = align_reference(sentences, reference)
            out.append(Article(doc_id, tuple(sentences), reference, units, unaligned))
    return out


# ---------------------------------------------------------------------------------- selection
def budget_of(article: Article, setting: int | str) -> int:
    """Sentences to select: ``setting`` itself (an int) or the ``"ref"`` budget, never more
    than the article has."""
    if setting == "ref":
        n = article.budget
    elif isinstance(setting, int) and setting >= 1:
        n = setting
    else:
        raise ValueError(f"budget must be a positive int or 'ref', got {setting!r}")
    return min(n, len(article.sentences))


def lead_selection(n_sentences: int, budget: int) -> list[int]:
    """The first ``budget`` sentence indices."""
    return list(range(min(budget, n_sentences)))


def random_selection(n_sentences: int, budget: int, rng: np.random.Generator) -> list[int]:
    """``budget`` distinct sentence indices drawn uniformly, sorted."""
    k = min(budget, n_sentences)
    return sorted(int(i) for i in rng.choice(n_sentences, size=k, replace=False))


def article_rng(article_id: str, seed: int = SEED) -> np.random.Generator:
    """A generator that depends only on the seed and the article id."""
    return np.random.default_rng([seed, zlib.crc32(article_id.encode("utf-8"))])


class Eq8Selector:
    """Greedy Eq. 8 selection over a word space (GloVe vectors, γ = α / (α + p(w)))."""

    def __init__(self, word_space, probabilities: np.ndarray | None = None,
                 alpha: float = ALPHA) -> None:
        self.word_space = word_space
        p = word_space.zipf_probabilities() if probabilities is None else probabilities
        self.gamma_table = sif_weights(np.asarray(p, dtype=np.float64), alpha)

    def document(self, sentences: Sequence[str]) -> tuple[np.ndarray, np.ndarray,
                                                          list[list[int]]]:
        """(doc word unit vectors (D, d), their γ (D,), each sentence's known word ids)."""
        ws = self.word_space
        sent_ids = [ws.text_ids(s, unknown=None) for s in sentences]
        ids = [i for s in sent_ids for i in s]
        if not ids:
            return np.zeros((0, ws.dim), np.float32), np.zeros(0), sent_ids
        arr = np.asarray(ids, dtype=np.int64)
        return ws.unit[arr], self.gamma_table[arr], sent_ids

    def sentence_sets(self, method: str, sent_ids: list[list[int]],
                      facets: np.ndarray | None = None) -> list[np.ndarray]:
        """C(A_t) of every sentence for ``sent_emb``, ``w_emb`` or ``facets``."""
        ws = self.word_space
        if method == "sent_emb":
            return [l2_normalize(ws.vectors[ids].mean(axis=0, keepdims=True)) if ids
                    else np.zeros((0, ws.dim), np.float32) for ids in sent_ids]
        if method == "w_emb":
            return [ws.unit[ids] if ids else np.zeros((0, ws.dim), np.float32)
                    for ids in sent_ids]
        if method == "facets":
            if facets is None or len(facets) != len(sent_ids):
                raise ValueError("facets must give one (K, d) array per sentence")
            return [l2_normalize(f) for f in facets]
        raise ValueError(f"method must be sent_emb, w_emb or facets, got {method!r}")

    def select(self, sentences: Sequence[str], budget: int, method: str,
               facets: np.ndarray | None = None) -> list[int]:
        """Indices (sorted) of ``budget`` sentences chosen greedily by Eq. 8."""
        doc, gamma, sent_ids = self.document(sentences)
        if not len(doc):
            return lead_selection(len(sentences), budget)
        sets = self.sentence_sets(method, sent_ids, facets)
        norm = [max(len(ids), 1) for ids in sent_ids] if method == "w_emb" else None
        chosen = greedy_summary(doc, gamma, sets, n_sentences=budget, length_normalize=norm)
        return sorted(chosen)


# ---------------------------------------------------------------------------------- ROUGE
def rouge_f1(candidates: Sequence[str], references: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-pair ROUGE-1 / ROUGE-2 F1 (fractions) of ``candidates`` against ``references``
    (``rouge-score``, Porter stemmer)."""
    try:
        from rouge_score import rouge_scorer
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise ImportError("ROUGE needs the 'rouge-score' package (pip install rouge-score)"
                          ) from exc
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2"], use_stemmer=True)
    r1 = np.zeros(len(candidates))
    r2 = np.zeros(len(candidates))
    for i, (cand, ref) in enumerate(zip(candidates, references, strict=True)):
        s = scorer.score(ref, cand)
        r1[i], r2[i] = s["rouge1"].fmeasure, s["rouge2"].fmeasure
    return {"rouge1": r1, "rouge2": r2}


def summary_text(article: Article, selection: Sequence[int]) -> str:
    """The selected sentences in article order, one per line."""
    return "\n".join(article.sentences[i] for i in sorted(selection))


def score_selections(articles: Sequence[Article], selections: Sequence[Sequence[int]]
                     ) -> dict[str, float]:
    """Mean ROUGE-1 / ROUGE-2 F1 (percent) and mean length in words of the selections."""
    cands = [summary_text(a, s) for a, s in zip(articles, selections, strict=True)]
    refs = ["\n".join(a.reference) for a in articles]
    r = rouge_f1(cands, refs)
    return {"r1": round(float(r["rouge1"].mean()) * 100, 4),
            "r2": round(float(r["rouge2"].mean()) * 100, 4),
            "len": round(float(np.mean([len(c.split()) for c in cands])), 2),
            "articles": float(len(articles))}


def sentence_facets(encoder, articles: Sequence[Article]) -> list[np.ndarray]:
    """Per article, the (n_sentences, K, d) unit facets of its sentences (one batched pass
    over the distinct sentences of all articles)."""
    uniq = list(dict.fromkeys(s for a in articles for s in a.sentences))
    pos = {s: i for i, s in enumerate(uniq)}
    f = encoder.facets(uniq)
    return [f[[pos[s] for s in a.sentences]] for a in articles]


def select_all(articles: Sequence[Article], method: str, setting: int | str,
               selector: Eq8Selector | None = None,
               facets: Sequence[np.ndarray] | None = None, seed: int = SEED) -> list[list[int]]:
    """Selections of ``method`` for every article under the budget ``setting``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    out: list[list[int]] = []
    for i, a in enumerate(articles):
        n = budget_of(a, setting)
        if method == "lead":
            out.append(lead_selection(len(a.sentences), n))
        elif method == "random":
            out.append(random_selection(len(a.sentences), n, article_rng(a.id, seed)))
        else:
            if selector is None:
                raise ValueError(f"method {method!r} needs an Eq8Selector")
            out.append(selector.select(a.sentences, n, method,
                                       None if facets is None else facets[i]))
    return out
