"""Corpus cases for NumPy coverage: sorting (registered into ``corpus.CASES``)."""
