"""phrasekit's BERTopic and KeyBERT backends against sentence-transformers, in one process.

The same documents (the first ``--n-docs`` of a corpus) are embedded by
``SentenceTransformer(all-MiniLM-L6-v2).encode`` (the packaged weights; the baseline), by
``BERTopicBackend(model).embed`` and by ``KeyBERTBackend(model).embed``, each ``model`` of
``--models`` (default ``minilm`` and ``minilm@auto``: the same weights at fp32 and at the
precision phrasekit picks for this CPU). All run in one process after one warm-up each, in
``--rounds`` rounds whose order alternates; the table gives each one's best seconds, its ratio to
sentence-transformers' best, and the mean cosine of its rows to sentence-transformers' rows.

Usage: python benchmarks/speed/backend_vs_st.py [--corpus bbc_news] [--n-docs 500] [--rounds 3]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, corpus_source, cpu_name


def runners(models: list[str]) -> dict:
    """name -> embed(texts) for sentence-transformers and each backend of each model."""
    from sentence_transformers import SentenceTransformer

    from phrasekit.integrations import BERTopicBackend, KeyBERTBackend
    from phrasekit.models.backbones import backbone_path

    st = SentenceTransformer(str(backbone_path("minilm")), device="cpu")
    out = {"sentence-transformers": lambda t: st.encode(t, normalize_embeddings=True)}
    for model in models:
        bertopic, keybert = BERTopicBackend(model), KeyBERTBackend(model)
        out[f"BERTopicBackend({model!r})"] = bertopic.embed
        out[f"KeyBERTBackend({model!r})"] = keybert.embed
    return out


def main() -> None:
    ap = bench_parser(__doc__, corpus="bbc_news")
    ap.add_argument("--models", default="minilm,minilm@auto")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from phrasekit.io import read_corpus

    source = corpus_source(args.corpus)
    path = source / "documents.jsonl.gz" if source.is_dir() else source
    texts = [d.text for d in read_corpus(path)][: args.n_docs or 500]
    runs = runners(args.models.split(","))
    for embed in runs.values():  # warm-up: model load, graph, allocator
        embed(texts[:16])
    best = dict.fromkeys(runs, float("inf"))
    rows: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        for name in list(runs) if r % 2 == 0 else list(runs)[::-1]:
            start = time.perf_counter()
            rows[name] = np.asarray(runs[name](texts), dtype=np.float32)
            best[name] = min(best[name], time.perf_counter() - start)
    base = best["sentence-transformers"]
    ref = rows["sentence-transformers"]
    print(f"CPU: {cpu_name()}; {len(texts)} documents of {args.corpus}, best of {args.rounds} "
          "rounds in one process")
    print("| embedder | best s | vs sentence-transformers | mean cosine to its rows |")
    print("|---|---:|---:|---:|")
    for name, sec in best.items():
        cos = float(np.mean(np.sum(rows[name] * ref, axis=1)))
        print(f"| {name} | {sec:.1f} | {sec / base:.2f}x | {cos:.4f} |")


if __name__ == "__main__":
    main()
