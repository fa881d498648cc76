"""Claims: what a question asks for (the kind of value that answers it)."""
