# Sluice — the two commands a user needs: `make up` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TYPECHECK := build/typecheck

.PHONY: up test install system-deps lint typecheck contracts unit clean broker

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

## make up: a fresh machine -> virtualenv -> install -> the quickstart platform (broker on
## 127.0.0.1:9092, Connect worker on :8083, connectors, a Streams app), data in ./.sluice/
up: install
	$(BIN)/sluice up -f examples/quickstart/sluice.yaml

## make broker: the broker alone, as `make up` started it before there was more
broker: install
	$(BIN)/sluice broker start --listen 127.0.0.1:9092 --data-dir .sluice/data

## make test: installs what the tests need (Debian packages kcat and sqlite3 included: the README
## uses both; zookeeper (Java 17 runs it) for the cluster tests; ip and unshare: the README tests
## each run in a network namespace of their own, so that several can use port 9092 at once), then
## runs everything.
test: install system-deps lint typecheck contracts unit

system-deps:
	@missing=""; \
	command -v kcat >/dev/null 2>&1 || missing="$$missing kcat"; \
	command -v sqlite3 >/dev/null 2>&1 || missing="$$missing sqlite3"; \
	[ -f /usr/share/java/zookeeper.jar ] || missing="$$missing zookeeper"; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v unshare >/dev/null 2>&1 || missing="$$missing util-linux"; \
	[ -z "$$missing" ] || { \
	  echo "installing Debian packages:$$missing"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null \
	  || { echo "apt-get install$$missing failed (are you root?)"; exit 1; }; }

# The folders map to `sluice.*` (DESIGN.md §2); mypy and import-linter read a symlinked view of
# the package so that they see it under its import name.
$(TYPECHECK): FORCE
	@rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/sluice
	@for f in platform/*; do ln -s ../../../$$f $(TYPECHECK)/sluice/; done
	@for d in broker streams connect connectors dsl; do ln -s ../../../$$d $(TYPECHECK)/sluice/$$d; done

FORCE:

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install $(TYPECHECK)
	cd $(TYPECHECK) && MYPYPATH=. ../../$(BIN)/mypy --config-file ../../pyproject.toml -p sluice

contracts: install $(TYPECHECK)
	cd $(TYPECHECK) && PYTHONPATH=. ../../$(BIN)/lint-imports --config ../../pyproject.toml

# Three processes (most of the slow tests wait on processes, sessions and timeouts, not on the
# CPU), each file's tests in one of them (module fixtures stay whole); each process
# starts its own shared broker, PostgreSQL and Spark session.
unit: install
	$(BIN)/pytest -n 3 --dist loadfile --no-loadscope-reorder --durations=25

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache
