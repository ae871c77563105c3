"""spaCy in one process against worker processes, by the amount of text: where workers pay.

The topics method's phrase pass (POS chunker, no parser, no NER) over seeded word samples of a
corpus (``sample_by_words``, as ``DocumentTopicModel`` draws them), once with ``n_process`` 1
and once with ``--processes``, in interleaved rounds, whatever ``MIN_CHARS_PER_PROCESS`` says;
the phrases found must be equal. The threshold in ``phrases/extract.py`` sits where the
workers start to win.

Usage::

    python benchmarks/speed/spacy_processes.py --corpus bbc_news --n-docs 1000 \\
        --words 5000,10000,20000,40000,150000 --rounds 2
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, corpus_source, cpu_name


def main() -> None:
    ap = bench_parser(__doc__, corpus="bbc_news")
    ap.add_argument("--words", default="5000,10000,20000,40000,150000",
                    help="comma-separated sample sizes in words")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    import phrasekit.phrases.extract as extract
    from phrasekit.io import read_corpus

    docs = read_corpus(corpus_source(args.corpus))[: args.n_docs]
    extract.MIN_CHARS_PER_PROCESS = 1  # every run takes the processes it is given
    runs = {n: extract.PhraseExtractor(chunker="pos", entities=False, n_process=n)
            for n in (1, args.processes)}
    for ex in runs.values():
        ex.nlp  # loaded before timing  # noqa: B018
    print(f"CPU: {cpu_name()}\n")
    print(f"| words | docs | characters | 1 process s | {args.processes} processes s "
          "| speed-up |")
    print("|---:|---:|---:|---:|---:|---:|")
    for words in (int(w) for w in args.words.split(",")):
        sample = extract.sample_by_words(docs, words, 0)
        times: dict[int, list[float]] = {n: [] for n in runs}
        found: dict[int, list] = {}
        for _ in range(args.rounds):
            for n, ex in runs.items():
                t0 = time.perf_counter()
                found[n] = ex.occurrences(sample)
                times[n].append(time.perf_counter() - t0)
        if found[1] != found[args.processes]:
            raise SystemExit(f"{words} words: the processes found other phrases")
        one, many = (statistics.median(times[n]) for n in runs)
        chars = sum(len(d.text) for d in sample)
        print(f"| {words:,} | {len(sample)} | {chars:,} | {one:.2f} | {many:.2f} "
              f"| {one / many:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
