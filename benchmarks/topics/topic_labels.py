"""Do topic labels read as names? An audit of every label, before and after ``topics.core.labels``.

``--tag TAG`` fits ``DocumentTopicModel`` on each corpus (MiniLM, the ``auto`` sample;
``--gold-k``: K fixed at the number of gold labels, else chosen by stability; ``--max-docs``:
a seeded sample of the corpus; document vectors in phrasekit's vector cache), saves it to
``OUT/models/CORPUS`` and its NMI and NPMI (``topics_vs_peers.score``) to ``OUT/TAG.json``.

``--relabel TAG`` names the saved topics by the rule before ``topics.core.labels`` (the first of
the three best phrases holding the best term, else the two best terms: ``old_label``) and by
``topics.core.labels.name_topics`` on the documents the fit read (its sample, recomputed), and
audits both labels token by token against four kinds of debris:

- boilerplate: words of scientific and news prose that name no subject (the audit's own
  list below; phrasekit's rule does not read it);
- citation fragments ("Rev. Lett", "et al", "Phys", "arXiv", "Fig");
- units (MeV, keV, Myr, km, kg, %);
- bare verbs: a one-word label part that spaCy tags as a verb in most of its occurrences in
  the topic's documents.

Labels move no document, so one fit serves both rules. ``--compare TAG`` prints the tables.

    nice -n 19 python benchmarks/topics/topic_labels.py --tag dev --gold-k --max-docs 1000 \
        --corpora ag_news_test,restaurant_reviews_absa14,bbc_news,20newsgroups,arxiv_abstracts_cc0
    nice -n 19 python benchmarks/topics/topic_labels.py --relabel dev --max-docs 1000
    python benchmarks/topics/topic_labels.py --compare dev
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser
from topics_vs_peers import load_corpus, score

from phrasekit.datasets import resolve_corpus
from phrasekit.io import read_corpus
from phrasekit.settings import shared_dir, vector_cache_dir
from phrasekit.text import tokenize
from phrasekit.topics import DocumentTopicModel
from phrasekit.topics.core.labels import _contains

CORPORA = "sample,arxiv_abstracts_cc0,bbc_news,restaurant_reviews_absa14,ag_news_test," \
          "20newsgroups"
#: The audit's own lists (phrasekit's label rule does not read them).
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


BOILERPLATE = _words("""
paper papers result results we our us propose proposed present presented show shows shown
study studies studied approach method methods new novel also using use used based problem
problems work works case cases way ways model models data analysis number numbers example
said says say mr mrs year years time times people thing things lot good great first last
one two three article articles section sections this that these those here there
""")
CITATION = _words("rev lett phys et al ibid arxiv fig figs eq eqs pp vol ref refs "
                     "astrophys j proc")
UNITS = _words("ev kev mev gev tev myr gyr yr km kg cm mm nm mu hz khz mhz ghz k pc kpc "
                  "mpc au percent %")
VERB_TAGS = frozenset({"VERB", "AUX"})


def flags(label: str, typical: list[str], nlp: Any) -> list[str]:
    """The kinds of debris in ``label`` (empty: a clean label)."""
    name = re.sub(r"^(miscellaneous|mixed)\b[:( ]*|\)$", "", label)
    found = []
    tokens = [t for part in name.split(", ") for t in tokenize(part)]
    if any(t in BOILERPLATE for t in tokens):
        found.append("boilerplate")
    if any(t in CITATION for t in tokens):
        found.append("citation")
    if any(t in UNITS or t.endswith("%") for t in tokens):
        found.append("unit")
    for part in name.split(", "):
        words = tokenize(part)
        if len(words) == 1 and _verb(words[0], typical, nlp):
            found.append("verb")
            break
    return found


def _verb(word: str, texts: list[str], nlp: Any) -> bool:
    """Whether spaCy tags ``word`` as a verb in most of its occurrences in (at most ten of)
    the ``texts`` holding it."""
    holding = [t for t in texts if word in tokenize(t)][:10]
    tags = [tok.pos_ for doc in nlp.pipe(holding) for tok in doc if tok.lower_ == word]
    return bool(tags) and sum(t in VERB_TAGS for t in tags) * 2 > len(tags)


def corpus_docs(corpus: str, max_docs: int) -> tuple[list, list | None, np.ndarray | None]:
    """A corpus' documents, gold labels and evaluated-document mask (``sample``: no gold),
    capped at ``max_docs`` by a seeded sample (0: all)."""
    if corpus == "sample":
        docs, gold, mask = read_corpus(resolve_corpus("sample")), None, None
    else:
        docs, gold, mask = load_corpus(shared_dir() / "corpora", corpus)
    if max_docs and len(docs) > max_docs:
        keep = np.sort(np.random.default_rng(0).choice(len(docs), max_docs, replace=False))
        docs = [docs[i] for i in keep]
        if gold is not None:
            full = np.full(len(mask), None, dtype=object)
            full[np.flatnonzero(mask)] = gold
            mask = mask[keep]
            gold = [full[i] for i in keep if full[i] is not None]
    return docs, gold, mask


def old_label(config: dict[str, Any], misc: np.ndarray, t: int) -> str:
    """The label rule phrasekit had before ``topics.core.labels`` (``reading.name_topic`` of commit
    84cc51a) on a saved topic: the first of the three best phrases containing the best term,
    else the two best terms."""
    terms = [w for w, _ in config["topics_"][t]]
    phrases = [p for p, _ in config["topic_phrases_"][t]]
    best = tokenize(terms[0]) if terms else []
    named = [p for p in phrases[:3] if best and _contains(tokenize(p), best)]
    label = named[0] if named else ", ".join(terms[:2]) or "(no terms)"
    return f"miscellaneous ({label})" if misc[t] else label


def run(args: argparse.Namespace) -> None:
    """Fit every corpus (``--gold-k``: K fixed at the number of gold labels), save the model
    to ``OUT/models/CORPUS`` and its NMI and NPMI to ``OUT/TAG.json``."""
    out: dict[str, Any] = {}
    for corpus in args.corpora.split(","):
        docs, gold, mask = corpus_docs(corpus, args.max_docs)
        k = len(set(gold)) if args.gold_k and gold is not None else None
        t0 = time.perf_counter()
        model = DocumentTopicModel(encoder=args.model, n_topics=k,
                                   cache_dir=str(vector_cache_dir())).fit(docs)
        fit_s = time.perf_counter() - t0
        model.save(Path(args.out) / "models" / corpus)
        got = {}
        if gold is not None:
            got = score({"topics": [[w for w, _ in r] for r in model.topics_],
                         "labels": list(model.doc_labels_)},
                        [tokenize(d.text) for d in docs], gold, mask)
        out[corpus] = {"n_docs": len(docs), "k": model.n_topics_, "fit_s": round(fit_s, 1),
                       "nmi": got.get("nmi"), "npmi": got.get("npmi")}
        print(f"{corpus}: {len(docs)} docs, K={model.n_topics_}, fit {fit_s:.0f}s", flush=True)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / f"{args.tag}.json").write_text(json.dumps(out, indent=1))


def relabel(args: argparse.Namespace) -> None:
    """Both label rules on the topics of the saved fits of ``--relabel TAG`` (the same
    sample, documents and terms the fit read; labels move no document, so no refit), both
    audited; written to ``OUT/TAG-relabelled.json``."""
    from safetensors.numpy import load_file

    from phrasekit.phrases.extract import load_spacy
    from phrasekit.text import TokenDocs
    from phrasekit.topics.core.labels import candidates, name_topics
    from phrasekit.topics.methods.documents import FIT_DOCS, FIT_WORDS
    from phrasekit.topics.methods.sampling import sample_corpus

    nlp = load_spacy(exclude=("lemmatizer", "parser", "ner"))
    fits = json.loads((Path(args.out) / f"{args.relabel}.json").read_text())
    out = {}
    for corpus, fit in fits.items():
        folder = Path(args.out) / "models" / corpus
        config = json.loads((folder / "config.json").read_text())
        arrays = load_file(str(folder / "arrays.safetensors"))
        docs, _, _ = corpus_docs(corpus, args.max_docs)
        seed = int(config["params"]["random_state"])
        _, sample, index = sample_corpus(docs, FIT_DOCS, seed, FIT_WORDS)
        labels = arrays["doc_labels"].astype(np.int64)[index]
        vocab = config["vocabulary"]
        names = name_topics(candidates(config["topics_"], config["topic_phrases_"]), labels,
                            TokenDocs(d.text for d in sample),
                            vocab["surface"][vocab["n_words"]:])
        misc = arrays["miscellaneous"].astype(bool)
        rows = []
        for t in range(len(names)):
            texts = [sample[i].text for i in np.flatnonzero(labels == t)[:40]]
            before, after = old_label(config, misc, t), names[t].text(bool(misc[t]))
            rows.append({"id": t, "n_docs": config["topic_doc_counts_"][t], "label": before,
                         "flags": flags(before, texts, nlp), "after": after,
                         "after_flags": flags(after, texts, nlp),
                         "mixed": names[t].mixed or bool(misc[t]),
                         "top_terms": [w for w, _ in config["topics_"][t][:8]]})
        out[corpus] = {**fit, "k": len(names), "topics": rows}
        print(f"{corpus}: {sum(bool(r['flags']) for r in rows)} -> "
              f"{sum(bool(r['after_flags']) for r in rows)} of {len(rows)} labels with debris, "
              f"{sum(r['mixed'] for r in rows)} mixed", flush=True)
    (Path(args.out) / f"{args.relabel}-relabelled.json").write_text(json.dumps(out, indent=1))


def compare(args: argparse.Namespace) -> None:
    """Print the before -> after tables of ``--compare TAG`` (a relabelled run)."""
    runs = json.loads((Path(args.out) / f"{args.compare}-relabelled.json").read_text())

    def num(x: float | None) -> str:
        return "—" if x is None else f"{x:.3f}"

    print("| corpus | docs | K | labels with debris, before | after | mixed after | NMI | "
          "NPMI |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    for corpus, run in runs.items():
        rows = run["topics"]
        n_b = sum(bool(r["flags"]) for r in rows)
        n_a = sum(bool(r["after_flags"]) for r in rows)
        print(f"| {corpus} | {run['n_docs']} | {run['k']} | {n_b}/{len(rows)} | "
              f"{n_a}/{len(rows)} | {sum(r['mixed'] for r in rows)} | {num(run['nmi'])} | "
              f"{num(run['npmi'])} |")
    for corpus in args.table.split(",") if args.table else ():
        print(f"\n{corpus}:\n\n| topic | docs | label before | debris | label after | "
              "debris |\n|---:|---:|---|---|---|---|")
        for r in runs[corpus]["topics"]:
            print(f"| {r['id']} | {r['n_docs']} | {r['label']} | {', '.join(r['flags']) or '—'} "
                  f"| {r['after']} | {', '.join(r['after_flags']) or '—'} |")


def main() -> None:
    ap = bench_parser(__doc__)
    ap.add_argument("--corpora", default=CORPORA)
    ap.add_argument("--max-docs", type=int, default=0, help="cap per corpus (0: all)")
    ap.add_argument("--tag", default="after")
    ap.add_argument("--out", default="runs/topic_labels")
    ap.add_argument("--model", default="minilm", help="document encoder")
    ap.add_argument("--gold-k", action="store_true", help="K = the number of gold labels")
    ap.add_argument("--relabel", default="", help="TAG: the label rule on TAG's saved fits")
    ap.add_argument("--compare", default="", help="TAG: print the tables of a relabelled run")
    ap.add_argument("--table", default="", help="corpora whose every label is listed")
    args = ap.parse_args()
    if args.compare:
        compare(args)
    elif args.relabel:
        relabel(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
