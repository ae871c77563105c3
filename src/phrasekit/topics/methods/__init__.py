"""The topic methods, scikit-learn style: document clusters (``documents``, the default, with
its ``sampling`` and ``placing``), phrase clusters (``model``, with ``context``), ``pntm``,
``uctopic`` (UCTopic with CCL) and the ``lda`` baselines."""
