# Rungwise — see README.md. `make run` serves the demo on the embedded default; `make test` runs
# the whole suite against throwaway PostgreSQL and Redis servers, a real Celery worker and Chromium.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-fast venv migrate demo lint lint-imports typecheck check format check-deploy compose-check services-native clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

migrate: venv
	$(PY) manage.py migrate --noinput

# RUNGWISE_BIND: the settings learn where runserver listens (beyond loopback: no demo users,
# and a SECRET_KEY is required).
demo: migrate
	RUNGWISE_BIND=$(HOST) $(PY) manage.py seed_demo --url http://$(HOST):$(PORT)/

run: demo
	@echo "Rungwise on http://$(HOST):$(PORT)/ (embedded default: SQLite, tasks in-process)"
	RUNGWISE_BIND=$(HOST) DEBUG=1 $(PY) manage.py runserver $(HOST):$(PORT)

# The 25 slowest tests are listed at the end, so a run that grows slow says where.
test: venv
	scripts/with-services.sh $(PY) -m pytest --durations=25 $(PYTEST_ARGS)

# The inner loop: SQLite, tasks in-process, no browser, worker or PostgreSQL-only tests; stops at
# the first failure. `make test` (what CI runs) is still the word on a change.
test-fast: venv
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) -m pytest \
	  -m "not browser and not celery_worker and not postgres" -x -q $(PYTEST_ARGS)

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# Import contracts between apps ([tool.importlinter] in pyproject.toml).
lint-imports: venv
	$(VENV)/bin/lint-imports --no-cache

# mypy with django-stubs on the modules listed in [tool.mypy] files (the list only grows).
typecheck: venv
	$(PY) -m mypy

# Everything CI checks before the suite.
check: lint lint-imports typecheck

format: venv
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

check-deploy: venv
	DEBUG=0 SECRET_KEY=$$($(PY) -c 'import secrets;print(secrets.token_urlsafe(50))') \
	  ALLOWED_HOSTS=rungwise.example.org $(PY) manage.py check --deploy --fail-level WARNING

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-wal db.sqlite3-shm var staticfiles
