"""Corpus cases for NumPy coverage: ufuncs (registered into ``corpus.CASES``)."""
