"""Fitted document topics sliced by time and by class (BERTopic's ``topics_over_time`` and
``topics_per_class``).

Each row of a slice table is one topic in one slice (a time bin or a class): how many of the
slice's documents the topic holds (``frequency``), their share of the slice's documents that
have a topic (``share``), and the topic's most distinctive terms there, words and phrases
together. Counts cover every document of the corpus; the terms are read from the documents of
the fitted sample in the slice (all of them unless the corpus was larger than ``fit_docs``).

A term's score in a slice is the mean of two ``p_in * log(p_in / p_all)`` scores: the topic
against the slice's other documents, and the topic against the whole corpus (its fitted score,
as BERTopic's ``global_tuning`` averages the two). Only terms found in the topic's documents
of that slice are listed, generic ones never.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from phrasekit.io import CorpusError, Document, document_location
from phrasekit.tables import is_missing
from phrasekit.topics.core.reading import rank_terms, topic_term_scores
from phrasekit.topics.core.terms import presence_matrix

#: Calendar bins ``topics_over_time`` takes by name (or an int: that many equal-width bins).
TIME_BINS = ("year", "quarter", "month", "week", "day")
#: Terms listed per topic and slice.
SLICE_TERMS = 5
EPOCH = datetime(1970, 1, 1)


def parse_timestamp(value: Any) -> datetime:
    """A naive UTC ``datetime`` from a ``datetime``, a ``date`` or an ISO 8601 string
    ("2007", "2007-04", "2007-04-15", "2007-04-15T10:30:00Z"...), or a NumPy
    ``datetime64``; ``ValueError`` otherwise (a missing value: None, NaN, NaT)."""
    if isinstance(value, np.datetime64):
        value = None if np.isnat(value) else value.astype("datetime64[us]").item()
    if is_missing(value):
        raise ValueError("missing (None, NaN or NaT); every document needs a date")
    if isinstance(value, datetime):
        stamp = value
    elif isinstance(value, date):
        stamp = datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            stamp = datetime.fromisoformat(text)
        except ValueError:
            parts = text.split("-")
            if not (1 <= len(parts) <= 2 and all(p.isdigit() for p in parts)
                    and len(parts[0]) == 4):
                raise ValueError(f"{value!r} is not an ISO 8601 date") from None
            stamp = datetime(int(parts[0]), int(parts[1]) if len(parts) == 2 else 1, 1)
    else:
        raise ValueError(f"{value!r} is not a date (give ISO 8601 text such as 2007-04-15)")
    if stamp.tzinfo is not None:
        try:
            stamp = stamp.astimezone(UTC).replace(tzinfo=None)
        except (OverflowError, ValueError):
            raise ValueError(f"{value!r} is outside the dates supported (0001-01-01 to "
                             "9999-12-31 in UTC)") from None
    return stamp


def parse_timestamps(values: Sequence[Any]) -> list[datetime]:
    """``parse_timestamp`` of each value; the error names the first bad one's position."""
    out = []
    for i, value in enumerate(values):
        try:
            out.append(parse_timestamp(value))
        except ValueError as exc:
            raise ValueError(f"timestamp {i}: {exc}") from None
    return out


def check_bins(bins: str | int) -> None:
    """``ValueError`` unless ``bins`` is one of ``TIME_BINS`` or a number of bins >= 1."""
    if isinstance(bins, bool) or not (bins in TIME_BINS or (isinstance(bins, int) and bins >= 1)):
        raise ValueError(f"bins must be one of {', '.join(TIME_BINS)} or a number >= 1, "
                         f"got {bins!r}")


def time_bins(stamps: Sequence[datetime], bins: str | int) -> list[str]:
    """Each timestamp's bin, named by its start: "2007", "2007-Q2", "2007-04", the Monday of
    its week or its day "2007-04-16"; with ``bins`` a number, equal-width bins over the range
    named by their start time (ISO, to the second)."""
    check_bins(bins)
    if bins == "year":
        return [f"{s.year:04d}" for s in stamps]
    if bins == "quarter":
        return [f"{s.year:04d}-Q{(s.month - 1) // 3 + 1}" for s in stamps]
    if bins == "month":
        return [f"{s.year:04d}-{s.month:02d}" for s in stamps]
    if bins in ("week", "day"):
        days = [s.date() for s in stamps]
        if bins == "week":
            days = [d.fromordinal(d.toordinal() - d.weekday()) for d in days]
        return [d.isoformat() for d in days]
    seconds = np.asarray([(s - EPOCH).total_seconds() for s in stamps], dtype=np.float64)
    lo, hi = float(seconds.min()), float(seconds.max())
    width = (hi - lo) / int(bins) or 1.0
    which = np.minimum(((seconds - lo) // width).astype(np.int64), int(bins) - 1)
    starts = {int(w): (EPOCH + timedelta(seconds=lo + int(w) * width)).isoformat(
        timespec="seconds") for w in np.unique(which)}  # only the bins that hold a document
    return [starts[int(w)] for w in which]


def check_bins_fit(bins: str | int, n_docs: int) -> None:
    """``ValueError`` when a number of bins exceeds the documents to put in them."""
    if isinstance(bins, int) and not isinstance(bins, bool) and bins > max(1, n_docs):
        raise ValueError(f"--time-bins {bins}: more bins than the corpus has documents "
                         f"({n_docs}); give at most {max(1, n_docs)} or a calendar unit "
                         f"({', '.join(TIME_BINS)})")


class TopicSlicer:
    """Mixin of :class:`~phrasekit.topics.DocumentTopicModel`: topics per time bin and class."""

    def topics_over_time(self, timestamps: Sequence[Any], bins: str | int = "month",
                         n_terms: int = SLICE_TERMS) -> list[dict[str, Any]]:
        """One row per topic and time bin, in time order then topic order: ``topic``,
        ``label``, ``timestamp`` (the bin's name, see ``time_bins``), ``frequency``, ``share``
        and ``terms`` (its ``n_terms`` most distinctive words and phrases in the bin).
        ``timestamps``: one per fitted document (dates, datetimes or ISO 8601 text)."""
        timestamps = self._check_sliceable(timestamps, "timestamps")
        check_bins(bins)
        names = time_bins(parse_timestamps(timestamps), bins)
        return self._slice_rows(names, "timestamp", n_terms)

    def topics_per_class(self, classes: Sequence[Any], n_terms: int = SLICE_TERMS
                         ) -> list[dict[str, Any]]:
        """One row per topic and class, classes in sorted order: ``topic``, ``label``,
        ``class``, ``frequency``, ``share`` and ``terms`` (as ``topics_over_time``).
        ``classes``: one per fitted document."""
        classes = self._check_sliceable(classes, "classes")
        return self._slice_rows(class_names(classes, lambda i: f"classes[{i}]"), "class",
                                n_terms)

    # ------------------------------------------------------------------ helpers
    def _check_sliceable(self, values: Sequence[Any], what: str) -> list[Any]:
        """``values`` as a list, one per fitted document (``ValueError`` otherwise)."""
        self._check_fitted()
        if getattr(self, "token_docs_", None) is None:
            raise RuntimeError("this model keeps no fitted sample (saved by phrasekit before "
                               "format 3): slice after a fit or after loading a model saved "
                               "since")
        if isinstance(values, str | bytes) or not isinstance(values, Iterable):
            raise ValueError(f"{what}: give one per fitted document ({len(self.doc_ids_)}), "
                             f"not a {type(values).__name__}")
        values = list(values)
        if len(values) != len(self.doc_ids_):
            raise ValueError(f"{what}: give one per fitted document ({len(self.doc_ids_)}), "
                             f"got {len(values)}")
        return values

    def _slice_rows(self, names: list[str], key: str, n_terms: int) -> list[dict[str, Any]]:
        """The slice table of documents in slices ``names`` (one per document)."""
        if int(n_terms) < 1:
            raise ValueError(f"n_terms must be at least 1, got {n_terms}")
        slices, which = np.unique(np.asarray(names, dtype=object), return_inverse=True)
        labels = np.asarray(self.doc_labels_)
        k, placed = self.n_topics_, labels >= 0
        freq = np.zeros((len(slices), k), dtype=np.int64)
        np.add.at(freq, (which[placed], labels[placed]), 1)
        terms = self._slice_terms(which, len(slices), int(n_terms))
        rows = []
        for s, name in enumerate(slices.tolist()):
            total = max(int(freq[s].sum()), 1)
            for t in np.flatnonzero(freq[s]).tolist():
                rows.append({"topic": t, "label": self.topic_label(t), key: name,
                             "frequency": int(freq[s, t]),
                             "share": round(float(freq[s, t]) / total, 4),
                             "terms": terms[s][t]})
        return rows

    def _slice_terms(self, which: np.ndarray, n_slices: int, n: int) -> list[list[list[str]]]:
        """Per slice and topic, the best terms of the topic's fitted documents in the slice."""
        vocab = self.vocabulary_
        index = np.asarray(getattr(self, "sample_index_", np.arange(len(self.doc_ids_))))
        labels, which = np.asarray(self.doc_labels_)[index], which[index]
        P = presence_matrix(self.token_docs_, vocab.terms, format="csr")
        generic = set(self.generic_terms_)
        allowed = np.asarray([s not in generic for s in vocab.surface], dtype=bool)
        out = []
        for s in range(n_slices):
            rows = np.flatnonzero((which == s) & (labels >= 0))
            k = self.n_topics_
            scores = 0.5 * (topic_term_scores(P[rows], labels[rows], k) + self.term_scores_)
            member = sp.csr_matrix((np.ones(len(rows)), (labels[rows], np.arange(len(rows)))),
                                   shape=(k, len(rows)))
            found = np.asarray((member @ P[rows]).todense()) > 0
            ranked = rank_terms(np.where(found, scores, 0.0), vocab.terms, n, allowed)
            out.append([[vocab.surface[j] for j in r] for r in ranked])
        return out


@dataclass
class SliceFields:
    """Per document of a corpus, its timestamp and class read from the record's fields."""

    timestamps: list[datetime] | None
    classes: list[str] | None
    bins: str | int = "month"

    def tables(self, model: Any) -> dict[str, list[dict[str, Any]]]:
        """The slice tables of a model fitted on that corpus, by output file name."""
        out = {}
        if self.timestamps is not None:
            out["topics_over_time.csv"] = model.topics_over_time(self.timestamps, self.bins)
        if self.classes is not None:
            out["topics_per_class.csv"] = model.topics_per_class(self.classes)
        return out


def read_slice_fields(docs: Iterable[Document], corpus: str | Path, time_field: str | None,
                      class_field: str | None, bins: str | int = "month") -> SliceFields:
    """Read and check the fields ``topics_over_time`` / ``topics_per_class`` slice by, before
    the fit: a record without a field or with a timestamp that is not a date raises
    ``CorpusError`` naming the file and line."""
    check_bins(bins)
    if time_field is None and class_field is None:
        return SliceFields(None, None, bins)
    stamps: list[datetime] = []
    classes: list[Any] = []
    for n, doc in enumerate(docs):
        for field in (time_field, class_field):
            if field is not None and (doc.meta.get(field) in (None, "")
                                      or is_missing(doc.meta.get(field))):
                if field in doc.meta:
                    raise CorpusError(f"{document_location(corpus, n)}: field {field!r} is "
                                      "empty (null, NaN or \"\")")
                others = ", ".join(sorted(doc.meta)) or "none besides its id and text"
                raise CorpusError(f"{document_location(corpus, n)}: no field {field!r} (its "
                                  f"fields: {others})")
        if time_field is not None:
            try:
                stamps.append(parse_timestamp(doc.meta[time_field]))
            except ValueError as exc:
                raise CorpusError(f"{document_location(corpus, n)}: field {time_field!r}: "
                                  f"{exc}") from None
        if class_field is not None:
            classes.append(doc.meta[class_field])
    if time_field is not None:
        check_bins_fit(bins, len(stamps))
    if class_field is not None:
        classes = class_names(classes, lambda n: f"{document_location(corpus, n)}: field "
                                                 f"{class_field!r}", CorpusError)
    return SliceFields(stamps if time_field else None, classes if class_field else None, bins)


def write_slice_csv(path: Path, rows: list[dict[str, Any]], csv_safe: bool = True) -> None:
    """A slice table as CSV (terms joined by "; "), for a spreadsheet: text cells that start
    like a formula get a leading ``'`` unless ``csv_safe`` is False (``tables.write_table``)."""
    from phrasekit.tables import write_table

    header = list(rows[0]) if rows else ["topic", "label", "slice", "frequency", "share",
                                         "terms"]
    write_table(path, header, ([("; ".join(r[h]) if h == "terms" else r[h]) for h in header]
                               for r in rows), csv_safe=csv_safe, fmt="csv")


def class_names(values: Iterable[Any], where: Callable[[int], str],
                error: type[Exception] = ValueError) -> list[str]:
    """Each class as text. A missing value, a list or an object, or a value that reads as an
    earlier one's text or number but is another (1 and "1", 1 and 1.0), raises ``error``
    naming it by ``where(position)``: merged, they would be one class."""
    first: dict[str, tuple[Any, int]] = {}
    names = []
    for i, value in enumerate(values):
        if isinstance(value, np.generic):  # NumPy's int64 is the int it holds
            value = value.item()
        if is_missing(value):
            raise error(f"{where(i)} is missing ({value!r}); every document needs a class")
        if isinstance(value, list | dict):
            raise error(f"{where(i)} is a {type(value).__name__}; a class is a text or a number")
        seen, at = first.setdefault(str(value), (value, i))
        if isinstance(value, int | float) and not isinstance(value, bool):
            seen, at = first.setdefault(f"number {float(value)!r}", (value, i))
        if type(seen) is not type(value) or seen != value:
            raise error(f"{where(i)} is {value!r}, which reads as {seen!r} ({where(at)}): "
                        "give the classes as one type")
        names.append(str(value))
    return names
