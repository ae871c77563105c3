"""Entity clustering of mentions *in context* (UCTopic Table 1): loaders, KMeans, ACC and NMI.

Unlike :mod:`phrasekit.eval.clustering` (mention strings alone, PEARL's protocol), every
instance here is a mention in its sentence, ``(sentence, (char_start, char_end), gold type)``,
so context-aware encoders (:class:`~phrasekit.encoders.span.SpanEncoder`) can use the context
and a mention that occurs in several sentences is several instances.

Datasets (test splits; sentences rebuilt by joining tokens with single spaces, so character
offsets follow from token lengths):

- ``conll2003``: ``test.json`` (JSON lines ``{"sentences": [[tok, ...]], "ner": [[[start,
  end, type], ...]]}``, ``end`` inclusive), PER / LOC / ORG (MISC dropped, as in UCTopic):
  4,946 mentions.
- ``bc5cdr``: ``test.json``, Chemical / Disease: 9,658 mentions.
- ``mit_movie_trivia10k13``: the original BIO file ``trivia10k13test.bio`` (``TAG<TAB>token``
  lines, blank line between queries; lower-cased text), converted with :func:`bio_to_spans`.
  UCTopic's MIT-M (person vs title) is not available offline and trivia10k13 has no title
  type, so the default types are its three person roles, Actor / Director / Character_Name
  (1,982 mentions): telling them apart needs the context. ``types="all"`` keeps all 12.

Protocol: embed every instance, run scikit-learn ``KMeans(n_clusters=k, n_init=10,
random_state=seed)`` with k = number of gold types on the L2-normalised vectors, score NMI
(``normalized_mutual_info_score``, arithmetic normalisation) and ACC (best one-to-one cluster
-> type mapping, Hungarian algorithm, :func:`phrasekit.eval.clustering.cluster_accuracy`),
averaged over seeds (default 0..4; ``n_init=10`` for the reason given in
:mod:`phrasekit.eval.clustering`). Values are fractions in [0, 1], as in the paper's Table 1.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.eval.base import embed_unique, require_path
from phrasekit.eval.clustering import cluster_accuracy
from phrasekit.io import json_loads

logger = logging.getLogger(__name__)

SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
N_INIT = 10


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset's splits live, their format and the gold types kept by default."""

    folder: str
    files: dict[str, str]
    fmt: str
    types: tuple[str, ...]


DATASETS: dict[str, DatasetSpec] = {
    "conll2003": DatasetSpec("conll2003", {"train": "train.json", "dev": "dev.json",
                                           "test": "test.json"}, "json", ("PER", "LOC", "ORG")),
    "bc5cdr": DatasetSpec("bc5cdr", {"train": "train.json", "dev": "dev.json",
                                     "test": "test.json"}, "json", ("Chemical", "Disease")),
    "mit_movie_trivia10k13": DatasetSpec(
        "mit_movie_trivia10k13", {"train": "trivia10k13train.bio", "test": "trivia10k13test.bio"},
        "bio", ("Actor", "Director", "Character_Name")),
}


@dataclass(frozen=True)
class MentionInstance:
    """One gold mention in its sentence: ``sentence[start:end]`` is the mention."""

    sentence: str
    start: int
    end: int
    label: str
    sentence_id: int

    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)`` character offsets (end exclusive)."""
        return (self.start, self.end)

    @property
    def text(self) -> str:
        """The mention string."""
        return self.sentence[self.start : self.end]

    def item(self) -> tuple[str, tuple[int, int]]:
        """``(sentence, (start, end))``: the input of ``SpanEncoder.encode_spans``."""
        return (self.sentence, (self.start, self.end))


# ---------------------------------------------------------------------------------- parsing
def bio_to_spans(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """Token spans ``(start, end_exclusive, type)`` of a BIO tag sequence.

    ``B-X`` opens a span; ``I-X`` continues a span of type X and opens one after ``O`` or
    after a span of another type (the conlleval convention); ``O`` closes. Any other tag raises
    ValueError naming its position.
    """
    spans: list[tuple[int, int, str]] = []
    start, kind = -1, ""
    for i, tag in enumerate([*tags, "O"]):
        if tag == "O":
            prefix, label = "O", ""
        elif len(tag) > 2 and tag[1] == "-" and tag[0] in "BI":
            prefix, label = tag[0], tag[2:]
        else:
            raise ValueError(f"tag {i} is {tag!r}, not O, B-TYPE or I-TYPE")
        if kind and (prefix != "I" or label != kind):
            spans.append((start, i, kind))
            kind = ""
        if prefix == "B" or (prefix == "I" and not kind):
            start, kind = i, label
    return spans


def join_tokens(tokens: Sequence[str]) -> tuple[str, list[int]]:
    """``" ".join(tokens)`` and the character offset where each token starts."""
    starts, pos = [], 0
    for tok in tokens:
        starts.append(pos)
        pos += len(tok) + 1
    return " ".join(tokens), starts


def token_span_to_chars(tokens: Sequence[str], starts: Sequence[int], a: int, b: int
                        ) -> tuple[int, int]:
    """Character span in the joined sentence of tokens ``a .. b-1``."""
    return starts[a], starts[b - 1] + len(tokens[b - 1])


def read_ner_json(path: Path) -> list[tuple[list[str], list[tuple[int, int, str]]]]:
    """(tokens, spans with exclusive ends) per sentence of a UCTopic/PEARL JSON-lines file."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json_loads(line)
                tokens = [t for sent in obj["sentences"] for t in sent]
                spans = [(int(a), int(b) + 1, str(t)) for sent in obj["ner"] for a, b, t in sent]
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{lineno}: not a NER JSON line ({exc})") from exc
            for a, b, _ in spans:
                if not 0 <= a < b <= len(tokens):
                    raise ValueError(f"{path}:{lineno}: span ({a}, {b - 1}) outside "
                                     f"{len(tokens)} tokens")
            out.append((tokens, spans))
    return out


def read_bio(path: Path) -> list[tuple[list[str], list[tuple[int, int, str]]]]:
    """(tokens, spans with exclusive ends) per sentence of a ``TAG<TAB>token`` BIO file."""
    out: list[tuple[list[str], list[tuple[int, int, str]]]] = []
    tokens: list[str] = []
    tags: list[str] = []

    def flush(lineno: int) -> None:
        if tokens:
            try:
                out.append((list(tokens), bio_to_spans(tags)))
            except ValueError as exc:
                raise ValueError(f"{path}: sentence ending at line {lineno}: {exc}") from exc
            tokens.clear()
            tags.clear()

    with open(path, encoding="utf-8") as fh:
        lineno = 0
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\r\n").rstrip("\r")
            if not line.strip():
                flush(lineno)
                continue
            parts = line.split("\t")
            if len(parts) != 2 or not parts[1]:
                raise ValueError(f"{path}:{lineno}: expected TAG<TAB>token, got {line!r:.60}")
            tags.append(parts[0].strip())
            tokens.append(parts[1].strip())
        flush(lineno)
    return out


# ---------------------------------------------------------------------------------- loading
def _spec(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise ValueError(f"unknown entity-clustering dataset {name!r}; known: "
                         f"{', '.join(DATASETS)}")
    return DATASETS[name]


def read_split(name: str, data_dir: str | Path, split: str = "test"
               ) -> list[tuple[list[str], list[tuple[int, int, str]]]]:
    """(tokens, token spans) per sentence of one split of a known dataset."""
    spec = _spec(name)
    if split not in spec.files:
        raise ValueError(f"{name} has splits {sorted(spec.files)}, not {split!r}")
    path = require_path(Path(data_dir), f"{spec.folder}/{spec.files[split]}")
    return read_bio(path) if spec.fmt == "bio" else read_ner_json(path)


def load_entity_mentions(name: str, data_dir: str | Path, split: str = "test",
                         types: Iterable[str] | str | None = None) -> list[MentionInstance]:
    """Mention instances of one split, in file order (duplicates kept, one per occurrence).

    ``types``: gold types kept (default: the dataset's ``DATASETS[name].types``; ``"all"``:
    every type). Sentences are the tokens joined by single spaces.
    """
    spec = _spec(name)
    if types is None:
        keep: set[str] | None = set(spec.types)
    elif types == "all":
        keep = None
    else:
        keep = {types} if isinstance(types, str) else set(types)
    out: list[MentionInstance] = []
    for sid, (tokens, spans) in enumerate(read_split(name, data_dir, split)):
        if not spans or not tokens:
            continue
        sentence, starts = join_tokens(tokens)
        for a, b, label in spans:
            if keep is not None and label not in keep:
                continue
            s, e = token_span_to_chars(tokens, starts, a, b)
            out.append(MentionInstance(sentence, s, e, label, sid))
    if not out:
        raise ValueError(f"{name}/{split}: no mentions of types {sorted(keep or [])}")
    logger.info("%s/%s: %d mentions", name, split, len(out))
    return out


def load_sentences(name: str, data_dir: str | Path, split: str = "test") -> list[str]:
    """All sentences of a split (tokens joined by spaces), with or without mentions: the
    unlabeled text that unsupervised fine-tuning (CCL) may read."""
    return [join_tokens(tokens)[0] for tokens, _ in read_split(name, data_dir, split) if tokens]


# ---------------------------------------------------------------------------------- metrics
def nmi(y_true: Sequence[Any], y_pred: Sequence[Any]) -> float:
    """Normalised mutual information (arithmetic mean normalisation), in [0, 1]."""
    from sklearn.metrics import normalized_mutual_info_score  # the loaders need no sklearn

    return float(normalized_mutual_info_score(np.asarray(y_true), np.asarray(y_pred)))


def acc(y_true: Sequence[Any], y_pred: Sequence[Any]) -> float:
    """Clustering accuracy under the best one-to-one cluster -> label map (Hungarian)."""
    if len(y_true) != len(y_pred):
        raise ValueError(f"{len(y_true)} labels but {len(y_pred)} predictions")
    return cluster_accuracy(np.asarray(y_true), np.asarray(y_pred))


def kmeans_labels(emb: np.ndarray, k: int, seed: int = 0, n_init: int = N_INIT
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(cluster of each row, centroids) of KMeans on the L2-normalised rows of ``emb``."""
    x = l2_normalize(np.asarray(emb, dtype=np.float32))
    if len(x) < k:
        raise ValueError(f"cannot make {k} clusters of {len(x)} rows")
    from sklearn.cluster import KMeans  # the loaders (training data) need no sklearn

    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(x)
    return km.labels_.astype(np.int64), km.cluster_centers_.astype(np.float32)


def cluster_scores(emb: np.ndarray, gold: Sequence[str], seeds: Sequence[int] = SEEDS,
                   n_init: int = N_INIT) -> dict[str, float]:
    """ACC and NMI of KMeans (k = #gold types) over ``seeds``: means, sample stds, per seed."""
    if len(emb) != len(gold):
        raise ValueError(f"{len(emb)} embeddings but {len(gold)} gold labels")
    y = np.unique(np.asarray(gold), return_inverse=True)[1].reshape(-1)
    k = int(y.max()) + 1 if len(y) else 0
    if k < 2:
        raise ValueError(f"need at least 2 gold types, got {k}")
    accs, nmis = [], []
    for seed in seeds:
        pred = kmeans_labels(emb, k, seed=seed, n_init=n_init)[0]
        accs.append(acc(y, pred))
        nmis.append(nmi(y, pred))
    a, m = np.array(accs), np.array(nmis)
    ddof = 1 if len(seeds) > 1 else 0
    return {"acc": float(a.mean()), "nmi": float(m.mean()), "acc_std": float(a.std(ddof=ddof)),
            "nmi_std": float(m.std(ddof=ddof)), "acc_seeds": a.tolist(), "nmi_seeds": m.tolist(),
            "k": k, "n": len(y)}


SpanEmbedFn = Callable[[list[tuple[str, tuple[int, int]]]], np.ndarray]


def mention_embed_fn(encoder: Encoder) -> SpanEmbedFn:
    """A span-embedding function that ignores the context: each distinct mention string is
    embedded once with ``encoder.encode`` (the "mention-only" rows)."""

    def embed(items: list[tuple[str, tuple[int, int]]]) -> np.ndarray:
        return embed_unique(encoder, [s[a:b] for s, (a, b) in items])

    return embed


def span_embed_fn(encoder: Any, mode: str = "span", batch_size: int | None = None,
                  show_progress: bool = False) -> SpanEmbedFn:
    """A span-embedding function over ``encoder.encode_spans`` in ``mode``."""

    def embed(items: list[tuple[str, tuple[int, int]]]) -> np.ndarray:
        return encoder.encode_spans(items, mode=mode, batch_size=batch_size,
                                    show_progress=show_progress)

    return embed


def evaluate_span_embeddings(embed: SpanEmbedFn, mentions: Sequence[MentionInstance],
                             seeds: Sequence[int] = SEEDS, n_init: int = N_INIT
                             ) -> dict[str, float]:
    """Embed every mention instance with ``embed`` and score KMeans against the gold types."""
    if not mentions:
        raise ValueError("no mentions to cluster")
    emb = np.asarray(embed([m.item() for m in mentions]), dtype=np.float32)
    if emb.shape[0] != len(mentions):
        raise ValueError(f"embed returned {emb.shape[0]} rows for {len(mentions)} mentions")
    return cluster_scores(emb, [m.label for m in mentions], seeds=seeds, n_init=n_init)
