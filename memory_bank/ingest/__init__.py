"""Ingest: the stage functions, the runner that chains them, and what an ingest starts from."""
