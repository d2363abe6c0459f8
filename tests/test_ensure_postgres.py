"""``scripts/ensure_postgres.sh`` (run by ``make test``) and what pytest says when PostgreSQL is missing.

The script runs here in a fake world: ``PATH`` holds only a fake ``id`` (which user runs it) and, when the
case has one, a fake ``apt-get``; ``ERP_AI_POSTGRES_LIB_ROOT`` points at an empty (or fake-installed)
``/usr/lib/postgresql``. So every branch runs on any machine, as any user, without touching the system:

- PostgreSQL's programs present: nothing to do;
- missing, and the script cannot install them (not root, no apt, apt failing): the command that installs
  PostgreSQL is printed, then in CI (``CI``, ``ERP_AI_REQUIRE_POSTGRES=1``) it fails, elsewhere it goes on;
- missing, as root with apt: installed.

Then a pytest session without PostgreSQL skips the PostgreSQL variants with a summary line saying they did
not run, or fails them in CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "ensure_postgres.sh"
BASH = shutil.which("bash") or "/bin/bash"

FAKE_ID = """#!{bash}
if [ "$#" -eq 2 ]; then  # id -u postgres: does the user exist?
    [ -n "$FAKE_POSTGRES_USER" ] && echo 101 || exit 1
else
    echo "$FAKE_UID"
fi
"""
FAKE_APT = """#!{bash}
echo "apt-get $*" >> "$FAKE_LOG"
[ -n "$FAKE_APT_FAILS" ] && exit 100
if [ "$1" = install ]; then
    {mkdir} -p "$ERP_AI_POSTGRES_LIB_ROOT/16/bin"
    for program in initdb pg_ctl; do
        printf '#!/bin/sh\\n' > "$ERP_AI_POSTGRES_LIB_ROOT/16/bin/$program"
        {chmod} +x "$ERP_AI_POSTGRES_LIB_ROOT/16/bin/$program"
    done
fi
"""


def write_program(path: Path, text: str) -> None:
    """An executable script; ``{bash}``, ``{mkdir}`` and ``{chmod}`` become those programs' real paths (the
    fake ``PATH`` has none of them)."""
    programs = {name: shutil.which(name) or f"/bin/{name}" for name in ("mkdir", "chmod")}
    path.write_text(text.format(bash=BASH, **programs), encoding="utf-8")
    path.chmod(0o755)


def run_script(
    tmp_path: Path,
    *,
    uid: int,
    apt: str | None = None,
    ci: bool = False,
    installed: bool = False,
    postgres_user: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run the script as user ``uid``; ``apt`` is ``"works"``, ``"fails"`` or ``None`` (no apt-get)."""
    bin_dir, lib_root = tmp_path / "bin", tmp_path / "usr-lib-postgresql"
    bin_dir.mkdir()
    lib_root.mkdir()
    write_program(bin_dir / "id", FAKE_ID)
    if apt is not None:
        write_program(bin_dir / "apt-get", FAKE_APT)
    if installed:
        (lib_root / "15" / "bin").mkdir(parents=True)
        for program in ("initdb", "pg_ctl"):
            write_program(lib_root / "15" / "bin" / program, "#!{bash}\n")
    env = {
        "PATH": str(bin_dir),
        "ERP_AI_POSTGRES_LIB_ROOT": str(lib_root),
        "FAKE_UID": str(uid),
        "FAKE_POSTGRES_USER": "yes" if postgres_user else "",
        "FAKE_APT_FAILS": "yes" if apt == "fails" else "",
        "FAKE_LOG": str(tmp_path / "apt.log"),
        **({"CI": "true"} if ci else {}),
    }
    return subprocess.run([BASH, str(SCRIPT)], env=env, capture_output=True, text=True, check=False)


def apt_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "apt.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


@pytest.mark.parametrize("uid", [0, 1000], ids=["root", "user"])
def test_with_postgresql_installed_there_is_nothing_to_do(tmp_path: Path, uid: int) -> None:
    done = run_script(tmp_path, uid=uid, apt="works", installed=True)
    assert (done.returncode, done.stderr) == (0, "")
    assert apt_calls(tmp_path) == []


def test_a_user_without_postgresql_is_told_what_to_install_and_goes_on(tmp_path: Path) -> None:
    done = run_script(tmp_path, uid=1000, apt="works")
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        "PostgreSQL for the tests: the server programs (initdb, pg_ctl) are missing, and only root can "
        "install them.",
        "To run the PostgreSQL variants of the tests, install it: sudo apt-get install postgresql",
        "Going on without it: pytest skips the PostgreSQL variants and says so in its summary.",
    ]
    assert apt_calls(tmp_path) == []  # never tried without root


def test_in_ci_a_missing_postgresql_fails_the_script(tmp_path: Path) -> None:
    done = run_script(tmp_path, uid=1000, apt="works", ci=True)
    assert done.returncode == 1
    assert "install it: sudo apt-get install postgresql" in done.stderr
    assert "CI (or ERP_AI_REQUIRE_POSTGRES=1) needs the PostgreSQL variants: failing." in done.stderr


def test_root_without_apt_is_told_what_to_install_and_goes_on(tmp_path: Path) -> None:
    done = run_script(tmp_path, uid=0, apt=None)
    assert done.returncode == 0
    assert "there is no apt-get to install them" in done.stderr
    assert "install it: your system's PostgreSQL server package (it provides initdb and pg_ctl" in done.stderr


def test_root_with_apt_installs_postgresql(tmp_path: Path) -> None:
    done = run_script(tmp_path, uid=0, apt="works", ci=True)
    assert done.returncode == 0, done.stderr
    assert apt_calls(tmp_path) == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends postgresql",
    ]
    assert (tmp_path / "usr-lib-postgresql" / "16" / "bin" / "initdb").exists()


@pytest.mark.parametrize(("ci", "code"), [(False, 0), (True, 1)], ids=["locally", "in-ci"])
def test_an_apt_failure_is_explained_and_fails_only_in_ci(tmp_path: Path, ci: bool, code: int) -> None:
    done = run_script(tmp_path, uid=0, apt="fails", ci=ci)
    assert done.returncode == code
    assert "apt-get could not install the 'postgresql' package" in done.stderr
    assert "install it: sudo apt-get install postgresql" in done.stderr


def test_root_without_a_postgres_user_is_told_how_to_create_it(tmp_path: Path) -> None:
    done = run_script(tmp_path, uid=0, installed=True, postgres_user=False)
    assert done.returncode == 0
    assert "needs a 'postgres' user to run as" in done.stderr
    assert (
        "install it: useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres"
        in done.stderr
    )


# -- pytest without PostgreSQL: skipped with a summary line, or failed in CI ---------------------------------

SESSION_CONFTEST = """
import tests.postgres

tests.postgres.find_bin_dir = lambda: None  # a machine without PostgreSQL's server programs
pytest_plugins = ("tests.postgres",)
"""
SESSION_TESTS = """
def test_on_postgresql(postgres_url):
    pass


def test_on_both(db_url):
    pass


def test_plain():
    pass
"""


def run_session(tmp_path: Path, *, ci: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(SESSION_CONFTEST, encoding="utf-8")
    (tmp_path / "test_session.py").write_text(SESSION_TESTS, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "ERP_AI_REQUIRE_POSTGRES")}
    env["PYTHONPATH"] = str(ROOT)
    if ci:
        env["CI"] = "true"
    command = [sys.executable, "-m", "pytest", str(tmp_path), "--disable-plugin-autoload"]
    command += ["-p", "no:cacheprovider", "-q", "-rN"]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)


def test_without_postgresql_the_summary_says_its_variants_did_not_run(tmp_path: Path) -> None:
    done = run_session(tmp_path, ci=False)
    assert done.returncode == 0, done.stdout
    summary = done.stdout.strip().splitlines()[-1]
    assert "2 passed" in summary and "2 skipped" in summary
    assert (
        "PostgreSQL variants did not run: 2 tests skipped (PostgreSQL server programs (initdb, pg_ctl) are "
        "not installed: run scripts/ensure_postgres.sh"
    ) in done.stdout


def test_without_postgresql_in_ci_its_variants_fail(tmp_path: Path) -> None:
    done = run_session(tmp_path, ci=True)
    assert done.returncode == 1
    summary = done.stdout.strip().splitlines()[-1]
    assert "2 passed" in summary and "2 errors" in summary
    assert "PostgreSQL variants did not run" not in done.stdout
