# batchboard: the README's two commands.
#
#   make demo   virtual environment, embedded SQLite database, demo history,
#               demo logins, then serve on http://127.0.0.1:8000/ with the
#               simulator writing live history and the alert detector
#               (batchboard_watch, the inbox as its channel) beside the server.
#   make test   virtual environment, then the test suite (SQLite unless
#               DATABASE_URL names a PostgreSQL database).
#   make check  ruff (lint and format) and mypy --strict over batchboard/.
#   make demo-reset          delete the demo database, so the next make demo
#                            seeds it afresh.
#   make serve-production    collectstatic, check --deploy, then gunicorn with
#                            the caller's environment (docs/production.md).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
SEED ?= 42
PYTEST_ARGS ?=

# The demo always runs on the embedded SQLite file in the checkout, whatever
# the caller's environment says about databases. BATCHBOARD_DEMO=1 lets the
# demo's commands write demo history and logins there; without it they refuse.
DEMO_ENV := BATCHBOARD_DEMO=1 DJANGO_DEBUG=1 BATCHBOARD_SCHEMA=managed \
	DATABASE_URL=sqlite:///$(CURDIR)/db.sqlite3 BATCHBOARD_DATABASE_URL=
MANAGE := $(BIN)/python manage.py
DEMO_DB := $(CURDIR)/db.sqlite3
# Written only once batchboard_seed has finished: a database without it
# holds an interrupted seed, which the next make demo starts again.
SEEDED := $(DEMO_DB).seeded
# The demo serves DEBUG pages and logins whose passwords equal their names:
# loopback only, unless ALLOW_REMOTE=1 says otherwise on purpose.
LOOPBACK := 127.0.0.1 localhost ::1 [::1]
ALLOW_REMOTE ?=

.PHONY: demo demo-reset test check venv serve serve-production refuse-remote

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "batchboard needs Python 3.11 or newer: run make PYTHON=python3.12 (or another 3.11+ interpreter).")'
	$(PYTHON) -m venv $(VENV)

# Reinstall only when the requirements or the package metadata change.
$(VENV)/.installed: $(BIN)/python requirements.txt pyproject.toml
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $@

venv: $(VENV)/.installed

demo: refuse-remote venv
	@if [ -f "$(DEMO_DB)" ] && [ ! -f "$(SEEDED)" ]; then \
		echo "The demo database holds an unfinished seed; starting it again."; \
		rm -f "$(DEMO_DB)" "$(DEMO_DB)-wal" "$(DEMO_DB)-shm"; \
	fi
	$(DEMO_ENV) $(MANAGE) migrate --no-input
	@if [ -f "$(SEEDED)" ]; then \
		echo "Demo history already seeded; keeping it (make demo-reset starts again)."; \
	else \
		echo "Seeding demo history (seed $(SEED))..."; \
		$(DEMO_ENV) $(MANAGE) batchboard_seed --seed $(SEED) && touch "$(SEEDED)"; \
	fi
	$(DEMO_ENV) $(MANAGE) batchboard_demo_login --address http://$(HOST):$(PORT)/
	$(DEMO_ENV) $(MANAGE) batchboard_demo_alerts
	@$(MAKE) --no-print-directory serve

refuse-remote:
	@case " $(LOOPBACK) " in *" $(HOST) "*) ;; *) \
		if [ "$(ALLOW_REMOTE)" != 1 ]; then \
			echo "make demo serves DEBUG pages and demo logins whose passwords are their names;"; \
			echo "HOST=$(HOST) is not loopback. Use make serve-production, or ALLOW_REMOTE=1 to insist."; \
			exit 2; \
		fi;; \
	esac

demo-reset:
	rm -f "$(DEMO_DB)" "$(DEMO_DB)-wal" "$(DEMO_DB)-shm" "$(SEEDED)"

# The simulator keeps writing history and the detector (batchboard_watch)
# keeps alerting while the server runs; both stop with it, whether the
# server is interrupted (Ctrl-C) or exits on its own. Their output goes to
# $(VENV)/simulate.log and watch.log and the server logs no poll requests
# (batchboard.site.quiet), so the logins, printed last, stay on screen.
serve: refuse-remote
	@$(DEMO_ENV) sh -c '$(MANAGE) batchboard_simulate > $(VENV)/simulate.log 2>&1 & simulator=$$!; $(MANAGE) batchboard_watch --every 2 > $(VENV)/watch.log 2>&1 & watcher=$$!; \
		$(MANAGE) runserver --noreload $(HOST):$(PORT) & server=$$!; \
		trap "kill $$simulator $$watcher $$server 2>/dev/null; wait $$simulator $$watcher $$server 2>/dev/null" EXIT INT TERM; \
		sleep 3; \
		echo ""; \
		echo "batchboard demo: http://$(HOST):$(PORT)/  login: demo / demo (reads everything)"; \
		echo "  also viewer / viewer (reads), operator / operator (stops executions),"; \
		echo "  administrator / administrator (every action, parameter values, the admin)"; \
		echo "  simulator output: $(VENV)/simulate.log; alerts reach demo'"'"'s inbox (detector: $(VENV)/watch.log)."; \
		echo "  Ctrl-C stops the server, the simulator and the detector."; \
		echo ""; \
		wait $$server'

# Production: the caller's environment configures the site (SECRET_KEY,
# ALLOWED_HOSTS, DATABASE_URL, ...; see docs/production.md).
serve-production: venv
	$(MANAGE) collectstatic --no-input --verbosity 0
	$(MANAGE) check --deploy --fail-level WARNING
	$(BIN)/gunicorn -c gunicorn.conf.py

test: venv
	$(BIN)/python -m pytest $(PYTEST_ARGS)

check: venv
	$(BIN)/ruff check batchboard tests
	$(BIN)/ruff format --check batchboard tests
	$(BIN)/mypy
