"""Does the encoder's precision move the number of topics? K chosen by the stability
criterion on the same documents encoded in fp32, int8 and bf16, over criterion seeds.

For each corpus, ``DocumentTopicModel``'s sample (``random_state`` 0, the ``auto`` sample) is
encoded by each encoder of ``--encoders`` and centred as the model centres it (the vectors are
cached in ``--out``). Each setting of ``--pairs`` (``N``: N pairs of halves for every K;
``N+M``: N, then M more for every K that may still reach the floor, as the model does) then
chooses K in ``--k-min``..30 (tolerance 0.1) with each criterion seed of ``--seeds``, and
k-means at that K (``n_init=5``, seed 0, as the model) is scored by NMI against the gold
labels of the sample. Reported per corpus and setting: K per seed for each encoder, the mean
NMI, how often an encoder chose the first encoder's K with the same seed, and the seconds the
choice of K took.

    python benchmarks/topics/topics_k_precision.py --out runs/k_precision \\
        --encoders minilm@fp32,minilm@int8,minilm@bf16 --seeds 0,1,2,3,4 --pairs 8,8+24
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, cpu_name
from topics_vs_peers import load_corpus

from phrasekit.settings import shared_dir
from phrasekit.topics import DocumentTopicModel
from phrasekit.topics.core.choose_k import best_k, stability_scores

CORPORA = "arxiv_abstracts_cc0,bbc_news,restaurant_reviews_absa14,ag_news_test,20newsgroups"
K_MAX = 30


class _CapturedError(Exception):
    """Raised to stop a fit once the vectors it would cluster are known."""


def sample_vectors(corpus: str, encoder: str, out: Path) -> tuple[np.ndarray, np.ndarray]:
    """The centred vectors of the model's sample and their gold labels ("" for none)."""
    path = out / f"{corpus}__{encoder.replace('@', '_')}.npz"
    if path.exists():
        got = np.load(path)
        return got["X"], got["labels"]
    docs, _, _ = load_corpus(shared_dir() / "corpora", corpus)
    seen: dict = {}
    model = DocumentTopicModel(encoder=encoder, random_state=0,
                               cache_dir=str(out / "cache" / corpus))
    fit_sample = model._fit_sample

    def keep_sample(documents, *args, **kwargs):
        seen["docs"] = documents
        return fit_sample(documents, *args, **kwargs)

    def stop(X, show_progress):
        seen["X"] = X
        raise _CapturedError

    model._fit_sample, model._choose_k = keep_sample, stop
    with contextlib.suppress(_CapturedError):
        model.fit(docs)
    if len(seen["X"]) != len(seen["docs"]):
        raise SystemExit(f"{corpus}: documents without words in the sample; not comparable")
    raw = [d.meta.get("label") for d in seen["docs"]]
    labels = np.array([(lab[0] if len(lab) == 1 else "") if isinstance(lab, list) else str(lab)
                       for lab in raw])
    np.savez(path, X=seen["X"], labels=labels)
    return seen["X"], labels


def choose(X: np.ndarray, setting: str, seed: int, k_min: int) -> tuple[int, float]:
    """K chosen with pairs ``setting`` and the criterion's ``seed``, and the seconds taken."""
    first, _, more = setting.partition("+")
    t0 = time.perf_counter()
    scores = stability_scores(X, range(k_min, K_MAX + 1), seed=seed, n_pairs=int(first),
                              tolerance=0.1, more_pairs=int(more or 0))
    return best_k(scores, "stability", 0.1), time.perf_counter() - t0


def main() -> None:
    ap = bench_parser(__doc__)
    ap.add_argument("--out", default="runs/k_precision")
    ap.add_argument("--corpora", default=CORPORA)
    ap.add_argument("--encoders", default="minilm@fp32,minilm@int8,minilm@bf16")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--pairs", default="8,8+24")
    ap.add_argument("--k-min", type=int, default=4)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    encoders, seeds = args.encoders.split(","), [int(s) for s in args.seeds.split(",")]
    print(f"CPU: {cpu_name()}\n\n| corpus | pairs | " + " | ".join(f"K {e}" for e in encoders)
          + " | mean NMI (" + " / ".join(encoders) + ") | same K as the first | K s |\n|---|---|"
          + "---|" * len(encoders) + "---|---|---:|", flush=True)
    for corpus in args.corpora.split(","):
        vectors = {e: sample_vectors(corpus, e, out) for e in encoders}
        for setting in args.pairs.split(","):
            ks: dict[str, list[int]] = {}
            nmis, seconds = [], []
            for e, (X, labels) in vectors.items():
                got = [choose(X, setting, seed, args.k_min) for seed in seeds]
                ks[e] = [k for k, _ in got]
                seconds += [s for _, s in got]
                m = labels != ""
                nmi = {k: normalized_mutual_info_score(labels[m], KMeans(
                    n_clusters=k, n_init=5, random_state=0).fit(X).labels_[m])
                    for k in set(ks[e])}
                nmis.append(float(np.mean([nmi[k] for k in ks[e]])))
            same = [sum(a == b for a, b in zip(ks[encoders[0]], ks[e], strict=True))
                    for e in encoders[1:]]
            print(f"| {corpus} | {setting} | " + " | ".join(
                "/".join(map(str, ks[e])) for e in encoders) + " | "
                + " / ".join(f"{v:.3f}" for v in nmis) + " | "
                + ", ".join(f"{s}/{len(seeds)}" for s in same)
                + f" | {np.mean(seconds):.1f} |", flush=True)


if __name__ == "__main__":
    main()
