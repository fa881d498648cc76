"""Indexes: the embedding model, vector and BM25 indexes, and hybrid retrieval."""
