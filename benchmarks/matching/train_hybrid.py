"""Train the hybrid join's combiner on AutoFJ's dev half and write it into the package.

Data: every table's dev half (right rows 0, 2, 4, ...; ``phrasekit.eval.autofj_join``) joined
to its whole left table exactly as ``fuzzy_join(scorer="hybrid")`` does (embedding top-10 united
with character n-gram top-10), each candidate labelled by the gold ``title_l``; the same dev
queries again with seeded typos (seed 101, not the test seed) so the combiner sees noisy
queries. The held-out half is never read here.

Model choice on dev only: 5-fold cross-validation grouped by table (a table's queries never in
both the fitting and the scoring folds) compares logistic regression at several C with
gradient boosting, by macro top-1 accuracy over tables and log loss; the chosen combiner is
refitted on all dev pairs. The default threshold is the probability in 0.00 ... 0.99 with the
highest pooled F1 of the top-1 matches on the out-of-fold dev predictions.

Usage: python benchmarks/matching/train_hybrid.py [--model pearl-minilm] [--cache DIR] [--write]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from join_hybrid_autofj import Memo

from phrasekit.eval.autofj import table_dirs
from phrasekit.eval.autofj_join import JoinHalf, read_half
from phrasekit.eval.base import perturb
from phrasekit.settings import data_dir
from phrasekit.similarity.features import FEATURES
from phrasekit.similarity.hybrid import K_CHAR, K_EMBED, Combiner, find_candidates
from phrasekit.similarity.index import VectorIndex

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import REPO, cpu_name

PACKAGE_DATA = REPO / "src/phrasekit/data/matching"
AUGMENT_SEED = 101


#: Candidates per query from each search (``--k``; the join's own: ``hybrid.K_EMBED``).
K_CANDS = {"embed": K_EMBED, "char": K_CHAR}


def half_pairs(enc: Memo, table: JoinHalf, typo: bool) -> dict[str, np.ndarray]:
    """Candidate features, labels and query ids of one table half (the join's own path)."""
    left = [t for _, t in table.left]
    rows = [r for r, _ in table.right]
    right = [t for _, t in table.right]
    if typo:
        right = perturb(right, "typo", seed=AUGMENT_SEED)
    vecs = enc.encode(left + right)
    lv, rv = vecs[: len(left)], vecs[len(left):]
    _, emb_ids = VectorIndex(lv).search(rv, k=min(K_CANDS["embed"], len(left)))
    cands = find_candidates(left, right, lv, rv, emb_ids, k_char=K_CANDS["char"])
    gold = np.asarray([table.gold.get(rows[q], None) == left[j]
                       for q, j in zip(cands.query, cands.left, strict=True)])
    has_partner = np.asarray([rows[q] in table.gold for q in range(len(rows))])
    return {"x": cands.features, "y": gold.astype(np.int8), "q": cands.query,
            "left": cands.left, "partner": has_partner}


def collect_tables(tables: list[JoinHalf], enc: Memo, typo: tuple[bool, ...]
                   ) -> dict[str, np.ndarray]:
    """Pairs of every table (and typo variant), with a table id and a global query id."""
    parts, q_offset, t0 = [], 0, time.perf_counter()
    for t_id, table in enumerate(tables):
        for noisy in typo:
            d = half_pairs(enc, table, noisy)
            n_q = len(d["partner"])
            parts.append({"x": d["x"], "y": d["y"], "q": d["q"] + q_offset, "left": d["left"],
                          "t": np.full(len(d["y"]), t_id), "typo": np.full(len(d["y"]), noisy),
                          "qt": np.full(n_q, t_id), "qpartner": d["partner"],
                          "qtypo": np.full(n_q, noisy)})
            q_offset += n_q
        print(f"  {table.name}: {len(table.right)} queries "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        enc.flush()
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def cached(path: Path | None, make: Callable[[], dict[str, np.ndarray]]
           ) -> dict[str, np.ndarray]:
    """``make()``, kept in ``path`` (.npz) when given."""
    if path is not None and path.is_file():
        return dict(np.load(path))
    data = make()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **data)
    return data


def collect(model: str, cache: Path | None, aliases: Path | None, n_dbpedia: int
            ) -> dict[str, np.ndarray]:
    """AutoFJ dev pairs (clean and typo; ``src`` 0), DBpedia alias tables of the train split
    (``src`` 1) and of the dev split (``src`` 2, clean), and small joins cut from the AutoFJ
    dev tables (``src`` 3), concatenated."""
    enc_box: list[Memo] = []

    def enc() -> Memo:
        if not enc_box:
            enc_box.append(Memo(model, cache / "vectors" if cache else None))
        return enc_box[0]

    parts = [cached(cache / f"hybrid-dev-{model}.npz" if cache else None, lambda: collect_tables(
        [read_half(f, "dev") for f in table_dirs(data_dir())], enc(), (False, True)))]
    if aliases is not None:
        for src, split in ((1, "train"), (2, "dev")):
            name = f"hybrid-dbpedia-{split}-{n_dbpedia}-{model}.npz"
            parts.append(cached(cache / name if cache else None, lambda split=split:
                                collect_tables(alias_tables(aliases, split, n_dbpedia),
                                               enc(), (False,) if split == "dev" else
                                               (False, True))))
            parts[-1]["src"] = np.full(len(parts[-1]["y"]), src)
            parts[-1]["qsrc"] = np.full(len(parts[-1]["qt"]), src)
    dev = [read_half(f, "dev") for f in table_dirs(data_dir())]
    parts.append(cached(cache / f"hybrid-dev-small-{model}.npz" if cache else None,
                        lambda: collect_tables(small_tables(dev), enc(), (False, True))))
    for part, src in zip(parts, (0, 1, 2, 3) if aliases else (0, 3), strict=True):
        part["src"] = np.full(len(part["y"]), src)
        part["qsrc"] = np.full(len(part["qt"]), src)
        # folds by AutoFJ table: a small table goes with the table it was cut from
        part["g"] = part["t"] + (1000 * src if src in (1, 2) else 0)
    return merge(parts)


def small_tables(tables: list[JoinHalf], n_queries: int = 20, n_other: int = 20,
                 n_orphans: int = 5, seed: int = 0) -> list[JoinHalf]:
    """Small joins cut from AutoFJ dev tables, as a user's record-linkage tables are: 20 queries
    with their gold left rows, 20 other left rows, and 5 queries whose partner is left out."""
    import random

    rng = random.Random(seed)
    out = []
    for t in tables:
        partnered = [r for r, _ in t.right if r in t.gold]
        asked = rng.sample(partnered, min(n_queries, len(partnered)))
        gold = {t.gold[r] for r in asked}
        others = [lv for lv in t.left if lv[1] not in gold]
        left = sorted([lv for lv in t.left if lv[1] in gold]
                      + rng.sample(others, min(n_other, len(others))))
        titles = {x for _, x in left}
        rest = [r for r in partnered if r not in asked and t.gold[r] not in titles]
        keep = set(asked) | set(rng.sample(rest, min(n_orphans, len(rest))))
        right = [(r, x) for r, x in t.right if r in keep]
        out.append(JoinHalf(f"{t.name}-small", left, right,
                            {r: t.gold[r] for r in keep if t.gold[r] in titles}))
    return out


def merge(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Concatenate pair sets, renumbering their tables and queries."""
    t_off = q_off = 0
    out = []
    for p in parts:
        p = dict(p)
        p["t"], p["qt"], p["q"] = p["t"] + t_off, p["qt"] + t_off, p["q"] + q_off
        t_off, q_off = t_off + int(p["qt"].max()) + 1, q_off + len(p["qt"])
        out.append(p)
    return {k: np.concatenate([p[k] for p in out]) for k in out[0]}


def alias_tables(path: Path, split: str, n_tables: int, left_cap: int = 2000,
                 query_share: float = 0.15, seed: int = 0) -> list[JoinHalf]:
    """Join tables of DBpedia aliases (leakage-filtered ``aliases.tsv.gz`` of
    ``phrasekit.training.pearl.redirects``): each left table is the canonical names holding one
    frequent word (so its names are alike, as in an AutoFJ table: hard negatives), its queries
    one alias each of ``query_share`` of them, plus as many aliases again whose canonical is
    not in the table (rows without a partner)."""
    import csv
    import gzip
    import random

    by_canon: dict[str, list[str]] = {}
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["split"] == split:
                by_canon.setdefault(row["canonical"], []).append(row["alias"])
    by_word: dict[str, list[str]] = {}
    for canon in by_canon:
        for w in set(canon.split()):
            by_word.setdefault(w, []).append(canon)
    rng = random.Random(seed)
    words = sorted(w for w, c in by_word.items() if len(c) >= 300 and len(w) > 2)
    tables = []
    for word in rng.sample(words, min(n_tables, len(words))):
        canons = sorted(by_word[word])
        left = rng.sample(canons, min(left_cap, len(canons)))
        left_set = set(left)
        asked = rng.sample(left, max(1, int(query_share * len(left))))
        outside = [c for c in rng.sample(sorted(by_canon), 4 * len(asked)) if c not in left_set]
        right, gold = [], {}
        for canon in asked + outside[: len(asked) // 4]:
            alias = rng.choice(by_canon[canon])
            if canon in left_set:
                gold[len(right)] = canon
            right.append((len(right), alias))
        tables.append(JoinHalf(f"dbpedia-{split}-{word}", list(enumerate(left)), right, gold))
    return tables


def top1(data: dict[str, np.ndarray], prob: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the probability and label of its most probable candidate (-1: none)."""
    n_q = len(data["qt"])
    best_p = np.full(n_q, -1.0)
    best_y = np.zeros(n_q, dtype=bool)
    order = np.lexsort((-prob, data["q"]))
    first = np.r_[True, np.diff(data["q"][order]) != 0]
    idx = order[first]
    best_p[data["q"][idx]] = prob[idx]
    best_y[data["q"][idx]] = data["y"][idx] > 0
    return best_p, best_y


def macro_acc(data: dict[str, np.ndarray], prob: np.ndarray, typo: bool = False,
              src: int = 0) -> float:
    """Macro top-1 accuracy over the tables of source ``src`` (queries with a partner; clean
    or typo queries)."""
    _, best_y = top1(data, prob)
    keep = data["qpartner"] & (data["qtypo"] == typo) & (data["qsrc"] == src)
    accs = [best_y[keep & (data["qt"] == t)].mean() for t in np.unique(data["qt"][keep])]
    return 100 * float(np.mean(accs)) if accs else float("nan")


def best_threshold(data: dict[str, np.ndarray], prob: np.ndarray) -> tuple[float, float]:
    """The probability threshold with the highest pooled top-1 F1 on AutoFJ's clean dev
    queries, and that F1."""
    best_p, best_y = top1(data, prob)
    clean = (data["qtypo"] == 0) & (data["qsrc"] == 0)
    partners = int((data["qpartner"] & clean).sum())
    scores = []
    for t in np.round(np.arange(0.0, 1.0, 0.01), 2):
        matched = clean & (best_p >= t)
        tp = int((matched & best_y).sum())
        p, r = tp / max(int(matched.sum()), 1), tp / max(partners, 1)
        scores.append((0.0 if p + r == 0 else 2 * p * r / (p + r), -t))
    f1, neg_t = max(scores)
    return -neg_t, 100 * f1


def candidates_models(names: str | None = None, seed: int = 0) -> dict[str, object]:
    """The combiners compared on dev (``names``: comma-separated, else all)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    models: dict[str, object] = {
        f"logreg C={c}": make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))
        for c in (0.01, 0.1, 1.0, 10.0)
    }
    models["gradient boosting"] = HistGradientBoostingClassifier(
        max_iter=300, learning_rate=0.05, max_leaf_nodes=31, random_state=seed)
    if names:
        return {n: m for n, m in models.items() if n in names.split(",")}
    return models


def subset(data: dict[str, np.ndarray], pair_mask: np.ndarray) -> dict[str, np.ndarray]:
    """The pairs of ``pair_mask`` and their queries (query ids renumbered)."""
    queries = np.unique(data["q"][pair_mask])
    new_id = np.full(len(data["qt"]), -1)
    new_id[queries] = np.arange(len(queries))
    out = {k: v[pair_mask] for k, v in data.items() if len(v) == len(data["y"])}
    out.update({k: v[queries] for k, v in data.items() if k.startswith("q") and k != "q"})
    out["q"] = new_id[data["q"][pair_mask]]
    return out


def evaluate(data: dict[str, np.ndarray], model: object, sources: tuple[int, ...],
             folds: int = 5) -> tuple[np.ndarray, dict[str, float]]:
    """Fit on the pairs of ``sources``, five times, each time without one fold of AutoFJ
    tables (and their small cuts) and DBpedia train tables, and predict that fold; DBpedia dev
    tables are predicted by a fit on all of ``sources``. Returns the probabilities and the dev
    scores."""
    from sklearn.base import clone

    train = np.isin(data["src"], sources)
    prob = np.zeros(len(data["y"]))
    in_cv = data["src"] != 2
    groups = np.unique(data["g"][in_cv])
    fold_of = {g: i % folds for i, g in enumerate(np.random.default_rng(0).permutation(groups))}
    fold = np.asarray([fold_of.get(g, -1) if c else -1 for g, c in zip(data["g"], in_cv,
                                                                        strict=True)])
    for f in range(folds):
        fit = clone(model).fit(data["x"][train & (fold != f)], data["y"][train & (fold != f)])
        prob[fold == f] = fit.predict_proba(data["x"][fold == f])[:, 1]
    if (fold == -1).any():
        fit = clone(model).fit(data["x"][train], data["y"][train])
        prob[fold == -1] = fit.predict_proba(data["x"][fold == -1])[:, 1]
    scores = {"autofj": macro_acc(data, prob), "autofj typo": macro_acc(data, prob, True),
              "dbpedia dev": macro_acc(data, prob, src=2),
              "autofj small": macro_acc(data, prob, src=3)}
    return prob, scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="pearl-minilm")
    ap.add_argument("--cache", type=Path, help="folder to keep the dev pairs' features in")
    ap.add_argument("--aliases", type=Path,
                    help="aliases.tsv.gz of the leakage-filtered DBpedia redirects")
    ap.add_argument("--alias-tables", type=int, default=20, help="DBpedia tables per split")
    ap.add_argument("--write", action="store_true", help="write the combiner into the package")
    ap.add_argument("--models", help="combiners to compare, comma-separated (default: all)")
    ap.add_argument("--k", type=int, nargs=2, metavar=("EMBED", "CHAR"),
                    help="candidates per query from each search (default: the join's)")
    args = ap.parse_args()
    if args.k:
        K_CANDS.update(embed=args.k[0], char=args.k[1])
    logging.basicConfig(level=logging.WARNING)
    print(f"CPU: {cpu_name()}; model {args.model}")
    data = collect(args.model, args.cache, args.aliases, args.alias_tables)
    for src, what in ((0, "AutoFJ dev"), (1, "DBpedia train"), (2, "DBpedia dev"),
                      (3, "AutoFJ dev, small cuts")):
        q = data["qsrc"] == src
        if q.any():
            found = top1(data, data["y"].astype(float))[1][q & data["qpartner"]].mean()
            print(f"{what}: {int(q.sum())} queries, {int((data['src'] == src).sum())} pairs; "
                  f"gold among the candidates for {100 * found:.1f}% of those with a partner")
    print("| combiner | trained on | AutoFJ dev top-1 | AutoFJ dev typo | DBpedia dev top-1 | "
          "AutoFJ small cuts |\n|---|---|---:|---:|---:|---:|")
    for name in ("emb_cos", "char_cos"):
        p = data["x"][:, FEATURES.index(name)]
        print(f"| {name} alone | - | {macro_acc(data, p):.2f} | {macro_acc(data, p, True):.2f} | "
              f"{macro_acc(data, p, src=2):.2f} | {macro_acc(data, p, src=3):.2f} |")
    variants = [((0,), "AutoFJ dev")] + ([((0, 1), "AutoFJ dev + DBpedia train")]
                                         if args.aliases else [])
    variants += [((*variants[-1][0], 3), variants[-1][1] + " + small cuts")]
    results = {}
    for sources, what in variants:
        for name, model in candidates_models(args.models).items():
            prob, sc = evaluate(data, model, sources)
            results[(name, sources)] = (sc, prob)
            print(f"| {name} | {what} | {sc['autofj']:.2f} | {sc['autofj typo']:.2f} | "
                  f"{sc['dbpedia dev']:.2f} | {sc['autofj small']:.2f} |", flush=True)
    # shipped: the combiner with the best mean of its dev scores
    logreg = results
    chosen = max(logreg, key=lambda k: np.nanmean(list(logreg[k][0].values())))
    threshold, f1 = best_threshold(data, logreg[chosen][1])
    print(f"chosen: {chosen[0]} on sources {chosen[1]}; default threshold {threshold:.2f} "
          f"(AutoFJ dev out-of-fold F1 {f1:.2f})")
    train = np.isin(data["src"], chosen[1])
    final = candidates_models(chosen[0])[chosen[0]].fit(data["x"][train], data["y"][train])
    info = {"trained_on": "AutoFJ dev half (even right rows of 50 tables), clean and typo "
                          f"(seed {AUGMENT_SEED})" + (", DBpedia alias tables (train split, "
                          "leakage-filtered)" if 1 in chosen[1] else "")
                          + (", small joins cut from the AutoFJ dev tables" if 3 in chosen[1]
                             else ""),
            "pairs": int(train.sum()), "queries": int(np.isin(data["qsrc"], chosen[1]).sum()),
            "chosen": chosen[0], "dev": {k: round(v, 2) for k, v in logreg[chosen][0].items()
                                                  if np.isfinite(v)},
            "dev_f1_oof": round(f1, 2),
            "command": f"python benchmarks/matching/train_hybrid.py --model {args.model} "
                       + ("--aliases ALIASES.tsv.gz " if args.aliases else "") + "--write"}
    combiner = Combiner.from_estimator(final, args.model, threshold, info)
    check = data["x"][:: max(1, len(data["x"]) // 5000)]
    gap = np.abs(combiner.predict(check) - final.predict_proba(check)[:, 1]).max()
    print(f"shipped combiner against scikit-learn's probabilities: max difference {gap:.2e}")
    assert gap < 1e-4, gap
    if args.write:
        PACKAGE_DATA.mkdir(parents=True, exist_ok=True)
        combiner.save(PACKAGE_DATA / f"hybrid-{args.model}.json")
        print(f"wrote {PACKAGE_DATA / f'hybrid-{args.model}.json'}")


if __name__ == "__main__":
    main()
