"""Word tokens shared by topic terms, their metrics and the multi-facet word space.

One tokenizer everywhere, so that a term counted by a topic model and by a metric is the same.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from array import array
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from itertools import pairwise

import numpy as np

#: Letters and digits of any script (``zürich``, ``банк``), with inner hyphens and apostrophes.
TOKEN_PATTERN = r"[^\W_]+(?:['\-][^\W_]+)*"
_TOKEN_RE = re.compile(TOKEN_PATTERN)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of any script (hyphen / apostrophe compounds kept, possessive
    ``'s`` cut); accents composed first, so that a decomposed ``é`` stays inside its word."""
    text = text.lower().replace("\u2019", "'")
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    out = []
    for tok in _TOKEN_RE.findall(text):
        if tok.endswith("'s"):
            tok = tok[:-2]
        if tok:
            out.append(tok)
    return out


def _digest_text(digest: hashlib.blake2b, text: str) -> None:
    """Add one text to a running digest, its length first so that boundaries count."""
    data = text.encode("utf-8", "surrogatepass")
    digest.update(len(data).to_bytes(8, "little"))
    digest.update(data)


def texts_digest(texts: Iterable[str]) -> str:
    """A digest of a sequence of texts, order and boundaries included: equal for the same
    corpus, different (in practice) for any other."""
    digest = hashlib.blake2b(digest_size=16)
    for text in texts:
        _digest_text(digest, text)
    return digest.hexdigest()


class TokenDocs(Sequence[list[str]]):
    """``tokenize`` of every text, kept as one int32 array of token ids plus offsets: a
    tokenized corpus costs 4 bytes per token instead of about 64 as lists of strings (2.6 GB
    for 20newsgroups x 10), and each document's token list is rebuilt when it is read."""

    def __init__(self, texts: Iterable[str]) -> None:
        digest = hashlib.blake2b(digest_size=16)

        def tokens() -> Iterator[list[str]]:
            for text in texts:
                _digest_text(digest, text)
                yield tokenize(text)

        self._fill(tokens())
        #: ``texts_digest`` of the texts tokenized (None when built from token lists), so that
        #: a later step can tell whether it may reuse this instead of tokenizing again.
        self.source: str | None = digest.hexdigest()

    @classmethod
    def of(cls, token_docs: Iterable[Sequence[str]]) -> TokenDocs:
        """``token_docs`` as ``TokenDocs`` (itself when it already is one)."""
        if isinstance(token_docs, TokenDocs):
            return token_docs
        docs = cls.__new__(cls)
        docs._fill(token_docs)
        docs.source = None
        return docs

    def _fill(self, token_lists: Iterable[Sequence[str]]) -> None:
        index: dict[str, int] = {}
        ids, offsets = array("i"), array("q", [0])
        for toks in token_lists:
            ids.extend([index.setdefault(tok, len(index)) for tok in toks])
            offsets.append(len(ids))
        self.words = list(index)  #: token strings by id, in order of first occurrence
        self.ids = np.frombuffer(ids, dtype=np.int32) if ids else np.zeros(0, np.int32)
        self.offsets = np.frombuffer(offsets, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> list[str]:  # type: ignore[override]
        if not -len(self) <= i < len(self):
            raise IndexError(f"document {i} out of range ({len(self)} documents)")
        i %= len(self)
        words = self.words
        return [words[j] for j in self.ids[self.offsets[i]:self.offsets[i + 1]].tolist()]

    def __iter__(self) -> Iterator[list[str]]:
        words, ids, offsets = self.words, self.ids, self.offsets.tolist()
        for lo, hi in pairwise(offsets):
            yield [words[j] for j in ids[lo:hi].tolist()]


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """spaCy's English stop words (the same list as the n-gram helper)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(w.lower().replace("\u2019", "'") for w in STOP_WORDS)


def snippet(text: str, max_chars: int = 240) -> str:
    """The start of ``text`` on one line, cut at a word boundary, with "…" when cut.

    A short first line (a title) is set off from the rest with " — ".
    """
    head, sep, rest = text.strip().partition("\n")
    if sep and rest.strip() and len(head) <= 150 and head.strip()[-1:] not in ".:;,":
        text = f"{head.strip()} — {rest}"
    flat = " ".join(text.split())
    if len(flat) <= max_chars:
        return flat
    cut = flat.rfind(" ", 0, max_chars)
    if cut < max_chars // 2:
        cut = max_chars
    return flat[:cut].rstrip(" ,;:") + "…"


#: Line breaks (a blank line would end a list item and start raw Markdown or HTML) and the
#: bidirectional controls that make displayed text read other than it is.
_MD_BREAKS = re.compile(r"[\r\n\v\f\x85\u2028\u2029]+")
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def md_plain(text: str) -> str:
    """``text`` on one line, without bidirectional controls."""
    return _BIDI_CONTROLS.sub("", _MD_BREAKS.sub(" ", text))


def md_escape(text: str) -> str:
    """``text`` as Markdown text: on one line, without bidirectional controls, and with the
    characters that would start emphasis, code, links, HTML, headings or table cells escaped."""
    text = md_plain(text)
    for ch in ("\\", "*", "_", "`", "[", "]", "<", ">", "#", "|"):
        text = text.replace(ch, "\\" + ch)
    return text
