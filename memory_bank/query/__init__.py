"""Answering and searching a store: the query service, the navigation agent, its tools and the extractive answer."""
