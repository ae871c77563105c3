"""How ``DocumentTopicModel`` should choose K: every setting of its K criterion on the
development corpora, scored against k-means with the gold number of classes.

For each corpus prepared by ``benchmarks/topics/topics_vs_peers.py`` (``OUT/emb/CORPUS/docs.npy``,
the same MiniLM document vectors every method there uses), the document vectors are centred
and re-normalised as ``DocumentTopicModel`` does, each criterion's score is computed for every K
in 2..30 (``choose_k``) once per seed in ``--seeds`` (stability: once per pair count in
``--pairs`` too; every K gets that many pairs, without the sequential pairs the model adds
near the floor, so that one curve serves every tolerance), and each range ``k_min..30`` picks
its K from those scores.
The final partition is k-means at that K (``n_init=5``, seed 0, as in the model); its NMI
against the gold labels is divided by the NMI of k-means (``n_init=10``) at the gold K on the
raw vectors, the ``kmeans`` row of ``topics_vs_peers``. A setting is judged by its lowest
ratio over the corpora and seeds (protocol step 4 in ``topics_vs_peers``): stability is
estimated from random halves, so one seed's curve can pick a K that another seed's would not.

    python benchmarks/topics/topics_k_choice.py --out runs/topics_vs_peers --k-mins 4 \\
        --tolerances 0,0.05,0.1,0.15 --seeds 0,1,2,3 --pairs 4,8
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


def settings(criteria: tuple[str, ...], k_mins: list[int], tolerances: list[float],
             pairs: list[int]) -> list[tuple[str, int, float, int]]:
    """(criterion, k_min, tolerance, pairs) combinations; tolerances and pairs apply to the
    stability criterion."""
    return [(c, k_min, tol, n) for c in criteria for k_min in k_mins
            for tol in (tolerances if c != "silhouette" else [0.0])
            for n in (pairs if c == "stability" else [0])]


def curve_key(criterion: str, seed: int, pairs: int) -> str:
    return f"{criterion}|seed{seed}|pairs{pairs}"


def compute_curves(rec: dict, Xc: np.ndarray, criteria: tuple[str, ...], seeds: list[int],
                   pairs: list[int]) -> None:
    """Every criterion's score for K = 2..K_MAX, once per seed (and pair count), into ``rec``."""
    from phrasekit.topics.core.choose_k import silhouette_scores, stability_scores

    for criterion in criteria:
        for seed in seeds:
            for n in (pairs if criterion == "stability" else [0]):
                key = curve_key(criterion, seed, n)
                if key in rec["curves"]:
                    continue
                t0 = time.perf_counter()
                if criterion == "stability":
                    curve = stability_scores(Xc, range(2, K_MAX + 1), seed=seed, n_pairs=n,
                                             more_pairs=0)
                else:
                    curve = silhouette_scores(Xc, range(2, K_MAX + 1), seed=seed)
                rec["curves"][key] = {str(k): v for k, v in curve.items()}
                rec["seconds"][key] = round(time.perf_counter() - t0, 1)


def picked(rec: dict, setting: tuple[str, int, float, int], seed: int) -> int:
    """The K a setting picks from its curve for ``seed``."""
    from phrasekit.topics.core.choose_k import best_k

    criterion, k_min, tol, n = setting
    curve = {int(k): v for k, v in rec["curves"][curve_key(criterion, seed, n)].items()}
    return best_k({q: v for q, v in curve.items() if q >= k_min}, criterion, tol)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/topics_vs_peers")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--corpora-dir", default=None)
    parser.add_argument("--criteria", default=None, help="comma list (default: all)")
    parser.add_argument("--k-mins", default="2,3,4,5", help="smallest K tried, per setting")
    parser.add_argument("--tolerances", default="0,0.1",
                        help="tolerances tried with the stability criteria (choose_k.best_k)")
    parser.add_argument("--seeds", default="0", help="seeds of the K criterion, each scored")
    parser.add_argument("--pairs", default="4", help="stability: pairs of halves per K")
    args = parser.parse_args()
    k_mins = [int(x) for x in args.k_mins.split(",")]
    tolerances = [float(x) for x in args.tolerances.split(",")]
    seeds = [int(x) for x in args.seeds.split(",")]
    pairs = [int(x) for x in args.pairs.split(",")]
    from sklearn.cluster import KMeans

    from phrasekit.encoders.pooling import l2_normalize
    from phrasekit.settings import corpora_dir
    from phrasekit.topics.core.choose_k import CRITERIA, kmeans_labels
    from phrasekit.topics.outputs.metrics import labels_nmi

    criteria = tuple(args.criteria.split(",")) if args.criteria else CRITERIA
    grid = settings(criteria, k_mins, tolerances, pairs)
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
        if rec is None or "seconds" not in rec:
            gold_k = len(set(labels))
            ref = KMeans(n_clusters=gold_k, n_init=10, random_state=0).fit(X).labels_
            rec = {"gold_k": gold_k, "kmeans_nmi": labels_nmi(list(ref[mask]), labels),
                   "curves": {}, "seconds": {}, "nmi": {}}
        compute_curves(rec, Xc[used], criteria, seeds, pairs)
        for setting in grid:
            for seed in seeds:
                k = picked(rec, setting, seed)
                if str(k) not in rec["nmi"]:
                    lab = np.full(len(X), -1)
                    lab[used] = kmeans_labels(Xc[used], k, 5, 0)[0]
                    rec["nmi"][str(k)] = labels_nmi(list(lab[mask]), labels)
        done[corpus] = rec
        cache.write_text(json.dumps(done, indent=1))
        print(f"{corpus}: done", flush=True)
    text = table({c: done[c] for c in args.corpora.split(",")}, grid, seeds)
    print(text)
    (out / "k_choice.md").write_text(text + "\n")


def table(done: dict[str, dict], grid: list[tuple[str, int, float, int]], seeds: list[int]
          ) -> str:
    """One row per setting: per corpus the K picked over the seeds and the lowest NMI ratio;
    last, the lowest ratio over corpora and seeds (the protocol's score)."""
    rows = ["| criterion | k_min | tolerance | pairs | " + " | ".join(done) + " | lowest ratio |",
            "|---|---|---|---|" + "---|" * (len(done) + 1)]
    for setting in grid:
        cells, lowest = [], []
        for rec in done.values():
            ks = [picked(rec, setting, seed) for seed in seeds]
            ratios = [rec["nmi"][str(k)] / rec["kmeans_nmi"] for k in ks]
            lowest.append(min(ratios))
            span = f"K={min(ks)}" if min(ks) == max(ks) else f"K={min(ks)}-{max(ks)}"
            cells.append(f"{span} (gold {rec['gold_k']}), {min(ratios):.2f}x")
        criterion, k_min, tol, n = setting
        rows.append(f"| {criterion} | {k_min} | {tol} | {n or '-'} | " + " | ".join(cells)
                    + f" | **{min(lowest):.2f}** |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
