"""The staged corpus pipeline on an engine: ``local`` (this process) or ``ray`` (a Ray
cluster). Stages map shards (Arrow tables) to shards; finished shards are kept in a
``ShardStore`` so that a killed job resumes; the sharded encoder, extractor and search plug
into the topic models, keyphrases and the fuzzy join unchanged."""

import lazy_loader

# Names are imported on first use, so importing one module of the package does not
# load the others' dependencies.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "engines": [
            "ENGINES",
            "Engine",
            "LocalEngine",
            "RayEngine",
            "Stage",
            "iter_stage",
            "make_engine",
            "run_stage",
        ],
        "mentions": ["DocumentStage", "MentionStage", "write_mentions"],
        "sharded": ["ShardedEncoder", "ShardedExtractor", "ShardedSearch", "sharded_keyphrases"],
        "shards": ["ShardStore"],
        "stages": ["EncodeStage", "ExtractStage", "KeyphraseStage", "ModelStage", "SearchStage"],
    },
)
