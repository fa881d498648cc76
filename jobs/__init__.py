"""Entry points for `python -m jobs.<name>`, the same commands `ray job submit` runs."""
