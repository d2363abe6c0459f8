#!/usr/bin/env bash
# Make sure the PostgreSQL server programs (initdb, pg_ctl) are installed, so the test suite can start its own
# throw-away server (tests/postgres.py). Idempotent: does nothing when they are already there.
#
# Installs Debian's `postgresql` package with apt when missing. Only root can install: anyone else gets one line
# saying what to install, and a non-zero exit. The package's own cluster service is not needed by the tests,
# which run initdb/pg_ctl in a temporary directory as the `postgres` user.
set -euo pipefail

have_server() {
    local bin
    for bin in /usr/lib/postgresql/*/bin; do
        [[ -x "$bin/initdb" && -x "$bin/pg_ctl" ]] && return 0
    done
    command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1
}

if have_server; then
    exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
    echo "PostgreSQL server programs (initdb, pg_ctl) are missing: install them, e.g. 'sudo apt-get install postgresql'." >&2
    exit 1
fi

echo "Installing PostgreSQL (Debian package 'postgresql') for the test suite..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends postgresql >/dev/null

if ! have_server; then
    echo "apt installed 'postgresql' but initdb/pg_ctl are still missing under /usr/lib/postgresql/*/bin." >&2
    exit 1
fi
