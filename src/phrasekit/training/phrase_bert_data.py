"""Build Phrase-BERT's two triplet datasets (paper §3) from offline data.

:func:`build_phrase_bert_dataset` writes into ``out_dir``:

* ``paraphrase_triplets.jsonl.gz`` — ``{"anchor", "positive", "negative", "source"}``: a
  phrase p, a *lexically diverse* paraphrase p+ and a corrupted phrase p−, in a seeded random
  order (any prefix is a fair sample).

  **Substitution.** The paper makes p+ with a GPT-2 diverse paraphraser (nucleus sampling,
  lexical constraints) and p− by paraphrasing a corrupted p. No generative paraphraser runs
  offline here, so p+ comes from existing paraphrase lists instead: positive pairs of the PPDB
  and PPDB-filtered **train** splits (the dev/test parts are never read) and WordNet synonyms
  where at least one side is a multi-word lemma (at most ``max_pairs_per_synset`` per synset).
  A pair is kept only when the two sides share no non-stopword (:func:`lexically_disjoint`:
  no common content word, nor two that are variants: one inside the other, the same first
  min(5, length) >= 4 letters, or a close spelling, so "sedge"/"nutsedge", "thank"/"thanking"
  and "cappella"/"capella" count as shared). p− keeps the paper's first step — one randomly
  chosen non-stopword of p replaced by a random word of the vocabulary (the backbone
  tokenizer's whole words, :func:`word_vocabulary`; seeded; never a word of p or p+) —
  without the second paraphrasing step, so p− differs from p in exactly one content word: a
  lexically close, semantically broken negative.
  The anchor is a random side of each unordered pair.
* ``context_triplets.jsonl.gz`` — ``{"anchor", "positive", "negative", "source"}``: a phrase
  p, a window c+ of about ``context_tokens`` (120) WordPiece tokens around one occurrence of p
  in which that occurrence is replaced by the tokenizer's mask token (``[MASK]``), and c−, the
  masked window of *another* phrase from another document (so both contexts hold one mask and
  the mask itself is no cue), which does not contain p. Phrases are multi-word spaCy noun
  chunks and named entities (:class:`phrasekit.phrases.PhraseExtractor` cleaning: determiners,
  numbers and outer punctuation stripped; numeric entity types dropped; at most 8 words), or
  the multi-word keys of cached :class:`~phrasekit.phrases.PhraseVocabulary` files
  (``phrase_vocabs``, located by a word n-gram scan, which skips spaCy for that corpus). One
  triplet per phrase; phrases in order of frequency in the sample (ties in seeded random
  order), as the paper keeps the most frequent phrases. Texts come from
  :func:`phrasekit.training.pearl_data.corpus_sample` (a word budget spread over the corpora;
  documents of a ``test`` split are never read). The default corpora have no dev split; a
  corpus with one (e.g. ``inspec``) should not be named.
* ``report.json`` — counts per source, drop reasons, the test-string filter, timings, params.

Test-string filter: a paraphrase pair with a side that is a benchmark test/dev string
(:func:`phrasekit.training.pearl_data.collect_test_strings`, exact match after lower-casing)
is dropped before any other filter, a negative that is one is redrawn, and a context phrase
that is one gets no triplet; the removals are counted per kind and per benchmark file in the
report. Contexts are ~120-token windows, never benchmark strings themselves.

Run time with the defaults (400k corpus words): about 80 s on this 2-core machine (spaCy
~6k words/s), giving ~19.6k paraphrase and 30k context triplets.
"""

from __future__ import annotations

import difflib
import gzip
import json
import logging
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from phrasekit.io import write_json
from phrasekit.training.corpus_sampling import corpus_sample
from phrasekit.training.data_sources import (
    Synset,
    normalize,
    read_ppdb,
    read_wordnet,
    strip_outer_punct,
    valid_phrase,
    wordnet_pairs,
    write_gz_text,
)
from phrasekit.training.leakage import BenchmarkStringFilter, collect_test_strings

logger = logging.getLogger(__name__)

PARAPHRASE_FILE = "paraphrase_triplets.jsonl.gz"
CONTEXT_FILE = "context_triplets.jsonl.gz"
#: The files written by :func:`build_phrase_bert_dataset`.
OUTPUT_FILES: tuple[str, ...] = (PARAPHRASE_FILE, CONTEXT_FILE, "report.json")
#: Paraphrase sources (PPDB files are read on their train split only).
PARAPHRASE_SOURCES: tuple[str, ...] = ("ppdb", "ppdb_filtered", "wordnet")
#: Sources of :func:`labelled_ppdb_triplets` (opt-in: ``labelled_ppdb=True``).
LABELLED_SOURCES: tuple[str, ...] = ("ppdb:labelled", "ppdb_filtered:labelled")
#: Corpora used for contexts by default: long documents (120-token windows) and no dev split.
DEFAULT_CONTEXT_CORPORA: tuple[str, ...] = ("bbc_news", "20newsgroups", "arxiv_abstracts_cc0")
#: Corpus words sampled for contexts (spaCy parses ~2-5k words/s on two busy cores).
DEFAULT_MAX_WORDS = 400_000
DEFAULT_MAX_PARAPHRASE = 100_000
DEFAULT_MAX_CONTEXT = 30_000
CONTEXT_TOKENS = 120
MAX_CONTEXT_PHRASE_WORDS = 8

_WORD_RE = re.compile(r"[^\W_](?:[\w'’&./-]*[^\W_])?")
_VOCAB_WORD_RE = re.compile(r"^[a-z]{3,}(?:-[a-z]+)*$")


def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


# ---------------------------------------------------------------------------------- words
def content_word(token: str, stop_words: frozenset[str] | None = None) -> str | None:
    """The lower-cased word of a whitespace token when it is a non-stopword, else None.

    Outer punctuation is ignored ("(bank," -> "bank"); a token without a letter is no word.
    """
    word = token.lower().replace("’", "'").strip(".,;:!?\"'()[]{}")
    if not word or not any(c.isalpha() for c in word):
        return None
    return None if word in (stop_words if stop_words is not None else _stop_words()) else word


def content_words(text: str, stop_words: frozenset[str] | None = None) -> list[str]:
    """The non-stopwords of ``text`` (whitespace tokens), lower-cased, in order."""
    stops = stop_words if stop_words is not None else _stop_words()
    return [w for w in (content_word(t, stops) for t in text.split()) if w]


def _same_word(a: str, b: str) -> bool:
    """Equal, one (>= 4 letters) inside the other ("sedge"/"nutsedge"), sharing their first
    min(5, shorter length) >= 4 letters ("thank"/"thanking"), or spelling variants (same first
    letter, difflib ratio >= 0.8: "cappella"/"capella")."""
    if a == b or (len(a) >= 4 and a in b) or (len(b) >= 4 and b in a):
        return True
    k = min(5, len(a), len(b))
    if k >= 4 and a[:k] == b[:k]:
        return True
    return k >= 4 and a[0] == b[0] and difflib.SequenceMatcher(None, a, b).ratio() >= 0.8


def lexically_disjoint(a: str, b: str, stop_words: frozenset[str] | None = None) -> bool:
    """True when both texts have a content word and none of ``a``'s is (a variant of) one of
    ``b``'s (:func:`_same_word`) — the paper's constraint on positives ("no non-stopword tokens
    that also occur in p")."""
    stops = stop_words if stop_words is not None else _stop_words()
    wa, wb = content_words(a, stops), content_words(b, stops)
    if not wa or not wb:
        return False
    return not any(_same_word(x, y) for x in wa for y in wb)


def corrupt_phrase(text: str, vocabulary: Sequence[str], rng: random.Random,
                   stop_words: frozenset[str] | None = None,
                   avoid: frozenset[str] = frozenset()) -> str | None:
    """``text`` with one random non-stopword token replaced by a random vocabulary word.

    The replacement is a different word, not a stopword and not in ``avoid`` (e.g. the words
    of the positive); a capitalised token gets a capitalised replacement. None when ``text``
    has no non-stopword or no replacement is found.
    """
    stops = stop_words if stop_words is not None else _stop_words()
    tokens = text.split()
    slots = [i for i, t in enumerate(tokens) if content_word(t, stops)]
    if not slots or not vocabulary:
        return None
    i = rng.choice(slots)
    old = content_word(tokens[i], stops)
    for _ in range(20):
        new = rng.choice(vocabulary)
        if new != old and new not in stops and new not in avoid:
            break
    else:
        return None
    tokens[i] = new.capitalize() if tokens[i][:1].isupper() else new
    return " ".join(tokens)


# ---------------------------------------------------------------------------------- paraphrases
#: WordNet files whose synsets pair common names with Latin binomials ("grizzly bear" /
#: "Ursus horribilis").
TAXONOMIC_LEXFILES = frozenset({"noun.animal", "noun.plant"})
_BINOMIAL_RE = re.compile(r"^[A-Z][a-z]+ [a-z]+$")  # "Genus species"


def is_binomial(member: str, lexfile: str) -> bool:
    """Whether a WordNet member is a Latin binomial name ("Ursus horribilis") of an animal or
    plant synset; a taxonomic name says nothing about paraphrasing everyday phrases."""
    return lexfile in TAXONOMIC_LEXFILES and bool(_BINOMIAL_RE.match(member))


def without_binomials(synsets: Sequence[Synset]) -> tuple[list[Synset], int]:
    """The synsets with their binomial members (:func:`is_binomial`) removed, and how many."""
    out, dropped = [], 0
    for s in synsets:
        keep = [m for m in s.members if not is_binomial(m, s.lexfile)]
        dropped += len(s.members) - len(keep)
        out.append(replace(s, members=keep) if len(keep) < len(s.members) else s)
    return out, dropped


def paraphrase_pairs(data_dir: Path, sources: Sequence[str], max_pairs_per_synset: int,
                     rng: random.Random, drop_binomials: bool = False,
                     stats: dict[str, Any] | None = None) -> list[tuple[str, str, str]]:
    """Candidate (a, b, source) paraphrase pairs: PPDB train positives and WordNet synonyms
    (without Latin binomials if ``drop_binomials``; their count goes to ``stats``)."""
    pairs: list[tuple[str, str, str]] = []
    for name in ("ppdb", "ppdb_filtered"):
        if name in sources:
            for a, b, pos in read_ppdb(data_dir / name / f"{name}.json", "train"):
                if pos:
                    pairs.append((strip_outer_punct(a), strip_outer_punct(b), name))
    if "wordnet" in sources:
        synsets = read_wordnet(data_dir / "wordnet")
        if drop_binomials:
            synsets, dropped = without_binomials(synsets)
            if stats is not None:
                stats["wordnet_binomial_members_dropped"] = dropped
        pairs.extend((a, b, "wordnet") for a, b in
                     wordnet_pairs(synsets, max_pairs_per_synset, rng))
    return pairs


def word_vocabulary(tokenizer: Any) -> list[str]:
    """The backbone tokenizer's whole-word entries of >= 3 letters that are not stopwords,
    sorted: the "vocabulary" negatives draw their replacement word from (as in the paper)."""
    stops = _stop_words()
    return sorted(w for w in tokenizer.get_vocab() if _VOCAB_WORD_RE.match(w) and w not in stops)


def build_paraphrase_triplets(
    pairs: Iterable[tuple[str, str, str]], filt: BenchmarkStringFilter,
    neg_filter: BenchmarkStringFilter, rng: random.Random, vocabulary: Sequence[str],
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Triplets from candidate pairs (dedupe, test-string and lexical-diversity filters,
    negatives corrupted with ``vocabulary`` words), shuffled with ``rng``; and statistics."""
    stops = _stop_words()
    kept: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    dropped: Counter[str] = Counter()
    for a, b, src in pairs:
        a, b = (" ".join(x.replace("’", "'").split()) for x in (a, b))
        ka, kb = normalize(a), normalize(b)
        if not (a and b) or ka == kb or not (valid_phrase(a) and valid_phrase(b)):
            dropped[f"{src}:invalid"] += 1
            continue
        key = (min(ka, kb), max(ka, kb))
        if key in seen:
            dropped[f"{src}:duplicate"] += 1
            continue
        seen.add(key)
        if not filt.keep_pair(a, b):
            dropped[f"{src}:test_string"] += 1
            continue
        if not lexically_disjoint(a, b, stops):
            dropped[f"{src}:lexical_overlap"] += 1
            continue
        kept.append((a, b, src))
    triplets: list[dict[str, str]] = []
    redrawn = 0
    for a, b, src in kept:
        anchor, positive = (a, b) if rng.random() < 0.5 else (b, a)
        avoid = frozenset(content_words(f"{anchor} {positive}", stops))
        negative = None
        for _ in range(5):
            negative = corrupt_phrase(anchor, vocabulary, rng, stops, avoid)
            if negative is None or neg_filter.keep_phrase(negative):
                break
            redrawn += 1
            negative = None
        if negative is None:
            dropped[f"{src}:no_negative"] += 1
            continue
        triplets.append({"anchor": anchor, "positive": positive, "negative": negative,
                         "source": src})
    rng.shuffle(triplets)
    stats = {"candidates": sum(dropped.values()) + len(triplets),
             "triplets_per_source": dict(Counter(t["source"] for t in triplets)),
             "dropped": dict(sorted(dropped.items())), "negative_vocabulary": len(vocabulary),
             "negatives_redrawn_test_string": redrawn}
    return triplets, stats


def labelled_ppdb_triplets(data_dir: Path, names: Sequence[str], filt: BenchmarkStringFilter,
                           neg_filter: BenchmarkStringFilter, rng: random.Random,
                           ) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Triplets from the *judged* pairs of the PPDB / PPDB-filtered **train** splits: (p, p+, p−)
    where (p, p+) is labelled a paraphrase and (p, p−) is labelled not one.

    The paper's negatives are random one-word swaps, easy to tell apart from p by meaning
    alone. PPDB's judged negatives are harder: in PPDB-filtered they share as many words with
    p as the positives do ("particularly difficult": "very difficult" vs "been difficult"),
    so only the meaning separates them. The lexical-diversity rule is not applied (positives
    and negatives overlap p alike by construction). Each positive of an anchor that also has
    a judged negative gives one triplet, with a random one of its negatives (seeded).
    Benchmark test/dev strings are filtered as for the other sources; dev/test items are
    never read (``read_ppdb(..., "train")``).
    """
    triplets: list[dict[str, str]] = []
    dropped: Counter[str] = Counter()
    for name in names:
        src = f"{name}:labelled"
        pos: dict[str, set[str]] = defaultdict(set)
        neg: dict[str, set[str]] = defaultdict(set)
        for a, b, is_pos in read_ppdb(data_dir / name / f"{name}.json", "train"):
            a, b = (" ".join(strip_outer_punct(x).replace("’", "'").split()) for x in (a, b))
            if not (a and b) or normalize(a) == normalize(b) or not (
                    valid_phrase(a) and valid_phrase(b)):
                dropped[f"{src}:invalid"] += 1
                continue
            for x, y in ((a, b), (b, a)):
                (pos if is_pos else neg)[x].add(y)
        for anchor in sorted(pos):
            negatives = sorted(n for n in neg.get(anchor, ()) if neg_filter.keep_phrase(n))
            if not negatives:
                dropped[f"{src}:no_negative"] += len(pos[anchor])
                continue
            for positive in sorted(pos[anchor]):
                if not filt.keep_pair(anchor, positive):
                    dropped[f"{src}:test_string"] += 1
                    continue
                triplets.append({"anchor": anchor, "positive": positive,
                                 "negative": rng.choice(negatives), "source": src})
    rng.shuffle(triplets)
    return triplets, {"triplets_per_source": dict(Counter(t["source"] for t in triplets)),
                      "dropped": dict(sorted(dropped.items()))}


# ---------------------------------------------------------------------------------- contexts
Occurrences = dict[str, list[tuple[int, int, int]]]


def spacy_occurrences(texts: Mapping[int, str], nlp: Any, show_progress: bool = True,
                      batch_size: int = 16) -> Occurrences:
    """``{normalised phrase: [(text id, start char, end char)]}`` of multi-word noun chunks and
    non-numeric entities (PhraseExtractor cleaning, 2-8 words, no markup)."""
    from phrasekit.phrases.extract import (
        DEFAULT_REJECT_PATTERN,
        NUMERIC_ENTITY_TYPES,
        PhraseExtractor,
    )

    extractor = PhraseExtractor(spacy_model=nlp, lowercase=False,
                                max_tokens=MAX_CONTEXT_PHRASE_WORDS)
    reject = re.compile(DEFAULT_REJECT_PATTERN)
    found: Occurrences = defaultdict(list)
    stream = nlp.pipe(((t, i) for i, t in texts.items()), as_tuples=True,
                      batch_size=batch_size)
    for sdoc, i in tqdm(stream, total=len(texts), desc="context phrases[spaCy]", unit="doc",
                        disable=not show_progress):
        excluded = {k for e in sdoc.ents if e.label_ in NUMERIC_ENTITY_TYPES
                    for k in range(e.start, e.end)}
        spans = {}
        for span in [*(e for e in sdoc.ents if e.label_ not in NUMERIC_ENTITY_TYPES),
                     *sdoc.noun_chunks]:
            clean = extractor.clean_span(span, excluded)
            if clean is not None:
                spans[(clean.start_char, clean.end_char)] = clean.text
        for (s, e), surface in sorted(spans.items()):
            if len(surface.split()) >= 2 and valid_phrase(surface) and not reject.search(surface):
                found[normalize(surface)].append((i, s, e))
    return dict(found)


def _match_key(word: str) -> str:
    return word.lower().replace("’", "'").rstrip(".")


def vocabulary_occurrences(texts: Mapping[int, str], phrases: Iterable[str]) -> Occurrences:
    """Occurrences of the given (multi-word) phrases, found by a word n-gram scan of ``texts``
    (case-insensitive; words are letter/digit runs with inner ' & . / -)."""
    keys: dict[str, str] = {}
    for p in phrases:
        words = _WORD_RE.findall(p)
        if 2 <= len(words) <= MAX_CONTEXT_PHRASE_WORDS and valid_phrase(p):
            keys[" ".join(_match_key(w) for w in words)] = normalize(p)
    lengths = sorted({k.count(" ") + 1 for k in keys})
    found: Occurrences = defaultdict(list)
    for i, text in texts.items():
        words = list(_WORD_RE.finditer(text))
        norm = [_match_key(m.group()) for m in words]
        for n in lengths:
            for j in range(len(words) - n + 1):
                phrase = keys.get(" ".join(norm[j : j + n]))
                if phrase is not None:
                    found[phrase].append((i, words[j].start(), words[j + n - 1].end()))
    return dict(found)


def masked_window(text: str, start: int, end: int, tokenizer: Any, max_tokens: int = 120,
                  mask: str | None = None, offsets: Sequence[tuple[int, int]] | None = None
                  ) -> str:
    """About ``max_tokens`` WordPiece tokens of ``text`` centred on ``text[start:end]``, that
    span replaced by the mask token, cut at word boundaries, whitespace collapsed.

    ``offsets``: the tokenizer's character offsets of ``text`` (computed when not given).
    """
    mask = mask or tokenizer.mask_token
    if offsets is None:
        offsets = tokenizer(text, add_special_tokens=False,
                            return_offsets_mapping=True, verbose=False)["offset_mapping"]
    inside = [k for k, (s, e) in enumerate(offsets) if s < end and e > start]
    if not inside:
        raise ValueError(f"span {start}:{end} holds no token of the text")
    first, last = inside[0], inside[-1]
    budget = max(0, max_tokens - 1)
    left = min(first, budget // 2)
    right = min(len(offsets) - 1 - last, budget - left)
    left = min(first, budget - right)
    lo, hi = first - left, last + right
    while lo < first and offsets[lo][0] > 0 and not text[offsets[lo][0] - 1].isspace():
        lo += 1  # do not start inside a word
    while hi > last and offsets[hi][1] < len(text) and not text[offsets[hi][1]].isspace():
        hi -= 1  # do not end inside a word
    begin = offsets[lo][0] if lo < first else start
    stop = offsets[hi][1] if hi > last else end
    return " ".join((text[begin:start] + mask + text[end:stop]).split())


def build_context_triplets(
    pieces: Sequence[tuple[str, str]], occurrences: Occurrences, tokenizer: Any,
    filt: BenchmarkStringFilter, rng: random.Random, max_context: int,
    context_tokens: int = CONTEXT_TOKENS,
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """One (phrase, masked context, other masked context) triplet per phrase, most frequent
    phrases first; and statistics."""
    order = list(occurrences)
    rng.shuffle(order)  # ties in frequency: seeded random order
    order.sort(key=lambda k: -len(occurrences[k]))
    dropped: Counter[str] = Counter()
    chosen: list[tuple[str, int, int, int, int]] = []
    for key in order:
        if len(chosen) >= max_context:
            break
        piece, s, e = rng.choice(occurrences[key])
        surface = " ".join(pieces[piece][1][s:e].split())
        if not filt.keep_phrase(surface):
            dropped["test_string"] += 1
            continue
        chosen.append((surface, piece, s, e, len(occurrences[key])))
    offsets: dict[int, Any] = {}
    positives: list[str] = []
    for _surface, piece, s, e, _ in chosen:
        text = pieces[piece][1]
        if piece not in offsets:
            offsets[piece] = tokenizer(text, add_special_tokens=False,
                                       return_offsets_mapping=True, verbose=False)["offset_mapping"]
        positives.append(masked_window(text, s, e, tokenizer, context_tokens,
                                       offsets=offsets[piece]))
    triplets: list[dict[str, str]] = []
    counts: list[int] = []
    for i, (surface, piece, _, _, count) in enumerate(chosen):
        key = normalize(surface)
        negative = None
        for _ in range(20):
            j = rng.randrange(len(chosen))
            if chosen[j][1] != piece and key not in normalize(positives[j]):
                negative = positives[j]
                break
        if negative is None:
            dropped["no_negative"] += 1
            continue
        triplets.append({"anchor": surface, "positive": positives[i], "negative": negative,
                         "source": pieces[piece][0]})
        counts.append(count)
    lengths = sorted(len(t["positive"].split()) for t in triplets)
    stats = {"phrases_found": len(occurrences), "triplets_per_corpus":
             dict(Counter(t["source"] for t in triplets)), "dropped": dict(dropped),
             "median_context_words": lengths[len(lengths) // 2] if lengths else 0,
             "min_occurrences_kept": min(counts, default=0)}
    return triplets, stats


# ---------------------------------------------------------------------------------- main
def _jsonl_lines(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    for r in rows:
        yield json.dumps(r, ensure_ascii=False) + "\n"


def read_triplets(path: str | Path, limit: int | None = None) -> list[dict[str, str]]:
    """The first ``limit`` triplets (all when None) of a ``*_triplets.jsonl.gz`` file."""
    out: list[dict[str, str]] = []
    if limit == 0:
        return out
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            try:
                rec = json.loads(line)
                row = {k: str(rec[k]) for k in ("anchor", "positive", "negative")}
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{lineno}: not a triplet record ({exc})") from exc
            if not all(row.values()):
                raise ValueError(f"{path}:{lineno}: empty anchor, positive or negative")
            row["source"] = str(rec.get("source", ""))
            out.append(row)
            if limit is not None and len(out) >= limit:
                break
    return out


def load_phrase_vocabs(spec: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """``{corpus: multi-word surface forms}`` from PhraseVocabulary objects or JSON paths."""
    from phrasekit.phrases.vocabulary import PhraseVocabulary

    out: dict[str, list[str]] = {}
    for corpus, vocab in (spec or {}).items():
        if not isinstance(vocab, PhraseVocabulary):
            path = Path(vocab)
            if not path.is_file():
                raise FileNotFoundError(f"phrase vocabulary for {corpus!r} not found: {path}")
            vocab = PhraseVocabulary.from_json(path)
        out[corpus] = [s for s in vocab.surface if len(s.split()) >= 2]
    return out


def build_phrase_bert_dataset(
    out_dir: str | Path,
    shared_dir: str | Path | None = None,
    max_paraphrase: int = DEFAULT_MAX_PARAPHRASE,
    max_context: int = DEFAULT_MAX_CONTEXT,
    max_words: int = DEFAULT_MAX_WORDS,
    corpora: Sequence[str | Path] | None = None,
    paraphrase_sources: Sequence[str] = PARAPHRASE_SOURCES,
    phrase_vocabs: Mapping[str, Any] | None = None,
    context_tokens: int = CONTEXT_TOKENS,
    max_pairs_per_synset: int = 6,
    drop_binomials: bool = False,
    labelled_ppdb: bool = False,
    benchmark_dir: str | Path | None = None,
    strict_filter: bool = True,
    seed: int = 0,
    nlp: Any = None,
    tokenizer: Any = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Build both triplet datasets into ``out_dir``; returns the report (also written).

    Args:
        out_dir: output folder (created; files replaced atomically).
        shared_dir: folder holding ``data/`` and ``corpora/`` (default: the shared folder).
        max_paraphrase / max_context: triplets kept of each kind (0 skips that kind).
        max_words: corpus words sampled for contexts (spread over ``corpora``).
        corpora: names under ``<shared>/corpora`` or paths (default
            :data:`DEFAULT_CONTEXT_CORPORA`).
        paraphrase_sources: subset of :data:`PARAPHRASE_SOURCES`.
        phrase_vocabs: ``{corpus name: PhraseVocabulary or its JSON path}``: for those
            corpora, the vocabulary's multi-word phrases replace the spaCy pass.
        context_tokens: WordPiece tokens per context window (mask included).
        drop_binomials: leave out WordNet's Latin binomials (:func:`is_binomial`), which made
            up ~45% of the WordNet triplets (a common name and its Linnaean name).
        labelled_ppdb: add :func:`labelled_ppdb_triplets` of the PPDB sources named in
            ``paraphrase_sources`` (sources ``ppdb:labelled`` / ``ppdb_filtered:labelled``),
            after the ``max_paraphrase`` cap, so the other triplets stay exactly as without.
        benchmark_dir / strict_filter: the test-string filter's data (default
            ``<shared>/data``) and whether a missing benchmark file is an error.
        nlp / tokenizer: a loaded spaCy pipeline / the backbone tokenizer (loaded when None).
    """
    from phrasekit.settings import shared_dir as find_shared

    unknown = set(paraphrase_sources) - set(PARAPHRASE_SOURCES)
    if unknown:
        raise ValueError(f"unknown paraphrase sources {sorted(unknown)}; "
                         f"choose from {PARAPHRASE_SOURCES}")
    for name, value in (("max_paraphrase", max_paraphrase), ("max_context", max_context),
                        ("max_words", max_words)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    if max_paraphrase == 0 and max_context == 0:
        raise ValueError("max_paraphrase and max_context are both 0: nothing to build")
    if context_tokens < 8:
        raise ValueError(f"context_tokens must be >= 8, got {context_tokens}")
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    out = Path(out_dir)
    root = Path(shared_dir) if shared_dir is not None else find_shared(required=True)
    data = root / "data"
    bench = Path(benchmark_dir) if benchmark_dir is not None else data
    names = list(DEFAULT_CONTEXT_CORPORA if corpora is None else corpora)
    vocabs = load_phrase_vocabs(phrase_vocabs)

    test_strings = collect_test_strings(bench, strict=strict_filter)
    if tokenizer is None:
        from transformers import AutoTokenizer

        from phrasekit.models.backbones import minilm_path

        tokenizer = AutoTokenizer.from_pretrained(str(minilm_path()))
    pair_filter, neg_filter, ctx_filter = (BenchmarkStringFilter(test_strings) for _ in range(3))

    # paraphrase triplets -------------------------------------------------------------------
    t = time.perf_counter()
    para: list[dict[str, str]] = []
    para_stats: dict[str, Any] = {}
    if max_paraphrase > 0:
        source_stats: dict[str, Any] = {}
        pairs = paraphrase_pairs(data, paraphrase_sources, max_pairs_per_synset,
                                 random.Random(seed), drop_binomials, source_stats)
        para, para_stats = build_paraphrase_triplets(pairs, pair_filter, neg_filter,
                                                     random.Random(seed + 1),
                                                     word_vocabulary(tokenizer))
        para_stats.update(source_stats)
        para_stats["available"] = len(para)
        para = para[:max_paraphrase]
        if labelled_ppdb:
            names_ppdb = [n for n in ("ppdb", "ppdb_filtered") if n in paraphrase_sources]
            labelled, para_stats["labelled"] = labelled_ppdb_triplets(
                data, names_ppdb, pair_filter, neg_filter, random.Random(seed + 3))
            para += labelled
    timings["paraphrases"] = round(time.perf_counter() - t, 1)

    # context triplets ----------------------------------------------------------------------
    t = time.perf_counter()
    ctx: list[dict[str, str]] = []
    ctx_stats: dict[str, Any] = {}
    corpus_stats: dict[str, Any] = {}
    if max_context > 0:
        if not names or max_words == 0:
            raise ValueError("context triplets need corpora and max_words > 0 "
                             "(or set max_context to 0)")
        corpora_root = root / "corpora" if (root / "corpora").is_dir() else None
        pieces, corpus_stats = corpus_sample(names, corpora_root, max_words, seed)
        occurrences: Occurrences = defaultdict(list)
        by_vocab = {i: text for i, (name, text) in enumerate(pieces) if name in vocabs}
        by_spacy = {i: text for i, (name, text) in enumerate(pieces) if name not in vocabs}
        for name, phrases in vocabs.items():
            texts = {i: x for i, x in by_vocab.items() if pieces[i][0] == name}
            for key, occ in vocabulary_occurrences(texts, phrases).items():
                occurrences[key].extend(occ)
        if by_spacy:
            if nlp is None:
                from phrasekit.phrases.extract import load_spacy

                nlp = load_spacy()
            for key, occ in spacy_occurrences(by_spacy, nlp, show_progress).items():
                occurrences[key].extend(occ)
        timings["context_phrases"] = round(time.perf_counter() - t, 1)
        ctx, ctx_stats = build_context_triplets(pieces, dict(occurrences), tokenizer,
                                                ctx_filter, random.Random(seed + 2),
                                                max_context, context_tokens)
        ctx_stats["mask_token"] = tokenizer.mask_token
        ctx_stats["phrases_from"] = {n: ("vocabulary" if n in vocabs else "spacy")
                                     for n in corpus_stats}
    timings["contexts"] = round(time.perf_counter() - t, 1)

    # write ---------------------------------------------------------------------------------
    out.mkdir(parents=True, exist_ok=True)
    write_gz_text(out / PARAPHRASE_FILE, _jsonl_lines(para))
    write_gz_text(out / CONTEXT_FILE, _jsonl_lines(ctx))
    timings["total"] = round(time.perf_counter() - t_start, 1)
    report: dict[str, Any] = {
        "out_dir": str(out),
        "paraphrase_triplets": len(para),
        "context_triplets": len(ctx),
        "paraphrase": para_stats,
        "context": ctx_stats,
        "corpora": corpus_stats,
        "test_string_filter": {
            "benchmark_dir": str(bench),
            "removed_paraphrase_pairs": pair_filter.removed_pairs_unique,
            "redrawn_negatives": neg_filter.removed_phrases_unique,
            "removed_context_phrases": ctx_filter.removed_phrases_unique,
            "note": "distinct pairs / strings, counted before the size caps; per_file counts "
                    "one in every benchmark file that holds the string",
            "per_file": {
                rel: {"test_strings": len(keys),
                      "removed_paraphrase_pairs": pair_filter.removed_pairs.get(rel, 0),
                      "redrawn_negatives": neg_filter.removed_phrases.get(rel, 0),
                      "removed_context_phrases": ctx_filter.removed_phrases.get(rel, 0)}
                for rel, keys in test_strings.items()},
        },
        "examples": {"paraphrase": para[:3], "context": ctx[:2]},
        "timings_s": timings,
        "params": {
            "shared_dir": str(root), "max_paraphrase": max_paraphrase,
            "max_context": max_context, "max_words": max_words,
            "corpora": [str(c) for c in names], "paraphrase_sources": list(paraphrase_sources),
            "phrase_vocabs": {k: str(v) for k, v in (phrase_vocabs or {}).items()},
            "context_tokens": context_tokens, "max_pairs_per_synset": max_pairs_per_synset,
            "drop_binomials": drop_binomials, "labelled_ppdb": labelled_ppdb, "seed": seed,
        },
    }
    write_json(out / "report.json", report)
    logger.info("Phrase-BERT data: %d paraphrase and %d context triplets -> %s", len(para),
                len(ctx), out)
    return report
