"""The memorize role: a chunk becomes a structured memory (title, memory, tldr, keywords, context)."""
