"""phrasekit inside BERTopic and KeyBERT (the optional ``bench`` extra installs both).

- :class:`KeyBERTBackend` and :class:`BERTopicBackend`: any phrasekit model (a name, a folder,
  an encoder, or an object with ``encode``) as the library's embedding backend::

      KeyBERT(model=KeyBERTBackend("pearl-minilm"))
      BERTopic(embedding_model=BERTopicBackend("minilm"))

  Both libraries pick a backend by its class (their own ``BaseEmbedder``, or a
  sentence-transformers, spaCy, Flair... object) and fall back to downloading a default model
  for anything else, so a bare ``phrasekit.load(...)`` is wrapped here. A transformer model
  also leaves as a sentence-transformers folder (``phrasekit export``), which both load as is.
- :class:`KeyphraseRepresentation`: a BERTopic representation model naming each topic with
  phrasekit's words and phrases, read from BERTopic's topic assignment as phrasekit's own
  documents topic method reads its topics (:mod:`phrasekit.integrations.naming`; seconds);
  ``keyphrases=True`` names them by keyphrases of their documents instead.
- :class:`PhraseVectorizer`: a scikit-learn ``CountVectorizer`` counting phrasekit's noun
  phrases and words, so BERTopic's c-TF-IDF ranks phrases
  (:mod:`phrasekit.integrations.vectorizer`).
- :func:`save_topic_model`: BERTopic's ``save``, whole or not at all.

Every plug-in survives BERTopic's ``save`` (safetensors with ``save_ctfidf=True``, or pickle)
and ``BERTopic.load``.

The backend classes subclass the libraries' own ``BaseEmbedder``; they are built on first use,
so importing this module needs neither package.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.artifacts import staged_folder
from phrasekit.encoders.base import Encoder, as_text_list
from phrasekit.integrations.naming import TopicTerms
from phrasekit.integrations.vectorizer import PhraseVectorizer
from phrasekit.registry import DEFAULT_MODEL, as_encoder

__all__ = ["BERTopicBackend", "KeyBERTBackend", "KeyphraseRepresentation", "PhraseVectorizer",
           "save_topic_model"]

logger = logging.getLogger(__name__)
#: The artefact kind of a BERTopic folder written by :func:`save_topic_model`.
BERTOPIC_KIND = "bertopic-model"


class _Embedder:
    """What the embedding backends add to a library's ``BaseEmbedder``: a phrasekit model
    (a name or folder, an encoder, or an object with ``encode``) behind ``embed``."""

    def __init__(self, model: Encoder | str | Path | Any = DEFAULT_MODEL) -> None:
        self.encoder = as_encoder(model)
        super().__init__(embedding_model=self.encoder)  # type: ignore[call-arg]

    def embed(self, documents: Sequence[str], verbose: bool = False) -> np.ndarray:
        """Unit rows of the phrasekit encoder, in input order; a blank document gets a zero
        row (the libraries then give it no keywords, as with their own backends) where
        ``encode`` would refuse it."""
        docs = as_text_list(documents, "documents")
        for i, d in enumerate(docs):
            if not isinstance(d, str):
                raise TypeError(f"documents[{i}] is {type(d).__name__}, not str: {d!r:.40}")
        keep = [i for i, d in enumerate(docs) if d.strip()]
        out = np.zeros((len(docs), self.encoder.dim), dtype=np.float32)
        if keep:
            out[keep] = self.encoder.encode([docs[i] for i in keep], show_progress=bool(verbose))
        return out


#: The classes built on first use: name -> (module, base class in it, what phrasekit adds).
LAZY_CLASSES: dict[str, tuple[str, str, type]] = {
    "KeyBERTBackend": ("keybert.backend", "BaseEmbedder", _Embedder),
    "BERTopicBackend": ("bertopic.backend", "BaseEmbedder", _Embedder),
    "KeyphraseRepresentation": ("bertopic.representation", "BaseRepresentation", TopicTerms),
}


@functools.cache
def _lazy_class(name: str) -> type:
    """A class of :data:`LAZY_CLASSES`: phrasekit's part on the library's base class
    (ImportError naming the extra when the library is absent)."""
    module, base_name, mixin = LAZY_CLASSES[name]
    library = module.split(".")[0]
    try:
        base = getattr(importlib.import_module(module), base_name)
    except ImportError as exc:
        raise ImportError(f"{name} needs {library} (pip install 'phrasekit[bench]')") from exc
    return type(name, (mixin, base), {"__module__": __name__, "__qualname__": name,
                                      "__doc__": f"{mixin.__doc__} (for {library})"})


def __getattr__(name: str) -> Any:
    """``KeyBERTBackend``, ``BERTopicBackend`` and ``KeyphraseRepresentation``, built on first
    use."""
    if name in LAZY_CLASSES:
        return _lazy_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: BERTopic's ``save`` formats: one pickle file, or a folder.
SERIALIZATIONS = ("pickle", "safetensors", "pytorch")


def save_topic_model(topic_model: Any, path: str | Path, **kwargs: Any) -> Path:
    """``topic_model.save(path, **kwargs)`` (BERTopic's arguments), whole or not at all: written
    beside ``path`` and moved into place when complete, so a failed save leaves nothing (and
    an earlier save at ``path`` as it was). A folder (safetensors, pytorch) gets phrasekit's
    manifest and replaces only a folder written by this function; a pickle is one file."""
    path = Path(path)
    serialization = kwargs.get("serialization", "pickle")
    if serialization not in SERIALIZATIONS:  # BERTopic would write nothing, without a word
        raise ValueError(f"serialization must be one of {', '.join(SERIALIZATIONS)}, got "
                         f"{serialization!r}")
    if getattr(topic_model, "topic_representations_", None) is None:
        raise ValueError("the topic model is not fitted: fit it before saving it")
    if serialization == "pickle":
        if path.is_dir():
            raise ValueError(f"{path} is a folder, and a pickle save is one file: name a file "
                             "(or save with serialization='safetensors' into a folder)")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        try:
            topic_model.save(tmp, **kwargs)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path
    with staged_folder(path, BERTOPIC_KIND) as staged:
        topic_model.save(str(staged), **kwargs)
    logger.info("saved the topic model to %s", path)
    return path
