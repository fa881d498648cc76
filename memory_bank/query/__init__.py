"""Answering a question over a store: the navigation agent, its tools and policies, the answer role and the extractive answer."""
