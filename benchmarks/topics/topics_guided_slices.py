"""Seeded and zero-shot document topics on ag_news_test; topics over time on the arXiv sample
and per class on bbc_news.

0. **Zero-shot threshold** (bbc_news, development): every document encoded, its cosine to each
   of the five class names computed as the model computes it; per threshold, the share of
   documents placed and the accuracy of those placements. The default is the threshold with the
   best accuracy.
1. **Seeded** (ag_news_test): ``DocumentTopicModel`` at its defaults, without seeds and with one
   seed list per class, at the default ``seed_pull`` (0, chosen on the development corpora of
   ``topics_seed_pull.py``) and at 0.25. The seed lists were written
   from the four class names (World, Sports, Business, Sci/Tech) before any run, not from the
   corpus' documents (``SEEDS``). NMI against the gold classes over every document, K and the
   seeded topics' labels.
2. **Zero-shot** (ag_news_test): the four class names as they are given, at the default
   ``zero_shot_min_similarity`` (chosen on bbc_news, docs/methods/topics.md). Reported: the
   share of the fitted sample placed in a named topic and the accuracy of those placements
   against gold (the name's class), then the same over every document (the documents outside
   the sample are placed by the student, named topics included), and NMI of the partition.
3. **Over time** (the bundled arXiv sample): ``topics_over_time`` by month, the month of
   first submission read from each arXiv id (YYMM.NNNN): shares of each topic per month, and
   the terms per month of the largest topic.
4. **Per class** (bbc_news): ``topics_per_class`` with the gold classes: every row.

Vectors are cached in ``--cache`` by text (one folder per corpus), so repeated fits encode once.

    python benchmarks/topics/topics_guided_slices.py --cache runs/topics_student_cache
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from topics_fit_sample import cached_args
from topics_vs_peers import load_corpus

from phrasekit.datasets import resolve_corpus
from phrasekit.encoders.cache import encode_documents
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.io import read_corpus
from phrasekit.registry import as_encoder
from phrasekit.settings import shared_dir
from phrasekit.topics import DocumentTopicModel
from phrasekit.topics.outputs.metrics import labels_nmi

#: One seed list per ag_news class, written from the class names alone.
SEEDS = {
    "World": ["world news", "international", "government", "war", "election"],
    "Sports": ["sports", "game", "team", "season", "championship"],
    "Business": ["business", "economy", "company", "market", "profit"],
    "Sci/Tech": ["science", "technology", "computer", "internet", "software"],
}


def _fit(docs: list, cache: Path, seed: int, **kwargs) -> DocumentTopicModel:
    return DocumentTopicModel(encoder="minilm", random_state=seed, cache_dir=str(cache),
                              **kwargs).fit(docs)


def zero_shot_dev(root: Path, cache: Path) -> None:
    docs, gold_list, _ = load_corpus(root, "bbc_news")
    gold, names = np.asarray(gold_list), sorted(set(gold_list))
    encoder = as_encoder("minilm")
    X = encode_documents(encoder, [d.text for d in docs], 150, 8, str(cache), False)
    model = DocumentTopicModel()
    model.doc_mean_ = X.mean(axis=0)
    sim = l2_normalize(X - model.doc_mean_) @ model._guide_vectors([[n] for n in names],
                                                                   encoder).T
    pred, best = np.asarray(names)[sim.argmax(axis=1)], sim.max(axis=1)
    print("| zero_shot_min_similarity | placed | accuracy of those |\n|---:|---:|---:|")
    for threshold in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3):
        placed = best >= threshold
        right = np.mean(pred[placed] == gold[placed])
        print(f"| {threshold} | {placed.mean():.1%} | {right:.1%} |")


def seeded(root: Path, cache: Path, seed: int) -> None:
    docs, gold, _ = load_corpus(root, "ag_news_test")
    print("| ag_news_test | K | NMI vs gold | seeded topics (label) |\n|---|---:|---:|---|")
    seeds = list(SEEDS.values())
    for name, kwargs in (("unseeded", {}),
                         ("seeded, one list per class (seed_pull 0, the default)",
                          {"seed_topics": seeds}),
                         ("seeded, seed_pull 0.25", {"seed_topics": seeds, "seed_pull": 0.25})):
        model = _fit(docs, cache, seed, **kwargs)
        topics = ", ".join(f"{c}: {t} ({model.topic_label(t)})" for c, t in
                           zip(SEEDS, getattr(model, "seeded_topics_", []), strict=False))
        print(f"| {name} | {model.n_topics_} | {labels_nmi(gold, model.doc_labels_):.3f} | "
              f"{topics or '–'} |", flush=True)


def zero_shot(root: Path, cache: Path, seed: int) -> None:
    docs, gold_list, _ = load_corpus(root, "ag_news_test")
    gold = np.asarray(gold_list)
    model = _fit(docs, cache, seed, zero_shot_topics=list(SEEDS))
    labels = np.asarray(model.doc_labels_)
    named = model.custom_labels_  # topic -> class name
    pred = np.asarray([named.get(int(t), "") for t in labels], dtype=object)
    in_sample = np.zeros(len(docs), dtype=bool)
    in_sample[model.sample_index_] = True
    print(f"\nzero_shot_min_similarity = {model.zero_shot_min_similarity}; K = {model.n_topics_}"
          f" ({len(named)} named); NMI vs gold {labels_nmi(gold, labels):.3f}\n")
    print("| documents | docs | placed in a named topic | accuracy of those |\n"
          "|---|---:|---:|---:|")
    for what, rows in (("fitted sample (placed by similarity)", in_sample),
                       ("every document (the rest by the student)", np.ones_like(in_sample))):
        placed = rows & (pred != "")
        print(f"| {what} | {int(rows.sum())} | {placed.sum() / rows.sum():.1%} | "
              f"{np.mean(pred[placed] == gold[placed]):.1%} |")
    print("\n| named topic | docs | accuracy |\n|---|---:|---:|")
    for t, name in sorted(named.items()):
        member = labels == t
        print(f"| {name} | {int(member.sum())} | {np.mean(gold[member] == name):.1%} |")


def over_time(cache: Path, seed: int) -> None:
    docs = read_corpus(resolve_corpus("sample"))
    model = _fit(docs, cache, seed)
    months = [f"20{d.id[:2]}-{d.id[2:4]}" for d in docs]
    rows = model.topics_over_time(months, bins="month")
    share: dict[str, dict[int, float]] = defaultdict(dict)
    for r in rows:
        share[r["timestamp"]][r["topic"]] = r["share"]
    k = model.n_topics_
    print("\n| month | docs | " + " | ".join(f"{t}: {model.topic_label(t)}" for t in range(k))
          + " |\n|---|---:|" + "---:|" * k)
    counts = defaultdict(int)
    for r in rows:
        counts[r["timestamp"]] += r["frequency"]
    for q in sorted(share):  # a month
        print(f"| {q} | {counts[q]} | "
              + " | ".join(f"{share[q].get(t, 0):.0%}" for t in range(k)) + " |")
    print(f"\nTopic 0 ({model.topic_label(0)}) per month:\n\n| month | docs | terms |\n"
          "|---|---:|---|")
    for r in rows:
        if r["topic"] == 0:
            print(f"| {r['timestamp']} | {r['frequency']} | {', '.join(r['terms'])} |")


def per_class(root: Path, cache: Path, seed: int) -> None:
    docs, gold, _ = load_corpus(root, "bbc_news")
    model = _fit(docs, cache, seed)
    print("\n| class | topic | docs | share of the class | terms in the class |\n"
          "|---|---|---:|---:|---|")
    for r in model.topics_per_class(gold):
        print(f"| {r['class']} | {r['topic']}: {r['label']} | {r['frequency']} | "
              f"{r['share']:.0%} | {', '.join(r['terms'])} |")


def main() -> None:
    args = cached_args(__doc__, {"--parts": "zero-shot-dev,seeded,zero-shot,over-time,per-class"})
    root, cache = shared_dir() / "corpora", Path(args.cache)
    parts = args.parts.split(",")
    if "zero-shot-dev" in parts:
        zero_shot_dev(root, cache / "bbc_news")
    if "seeded" in parts:
        seeded(root, cache / "ag_news_test", args.seed)
    if "zero-shot" in parts:
        zero_shot(root, cache / "ag_news_test", args.seed)
    if "over-time" in parts:
        over_time(cache / "arxiv_abstracts_cc0", args.seed)
    if "per-class" in parts:
        per_class(root, cache / "bbc_news", args.seed)


if __name__ == "__main__":
    main()
