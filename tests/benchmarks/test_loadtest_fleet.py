"""The load test's fleet: servers on loopback ports, killed with their workers, restarted on the same port.

The servers here are tiny stand-ins (a standard-library HTTP server answering 200, which starts a "worker"
child as ``erp-ai serve --workers N`` does), so the fleet's own behaviour is tested in a fraction of a
second; the real AI server runs in ``test_loadtest.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from benchmarks.loadtest_fleet import Fleet, FleetError, ServeOptions, ServerProcess, descendants

STAND_IN = """
import http.server, subprocess, sys
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print("worker", worker.pid, flush=True)

class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Ok).serve_forever()
"""


def stand_in(port: int, log: Path) -> ServerProcess:
    with log.open("ab") as output:
        return subprocess.Popen([sys.executable, "-c", STAND_IN, str(port)], stdout=output, stderr=output)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"  # not a zombie


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads the process tree from /proc")
def test_a_killed_server_dies_with_its_workers_and_comes_back_on_its_port(tmp_path: Path) -> None:
    with Fleet(stand_in, 2, startup_timeout=30, log_dir=tmp_path) as fleet:
        server = fleet.pid(1)
        assert server is not None
        workers = descendants(server)
        assert workers  # the stand-in's worker

        fleet.kill(1)

        assert not fleet.running(1)
        assert fleet.pid(1) is None
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in workers)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{fleet.urls[1]}/healthz")
        assert fleet.running(0)

        fleet.restart(1)
        fleet.wait_healthy(1)
        assert httpx.get(f"{fleet.urls[1]}/healthz").status_code == 200
        with pytest.raises(RuntimeError, match="kill it before restarting it"):
            fleet.restart(1)
    assert not fleet.running(0) and not fleet.running(1)
    assert all(url.startswith("http://127.0.0.1:") for url in fleet.urls)


def test_a_server_that_exits_at_start_fails_the_fleet_with_its_log(tmp_path: Path) -> None:
    def broken(port: int, log: Path) -> ServerProcess:
        with log.open("ab") as output:
            command = [sys.executable, "-c", "import sys; print('no model configured'); sys.exit(3)"]
            return subprocess.Popen(command, stdout=output, stderr=output)

    with pytest.raises(FleetError, match="exited: no model configured"):
        Fleet(broken, 1, startup_timeout=30, log_dir=tmp_path).start()


def test_serve_options_become_erp_ai_serve_arguments_and_environment() -> None:
    options = ServeOptions(provider="ollama", model="qwen3:8b", max_tokens=256, timeout=30)
    assert options.serve_args() == [
        "--provider", "ollama", "--model", "qwen3:8b", "--max-tokens", "256", "--timeout", "30.0",
    ]  # fmt: skip
    environment = options.environment()
    assert environment["ERP_AI_PROVIDER"] == "ollama"
    assert environment["ERP_AI_MODEL"] == "qwen3:8b"
    assert environment["ERP_AI_BASE_URL"] is None
