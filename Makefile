# Rungwise — see README.md. `make run` serves the demo on the embedded default; `make test` runs
# the whole suite against throwaway PostgreSQL and Redis servers, a real Celery worker and Chromium.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test venv migrate demo lint format check-deploy compose-check services-native clean

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

test: venv
	scripts/with-services.sh $(PY) -m pytest $(PYTEST_ARGS)

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: venv
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

check-deploy: venv
	DEBUG=0 SECRET_KEY=$$($(PY) -c 'import secrets;print(secrets.token_urlsafe(50))') \
	  ALLOWED_HOSTS=rungwise.example.org $(PY) manage.py check --deploy --fail-level WARNING

clean:
	rm -rf $(VENV) db.sqlite3 var staticfiles
