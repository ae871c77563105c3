"""Choose PNTM's ``grounding`` on the bundled arXiv sample corpus (no labels, and not one of
the corpora of ``topics_vs_peers.py``): NPMI and diversity of the top-10 terms per value.

    python benchmarks/topics/pntm_grounding.py --cache-dir runs/sample_cache
"""

from __future__ import annotations

import argparse
import logging


def main() -> None:
    """Fit PNTM once per K, re-read the topics with each grounding, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default="runs/sample_cache")
    parser.add_argument("--k", default="20,50")
    parser.add_argument("--values", default="0,0.02,0.05,0.1,0.2,0.4")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    import torch

    torch.set_num_threads(args.threads)
    from phrasekit.datasets import resolve_corpus
    from phrasekit.io import read_corpus
    from phrasekit.text import tokenize
    from phrasekit.topics import PNTM, load_or_extract_vocabulary
    from phrasekit.topics.outputs.metrics import npmi_coherence, topic_diversity

    docs = read_corpus(resolve_corpus("sample"))
    phrases = load_or_extract_vocabulary(docs, f"{args.cache_dir}/phrases.json.gz")
    token_docs = [tokenize(d.text) for d in docs]
    print("| K | grounding | NPMI | diversity (top-10) | topic 0 |\n|---|---|---|---|---|")
    for k in (int(x) for x in args.k.split(",")):
        model = PNTM(n_topics=k, cache_dir=args.cache_dir).fit(docs, phrases=phrases)
        for g in (float(x) for x in args.values.split(",")):
            model.reread(grounding=g)
            npmi, _ = npmi_coherence(model.topic_keys_, token_docs, top_n=10)
            div = topic_diversity(model.topic_keys_, top_n=10)
            print(f"| {k} | {g} | {npmi:.3f} | {div:.3f} | "
                  f"{', '.join(model.topic_keys_[0][:6])} |", flush=True)


if __name__ == "__main__":
    main()
