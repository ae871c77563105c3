"""A word budget of corpus text for the data builders (PEARL, Phrase-BERT, UCTopic).

:func:`corpus_sample` spreads ``max_words`` evenly over the corpora (what small corpora leave
goes to the others), reads documents in a seeded random order, never reads a document of a
``test`` split, and cuts long documents to their first :data:`MAX_DOC_WORDS` words.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Sequence
from pathlib import Path

from phrasekit.io import Document, read_corpus

logger = logging.getLogger(__name__)

#: Corpora of ``<shared>/corpora`` used by default (all usable without their labels).
DEFAULT_CORPORA: tuple[str, ...] = (
    "bbc_news", "20newsgroups", "arxiv_abstracts_cc0", "ag_news_test", "inspec",
    "restaurant_reviews_absa14",
)
#: Documents whose ``split`` field is one of these are never read (evaluation data).
SKIPPED_SPLITS = frozenset({"test", "testing"})
#: Corpora whose text is hard-wrapped at ~72 columns: single newlines are joined.
UNWRAP_CORPORA = frozenset({"20newsgroups"})
#: Longer documents contribute only their first words (more, shorter documents = diversity).
MAX_DOC_WORDS = 1500


def _truncate_words(text: str, max_words: int) -> tuple[str, int]:
    """The first ``max_words`` whitespace words of ``text`` (layout kept) and their count."""
    count = 0
    for m in re.finditer(r"\S+", text):
        count += 1
        if count == max_words:
            return text[: m.end()], count
    return text, count


def _allocate(available: dict[str, int], budget: int) -> dict[str, int]:
    """Split ``budget`` words evenly over corpora; what small corpora leave goes to the rest."""
    shares: dict[str, int] = {}
    left = budget
    pending = sorted(available, key=lambda c: available[c])
    while pending:
        share = left // len(pending)
        name = pending.pop(0)
        shares[name] = min(available[name], share)
        left -= shares[name]
    return shares


def _resolve_corpus(item: str | Path, corpora_root: Path | None) -> tuple[str, Path]:
    path = Path(item)
    if path.exists():
        return (path.parent.name if path.is_file() else path.name), path
    if corpora_root is None:
        raise FileNotFoundError(f"corpus {item!r}: not a path and no shared corpora folder")
    cand = corpora_root / str(item)
    if not cand.exists():
        raise FileNotFoundError(f"corpus {item!r} not found under {corpora_root}")
    return str(item), cand


def _read_usable(corpora: Sequence[str | Path], corpora_root: Path | None
                 ) -> tuple[dict[str, list[Document]], dict[str, dict[str, int]]]:
    """The documents of each corpus outside the skipped splits, and the counts per corpus."""
    docs_by: dict[str, list[Document]] = {}
    stats: dict[str, dict[str, int]] = {}
    for item in corpora:
        name, path = _resolve_corpus(item, corpora_root)
        docs = read_corpus(path)
        kept = [d for d in docs if str(d.meta.get("split", "")).lower() not in SKIPPED_SPLITS]
        docs_by[name] = kept
        stats[name] = {"documents": len(docs), "skipped_test_split": len(docs) - len(kept)}
    return docs_by, stats


def _take(name: str, docs: list[Document], share: int, rng: random.Random
          ) -> tuple[list[str], int]:
    """Texts of one corpus in seeded random order up to ``share`` words, and the words used."""
    order = list(range(len(docs)))
    rng.shuffle(order)
    texts: list[str] = []
    used_words = 0
    for i in order:
        if used_words >= share:
            break
        text = docs[i].text
        if name in UNWRAP_CORPORA:
            text = re.sub(r"(?<!\n)\n(?!\n)", " ", text)
        text, n = _truncate_words(text, min(MAX_DOC_WORDS, share - used_words))
        if not text.strip():
            continue
        texts.append(text)
        used_words += n
    return texts, used_words


def corpus_sample(
    corpora: Sequence[str | Path], corpora_root: Path | None, max_words: int, seed: int
) -> tuple[list[tuple[str, str]], dict[str, dict[str, int]]]:
    """(corpus name, text) pieces to parse, ``max_words`` spread over the corpora; stats.

    ``corpora``: folder names under ``corpora_root`` or paths to corpus files or folders.
    """
    docs_by, stats = _read_usable(corpora, corpora_root)
    available = {
        name: sum(min(len(d.text.split()), MAX_DOC_WORDS) for d in docs)
        for name, docs in docs_by.items()
    }
    shares = _allocate(available, max_words)
    rng = random.Random(seed)
    pieces: list[tuple[str, str]] = []
    for name, docs in docs_by.items():
        texts, used_words = _take(name, docs, shares[name], rng)
        pieces.extend((name, text) for text in texts)
        stats[name].update(words_used=used_words, documents_used=len(texts))
    return pieces, stats
