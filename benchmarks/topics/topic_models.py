"""PNTM vs UNTM, LDA and phrase-LDA on labelled corpora (Phrase-BERT §6, automatic metrics).

For each corpus every model reads its topics from one vocabulary (words in more than five
documents, at most half of them, plus up to 75k spaCy noun-chunk/entity phrases counted where
they occur verbatim), so the metrics compare like with like:

- NPMI of each topic's top-10 terms from document co-occurrence in the corpus itself
  (nested pairs such as "boerse" / "deutsche boerse" skipped; ``phrasekit.topics.outputs.metrics``);
- topic diversity: distinct words among all topics' top-25 terms;
- NMI of each document's top topic against the gold labels;
- fit time: PNTM/UNTM training (+ the once-per-corpus encoding of documents and vocabulary,
  reported apart because it is cached across K), LDA fitting.

    python benchmarks/topics/topic_models.py --out runs/topic_models \
        --corpora 20newsgroups,bbc_news,ag_news_test --k 20,50

Resumable: finished runs are kept in ``OUT/runs.json``. Phrase extraction is cached in
``OUT/phrases/`` and embeddings in ``OUT/cache/``. Topic lists of every run go to
``OUT/topics/``; for bbc_news the PNTM topics are also read through sentences.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np

METHODS = ("pntm", "untm", "lda", "plda")


def _fmt(x: float, digits: int = 3) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def table(runs: dict[str, dict]) -> str:
    """Markdown table of all finished runs."""
    head = ("| corpus | K | model | NPMI | diversity | NMI | fit s | encode s (cached) |\n"
            "|---|---|---|---|---|---|---|---|")
    rows = []
    order = {m: i for i, m in enumerate(METHODS)}
    for r in sorted(runs.values(), key=lambda r: (r["corpus"], r["k"], order[r["method"]])):
        rows.append(
            f"| {r['corpus']} | {r['k']} | {r['name']} | {_fmt(r['npmi'])} | "
            f"{_fmt(r['diversity'])} | {_fmt(r['nmi'])} | {r['fit_s']:.1f} | "
            f"{r.get('encode_s', 0.0):.1f} |"
        )
    return head + "\n" + "\n".join(rows)


def main() -> None:
    """Run the grid, print the table, write OUT/runs.json, OUT/table.md and topic lists."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--corpora", default="20newsgroups,bbc_news,ag_news_test")
    parser.add_argument("--k", default="20,50")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--corpora-dir", default=None)
    parser.add_argument("--lda-iter", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (CPU is shared)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    import torch

    torch.set_num_threads(args.threads)
    from phrasekit.io import read_corpus, write_json, write_text
    from phrasekit.registry import load
    from phrasekit.settings import corpora_dir
    from phrasekit.text import tokenize
    from phrasekit.topics import PNTM, LDATopics, load_or_extract_vocabulary
    from phrasekit.topics.core.terms import build_term_vocabulary
    from phrasekit.topics.outputs.metrics import labels_nmi, npmi_coherence, topic_diversity
    from phrasekit.topics.pipeline import corpus_sentences

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs_path = out / "runs.json"
    runs: dict[str, dict] = json.loads(runs_path.read_text()) if runs_path.is_file() else {}
    root = Path(args.corpora_dir) if args.corpora_dir else corpora_dir()
    ks = [int(k) for k in args.k.split(",")]
    methods = args.methods.split(",")
    if unknown := set(methods) - set(METHODS):
        raise SystemExit(f"unknown methods {sorted(unknown)}; choose from {METHODS}")
    encoders = {"pntm": "minilm", "untm": "glove-50d"}
    loaded: dict[str, object] = {}
    for corpus in args.corpora.split(","):
        todo = [(k, m) for k in ks for m in methods if f"{corpus}|{k}|{m}" not in runs]
        if not todo:
            continue
        docs = read_corpus(root / corpus)
        labels = [d.meta.get("label") for d in docs]
        if any(lab is None for lab in labels):
            raise SystemExit(f"{corpus}: some documents have no `label`")
        phrases = load_or_extract_vocabulary(
            docs, out / "phrases" / f"{corpus}.json.gz", show_progress=not args.quiet)
        token_docs = [tokenize(d.text) for d in docs]
        vocab = build_term_vocabulary(token_docs, phrases)
        logging.info("%s: %d docs, %d terms (%d phrases)", corpus, len(docs), len(vocab),
                     len(vocab.phrases))
        for k, method in todo:
            t0 = time.perf_counter()
            rec: dict = {"corpus": corpus, "k": k, "method": method,
                         "n_terms": len(vocab), "n_phrases": len(vocab.phrases)}
            if method in encoders:
                name = encoders[method]
                enc = loaded.setdefault(name, load(name))
                model = PNTM(encoder=enc, n_topics=k, top_n=25, cache_dir=out / "cache",
                             random_state=args.seed).fit(docs, phrases=phrases,
                                                         show_progress=not args.quiet)
                if model.term_vocabulary_.terms != vocab.terms:
                    raise RuntimeError("PNTM built another vocabulary than the benchmark")
                tm = model.timings_
                rec["name"] = f"{method.upper()} ({name})"
                rec["fit_s"] = round(tm["train"], 2)
                rec["encode_s"] = round(tm["encode_docs"] + tm["encode_vocab"], 2)
                rec["final_hinge"] = model.final_hinge_
                keys, shown, doc_labels = model.topic_keys_, model.topics_, model.labels_
                if corpus == "bbc_news" and method == "pntm":
                    sents = model.describe_with(corpus_sentences(docs, seed=args.seed), n=5)
                    rec["sentences"] = [[s for s, _ in t] for t in sents]
            else:
                model = LDATopics(n_topics=k, phrases=method == "plda", top_n=25,
                                  max_iter=args.lda_iter, random_state=args.seed).fit(
                    token_docs, vocab)
                rec["name"] = "phrase-LDA" if method == "plda" else "LDA"
                rec["fit_s"] = round(model.fit_seconds_, 2)
                keys, shown, doc_labels = model.topic_keys_, model.topics_, model.labels_
            rec["npmi"], per_topic = npmi_coherence(keys, token_docs, top_n=10)
            rec["npmi_per_topic"] = per_topic
            rec["diversity"] = topic_diversity(keys, top_n=25)
            rec["nmi"] = labels_nmi(list(doc_labels), labels)
            rec["unassigned"] = int(np.sum(np.asarray(doc_labels) < 0))
            rec["phrase_share_top10"] = float(np.mean(
                [sum(" " in t for t in ks_[:10]) / 10 for ks_ in keys]))
            rec["topics"] = [[t for t, _ in topic[:10]] for topic in shown]
            rec["wall_s"] = round(time.perf_counter() - t0, 2)
            runs[f"{corpus}|{k}|{method}"] = rec
            write_json(runs_path, runs)
            logging.info("%s K=%d %s: NPMI %.3f diversity %.3f NMI %.3f (%.1fs)", corpus, k,
                         rec["name"], rec["npmi"], rec["diversity"], rec["nmi"], rec["wall_s"])
            lines = [f"# {corpus} K={k} {rec['name']}", ""]
            lines += [f"{i}. " + ", ".join(t) for i, t in enumerate(rec["topics"])]
            write_text(out / "topics" / f"{corpus}-k{k}-{method}.md", "\n".join(lines) + "\n")
    text = table(runs)
    write_text(out / "table.md", text + "\n")
    print(text)


if __name__ == "__main__":
    main()
