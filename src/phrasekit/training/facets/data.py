"""Build the multi-facet model's training data: (input words, set of co-occurring words).

The self-supervision of §2.1: given the words of a target sequence I_t, reconstruct the set
N_t of words around it. The examples themselves are made in
:mod:`phrasekit.training.facets.examples`; this module picks the corpora and their phrases,
keeps evaluation sentences out, and writes, resumes and loads the dataset.

- **phrase** examples: every verbatim occurrence of a noun phrase in a document. The phrases
  are the cached spaCy noun-chunk / entity vocabularies (:class:`PhraseVocabulary` JSON, keyed
  by document), so spaCy is not run again over big corpora; a corpus without a cache has its
  (small) vocabulary extracted once into ``OUT/phrases/``. The phrase keys and the documents
  are cut by the same ``tokenize``, and the occurrences of each document's phrases are found in
  its tokens. N_t = the content words (not stop words, in the word space) among the ``window``
  (5) tokens on each side, as a set. Each phrase keeps at most ``max_per_phrase`` occurrences
  per corpus (reservoir-sampled with the seed), so frequent single nouns do not crowd out the
  rest.
- **sentence** examples: documents are split into sentences (a simple regex splitter:
  paragraphs, then ``. ! ?`` followed by a capital or digit, with common abbreviations kept
  whole); the input is a sentence of ``min_tokens``..``max_tokens`` tokens (the paper skips
  sentences over 50 words) and N_t the content words of the previous and the next sentence, as
  a set, sub-sampled to ``max_targets`` (30) with the seed.

Which text is used (``DEFAULT_CORPORA``): 20 Newsgroups, AG News (test split: the only one
here), the arXiv CC0 abstracts, and the *train* splits of Inspec and the SemEval-14 restaurant
reviews. **bbc_news is refused**: it is the same 2,225 articles as ``data/bbc_news_summary``,
the summarisation test set, so the sentence model would have seen the test documents' sentence
neighbourhoods. Sentences that occur verbatim (same tokens) in STS-B (any split) or in a
bbc_news_summary article are dropped as inputs, and counted. Phrases from the similarity /
hypernymy benchmarks (BiRD, Turney, HypeNet) are *not* removed: like the paper's Wikipedia
training, the signal is raw co-occurrence text with no label, pair or score of any benchmark,
and removing every benchmark word would leave common nouns (HypeNet's, Turney's unigrams)
without a representation.

On disk (``OUT/``, all plain ``.npy``, no pickle): ``inputs.npy`` / ``targets.npy`` (int32 word
ids of the :class:`~phrasekit.encoders.facets.words.WordSpace`; -1 = unknown input word) with
``input_offsets.npy`` / ``target_offsets.npy`` (int64, n + 1), ``split.npy`` (uint8, 1 =
validation: 1% of the phrase keys, or of the documents, by CRC32), ``word_counts.npy`` (int64
count of every word-space word in the corpora used, for p(w)) and ``meta.json`` (settings,
word-space fingerprint, per-corpus counts). Each corpus is built into ``OUT/shards/NAME.npz``
first; a rerun with the same settings reuses finished shards (resumable).
"""

from __future__ import annotations

import hashlib
import json
import logging
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from phrasekit.artifacts import verify_folder, write_manifest
from phrasekit.encoders.facets.words import GLOVE_50D, WordSpace, load_word_space
from phrasekit.errors import raise_failed
from phrasekit.eval.stsb import load_stsb
from phrasekit.io import Document, atomic_write, read_corpus, read_json_object, write_json
from phrasekit.phrases import PhraseExtractor, PhraseVocabulary
from phrasekit.settings import corpora_dir as default_corpora
from phrasekit.settings import data_dir as default_data
from phrasekit.tables import load_npy
from phrasekit.text import tokenize
from phrasekit.training.facets.examples import (
    phrase_examples,
    sentence_examples,
    split_sentences,
)

__all__ = [
    "DEFAULT_CORPORA",
    "REFUSED_CORPORA",
    "CorpusSpec",
    "FacetDataConfig",
    "FacetDataset",
    "build_facet_dataset",
    "corpus_phrases",
    "corpus_specs",
    "eval_sentence_keys",
]

logger = logging.getLogger(__name__)

FORMAT = "phrasekit-facet-data"
#: Manifest kind of a facet dataset folder.
DATASET_KIND = "facet-dataset"
FORMAT_VERSION = 1
GRANULARITIES = ("phrase", "sentence")
ARRAYS = ("inputs", "input_offsets", "targets", "target_offsets", "split")
#: Everything a build writes into its folder: the arrays, meta.json, the manifest, the
#: per-corpus shards and phrase caches (a rerun reuses and replaces them).
OUTPUT_NAMES = (*(f"{n}.npy" for n in (*ARRAYS, "word_counts")), "meta.json",
                "manifest.json", "shards", "phrases")

#: Corpora that must not be trained on, with the reason.
REFUSED_CORPORA = {
    "bbc_news": "its 2,225 articles are the articles of data/bbc_news_summary (the "
                "summarisation test set)",
}
#: Folders searched for cached PhraseVocabulary files named ``<corpus>.json.gz`` (read only).
DEFAULT_PHRASE_CACHE_DIRS = ("runs/phr", "runs/topic_models/phrases")


@dataclass(frozen=True)
class CorpusSpec:
    """One training corpus: its folder name under the corpora folder, which ``split`` values to
    keep (None: all documents) and whether a single newline ends a sentence (titles on their
    own line) or only wraps a line (Usenet posts)."""

    name: str
    splits: tuple[str, ...] | None = None
    newline_ends_sentence: bool = True


DEFAULT_CORPORA = (
    CorpusSpec("20newsgroups", newline_ends_sentence=False),
    CorpusSpec("ag_news_test"),
    CorpusSpec("arxiv_abstracts_cc0"),
    CorpusSpec("inspec", splits=("train",)),
    CorpusSpec("restaurant_reviews_absa14", splits=("train",)),
)


def corpus_specs(names: Iterable[str]) -> tuple[CorpusSpec, ...]:
    """Specs for corpus folder names (for a CLI's ``--corpus``): the default spec of a known
    corpus (its splits and sentence rules), else all documents, a newline ending a sentence.
    Refused corpora (``REFUSED_CORPORA``) raise ``ValueError`` naming the reason."""
    known = {spec.name: spec for spec in DEFAULT_CORPORA}
    out: list[CorpusSpec] = []
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"corpus names must be non-empty strings, got {name!r}")
        if name in REFUSED_CORPORA:
            raise ValueError(f"corpus {name!r} is refused for training: {REFUSED_CORPORA[name]}")
        out.append(known.get(name, CorpusSpec(name)))
    if not out:
        raise ValueError("no corpus names given")
    return tuple(out)


@dataclass
class FacetDataConfig:
    """What to build: granularity, corpora and the §2.1 / appendix A settings."""

    out_dir: str
    granularity: str = "phrase"
    corpora: tuple[CorpusSpec, ...] = DEFAULT_CORPORA
    corpora_dir: str | None = None
    phrase_cache_dirs: tuple[str, ...] = DEFAULT_PHRASE_CACHE_DIRS
    word_space: str = GLOVE_50D
    seed: int = 0
    window: int = 5
    max_targets: int = 30
    min_targets: int = 2
    min_tokens: int = 3
    max_tokens: int = 50
    max_per_phrase: int = 100
    val_fraction: float = 0.01
    max_docs: int | None = None
    exclude_eval_sentences: bool = True
    show_progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        """Fail fast on settings that cannot work."""
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {GRANULARITIES}, "
                             f"got {self.granularity!r}")
        if not self.corpora:
            raise ValueError("no corpora given")
        for spec in self.corpora:
            if not isinstance(spec, CorpusSpec):
                raise TypeError(f"corpora must hold CorpusSpec items, got {spec!r}")
            if spec.name in REFUSED_CORPORA:
                raise ValueError(f"corpus {spec.name!r} is refused for training: "
                                 f"{REFUSED_CORPORA[spec.name]}")
        raise_failed([
            (self.window >= 1, f"window must be >= 1, got {self.window}"),
            (self.max_targets >= 1, f"max_targets must be >= 1, got {self.max_targets}"),
            (1 <= self.min_targets <= self.max_targets,
             f"min_targets must be in [1, max_targets], got {self.min_targets}"),
            (1 <= self.min_tokens <= self.max_tokens,
             f"min_tokens must be in [1, max_tokens], got {self.min_tokens}"),
            (self.max_per_phrase >= 1, f"max_per_phrase must be >= 1, got {self.max_per_phrase}"),
            (0.0 <= self.val_fraction < 0.5,
             f"val_fraction must be in [0, 0.5), got {self.val_fraction}"),
            (self.max_docs is None or self.max_docs >= 1, "max_docs must be >= 1"),
        ])

    def shard_fingerprint(self, spec: CorpusSpec, word_space: WordSpace) -> str:
        """Hash of everything that fixes one corpus shard (for reuse on a rerun)."""
        keys = ("granularity", "seed", "window", "max_targets", "min_targets", "min_tokens",
                "max_tokens", "max_per_phrase", "val_fraction", "max_docs",
                "exclude_eval_sentences")
        d = asdict(self)
        blob = json.dumps({**{k: d[k] for k in keys}, "corpus": asdict(spec),
                           "word_space": word_space.fingerprint, "version": FORMAT_VERSION},
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------ the dataset
@dataclass
class FacetDataset:
    """Examples as flat int32 arrays with offsets (``inputs[input_offsets[i]:...]``)."""

    inputs: np.ndarray
    input_offsets: np.ndarray
    targets: np.ndarray
    target_offsets: np.ndarray
    split: np.ndarray
    word_counts: np.ndarray
    meta: dict[str, Any]

    def __post_init__(self) -> None:
        n = len(self.split)
        if len(self.input_offsets) != n + 1 or len(self.target_offsets) != n + 1:
            raise ValueError("offsets must have one entry more than there are examples")
        if self.input_offsets[-1] != len(self.inputs) or \
                self.target_offsets[-1] != len(self.targets):
            raise ValueError("offsets do not end at the array lengths")

    def __len__(self) -> int:
        return len(self.split)

    def __repr__(self) -> str:
        return (f"FacetDataset({self.meta.get('granularity')}: {len(self)} examples, "
                f"{int((self.split == 1).sum())} validation)")

    def input_ids(self, i: int) -> np.ndarray:
        return self.inputs[self.input_offsets[i] : self.input_offsets[i + 1]]

    def target_ids(self, i: int) -> np.ndarray:
        return self.targets[self.target_offsets[i] : self.target_offsets[i + 1]]

    def indices(self, which: str) -> np.ndarray:
        """Example indices of ``"train"`` or ``"val"``."""
        if which not in ("train", "val"):
            raise ValueError(f"which must be 'train' or 'val', got {which!r}")
        return np.flatnonzero(self.split == (1 if which == "val" else 0))

    def decode(self, i: int, word_space: WordSpace) -> tuple[list[str], list[str]]:
        """Example ``i`` as words (input, targets), for inspection."""
        words = word_space.words
        inp = [words[j] if j >= 0 else "<unk>" for j in self.input_ids(i)]
        return inp, [words[j] for j in self.target_ids(i)]

    def save(self, out_dir: str | Path) -> None:
        """Write the ``.npy`` arrays, ``meta.json`` and the folder's manifest (last), which
        ``load`` checks."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name in (*ARRAYS, "word_counts"):  # OUTPUT_NAMES lists them
            with atomic_write(out / f"{name}.npy", mode="wb") as fh:
                np.save(fh, getattr(self, name), allow_pickle=False)
        write_json(out / "meta.json", self.meta)
        write_manifest(out, DATASET_KIND)

    @classmethod
    def load(cls, path: str | Path) -> FacetDataset:
        """Read a dataset folder written by :func:`build_facet_dataset`."""
        path = Path(path)
        if not (path / "meta.json").is_file():
            raise FileNotFoundError(f"{path} is not a facet dataset (no meta.json); build it "
                                    "with build_facet_dataset")
        verify_folder(path, DATASET_KIND, required=("meta.json", *(f"{n}.npy" for n in ARRAYS)))
        meta = read_json_object(path / "meta.json")
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: not a facet dataset (format {meta.get('format')!r})")
        if int(meta.get("format_version", 0)) > FORMAT_VERSION:
            raise ValueError(f"{path}: written by a newer phrasekit; upgrade phrasekit")
        arrays = {name: load_npy(path / f"{name}.npy") for name in (*ARRAYS, "word_counts")}
        return cls(meta=meta, **arrays)


# ------------------------------------------------------------------------------ leakage
def eval_sentence_keys(data_dir: Path | None) -> set[tuple[str, ...]]:
    """Token tuples of evaluation sentences that must not become training inputs: STS-B (all
    splits) and every sentence of every bbc_news_summary article. Empty without data."""
    keys: set[tuple[str, ...]] = set()
    if data_dir is None:
        return keys
    for name in ("sts-train.csv", "sts-dev.csv", "sts-test.csv"):
        path = Path(data_dir) / "stsb" / name
        if path.is_file():
            for a, b, _ in load_stsb(path):
                keys.update(t for t in (tuple(tokenize(a)), tuple(tokenize(b))) if t)
    summ = Path(data_dir) / "bbc_news_summary" / "documents.jsonl.gz"
    if summ.is_file():
        for doc in read_corpus(summ):
            for sent in split_sentences(doc.text, newline_ends_sentence=False):
                toks = tuple(tokenize(sent))
                if toks:
                    keys.add(toks)
    logger.info("%d evaluation sentences kept out of the training inputs", len(keys))
    return keys


# ------------------------------------------------------------------------------ corpora
def _corpus_file(corpora_dir: Path, name: str) -> Path:
    for fname in ("documents.jsonl", "documents.jsonl.gz"):
        if (corpora_dir / name / fname).is_file():
            return corpora_dir / name / fname
    raise FileNotFoundError(f"corpus {name!r} not found: no {corpora_dir / name}/documents.jsonl"
                            "(.gz)")


def _select(docs: list[Document], spec: CorpusSpec, max_docs: int | None) -> list[Document]:
    if spec.splits is not None:
        docs = [d for d in docs if d.meta.get("split") in spec.splits]
    if max_docs is not None:
        docs = docs[:max_docs]
    if not docs:
        raise ValueError(f"corpus {spec.name!r}: no documents left (splits {spec.splits})")
    return docs


def corpus_phrases(spec: CorpusSpec, docs: list[Document], cache_dirs: Sequence[str | Path],
                   out_dir: Path, show_progress: bool = False) -> list[list[str]]:
    """Per document, the phrase keys spaCy found in it: from a cached vocabulary covering
    these documents (``<cache_dir>/<name>.json.gz`` or ``OUT/phrases/<name>.json.gz``), else
    extracted now (the corpora without a cache are small) and cached under ``OUT/phrases``."""
    ids = [d.id for d in docs]
    own = out_dir / "phrases" / f"{spec.name}.json.gz"
    for path in [own, *(Path(c) / f"{spec.name}.json.gz" for c in cache_dirs)]:
        if not path.is_file():
            continue
        vocab = PhraseVocabulary.from_json(path)
        by_id = dict(zip(vocab.doc_ids, vocab.doc_phrases, strict=True))
        if all(i in by_id for i in ids):
            logger.info("%s: phrases from %s", spec.name, path)
            return [list(by_id[i]) for i in ids]
        logger.info("%s: %s does not cover the selected documents; not used", spec.name, path)
    logger.info("%s: no phrase cache; extracting noun phrases of %d documents with spaCy",
                spec.name, len(docs))
    vocab = PhraseExtractor().extract(docs, show_progress=show_progress)
    vocab.to_json(own)
    return [list(d) for d in vocab.doc_phrases]


def _build_shard(cfg: FacetDataConfig, spec: CorpusSpec, word_space: WordSpace,
                 corpora_dir: Path, excluded: set[tuple[str, ...]]
                 ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    docs = _select(read_corpus(_corpus_file(corpora_dir, spec.name)), spec, cfg.max_docs)
    out = Path(cfg.out_dir)
    seed = int(cfg.seed) * 1_000_003 + zlib.crc32(spec.name.encode())
    stats: dict[str, int] = {"documents": len(docs)}
    bar = tqdm(docs, desc=f"tokenize[{spec.name}]", unit="doc", leave=False,
               disable=not cfg.show_progress)
    tokens = [tokenize(d.text) for d in bar]
    all_ids = [i for toks in tokens for i in word_space.tokens_ids(toks, unknown=None)]
    counts = np.bincount(np.asarray(all_ids, dtype=np.int64), minlength=len(word_space))
    stats["tokens"] = int(sum(len(t) for t in tokens))
    if cfg.granularity == "phrase":
        phrases = corpus_phrases(spec, docs, cfg.phrase_cache_dirs, out, cfg.show_progress)
        shard = phrase_examples(tokens, phrases, word_space, window=cfg.window,
                                min_targets=cfg.min_targets, max_per_phrase=cfg.max_per_phrase,
                                val_fraction=cfg.val_fraction, seed=seed, stats=stats)
    else:
        shard = sentence_examples([d.text for d in docs], [f"{spec.name}/{d.id}" for d in docs],
                                  word_space, max_targets=cfg.max_targets,
                                  min_targets=cfg.min_targets, min_tokens=cfg.min_tokens,
                                  max_tokens=cfg.max_tokens, val_fraction=cfg.val_fraction,
                                  seed=seed, newline_ends_sentence=spec.newline_ends_sentence,
                                  excluded=excluded, stats=stats)
    arrays = shard.arrays()
    stats["examples"] = len(shard)
    stats["validation"] = int(arrays["split"].sum())
    n_t = np.diff(arrays["target_offsets"])
    stats["mean_targets"] = round(float(n_t.mean()), 2) if len(n_t) else 0.0
    n_i = np.diff(arrays["input_offsets"])
    stats["mean_input_words"] = round(float(n_i.mean()), 2) if len(n_i) else 0.0
    arrays["word_counts"] = counts
    return arrays, stats


def build_facet_dataset(cfg: FacetDataConfig) -> FacetDataset:
    """Build (or finish building) the dataset in ``cfg.out_dir`` and return it.

    Corpora are built one shard at a time into ``OUT/shards/``; shards whose fingerprint
    matches the settings are reused, so an interrupted build resumes where it stopped.
    """
    cfg.validate()
    corpora = Path(cfg.corpora_dir) if cfg.corpora_dir else default_corpora()
    for spec in cfg.corpora:  # a missing corpus fails before any folder or word space
        _corpus_file(corpora, spec.name)
    out = Path(cfg.out_dir)
    (out / "shards").mkdir(parents=True, exist_ok=True)
    word_space = load_word_space(cfg.word_space)
    excluded: set[tuple[str, ...]] | None = None
    parts: list[dict[str, np.ndarray]] = []
    report: dict[str, Any] = {}
    for spec in cfg.corpora:
        fp = cfg.shard_fingerprint(spec, word_space)
        path = out / "shards" / f"{spec.name}.npz"
        meta_path = out / "shards" / f"{spec.name}.json"
        if path.is_file() and meta_path.is_file() and \
                read_json_object(meta_path).get("fingerprint") == fp:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            stats = read_json_object(meta_path)["stats"]
            logger.info("%s: reusing shard (%d examples)", spec.name, stats["examples"])
        else:
            if excluded is None:
                excluded = (eval_sentence_keys(default_data(required=False))
                            if cfg.granularity == "sentence" and cfg.exclude_eval_sentences
                            else set())
            arrays, stats = _build_shard(cfg, spec, word_space, corpora, excluded)
            with atomic_write(path, mode="wb") as fh:
                np.savez(fh, **arrays)
            write_json(meta_path, {"fingerprint": fp, "stats": stats})
            logger.info("%s: %s", spec.name, stats)
        parts.append(arrays)
        report[spec.name] = stats
    dataset = _merge(parts, word_space, cfg, report)
    dataset.save(out)
    logger.info("wrote %r to %s", dataset, out)
    return dataset


def _merge(parts: list[dict[str, np.ndarray]], word_space: WordSpace, cfg: FacetDataConfig,
           report: dict[str, Any]) -> FacetDataset:
    """Concatenate the corpus shards (offsets shifted) and total the word counts."""
    inputs, targets, splits = [], [], []
    in_off, tg_off = [np.zeros(1, dtype=np.int64)], [np.zeros(1, dtype=np.int64)]
    n_in = n_tg = 0
    counts = np.zeros(len(word_space), dtype=np.int64)
    for a in parts:
        inputs.append(a["inputs"])
        targets.append(a["targets"])
        splits.append(a["split"])
        in_off.append(a["input_offsets"][1:] + n_in)
        tg_off.append(a["target_offsets"][1:] + n_tg)
        n_in += len(a["inputs"])
        n_tg += len(a["targets"])
        counts += a["word_counts"]
    split = np.concatenate(splits).astype(np.uint8) if splits else np.zeros(0, np.uint8)
    settings = {k: v for k, v in asdict(cfg).items() if k not in ("show_progress", "out_dir")}
    meta = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "granularity": cfg.granularity,
        "word_space": word_space.name, "word_space_fingerprint": word_space.fingerprint,
        "settings": settings, "corpora": report, "examples": len(split),
        "validation": int(split.sum()), "refused_corpora": REFUSED_CORPORA,
    }
    return FacetDataset(
        inputs=np.concatenate(inputs).astype(np.int32) if inputs else np.zeros(0, np.int32),
        input_offsets=np.concatenate(in_off),
        targets=np.concatenate(targets).astype(np.int32) if targets else np.zeros(0, np.int32),
        target_offsets=np.concatenate(tg_off),
        split=split, word_counts=counts, meta=meta,
    )
