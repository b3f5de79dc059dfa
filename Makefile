# Everyday tasks, mirroring the steps of .ci/run. `make help` lists them.
#
# PYTHON is the interpreter of your development venv (an activated venv's `python` by
# default); the targets install into it.
PYTHON ?= python
BACKENDS ?= rust python

.PHONY: help clean-so build-dev build-prod test test-rust test-python lint fmt bench vectors ci clean

help:
	@echo "build-dev    debug build of the Rust engine into the venv (maturin develop), with the extras"
	@echo "build-prod   release build installed into the venv (what benchmarks need)"
	@echo "test         the suite against the installed package, once per engine ($(BACKENDS))"
	@echo "lint         cargo fmt/clippy, ruff, mypy --strict, the import-layer contract"
	@echo "fmt          apply cargo fmt and ruff format"
	@echo "bench        histcore bench and the pytest-benchmark suites (release build first)"
	@echo "vectors      cargo test and the pytest golden-vector tests"
	@echo "ci           the whole CI run from scratch (bash .ci/run)"

# Stale extension modules from earlier editable builds could shadow the new one.
clean-so:
	rm -f python/histcore/_core*.so python/histcore/_core*.pyd

build-dev: clean-so
	$(PYTHON) -m pip install --quiet "maturin>=1.9.4,<2"
	$(PYTHON) -m maturin develop --extras test,openai-agents,postgres,dev

build-prod: clean-so
	$(PYTHON) -m pip install --quiet ".[test,openai-agents,postgres,dev]"

test: $(addprefix test-,$(BACKENDS))

test-rust:
	HISTCORE_BACKEND=rust PYTHON=$(PYTHON) scripts/test.sh

test-python:
	HISTCORE_BACKEND=python PYTHON=$(PYTHON) scripts/test.sh

lint:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	$(PYTHON) -m ruff check python tests benches
	$(PYTHON) -m ruff format --check python tests benches
	$(PYTHON) -m mypy --strict
	cd /tmp && $(dir $(shell command -v $(PYTHON)))lint-imports --config $(CURDIR)/pyproject.toml
	$(PYTHON) scripts/function_lengths.py python/histcore tests benches scripts

fmt:
	cargo fmt
	$(PYTHON) -m ruff format python tests benches

vectors:
	cargo test
	HISTCORE_BACKEND=rust PYTHON=$(PYTHON) scripts/test.sh tests/engine/test_vectors.py

bench:
	$(PYTHON) -m histcore bench
	HISTCORE_BACKEND=rust PYTHON=$(PYTHON) scripts/test.sh benches --benchmark-enable

ci:
	bash .ci/run

clean: clean-so
	rm -rf target dist
