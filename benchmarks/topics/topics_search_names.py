"""How ``find_topics`` should score a topic: class names as queries, under scoring variants.

The default fit (``phrasekit topics CORPUS``'s) of 20newsgroups, bbc_news and ag_news_test; each
gold class's name as a reader would type it ("hockey", "middle east", "World") is the query, and
a hit is the topic holding most of the class's documents ranked first. A second check queries
each topic's own top term, which should find that topic. Every variant mixes the query's cosine
to the topic's centre (in the fit's centred document space) with a score from its top terms.

Usage: python benchmarks/topics/topics_search_names.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from topics_reshape import fit_default, load_corpus

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.settings import corpora_dir

NEWSGROUPS = {
    "alt.atheism": "atheism", "comp.graphics": "computer graphics",
    "comp.os.ms-windows.misc": "windows", "comp.sys.ibm.pc.hardware": "pc hardware",
    "comp.sys.mac.hardware": "mac hardware", "comp.windows.x": "x window system",
    "misc.forsale": "for sale", "rec.autos": "cars", "rec.motorcycles": "motorcycles",
    "rec.sport.baseball": "baseball", "rec.sport.hockey": "hockey", "sci.crypt": "cryptography",
    "sci.electronics": "electronics", "sci.med": "medicine", "sci.space": "space",
    "soc.religion.christian": "christianity", "talk.politics.guns": "guns",
    "talk.politics.mideast": "middle east", "talk.politics.misc": "politics",
    "talk.religion.misc": "religion"}
#: Per corpus: gold class -> the query a reader would type.
QUERIES = {
    "20newsgroups": NEWSGROUPS,
    "bbc_news": {c: c for c in ("business", "entertainment", "politics", "sport", "tech")},
    "ag_news_test": {c: c for c in ("World", "Sports", "Business", "Sci/Tech")},
}


def variants(tm: Any, q: np.ndarray) -> dict[str, np.ndarray]:
    """Each scoring rule's score of every topic for the query vector ``q``."""
    qc = l2_normalize((q - tm.doc_mean_)[None, :])[0]
    centre = l2_normalize(np.asarray(tm.cluster_centers_, dtype=np.float32)) @ qc
    sims = tm._term_vectors() @ q
    owner = np.asarray(tm._term_owner)
    per_topic = [sims[owner == t] for t in range(tm.n_topics_)]
    best = np.array([s.max() for s in per_topic])
    top3 = np.array([np.sort(s)[-3:].mean() for s in per_topic])
    return {"current (0.5 centre + 0.5 best term)": 0.5 * centre + 0.5 * best,
            "centre only": centre,
            "best term only": best,
            "0.5 centre + 0.5 top-3 terms": 0.5 * centre + 0.5 * top3,
            "0.5 centre + 0.5 mean of terms": 0.5 * centre + 0.5 * np.array(
                [s.mean() for s in per_topic]),
            "0.5 centre + 0.5 first 5 terms": 0.5 * centre + 0.5 * np.array(
                [s[:5].mean() for s in per_topic]),
            "0.5 centre + 0.25 best + 0.25 top-3": 0.5 * centre + 0.25 * best + 0.25 * top3}


def score_corpus(corpus: str, names: dict[str, str], tally: dict, own: dict) -> None:
    """Fit ``corpus`` by default and add each variant's hits to ``tally`` and ``own``."""
    root = corpora_dir()
    _, gold, _ = load_corpus(root, corpus)
    tm, _ = fit_default(root / corpus, Path("runs/topics_search_names") / corpus)
    labels, gold_arr = np.asarray(tm.doc_labels_), np.asarray(gold)
    for cls, query in names.items():
        ids = labels[(gold_arr == cls) & (labels >= 0)]
        gold_topic = int(np.bincount(ids, minlength=tm.n_topics_).argmax())
        for name, sc in variants(tm, tm.encoder_.encode([query])[0]).items():
            tally.setdefault(name, {}).setdefault(corpus, []).append(
                int(np.argmax(sc)) == gold_topic)
    for t in range(tm.n_topics_):
        for name, sc in variants(tm, tm.encoder_.encode([tm.topics_[t][0][0]])[0]).items():
            own.setdefault(name, []).append(int(np.argmax(sc)) == t)


def main() -> None:
    tally: dict[str, dict[str, list[bool]]] = {}
    own: dict[str, list[bool]] = {}
    for corpus, names in QUERIES.items():
        score_corpus(corpus, names, tally, own)
    print("| scoring | " + " | ".join(QUERIES) + " | class names | own top term |")
    print("|---|" + "---:|" * (len(QUERIES) + 2))
    for name, per in tally.items():
        cells = [f"{sum(per[c])}/{len(per[c])}" for c in QUERIES]
        hits = sum(sum(v) for v in per.values())
        total = sum(len(v) for v in per.values())
        print(f"| {name} | " + " | ".join(cells)
              + f" | {hits}/{total} | {sum(own[name])}/{len(own[name])} |")


if __name__ == "__main__":
    main()
