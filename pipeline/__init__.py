"""Ray Data wiring of the ingest stages: thin adapters from batches to domain calls."""
