"""What fitting topics on a sample costs: ``DocumentTopicModel`` with ``fit_docs`` below the
corpus size (a seeded sample clustered and read for terms, every other document placed in its
nearest topic) against the fit on every document, on labelled development corpora.

For each corpus and each ``--fit-docs`` value (``all`` = the whole corpus), one fit with the
default settings (K chosen by stability) and ``--model`` as the document encoder; reported:
the chosen K, the NMI of every document's topic against the gold labels (documents in no topic
form one group of their own), the adjusted Rand index against the whole-corpus fit's labels,
and the fit's wall time. Results: a Markdown table on stdout and ``OUT/topics_fit_sample.json``.

    python benchmarks/topics/topics_fit_sample.py --corpora 20newsgroups,ag_news_test \\
        --fit-docs all,10000,5000,2500 --model glove-50d
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser
from topics_vs_peers import load_corpus

from phrasekit.settings import shared_dir
from phrasekit.topics import DocumentTopicModel


def sample_parser(doc: str, corpora: str, fit_docs: str, model: str, out: str
                  ) -> argparse.ArgumentParser:
    """The options of the sample benchmarks: corpora, sample sizes, encoder, seed, output."""
    ap = bench_parser(doc)
    ap.add_argument("--corpora", default=corpora)
    ap.add_argument("--fit-docs", default=fit_docs)
    ap.add_argument("--model", default=model)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=out)
    return ap


def cached_args(doc: str, options: dict[str, str]) -> argparse.Namespace:
    """The parsed options of a benchmark over cached MiniLM vectors: ``options`` (flag ->
    default), then ``--cache`` (the vector cache folder) and ``--seed``."""
    ap = bench_parser(doc)
    for flag, default in options.items():
        ap.add_argument(flag, default=default)
    ap.add_argument("--cache", default="runs/topics_student_cache")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args()


def main() -> None:
    args = sample_parser(__doc__, "20newsgroups,ag_news_test", "all,10000,5000,2500",
                         "glove-50d", "runs/topics_fit_sample").parse_args()
    root = shared_dir() / "corpora"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = ["| corpus | docs | fit docs | K | NMI vs gold | ARI vs whole fit | fit s |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    records = []
    for corpus in args.corpora.split(","):
        docs, gold, mask = load_corpus(root, corpus)
        whole = None
        for size in args.fit_docs.split(","):
            n_fit = len(docs) if size == "all" else int(size)
            if size != "all" and n_fit >= len(docs):
                continue  # the whole-corpus fit again
            t0 = time.perf_counter()
            m = DocumentTopicModel(encoder=args.model, fit_docs=n_fit,
                                   random_state=args.seed).fit(docs)
            wall = time.perf_counter() - t0
            labels = np.asarray(m.doc_labels_)
            whole = labels if whole is None else whole
            rec = {"corpus": corpus, "docs": len(docs), "fit_docs": min(n_fit, len(docs)),
                   "k": int(m.n_topics_),
                   "nmi": float(normalized_mutual_info_score(gold, labels[mask])),
                   "ari_vs_whole": float(adjusted_rand_score(whole, labels)), "fit_s": wall}
            records.append(rec)
            rows.append(f"| {corpus} | {rec['docs']} | {rec['fit_docs']} | {rec['k']} | "
                        f"{rec['nmi']:.3f} | {rec['ari_vs_whole']:.3f} | {wall:.1f} |")
            print(rows[-1], flush=True)
            (out / "topics_fit_sample.json").write_text(json.dumps(records, indent=1))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
