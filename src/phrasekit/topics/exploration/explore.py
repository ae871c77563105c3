"""What a user does with fitted document topics after the fit: keep them (``save`` /
``load``), name them (``set_topic_labels``) and search them (``find_topics``).

A saved model is a folder written whole or not at all, with a manifest ``load`` checks:
``config.json`` (settings, topic terms, labels, the term vocabulary, the encoder's name and
identity, the student's vocabulary) and ``arrays.safetensors`` (topic centres, the mean
document vector, the student's weights). No pickle: nothing in the folder is executed. It
places new documents as ``transform`` does, by the same encoder, which ``load`` checks.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.artifacts import staged_folder, verify_folder
from phrasekit.encoders.cache import encode_documents, encoder_identity, same_space
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.errors import check_int
from phrasekit.io import (
    Document,
    as_documents,
    atomic_write,
    document_key,
    read_json_object,
    write_json,
)
from phrasekit.registry import available_models
from phrasekit.registry import load as load_encoder
from phrasekit.text import TokenDocs
from phrasekit.topics.core.labels import TopicName
from phrasekit.topics.core.placement import warn_unassigned, without_unknown
from phrasekit.topics.core.student import TopicStudent
from phrasekit.topics.core.terms import TermVocabulary, presence_matrix
from phrasekit.topics.exploration.reshape import reshape_state, restore_reshape_state

logger = logging.getLogger(__name__)

KIND = "phrasekit-document-topics"
#: Version 3 adds what reshaping and slicing need (``reshape.reshape_state``); version 2
#: models still load, and place documents, but do not reshape.
FORMAT_VERSION = 3
READ_VERSIONS = (2, 3)
CONFIG, ARRAYS = "config.json", "arrays.safetensors"
#: ``find_topics`` scores a topic by the query's mean cosine to this many of its top terms
#: (those nearest the query), beside its centre. Class names as queries found their gold topic
#: first on 28 of 29 with 3 (20newsgroups 20/20, bbc_news 4/5, ag_news_test 4/4) against 26
#: with the best term alone (benchmarks/topics/topics_search_names.py, docs/benchmarks.md).
SEARCH_TERMS = 3
#: How ``applied_to`` places documents (see there).
APPLY_PLACEMENTS = ("fit", "encoder")
#: Fitted attributes kept as JSON, as they are.
_JSON_ATTRS = ("n_topics_", "topics_", "topic_words_", "topic_phrases_", "topic_doc_counts_",
               "topic_sizes_", "generic_terms_")


def sample_keys(documents: Sequence[Document]) -> np.ndarray:
    """An 8-byte digest of each document's id and text (as unsigned integers): how a saved
    model knows the documents it was fitted on without keeping their texts (the id tells
    apart a sampled document from its duplicate outside the sample)."""
    return np.asarray([document_key(d) for d in documents], dtype=np.uint64)


def fitted_keys(model: Any) -> dict[int, int]:
    """Position -> :func:`~phrasekit.io.document_key` of the documents a model was fitted on
    and keeps keys of (its sample; none for a model without them), for
    ``io.iter_known_documents``."""
    keys, index = getattr(model, "sample_keys_", None), getattr(model, "sample_index_", None)
    if keys is None or index is None or len(keys) != len(index):
        return {}
    return {int(i): int(k) for i, k in zip(index, keys, strict=True)}


class NearestDocs:
    """Per topic, the ``n`` documents nearest its centre seen so far (ties: lower index)."""

    def __init__(self, k: int, n: int) -> None:
        self.n = n
        self.d2 = [np.zeros(0) for _ in range(k)]
        self.rows = [np.zeros(0, dtype=np.int64) for _ in range(k)]

    def add(self, rows: np.ndarray, labels: np.ndarray, d2: np.ndarray) -> None:
        for t in range(len(self.rows)):
            member = labels == t
            d = np.concatenate([self.d2[t], d2[member, t]])
            r = np.concatenate([self.rows[t], rows[member]])
            best = np.lexsort((r, d))[: self.n]
            self.d2[t], self.rows[t] = d[best], r[best]


class TopicExplorer:
    """Mixin of :class:`~phrasekit.topics.DocumentTopicModel`: persistence, labels, search."""

    # ------------------------------------------------------------------ labels
    def set_topic_labels(self, labels: dict[int, str]) -> None:
        """Name topics (``{topic: label}``); every output and ``topic_label`` then use the
        name, and ``save`` keeps it. An empty label removes a name."""
        self._check_fitted()
        if not isinstance(labels, Mapping):
            raise TypeError(f"labels must be a dict {{topic: label}}, got {type(labels).__name__}")
        names = dict(getattr(self, "custom_labels_", {}))
        for topic, label in labels.items():
            t = self._topic_id(topic)  # an int topic id: not 1.7, True or "2"
            if not isinstance(label, str):
                raise TypeError(f"label of topic {t} must be a string, got {label!r}")
            if label.strip():
                names[t] = " ".join(label.split())
            else:
                names.pop(t, None)
        self.custom_labels_ = names

    # ------------------------------------------------------------------ search
    def find_topics(self, query: str, k: int = 5) -> list[tuple[int, float]]:
        """The ``k`` topics nearest ``query`` as ``(topic, score)``, best first: the mean of the
        query's cosine to the topic's centre (in the fit's centred document space) and its
        mean cosine to the ``SEARCH_TERMS`` top terms (words and phrases) it is nearest, so
        that one term shared by two subjects ("World Cup" for "World") does not decide."""
        self._check_fitted()
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        check_int("k", k, 1)
        q = self.encoder_.encode([query])[0]
        qc = l2_normalize((q - self.doc_mean_)[None, :])[0]
        centres = l2_normalize(np.asarray(self.cluster_centers_, dtype=np.float32))
        term_sim = self._term_vectors() @ q
        owner = np.asarray(self._term_owner, dtype=np.int64)
        best = np.full(self.n_topics_, -1.0, dtype=np.float32)
        for t in np.unique(owner):
            best[t] = np.sort(term_sim[owner == t])[-SEARCH_TERMS:].mean()
        scores = 0.5 * (centres @ qc) + 0.5 * best
        order = np.argsort(-scores, kind="stable")[: int(k)]
        return [(int(t), round(float(scores[t]), 4)) for t in order]

    def _term_vectors(self) -> np.ndarray:
        """Vectors of each topic's top terms (encoded once per model)."""
        if getattr(self, "_term_matrix", None) is None:
            terms, owner = [], []
            for t, ranked in enumerate(self.topics_):
                for term, _ in ranked[: self.top_n]:
                    terms.append(term)
                    owner.append(t)
            self._term_owner = owner
            self._term_matrix = self.encoder_.encode(terms) if terms else np.zeros(
                (0, self.encoder_.dim), dtype=np.float32)
        return self._term_matrix

    # ------------------------------------------------------------------ apply
    def applied_to(self, docs: Iterable[Document | str], cache_dir: str | Path | None = None,
                   show_progress: bool = False, placement: str = "fit") -> Any:
        """A copy of the model whose documents are ``docs``, placed in the fitted topics, with
        shares, term counts, sizes and typical documents; the topics themselves (terms,
        labels, centres) are not refitted. ``placement="fit"`` places them as the fit did:
        documents of the fitted sample (by id and text) encoded and given their nearest topic,
        every other one by the fit's student where it had one, so on the fitted corpus the
        outputs are the fit's; ``"encoder"`` encodes every document (as ``transform``).
        ``cache_dir``: the vector cache (the same vectors as encoding afresh)."""
        self._check_fitted()
        if placement not in APPLY_PLACEMENTS:
            raise ValueError(f"placement must be one of {APPLY_PLACEMENTS}, got {placement!r}")
        documents = as_documents(docs)
        texts = [d.text for d in documents]
        t0 = time.perf_counter()
        student, keys = getattr(self, "student_", None), getattr(self, "sample_keys_", None)
        encoded = np.ones(len(texts), dtype=bool)
        if placement == "fit" and student is not None and keys is not None:
            encoded = np.isin(sample_keys(documents), keys)
        rows, rest = np.flatnonzero(encoded), np.flatnonzero(~encoded)
        max_words = getattr(self, "max_words", None)  # None: PNTM, or a model pickled before
        X = encode_documents(self.encoder_, [texts[i] for i in rows], self.chunk_size,
                             self.max_chunks, cache_dir, show_progress, max_words)
        X = without_unknown(self.encoder_, X, [texts[i] for i in rows], self.chunk_size,
                            self.max_chunks, max_words)
        used_rows, d2, row_shares = self._place(X)
        shares = np.zeros((len(texts), self.n_topics_), dtype=np.float32)
        shares[rows] = row_shares
        labels = np.full(len(texts), -1, dtype=np.int64)
        labels[rows[used_rows]] = row_shares[used_rows].argmax(axis=1)
        if len(rest):
            shares[rest] = student.predict_proba([texts[i] for i in rest])
            labels[rest] = np.where(shares[rest].any(axis=1), shares[rest].argmax(axis=1), -1)
        warn_unassigned(labels, "placing documents")
        nearest = NearestDocs(self.n_topics_, self.n_typical)
        if len(rows):  # typical documents are judged on transformer vectors where there are
            nearest.add(rows, labels[rows], d2)
        else:  # none encoded (a new corpus): the student's highest shares
            nearest.add(rest, labels[rest], 1.0 - shares[rest])
        token_docs = TokenDocs(texts)
        P = presence_matrix(token_docs, self.vocabulary_.terms, "csr")
        new = copy.copy(self)
        for name in ("student_", "doc_embeddings_", "_term_matrix"):
            new.__dict__.pop(name, None)
        new.doc_ids_ = [d.id for d in documents]
        # its documents are its sample: keys of the fitted corpus would refuse a new corpus of
        # the fitted size as "not the documents the model was fitted on"
        new.sample_index_, new.sample_keys_ = np.arange(len(texts)), sample_keys(documents)
        new.doc_labels_, new.doc_topics_ = labels, shares.astype(np.float32)
        new.doc_n_phrases_ = np.asarray(P.sum(axis=1)).ravel().astype(np.int64)
        new.token_docs_ = token_docs
        new.sample_texts_, new.typical_texts_ = texts, {}  # get_representative_docs reads them
        new.topic_doc_counts_ = [int(x) for x in np.bincount(labels[labels >= 0],
                                                             minlength=self.n_topics_)]
        new.typical_docs_ = [[(int(d), round(float(shares[d, t]), 4)) for d in nearest.rows[t]]
                             for t in range(self.n_topics_)]
        new.n_fit_docs_ = len(keys) if keys is not None else None
        new.cache_dir = None if cache_dir is None else str(cache_dir)  # the one used here
        new.timings_ = {"placing": time.perf_counter() - t0}
        return new

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> Path:
        """Write the fitted model to the folder ``path`` (whole or not at all; an earlier
        saved model there is replaced, anything else refused)."""
        from safetensors.numpy import save as safetensors_bytes

        self._check_fitted()
        student = getattr(self, "student_", None)
        student_config, arrays = student.to_state() if student is not None else (None, {})
        arrays.update({"cluster_centers": np.asarray(self.cluster_centers_, np.float32),
                       "doc_mean": np.asarray(self.doc_mean_, np.float32),
                       "miscellaneous": np.asarray(self.miscellaneous_, np.int8),
                       "doc_labels": np.asarray(self.doc_labels_, np.int32)})
        if getattr(self, "sample_keys_", None) is not None:
            arrays["sample_keys"] = np.asarray(self.sample_keys_, np.uint64)
        reshape_config, reshape_arrays = reshape_state(self)
        arrays.update(reshape_arrays)
        vocab = self.vocabulary_
        config = {
            "format": KIND, "version": FORMAT_VERSION,
            "params": _json_params(self),
            "encoder": {"name": str(self.encoder_.name), "spec": _encoder_spec(self),
                        "identity": encoder_identity(self.encoder_)},
            **{name: getattr(self, name) for name in _JSON_ATTRS},
            "k_scores_": {str(k): v for k, v in self.k_scores_.items()},
            "custom_labels": {str(t): v for t, v in getattr(self, "custom_labels_", {}).items()},
            "topic_names": [[n.label, n.mixed] for n in self.topic_names_],
            "doc_ids": [str(d) for d in self.doc_ids_],
            "vocabulary": {"terms": vocab.terms, "surface": vocab.surface,
                           "doc_freq": [int(x) for x in vocab.doc_freq],
                           "n_words": int(vocab.n_words)},
            "student": student_config,
            **reshape_config,
        }
        with staged_folder(path, KIND) as tmp:
            write_json(tmp / CONFIG, config)
            with atomic_write(tmp / ARRAYS, "wb") as fh:
                fh.write(safetensors_bytes({k: np.ascontiguousarray(v)
                                            for k, v in arrays.items()}))
        logger.info("saved %d topics to %s", self.n_topics_, path)
        return Path(path)

    @classmethod
    def load(cls, path: str | Path, encoder: Any = None) -> Any:
        """A model ``save`` wrote, checked against its manifest; ``encoder``: the encoder to
        place documents with (default: the saved one, loaded by name or folder), refused
        unless it is the one the model was fitted with (name, settings and weights)."""
        from safetensors import SafetensorError
        from safetensors.numpy import load as safetensors_load

        path = Path(path)
        verify_folder(path, KIND, required=(CONFIG, ARRAYS))
        config = read_json_object(path / CONFIG)
        if config.get("format") != KIND or config.get("version") not in READ_VERSIONS:
            raise ValueError(f"{path / CONFIG}: not a saved document topic model of format "
                             f"{KIND} version {' or '.join(map(str, READ_VERSIONS))}")
        try:
            arrays = safetensors_load((path / ARRAYS).read_bytes())
        except SafetensorError as exc:
            raise ValueError(f"{path / ARRAYS}: not a readable safetensors file ({exc})") from None
        where = path / CONFIG
        try:
            saved = config["encoder"]
            params = {k: v for k, v in config["params"].items() if k != "encoder"}
            params.setdefault("max_words", None)  # saved before: windows of chunk_size
            model = cls(encoder=saved["spec"], **params)
            spec = str(saved["spec"])
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"{where}: params or encoder: {_why(exc)}") from None
        try:
            enc = load_encoder(spec if encoder is None else encoder)
        except (ValueError, OSError) as exc:
            if encoder is not None:
                raise
            raise ValueError(f"{where}: encoder.spec {spec!r}: {_why(exc)}") from None
        if not same_space(encoder_identity(enc), str(saved.get("identity"))):
            raise ValueError(f"{path} was fitted with encoder {saved.get('identity')!r}; got "
                             f"{encoder_identity(enc)!r}: documents would be placed in "
                             "another space")
        try:
            _restore(model, config, arrays)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise ValueError(f"{where}: {_why(exc)}") from None
        model.encoder_ = enc
        return model


def _why(exc: BaseException) -> str:
    """An exception met while reading a saved model, as a message (a missing key named)."""
    if isinstance(exc, KeyError):
        return f"field {exc.args[0]!r} missing"
    return " ".join(str(exc).split()) or type(exc).__name__


def _encoder_spec(model: Any) -> str:
    """How ``load`` finds the encoder again: the model name given, else the encoder's
    registered name (``minilm@bf16``: its folder alone would load it at another precision),
    else its folder."""
    if isinstance(model.encoder, str | Path):
        return str(model.encoder)
    name = str(model.encoder_.name)
    if name.partition("@")[0] in available_models():
        return name
    folder = getattr(model.encoder_, "model_path", None)
    return str(folder) if folder is not None else str(model.encoder_.name)


def _json_params(model: Any) -> dict[str, Any]:
    """The settings as JSON (the encoder by spec; no extractor object, no cache folder)."""
    params = model.get_params(deep=False)
    params.update(encoder=_encoder_spec(model), extractor=None, cache_dir=None)
    params["k_range"] = list(params["k_range"])
    return params


def _restore(model: Any, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Set the fitted attributes ``save`` wrote."""
    for name in _JSON_ATTRS:
        setattr(model, name, config[name])
    model.k_range = tuple(model.k_range)
    model.topics_ = [[(t, s) for t, s in ranked] for ranked in model.topics_]
    model.topic_words_ = [[(t, s) for t, s in ranked] for ranked in model.topic_words_]
    model.topic_phrases_ = [[(t, s) for t, s in ranked] for ranked in model.topic_phrases_]
    model.k_scores_ = {int(k): float(v) for k, v in config["k_scores_"].items()}
    model.custom_labels_ = {int(t): str(v) for t, v in config["custom_labels"].items()}
    model.topic_names_ = [TopicName(str(label), bool(mixed))
                          for label, mixed in config["topic_names"]]
    try:
        model.vocabulary_ = TermVocabulary(**config["vocabulary"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"vocabulary: {_why(exc)}") from None
    model.terms_ = model.vocabulary_.surface
    model.cluster_centers_ = arrays["cluster_centers"]
    model.doc_mean_ = arrays["doc_mean"]
    model.miscellaneous_ = arrays["miscellaneous"].astype(bool)
    model.doc_labels_ = arrays["doc_labels"].astype(np.int64)
    model.doc_ids_ = [str(d) for d in config["doc_ids"]]
    model.sample_keys_ = arrays.get("sample_keys")
    model.timings_ = {}
    if len(model.doc_ids_) != len(model.doc_labels_):
        raise ValueError(f"doc_ids: {len(model.doc_ids_)} document ids but doc_labels in "
                         f"{ARRAYS} holds {len(model.doc_labels_)} document topics")
    k = model.n_topics_
    for field, n in (("cluster_centers (in " + ARRAYS + ")", len(model.cluster_centers_)),
                     ("topics_", len(model.topics_)), ("topic_names", len(model.topic_names_))):
        if n != k:
            raise ValueError(f"n_topics_: {k} topics but {field} holds {n}")
    if config["student"] is not None:
        model.student_ = TopicStudent.from_state(config["student"], arrays)
    restore_reshape_state(model, config, arrays)
