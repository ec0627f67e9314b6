"""Corpus cases for NumPy coverage: statistics (registered into ``corpus.CASES``)."""
