"""Keeping, applying, reshaping and searching fitted document topics, measured (issue 49).

Every fit is ``DocumentTopicModel`` as ``phrasekit topics CORPUS`` runs it (``run_topics``
with the CLI's default encoder, MiniLM at ``auto`` precision, seed 0, the ``auto`` sample;
document vectors in phrasekit's vector cache), on one thread. Parts (``--parts``):

- ``persist`` (bbc_news): the fitted model is saved, loaded, and ``transform`` places the
  corpus again: documents whose topic differs from the fit's (those of the fit's sample and
  those the student placed apart). Then ``phrasekit topics apply MODEL CORPUS`` (the CLI, in
  a subprocess): the top-level keys of its ``topics.json`` that differ from the fit's.
- ``reduce`` (bbc_news, gold K 5; ag_news_test, gold K 4): NMI against the gold labels of
  the default fit, of ``reduce_topics(gold K)`` on it, and of a fit with ``n_topics=gold K``
  (``-k``). Target: the reduced NMI within 0.02 of the ``-k`` one.
- ``search`` (ag_news_test, the default fit): ``find_topics(class name)`` for each class;
  the gold topic of a class is the topic holding most of its documents.
- ``hierarchy`` (20newsgroups): ``hierarchical_topics()`` cut at 6 clusters (its merges
  applied closest first until 6 remain), NMI against the six subject areas (``SUBJECTS``);
  beside it BERTopic 0.17's ``hierarchical_topics`` cut the same way, BERTopic run as in
  ``topics_vs_peers`` (``bertopic_model``) on the same document vectors. Outliers (-1) count
  as one cluster. ``--no-bertopic`` leaves BERTopic out.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 19 python benchmarks/topics/topics_reshape.py \\
        --out runs/topics_reshape --parts persist,reduce,search,hierarchy

Results are merged into ``OUT/results.json`` (a part run again replaces its entry); the
tables of every part measured so far are printed in Markdown.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from topics_vs_peers import ONE_THREAD, bertopic_model, load_corpus

PARTS = ("persist", "reduce", "search", "hierarchy")
GOLD_K = {"bbc_news": 5, "ag_news_test": 4}
#: The six subject areas of 20 Newsgroups, by newsgroup prefix (first match wins).
SUBJECTS = (("comp.", "comp"), ("rec.", "rec"), ("sci.", "sci"),
            ("talk.politics.", "politics"), ("talk.religion.", "religion"),
            ("alt.atheism", "religion"), ("soc.religion.", "religion"),
            ("misc.forsale", "forsale"))


def fit_default(corpus: Path, out: Path, **kwargs: Any) -> tuple[Any, float]:
    """``phrasekit topics CORPUS --no-report``'s fit (outputs in ``out``) and its seconds."""
    from phrasekit.registry import DOCUMENTS_MODEL
    from phrasekit.settings import vector_cache_dir
    from phrasekit.topics import run_topics

    t0 = time.perf_counter()
    tm, _ = run_topics(corpus, out, model=DOCUMENTS_MODEL, cache_dir=vector_cache_dir(),
                       report=False, quiet=True, random_state=0, **kwargs)
    return tm, time.perf_counter() - t0


def nmi(doc_labels: Any, gold: list) -> float:
    """NMI of document topics (-1 one cluster) against gold labels, rounded."""
    from phrasekit.topics.outputs.metrics import labels_nmi

    return round(labels_nmi([int(x) for x in doc_labels], gold), 4)


def placed(shares: np.ndarray) -> np.ndarray:
    """Each document's topic from ``transform``'s shares (-1 for a row of zeros)."""
    return np.where(shares.max(axis=1) > 0, shares.argmax(axis=1), -1)


def part_persist(root: Path, out: Path) -> dict:
    """save -> load -> transform against the fit, and ``topics apply`` against the fit."""
    from phrasekit.topics import DocumentTopicModel

    corpus = root / "bbc_news"
    docs, _, _ = load_corpus(root, "bbc_news")
    tm, fit_s = fit_default(corpus, out / "bbc_fit")
    tm.save(out / "bbc_model")
    t0 = time.perf_counter()
    again = placed(DocumentTopicModel.load(out / "bbc_model").transform(docs))
    transform_s = time.perf_counter() - t0
    fitted = np.asarray(tm.doc_labels_)
    in_sample = np.zeros(len(docs), dtype=bool)
    in_sample[tm.sample_index_] = True
    differ = again != fitted
    cli = Path(sys.executable).with_name("phrasekit")
    t0 = time.perf_counter()
    run = subprocess.run([str(cli), "topics", "apply", str(out / "bbc_model"), str(corpus),
                          "--out", str(out / "bbc_apply"), "--no-report", "-q"],
                         capture_output=True, text=True, check=True)
    apply_s = time.perf_counter() - t0
    fit_json = json.loads((out / "bbc_fit" / "topics.json").read_text())
    applied = json.loads((out / "bbc_apply" / "topics.json").read_text())
    return {"corpus": "bbc_news", "n_docs": len(docs), "n_topics": tm.n_topics_,
            "n_sample": int(in_sample.sum()), "fit_s": round(fit_s, 1),
            "transform_s": round(transform_s, 1), "differ": int(differ.sum()),
            "differ_in_sample": int((differ & in_sample).sum()),
            "differ_student": int((differ & ~in_sample).sum()),
            "apply_output": run.stdout.strip(), "apply_s": round(apply_s, 1),
            "topics_json_keys_differing": sorted(k for k in set(fit_json) | set(applied)
                                                 if fit_json.get(k) != applied.get(k)),
            **doc_differences(fit_json["doc_topics"], applied["doc_topics"], in_sample)}


def doc_differences(fit: list[dict], applied: list[dict], in_sample: np.ndarray) -> dict:
    """How many documents of ``topics.json`` differ between fit and apply: in topic, in any
    field, and in any field among the fit's sample."""
    if [d["id"] for d in fit] != [d["id"] for d in applied]:
        raise RuntimeError("fit and apply list other documents")
    other = np.array([a != b for a, b in zip(fit, applied, strict=True)])
    topic = np.array([a["topic"] != b["topic"] for a, b in zip(fit, applied, strict=True)])
    return {"apply_docs_topic_differs": int(topic.sum()),
            "apply_docs_differ": int(other.sum()),
            "apply_docs_differ_in_sample": int((other & in_sample).sum())}


def part_reduce_and_search(root: Path, out: Path, parts: set[str]) -> dict:
    """``reduce_topics(gold K)`` against ``-k gold K``, and ``find_topics`` by class name."""
    results: dict[str, Any] = {}
    for corpus, gold_k in GOLD_K.items():
        if "reduce" not in parts and corpus != "ag_news_test":
            continue
        _, gold, _ = load_corpus(root, corpus)
        tm, fit_s = fit_default(root / corpus, out / f"{corpus}_fit")
        if "search" in parts and corpus == "ag_news_test":
            results["search"] = search_classes(tm, gold)
        if "reduce" not in parts:
            continue
        row = {"corpus": corpus, "gold_k": gold_k, "k_chosen": tm.n_topics_,
               "nmi_chosen": nmi(tm.doc_labels_, gold), "fit_s": round(fit_s, 1)}
        if tm.n_topics_ >= gold_k:
            t0 = time.perf_counter()
            reduced = copy.deepcopy(tm).reduce_topics(gold_k)
            row["reduce_s"] = round(time.perf_counter() - t0, 1)
            row["nmi_reduced"] = nmi(reduced.doc_labels_, gold)
        fixed, fixed_s = fit_default(root / corpus, out / f"{corpus}_k", n_topics=gold_k)
        row.update({"nmi_k": nmi(fixed.doc_labels_, gold), "fit_k_s": round(fixed_s, 1)})
        results.setdefault("reduce", []).append(row)
    return results


def search_classes(tm: Any, gold: list) -> list[dict]:
    """For each gold class: its gold topic and what ``find_topics(class)`` returns first."""
    labels = np.asarray(tm.doc_labels_)
    gold_arr = np.asarray(gold)
    rows = []
    for name in dict.fromkeys(gold):
        ids = labels[(gold_arr == name) & (labels >= 0)]
        gold_topic = int(np.bincount(ids, minlength=tm.n_topics_).argmax())
        found = tm.find_topics(name, k=3)
        first = found[0][0]
        rows.append({"class": name, "first": first, "score": found[0][1],
                     "label": tm.topic_label(first), "gold_topic": gold_topic,
                     "gold_label": tm.topic_label(gold_topic), "hit": first == gold_topic,
                     "top3": [t for t, _ in found]})
    return rows


def subject(newsgroup: str) -> str:
    """The subject area of a newsgroup (``SUBJECTS``)."""
    return next(area for prefix, area in SUBJECTS if newsgroup.startswith(prefix))


def cut(merges: list[list[int]], n_leaves: int, n_clusters: int) -> dict[int, int]:
    """Leaf topic -> cluster after the first ``n_leaves - n_clusters`` merges (each merge given
    as all the leaves below the new node, closest merge first)."""
    group = {t: t for t in range(n_leaves)}
    for leaves in merges[: max(n_leaves - n_clusters, 0)]:
        root = min(group[t] for t in leaves)
        for t in leaves:
            group[t] = root
    return group


def cut_labels(doc_labels: Any, group: dict[int, int]) -> list[int]:
    """Documents' clusters from their topics (-1 stays -1)."""
    return [group[int(t)] if int(t) >= 0 else -1 for t in doc_labels]


def part_hierarchy(root: Path, out: Path, with_bertopic: bool) -> dict:
    """The topic tree cut at 6 against the six subject areas, phrasekit and BERTopic."""
    docs, gold, _ = load_corpus(root, "20newsgroups")
    areas = [subject(g) for g in gold]
    mapping = {g: subject(g) for g in sorted(set(gold))}
    tm, fit_s = fit_default(root / "20newsgroups", out / "20ng_fit")
    t0 = time.perf_counter()
    rows = tm.hierarchical_topics()
    tree_s = time.perf_counter() - t0
    six = cut_labels(tm.doc_labels_, cut([r["topics"] for r in rows], tm.n_topics_, 6))
    res: dict[str, Any] = {"mapping": mapping, "phrasekit": {
        "n_topics": tm.n_topics_, "fit_s": round(fit_s, 1), "tree_s": round(tree_s, 1),
        "nmi_flat_20": nmi(tm.doc_labels_, gold), "nmi_flat_6": nmi(tm.doc_labels_, areas),
        "nmi_cut6_6": nmi(six, areas), "unassigned": float(np.mean(np.asarray(six) < 0)),
        "clusters": describe(six, areas),
        "top_nodes": [{k: r[k] for k in ("topics", "distance", "label")} for r in rows[-5:]]}}
    if with_bertopic:
        res["bertopic"] = bertopic_cut(docs, areas, gold, tm)
    return res


def describe(clusters: list[int], areas: list[str]) -> list[dict]:
    """Each cluster's size and its largest subject area with that area's share."""
    out = []
    for c in sorted(set(clusters)):
        inside = [a for a, x in zip(areas, clusters, strict=True) if x == c]
        top = max(set(inside), key=inside.count)
        out.append({"cluster": c, "docs": len(inside), "area": top,
                    "share": round(inside.count(top) / len(inside), 3)})
    return out


def bertopic_cut(docs: list, areas: list[str], gold: list, tm: Any) -> dict:
    """BERTopic on phrasekit's document vectors, its hierarchy cut at 6."""
    from phrasekit.encoders.cache import encode_documents
    from phrasekit.settings import vector_cache_dir

    texts = [d.text for d in docs]
    t0 = time.perf_counter()
    X = encode_documents(tm.encoder_, texts, tm.chunk_size, tm.max_chunks,
                         cache_dir=vector_cache_dir(), max_words=tm.max_words)
    encode_s = time.perf_counter() - t0
    model = bertopic_model(seed=0)
    t0 = time.perf_counter()
    labels, _ = model.fit_transform(texts, embeddings=X)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    hier = model.hierarchical_topics(texts).sort_values("Distance")
    tree_s = time.perf_counter() - t0
    n = int(max(labels)) + 1
    six = cut_labels(labels, cut([list(t) for t in hier["Topics"]], n, 6))
    return {"n_topics": n, "encode_s": round(encode_s, 1), "fit_s": round(fit_s, 1),
            "tree_s": round(tree_s, 1), "nmi_flat_20": nmi(labels, gold),
            "nmi_flat_6": nmi(labels, areas), "nmi_cut6_6": nmi(six, areas),
            "unassigned": float(np.mean(np.asarray(labels) < 0)),
            "clusters": describe(six, areas)}


def tables(res: dict) -> str:
    """Markdown tables of the parts measured."""
    lines: list[str] = []
    if p := res.get("persist"):
        lines += ["| corpus | docs (sample) | K | transform: topic differs (sample / "
                  "student-placed) | apply: doc_topics topic differs / any field (sample) | "
                  "apply: topics.json keys differing |", "|---|---|---|---|---|---|",
                  f"| {p['corpus']} | {p['n_docs']} ({p['n_sample']}) | {p['n_topics']} | "
                  f"{p['differ']} ({p['differ_in_sample']} / {p['differ_student']}) | "
                  f"{p['apply_docs_topic_differs']} / {p['apply_docs_differ']} "
                  f"({p['apply_docs_differ_in_sample']}) | "
                  f"{', '.join(p['topics_json_keys_differing']) or 'none'} |", "",
                  f"`topics apply`: {p['apply_output']}", ""]
    if rows := res.get("reduce"):
        lines += ["| corpus | gold K | chosen K | NMI chosen | NMI reduce_topics(gold K) | "
                  "NMI -k gold K | difference |", "|---|---|---|---|---|---|---|"]
        for r in rows:
            red = r.get("nmi_reduced")
            diff = "–" if red is None else f"{red - r['nmi_k']:+.3f}"
            lines.append(f"| {r['corpus']} | {r['gold_k']} | {r['k_chosen']} | "
                         f"{r['nmi_chosen']:.3f} | {'–' if red is None else f'{red:.3f}'} | "
                         f"{r['nmi_k']:.3f} | {diff} |")
        lines.append("")
    if rows := res.get("search"):
        lines += ["| class | first topic | its label | gold topic | first = gold | top 3 |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {r['class']} | {r['first']} | {r['label']} | {r['gold_topic']} "
                  f"({r['gold_label']}) | {'yes' if r['hit'] else 'no'} | {r['top3']} |"
                  for r in rows]
        lines.append("")
    if h := res.get("hierarchy"):
        lines += ["| 20newsgroups | topics | NMI flat vs 20 groups | NMI flat vs 6 areas | "
                  "NMI cut at 6 vs 6 areas | unassigned |", "|---|---|---|---|---|---|"]
        for name in ("phrasekit", "bertopic"):
            if r := h.get(name):
                lines.append(f"| {name} | {r['n_topics']} | {r['nmi_flat_20']:.3f} | "
                             f"{r['nmi_flat_6']:.3f} | {r['nmi_cut6_6']:.3f} | "
                             f"{100 * r['unassigned']:.1f}% |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    """Run the parts asked, merge them into ``OUT/results.json``, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/topics_reshape")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--corpora-dir", default=None)
    parser.add_argument("--no-bertopic", action="store_true")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if unknown := parts - set(PARTS):
        raise SystemExit(f"unknown parts {sorted(unknown)}; choose from {PARTS}")
    for k, v in ONE_THREAD.items():
        os.environ.setdefault(k, v)
    import torch

    torch.set_num_threads(1)
    from phrasekit.io import write_json
    from phrasekit.settings import corpora_dir

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(args.corpora_dir) if args.corpora_dir else corpora_dir()
    path = out / "results.json"
    res = json.loads(path.read_text()) if path.is_file() else {}
    if "persist" in parts:
        res["persist"] = part_persist(root, out)
        write_json(path, res)
    if parts & {"reduce", "search"}:
        res.update(part_reduce_and_search(root, out, parts))
        write_json(path, res)
    if "hierarchy" in parts:
        res["hierarchy"] = part_hierarchy(root, out, not args.no_bertopic)
        write_json(path, res)
    print(tables(res))


if __name__ == "__main__":
    main()
