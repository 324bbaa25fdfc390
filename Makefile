# Every target does its own set-up: a fresh machine needs only python3.11 (or python3 >= 3.11) and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Exit 0 when the interpreter can run this project: its version satisfies pyproject's requires-python (">=X.Y").
FITS   := import re, sys, tomllib; need = tomllib.load(open("pyproject.toml", "rb"))["project"]["requires-python"]; \
          m = re.fullmatch(r">=\s*(\d+)\.(\d+)", need.strip()); sys.exit(sys.version_info[:2] < (int(m[1]), int(m[2])))

.PHONY: test lint fuzz e2e e2e-job runner-image matrix bench venv clean control-plane test-control-plane install-check

# A .venv that cannot run the project (made by another Python, or broken) is rebuilt, not reused.
venv:
	@if ! $(PY) -c '$(FITS)' >/dev/null 2>&1; then \
	  if ! $(PYTHON) -c '$(FITS)' >/dev/null 2>&1; then \
	    echo "$(PYTHON) cannot run this project (pyproject.toml: requires-python $$(grep requires-python pyproject.toml \
	      | cut -d'"' -f2)); pass PYTHON=python3.11 or another that fits" >&2; exit 1; \
	  fi; \
	  if [ -e $(VENV) ]; then echo "rebuilding $(VENV): its Python cannot run this project"; fi; \
	  rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); \
	fi
	@if [ ! -f $(STAMP) ] || [ pyproject.toml -nt $(STAMP) ]; then \
	  $(PY) -m pip install --quiet --upgrade pip && $(PY) -m pip install --quiet -e '.[fakes]' --group dev && touch $(STAMP); \
	fi

# The checks, fastest first: ruff's lint and format check (line length 120), the import contracts (layers that point
# down, no import circle: [tool.importlinter] in pyproject.toml), then mypy (strict for harness/ and fakes/; what it
# checks is configured in pyproject.toml). `make test` runs them first, so CI enforces them.
lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m mypy

# The checks, then the cluster-free specs (guard specs and fake conformance), in parallel. CI runs this. (Specs
# marked twin start stack twins of their own: they belong to the main job.)
# TEST_WORKERS: xdist workers, three per core. A spec spends a good part of its wall time waiting (timeouts it
# exercises, kubectl, port-forwards, rollouts on the API double), so a core stays busy with more than one worker on
# it; each worker also collects every spec (about 5 s of CPU: 6 workers spend 38 s of CPU before the first spec runs).
# On 2 cores (plain runs, back to back on one commit): 157 s with 4 workers against 141 and 149 s with 6; 8 ran
# 139 s once for 30 s more CPU. This machine drifts about 10% between runs of one command (6 workers: 128 to 157 s
# within an hour). `TEST_WORKERS=N` or an -n in PYTEST_ARGS overrides it. --dist worksteal: a worker
# that runs out of specs takes half of the busiest one's, so the run does not end on one worker's queue (6 workers:
# 138 and 146 s against 153 s with --dist load, back to back; this machine's own drift is about as large).
# Bytecode is written (PYTHONDONTWRITEBYTECODE is cleared): every worker, inner pytest and Python kubectl stand-in
# then loads compiled modules and pytest's rewritten asserts from __pycache__ instead of compiling them again; on a
# fresh clone the xdist controller writes the rewritten ones once, before the workers start (specs/bytecode.py).
CORES        := $(shell nproc 2>/dev/null || echo 2)
TEST_WORKERS ?= $(shell echo $$(( 3 * $(CORES) )))
# GO_RUNTIME: the real kubectl runs some 1,400 times in `make test`, each call under a second, and Go's garbage
# collector was a fifth of its CPU (about 59 ms a call against 48 ms with it off, kubectl get and apply against the
# API double); it is held off (GOGC=off) until the heap reaches 256 MiB (GOMEMLIMIT), where it collects again, so a
# long port-forward still stays bounded. Only the suites' own kubectl calls see it; the harness sets nothing.
GO_RUNTIME   := GOGC=off GOMEMLIMIT=256MiB
test: lint
	$(GO_RUNTIME) PYTHONDONTWRITEBYTECODE= $(PY) -m pytest specs -m "not cluster and not twin and not control_plane" \
	  -n $(TEST_WORKERS) \
	  --dist worksteal $(PYTEST_ARGS)

# The hypothesis specs at depth: fresh random inputs and many more examples than the fixed-seed runs in `make test`.
fuzz: venv
	FAKES_FUZZ=1 $(PY) -m pytest specs -m "fuzz and not cluster" -n auto $(PYTEST_ARGS)

# Specs that run per real kubectl build (port-forward, exec, rollout) on every build present: 1.27..1.33, and the
# newest with its WebSocket transports off. `make test` runs them on the installed default, oldest and newest only.
matrix: venv
	KUBECTL_MATRIX=all $(PY) -m pytest specs -m kubectl_matrix -n auto $(PYTEST_ARGS)

# The main job, one invocation: cluster specs against minikube when kubectl has a current context (or
# --kube-context), else against the stack twin this run starts (PYTEST_ARGS="--target cluster|twin" forces
# either). Cluster-free specs run in parallel on every worker; cluster specs are split by recorded duration into one
# shard per target (each worker's own twin, or each --kube-context given), each shard on one worker (--dist
# loadgroup), and, whatever the --dist, run one at a time per target under the harness's cluster lock. Bytecode is
# written, as for `make test`: the bug-switch specs start a pytest of their own per case.
# E2E_WORKERS: twice the cores: against the twin each worker has its own twin and shard, and the
# cluster specs mostly wait on the stack's windows (on 2 cores, -m "cluster or twin": 258 s with 2 workers, 215 s
# with 4, for 277 and 336 s of CPU). Against one cluster context the cluster specs stay one shard on one worker.
# TWIN_ON=control-plane: each twin runs on a real control plane of its own with a local node instead of the API
# double (its binaries built first, `make control-plane`); the specs and their selection are the same.
E2E_WORKERS ?= $(shell echo $$(( 2 * $(CORES) )))
TWIN_ON ?= double
e2e: venv $(if $(filter control-plane,$(TWIN_ON)),control-plane)
	$(GO_RUNTIME) PYTHONDONTWRITEBYTECODE= STACK_TWIN_ON=$(TWIN_ON) $(PY) -m pytest specs -n $(E2E_WORKERS) \
	  --dist loadgroup -rfE $(PYTEST_ARGS)

# The cluster specs as an Indexed Job of SHARDS pods (python -m harness.jobrun). Without CONTEXT: on a real control
# plane started here, whose node runs each pod as a local process of this checkout (specs/jobrun/local_cluster.py);
# each shard starts its own twin (TWIN_ON). With CONTEXT (an allowed one, e.g. minikube) the pods run IMAGE, built
# from this checkout into that cluster first (runner-image; each shard's twin on the API double there).
SHARDS ?= 2
IMAGE ?= stack-harness-runner:dev
JOB_PYTEST_ARGS ?= specs -m cluster --target twin -p no:cacheprovider -rfE
e2e-job: venv $(if $(CONTEXT),runner-image,control-plane)
	$(GO_RUNTIME) PYTHONDONTWRITEBYTECODE= $(PY) -m \
	  $(if $(CONTEXT),harness.jobrun --context $(CONTEXT) --image $(IMAGE),specs.jobrun.local_cluster --env HOME=$$HOME \
	  --env STACK_TWIN_ON=$(TWIN_ON)) --shards $(SHARDS) -- $(JOB_PYTEST_ARGS) $(PYTEST_ARGS)

# The runner image (harness/jobrun/Dockerfile) of this checkout's HEAD (git archive: no .venv, no artifacts, nothing
# uncommitted), built inside minikube's own image store, so its pods find it with no registry.
runner-image:
	@context=$$(mktemp -d) && trap 'rm -rf "$$context"' EXIT && git archive HEAD | tar -x -C "$$context" && \
	  minikube image build -t $(IMAGE) -f harness/jobrun/Dockerfile "$$context"

# The real control plane (harness.controlplane): `control-plane` builds its five binaries from their Go modules into
# the per-user cache (about 6 minutes cold on 2 cores; nothing when current); `test-control-plane` builds, then runs
# the specs marked control_plane against it. `make test` never builds or uses them.
control-plane: venv
	$(PY) -m harness.controlplane build

test-control-plane: control-plane
	$(GO_RUNTIME) PYTHONDONTWRITEBYTECODE= $(PY) -m pytest specs -m control_plane -n $(CORES) --dist worksteal -rfEs \
	  $(PYTEST_ARGS)

# What an adopter's install holds and can do, in fresh virtual environments made from a per-user wheelhouse (filled
# from the package index only when it lacks a distribution): the base install alone, each fake's extra with that
# fake's conformance specs, and [fakes] with every fixture (specs/install/check_venvs.py says what is checked).
# INSTALL_CHECK_TIMEOUT: seconds per check; a cold wheelhouse fills from the index inside the first one.
INSTALL_CHECK_TIMEOUT ?= 1800
install-check: venv
	$(GO_RUNTIME) $(PY) -m pytest specs/install/check_venvs.py -p no:cacheprovider -rfE --durations=0 \
	  --timeout=$(INSTALL_CHECK_TIMEOUT) $(PYTEST_ARGS)

# Benchmarks: a few minutes by default; `make bench LONG=1` for the long runs (more samples, more budgets).
bench: venv
	@for b in benchmarks/*.py; do echo "== $$b"; HARNESS_BENCH=$(if $(LONG),long,quick) $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) artifacts .hypothesis .mypy_cache .ruff_cache
