"""Corpus cases for NumPy coverage: construction (registered into ``corpus.CASES``)."""
