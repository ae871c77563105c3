"""Similarity search over phrase vectors: exact top-k index and fuzzy join of two tables."""

from phrasekit.similarity.index import VectorIndex
from phrasekit.similarity.join import JoinError, fuzzy_join, read_column

__all__ = ["JoinError", "VectorIndex", "fuzzy_join", "read_column"]
