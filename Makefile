# Every target does its own set-up: a fresh machine needs only python3.11 (or python3 >= 3.11) and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test e2e matrix bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Cluster-free specs (guard specs and fake conformance), in parallel. CI runs this. (Specs marked twin start
# stack twins of their own: they belong to the main job.)
test: $(STAMP)
	$(PY) -m pytest specs -m "not cluster and not twin" -n auto $(PYTEST_ARGS)

# Specs that run per real kubectl build (port-forward, exec, rollout) on every build present: 1.27..1.33, and the
# newest with its WebSocket transports off. `make test` runs them on the installed default, oldest and newest only.
matrix: $(STAMP)
	KUBECTL_MATRIX=all $(PY) -m pytest specs -m kubectl_matrix -n auto $(PYTEST_ARGS)

# The main job: every spec; cluster specs against minikube when kubectl has a current context (or --kube-context),
# else against the stack twin this run starts (PYTEST_ARGS="--target cluster|twin" forces either).
e2e: $(STAMP)
	$(PY) -m pytest specs -rfE $(PYTEST_ARGS)

bench: $(STAMP)
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) artifacts .hypothesis
