"""Which student places documents best: classifiers compared on the same fitted topics.

For each ``corpus:fit_docs`` pair, ``DocumentTopicModel`` is fitted once with MiniLM on its
seeded sample (vectors cached in ``--cache``); then every student variant is trained on the
sample's topics and places the other documents. Reported per variant: NMI against the gold
labels of the placed documents and of all documents, and, where ``--encoder-placement`` is
given, the ARI between the variant's placement and the transformer's (every document encoded
and put in its nearest topic). The first row, ``TopicStudent``, is the shipped student.

    python benchmarks/topics/topics_student_variants.py \\
        --runs 20newsgroups:4000,ag_news_test:2000,bbc_news:1000 \\
        --encoder-placement ag_news_test,bbc_news
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.naive_bayes import ComplementNB
from sklearn.svm import LinearSVC

sys.path.insert(0, str(Path(__file__).parent))
from topics_fit_sample import cached_args
from topics_vs_peers import load_corpus

from phrasekit.settings import shared_dir
from phrasekit.topics import DocumentTopicModel


def _tfidf(ngrams: tuple[int, int], stop: str | None = None) -> TfidfVectorizer:
    return TfidfVectorizer(sublinear_tf=True, ngram_range=ngrams, min_df=2,
                           max_features=200_000, stop_words=stop, dtype=np.float32)


#: name -> (vectorizer, classifier) factories.
VARIANTS = {
    "logistic regression C=10, words+pairs": (lambda: _tfidf((1, 2)),
                                               lambda: LogisticRegression(C=10, max_iter=1000)),
    "logistic regression C=100, words+pairs": (lambda: _tfidf((1, 2)),
                                                lambda: LogisticRegression(C=100, max_iter=1000)),
    "logistic regression C=10, balanced": (lambda: _tfidf((1, 2)), lambda: LogisticRegression(
        C=10, max_iter=1000, class_weight="balanced")),
    "logistic regression C=10, stop words": (lambda: _tfidf((1, 2), "english"),
                                             lambda: LogisticRegression(C=10, max_iter=1000)),
    "linear SVM C=0.3, words+pairs": (lambda: _tfidf((1, 2)), lambda: LinearSVC(C=0.3)),
    "complement NB a=1, words": (lambda: _tfidf((1, 1)), lambda: ComplementNB(alpha=1.0)),
    "complement NB a=0.3, words+pairs": (lambda: _tfidf((1, 2)), lambda: ComplementNB(alpha=0.3)),
}


def run(corpus: str, n_fit: int, args: argparse.Namespace) -> None:
    docs, gold, mask = load_corpus(shared_dir() / "corpora", corpus)
    mask = np.asarray(mask)
    g = np.full(len(docs), "", dtype=object)
    g[np.flatnonzero(mask)] = gold
    cache = str(Path(args.cache) / corpus)
    model = DocumentTopicModel(encoder="minilm", fit_docs=n_fit, cache_dir=cache,
                               random_state=args.seed).fit(docs)
    labels = np.asarray(model.doc_labels_)
    rest = np.setdiff1d(np.arange(len(docs)), model.sample_index_)
    encoder = None
    if corpus in args.encoder_placement.split(","):
        encoder = np.asarray(DocumentTopicModel(
            encoder="minilm", fit_docs=n_fit, cache_dir=cache, placement="encoder",
            random_state=args.seed).fit(docs).doc_labels_)
    train = model.sample_index_[labels[model.sample_index_] >= 0]
    texts = [d.text for d in docs]
    placed_mask = mask.copy()
    placed_mask[model.sample_index_] = False

    def row(name: str, placed: np.ndarray) -> None:
        out = labels.copy()
        out[rest] = placed
        ari = f"{adjusted_rand_score(encoder[rest], placed):.3f}" if encoder is not None else "–"
        print(f"| {corpus} | {n_fit} | {model.n_topics_} | {name} | "
              f"{normalized_mutual_info_score(g[placed_mask], out[placed_mask]):.3f} | "
              f"{normalized_mutual_info_score(g[mask], out[mask]):.3f} | {ari} |", flush=True)

    row("TopicStudent (shipped)", labels[rest])
    for name, (vec, clf) in VARIANTS.items():
        v = vec()
        c = clf().fit(v.fit_transform([texts[i] for i in train]), labels[train])
        row(name, c.predict(v.transform([texts[i] for i in rest])))


def main() -> None:
    args = cached_args(__doc__, {"--runs": "20newsgroups:4000,ag_news_test:2000,bbc_news:1000",
                                 "--encoder-placement": "ag_news_test,bbc_news"})
    print("| corpus | fit docs | K | student | NMI placed | NMI all | ARI to transformer "
          "(placed) |\n|---|---:|---:|---|---:|---:|---:|", flush=True)
    for spec in args.runs.split(","):
        corpus, n_fit = spec.split(":")
        run(corpus, int(n_fit), args)


if __name__ == "__main__":
    main()
