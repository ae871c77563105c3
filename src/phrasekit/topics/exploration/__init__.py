"""What a user does with fitted document topics: keep, name and search them (``explore``),
merge, reduce and nest them (``reshape``), slice them by time and class (``slices``), guide them
by seeds or zero-shot names (``guided``), and BERTopic's everyday names (``verbs``)."""
