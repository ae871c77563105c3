"""Placing documents by a student: how much of the transformer's placement it keeps.

For each corpus and each ``--fit-docs`` size, ``DocumentTopicModel`` is fitted twice on the
same seeded sample (same vectors, same K, same topics): once placing every other document by
the transformer (``placement="encoder"``, each document encoded) and once by the tf-idf
logistic-regression student (``placement="student"``, only the sample encoded). Reported:
K, NMI of every document's topic against the gold labels for both placements, the adjusted
Rand index between the two placements (all documents, and the placed ones alone), the number
of documents the transformer encoded, and the student run's fit seconds. ``all`` is the fit on
every document (no placement). Document vectors are cached in ``--cache`` (window vectors by
text), so the encoder runs pay for encoding once per corpus.

    python benchmarks/topics/topics_student.py --corpora bbc_news,ag_news_test \\
        --fit-docs all,4000,2000,1000 --model minilm
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

sys.path.insert(0, str(Path(__file__).parent))
from topics_fit_sample import sample_parser
from topics_vs_peers import load_corpus

from phrasekit.settings import shared_dir
from phrasekit.topics import DocumentTopicModel


def _fit(docs: list, model: str, n_fit: int, placement: str, cache: Path, seed: int
         ) -> tuple[DocumentTopicModel, float]:
    t0 = time.perf_counter()
    m = DocumentTopicModel(encoder=model, fit_docs=n_fit, placement=placement,
                           cache_dir=str(cache), random_state=seed).fit(docs)
    return m, time.perf_counter() - t0


def run_corpus(corpus: str, sizes: list[str], args: argparse.Namespace) -> list[dict]:
    """Every size's row for one corpus."""
    docs, gold, mask = load_corpus(shared_dir() / "corpora", corpus)
    cache = Path(args.cache) / corpus
    records = []
    for size in sizes:
        n_fit = len(docs) if size == "all" else int(size)
        if size != "all" and n_fit >= len(docs):
            continue
        student, wall = _fit(docs, args.model, n_fit, "student", cache, args.seed)
        st = np.asarray(student.doc_labels_)
        rec = {"corpus": corpus, "docs": len(docs), "fit_docs": min(n_fit, len(docs)),
               "k": int(student.n_topics_), "nmi_student": float(
                   normalized_mutual_info_score(gold, st[mask])), "student_fit_s": wall}
        if size != "all" and args.placements == "both":
            encoder, _ = _fit(docs, args.model, n_fit, "encoder", cache, args.seed)
            en = np.asarray(encoder.doc_labels_)
            placed = np.ones(len(docs), dtype=bool)
            placed[student.sample_index_] = False
            rec.update(nmi_encoder=float(normalized_mutual_info_score(gold, en[mask])),
                       ari=float(adjusted_rand_score(en, st)),
                       ari_placed=float(adjusted_rand_score(en[placed], st[placed])))
        records.append(rec)
        print(_row(rec), flush=True)
    return records


def _row(r: dict) -> str:
    enc = f"{r['nmi_encoder']:.3f}" if "nmi_encoder" in r else "–"
    ari = f"{r['ari']:.3f} / {r['ari_placed']:.3f}" if "ari" in r else "–"
    return (f"| {r['corpus']} | {r['docs']} | {r['fit_docs']} | {r['k']} | "
            f"{r['nmi_student']:.3f} | {enc} | {ari} | {r['student_fit_s']:.1f} |")


def main() -> None:
    ap = sample_parser(__doc__, "bbc_news,ag_news_test", "all,4000,2000,1000", "minilm",
                       "runs/topics_student")
    ap.add_argument("--cache", default="runs/topics_student_cache")
    ap.add_argument("--placements", choices=("both", "student"), default="both",
                    help="'student' skips the transformer-placement fit (no full-corpus encode)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    header = ["| corpus | docs | fit docs (encoded) | K | NMI, student placement | "
              "NMI, transformer placement | ARI student vs transformer (all / placed) | "
              "student fit s |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    print("\n".join(header), flush=True)
    records = []
    for corpus in args.corpora.split(","):
        records += run_corpus(corpus, args.fit_docs.split(","), args)
        (out / "topics_student.json").write_text(json.dumps(records, indent=1))
    print("\n".join([*header, *(_row(r) for r in records)]))


if __name__ == "__main__":
    main()
