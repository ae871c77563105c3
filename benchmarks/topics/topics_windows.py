"""Tokens per document: how many windows of how many words a document is encoded as.

For each corpus, ``DocumentTopicModel`` (the default settings: the ``auto`` sample and the
student) is fitted with documents encoded as up to ``M`` windows of ``W`` words, for each item
``MxW`` of ``--windows`` (``M`` alone: 150-word windows), or ``MxW/N``: the first ``N`` words
in the fewest windows of at most ``W`` words, of even length (``max_words``; the default is
``2x150/200``); each with every encoder of ``--encoders`` and seed of ``--seeds``
(``random_state``: the sample and K's choice). Reported: the windows and words the
transformer encoded, K, NMI against the gold labels (every document) and NPMI of the topics'
top terms, by the scorer of ``benchmarks/topics/topics_vs_peers.py``. Window vectors are
cached in ``--cache`` by text, so a window two settings share is encoded once.

    python benchmarks/topics/topics_windows.py --corpora bbc_news,20newsgroups \
        --windows 2x150/200,2x150,2x100 --encoders minilm,minilm@int8 --seeds 0,1,2
"""

from __future__ import annotations

import sys
from itertools import product
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
    args = cached_args(__doc__, {"--corpora": CORPORA, "--windows": "8,1",
                                 "--encoders": "minilm", "--seeds": ""})
    specs = []
    for item in args.windows.split(","):
        m, _, rest = item.partition("x")
        w, _, n = rest.partition("/")
        specs.append((int(m), int(w or 150), int(n) if n else None))
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [args.seed]
    print("| corpus | docs | windows x words (at most) | encoder | seed | windows encoded | "
          "words encoded | K | NMI | NPMI |\n|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
          flush=True)
    for corpus in args.corpora.split(","):
        docs, gold, mask = load_corpus(shared_dir() / "corpora", corpus)
        token_docs = [tokenize(d.text) for d in docs]
        for (m, w, n), seed, encoder in product(specs, seeds, args.encoders.split(",")):
            model = DocumentTopicModel(encoder=encoder, max_chunks=m, chunk_size=w, max_words=n,
                                       random_state=seed,
                                       cache_dir=str(Path(args.cache) / corpus)).fit(docs)
            chunks = [c for i in model.sample_index_ for c in chunk_words(docs[i].text, w, m, n)]
            words = sum(len(c.split()) for c in chunks)
            found = {"topics": [[t for t, _ in ranked] for ranked in model.topics_],
                     "labels": list(model.doc_labels_)}
            got = score(found, token_docs, gold, mask)
            print(f"| {corpus} | {len(docs)} | {m}x{w}{'' if n is None else f'/{n}'} | "
                  f"{encoder} | {seed} | {len(chunks)} | {words} | {model.n_topics_} | "
                  f"{got['nmi']:.3f} | {got['npmi']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
