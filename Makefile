# evidex developer entry points. `make install` is what `run` and `test` build on.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DB ?= evidex.db

.PHONY: install run test test-fast eval lint typecheck bench clean browser docs python-check reader

# What `run` needs is Python 3.11+ with venv and the package registry; no browser, so `make run`
# works on any machine with Python 3.11 or later (macOS, any Linux).
install: $(STAMP)

# Only the web page tests use a browser: Debian's Chromium driven headless (never a browser
# build downloaded by Playwright). `make test` installs it when missing (with sudo when not
# root); elsewhere than Debian/Ubuntu, install Chromium yourself at /usr/bin/chromium.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  command -v apt-get >/dev/null 2>&1 || { \
	    echo "error: the page tests need Chromium at /usr/bin/chromium and this machine has no apt-get: install Chromium with your system's package manager" >&2; exit 1; }; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends chromium; }

# Says what is missing, in one line, before anything is created.
python-check:
	@command -v $(PY) >/dev/null 2>&1 || { echo "error: evidex needs Python 3.11 or later, and '$(PY)' was not found (set PY=/path/to/python3.11)" >&2; exit 1; }
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "error: evidex needs Python 3.11 or later; $(PY) is $$($(PY) -c 'import platform; print(platform.python_version())') (set PY=/path/to/python3.11)" >&2; exit 1; }
	@$(PY) -c 'import venv, ensurepip' 2>/dev/null || { echo "error: $(PY) cannot create a virtual environment (Debian/Ubuntu: apt-get install python3-venv)" >&2; exit 1; }

# Re-installs only when pyproject.toml changed (the package itself is installed editable), then
# builds the default embedder's int8 graph from the installed weights into the user cache
# (otherwise the first embedding builds it).
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(MAKE) --no-print-directory python-check
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(BIN)/python -m evidex.embed.prepare
	touch $(STAMP)

# Runs the reference configuration, examples/knowledge.config.yaml: starts the shop's help
# centre (examples/site_server.py, http://127.0.0.1:8765/help/, with a sitemap) for its web
# source, the shop's order and stock service (examples/tools_service.py, http://127.0.0.1:8081/)
# for its live tools and its support inbox (examples/inbox_server.py, http://127.0.0.1:8082/:
# handoffs and owner notices print there), rebuilds ./evidex.db by syncing the file's three
# sources (help centre, returns policy PDF, staff wiki; embedded with the default model, vectors
# cached, so only the first run embeds; each source's run recorded for the page's Operators tab), then serves the web page and the API on
# http://127.0.0.1:8000/ with the file's demo keys (only their SHA-256 is in the file; the keys
# are printed here for this local demo, and EVIDEX_DEMO_KEY puts the customer key on the sign-in
# form) until Ctrl-C. evidex and the tools service get the same
# demo ACME_TOOLS_TOKEN, evidex and the inbox the same demo ACME_INBOX_SECRET; the helper
# services stop with evidex. It first refuses, changing nothing, when one of its ports is taken
# (a second `make run` would delete the store the first one serves). Once the service answers, in
# the background, the demo's first users and operators act (examples/demo_activity.py): the
# customer's declined "Do you sell kayaks?" is handed to a person through POST /v1/handoff (it
# arrives at the inbox), the help centre publishes an edit, a drift check finds it and tells the
# owners (of it and of the demo's conflict) at the inbox (`drift --record`), and the shipped case
# set is evaluated in a temporary store and recorded for tenant acme (`eval --record`, about a
# minute), so every section of the page's Operators tab has content.
DEMO_KEY := evidex-demo-customer
DEMO_TOOLS_TOKEN := evidex-demo-tools-token
DEMO_INBOX_SECRET := evidex-demo-inbox-secret
CONFIG := examples/knowledge.config.yaml
run: install
	@$(BIN)/python examples/free_ports.py 8000 8765 8081 8082
	@rm -f $(DB) $(DB)-wal $(DB)-shm
	@$(BIN)/python examples/site_server.py --port 8765 & site=$$!; \
	  ACME_TOOLS_TOKEN=$(DEMO_TOOLS_TOKEN) $(BIN)/python examples/tools_service.py --port 8081 & tools=$$!; \
	  ACME_INBOX_SECRET=$(DEMO_INBOX_SECRET) $(BIN)/python examples/inbox_server.py --port 8082 & inbox=$$!; \
	  trap 'kill $$site $$tools $$inbox $$activity 2>/dev/null' EXIT INT TERM; \
	  $(BIN)/python examples/wait_for.py http://127.0.0.1:8765/sitemap.xml || exit 1; \
	  $(BIN)/evidex --db $(DB) --config $(CONFIG) sync --record || exit 1; \
	  { $(BIN)/python examples/wait_for.py http://127.0.0.1:8000/healthz 300 && \
	    ACME_INBOX_SECRET=$(DEMO_INBOX_SECRET) $(BIN)/python examples/demo_activity.py --url http://127.0.0.1:8000 \
	      --key $(DEMO_KEY) --site http://127.0.0.1:8765 --evidex $(BIN)/evidex --db $(DB) --config $(CONFIG); \
	  } & activity=$$!; \
	  echo; \
	  echo 'evidex web page and API: http://127.0.0.1:8000/  (OpenAPI: http://127.0.0.1:8000/openapi.json)'; \
	  echo 'demo key (tenant acme, customers, public): $(DEMO_KEY)'; \
	  echo 'other demo keys: evidex-demo-staff (staff, internal), evidex-demo-admin (admin)'; \
	  echo "try: curl -s -H 'Authorization: Bearer $(DEMO_KEY)' -H 'Content-Type: application/json' \\"; \
	  echo "       -d '{\"question\": \"Do my points ever expire?\"}' http://127.0.0.1:8000/v1/answer"; \
	  echo "a live lookup (the demo customer's order): the same with \"Where is my order 12345?\""; \
	  echo "the support inbox (handoffs from the page's Ask a person button, owner notices) prints below"; \
	  echo "  and lists them at http://127.0.0.1:8082/"; \
	  echo; \
	  EVIDEX_DEMO_KEY=$(DEMO_KEY) ACME_TOOLS_TOKEN=$(DEMO_TOOLS_TOKEN) ACME_INBOX_SECRET=$(DEMO_INBOX_SECRET) \
	    $(BIN)/evidex --db $(DB) --config $(CONFIG) serve

# The whole suite, including the shipped evaluation set's gate (tests/eval/test_eval_shipped.py), the
# page in Chromium and the documentation's strict build (tests/project/test_docs.py runs `make docs`),
# on two workers (pytest-xdist; a test file stays on one worker, so its module fixtures are built
# once): much of the suite waits on servers, processes and the browser, which a second worker
# overlaps. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
TEST_ARGS := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)
test: install browser
	$(BIN)/python -m pytest -q $(TEST_ARGS)

# Everything but the tests marked slow (those that start a process, a server or a browser, run on
# PostgreSQL, or run a real model: tests/conftest.py marks them, and fails an unmarked test that
# starts a process or listens on a socket during this run). No browser needed.
test-fast: install
	$(BIN)/python -m pytest -q $(TEST_ARGS) -m "not slow"

# The documentation site (docs/, mkdocs.yml) into build/site: the generated references (CLI,
# configuration, HTTP API) must be current, and the build is strict (a broken link, a missing
# page or anchor fails it). `python docs/gen_reference.py` rewrites the references.
docs: install
	$(BIN)/python docs/gen_reference.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir build/site

# The full report of the shipped evaluation set (examples/eval/cases.yaml on examples/shop) on a
# temporary store; also as one HTML file. Exit status 1 when the set's gate fails.
EVAL_HTML ?= test-artifacts/eval-report.html
eval: install
	@mkdir -p $(dir $(EVAL_HTML))
	$(BIN)/evidex eval --cases examples/eval/cases.yaml --root examples --html $(EVAL_HTML); status=$$?; \
	  echo "HTML report: $(EVAL_HTML)"; exit $$status

# Rebuilds the reader's shipped weights and manifest (src/evidex/embed/data/reader/) from the
# development data in the repo: the answer pipeline's candidates for every development question,
# the frozen layers' states cached, the top layers trained, exported, and the threshold fitted
# (training/README.md: data, licences, seeds, time on 2 cores).
reader: install
	$(BIN)/python -m pip install -q -e '.[train]'
	$(BIN)/python training/reader.py all

lint: install
	$(BIN)/ruff check src tests benchmarks examples docs training

# The type checker proves that both knowledge bases (``KnowledgeBase``, one store, and the
# placement's router, several) implement the whole ``Knowledge`` protocol (src/evidex/knowledge.py),
# and that the modules listed here are clean; tests/placement/test_knowledge_protocol.py runs it.
TYPED := src/evidex/knowledge.py src/evidex/placement src/evidex/config
typecheck: install
	$(BIN)/mypy --follow-imports=silent --ignore-missing-imports $(TYPED)

bench: install
	$(BIN)/python benchmarks/scifact_keyword.py
	$(BIN)/python benchmarks/million_keyword.py

clean:
	rm -rf $(VENV) $(DB) $(DB)-wal $(DB)-shm .pytest_cache
