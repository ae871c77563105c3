"""Choose the defaults of phrasekit's BERTopic plug-ins on development corpora: one BERTopic
fit per corpus (the protocol of ``topics_vs_peers.py``, its prepared document vectors), then
``update_topics`` with each vectorizer / representation setting, scored as that script
scores (NPMI, diversity, absent terms) plus the phrases among each topic's top-10 terms.

*update s* is the wall time of ``update_topics`` (c-TF-IDF and naming on the same topics):
the cost a setting adds is its time minus the c-TF-IDF row's, set against the fit's.

    python benchmarks/topics/topics_vs_peers.py --out runs/tvp --corpora bbc_news \\
        --methods bertopic --prepare-only
    python benchmarks/topics/bertopic_plugins_dev.py --out runs/tvp --corpora bbc_news
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import topics_vs_peers as tvp

log = logging.getLogger("bertopic_plugins_dev")


def _shipped() -> tuple[tuple[int, int], Any]:
    from phrasekit.integrations import vectorizer as pv

    return (pv.SPREAD_STRETCHES, pv.SPREAD_MIN), pv.ctfidf_idf


#: Read once: a setting that varies the stretches or drops the cap's idf sets the module's
#: constants while it runs.
_SHIPPED_SPREAD, _SHIPPED_IDF = _shipped()


def _no_idf(X: Any) -> None:
    """No idf: the cap ranks a topic's phrases by count alone (as before the idf)."""
    return None


def settings() -> dict[str, tuple[Any, Any]]:
    """Name -> (vectorizer, representation model) factories' results."""
    from sklearn.feature_extraction.text import CountVectorizer

    from phrasekit.integrations import KeyphraseRepresentation, PhraseVectorizer
    from phrasekit.integrations import vectorizer as pv

    shipped = _SHIPPED_SPREAD

    def ctfidf() -> Any:
        return CountVectorizer(ngram_range=(1, 3), stop_words="english")

    def phrases(spread: tuple[int, int] = shipped, by_count: bool = False,
                **kwargs: Any) -> tuple[str, tuple[Any, Any]]:
        """A PhraseVectorizer setting; ``spread``: min_df="auto"'s stretches and how many of
        them a term of one topic needs (module constants, set while this setting is built
        and fitted); ``by_count``: the cap ranks phrases by count, without the idf."""
        args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        name = f"PhraseVectorizer({args})" + ("" if spread == shipped else
                                              f" {spread[1]} of {spread[0]} stretches")
        name += " cap by count" if by_count else ""

        def build() -> Any:
            pv.SPREAD_STRETCHES, pv.SPREAD_MIN = spread
            pv.ctfidf_idf = _no_idf if by_count else _SHIPPED_IDF
            return PhraseVectorizer(**kwargs)
        return name, (build, None)

    grid = [{}, {"max_weighted": None, "phrase_weight": 5},
            *({"max_weighted": m, "phrase_weight": 5} for m in (3, 4, 5)),
            {"max_weighted": 4, "min_phrase_count": 2}, {"max_weighted": 4, "min_phrase_count": 4},
            {"phrase_weight": 1}, {"words": False},
            *({"repeat_gap": g} for g in (None, 50, 100, 400)), {"min_phrase_count": 4},
            *({"min_df": 1, **kw} for kw in ({}, {"phrase_weight": 1}, {"min_phrase_count": 4},
                                             {"max_weighted": 5}, {"phrase_weight": 8},
                                             {"repeat_gap": 400},
                                             {"min_phrase_count": 4, "max_weighted": 5})),
            {"min_df": 2}, *({"spread": sp} for sp in ((10, 3), (10, 4), (10, 5), (20, 4))),
            {"by_count": True}]
    return {
        "c-TF-IDF 1-3grams": (ctfidf, None),
        **dict(phrases(**kwargs) for kwargs in grid),
        "KeyphraseRepresentation()": (ctfidf, KeyphraseRepresentation),
        "KeyphraseRepresentation(max_df=0.2)": (ctfidf,
                                                lambda: KeyphraseRepresentation(max_df=0.2)),
    }


def document_vectors(corpus: str, out: Path, texts: list[str], embedder: str) -> np.ndarray:
    """``topics_vs_peers``' prepared MiniLM vectors (``embedder`` minilm), or the average
    word vectors of ``embedder`` (glove-50d: seconds on a busy CPU; the same for every
    setting, so the settings still compare on the same topics)."""
    if embedder == "minilm":
        return np.load(out / "emb" / corpus / "docs.npy")
    import phrasekit

    return phrasekit.load(embedder).encode(texts, batch_size=256)


def run_corpus(corpus: str, out: Path, root: Path, seed: int, only: list[str],
               embedder: str = "minilm") -> list[dict]:
    """Fit once, then score every setting on the same topics."""
    from phrasekit.text import tokenize

    docs, labels, mask = tvp.load_corpus(root, corpus)
    texts = [d.text for d in docs]
    token_docs = [tokenize(t) for t in texts]
    embeddings = document_vectors(corpus, out, texts, embedder)
    model = tvp.bertopic_model(seed)
    model.verbose = False
    t0 = time.perf_counter()
    topic_labels, _ = model.fit_transform(texts, embeddings=embeddings)
    fit_s = time.perf_counter() - t0
    rows = []
    for name, (vectorizer, representation) in settings().items():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        model.update_topics(texts, vectorizer_model=vectorizer(),
                            representation_model=representation() if representation else None,
                            top_n_words=tvp.TOP_N)
        update_s = time.perf_counter() - t0
        ids = sorted(t for t in set(topic_labels) if t != -1)
        found = {"labels": [int(x) for x in topic_labels],
                 "topics": [[w for w, _ in model.get_topic(t) if w] for t in ids]}
        rec = {"corpus": corpus, "setting": name, "fit_s": round(fit_s, 1),
               "update_s": round(update_s, 1), **tvp.score(found, token_docs, labels, mask)}
        rows.append(rec)
        log.info("%s %s: NPMI %.3f, diversity %.3f, phrases %s, update %.1f s (fit %.1f s)",
                 corpus, name, rec["npmi"], rec["diversity"], tvp._phrases(rec), update_s,
                 fit_s)
    return rows


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/tvp")
    parser.add_argument("--corpora", default="bbc_news")
    parser.add_argument("--corpora-dir", default=None)
    parser.add_argument("--settings", default="", help="names separated by ; (default all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embedder", default="minilm",
                        help="minilm (topics_vs_peers' prepared vectors) or a phrasekit model "
                             "whose vectors are computed here (glove-50d)")
    args = parser.parse_args()
    from phrasekit.settings import corpora_dir

    out = Path(args.out)
    root = Path(args.corpora_dir) if args.corpora_dir else corpora_dir()
    only = [s.strip() for s in args.settings.split(";") if s.strip()]
    rows = [r for c in args.corpora.split(",")
            for r in run_corpus(c, out, root, args.seed, only, args.embedder)]
    lines = ["| corpus | setting | NPMI | diversity | absent | phrases | update s | fit s |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['corpus']} | {r['setting']} | {tvp._f(r['npmi'])} | "
              f"{tvp._f(r['diversity'])} | {100 * r['absent_share']:.0f}% | {tvp._phrases(r)} "
              f"| {r['update_s']:.1f} | {r['fit_s']:.1f} |" for r in rows]
    out.mkdir(parents=True, exist_ok=True)
    (out / "plugins_dev.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
