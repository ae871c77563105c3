"""The multi-facet paper's evaluation (Chang et al., Tables 1-5) on our facet models.

    python benchmarks/phrases/facets_table.py --out runs/facets/table \\
        --phrase-k1 runs/facets/phrase-k1/model --phrase-k10 runs/facets/phrase-k10/model \\
        --sentence-k1 runs/facets/sentence-k1/model --sentence-k3 runs/facets/sentence-k3/model \\
        --sentence-k10 runs/facets/sentence-k10/model

Any model may be omitted (its rows are skipped). Prints four Markdown tables and the facets of
five phrases and two sentences (Table 1 style), and writes ``OUT/tables.md`` and
``OUT/results.json`` (every number, the settings and the timings).

- Phrase similarity (Table 2): Turney (5) / (10) accuracy and BiRD Pearson of GloVe 6B 50d
  average (``glove-50d``) and of each phrase model's Emb (cosine) and SC (Eq. 5);
  :mod:`phrasekit.eval.facet_similarity`.
- STS-B (Table 3): Pearson, dev / test, All / Low, GloVe Avg / Prob_avg / SIF† with and
  without Eq. 6 importance from each sentence model, and each model's SC.
- HypeNet (Table 4): PR-AUC of the signed Asym (Eq. 7) and direction accuracy, lexical split
  test (also restricted to the pairs whose two terms have a GloVe word) and random split test;
  :mod:`phrasekit.eval.hypenet`.
- BBC News Summary (Table 5): ROUGE-1/2 F1 and length at budgets of 3 sentences and of the
  reference's sentence count; :mod:`phrasekit.eval.summarization`.

Word probabilities p(w) (Prob_avg, SIF, γ of Eq. 8): the training corpora's counts stored in
the first sentence model given (all our sentence models share one training set; Zipf's
estimate for unseen words), else Zipf's estimate from GloVe's rank. Chosen on STS-B *dev*
(Prob_avg 65.2 vs 64.5 with Zipf; SIF equal).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

PHRASES = ("real property", "hard disk", "heart attack", "stock market", "machine learning")
SENTENCES = (
    "The central bank raised interest rates again to curb rising inflation.",
    "Shares in the mobile phone maker fell sharply after it warned that profits would be lower.",
)
NEAREST = 4


# ---------------------------------------------------------------------------------- helpers
def md_table(headers: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table; floats with one decimal, None as an en dash."""
    def cell(x: Any) -> str:
        if x is None:
            return "–"
        if isinstance(x, float):
            return f"{x:.1f}"
        return str(x)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def load_model(path: str | None, label: str):
    if not path:
        return None
    from phrasekit.encoders.facets.encoder import FacetEncoder

    p = Path(path)
    if not (p / "config.json").is_file():
        sys.exit(f"{label}: {p} is not a facet model folder")
    enc = FacetEncoder.from_pretrained(p, name=label)
    return enc


class Timer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def run(self, name: str, fn, *args, **kwargs):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        self.seconds[name] = round(time.perf_counter() - t, 2)
        logging.info("%s: %.1f s", name, self.seconds[name])
        return out


# ---------------------------------------------------------------------------------- tables
def phrase_table(data_dir: Path, phrase_models: dict[int, Any], glove, results: dict,
                 timer: Timer) -> str:
    from phrasekit.eval.facet_similarity import phrase_similarity

    rows, res = [], {}
    r = timer.run("phrase/glove", phrase_similarity, glove, data_dir, "emb")
    res["GloVe Avg"] = r
    rows.append(["GloVe 50d", "Avg", r["turney5"], r["turney10"], r["bird"]])
    for k, enc in phrase_models.items():
        for score, name in (("sc", "SC"), ("emb", "Emb")):
            r = timer.run(f"phrase/K={k}/{score}", phrase_similarity, enc, data_dir, score)
            res[f"Ours (K={k}) {name}"] = r
            rows.append([f"Ours (K={k})", name, r["turney5"], r["turney10"], r["bird"]])
    results["phrase_similarity"] = res
    return ("### Phrase similarity (Table 2): Turney accuracy, BiRD Pearson r (%)\n\n"
            + md_table(["Model", "Score", "Turney (5)", "Turney (10)", "BiRD"], rows)
            + "\n\nTurney: all 2,180 items, constituents excluded, Turney (10) adds the reversed "
              "bigram's 5 pairs; ties split the credit. BiRD: all 3,345 pairs.")


def sts_table(data_dir: Path, sentence_models: dict[int, Any], word_space, probabilities,
              results: dict, timer: Timer) -> str:
    from phrasekit.eval.facet_similarity import (
        WeightedAverager,
        load_stsb_splits,
        stsb_sc,
        stsb_weighted,
    )

    data = load_stsb_splits(data_dir)
    av = WeightedAverager(word_space, probabilities)
    names = {"avg": "Avg", "prob_avg": "Prob_avg", "sif": "SIF†"}
    cols = ("dev_all", "dev_low", "test_all", "test_low")
    rows, res = [], {}
    for scheme, name in names.items():
        r = timer.run(f"sts/glove/{scheme}", stsb_weighted, av, data, scheme)
        res[f"GloVe {name}"] = r
        rows.append(["GloVe 50d", name, *[r[c] for c in cols]])
    for k, enc in sentence_models.items():
        r = timer.run(f"sts/K={k}/sc", stsb_sc, enc, data)
        res[f"Ours (K={k}) SC"] = r
        rows.append([f"Ours (K={k})", "SC", *[r[c] for c in cols]])
        for scheme, name in names.items():
            r = timer.run(f"sts/K={k}/{scheme}", stsb_weighted, av, data, scheme, enc)
            res[f"Ours (K={k}) {name}"] = r
            rows.append([f"Ours (K={k})", name, *[r[c] for c in cols]])
    results["stsb"] = res
    return ("### STS-B (Table 3): Pearson r (%)\n\n"
            + md_table(["Model", "Score", "Dev All", "Dev Low", "Test All", "Test Low"], rows)
            + "\n\nOurs Avg / Prob_avg / SIF† = the GloVe weights times Eq. 6 importance from "
              "the sentence model. † first principal component of the train split removed. "
              "Low: pairs below the split's median gold score. α = 1e-4.")


def hypenet_table(data_dir: Path, phrase_models: dict[int, Any], glove, results: dict,
                  timer: Timer) -> str:
    from phrasekit.eval import hypenet as hn

    splits = {"lex": hn.load_hypenet(data_dir, "lex"), "rnd": hn.load_hypenet(data_dir, "rnd")}
    ws = next(iter(phrase_models.values())).word_space if phrase_models else None
    if ws is None:
        from phrasekit.encoders.facets.words import load_word_space

        ws = load_word_space()
    lex = splits["lex"]
    iv = np.array([bool(ws.text_ids(p.hypo, None)) and bool(ws.text_ids(p.hyper, None))
                   for p in lex])
    lex_iv = [p for p, k in zip(lex, iv, strict=True) if k]

    def subset(scores: np.ndarray, symmetric: bool) -> dict[str, float]:
        return hn.hypernymy_metrics(lex_iv, np.asarray(scores)[iv], symmetric=symmetric)

    rows, res = [], {}
    scorers: list[tuple[str, str, Any, bool]] = [("GloVe 50d", "Avg (cos)", glove, True)]
    for k, enc in phrase_models.items():
        scorers.append((f"Ours (K={k})", "Emb (cos)", enc, True))
        scorers.append((f"Ours (K={k})", "Asym", enc, False))
    for model, score, enc, symmetric in scorers:
        entry: dict[str, Any] = {}
        for split, pairs in splits.items():
            def scored(enc=enc, pairs=pairs, symmetric=symmetric):
                if symmetric:
                    return hn.cosine_scores(enc, pairs)
                return hn.asym_scores(enc, pairs)[0]

            s = timer.run(f"hypenet/{model}/{score}/{split}", scored)
            entry[split] = hn.hypernymy_metrics(pairs, s, symmetric=symmetric)
            if split == "lex":
                entry["lex_in_vocab"] = subset(s, symmetric)
        res[f"{model} {score}"] = entry
        rows.append([model, score, entry["lex"]["auc"], entry["lex"]["direction_acc"],
                     entry["lex_in_vocab"]["auc"], entry["lex_in_vocab"]["direction_acc"],
                     entry["rnd"]["auc"], entry["rnd"]["direction_acc"]])
    results["hypenet"] = res
    n_lex, n_iv = len(lex), len(lex_iv)
    pos_lex = sum(p.label for p in lex)
    pos_iv = sum(p.label for p in lex_iv)
    n_rnd, pos_rnd = len(splits["rnd"]), sum(p.label for p in splits["rnd"])
    results["hypenet_counts"] = {"lex": [n_lex, pos_lex], "lex_in_vocab": [n_iv, pos_iv],
                                 "rnd": [n_rnd, pos_rnd]}
    return ("### HypeNet (Table 4): hypernym detection PR-AUC (%), direction accuracy (%)\n\n"
            + md_table(["Model", "Score", "Lex AUC", "Lex Acc", "Lex-IV AUC", "Lex-IV Acc",
                        "Rnd AUC", "Rnd Acc"], rows)
            + f"\n\nTest portions. Lex: lexical split, {n_lex} pairs ({pos_lex} hypernym). "
              f"Lex-IV: its {n_iv} pairs ({pos_iv} hypernym) whose two terms have a GloVe 6B "
              f"word (elsewhere Asym = 0, cosine = 0). Rnd: random split (the paper's), "
              f"{n_rnd} pairs ({pos_rnd} hypernym). AUC = area under the precision-recall "
              "curve (chance = the positive rate, ~20%) of the signed score Asym(hyper=y, "
              "hypo=x), or of cosine. Acc: true hypernym pairs with Asym > 0; a symmetric "
              "score gets 50.")


def summary_table(data_dir: Path, sentence_models: dict[int, Any], word_space, probabilities,
                  limit: int | None, results: dict, timer: Timer) -> str:
    from phrasekit.eval import summarization as sm

    articles = timer.run("summ/load", sm.load_bbc_summaries, data_dir, limit)
    selector = sm.Eq8Selector(word_space, probabilities)
    methods: list[tuple[str, str, str, Any]] = [
        ("Order", "Lead", "lead", None), ("Unsup, no order", "Random", "random", None),
        ("Unsup, no order", "Sent Emb (GloVe)", "sent_emb", None),
        ("Unsup, no order", "W Emb (GloVe)", "w_emb", None)]
    facets: dict[int, list[np.ndarray]] = {}
    for k, enc in sentence_models.items():
        facets[k] = timer.run(f"summ/facets/K={k}", sm.sentence_facets, enc, articles)
        methods.append(("Unsup, no order", f"Ours (K={k})", "facets", k))
    rows, res = [], {}
    for setting_name, name, method, k in methods:
        entry = {}
        for budget in (3, "ref"):
            sel = timer.run(f"summ/{name}/{budget}/select", sm.select_all, articles, method,
                            budget, selector, None if k is None else facets[k])
            entry[str(budget)] = timer.run(f"summ/{name}/{budget}/rouge", sm.score_selections,
                                           articles, sel)
        res[name] = entry
        rows.append([setting_name, name if name != "Lead" else "Lead-3 / Lead-n",
                     entry["3"]["r1"], entry["3"]["r2"], entry["3"]["len"],
                     entry["ref"]["r1"], entry["ref"]["r2"], entry["ref"]["len"]])
    budgets = [a.budget for a in articles]
    results["summarization"] = res
    results["summarization_counts"] = {"articles": len(articles),
                                       "mean_ref_budget": float(np.mean(budgets)),
                                       "mean_sentences": float(np.mean(
                                           [len(a.sentences) for a in articles]))}
    return ("### BBC News Summary (Table 5): ROUGE F1 (%) and length (words)\n\n"
            + md_table(["Setting", "Method", "R-1 @3", "R-2 @3", "Len @3", "R-1 @ref",
                        "R-2 @ref", "Len @ref"], rows)
            + f"\n\n{len(articles)} articles (duplicates dropped"
            + (f", first {limit}" if limit else "") + "). @3: 3 sentences each (the paper's "
              "setting); @ref: as many sentences as the reference covers (mean "
              f"{np.mean(budgets):.2f} of {np.mean([len(a.sentences) for a in articles]):.1f}"
              "). Greedy Eq. 8, γ = α/(α+p(w)), α = 1e-4; Random seeded per article.")


def facet_descriptions(phrase_models: dict[int, Any], sentence_models: dict[int, Any],
                       results: dict) -> str:
    from phrasekit.encoders.facets.encoder import format_facet_table

    blocks, res = [], {}
    for kind, models, texts in (("phrase", phrase_models, PHRASES),
                                ("sentence", sentence_models, SENTENCES)):
        for k, enc in models.items():
            for text in texts:
                table = enc.describe(text, n=NEAREST)
                res[f"{kind} K={k}: {text}"] = [[[w, round(c, 3)] for w, c in row]
                                                for row in table]
                blocks.append(f"{kind} model, K={k}\n{format_facet_table(text, table)}")
    results["facets"] = res
    if not blocks:
        return ""
    return ("### Facets (Table 1): nearest GloVe words of each facet, with cosines\n\n```\n"
            + "\n\n".join(blocks) + "\n```")


# ---------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for k in (1, 10):
        ap.add_argument(f"--phrase-k{k}", help=f"phrase facet model folder, K={k}")
    for k in (1, 3, 10):
        ap.add_argument(f"--sentence-k{k}", help=f"sentence facet model folder, K={k}")
    ap.add_argument("--out", required=True, help="output folder (tables.md, results.json)")
    ap.add_argument("--data-dir", help="benchmark data folder (default: phrasekit.settings)")
    ap.add_argument("--articles", type=int, default=None,
                    help="BBC: only the first N non-duplicate articles (default: all)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for name in ("phrasekit", "httpx", "sentence_transformers"):
        logging.getLogger(name).setLevel(logging.WARNING)
    torch.set_num_threads(args.threads)

    import phrasekit
    from phrasekit.encoders.facets.words import load_word_space
    from phrasekit.settings import data_dir as default_data

    data_dir = Path(args.data_dir) if args.data_dir else default_data()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    timer = Timer()
    t0 = time.perf_counter()
    phrase_models = {k: m for k in (10, 1)
                     if (m := load_model(getattr(args, f"phrase_k{k}"), f"phrase-k{k}"))}
    sentence_models = {k: m for k in (1, 3, 10)
                       if (m := load_model(getattr(args, f"sentence_k{k}"), f"sentence-k{k}"))}
    glove = phrasekit.load("glove-50d")
    word_space = load_word_space()
    if sentence_models:
        first = next(iter(sentence_models.values()))
        probabilities, p_source = first.word_probabilities(), f"corpus counts of {first.name}"
    else:
        probabilities, p_source = word_space.zipf_probabilities(), "Zipf (GloVe rank)"

    results: dict[str, Any] = {
        "models": {f"phrase-k{k}": str(m.model_path) for k, m in phrase_models.items()}
        | {f"sentence-k{k}": str(m.model_path) for k, m in sentence_models.items()},
        "word_probabilities": p_source, "alpha": 1e-4, "torch_threads": args.threads,
    }
    sections = [
        phrase_table(data_dir, phrase_models, glove, results, timer),
        sts_table(data_dir, sentence_models, word_space, probabilities, results, timer),
        hypenet_table(data_dir, phrase_models, glove, results, timer),
        summary_table(data_dir, sentence_models, word_space, probabilities, args.articles,
                      results, timer),
    ]
    desc = timer.run("facets/describe", facet_descriptions, phrase_models, sentence_models,
                     results)
    if desc:
        sections.append(desc)
    total = round(time.perf_counter() - t0, 1)
    results["seconds"] = timer.seconds | {"total": total}
    header = ("## Multi-facet embeddings: evaluation\n\nModels: "
              + (", ".join(f"{k} = `{v}`" for k, v in results["models"].items()) or "none")
              + f". p(w): {p_source}. Total {total} s ({args.threads} torch thread).")
    text = header + "\n\n" + "\n\n".join(sections) + "\n"
    print(text)
    (out / "tables.md").write_text(text, encoding="utf-8")
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out / 'tables.md'} and {out / 'results.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
