# Two commands on a fresh machine: `make run` (install + ingest the sample corpus + ask) and
# `make test` (install + the whole test suite). Both create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
STORE ?= .memory/sample
QUESTION ?= What were BERT's two pre-training model sizes and who released it?
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export RAY_USAGE_STATS_ENABLED := 0

.PHONY: install run test eval bench clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	# torch first and pinned: anything else would pull a multi-GB CUDA build
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -r requirements.txt
	$(PY) -m pip install --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

run: install
	$(VENV)/bin/memory-bank ingest data/sample --store $(STORE)
	$(VENV)/bin/memory-bank ask "$(QUESTION)" --store $(STORE)

test: install
	$(PY) -m pytest -q

eval: install
	$(PY) bench/evaluate.py --all-dev --out .eval

clean:
	rm -rf .memory .eval
