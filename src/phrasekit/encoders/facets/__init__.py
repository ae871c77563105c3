"""Multi-facet codebook embeddings (Chang et al., "Multi-facet embeddings of phrases and
sentences using sparse coding"): a transformer predicts K facet vectors of a phrase or sentence
in a frozen word space, trained to reconstruct the words around it by non-negative sparse
coding.

- ``words``: the word space (packaged GloVe 6B 50d) and its tokenizer;
- ``data``: training examples from the shared corpora (phrase windows, neighbour sentences);
- ``config``: the model's architecture settings and the NNSC solvers (no torch);
- ``model``: the sequence-to-embeddings network and its model folder;
- ``loss``: the NNSC loss (Eq. 1-2);
- ``train``: the resumable CPU training loop;
- ``scores``: Emb / SC (Eq. 5), Asym (Eq. 7), word importance (Eq. 6), summary objective (Eq. 8);
- ``encoder``: ``FacetEncoder``, the user-facing model (``phrasekit.load(folder)``).
"""
