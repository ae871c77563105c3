"""Topical phrase mining with UCTopic (``topics --method ccl``) against phrasekit's foundation
``topics`` (``--method clusters``) on the same corpora (UCTopic §4.3, Table 5 style).

Corpora (``--corpora``): ``restaurant_reviews_absa14`` (3,841 review sentences, the stand-in
for UCTopic's Gest reviews), ``inspec`` (2,000 computer-science abstracts, the stand-in for
KP20k), and the labelled ``bbc_news``, ``ag_news_test``, ``20newsgroups``.

Methods (``--methods``):

- ``ccl``: ``UCTopicModel`` over the span encoder ``--encoder`` (default: the pre-trained
  ``runs/uctopic/pretrain/model`` when present, else the shipped ``uctopic-minilm``, the same
  weights): noun chunks, K by silhouette
  on a 10k-instance sample (``--k-min`` .. ``--k-max``), CCL (``--ccl-steps``), phrase topics
  from averaged instance distributions, documents through their phrases;
- ``ccl0``: the same without CCL (topics = KMeans clusters of the encoder's space): the
  ablation that isolates what CCL adds;
- ``clusters``: ``PhraseTopicModel`` with its defaults (K by silhouette in 5..25).

Scores (``phrasekit.topics.outputs.metrics``), on each topic's top-10 terms re-tokenised:
informativeness (mean word tf-idf, UCTopic B.2; documents = the corpus' documents), word
diversity inside a topic (B.2), NPMI (document co-occurrence), topic diversity across topics,
and, on labelled corpora, NMI of document topics against gold labels (multi-label restaurant
sentences: the sentences with exactly one aspect category; unassigned documents are one
cluster). The five largest topics' top-10 phrases are listed per run, and every run's
``topics.json`` / ``topics.md`` / ``report.html`` is written to ``OUT/CORPUS/METHOD/``.
Results go to ``OUT/results.json`` after every run (existing runs with the same settings are
reused; ``--force`` refits); the table to ``OUT/table.md``.

Usage: python benchmarks/topics/uctopic_mining.py [--out runs/uctopic/mining]
       [--corpora restaurant_reviews_absa14,inspec] [--methods ccl,ccl0,clusters]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

CORPORA = ("restaurant_reviews_absa14", "inspec", "bbc_news", "ag_news_test", "20newsgroups")
METHODS = ("ccl", "ccl0", "clusters")
NAMES = {"ccl": "UCTopic (CCL)", "ccl0": "UCTopic without CCL",
         "clusters": "phrasekit clusters"}
PRETRAINED = Path("runs/uctopic/pretrain/model")
TOP_N = 10

log = logging.getLogger("uctopic_mining")


def gold_labels(docs: list) -> tuple[list[str], np.ndarray] | None:
    """Gold labels of the evaluated documents and the mask of those documents (None when the
    corpus has no labels); multi-label documents count only with exactly one label."""
    raw = [d.meta.get("label") for d in docs]
    if any(lab is None for lab in raw):
        return None
    if any(isinstance(lab, list) for lab in raw):
        mask = np.array([isinstance(lab, list) and len(lab) == 1 for lab in raw])
        return [lab[0] for lab, m in zip(raw, mask, strict=True) if m], mask
    return [str(lab) for lab in raw], np.ones(len(docs), dtype=bool)


def fit(method: str, docs: list, args: argparse.Namespace, out: Path, corpus: str) -> Any:
    """Fit one method on the documents and write its outputs; returns the fitted model."""
    from phrasekit.topics import PhraseTopicModel, UCTopicModel, write_topic_outputs
    from phrasekit.topics.outputs.output import write_uctopic_outputs

    if method == "clusters":
        model = PhraseTopicModel(encoder="minilm", random_state=args.seed)
        model.fit(docs, show_progress=True)
        write_topic_outputs(model, docs, out, report=True, title=f"{corpus} (clusters)")
        return model
    model = UCTopicModel(encoder=args.encoder, k_range=(args.k_min, args.k_max),
                         ccl_steps=args.ccl_steps if method == "ccl" else 0,
                         max_instances=args.max_instances, random_state=args.seed,
                         parse_cache=Path(args.out) / "parse" / f"{corpus}.json.gz")
    model.fit(docs, show_progress=True)
    write_uctopic_outputs(model, docs, out, report=True, title=f"{corpus} ({method})")
    return model


def score(model: Any, docs: list) -> dict[str, Any]:
    """The label-free metrics of a fitted model and its five largest topics' top phrases."""
    from phrasekit.text import tokenize
    from phrasekit.topics.outputs.metrics import (
        npmi_coherence,
        phrase_informativeness,
        topic_diversity,
        word_diversity,
    )

    token_docs = [tokenize(d.text) for d in docs]
    shown = [[term for term, _ in t][:TOP_N] for t in model.topics_]
    keys = [[k for k in (" ".join(tokenize(term)) for term in t) if k] for t in shown]
    sizes = np.asarray(model.topic_doc_counts_)
    largest = [int(t) for t in np.argsort(-sizes, kind="stable")[:5]]
    k = model.n_topics_
    return {
        "k": k,
        "silhouette": {str(a): round(b, 4) for a, b in sorted(model.silhouette_.items())},
        "informativeness": phrase_informativeness(keys, token_docs, top_n=TOP_N)[0],
        "word_diversity": word_diversity(keys, top_n=TOP_N)[0],
        "npmi": npmi_coherence(keys, token_docs, top_n=TOP_N)[0],
        "topic_diversity": topic_diversity(keys, top_n=TOP_N),
        "unassigned": float(np.mean(np.asarray(model.doc_labels_) < 0)),
        "top_phrases": {str(t): shown[t] for t in largest},
        "topic_docs": {str(t): int(sizes[t]) for t in largest},
        "timings": {a: round(float(b), 1) for a, b in model.timings_.items()},
    }


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def table(results: dict[str, Any], corpora: list[str], methods: list[str]) -> str:
    """Markdown: one row per (corpus, method), then the five largest topics of each run."""
    lines = ["| corpus | method | K | informativeness (tf-idf) | word div. | NPMI | topic div. "
             "| NMI | unassigned | fit s |", "|---" * 10 + "|"]
    for c in corpora:
        for m in methods:
            r = results.get(f"{c}/{m}")
            if r is None:
                continue
            fit_s = r["seconds"]
            lines.append(f"| {c} | {NAMES[m]} | {r['k']} | {_f(r['informativeness'], 4)} | "
                         f"{_f(r['word_diversity'])} | {_f(r['npmi'])} | "
                         f"{_f(r['topic_diversity'])} | {_f(r.get('nmi'))} | "
                         f"{r['unassigned']:.1%} | {fit_s:.0f} |")
    for c in corpora:
        for m in methods:
            r = results.get(f"{c}/{m}")
            if r is None:
                continue
            lines += ["", f"**{c}, {NAMES[m]}** (K = {r['k']}; five largest topics, top-10):", ""]
            for t, phrases in r["top_phrases"].items():
                lines.append(f"- topic {t} ({r['topic_docs'][t]} docs): {', '.join(phrases)}")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Fit every (corpus, method), resuming from OUT/results.json, and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/uctopic/mining"))
    parser.add_argument("--corpora", default="restaurant_reviews_absa14,inspec")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--encoder", default=str(PRETRAINED) if PRETRAINED.is_dir()
                        else "uctopic-minilm")
    parser.add_argument("--ccl-steps", type=int, default=150)
    parser.add_argument("--max-instances", type=int, default=30_000)
    parser.add_argument("--k-min", type=int, default=5)
    parser.add_argument("--k-max", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--corpora-dir", type=Path, help="default: the shared corpora folder")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    import torch

    from phrasekit.io import read_corpus, write_json, write_text
    from phrasekit.settings import corpora_dir
    from phrasekit.topics.outputs.metrics import labels_nmi

    torch.set_num_threads(args.threads)
    root = args.corpora_dir or corpora_dir(required=True)
    corpora = [c for c in args.corpora.split(",") if c]
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            raise SystemExit(f"unknown method {m!r}; known: {', '.join(METHODS)}")
    settings = {"encoder": args.encoder, "ccl_steps": args.ccl_steps, "seed": args.seed,
                "max_instances": args.max_instances, "k": [args.k_min, args.k_max]}
    path = args.out / "results.json"
    results: dict[str, Any] = json.loads(path.read_text())["results"] if path.is_file() else {}
    for c in corpora:
        docs = read_corpus(root / c)
        gold = gold_labels(docs)
        for m in methods:
            key = f"{c}/{m}"
            if key in results and results[key]["settings"] == settings and not args.force:
                continue
            t0 = time.time()
            model = fit(m, docs, args, args.out / c / m, c)
            seconds = time.time() - t0
            r = {"settings": settings, "seconds": round(seconds, 1), **score(model, docs)}
            if gold is not None:
                labels, mask = gold
                r["nmi"] = labels_nmi(list(np.asarray(model.doc_labels_)[mask]), labels)
            results[key] = r
            log.info("%s: K=%d inf %.4f wdiv %.3f npmi %.3f nmi %s (%.0fs)", key, r["k"],
                     r["informativeness"], r["word_diversity"], r["npmi"], r.get("nmi"),
                     seconds)
            write_json(path, {"results": results})
    text = table(results, corpora, methods)
    write_text(args.out / "table.md", text)
    print(text)


if __name__ == "__main__":
    main()
