"""Choose ``KeyphraseExtractor``'s defaults on the Inspec *dev* split (never test).

Grid, in two stages over cached embeddings (every distinct string is encoded once, so the
grid costs arithmetic only): (1) candidate kind x sub-phrases x max words (one spaCy pass each)
x document windows, each with a coarse ranking grid; (2) for the best three candidate settings,
containment rule (``suppress_nested`` on/off) x position weight x frequency weight x MMR
diversity. Ranked by F1@10 (ties: F1@5), as the mean over the dev documents
(``phrasekit.eval.keyphrases``). Prints the best settings, the containment rule x position
weight table of the best candidate setting, and writes ``OUT/dev_grid.json`` and
``OUT/dev_grid.md``. Every setting keeps brackets balanced (not a parameter).

Usage: python benchmarks/keyphrases/keyphrases_tune_dev.py [--split dev] [--model minilm]
       [--threads 1] [--limit N] [--out runs/keyphrases_dev]
"""

from __future__ import annotations

import argparse
import itertools
import logging
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("noun_chunks", "pos", "both")
SUB_PHRASES = (False, True)
MAX_WORDS = (3, 4, 5)
WINDOWS = (None, 128)
# stage 1 (every candidate setting): a coarse ranking grid
COARSE = {"nested": (False, True), "position": (0.0, 0.05, 0.1, 0.5), "frequency": (0.0,),
          "diversity": (0.0, 0.3)}
# stage 2 (the best TOP_SETTINGS candidate settings of stage 1): the full ranking grid
FINE = {"nested": (False, True),
        "position": (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0),
        "frequency": (0.0, 0.02, 0.04, 0.08, 0.12, 0.16, 0.24, 0.32),
        "diversity": (0.0, 0.1, 0.2, 0.3, 0.5)}
TOP_SETTINGS = 3
PARAMS = ("candidates", "sub_phrases", "max_words", "doc_window_words", "suppress_nested",
          "position_weight", "frequency_weight", "diversity")


def grid(enc, golds, setting: tuple, cands: list, dvecs: list, cvecs: list,
         space: dict[str, tuple]) -> list[dict]:
    """Scores of every (containment rule, position weight, frequency weight, diversity) of
    ``space`` for one candidate setting."""
    from phrasekit.eval.keyphrases import score_keyphrases
    from phrasekit.phrases.keyphrase_candidates import brackets_balanced
    from phrasekit.phrases.keyphrases import KeyphraseExtractor

    kind, sub, mw, win = setting
    sims = [v @ v.T for v in cvecs] if any(space["diversity"]) else [None] * len(cvecs)
    rows = []
    for nested, pw, fw, div in itertools.product(space["nested"], space["position"],
                                                 space["frequency"], space["diversity"]):
        ext = KeyphraseExtractor(enc, top_n=10, diversity=div, candidates=kind,
                                 sub_phrases=sub, max_words=mw, position_weight=pw,
                                 frequency_weight=fw, suppress_nested=nested,
                                 doc_window_words=win)
        preds = [[p for p, _ in ext.rank(c, d, v, sm)]
                 for c, d, v, sm in zip(cands, dvecs, cvecs, sims, strict=True)]
        m = score_keyphrases(preds, golds)
        rows.append({"candidates": kind, "sub_phrases": sub, "max_words": mw,
                     "doc_window_words": win, "suppress_nested": nested,
                     "position_weight": pw,
                     "frequency_weight": fw, "diversity": div,
                     "unbalanced": sum(not brackets_balanced(p) for ps in preds for p in ps),
                     **{k: round(v, 3) for k, v in m.items() if "@" in k}})
    return rows


def main() -> None:
    """Run the grid on the chosen split and report the best settings."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev", choices=("train", "dev"),
                        help="split to tune on (test is not allowed)")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--limit", type=int, default=None, help="first N documents only")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--out", type=Path, default=Path("runs/keyphrases_dev"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, datefmt="%H:%M:%S",
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    import numpy as np
    import torch

    torch.set_num_threads(max(1, args.threads))

    import phrasekit
    from phrasekit.eval.keyphrases import gold_of, load_inspec
    from phrasekit.io import write_json, write_text
    from phrasekit.phrases.keyphrases import KeyphraseExtractor

    docs = load_inspec(args.split, limit=args.limit)
    texts = [d.text for d in docs]
    golds = gold_of(docs)
    enc = phrasekit.load(args.model)
    t0 = time.perf_counter()

    # candidates of every (kind, sub-phrases, max words) setting; windows of every setting
    found: dict[tuple, list] = {}
    for kind, sub, mw in itertools.product(CANDIDATES, SUB_PHRASES, MAX_WORDS):
        ext = KeyphraseExtractor(enc, candidates=kind, sub_phrases=sub, max_words=mw)
        found[(kind, sub, mw)] = ext.find_candidates(texts)
    doc_windows = {win: [c.windows for c in KeyphraseExtractor(
        enc, doc_window_words=win).find_candidates(texts)] for win in WINDOWS}
    logging.info("candidates: %.0fs", time.perf_counter() - t0)

    phrases = sorted({p for cs in found.values() for c in cs for p in c.phrases})
    windows = sorted({w for ws in doc_windows.values() for doc in ws for w in doc})
    pvec = dict(zip(phrases, enc.encode(phrases, show_progress=True), strict=True))
    wvec = dict(zip(windows, enc.encode(windows, show_progress=True), strict=True))
    logging.info("encoded %d phrases and %d windows: %.0fs", len(phrases), len(windows),
                 time.perf_counter() - t0)

    prepared: dict[tuple, tuple] = {}
    for (kind, sub, mw), cands in found.items():
        cvecs = [np.array([pvec[p] for p in c.phrases]).reshape(len(c), enc.dim) for c in cands]
        for win in WINDOWS:
            dvecs = []
            for ws in doc_windows[win]:
                v = np.mean([wvec[w] for w in ws], axis=0)
                dvecs.append(v / np.linalg.norm(v))
            prepared[(kind, sub, mw, win)] = (cands, dvecs, cvecs)
    rows: list[dict[str, Any]] = []
    for setting, data in prepared.items():
        rows.extend(grid(enc, golds, setting, *data, space=COARSE))
    logging.info("stage 1 (%d settings): %.0fs", len(rows), time.perf_counter() - t0)
    best: list[tuple] = []
    for r in sorted(rows, key=lambda r: (r["F1@10"], r["F1@5"]), reverse=True):
        setting = (r["candidates"], r["sub_phrases"], r["max_words"], r["doc_window_words"])
        if setting not in best:
            best.append(setting)
    for setting in best[:TOP_SETTINGS]:
        rows.extend(grid(enc, golds, setting, *prepared[setting], space=FINE))
        logging.info("stage 2 %s: %.0fs", setting, time.perf_counter() - t0)
    unique = {tuple((k, r[k]) for k in PARAMS): r for r in rows}
    rows = list(unique.values())
    rows.sort(key=lambda r: (r["F1@10"], r["F1@5"]), reverse=True)
    keys = [*PARAMS, "F1@5", "F1@10", "P@10", "R@10"]
    unbalanced = sum(r["unbalanced"] for r in rows)
    logging.info("keyphrases with unbalanced brackets, all %d settings: %d", len(rows),
                 unbalanced)
    lines = [f"Inspec {args.split} ({len(docs)} docs), model {args.model}: top 25 of "
             f"{len(rows)} settings by F1@10 (keyphrases with unbalanced brackets in all "
             f"settings: {unbalanced})", "", "| " + " | ".join(keys) + " |",
             "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows[:25]]
    top = rows[0]
    lines += ["", "Containment rule x position weight, best candidate setting "
              f"({top['candidates']}, sub-phrases {top['sub_phrases']}, max words "
              f"{top['max_words']}, windows {top['doc_window_words']}); for each, the best "
              "frequency weight and diversity:", "", "| " + " | ".join(keys) + " |",
              "|" + "---|" * len(keys)]
    same = [r for r in rows if all(r[k] == top[k] for k in keys[:4])]
    for nested, pw in itertools.product(FINE["nested"], FINE["position"]):
        cell = [r for r in same if r["suppress_nested"] == nested
                and r["position_weight"] == pw]
        if cell:
            lines.append("| " + " | ".join(str(cell[0][k]) for k in keys) + " |")
    base = [r for r in rows if r["position_weight"] == 0 and r["frequency_weight"] == 0
            and r["diversity"] == 0 and not r["suppress_nested"]]
    lines += ["", "Plain cosine ranking (no priors, no MMR), best 10 candidate settings:", "",
              "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in base[:10]]
    table = "\n".join(lines) + "\n"
    print(table)
    write_text(args.out / "dev_grid.md", table)
    write_json(args.out / "dev_grid.json", {"split": args.split, "model": args.model,
                                            "n_docs": len(docs), "rows": rows})
    logging.info("done in %.0fs", time.perf_counter() - t0)


if __name__ == "__main__":
    main()
