"""Topics: k-means clusters of document embeddings named by words and phrases
(``DocumentTopicModel``, the default), clusters of phrase embeddings (``PhraseTopicModel``),
the neural topic model PNTM (``PNTM``; UNTM with a static encoder), UCTopic's topical phrase
mining with CCL (``UCTopicModel``), LDA baselines (``LDATopics``) and automatic metrics
(``phrasekit.topics.outputs.metrics``).

Example::

    from phrasekit.io import read_corpus
    from phrasekit.topics import DocumentTopicModel, write_topic_outputs

    docs = read_corpus("corpus.jsonl")
    model = DocumentTopicModel().fit(docs, show_progress=True)
    write_topic_outputs(model, docs, "out/")
"""

import lazy_loader

# Names are imported on first use, so importing one module of the package does not
# load the others' dependencies.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "methods.documents": ["DocumentTopicModel"],
        "methods.lda": ["LDATopics"],
        "methods.model": ["PhraseTopicModel"],
        "outputs.output": [
            "check_topics_out",
            "json_params",
            "pntm_to_dict",
            "snippet",
            "topics_to_dict",
            "write_pntm_outputs",
            "write_topic_outputs",
            "write_uctopic_outputs",
        ],
        "outputs.markdown": ["format_timings", "topics_to_markdown"],
        "pipeline": ["apply_topics", "load_or_extract_vocabulary", "run_pntm", "run_topics",
                     "run_uctopic"],
        "methods.pntm": ["PNTM"],
        "methods.uctopic": ["UCTopicModel"],
    },
)
