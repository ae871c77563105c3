"""How ``DocumentTopicModel`` should choose K: every setting of its K criterion on the
development corpora, scored against k-means with the gold number of classes.

For each corpus prepared by ``benchmarks/topics_vs_peers.py`` (``OUT/emb/CORPUS/docs.npy``,
the same MiniLM document vectors every method there uses), the document vectors are centred
and re-normalised as ``DocumentTopicModel`` does, each criterion's score is computed once for
every K in 2..30 (``choose_k``), and each range ``k_min..30`` picks its K from those scores.
The final partition is k-means at that K (``n_init=5``, seed 0, as in the model); its NMI
against the gold labels is divided by the NMI of k-means (``n_init=10``) at the gold K on the
raw vectors, the ``kmeans`` row of ``topics_vs_peers``. A setting is judged by its lowest
ratio over the corpora (protocol step 4 in ``topics_vs_peers``).

    python benchmarks/topics_k_choice.py --out runs/topics_vs_peers
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from topics_vs_peers import CORPORA, load_corpus

K_MAX = 30


def settings(criteria: tuple[str, ...], k_mins: list[int], tolerances: list[float]
             ) -> list[tuple[str, int, float]]:
    """(criterion, k_min, tolerance) combinations; tolerances apply to the stability criteria."""
    return [(c, k_min, tol) for c in criteria for k_min in k_mins
            for tol in (tolerances if c != "silhouette" else [0.0])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/topics_vs_peers")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--corpora-dir", default=None)
    parser.add_argument("--criteria", default=None, help="comma list (default: all)")
    parser.add_argument("--k-mins", default="2,3,4,5", help="smallest K tried, per setting")
    parser.add_argument("--tolerances", default="0,0.1",
                        help="tolerances tried with the stability criteria (choose_k.best_k)")
    args = parser.parse_args()
    k_mins = [int(x) for x in args.k_mins.split(",")]
    tolerances = [float(x) for x in args.tolerances.split(",")]
    from sklearn.cluster import KMeans

    from phrasekit.encoders.pooling import l2_normalize
    from phrasekit.settings import corpora_dir
    from phrasekit.topics.choose_k import (
        CRITERIA,
        best_k,
        kmeans_labels,
        silhouette_scores,
        stability_scores,
    )
    from phrasekit.topics.metrics import labels_nmi

    criteria = tuple(args.criteria.split(",")) if args.criteria else CRITERIA

    root = Path(args.corpora_dir) if args.corpora_dir else corpora_dir()
    out = Path(args.out)
    cache = out / "k_choice.json"
    done = json.loads(cache.read_text()) if cache.is_file() else {}
    for corpus in args.corpora.split(","):
        X = np.load(out / "emb" / corpus / "docs.npy")
        _, labels, mask = load_corpus(root, corpus)
        used = np.linalg.norm(X, axis=1) > 0
        Xc = np.zeros_like(X)
        Xc[used] = l2_normalize(X[used] - X[used].mean(axis=0))
        rec = done.get(corpus)
        if rec is None:
            gold_k = len(set(labels))
            ref = KMeans(n_clusters=gold_k, n_init=10, random_state=0).fit(X).labels_
            rec = {"gold_k": gold_k, "kmeans_nmi": labels_nmi(list(ref[mask]), labels),
                   "curves": {}, "nmi": {}}
        for criterion in criteria:
            if criterion not in rec["curves"]:
                t0 = time.perf_counter()
                fn = stability_scores if criterion == "stability" else silhouette_scores
                curve = fn(Xc[used], range(2, K_MAX + 1), seed=0)
                rec["curves"][criterion] = {str(k): v for k, v in curve.items()}
                rec[f"{criterion}_s"] = round(time.perf_counter() - t0, 1)
        for criterion, k_min, tol in settings(criteria, k_mins, tolerances):
            curve = {int(k): v for k, v in rec["curves"][criterion].items()}
            k = best_k({q: v for q, v in curve.items() if q >= k_min}, criterion, tol)
            if str(k) not in rec["nmi"]:
                lab = np.full(len(X), -1)
                lab[used] = kmeans_labels(Xc[used], k, 5, 0)[0]
                rec["nmi"][str(k)] = labels_nmi(list(lab[mask]), labels)
        done[corpus] = rec
        cache.write_text(json.dumps(done, indent=1))
        print(f"{corpus}: done", flush=True)
    rows = ["| criterion | k_min | tolerance | " + " | ".join(done) + " | lowest ratio |",
            "|---|---|---|" + "---|" * (len(done) + 1)]
    for criterion, k_min, tol in settings(criteria, k_mins, tolerances):
        cells, ratios = [], []
        for rec in done.values():
            curve = {int(k): v for k, v in rec["curves"][criterion].items()}
            k = best_k({q: v for q, v in curve.items() if q >= k_min}, criterion, tol)
            ratio = rec["nmi"][str(k)] / rec["kmeans_nmi"]
            ratios.append(ratio)
            cells.append(f"K={k} (gold {rec['gold_k']}), NMI {rec['nmi'][str(k)]:.3f} = "
                         f"{ratio:.2f}x")
        rows.append(f"| {criterion} | {k_min} | {tol} | " + " | ".join(cells)
                    + f" | **{min(ratios):.2f}** |")
    print("\n".join(rows))
    (out / "k_choice.md").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
