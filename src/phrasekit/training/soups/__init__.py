"""Model soups across methods: :func:`soup_models` reads the model folders' format and runs the
soup of the method that made them (PEARL's or Phrase-BERT's), so it sits above the methods."""
