"""The seeded topics' pull, chosen on development corpora: ``DocumentTopicModel`` at its defaults
without seeds and with one seed list per gold class at each ``seed_pull``; NMI against the gold
classes (single-label documents of a multi-label corpus) and its change over unseeded.

The seed lists were written from the class names alone (``SEEDS``), as for ag_news_test in
``topics_guided_slices.py``; ag_news_test is not used here. Vectors are cached in ``--cache`` by
text (one folder per corpus).

    python benchmarks/topics/topics_seed_pull.py --cache runs/topics_student_cache \\
        --pulls 0,0.05,0.1,0.15,0.25,0.5
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, cpu_name
from topics_vs_peers import load_corpus

from phrasekit.settings import corpora_dir
from phrasekit.topics import DocumentTopicModel
from phrasekit.topics.outputs.metrics import labels_nmi

#: One seed list per gold class of each development corpus, written from the class names.
SEEDS = {
    "bbc_news": {
        "business": ["business", "economy", "company", "market", "profit"],
        "entertainment": ["entertainment", "film", "music", "television", "celebrity"],
        "politics": ["politics", "government", "election", "party", "minister"],
        "sport": ["sport", "game", "team", "match", "championship"],
        "tech": ["technology", "computer", "internet", "software", "mobile"],
    },
    "restaurant_reviews_absa14": {
        "food": ["food", "dish", "taste", "menu", "meal"],
        "service": ["service", "staff", "waiter", "friendly", "wait"],
        "ambience": ["ambience", "atmosphere", "decor", "music", "room"],
        "price": ["price", "expensive", "cheap", "value", "cost"],
        "anecdotes/miscellaneous": ["experience", "visit", "place", "night", "restaurant"],
    },
}


def nmi(corpus: str, cache: Path, seed: int, **kwargs: object) -> tuple[int, float]:
    """K and NMI of a default fit (``kwargs`` added) against the gold classes."""
    docs, gold, mask = load_corpus(corpora_dir(), corpus)
    model = DocumentTopicModel(encoder="minilm", random_state=seed, cache_dir=str(cache / corpus),
                               **kwargs).fit(docs)
    return model.n_topics_, labels_nmi(gold, list(np.asarray(model.doc_labels_)[mask]))


def main() -> None:
    ap = bench_parser(__doc__)
    ap.add_argument("--cache", default="runs/topics_student_cache")
    ap.add_argument("--corpora", default=",".join(SEEDS))
    ap.add_argument("--pulls", default="0,0.05,0.1,0.15,0.25,0.5")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    corpora, pulls = args.corpora.split(","), [float(p) for p in args.pulls.split(",")]
    print(f"CPU: {cpu_name()}; MiniLM, default settings, random_state {args.seed}\n")
    print("| seed_pull | " + " | ".join(f"{c} NMI (Δ)" for c in corpora) + " | min Δ |")
    print("|---|" + "---:|" * (len(corpora) + 1))
    base = {c: nmi(c, Path(args.cache), args.seed) for c in corpora}
    print("| unseeded | " + " | ".join(f"{base[c][1]:.4f} (K {base[c][0]})" for c in corpora)
          + " | – |", flush=True)
    for pull in pulls:
        cells, deltas = [], []
        for c in corpora:
            _, score = nmi(c, Path(args.cache), args.seed,
                           seed_topics=list(SEEDS[c].values()), seed_pull=pull)
            deltas.append(score - base[c][1])
            cells.append(f"{score:.4f} ({deltas[-1]:+.4f})")
        print(f"| {pull:g} | " + " | ".join(cells) + f" | {min(deltas):+.4f} |", flush=True)


if __name__ == "__main__":
    main()
