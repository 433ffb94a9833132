# EchoStudio: `make run` for the demo site, `make test` for the whole suite. Nothing else is needed.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint typecheck check-deploy worker venv install install-dev lock clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Installs are from the lock files, every download checked against its hash (docs/dependencies.md).
# requirements-speech.txt: exact pins with their hashes, installed without their dependencies.
$(VENV)/.installed: requirements.lock requirements-speech.txt | $(PY)
	@echo "Installing the Python packages (first run: a few minutes)."
	$(PY) -m pip install --quiet --require-hashes -r requirements.lock
	$(PY) -m pip install --quiet --no-deps --require-hashes -r requirements-speech.txt
	printf '#!/bin/sh\nPYTHONPATH="$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" exec "$(CURDIR)/$(PY)" -m webapp.client "$$@"\n' > $(VENV)/bin/echostudio
	chmod +x $(VENV)/bin/echostudio
	touch $@

$(VENV)/.installed-dev: requirements-dev.lock requirements-speech.txt | $(PY)
	$(PY) -m pip install --quiet --require-hashes -r requirements-dev.lock
	$(PY) -m pip install --quiet --no-deps --require-hashes -r requirements-speech.txt
	touch $@ $(VENV)/.installed

# Test-only browser tools from the npm registry (axe-core for the accessibility test), pinned by package-lock.json.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev node_modules/.package-lock.json

## Regenerate requirements.lock and requirements-dev.lock after editing requirements*.txt, keeping
## every other pin; `make lock UPGRADE=transformers` also moves one package, `UPGRADE=all` every one.
PIP_COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(VENV)/bin/pip-compile --quiet --generate-hashes \
  --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
  $(if $(filter all,$(UPGRADE)),--upgrade,$(if $(UPGRADE),--upgrade-package $(UPGRADE)))
lock: install-dev
	$(PIP_COMPILE) --output-file requirements.lock requirements.txt
	$(PIP_COMPILE) --constraint requirements.lock --output-file requirements-dev.lock requirements-dev.txt

## Run the demo site on embedded defaults (SQLite, local files, a local Celery worker and beat).
run: install
	@echo "Preparing EchoStudio: migrating the database, then seeding the demo (first run: about 3 minutes in all)."
	$(PY) manage.py migrate --noinput
	$(PY) -u manage.py seed_demo
	@echo ""
	@echo "EchoStudio is starting at http://$(HOST):$(PORT)/  (demo users: admin, actor, reviewer1-4, annotator1-3, lead, evaluator1-3)"
	@echo "Stop with Ctrl-C: the site, the worker and beat stop together (within about 6 s)."
	DJANGO_DEBUG=1 $(PY) manage.py run_all --host $(HOST) --port $(PORT)

worker: install
	$(VENV)/bin/celery -A webapp worker -Q "$$($(PY) -c 'from webapp.settings import JOB_QUEUES; print(",".join(JOB_QUEUES))')" --loglevel INFO

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: install-dev
	$(VENV)/bin/mypy .

## Django's deployment checks under production settings (a throwaway key); any warning fails. CI runs it.
check-deploy: install
	ECHOSTUDIO_PRODUCTION=1 DJANGO_SECRET_KEY="$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(50))')" \
	  DJANGO_ALLOWED_HOSTS=studio.example.org DJANGO_SECURE_HSTS_PRELOAD=1 ECHOSTUDIO_VAR_DIR=$(CURDIR)/var/test \
	  $(PY) manage.py check --deploy --fail-level WARNING

## Run every quality gate and the whole test suite.
test: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy .
	ECHOSTUDIO_VAR_DIR=$(CURDIR)/var/test $(PY) manage.py check
	ECHOSTUDIO_VAR_DIR=$(CURDIR)/var/test $(PY) manage.py makemigrations --check --dry-run
	ECHOSTUDIO_VAR_DIR=$(CURDIR)/var/test $(PY) -m pytest $(PYTEST_ARGS)

clean:
	rm -rf var/test var/broker
