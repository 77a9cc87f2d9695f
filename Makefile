# Two entry points: `make run` and `make test`. Both build .venv from scratch when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run build test lint docs bench clean system-deps install

# uv installs what pip would, from the same index, in a fifth of the time: most of a fresh
# clone's first `make test` was spent in pip resolving and unpacking the test tools. Unlike
# pip it compiles no bytecode unless told: under PYTHONDONTWRITEBYTECODE every process
# would compile the libraries it imports again.
$(BIN)/uv:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv
INSTALL := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python

$(BIN)/sitemapd: pyproject.toml | $(BIN)/uv
	$(INSTALL) -e .
	touch $@

# The package comes with its test extras: one resolution and one editable build on a
# fresh clone, not two.
$(VENV)/.test-extras: pyproject.toml | $(BIN)/uv
	$(INSTALL) -e '.[test]'
	touch $(BIN)/sitemapd $@

run: $(BIN)/sitemapd
	$(BIN)/sitemapd run -c examples/sitemapd.toml

lint: $(VENV)/.test-extras
	$(BIN)/ruff check sitemapd tests bench
	$(BIN)/ruff format --check sitemapd tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The reference under docs/, built into site/ (ignored by git); --strict fails on a broken
# link or anchor and on a page the nav leaves out (not with --quiet, which hides them).
# `$(BIN)/mkdocs serve` to read it.
docs: $(VENV)/.test-extras
	$(BIN)/mkdocs build --strict

# Debian packages the tests use (systemd-analyze, PostgreSQL and MariaDB servers for the
# change-log tests, WordPress and the PHP it runs on for the WordPress acceptance test,
# Chromium and its driver for the status page's browser tests); installed when missing
# and we are root.
SYSTEM_PACKAGES = $(if $(shell command -v systemd-analyze),,systemd) \
	$(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql) \
	$(if $(wildcard /usr/sbin/mariadbd),,mariadb-server) \
	$(if $(wildcard /usr/share/wordpress/wp-load.php),,wordpress) \
	$(if $(shell command -v php),,php-cli) \
	$(if $(shell php -m 2>/dev/null | grep -x mysqli),,php-mysql) \
	$(if $(shell php -m 2>/dev/null | grep -x xml),,php-xml) \
	$(if $(wildcard /usr/bin/chromedriver),,chromium chromium-driver)
system-deps:
	@packages="$(strip $(SYSTEM_PACKAGES))"; [ -z "$$packages" ] || { [ "$$(id -u)" = 0 ] && \
		apt-get update -q && apt-get install -y -q --no-install-recommends $$packages; }

# Two workers, each taking over the other's queue when its own runs dry: most tests wait on
# subprocesses and files, so the suite takes half as long.
# Bytecode compiled first: under PYTHONDONTWRITEBYTECODE an editable install would compile
# every module again in each of the suite's thousand `sitemapd` processes.
# The suite's files on tmpfs where the machine has one: its crash tests kill processes, not
# the machine, and on a virtual disk syncs and deletes took most of the property test's time.
# Open to all as /tmp is: the database servers write their own temp files there.
TEST_TMP := $(if $(wildcard /dev/shm/.),/dev/shm/sitemapd-tests)
test: lint docs system-deps
	$(BIN)/python -m compileall -q sitemapd tests
	$(if $(TEST_TMP),install -d -m 1777 $(TEST_TMP) && TMPDIR=$(TEST_TMP)) $(BIN)/pytest -n 2 --dist worksteal

$(VENV)/.bench-extras: $(VENV)/.test-extras
	$(INSTALL) -e '.[bench]'
	touch $@

# Bytecode compiled first, as `pip install` does: an editable install under
# PYTHONDONTWRITEBYTECODE would otherwise compile every module in every timed process.
bench: $(VENV)/.bench-extras
	$(BIN)/python -m compileall -q sitemapd
	$(BIN)/python bench/bench_build.py
	$(BIN)/python bench/bench_curve.py
	$(BIN)/python bench/bench_daemon.py
	$(BIN)/python bench/bench_feeds.py
	$(BIN)/python bench/bench_changelog.py
	$(BIN)/python bench/bench_wordpress.py
	$(BIN)/python bench/bench_fingerprint.py
	$(BIN)/python bench/bench_s3.py
	$(BIN)/python bench/bench_status.py
	$(BIN)/python bench/bench_adoption.py

# Debian 12 refuses `pip install` into the system Python (externally managed): install into
# a venv of its own under PREFIX, and the units (which run PREFIX/bin/sitemapd), the system
# user and the folders where systemd looks for them. EXTRAS="postgres" adds psycopg2 (and psycopg 3).
PREFIX ?= /opt/sitemapd
UNITDIR ?= /etc/systemd/system
SYSUSERSDIR ?= /usr/lib/sysusers.d
TMPFILESDIR ?= /usr/lib/tmpfiles.d
install:
	$(PYTHON) -m venv $(PREFIX)
	$(PREFIX)/bin/pip install --quiet '.$(if $(EXTRAS),[$(EXTRAS)])'
	install -d $(UNITDIR) $(SYSUSERSDIR) $(TMPFILESDIR)
	for unit in sitemapd.service sitemapd@.service; do \
		sed 's|/opt/sitemapd/bin/sitemapd|$(PREFIX)/bin/sitemapd|' systemd/$$unit > $(UNITDIR)/$$unit; \
	done
	install -m 644 systemd/sitemapd.sysusers.conf $(SYSUSERSDIR)/sitemapd.conf
	install -m 644 systemd/sitemapd.tmpfiles.conf $(TMPFILESDIR)/sitemapd.conf

clean:
	rm -rf $(VENV) examples/out examples/state site
