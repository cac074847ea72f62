"""`Fleet`: worker processes started with `noetic worker`, as a user would start them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
from dbos_agent import create_side_channel

HERE = Path(__file__).resolve().parent
AGENT = "dbos_agent:agent"


class Fleet:
    """Worker processes started with `noetic worker`, as a user would; all stopped at teardown."""

    def __init__(self, url: str, tmp: Path):
        create_side_channel(url)
        self.url = url
        self.park_dir = tmp / "parked"
        self.park_dir.mkdir()
        self.logs = tmp / "logs"
        self.logs.mkdir()
        self.env = {
            **os.environ,
            "PYTHONPATH": str(HERE),
            "NOETIC_TEST_SIDE_CHANNEL": url,
            "NOETIC_TEST_PARK_DIR": str(self.park_dir),
            "NOETIC_TEST_PARK": "",
        }
        self.workers: list[subprocess.Popen[bytes]] = []

    def park(self, where: dict[str, str]) -> None:
        """Make these executions (id -> code step) park on their first attempt, for workers started later."""
        self.env["NOETIC_TEST_PARK"] = ",".join(f"{eid}={step}" for eid, step in where.items())

    def start(
        self, *, concurrency: int = 1, lease: float = 1.5, agents: tuple[str, ...] = (AGENT,)
    ) -> subprocess.Popen[bytes]:
        """One more worker: fast heartbeats and short leases, so recovery takes seconds."""
        storage = f"{self.url}?claim_lease={lease}"
        log = (self.logs / f"worker-{len(self.workers)}.log").open("wb")
        argv = [sys.executable, "-m", "noetic.cli", "worker", "--storage", storage, *agents]
        argv += ["--concurrency", str(concurrency), "--heartbeat", "0.3", "--dead-after", "1.5"]
        argv += ["--poll-interval", "0.05"]
        process = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.workers.append(process)
        return process

    def noetic(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """Run a `noetic` command as a user would."""
        return subprocess.run(
            [sys.executable, "-m", "noetic.cli", *argv],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )

    def stop(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.terminate()
        for process in self.workers:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def step_runs(self) -> list[tuple[str, str, int, float]]:
        """Every (execution id, step, pid, cost) the agent recorded, in order."""
        with psycopg.connect(self.url) as conn:
            rows = conn.execute("SELECT execution_id, step, pid, cost FROM step_runs ORDER BY at").fetchall()
        return [(str(e), str(s), int(p), float(c)) for e, s, p, c in rows]
