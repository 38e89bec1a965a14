# paramill: `make run` runs the default pipeline on the shipped sample (CPU, minutes);
# `make test` runs the test suite. Both create .venv and install everything if needed.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.paramill-installed
CORES ?= 2
# make test runs the suite in this many pytest-xdist workers (tests/conftest.py groups them)
TEST_WORKERS ?= 2
# pip's output is kept short; set PIP_QUIET= to see it all.
PIP_QUIET ?= -q
PIP := $(BIN)/python -m pip $(PIP_QUIET) --disable-pip-version-check
# the exact versions the suite passed with (`make lock` writes it; pyproject.toml has ranges)
CONSTRAINTS := constraints.txt

.PHONY: install run test docs report lint lock clean-work help

help:
	@echo "make run     install (if needed) and run the default pipeline on data/sample/"
	@echo "make test    install (if needed) and run the test suite"
	@echo "make docs    build the manual into site/ (mkdocs --strict)"
	@echo "make report  write report.html for the last run"
	@echo "make lint    snakemake --lint"
	@echo "make lock    write constraints.txt from .venv (after a dependency change)"

install: $(STAMP)

$(STAMP): pyproject.toml $(CONSTRAINTS) Makefile scripts/build-kenlm.sh scripts/install-browser.sh
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	@# KenLM's C++ build and the report test's browser (Debian packages) run beside pip's
	@# installs, which use one core: their output is shown when they end (all of it on an error);
	@# in a session of their own (setsid, where there is one), so a failed pip stops the compiler too.
	@# torch first, by itself, so the resolver takes the pinned wheel (CPU here). Where torch
	@# is a CUDA build (GPU nodes, the container), also the gpu extra: CUDA 12's cuBLAS for
	@# CTranslate2 (paramill.nmt.engine loads it); the CPU torch here skips it.
	@# opennmt-py declares torch<2.3; its real imports are in pyproject.toml.
	@set -e; log=$(VENV)/.native-install.log; \
	  echo "bash scripts/build-kenlm.sh $(VENV) && bash scripts/install-browser.sh  (beside pip; output: $$log)"; \
	  $$(command -v setsid) bash -c 'bash scripts/build-kenlm.sh "$$1" && bash scripts/install-browser.sh' _ $(VENV) \
	    > $$log 2>&1 & native=$$!; \
	  trap 'kill -- -$$native 2>/dev/null || true' EXIT; \
	  set -x; \
	  $(PIP) install -c $(CONSTRAINTS) torch==2.13.0; \
	  $(PIP) install -c $(CONSTRAINTS) -e ".[test,docs$$($(BIN)/python -c 'import torch; print(",gpu" if torch.version.cuda else "")')]"; \
	  $(PIP) install -c $(CONSTRAINTS) --no-deps opennmt-py==3.5.1; \
	  { set +x; } 2>/dev/null; \
	  if wait $$native; then cat $$log; trap - EXIT; else cat $$log >&2; echo "KenLM build or browser install failed (above)" >&2; exit 1; fi
	@touch $(STAMP)

run: install
	$(BIN)/snakemake --cores $(CORES) --show-failed-logs

test: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

# (the two variables silence a notice about MkDocs' future that mkdocs-material prints)
docs: install
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict --quiet --site-dir site

report: install
	$(BIN)/snakemake --cores $(CORES) --report report.html

lock: install
	$(BIN)/python scripts/lock.py > $(CONSTRAINTS).new && mv $(CONSTRAINTS).new $(CONSTRAINTS)

lint: install
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python scripts/lint.py

clean-work:
	rm -rf work results .snakemake logs
