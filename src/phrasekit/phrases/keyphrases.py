"""Keyphrases per document: noun-phrase candidates ranked by embedding similarity (EmbedRank).

``KeyphraseExtractor(top_n=10).extract(docs)`` returns, for every document,
its ``top_n`` keyphrases as ``(phrase, score)`` pairs, highest score first. The method is
EmbedRank++ (Bennani-Smires et al., 2018) with the phrasekit encoder and a small position prior
(PositionRank, SIFRank+). Every default was chosen on the Inspec *dev* split, never on test
(``benchmarks/keyphrases/keyphrases_tune_dev.py``; the numbers are F1@10 on dev, MiniLM; "coarse
grid": position weight 0 to 0.5, no frequency prior, MMR 0 or 0.3, containment rule on or off):

1. **Candidates** (spaCy, the packaged ``en_core_web_sm``): noun chunks (``"noun_chunks"``),
   EmbedRank's adjective/noun pattern (``"pos"``: maximal runs of adjectives and nouns) or the
   union of both (``"both"``, the default): 37.5 / 37.0 / 37.3 with plain cosine ranking; with
   the coarse grid, noun chunks 38.1, adjective/noun runs 38.1 and both 39.3. Each span is
   cleaned: leading determiners, pronouns, quantifiers ("many", "several"; see
   ``LEADING_STRIP_WORDS``), conjunctions, prepositions, numbers and punctuation are stripped,
   trailing punctuation too.
   A span is dropped when it crosses a line break (a title running into the abstract), carries
   markup, has more than ``max_words`` (5) words, does not end in a noun, or has only stopwords
   / numbers. Brackets must pair up inside a candidate: a span is cut at every token holding a
   bracket ``()[]{}`` without its partner in the span, and each piece is cleaned again, so
   "support vector machines (svm)" gives "support vector machines" and "svm", never
   "support vector machines (svm" (a span-level check drops any unbalanced string left).
   ``sub_phrases=True`` adds every shorter suffix of a span ("safe ship control" -> "ship
   control"): it raises the share of gold phrases among the candidates (58% -> 66%) but the
   ranking then prefers truncated fragments ("vector machines"), so it is off (38.1 vs 39.3
   with the coarse grid).
2. **Grouping**: candidates equal after lower-casing, tokenising and Porter-stemming each word
   (:func:`phrase_key`) are one candidate ("neural network" / "neural networks"), shown in the
   (lower-cased) form seen first, with its first position and number of occurrences.
3. **Scores**: the cosine between the candidate's embedding (the phrase alone) and the
   document's, plus ``position_weight`` (0.3) times the prior ``1 / log2(2 + w)``, ``w`` the
   word offset of the candidate's first occurrence (title phrases come first), plus
   ``frequency_weight`` (0.08) times ``log(occurrences)``. Both weights were chosen on dev
   together with step 4's containment rule and diversity (position 0 to 1 x frequency 0 to
   0.32 x diversity 0 to 0.5 x rule on/off): with the rule, frequency 0 / 0.08 / 0.16 give
   38.9 / 39.5 / 38.8 (position 0.3, diversity 0.2); without it, the best is position 0.05,
   no frequency prior (39.2).
   ``doc_window_words``: a document longer than this many words is embedded as the mean of
   sentence windows of at most that size (off: 128-word windows lose 0.8 with the coarse
   grid). ``doc_tokens``: the document pass reads each window's first 192 word pieces
   (:data:`DOC_TOKENS`).
4. **Selection**: with ``suppress_nested`` (the default), near-duplicates by containment are
   suppressed first: of two candidates one of whose stemmed word sequences lies inside the
   other's ("instanton liquid" / "instanton liquid density"), only the higher scored is kept
   (greedily, best score first), so one document's list does not spend two places on one
   concept. On dev, each with its best priors and diversity, the rule gives 39.5 against 39.2
   without it (F1@5 34.0 against 31.8); Inspec's indexers often list nested phrases, which
   the rule keeps out of one list by design. Then, with ``diversity`` > 0
   (default 0.2; MMR 0.3 is +1.7 F1@10 over plain top-n for both candidate kinds without
   priors) Maximal Marginal Relevance as in EmbedRank++: the next phrase maximises
   ``(1 - diversity) * score - diversity * max cosine to the phrases already chosen``;
   ``diversity=0`` takes the ``top_n`` best scores. The chosen
   phrases are returned sorted by their relevance score of step 3, highest first, so a
   reader's first keyphrase is the most relevant one.

All candidates of all documents are encoded in one pass (each distinct string once) and all
documents in another, so the cost is one spaCy pass plus two encoder passes over the corpus.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from phrasekit.encoders.base import Encoder
from phrasekit.encoders.cache import cached_encode, check_cache_dir
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.errors import check_float, check_int
from phrasekit.io import Document
from phrasekit.phrases.extract import DEFAULT_SPACY_MODEL, PATTERN_POS, load_spacy
from phrasekit.phrases.keyphrase_candidates import (
    REJECT_RE,
    DocCandidates,
    DocSpans,
    brackets_balanced,
    char_batches,
    phrase_key,
    suppress_contained,
    validate_docs,
)
from phrasekit.phrases.parallel import TASKS_PER_WORKER, pooled, shares
from phrasekit.phrases.pieces import PIPE_BATCH_CHARS, pipe_processes, split_long_text
from phrasekit.phrases.token_table import TokenTable, noun_chunks, pattern_runs
from phrasekit.registry import KEYPHRASES_MODEL, as_encoder, check_model_name

logger = logging.getLogger(__name__)

CANDIDATE_KINDS = ("noun_chunks", "pos", "both")

#: Texts per spaCy batch: 32 parsed 1,000 bbc_news articles with 9% less CPU than 64 (smaller
#: activations; ``benchmarks/speed/keyphrase_candidates_speed.py``); fewer where they would pass
#: ``PIPE_BATCH_CHARS`` characters (twelve 97,000-character texts in one batch: 3.8 GB).
SPACY_BATCH = 32

#: Tokens of a document the document pass reads: a quarter less of a news article than 256.
#: Inspec dev F1@10 192 / 256 tokens: 39.39 / 39.50 (MiniLM fp32), 39.30 / 39.06 (7-bit int8);
#: Inspec train 36.98 / 36.96 and 36.96 / 36.76; 128 tokens lost 0.7 on dev.
DOC_TOKENS = 192

Keyphrases = list[tuple[str, float]]


# ---------------------------------------------------------------------------- the extractor
class KeyphraseExtractor:
    """Keyphrases per document: candidates ranked by cosine to the document (EmbedRank[++]).

    Args:
        encoder: a registered model name (see ``phrasekit models``), a model folder, or a
            loaded :class:`~phrasekit.encoders.base.Encoder` (loaded on first use when a name);
            default ``minilm@fast``, MiniLM in bf16 where the CPU computes it natively, else
            in int8 where that measures faster (7-bit weights included), as the CLI.
        top_n: keyphrases returned per document (fewer when a document has fewer candidates).
        diversity: 0 ranks by score alone; in (0, 1] selects by Maximal Marginal Relevance
            with this weight on redundancy (EmbedRank++).
        candidates: ``"noun_chunks"`` (spaCy noun chunks), ``"pos"`` (adjective/noun runs) or
            ``"both"``.
        sub_phrases: also take every shorter suffix of a candidate span ending in its head.
        max_words: the longest candidate, in words.
        position_weight: weight of the first-position prior ``1 / log2(2 + word offset)``.
        frequency_weight: weight of ``log(occurrences)``.
        suppress_nested: of two candidates whose stemmed word sequences contain one another
            ("instanton liquid" / "instanton liquid density"), keep only the higher scored
            before the selection.
        doc_window_words: a document longer than this (in words) is embedded as the mean of
            sentence windows of at most this many words; None embeds the text as one piece.
        doc_tokens: the document pass reads each window's first this many subword tokens
            (where the encoder's own limit is higher); None: the encoder's limit.
        spacy_model: name of an installed spaCy pipeline, or a loaded ``Language``.
        batch_size: encoder batch size (None: the encoder's default).
        n_process: spaCy worker processes (``PhraseExtractor``'s rule: small corpora are
            parsed in-process).
        cache_dir: a folder keeping candidate and window vectors between runs (keyed by text,
            model and settings; None: no cache).
    """

    def __init__(
        self,
        encoder: str | Encoder = KEYPHRASES_MODEL,
        top_n: int = 10,
        diversity: float = 0.2,
        candidates: str = "both",
        sub_phrases: bool = False,
        max_words: int = 5,
        position_weight: float = 0.3,
        frequency_weight: float = 0.08,
        suppress_nested: bool = True,
        doc_window_words: int | None = None,
        doc_tokens: int | None = DOC_TOKENS,
        spacy_model: str | Any = DEFAULT_SPACY_MODEL,
        batch_size: int | None = None,
        n_process: int = 1,
        cache_dir: str | None = None,
    ) -> None:
        if isinstance(encoder, str):
            check_model_name(encoder)
        elif not isinstance(encoder, Encoder):
            if not callable(getattr(encoder, "encode", None)):
                raise TypeError(f"encoder must be a model name, an Encoder or an object with "
                                f"encode, got {type(encoder).__name__}")
            encoder = as_encoder(encoder)
        check_int("top_n", top_n, 1)
        check_int("max_words", max_words, 1)
        check_int("n_process", n_process, 1)
        if doc_window_words is not None:
            check_int("doc_window_words", doc_window_words, 16)
        if doc_tokens is not None:
            check_int("doc_tokens", doc_tokens, 16)
        if batch_size is not None:
            check_int("batch_size", batch_size, 1)
        check_float("diversity", diversity, 0.0, 1.0)
        check_float("position_weight", position_weight, 0.0, None)
        check_float("frequency_weight", frequency_weight, 0.0, None)
        if not isinstance(suppress_nested, bool | np.bool_):
            raise TypeError(
                f"suppress_nested must be a bool, got {type(suppress_nested).__name__}"
            )
        if candidates not in CANDIDATE_KINDS:
            raise ValueError(
                f"candidates must be one of {', '.join(CANDIDATE_KINDS)}, got {candidates!r}"
            )
        self.encoder = encoder
        self.top_n = int(top_n)
        self.diversity = float(diversity)
        self.candidates = candidates
        self.sub_phrases = bool(sub_phrases)
        self.max_words = int(max_words)
        self.position_weight = float(position_weight)
        self.frequency_weight = float(frequency_weight)
        self.suppress_nested = bool(suppress_nested)
        self.doc_window_words = None if doc_window_words is None else int(doc_window_words)
        self.doc_tokens = None if doc_tokens is None else int(doc_tokens)
        self.spacy_model = spacy_model
        self.batch_size = batch_size
        self.n_process = int(n_process)
        self.cache_dir = None if cache_dir is None else str(cache_dir)
        self._encoder: Encoder | None = encoder if isinstance(encoder, Encoder) else None

    def __getstate__(self) -> dict[str, Any]:
        """The settings, without an encoder loaded from a name: spaCy's worker processes
        receive the extractor with every task and never encode."""
        state = dict(self.__dict__)
        if isinstance(self.encoder, str):
            state["_encoder"] = None
        return state

    # ------------------------------------------------------------------ sklearn-style params
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments as set (scikit-learn's ``clone`` and ``set_params``)."""
        return {name: getattr(self, name) for name in self.settings()}

    def settings(self) -> dict[str, Any]:
        """The settings, JSON-ready (the encoder and spaCy pipeline by name)."""
        enc = self.encoder if isinstance(self.encoder, str) else self.encoder.name
        nlp = self.spacy_model if isinstance(self.spacy_model, str) else repr(self.spacy_model)
        return {
            "encoder": enc,
            "top_n": self.top_n,
            "diversity": self.diversity,
            "candidates": self.candidates,
            "sub_phrases": self.sub_phrases,
            "max_words": self.max_words,
            "position_weight": self.position_weight,
            "frequency_weight": self.frequency_weight,
            "suppress_nested": self.suppress_nested,
            "doc_window_words": self.doc_window_words,
            "doc_tokens": self.doc_tokens,
            "spacy_model": nlp,
            "batch_size": self.batch_size,
            "n_process": self.n_process,
            "cache_dir": self.cache_dir,
        }

    def set_params(self, **params: Any) -> KeyphraseExtractor:
        """Change settings in place (checked as the constructor checks them; a loaded encoder
        is kept unless ``encoder`` changes); returns self."""
        unknown = set(params) - set(self.settings())
        if unknown:
            raise ValueError(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        checked = KeyphraseExtractor(**{**self.get_params(), **params})
        if "encoder" not in params:
            checked._encoder = self._encoder
        self.__dict__.update(checked.__dict__)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items())
        return f"KeyphraseExtractor({args})"

    @property
    def encoder_(self) -> Encoder:
        """The encoder (loaded from the registry on first use)."""
        if self._encoder is None:
            self._encoder = as_encoder(self.encoder)
        return self._encoder

    @property
    def nlp(self):
        """The spaCy pipeline (named ones loaded once; NER and lemmatizer are not needed)."""
        if not isinstance(self.spacy_model, str):
            return self.spacy_model
        return load_spacy(self.spacy_model, exclude=("lemmatizer", "ner"))

    # ------------------------------------------------------------------ main entry
    def extract(
        self, docs: Iterable[Document | str], show_progress: bool = False
    ) -> list[Keyphrases]:
        """Keyphrases of every document: a list (one per document, in input order) of up to
        ``top_n`` ``(phrase, score)`` pairs, highest score first.

        ``docs``: strings or :class:`~phrasekit.io.Document` objects. Raises ``TypeError`` for
        None (or a non-string item) and ``ValueError`` for an empty or whitespace-only document,
        naming its index. An empty list gives an empty list.
        """
        texts = validate_docs(docs)
        if not texts:
            return []
        check_cache_dir(self.cache_dir)
        # the encoder loads while spaCy's workers parse
        cands = self.find_candidates(texts, show_progress=show_progress,
                                     meanwhile=lambda: self.encoder_)
        doc_vecs, cand_vecs = self.embed(cands, show_progress=show_progress)
        return [self.rank(c, d, v) for c, d, v in zip(cands, doc_vecs, cand_vecs, strict=True)]

    # ------------------------------------------------------------------ steps
    def find_candidates(
        self, texts: Sequence[str], show_progress: bool = False,
        meanwhile: Callable[[], object] | None = None,
    ) -> list[DocCandidates]:
        """Step 1-2: the grouped candidates of every text (and its embedding windows); with
        ``n_process`` > 1, in worker processes that return the candidates only, while this
        process runs ``meanwhile`` (if given)."""
        nlp = self.nlp
        limit = max(100, min(100_000, int(nlp.max_length) - 1))
        pieces: list[tuple[str, int]] = []
        for i, text in enumerate(texts):
            pieces.extend((p, i) for p in split_long_text(text, limit) if p.strip())
        out = [DocCandidates() for _ in texts]
        n = pipe_processes([p for p, _ in pieces], self.n_process)
        if n > 1 and isinstance(self.spacy_model, str):
            tasks = shares(pieces, n * TASKS_PER_WORKER, unit=lambda p: p[1])
            done = pooled(self, tasks, KeyphraseExtractor._candidates_of, n, meanwhile)
        else:
            done = iter([self._candidates_of(pieces)])
        with tqdm(total=len(texts), desc="keyphrases[spaCy]", unit="doc",
                  disable=not show_progress, leave=False) as bar:
            for found in done:
                for i, cands in found.items():
                    out[i] = cands
                bar.update(len(found))
        return out

    def _candidates_of(self, pieces: list[tuple[str, int]]) -> dict[int, DocCandidates]:
        """The candidates of the documents ``pieces`` hold (``(text, document row)``, a
        document's pieces together and in order)."""
        out: dict[int, DocCandidates] = {}
        index: dict[int, dict[str, int]] = {}
        offset: dict[int, int] = {}
        for batch in char_batches(pieces, SPACY_BATCH, PIPE_BATCH_CHARS):
            tagged = [(text, (i, text)) for text, i in batch]
            for sdoc, (i, text) in self.nlp.pipe(tagged, as_tuples=True, batch_size=len(batch)):
                cands = out.setdefault(i, DocCandidates())
                offset[i] = self._add_doc(TokenTable.of(sdoc, text), cands,
                                          index.setdefault(i, {}), offset.get(i, 0))
        return out

    def _add_doc(self, table: TokenTable, cands: DocCandidates, index: dict[str, int],
                 offset: int) -> int:
        """Add one spaCy Doc's candidates and windows; return the word offset after it."""
        word_at = np.concatenate([[0], np.cumsum(table.is_word)])
        spans: list[tuple[int, int]] = []
        if self.candidates in ("noun_chunks", "both"):
            spans.extend(noun_chunks(table))
        if self.candidates in ("pos", "both"):
            spans.extend(pattern_runs(table, PATTERN_POS))
        doc = DocSpans(table)
        seen: set[tuple[int, int]] = set()
        doc_word_at = (offset + word_at).tolist()
        for span in sorted(spans):
            for start, end in doc.pieces(*span):
                self._add_span(doc, start, end, cands, index, doc_word_at, seen)
        cands.windows.extend(self._windows(table))
        return offset + int(word_at[-1])

    def _add_span(self, doc: DocSpans, first: int, end: int, cands: DocCandidates,
                  index: dict[str, int], word_at: list[int], seen: set[tuple[int, int]]
                  ) -> None:
        """Add one cleaned span (and, with ``sub_phrases``, its suffixes) as candidates;
        ``word_at``: the document word offset of each token."""
        for start in range(first, end) if self.sub_phrases else [first]:
            if (start, end) in seen:
                continue
            seen.add((start, end))
            if start > first and (not doc.space_after[start - 1] or doc.lead[start]):
                continue  # inside a hyphenated word ("two-stage") or after a word like "of"
            if not doc.valid(start, end, self.max_words):
                continue
            phrase = doc.surface(start, end)
            key = phrase_key(phrase)
            if key and not REJECT_RE.search(phrase) and brackets_balanced(phrase):
                cands.add(phrase, key, word_at[start], index)

    def _windows(self, table: TokenTable) -> list[str]:
        text = table.text
        if not text.strip():
            return []
        limit = self.doc_window_words
        if limit is None or int(table.is_word.sum()) <= limit:
            return [text]
        windows: list[str] = []
        cur: list[str] = []
        size = 0
        for sent in table.doc.sents:
            n = sum(1 for t in sent if not (t.is_punct or t.is_space))
            if cur and size + n > limit:
                windows.append(" ".join(cur))
                cur, size = [], 0
            cur.append(sent.text.strip())
            size += n
        if cur:
            windows.append(" ".join(cur))
        return [w for w in windows if w.strip()]

    def embed(
        self, cands: Sequence[DocCandidates], show_progress: bool = False
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Step 3a: document vectors ``(n_docs, d)`` and each document's candidate matrix, from
        one encoder pass over the distinct candidate strings and one over the windows."""
        enc = self.encoder_
        phrase_ids: dict[str, int] = {}
        for c in cands:
            for p in c.phrases:
                phrase_ids.setdefault(p, len(phrase_ids))
        windows = [w for c in cands for w in c.windows]
        vecs = cached_encode(enc, list(phrase_ids), self.cache_dir, "phrases", show_progress,
                             batch_size=self.batch_size)
        with enc.token_limit(self.doc_tokens):
            wvecs = cached_encode(enc, windows, self.cache_dir, "keyphrase-windows",
                                  show_progress, batch_size=self.batch_size)
        doc_vecs = np.zeros((len(cands), enc.dim), dtype=np.float32)
        pos = 0
        for i, c in enumerate(cands):
            n = len(c.windows)
            if n:
                doc_vecs[i] = wvecs[pos : pos + n].mean(axis=0)
            pos += n
        doc_vecs = l2_normalize(doc_vecs)
        cand_vecs = [vecs[[phrase_ids[p] for p in c.phrases]] if len(c) else
                     np.zeros((0, enc.dim), dtype=np.float32) for c in cands]
        return doc_vecs, cand_vecs

    def scores(self, cands: DocCandidates, doc_vec: np.ndarray,
               cand_vecs: np.ndarray) -> np.ndarray:
        """Step 3b: the relevance score of every candidate of one document."""
        s = cand_vecs @ doc_vec
        if self.position_weight:
            s = s + self.position_weight / np.log2(2.0 + np.asarray(cands.first, dtype=float))
        if self.frequency_weight:
            s = s + self.frequency_weight * np.log(np.asarray(cands.counts, dtype=float))
        return np.asarray(s, dtype=np.float64)

    def select(self, scores: np.ndarray, cand_vecs: np.ndarray,
               sims: np.ndarray | None = None) -> list[int]:
        """Step 4: indices of the chosen candidates, in order (top-n or MMR). ``sims``: the
        cosine matrix ``cand_vecs @ cand_vecs.T`` when already computed."""
        n = min(self.top_n, len(scores))
        if n == 0:
            return []
        if self.diversity <= 0.0:
            return [int(i) for i in np.argsort(-scores, kind="stable")[:n]]
        if sims is None:
            sims = cand_vecs @ cand_vecs.T
        chosen = [int(np.argmax(scores))]
        redundancy = sims[chosen[0]].copy()
        available = np.ones(len(scores), dtype=bool)
        available[chosen[0]] = False
        while len(chosen) < n:
            mmr = (1.0 - self.diversity) * scores - self.diversity * redundancy
            mmr[~available] = -np.inf
            j = int(np.argmax(mmr))
            chosen.append(j)
            available[j] = False
            np.maximum(redundancy, sims[j], out=redundancy)
        return chosen

    def rank(self, cands: DocCandidates, doc_vec: np.ndarray, cand_vecs: np.ndarray,
             sims: np.ndarray | None = None) -> Keyphrases:
        """Steps 3b-4 for one document: ``(phrase, score)`` pairs, highest score first (with
        ``suppress_nested``, contained near-duplicates are suppressed before the selection).
        ``sims``: the cosine matrix ``cand_vecs @ cand_vecs.T`` when already computed (a
        tuning grid reuses it)."""
        if not len(cands):
            return []
        s = self.scores(cands, doc_vec, cand_vecs)
        if self.suppress_nested:
            keep = suppress_contained(cands.keys, s)
            sub = None if sims is None else sims[np.ix_(keep, keep)]
            chosen = [keep[j] for j in self.select(s[keep], cand_vecs[keep], sub)]
        else:
            chosen = self.select(s, cand_vecs, sims)
        chosen.sort(key=lambda i: -s[i])
        return [(cands.phrases[i], float(s[i])) for i in chosen]
