"""Tokens per document: every window of a document against its first window only.

For each corpus, ``DocumentTopicModel`` (the default settings: the ``auto`` sample and the
student) is fitted with documents encoded as up to ``max_chunks`` 150-word windows, for each
value of ``--max-chunks`` (1 is truncation to the first 150 words, about sentence-
transformers' 256 tokens). Reported: the windows the transformer encoded, K, NMI against the
gold labels (every document) and NPMI of the topics' top terms, by the scorer of
``benchmarks/topics/topics_vs_peers.py``. Window vectors are cached in ``--cache`` by text, so the
first windows are encoded once for both settings.

    python benchmarks/topics/topics_windows.py --corpora bbc_news,20newsgroups --max-chunks 8,1
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from topics_fit_sample import cached_args
from topics_vs_peers import load_corpus, score

from phrasekit.encoders.cache import chunk_words
from phrasekit.settings import shared_dir
from phrasekit.text import tokenize
from phrasekit.topics import DocumentTopicModel

CORPORA = "arxiv_abstracts_cc0,bbc_news,restaurant_reviews_absa14,ag_news_test,20newsgroups"


def main() -> None:
    args = cached_args(__doc__, {"--corpora": CORPORA, "--max-chunks": "8,1"})
    print("| corpus | docs | max windows | windows encoded | K | NMI | NPMI |\n"
          "|---|---:|---:|---:|---:|---:|---:|", flush=True)
    for corpus in args.corpora.split(","):
        docs, gold, mask = load_corpus(shared_dir() / "corpora", corpus)
        token_docs = [tokenize(d.text) for d in docs]
        for m in (int(x) for x in args.max_chunks.split(",")):
            model = DocumentTopicModel(encoder="minilm", max_chunks=m, random_state=args.seed,
                                       cache_dir=str(Path(args.cache) / corpus)).fit(docs)
            windows = sum(len(chunk_words(docs[i].text, model.chunk_size, m))
                          for i in model.sample_index_)
            found = {"topics": [[t for t, _ in ranked] for ranked in model.topics_],
                     "labels": list(model.doc_labels_)}
            got = score(found, token_docs, gold, mask)
            print(f"| {corpus} | {len(docs)} | {m} | {windows} | {model.n_topics_} | "
                  f"{got['nmi']:.3f} | {got['npmi']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
