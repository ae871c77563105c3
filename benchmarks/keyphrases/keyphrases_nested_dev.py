"""The keyphrase containment rule on non-test splits: whole list, first S places only, or off.

``KeyphraseExtractor``'s ``suppress_nested`` keeps only the higher scored of two candidates whose
stemmed word sequences contain one another, for the whole list. This script compares, with the
other defaults fixed, the rule applied to the first ``S`` places of the list only (the rest
chosen from every candidate, by the same MMR, listed after the first S), for S in 0 (off), 3, 5,
7 and the whole list (today's rule). Splits that are never test: Inspec dev and train, and the
train split of restaurant_reviews_absa14 (review sentences, gold = aspect terms; sentences
without one are left out), a second domain. F1@5 / F1@10 as ``phrasekit.eval.keyphrases``.

Usage: python benchmarks/keyphrases/keyphrases_nested_dev.py [--model minilm@auto] [--threads 1]
"""

from __future__ import annotations

import argparse

import numpy as np

SLOTS = (0, 3, 5, 7, None)  # None: the whole list (the library's rule)


def mmr_fill(scores: np.ndarray, sims: np.ndarray, chosen: list[int], allowed: np.ndarray,
             n: int, diversity: float) -> list[int]:
    """Extend ``chosen`` to ``n`` items by MMR over the ``allowed`` candidates."""
    allowed = allowed.copy()
    allowed[chosen] = False
    redundancy = sims[chosen].max(axis=0) if chosen else None
    while len(chosen) < n and allowed.any():
        mmr = scores.copy() if redundancy is None else (
            (1.0 - diversity) * scores - diversity * redundancy)
        mmr[~allowed] = -np.inf
        j = int(np.argmax(mmr))
        chosen.append(j)
        allowed[j] = False
        redundancy = sims[j].copy() if redundancy is None else np.maximum(redundancy, sims[j])
    return chosen


def rank_with_slots(ex, cands, doc_vec: np.ndarray, vecs: np.ndarray, slots: int | None
                    ) -> list[str]:
    """One document's list with the containment rule on its first ``slots`` places."""
    from phrasekit.phrases.keyphrase_candidates import suppress_contained

    if slots is None:
        return [p for p, _ in ex.rank(cands, doc_vec, vecs)]
    s = ex.scores(cands, doc_vec, vecs)
    sims = vecs @ vecs.T
    n = min(ex.top_n, len(s))
    kept = np.zeros(len(s), dtype=bool)
    kept[suppress_contained(cands.keys, s)] = True
    first = mmr_fill(s, sims, [], kept, min(slots, n), ex.diversity)
    head = sorted(first, key=lambda i: -s[i])
    rest = mmr_fill(s, sims, list(first), np.ones(len(s), dtype=bool), n, ex.diversity)
    return [cands.phrases[i] for i in head + sorted(rest[len(first):], key=lambda i: -s[i])]


def load_split(name: str):
    """(texts, golds) of one non-test split."""
    from phrasekit.eval.keyphrases import gold_of, load_inspec
    from phrasekit.io import read_corpus
    from phrasekit.settings import shared_dir

    if name.startswith("inspec-"):
        docs = load_inspec(name.split("-", 1)[1])
    else:
        path = shared_dir() / "corpora" / "restaurant_reviews_absa14" / "documents.jsonl"
        docs = [d for d in read_corpus(path)
                if d.meta.get("split") == "train" and d.meta.get("keyphrases")]
    return [d.text for d in docs], gold_of(docs)


def main() -> None:
    """Print one row per split and setting."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm@auto")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import torch

    import phrasekit
    from phrasekit.eval.keyphrases import score_keyphrases
    from phrasekit.phrases.keyphrases import KeyphraseExtractor

    torch.set_num_threads(args.threads)
    ex = KeyphraseExtractor(phrasekit.load(args.model))
    print("| split | docs | rule on | F1@5 | F1@10 |\n|---|---:|---|---:|---:|")
    for split in ("inspec-dev", "inspec-train", "restaurant-train"):
        texts, golds = load_split(split)
        cands = ex.find_candidates(texts)
        doc_vecs, cand_vecs = ex.embed(cands)
        for slots in SLOTS:
            preds = [rank_with_slots(ex, c, d, v, slots)
                     for c, d, v in zip(cands, doc_vecs, cand_vecs, strict=True)]
            m = score_keyphrases(preds, golds)
            where = {0: "off", None: "whole list"}.get(slots, f"first {slots}")
            print(f"| {split} | {len(texts)} | {where} | {m['F1@5']:.2f} | {m['F1@10']:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
