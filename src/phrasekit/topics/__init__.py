"""Phrase-based topics: cluster frequent words and phrases of a corpus by their embeddings.

Example::

    from phrasekit.io import read_corpus
    from phrasekit.topics import PhraseTopicModel, write_topic_outputs

    docs = read_corpus("corpus.jsonl")
    model = PhraseTopicModel(encoder="minilm").fit(docs, show_progress=True)
    write_topic_outputs(model, docs, "out/")
"""

from phrasekit.topics.model import PhraseTopicModel, format_timings, json_params
from phrasekit.topics.output import (
    snippet,
    topics_to_dict,
    topics_to_markdown,
    write_topic_outputs,
)
from phrasekit.topics.pipeline import load_or_extract_vocabulary, run_topics

__all__ = [
    "PhraseTopicModel",
    "format_timings",
    "json_params",
    "load_or_extract_vocabulary",
    "run_topics",
    "snippet",
    "topics_to_dict",
    "topics_to_markdown",
    "write_topic_outputs",
]
