"""Text handling: reading sources, token counting, sentence splitting and chunking."""
