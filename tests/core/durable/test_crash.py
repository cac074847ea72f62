"""Crash tests that really crash: child processes killed with SIGKILL, resumed by new processes.

Each run uses `crash_agent.py` (four model steps `m0..m3`, each followed by a code step) on a
SQLite file, on asyncio and on trio. Reliability checks 1, 2, 4, 5 and 8: a completed step never
runs again, replay adds no billed cost, a damaged file gives a clean error, the last commit
before the kill is there, and of two resumers exactly one wins. The kill tests run for both
settings that promise to survive a killed process (`durability="step"` with SQLite's
`synchronous` full and normal, RS-22); `durability="turn"` promises only that the execution
resumes from the start of the killed turn, which is tested too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import noetic as nt
import pytest

pytestmark = pytest.mark.slow

AGENT = Path(__file__).with_name("crash_agent.py")
COSTS = (0.001, 0.002, 0.004, 0.008)
STEPS = ["m0", "t0", "m1", "t1", "m2", "t2", "m3", "t3"]
BACKENDS = ["asyncio", "trio"]


class Agent:
    """Runs crash_agent.py processes on one database and one call log."""

    def __init__(self, tmp: Path, backend: str, synchronous: str = "full"):
        self.backend = backend
        self.synchronous = synchronous
        self.db = tmp / "agent.db"
        self.log = tmp / "calls.log"

    def start(self, command: str, eid: str, **env: str) -> subprocess.Popen[str]:
        argv = [sys.executable, str(AGENT), self.backend, str(self.db), str(self.log), command, eid]
        env = {**os.environ, "NOETIC_SYNCHRONOUS": self.synchronous, **env}
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, command: str, eid: str, **env: str) -> tuple[int, dict[str, Any]]:
        proc = self.start(command, eid, **env)
        return finish(proc)

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def finish(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any]]:
    out, err = proc.communicate(timeout=120)  # hang guard
    if proc.returncode not in (0, 3, -signal.SIGKILL):
        raise AssertionError(f"agent exited {proc.returncode}:\n{err}")
    return proc.returncode, json.loads(out) if out.strip() else {}


def ran(lines: list[str]) -> list[str]:
    """Which steps did real work, from the call log ('model m1' / 'run t1')."""
    return [line.split()[1] for line in lines]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def synchronous() -> str:
    """SQLite's `synchronous` setting; tests of a killed process parametrize it over both."""
    return "full"


@pytest.fixture
def agent(backend: str, synchronous: str, tmp_path: Path) -> Agent:
    return Agent(tmp_path, backend, synchronous)


@pytest.fixture(scope="module")
def clean_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Clean, uninterrupted runs of the agent, one per backend, made on first use."""
    return {}


@pytest.fixture
def clean(
    agent: Agent, clean_runs: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The result of a clean run on the backend of `agent`."""
    if agent.backend not in clean_runs:
        code, result = Agent(tmp_path_factory.mktemp("clean"), agent.backend).run("run", "clean")
        assert code == 0
        assert result["model_calls"] == 4
        clean_runs[agent.backend] = result
    return clean_runs[agent.backend]


@pytest.mark.parametrize(
    ("crash_after", "synchronous"), [("m0", "full"), ("t1", "full"), ("m2", "full"), ("m2", "normal")]
)
def test_sigkill_after_a_commit_then_resume_never_pays_twice(
    agent: Agent, clean: dict[str, Any], crash_after: str
) -> None:
    code, _ = agent.run("run", "e1", NOETIC_CRASH_POINT=f"after_commit:{crash_after}")
    assert code == -signal.SIGKILL
    done = STEPS[: STEPS.index(crash_after) + 1]
    assert ran(agent.lines()) == done  # the kill came right after `crash_after` committed

    code, resumed = agent.run("resume", "e1")
    assert code == 0
    counts = Counter(ran(agent.lines()))
    assert set(counts.values()) == {1}
    assert sorted(counts) == sorted(STEPS)
    assert sum(1 for line in agent.lines() if line.startswith("model")) == 4  # calls == model steps
    assert resumed["output"] == clean["output"]
    assert resumed["texts"] == clean["texts"]
    assert resumed["cost"] == pytest.approx(clean["cost"])  # TU-4: restored spend included
    unpaid = [COSTS[int(s[1])] for s in STEPS if s.startswith("m") and s not in done]
    assert resumed["billed_cost"] == pytest.approx(sum(unpaid))  # TU-5: only this attempt's calls
    assert resumed["execution_id"] == "e1"


@pytest.mark.parametrize("synchronous", ["full", "normal"])
def test_sigkill_before_a_commit_reruns_only_the_step_in_flight(agent: Agent, clean: dict[str, Any]) -> None:
    code, _ = agent.run("run", "e1", NOETIC_CRASH_POINT="before_commit:m2")
    assert code == -signal.SIGKILL
    code, resumed = agent.run("resume", "e1")
    assert code == 0
    counts = Counter(ran(agent.lines()))
    assert counts["m2"] == 2  # paid, then killed before its entry committed: at-least-once
    assert {s: n for s, n in counts.items() if s != "m2"} == dict.fromkeys(set(STEPS) - {"m2"}, 1)
    assert resumed["output"] == clean["output"]
    assert resumed["cost"] == pytest.approx(clean["cost"])
    assert resumed["billed_cost"] == pytest.approx(COSTS[2] + COSTS[3])


def test_two_resumers_exactly_one_wins(agent: Agent, clean: dict[str, Any], tmp_path: Path) -> None:
    code, _ = agent.run("run", "e1", NOETIC_CRASH_POINT="after_commit:m1")
    assert code == -signal.SIGKILL
    hold = tmp_path / "hold"
    hold.mkdir()
    first = agent.start("resume", "e1", NOETIC_HOLD_DIR=str(hold))
    deadline = time.monotonic() + 60  # hang guard
    while not (hold / "entered").exists():
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "the first resumer never reached its held step"
        time.sleep(0.01)
    code, second = agent.run("resume", "e1")
    assert (code, second["error"]) == (3, "EXECUTION_LOCKED")
    (hold / "go").touch()
    code, won = finish(first)
    assert code == 0
    assert won["output"] == clean["output"]
    assert Counter(ran(agent.lines()))["m2"] == 1  # the loser did no work


def test_turn_durability_a_kill_mid_turn_resumes_from_the_turn_start(
    agent: Agent, clean: dict[str, Any], tmp_path: Path
) -> None:
    hold = tmp_path / "hold"
    hold.mkdir()
    proc = agent.start("run", "e1", NOETIC_HOLD_DIR=str(hold), NOETIC_DURABILITY="turn")
    deadline = time.monotonic() + 60  # hang guard
    while not (hold / "entered").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached its held step"
        time.sleep(0.01)
    proc.kill()  # SIGKILL inside t0: m0 completed, but nothing of the turn was committed
    assert finish(proc)[0] == -signal.SIGKILL
    code, resumed = agent.run("resume", "e1", NOETIC_DURABILITY="turn")
    assert code == 0
    assert Counter(ran(agent.lines()))["m0"] == 2  # at-least-once: the killed turn's call is paid again
    assert resumed["output"] == clean["output"]
    assert resumed["billed_cost"] == pytest.approx(sum(COSTS))


def test_a_torn_wal_resumes_from_the_last_intact_commit_or_fails_cleanly(
    agent: Agent, clean: dict[str, Any]
) -> None:
    code, _ = agent.run("run", "e1", NOETIC_CRASH_POINT="after_commit:m3")
    assert code == -signal.SIGKILL
    wal = agent.db.with_name(agent.db.name + "-wal")
    assert wal.stat().st_size > 0
    with wal.open("r+b") as f:
        f.truncate(wal.stat().st_size * 2 // 3)  # a torn tail: the last commits are cut
    code, resumed = agent.run("resume", "e1")
    if code == 3:
        assert resumed["error"] == "CHECKPOINT_CORRUPT"
    else:
        assert code == 0
        assert resumed["output"] == clean["output"]
        assert resumed["cost"] == pytest.approx(clean["cost"])


# --- a damaged database file (in process) ---------------------------------------------------


def truncate_to_one_page(data: bytes) -> bytes:
    return data[:4096]


def garble_header(data: bytes) -> bytes:
    return b"not a database!" + data[15:]


def flip_a_digit_in_the_snapshot(data: bytes) -> bytes:
    at = data.index(b'"first_item":') + len(b'"first_item":')
    return data[:at] + (b"7" if data[at : at + 1] != b"7" else b"8") + data[at + 1 :]


@pytest.mark.anyio
@pytest.mark.parametrize("damage", [truncate_to_one_page, garble_header, flip_a_digit_in_the_snapshot])
async def test_a_damaged_database_is_a_clean_error_never_a_wrong_resume(tmp_path: Path, damage: Any) -> None:
    url = f"sqlite:///{tmp_path / 'run.db'}"
    graph = nt.sequence("g", [nt.run_code(f"s{i}", lambda x: f"{x}+{'x' * 3000}") for i in range(4)])
    async with nt.AgentHarness("t", agent_graph=graph, storage=url) as h:
        resp = await h.run("go")
    db = tmp_path / "run.db"
    assert not db.with_name("run.db-wal").exists() or db.with_name("run.db-wal").stat().st_size == 0
    db.write_bytes(damage(db.read_bytes()))
    async with nt.AgentHarness("t", agent_graph=graph, storage=url) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.resume(resp.execution_id)
    assert err.value.code == "CHECKPOINT_CORRUPT"
    # a damaged row: clear that execution; a damaged file: no execution's clear can repair it
    hint = "clear_checkpoint" if damage is flip_a_digit_in_the_snapshot else "restore it from a backup"
    assert hint in err.value.message
