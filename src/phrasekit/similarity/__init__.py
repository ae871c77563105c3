"""Similarity search over phrase vectors: exact / ANN top-k indexes, fuzzy join of two tables and
a persisted entity-retrieval index over a dictionary of names."""

from phrasekit.similarity.index import (
    ANN_MIN_QUERIES,
    ANN_THRESHOLD,
    ANNIndex,
    SearchIndex,
    VectorIndex,
    build_index,
    load_index,
)
from phrasekit.similarity.join import (
    JoinError,
    Match,
    Table,
    fuzzy_join,
    read_column,
    read_table,
    write_joined,
    write_matches,
)
from phrasekit.similarity.retrieval import EntityIndex, EntityIndexError, read_names

__all__ = [
    "ANN_MIN_QUERIES",
    "ANN_THRESHOLD",
    "ANNIndex",
    "EntityIndex",
    "EntityIndexError",
    "JoinError",
    "Match",
    "SearchIndex",
    "Table",
    "VectorIndex",
    "build_index",
    "fuzzy_join",
    "load_index",
    "read_column",
    "read_names",
    "read_table",
    "write_joined",
    "write_matches",
]
