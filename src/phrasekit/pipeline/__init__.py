"""The staged corpus pipeline on an engine: ``local`` (this process) or ``ray`` (a Ray
cluster). Stages map shards (Arrow tables) to shards; finished shards are kept in a
``ShardStore`` so that a killed job resumes; the sharded encoder, extractor and search plug
into the topic models, keyphrases and the fuzzy join unchanged."""

from phrasekit.pipeline.engines import (
    ENGINES,
    Engine,
    LocalEngine,
    RayEngine,
    Stage,
    iter_stage,
    make_engine,
    run_stage,
)
from phrasekit.pipeline.sharded import (
    ShardedEncoder,
    ShardedExtractor,
    ShardedSearch,
    sharded_keyphrases,
)
from phrasekit.pipeline.shards import ShardStore
from phrasekit.pipeline.stages import EncodeStage, ExtractStage, KeyphraseStage, SearchStage

__all__ = [
    "ENGINES",
    "EncodeStage",
    "Engine",
    "ExtractStage",
    "KeyphraseStage",
    "LocalEngine",
    "RayEngine",
    "SearchStage",
    "ShardStore",
    "ShardedEncoder",
    "ShardedExtractor",
    "ShardedSearch",
    "Stage",
    "iter_stage",
    "make_engine",
    "run_stage",
    "sharded_keyphrases",
]
