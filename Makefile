# Everyday tasks, mirroring the steps of .ci/run. `make help` lists them.
#
# PYTHON is the interpreter of your development venv (an activated venv's `python` by
# default); the targets install into it.
PYTHON ?= python
BACKENDS ?= rust python

.PHONY: help clean-so build-dev build-prod test test-rust test-python lint fmt bench vectors ci ci-full ci-quick clean

help:
	@echo "build-dev    debug build of the Rust engine into the venv (maturin develop), with the extras"
	@echo "build-prod   release build installed into the venv (what benchmarks need)"
	@echo "test         the suite against the installed package, once per engine ($(BACKENDS))"
	@echo "lint         what CI lints first (scripts/lint.sh): cargo fmt/clippy, ruff, mypy --strict,"
	@echo "             the import-layer contract, function lengths"
	@echo "fmt          apply cargo fmt and ruff format"
	@echo "bench        histcore bench and the pytest-benchmark suites (release build first)"
	@echo "vectors      cargo test and the pytest golden-vector tests"
	@echo "ci           the CI run from scratch, within 30 minutes (bash .ci/run)"
	@echo "ci-full      every step of CI at full size, as before a release (bash .ci/run --full)"
	@echo "ci-quick     lint, cargo test and the suite on a debug build, within 8 minutes (bash .ci/run --quick)"

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

# The same list as CI's lint stage (scripts/lint.sh). PYTHON needs the dev extra and
# what mypy reads (the test, openai-agents and postgres extras): `make build-dev` installs them.
lint:
	PYTHON=$(PYTHON) bash scripts/lint.sh

fmt:
	cargo fmt
	$(PYTHON) -m ruff format python tests benches scripts

vectors:
	cargo test
	HISTCORE_BACKEND=rust PYTHON=$(PYTHON) scripts/test.sh tests/engine/test_vectors.py

bench:
	$(PYTHON) -m histcore bench
	HISTCORE_BACKEND=rust PYTHON=$(PYTHON) scripts/test.sh benches --benchmark-enable

ci:
	bash .ci/run

ci-full:
	bash .ci/run --full

ci-quick:
	bash .ci/run --quick

clean: clean-so
	rm -rf target dist
