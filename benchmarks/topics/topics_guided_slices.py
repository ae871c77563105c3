"""Seeded and zero-shot document topics on ag_news_test; topics over time on the arXiv sample
and per class on bbc_news.

0. **Zero-shot threshold** (bbc_news, development): the unguided fit's topics, each topic's
   centre compared with the five class names as the model compares them; per
   ``zero_shot_min_similarity``, the topics the names take with all five names (taken by the
   name of the topic's majority class, or by another), and with each name left out in turn
   (a topic then taken by another name is a wrong claim). The default keeps every right claim
   with the fewest wrong ones.
1. **Seeded** (ag_news_test): ``DocumentTopicModel`` at its defaults, without seeds and with one
   seed list per class, at the default ``seed_pull`` (0, chosen on the development corpora of
   ``topics_seed_pull.py``) and at 0.25. The seed lists were written
   from the four class names (World, Sports, Business, Sci/Tech) before any run, not from the
   corpus' documents (``SEEDS``). NMI against the gold classes over every document, K and the
   seeded topics' labels.
2. **Zero-shot** (bbc_news and ag_news_test): the class names as they are given, at the default
   ``zero_shot_min_similarity``, against the unguided fit: K, the named topics, NMI of both
   partitions over every document, and per named topic its documents and their accuracy
   against the name's class.
3. **Over time** (the bundled arXiv sample): ``topics_over_time`` by month, the month of
   first submission read from each arXiv id (YYMM.NNNN): shares of each topic per month, and
   the terms per month of the largest topic.
4. **Per class** (bbc_news): ``topics_per_class`` with the gold classes: every row.

Vectors are cached in ``--cache`` by text (one folder per corpus), so repeated fits encode once.

    python benchmarks/topics/topics_guided_slices.py --cache runs/topics_student_cache
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from topics_fit_sample import cached_args
from topics_vs_peers import load_corpus

from phrasekit.datasets import resolve_corpus
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.io import read_corpus
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


def _majorities(gold: np.ndarray, labels: np.ndarray, k: int) -> list[str]:
    """The majority gold class of each of ``k`` topics."""
    return [Counter(gold[labels == t].tolist()).most_common(1)[0][0] for t in range(k)]


def zero_shot_dev(root: Path, cache: Path, seed: int) -> None:
    from phrasekit.topics.exploration.guided import _group_means, _name_owners

    docs, gold_list, _ = load_corpus(root, "bbc_news")
    names = sorted(set(gold_list))
    model = _fit(docs, cache, seed)
    sample = np.asarray(model.sample_index_)
    labels = np.asarray(model.doc_labels_)[sample]
    ok = labels >= 0  # documents with words
    labels, gold = labels[ok], np.asarray(gold_list)[sample][ok]
    k = model.n_topics_
    centres = l2_normalize(_group_means(model.doc_embeddings_[ok], labels, k))
    majority = _majorities(gold, labels, k)
    print(f"bbc_news, unguided K = {k}, majority classes {majority}\n")
    print("| zero_shot_min_similarity | all names: right / wrong claims | names left out one at a "
          "time: right / wrong claims |\n|---:|---:|---:|")
    for threshold in (-1.0, 0.0, 0.05, 0.1, 0.15, 0.2, 0.3):
        cells = []
        for kept in [names] + [[n for n in names if n != out] for out in names]:
            sim = centres @ model._guide_vectors([[n] for n in kept], model.encoder_).T
            owner = _name_owners(sim, threshold)
            right = sum(kept[o] == majority[t] for t, o in enumerate(owner) if o >= 0)
            cells.append((right, int((owner >= 0).sum()) - right))
        left_out = np.sum(cells[1:], axis=0)
        print(f"| {threshold} | {cells[0][0]} / {cells[0][1]} | {left_out[0]} / {left_out[1]} |")


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


ZERO_SHOT_NAMES = {"bbc_news": None, "ag_news_test": list(SEEDS)}


def zero_shot(root: Path, cache: Path, seed: int, corpus: str) -> None:
    docs, gold_list, _ = load_corpus(root, corpus)
    gold = np.asarray(gold_list)
    names = ZERO_SHOT_NAMES[corpus] or sorted(set(gold_list))
    plain = _fit(docs, cache, seed)
    model = _fit(docs, cache, seed, zero_shot_topics=names)
    labels = np.asarray(model.doc_labels_)
    named = model.custom_labels_  # topic -> class name
    print(f"\n{corpus}, zero_shot_min_similarity = {model.zero_shot_min_similarity}\n\n"
          "| fit | K | named topics | NMI vs gold |\n|---|---:|---:|---:|")
    print(f"| unguided | {plain.n_topics_} | – | {labels_nmi(gold, plain.doc_labels_):.4f} |")
    print(f"| zero-shot, {len(names)} class names | {model.n_topics_} | {len(named)} | "
          f"{labels_nmi(gold, labels):.4f} |")
    print("\n| named topic | docs | accuracy |\n|---|---:|---:|")
    for t, name in sorted(named.items()):
        member = labels == t
        print(f"| {name} | {int(member.sum())} | {np.mean(gold[member] == name):.1%} |")
    others = [t for t in range(model.n_topics_) if t not in named]
    for t in others:
        member = labels == t
        print(f"| (discovered) {model.topic_label(t)} | {int(member.sum())} | majority "
              f"{_majorities(gold[member], np.zeros(int(member.sum()), int), 1)[0]} |")


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
        zero_shot_dev(root, cache / "bbc_news", args.seed)
    if "seeded" in parts:
        seeded(root, cache / "ag_news_test", args.seed)
    if "zero-shot" in parts:
        for corpus in ZERO_SHOT_NAMES:
            zero_shot(root, cache / corpus, args.seed, corpus)
    if "over-time" in parts:
        over_time(cache / "arxiv_abstracts_cc0", args.seed)
    if "per-class" in parts:
        per_class(root, cache / "bbc_news", args.seed)


if __name__ == "__main__":
    main()
