"""PEARL's corpus phrases: typed candidate phrases of parsed documents, typed in context.

Per document (spaCy parse): noun chunks and entity spans (PhraseExtractor cleaning; numeric
entities kept whole), verb phrases (verb + particle / object / adverb, 2-4 tokens), adjective
and adverb phrases (ADV + ADJ, ADV + ADV) and prepositional phrases (ADP + its object, <= 5
tokens). Each span gets its ``LEX-ENT`` type from the in-context parse and NER.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from tqdm.auto import tqdm

from phrasekit.phrases.extract import (
    DEFAULT_REJECT_PATTERN,
    NUMERIC_ENTITY_TYPES,
    PhraseExtractor,
)
from phrasekit.phrases.types import entity_type, lexical_class
from phrasekit.training.data.sources import MAX_PHRASE_WORDS, normalize, tidy, valid_phrase

logger = logging.getLogger(__name__)

#: Words spaCy tags VERB that make no useful verb phrase on their own (light verbs).
_LIGHT_VERBS = frozenset({
    "be", "is", "are", "was", "were", "been", "being", "am", "'s", "'re", "'m", "has", "have",
    "had", "having", "'ve", "do", "does", "did", "doing", "done", "get", "got", "let", "say",
    "said", "says",
})
_INNER_PUNCT_OK = frozenset({"-", ".", "&", "/", "'", "'s", "’s"})


def _span_ok(span: Any, reject: re.Pattern[str], min_words: int, max_words: int) -> bool:
    """Contiguous span without line breaks, odd punctuation or markup, of the right length."""
    n_words = 0
    for k, tok in enumerate(span):
        if tok.is_space or "\n" in tok.text or (k < len(span) - 1 and "\n" in tok.whitespace_):
            return False
        if tok.is_punct:
            if tok.text not in _INNER_PUNCT_OK or k in (0, len(span) - 1):
                return False
            continue
        n_words += 1
    if not min_words <= n_words <= max_words:
        return False
    return not reject.search(span.text)


def _verb_phrases(sdoc: Any) -> Iterator[Any]:
    """Verb + particle / direct object / following adverb spans of 2-4 tokens."""
    for tok in sdoc:
        if tok.pos_ != "VERB" or tok.dep_ in ("amod", "compound") or tok.lower_ in _LIGHT_VERBS:
            continue
        end = tok.i + 1
        prts = [c for c in tok.rights if c.dep_ == "prt"]
        if prts and prts[0].i == tok.i + 1:
            end = prts[0].i + 1
            yield sdoc[tok.i : end]
        for child in tok.rights:
            if child.dep_ == "dobj" and child.pos_ != "PRON" and child.left_edge.i == end:
                stop = child.right_edge.i + 1
                if stop - tok.i <= 4:
                    yield sdoc[tok.i : stop]
            elif (child.dep_ == "advmod" and child.pos_ == "ADV" and child.i == end
                  and not list(child.rights)):
                yield sdoc[tok.i : child.i + 1]


def _modifier_phrases(sdoc: Any) -> Iterator[tuple[Any, str]]:
    """(span, class): ADV+ADJ adjective phrases and ADV+ADV adverb phrases (2-4 tokens)."""
    for tok in sdoc:
        if tok.pos_ not in ("ADJ", "ADV"):
            continue
        start = tok.i
        while True:
            mods = [c for c in sdoc[start].lefts if c.dep_ == "advmod" and c.pos_ == "ADV"
                    and c.i == start - 1]
            if not mods or tok.i - mods[0].i >= 4:
                break
            start = mods[0].i
        if start < tok.i:
            yield sdoc[start : tok.i + 1], ("ADJP" if tok.pos_ == "ADJ" else "ADVP")


def _prep_phrases(sdoc: Any) -> Iterator[Any]:
    """ADP + its object (the object's whole subtree), contiguous, 2-5 tokens, no bare pronoun."""
    for tok in sdoc:
        if tok.pos_ != "ADP" or tok.dep_ != "prep":
            continue
        objs = [c for c in tok.rights if c.dep_ == "pobj"]
        if not objs:
            continue
        obj = objs[-1]
        if obj.left_edge.i != tok.i + 1 or (obj.pos_ == "PRON" and obj.left_edge == obj):
            continue  # discontinuous, or a bare pronoun object ("in him")
        stop = obj.right_edge.i + 1
        if 2 <= stop - tok.i <= 5:
            yield sdoc[tok.i : stop]


def _typed_spans(sdoc: Any, extractor: Any, reject: re.Pattern[str]
                 ) -> Iterator[tuple[Any, str]]:
    """(span, LEX-ENT type) candidates in priority order (the first type of a span wins)."""
    for ent in sdoc.ents:
        if ent.label_ in NUMERIC_ENTITY_TYPES:
            span = ent if _span_ok(ent, reject, 1, MAX_PHRASE_WORDS) else None
        else:
            span = extractor.clean_span(ent, set())
        if span is not None and not reject.search(span.text):
            yield span, f"{lexical_class(span)}-{ent.label_}"
    for chunk in sdoc.noun_chunks:
        span = extractor.clean_span(chunk, set())
        if span is not None and not reject.search(span.text):
            yield span, f"NP-{entity_type(span)}"
    for span in _verb_phrases(sdoc):
        if _span_ok(span, reject, 2, 4):
            yield span, f"VP-{entity_type(span)}"
    for span, lex in _modifier_phrases(sdoc):
        if _span_ok(span, reject, 2, 4):
            yield span, f"{lex}-{entity_type(span)}"
    for span in _prep_phrases(sdoc):
        if _span_ok(span, reject, 2, 5):
            yield span, f"PP-{entity_type(span)}"


def doc_phrases(sdoc: Any, extractor: Any, reject: re.Pattern[str]) -> list[tuple[str, str]]:
    """(surface, LEX-ENT type) of every candidate phrase of one parsed document, in context."""
    found: dict[tuple[int, int], str] = {}
    for span, label in _typed_spans(sdoc, extractor, reject):
        found.setdefault((span.start, span.end), label)
    return [(tidy(sdoc[s:e].text), label) for (s, e), label in sorted(found.items())]


def extract_corpus_phrases(
    pieces: Sequence[tuple[str, str]], nlp: Any, show_progress: bool = True, batch_size: int = 16
) -> dict[str, dict[str, Any]]:
    """Parse the pieces and collect ``{normalised: {surface counts, type votes, corpora}}``."""
    extractor = PhraseExtractor(spacy_model=nlp, exclude_entity_types=(), lowercase=False,
                                strip_numbers=True, max_tokens=MAX_PHRASE_WORDS)
    reject = re.compile(DEFAULT_REJECT_PATTERN)
    found: dict[str, dict[str, Any]] = {}
    stream = nlp.pipe(((text, name) for name, text in pieces), as_tuples=True,
                      batch_size=batch_size)
    bar = tqdm(stream, total=len(pieces), desc="corpus phrases[spaCy]", unit="doc",
               disable=not show_progress)
    for sdoc, name in bar:
        for surface, label in doc_phrases(sdoc, extractor, reject):
            if not valid_phrase(surface):
                continue
            rec = found.setdefault(normalize(surface), {
                "surfaces": Counter(), "types": Counter(), "corpus": name})
            rec["surfaces"][surface] += 1
            rec["types"][label] += 1
    return found
