"""spaCy as phrasekit runs it against spaCy as shipped: time and identical annotations.

Three pipelines of the packaged ``en_core_web_sm`` without lemmatizer and NER (what keyphrases
and topics load), over the same documents, one process on one thread, in interleaved rounds:

- ``shipped``: thinc's bundled BLIS for matrix products, spaCy's attribute ruler;
- ``numpy``: numpy's matrix products (``phrases/spacy_speed.choose_ops``), spaCy's ruler;
- ``phrasekit``: numpy's products and :class:`PosRuler` (what ``load_spacy`` gives).

Per pipeline: seconds per round (median), tokens per second, and the tokens whose POS, TAG, DEP
or head differ from ``shipped`` (must be 0), and the documents whose noun chunks differ.

Usage::

    python benchmarks/speed/spacy_speed.py --corpus bbc_news --n-docs 500 --rounds 3
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, corpus_source, cpu_name


def load_pipelines() -> dict:
    """The three pipelines, loaded in the order their matrix-product backends need."""
    import spacy
    from thinc.api import NumpyOps, set_current_ops

    from phrasekit.phrases.extract import DEFAULT_SPACY_MODEL, load_spacy
    from phrasekit.phrases.spacy_speed import numpy_gemm_is_faster

    exclude = ["lemmatizer", "ner"]
    set_current_ops(NumpyOps(use_blis=True))
    shipped = spacy.load(DEFAULT_SPACY_MODEL, exclude=exclude)
    set_current_ops(NumpyOps(use_blis=False))
    plain = spacy.load(DEFAULT_SPACY_MODEL, exclude=exclude)
    fast = load_spacy(DEFAULT_SPACY_MODEL, tuple(exclude))
    print(f"numpy measured faster than BLIS here: {numpy_gemm_is_faster()}")
    return {"shipped": shipped, "numpy": plain, "phrasekit": fast}


def annotations(docs: list) -> list[tuple]:
    return [(t.pos_, t.tag_, t.dep_, t.head.i) for d in docs for t in d]


def main() -> None:
    ap = bench_parser(__doc__, corpus="bbc_news")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    from phrasekit.io import read_corpus

    texts = [d.text for d in read_corpus(corpus_source(args.corpus))][: args.n_docs]
    pipes = load_pipelines()
    times: dict[str, list[float]] = {name: [] for name in pipes}
    out: dict[str, list] = {}
    with threadpool_limits(1):
        for nlp in pipes.values():
            list(nlp.pipe(texts[:20]))
        for _ in range(args.rounds):
            for name, nlp in pipes.items():
                t0 = time.perf_counter()
                out[name] = list(nlp.pipe(texts, batch_size=64))
                times[name].append(time.perf_counter() - t0)
    ref = annotations(out["shipped"])
    chunks = [[c.text for c in d.noun_chunks] for d in out["shipped"]]
    n_tokens = len(ref)
    base = statistics.median(times["shipped"])
    print(f"CPU: {cpu_name()}; {len(texts)} documents of {args.corpus}, {n_tokens:,} tokens, "
          f"one process, one thread, {args.rounds} rounds\n")
    print("| pipeline | s (median) | rounds s | tokens/s | speed vs shipped | tokens differing "
          "| docs with other noun chunks |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name, nlp_out in out.items():
        med = statistics.median(times[name])
        diff = sum(a != b for a, b in zip(annotations(nlp_out), ref, strict=True))
        other = sum([c.text for c in d.noun_chunks] != ch for d, ch in zip(nlp_out, chunks,
                                                                            strict=True))
        rounds = "/".join(f"{t:.2f}" for t in times[name])
        print(f"| {name} | {med:.2f} | {rounds} | {n_tokens / med:,.0f} | {base / med:.2f}x "
              f"| {diff} | {other} |")


if __name__ == "__main__":
    main()
