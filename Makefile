# normscope: two commands on a fresh machine with Python and pip.
#   make run   - create .venv, install normscope, run the main job on the embedded default
#   make test  - create .venv if missing, run the test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test install bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/normscope embed --wordfreq-top 2000 -o out/words.parquet --json out/words.json

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	for b in benchmarks/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) out
