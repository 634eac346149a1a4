# `make run` and `make test` do all set-up themselves: virtualenv, install, migrate.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-nodeps.txt | sha1sum | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 8000
# `make run` prints a one-time dashboard login link for this user (created if needed).
LOGIN_USER ?= admin
# `make test` runs the suite in this many processes (pytest-xdist; a file at a time each).
TEST_PROCESSES ?= 2
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup migrate run dev test lint browser-deps test-postgres

$(STAMP): requirements.txt requirements-nodeps.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps -r requirements-nodeps.txt
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

setup: $(STAMP)

migrate: setup
	$(BIN)/python manage.py migrate --noinput

run: migrate
	$(BIN)/python manage.py check --fail-level ERROR
	@echo "ottoweb on http://$(HOST):$(PORT)/  (API docs: http://$(HOST):$(PORT)/api/v1/docs, MCP: http://$(HOST):$(PORT)/mcp)"
	@$(BIN)/python manage.py login_link $(LOGIN_USER) --base-url http://$(HOST):$(PORT)
	@echo "  (another one: $(BIN)/python manage.py login_link USERNAME; set a password on the Account page)"
	$(BIN)/python manage.py serve $(HOST):$(PORT)

# Development only: Django's auto-reloading development server (no /mcp: it speaks WSGI), no worker.
dev: migrate
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy memory lessons accounts ottoweb clients/python/ottoweb_client
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/ottoweb/test_house_rules.py

# The browser tests drive Debian's Chromium (Playwright's own browser download is not used).
browser-deps:
	@test -x /usr/bin/chromium || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: setup lint browser-deps
	$(BIN)/python manage.py check --fail-level ERROR
	$(BIN)/python -m pytest -n $(TEST_PROCESSES)

# The suite again on the scale-out path: PostgreSQL on 127.0.0.1:5432, Celery on Redis, two workers.
# Live processes get a database each; the storage faults are made on PostgreSQL and Redis. Left out,
# as they run no code that differs between the databases: the engine (Django-free), the browser
# flows (their views run on PostgreSQL in tests/dashboard) and tests marked sqlite_pass.
test-postgres: setup
	DB=postgres CELERY_BROKER_URL=redis://127.0.0.1:6379/5 OTTO_TEST_WORKERS=2 $(BIN)/python -m pytest -n $(TEST_PROCESSES) \
		--ignore=tests/memory/engine --ignore=tests/browser -m "not sqlite_pass"
