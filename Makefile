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

.PHONY: install run test test-quick lint format eval bench clean cluster-demo browser

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	# torch first and pinned: anything else would pull a multi-GB CUDA build
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -r requirements.txt
	$(PY) -m pip install --no-deps -e .
	# the ONNX export of the packaged embedding model, made once into the user cache
	$(VENV)/bin/memory-bank prepare-model
	touch $(STAMP)

install: $(STAMP)

run: install
	$(VENV)/bin/memory-bank ingest data/sample --store $(STORE)
	$(VENV)/bin/memory-bank ask "$(QUESTION)" --store $(STORE)
	$(VENV)/bin/memory-bank verify --store $(STORE)

# Lint, format check and the import rules (the domain never imports Ray, FastAPI or the Ray
# layer), then every test.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

# The browser tests (tests/browser) drive Debian's Chromium through Playwright, never a browser
# that Playwright downloads: installed here when missing and we are root (as in CI); elsewhere
# they skip and say why.
browser:
	@if ! test -x /usr/bin/chromium && test "$$(id -u)" = 0 && command -v apt-get >/dev/null; then \
		echo "installing Debian's chromium for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	fi

test: lint browser
	$(PY) -m pytest -q

# The same without the 100k-size inputs (marked `slow`): for the edit-test loop.
test-quick: lint browser
	$(PY) -m pytest -q -m "not slow"

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# A head and two worker nodes on this machine (1 CPU each, own ports and temp dirs), the sample
# ingested with `ray job submit --working-dir .`, where its tasks ran, a question, teardown by PID.
cluster-demo: install
	$(PY) -m pipeline.cluster_demo --store .memory/cluster-demo --question "$(QUESTION)"

eval: install
	$(PY) bench/evaluate.py --all-dev --out .eval

clean:
	rm -rf .memory .eval
