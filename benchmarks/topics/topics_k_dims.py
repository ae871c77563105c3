"""Choosing K on principal components: the stability k-means on all 384 dimensions of the
sample's vectors against their first principal components, with as many pairs of halves or
more (``--settings DIMS:PAIRS,...``; ``all`` = every dimension).

For each corpus, ``DocumentTopicModel(encoder="minilm@auto")`` (the CLI's default settings) is
fitted once per setting of the stability step's dimensions; the final k-means always runs
on the full vectors. Reported: the chosen K, NMI against the gold labels (every document),
NPMI of the topics' top terms (the scorer of ``benchmarks/topics/topics_vs_peers.py``) and the
seconds of the clustering stage (choosing K + the final k-means). Vectors are cached in
``--cache`` by text, so each corpus is encoded once.

    python benchmarks/topics/topics_k_dims.py --corpora bbc_news,20newsgroups --settings all:8,64:16
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import cpu_name
from topics_fit_sample import cached_args
from topics_vs_peers import load_corpus, score

import phrasekit.topics.core.choose_k as choose_k_module
from phrasekit.settings import shared_dir
from phrasekit.text import tokenize
from phrasekit.topics import DocumentTopicModel

CORPORA = "arxiv_abstracts_cc0,bbc_news,restaurant_reviews_absa14,ag_news_test,20newsgroups"


def main() -> None:
    args = cached_args(__doc__, {"--corpora": CORPORA, "--settings": "all:8,64:8,64:16"})
    stability = choose_k_module.stability_scores
    print(f"CPU: {cpu_name()}\n\n| corpus | docs | dims | pairs | K | NMI | NPMI | "
          "clustering s |\n|---|---:|---|---:|---:|---:|---:|---:|", flush=True)
    for corpus in args.corpora.split(","):
        docs, gold, mask = load_corpus(shared_dir() / "corpora", corpus)
        token_docs = [tokenize(d.text) for d in docs]
        for setting in args.settings.split(","):
            dims, pairs = setting.split(":")
            choose_k_module.stability_scores = functools.partial(
                stability, dims=None if dims == "all" else int(dims), n_pairs=int(pairs))
            model = DocumentTopicModel(encoder="minilm@auto", random_state=args.seed,
                                       cache_dir=str(Path(args.cache) / corpus)).fit(docs)
            found = {"topics": [[t for t, _ in ranked] for ranked in model.topics_],
                     "labels": list(model.doc_labels_)}
            got = score(found, token_docs, gold, mask)
            print(f"| {corpus} | {len(docs)} | {dims} | {pairs} | {model.n_topics_} | "
                  f"{got['nmi']:.3f} | {got['npmi']:.3f} | {model.timings_['clustering']:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
