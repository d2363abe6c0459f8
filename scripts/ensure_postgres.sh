#!/usr/bin/env bash
# Make sure the PostgreSQL server programs (initdb, pg_ctl) are installed, so the test suite can start its own
# throw-away server (tests/postgres.py). Idempotent: does nothing when they are already there.
#
# As root with apt it installs Debian's `postgresql` package (the package's own cluster service is not needed:
# the tests run initdb/pg_ctl in a temporary directory, as the `postgres` user the package creates). When it
# cannot (not root, no apt, apt failed), it prints the command that installs PostgreSQL here and then:
#   - in CI (`CI` set) or with ERP_AI_REQUIRE_POSTGRES=1: exits 1, since there the PostgreSQL variants must run;
#   - elsewhere: exits 0, so `make test` goes on and pytest skips the PostgreSQL variants, saying so in its
#     summary.
# ERP_AI_POSTGRES_LIB_ROOT (default /usr/lib/postgresql) is where Debian puts one bin/ per server version.
set -euo pipefail

lib_root="${ERP_AI_POSTGRES_LIB_ROOT:-/usr/lib/postgresql}"

have_server() {
    local bin
    for bin in "$lib_root"/*/bin; do
        [[ -x "$bin/initdb" && -x "$bin/pg_ctl" ]] && return 0
    done
    command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1
}

required() {
    [[ -n "${CI:-}" || "${ERP_AI_REQUIRE_POSTGRES:-}" == "1" ]]
}

install_command() {
    if command -v apt-get >/dev/null 2>&1; then
        echo "sudo apt-get install postgresql"
    elif command -v dnf >/dev/null 2>&1; then
        echo "sudo dnf install postgresql-server"
    elif command -v apk >/dev/null 2>&1; then
        echo "sudo apk add postgresql"
    elif command -v brew >/dev/null 2>&1; then
        echo "brew install postgresql"
    else
        echo "your system's PostgreSQL server package (it provides initdb and pg_ctl; https://www.postgresql.org/download/)"
    fi
}

# give_up REASON [FIX]: say why, what to run, and whether the tests go on without PostgreSQL.
give_up() {
    echo "PostgreSQL for the tests: $1." >&2
    echo "To run the PostgreSQL variants of the tests, install it: ${2:-$(install_command)}" >&2
    if required; then
        echo "CI (or ERP_AI_REQUIRE_POSTGRES=1) needs the PostgreSQL variants: failing." >&2
        exit 1
    fi
    echo "Going on without it: pytest skips the PostgreSQL variants and says so in its summary." >&2
    exit 0
}

if have_server; then
    if [[ "$(id -u)" -eq 0 ]] && ! id -u postgres >/dev/null 2>&1; then
        # PostgreSQL refuses to run as root: tests/postgres.py runs it as `postgres`.
        give_up "the tests run as root, and PostgreSQL (which refuses root) needs a 'postgres' user to run as" \
            "useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres"
    fi
    exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
    give_up "the server programs (initdb, pg_ctl) are missing, and only root can install them"
fi
if ! command -v apt-get >/dev/null 2>&1; then
    give_up "the server programs (initdb, pg_ctl) are missing, and there is no apt-get to install them"
fi

echo "Installing PostgreSQL (Debian package 'postgresql') for the test suite..." >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql >/dev/null; }; then
    give_up "apt-get could not install the 'postgresql' package"
fi

if ! have_server; then
    give_up "apt installed 'postgresql' but initdb/pg_ctl are still missing under $lib_root/*/bin"
fi
