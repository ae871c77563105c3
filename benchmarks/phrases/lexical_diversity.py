"""Lexical diversity of nearest neighbours (Phrase-BERT Table 4) for several phrasekit models.

For a corpus under the shared corpora folder (default ``bbc_news``): a vocabulary of its most
frequent words and noun-chunk / entity phrases (``--vocab-size``, ``--word-share``), ``--sources``
multi-word source phrases sampled from that vocabulary (``--seed``), each source's top-``k``
neighbours by cosine (itself excluded) per ``--model``, and the three metrics of
``phrasekit.eval.lexical_diversity`` (% new unigrams and Levenshtein: higher = more diverse;
LCS-precision: lower = more diverse). Prints a Markdown table plus the neighbours of a few fixed
example phrases, and writes ``OUT/table.md`` and ``OUT/results.json``.

The spaCy pass is skipped with ``--phrase-vocab FILE`` (a saved ``PhraseVocabulary``, read only)
or cached with ``--phrase-cache FILE`` (written on first use).

Usage: python benchmarks/phrases/lexical_diversity.py --model minilm --model pearl-minilm
       --model glove-50d [--corpus bbc_news] [--phrase-vocab runs/phr/bbc_news.json.gz]
       [--vocab-size 20000] [--sources 500] [--seed 0] [-k 10] [--threads 1] [--out DIR]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

DEFAULT_MODELS = ("minilm", "pearl-minilm", "glove-50d")
DEFAULT_EXAMPLES = ("interest rates", "prime minister", "mobile phones")


def resolve_corpus(name: str) -> Path:
    """A corpus path: an existing path as given, else a folder of the shared corpora."""
    from phrasekit.settings import corpora_dir

    path = Path(name)
    if path.exists():
        return path
    root = corpora_dir(required=True)
    assert root is not None
    return root / name


def format_report(results: list[dict[str, Any]], examples: dict[str, dict[str, list]],
                  params: dict[str, Any]) -> str:
    """The Markdown table (one row per model) plus the example neighbour lists."""
    lines = [
        f"Lexical diversity of the top-{params['k']} neighbours: {params['corpus']}, "
        f"{params['n_vocab']} vocabulary entries ({params['n_words']} words, "
        f"{params['n_vocab'] - params['n_words']} phrases), {params['n_sources']} sampled "
        f"multi-word sources (seed {params['seed']}).",
        "",
        "| model | % new unigrams ↑ | LCS-precision ↓ | Levenshtein ↑ | mean cosine | sources "
        "| encode s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['model']} | {r['new_unigram_pct']:.1f} | {r['lcs_precision_pct']:.1f} "
            f"| {r['levenshtein']:.1f} | {r['mean_cosine']:.3f} | {r['n_sources']} "
            f"| {r['encode_s']:.0f} |"
        )
    for source, per_model in examples.items():
        lines += ["", f"Nearest neighbours of \"{source}\":", ""]
        for model, hits in per_model.items():
            lines.append(f"- {model}: " + ", ".join(t for t, _ in hits))
    return "\n".join(lines) + "\n"


def main() -> None:
    """Parse the arguments, run every model and print / write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="bbc_news",
                        help="corpus folder name under the shared corpora, or a corpus path")
    parser.add_argument("--model", action="append", dest="models",
                        help=f"model name (repeat); default: {' '.join(DEFAULT_MODELS)}")
    parser.add_argument("--phrase-vocab", type=Path,
                        help="saved PhraseVocabulary of the corpus (read only; skips spaCy)")
    parser.add_argument("--phrase-cache", type=Path,
                        help="phrase cache written / reused by the spaCy pass")
    parser.add_argument("--vocab-size", type=int, default=20_000)
    parser.add_argument("--word-share", type=float, default=0.4,
                        help="at most this share of the vocabulary are single words")
    parser.add_argument("--min-count", type=int, default=5, help="minimum count of a word")
    parser.add_argument("--sources", type=int, default=500, help="number of source phrases")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-k", type=int, default=10, help="neighbours per source")
    parser.add_argument("--example", action="append", dest="examples",
                        help=f"source shown with its neighbours (repeat); default: "
                             f"{', '.join(DEFAULT_EXAMPLES)}")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: runs/lexical_diversity/CORPUS)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, datefmt="%H:%M:%S",
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    import torch

    torch.set_num_threads(max(1, args.threads))

    import phrasekit
    from phrasekit.eval.lexical_diversity import (
        build_vocabulary,
        lexical_diversity,
        sample_sources,
        search_neighbors,
    )
    from phrasekit.io import read_corpus, write_json, write_text
    from phrasekit.phrases import PhraseVocabulary
    from phrasekit.phrases.cache import load_or_extract_vocabulary
    from phrasekit.registry import check_model_name

    models = args.models or list(DEFAULT_MODELS)
    for m in models:
        check_model_name(m)
    examples = args.examples or list(DEFAULT_EXAMPLES)
    corpus = resolve_corpus(args.corpus)
    out = args.out or Path("runs/lexical_diversity") / corpus.name
    docs = read_corpus(corpus)
    if args.phrase_vocab is not None:
        phrase_vocab = PhraseVocabulary.from_json(args.phrase_vocab)
        if phrase_vocab.doc_ids != [d.id for d in docs]:
            raise SystemExit(f"{args.phrase_vocab} was extracted from other documents")
    else:
        phrase_vocab = load_or_extract_vocabulary(docs, args.phrase_cache, show_progress=True)
    vocab = build_vocabulary(docs, phrase_vocab, size=args.vocab_size,
                             word_share=args.word_share, min_count=args.min_count)
    n_words = sum(1 for t in vocab if len(t.split()) == 1)
    sources = sample_sources(vocab, args.sources, seed=args.seed)
    params = {"corpus": corpus.name, "n_docs": len(docs), "n_vocab": len(vocab),
              "n_words": n_words, "n_sources": len(sources), "seed": args.seed, "k": args.k,
              "vocab_size": args.vocab_size, "word_share": args.word_share,
              "min_count": args.min_count, "threads": args.threads, "examples": examples}

    results: list[dict[str, Any]] = []
    example_hits: dict[str, dict[str, list]] = {e: {} for e in examples}
    for name in models:
        encoder = phrasekit.load(name)
        t0 = time.perf_counter()
        vocab_vecs = encoder.encode(vocab, batch_size=args.batch_size, show_progress=True)
        encode_s = time.perf_counter() - t0
        res = lexical_diversity(encoder, vocab, sources, k=args.k, batch_size=args.batch_size,
                                show_progress=True, vocab_vecs=vocab_vecs)
        row = {**res.to_dict(), "model": name, "encode_s": encode_s}
        results.append(row)
        ex_hits = search_neighbors(encoder.encode(examples), examples, vocab_vecs, vocab, args.k)
        for e, hits in zip(examples, ex_hits, strict=True):
            example_hits[e][name] = [(t, round(c, 4)) for t, c in hits]
        logging.info("%s: new %.1f%%, LCS-P %.1f%%, Lev %.2f (%d sources, encode %.0f s)", name,
                     res.new_unigram_pct, res.lcs_precision_pct, res.levenshtein,
                     res.n_sources, encode_s)

    report = format_report(results, example_hits, params)
    write_text(out / "table.md", report)
    write_json(out / "results.json", {"params": params, "sources": sources, "results": results,
                                      "examples": example_hits})
    print(report, end="")
    print(f"\nwrote {out / 'table.md'} and {out / 'results.json'}")


if __name__ == "__main__":
    main()
