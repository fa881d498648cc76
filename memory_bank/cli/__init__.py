"""The `memory-bank` command line and its display: the edge, which picks where an ingest runs
(in-process or Ray) and starts the Serve app."""
