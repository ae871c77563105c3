"""Data shared by the training methods' builders: the word, phrase and paraphrase sources
(``sources``), the benchmark-leakage filter (``leakage``), seeded corpus samples
(``corpus_sampling``) and the phrases of a corpus (``corpus_phrases``)."""
