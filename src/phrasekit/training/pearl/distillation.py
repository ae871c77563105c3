"""Teacher distillation for PEARL: a transfer set, its teachers' vectors, and step batches.

Fine-tuning on phrases alone wears away what the backbone knew (entity names, renamings) and
cannot add what a larger model knows. So beside InfoNCE the student also matches, on a fixed
*transfer set*, the in-batch similarity structure of one or more frozen teachers (their cosines
averaged): ``mpnet`` brings knowledge the 22M student lacks, ``minilm`` (the backbone itself)
rehearses what fine-tuning would otherwise forget.

The transfer set is a seeded sample of the training phrases plus entity names of the training
data (typed person, organisation, place, work, ...) each paired with a *name variant* made by
rule: acronym, dropped article or qualifier, dropped token, reordering. Variants equal to a
benchmark string are left out. Teacher vectors are computed once and cached in chunks, so an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from phrasekit.encoders.cache import encode_cached, stored_keys, text_key

logger = logging.getLogger(__name__)

#: Phrase types whose phrases are names (the NP entity types of ``PHRASE_TYPES``).
NAME_TYPES = frozenset(f"NP-{t}" for t in ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC",
                                           "PRODUCT", "EVENT", "WORK_OF_ART", "LAW"))
_MINOR = frozenset({"of", "the", "and", "for", "in", "on", "at", "to", "a", "an", "&", "de"})
_QUALIFIER = re.compile(r"\s*(\([^()]*\)|,[^,]*)$")
CHUNK = 2048  # teacher vectors are cached after every chunk


def _acronym(tokens: list[str]) -> str | None:
    caps = [t for t in tokens if t[:1].isupper() and t.lower() not in _MINOR]
    return "".join(t[0] for t in caps) if len(caps) >= 2 else None


def _person_variants(tokens: list[str]) -> list[str | None]:
    """"Marshawn Lynch" -> "Lynch", "Lynch, Marshawn", "M. Lynch"."""
    if len(tokens) < 2:
        return []
    first, last = tokens[0], tokens[-1]
    return [last, f"{last}, {' '.join(tokens[:-1])}",
            f"{first[0]}. {' '.join(tokens[1:])}" if first[:1].isalpha() and len(first) > 2
            else None]


def _other_variants(name: str, tokens: list[str]) -> list[str | None]:
    """Acronym, "of" reordering, no article, no qualifier, a middle token dropped."""
    lower = [t.lower() for t in tokens]
    out = [_acronym(tokens)]
    if "of" in lower[1:-1]:  # "University of Chicago" -> "Chicago University"
        i = lower.index("of")
        head = [t for t in tokens[:i] if t.lower() not in ("the", "a", "an")]
        out.append(" ".join(tokens[i + 1:] + head) if head else None)
    stripped = _QUALIFIER.sub("", name).strip()
    out.append(stripped if stripped != name else None)
    if lower[0] == "the" and len(tokens) > 1:
        out.append(" ".join(tokens[1:]))
    if len(tokens) >= 3:
        out.append(" ".join(tokens[:1] + tokens[2:]))
    return out


def name_variants(name: str, person: bool = False) -> list[str]:
    """Rule-made variants of a proper name (persons: surname, "Surname, First", initial;
    others: acronym, reordered "X of Y", without article or qualifier, a token dropped);
    never the name itself, none for names that do not start with a capital or digit."""
    tokens = name.split()
    if not tokens or not (name[0].isupper() or name[0].isdigit()):
        return []
    out = _person_variants(tokens) if person else _other_variants(name, tokens)
    return list(dict.fromkeys(v for v in out if v and v != name))


@dataclass
class TransferSet:
    """Texts the student is distilled on, with their teachers' averaged cosine structure.

    ``texts[:n_plain]`` are sampled phrases; after them come (name, variant) pairs, adjacent.
    ``vectors`` holds each teacher's unit rows, concatenated and scaled by 1/sqrt(#teachers),
    so a dot product of two rows is the teachers' mean cosine.
    """

    texts: list[str]
    n_plain: int
    vectors: np.ndarray

    def batch(self, step: int, size: int, seed: int) -> np.ndarray:
        """Row indices for one step: half plain phrases, half (name, variant) pairs."""
        rng = np.random.default_rng([seed, step, 7])
        n_pairs = (len(self.texts) - self.n_plain) // 2
        k_pairs = min(size // 4, n_pairs)
        plain = rng.choice(self.n_plain, size=min(size - 2 * k_pairs, self.n_plain),
                           replace=False)
        pairs = self.n_plain + 2 * rng.choice(n_pairs, size=k_pairs, replace=False)
        return np.concatenate([plain, pairs, pairs + 1]).astype(np.int64)

    def targets(self, rows: np.ndarray) -> torch.Tensor:
        """The teachers' vectors of ``rows`` (dot products = mean teacher cosine)."""
        return torch.from_numpy(self.vectors[rows])


def select_transfer_texts(texts: Sequence[str], type_names: Sequence[str], types: np.ndarray,
                          n_plain: int, n_names: int, seed: int,
                          keep: object = None) -> tuple[list[str], int]:
    """A seeded sample of ``n_plain`` phrases and up to ``n_names`` (name, variant) pairs.

    ``keep(text) -> bool`` (e.g. the benchmark-string filter) decides which variants may be used.
    """
    rng = random.Random(seed)
    order = list(range(len(texts)))
    rng.shuffle(order)
    plain = [texts[i] for i in order[:n_plain]]
    pairs: list[str] = []
    for i in order:
        if len(pairs) >= 2 * n_names:
            break
        if types[i] < 0 or type_names[types[i]] not in NAME_TYPES:
            continue
        person = type_names[types[i]] == "NP-PERSON"
        options = [v for v in name_variants(texts[i], person) if keep is None or keep(v)]
        if options:
            pairs += [texts[i], rng.choice(options)]
    return plain + pairs, len(plain)


def _cached_count(cache: Path, texts: Sequence[str]) -> int:
    """How many leading ``texts`` the cache file already holds (0 when there is none)."""
    if not cache.is_file():
        return 0
    with np.load(cache, allow_pickle=False) as z:
        have = set(stored_keys(z["keys"]))
    return next((i for i, t in enumerate(texts) if text_key(t) not in have), len(texts))


def teacher_vectors(teachers: Sequence[object], texts: Sequence[str], cache_dir: Path,
                    show_progress: bool = True) -> np.ndarray:
    """Each teacher's unit vectors of ``texts`` (cached per teacher, chunk by chunk),
    concatenated and scaled so that dot products average the teachers' cosines."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    blocks = []
    for teacher in teachers:
        name = str(getattr(teacher, "name", "teacher")).replace("/", "_")
        cache = cache_dir / f"teacher-{name}.npz"
        bar = tqdm(total=len(texts), desc=f"teacher {name}", disable=not show_progress,
                   unit="text")
        done = _cached_count(cache, texts)  # a finished or partial cache is not re-read per chunk
        bar.update(done)
        for start in range(done - done % CHUNK, len(texts), CHUNK):  # each chunk saved: resumable
            if start + CHUNK > done:
                encode_cached(teacher, texts[: start + CHUNK], cache, show_progress=False)
                bar.update(min(CHUNK, len(texts) - start) - max(0, done - start))
        bar.close()
        vec = encode_cached(teacher, texts, cache, show_progress=False)
        vec /= np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
        blocks.append(vec)
    return (np.concatenate(blocks, axis=1) / np.sqrt(len(blocks))).astype(np.float32)
