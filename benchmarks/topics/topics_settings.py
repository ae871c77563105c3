"""Topic quality and stage times of ``DocumentTopicModel`` under other settings.

For each corpus, the model (``encoder="minilm@auto"``, the CLI's default, otherwise default
settings) is fitted once per ``--settings`` entry, a ``;``-separated list of
``name=value[,name=value]`` keyword arguments (``default`` = no change). Reported: K, NMI
against the gold labels (every document), NPMI of the topics' top terms (the scorer of
``benchmarks/topics/topics_vs_peers.py``), the phrases in the vocabulary, how many of each topic's
top 20 terms the first setting's same topic has too (lower-cased; mean over topics, where K
is the same) and the seconds of each stage. Every fit lists 20 terms per topic (``top_n``),
NPMI scores the first 10. Vectors are cached in ``--cache`` by text, so each corpus is encoded
once.

    python benchmarks/topics/topics_settings.py --corpora bbc_news \\
        --settings "default;phrase_words=150000"
    python benchmarks/topics/topics_settings.py --settings "encoder='minilm';encoder='minilm@int8'"
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import cpu_name
from topics_fit_sample import cached_args
from topics_vs_peers import load_corpus, score

from phrasekit.settings import shared_dir
from phrasekit.text import tokenize
from phrasekit.topics import DocumentTopicModel

CORPORA = "arxiv_abstracts_cc0,bbc_news,restaurant_reviews_absa14,ag_news_test,20newsgroups"


def parse_setting(text: str) -> dict:
    """``name=value,name=value`` (values as Python literals) as keyword arguments."""
    if text.strip() == "default":
        return {}
    pairs = (item.split("=", 1) for item in text.split(","))
    return {name.strip(): ast.literal_eval(value.strip()) for name, value in pairs}


def main() -> None:
    args = cached_args(__doc__, {"--corpora": CORPORA, "--settings": "default"})
    print(f"CPU: {cpu_name()}\n\n| corpus | docs | setting | K | NMI | NPMI | phrases | "
          "top-20 terms as the first | stages (s) |\n|---|---:|---|---:|---:|---:|---:|---:|---|",
          flush=True)
    for corpus in args.corpora.split(","):
        docs, gold, mask = load_corpus(shared_dir() / "corpora", corpus)
        token_docs = [tokenize(d.text) for d in docs]
        first = None
        for setting in args.settings.split(";"):
            kwargs = {"encoder": "minilm@auto", "random_state": args.seed, "top_n": 20,
                      "cache_dir": str(Path(args.cache) / corpus), **parse_setting(setting)}
            model = DocumentTopicModel(**kwargs).fit(docs)
            tops = [{t.lower() for t, _ in ranked} for ranked in model.topics_]
            first = first or tops
            same = "–" if len(tops) != len(first) else \
                f"{np.mean([len(a & b) / len(a) for a, b in zip(tops, first, strict=True)]):.3f}"
            found = {"topics": [[t for t, _ in ranked][:10] for ranked in model.topics_],
                     "labels": list(model.doc_labels_)}
            got = score(found, token_docs, gold, mask)
            n_phrases = sum(" " in t for t in model.terms_)
            stages = ", ".join(f"{k} {v:.1f}" for k, v in model.timings_.items())
            print(f"| {corpus} | {len(docs)} | {setting} | {model.n_topics_} | {got['nmi']:.3f} "
                  f"| {got['npmi']:.3f} | {n_phrases} | {same} | {stages} |", flush=True)


if __name__ == "__main__":
    main()
