"""Similarity search over phrase vectors: exact / HNSW / IVF top-k indexes, fuzzy join of two
tables and a persisted entity-retrieval index over a dictionary of names."""

import lazy_loader

# Names are imported on first use, so importing one module of the package does not
# load the others' dependencies.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "index": [
            "ANNIndex",
            "ANN_MIN_QUERIES",
            "ANN_THRESHOLD",
            "SearchIndex",
            "VectorIndex",
            "build_index",
            "load_index",
        ],
        "ivf": ["IVFIndex"],
        "frames": ["encode_frame", "join_frames"],
        "join": [
            "JoinError",
            "Match",
            "Table",
            "fuzzy_join",
            "join_values",
            "read_column",
            "read_table",
            "write_joined",
            "write_matches",
        ],
        "retrieval": ["EntityIndex", "EntityIndexError", "read_names"],
    },
)
