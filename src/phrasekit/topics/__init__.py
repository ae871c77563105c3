"""Topics: k-means clusters of document embeddings named by words and phrases
(``DocumentTopicModel``, the default), clusters of phrase embeddings (``PhraseTopicModel``),
the neural topic model PNTM (``PNTM``; UNTM with a static encoder), UCTopic's topical phrase
mining with CCL (``UCTopicModel``), LDA baselines (``LDATopics``) and automatic metrics
(``phrasekit.topics.metrics``).

Example::

    from phrasekit.io import read_corpus
    from phrasekit.topics import DocumentTopicModel, write_topic_outputs

    docs = read_corpus("corpus.jsonl")
    model = DocumentTopicModel(encoder="minilm").fit(docs, show_progress=True)
    write_topic_outputs(model, docs, "out/")
"""

from phrasekit.phrases.extract import load_or_extract_vocabulary
from phrasekit.topics.documents import DocumentTopicModel
from phrasekit.topics.lda import LDATopics
from phrasekit.topics.model import PhraseTopicModel
from phrasekit.topics.output import (
    check_topics_out,
    format_timings,
    json_params,
    pntm_to_dict,
    snippet,
    topics_to_dict,
    topics_to_markdown,
    write_pntm_outputs,
    write_topic_outputs,
    write_uctopic_outputs,
)
from phrasekit.topics.pipeline import (
    run_pntm,
    run_topics,
    run_uctopic,
)
from phrasekit.topics.pntm import PNTM
from phrasekit.topics.uctopic import UCTopicModel

__all__ = [
    "PNTM",
    "DocumentTopicModel",
    "LDATopics",
    "PhraseTopicModel",
    "UCTopicModel",
    "check_topics_out",
    "format_timings",
    "json_params",
    "load_or_extract_vocabulary",
    "pntm_to_dict",
    "run_pntm",
    "run_topics",
    "run_uctopic",
    "snippet",
    "topics_to_dict",
    "topics_to_markdown",
    "write_pntm_outputs",
    "write_topic_outputs",
    "write_uctopic_outputs",
]
