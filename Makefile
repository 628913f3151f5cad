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

# Re-installs only when pyproject.toml changed (the package itself is installed editable).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# Rebuilds ./evidex.db from the bundled example collection (embedded with the default model,
# multilingual-e5-small; vectors are cached, so only the first run embeds): the old policy
# version first, then the collection (which supersedes it), then example searches and answers.
run: install
	rm -f $(DB) $(DB)-wal $(DB)-shm
	$(BIN)/evidex --db $(DB) ingest examples/versions --tenant acme --split heading
	$(BIN)/evidex --db $(DB) ingest examples/collection --tenant acme --split heading
	@echo
	@echo '$$ evidex search "zwei Personen" --tenant acme --groups staff --match all'
	@$(BIN)/evidex --db $(DB) search "zwei Personen" --tenant acme --groups staff --limit 3 --match all
	@echo
	@echo '$$ evidex search "ERR-401" --tenant acme --groups customers --visibilities public'
	@$(BIN)/evidex --db $(DB) search "ERR-401" --tenant acme --groups customers --visibilities public --limit 3
	@echo
	@echo '$$ evidex ask "Can I return a worn jacket?" --tenant acme --groups customers --visibilities public'
	@$(BIN)/evidex --db $(DB) ask "Can I return a worn jacket?" --tenant acme --groups customers --visibilities public
	@echo
	@echo '$$ evidex ask "Who won the football world cup?" --tenant acme --groups customers --visibilities public'
	@$(BIN)/evidex --db $(DB) ask "Who won the football world cup?" --tenant acme --groups customers --visibilities public

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check src tests benchmarks

bench: install
	$(BIN)/python benchmarks/scifact_keyword.py
	$(BIN)/python benchmarks/million_keyword.py

clean:
	rm -rf $(VENV) $(DB) $(DB)-wal $(DB)-shm .pytest_cache
