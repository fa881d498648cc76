"""The user-facing edge: the `MemoryBank` facade, the `memory-bank` command line and its display."""
