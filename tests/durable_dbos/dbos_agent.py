"""The agent the worker tests run: deterministic, with known costs, and a side channel.

`agent(storage)` builds a harness whose graph is five steps: `start` (code), `plan` (model,
cost 0.125), `middle` (code), `answer` (model, cost 0.25), `end` (code). Every run of every
step inserts a row (execution id, step, pid, cost) into the table `step_runs` of the database
named by `NOETIC_TEST_SIDE_CHANNEL`, so a test can count model calls and step runs across
processes, including the ones that were killed.

An execution whose id is listed in `NOETIC_TEST_PARK` as `id=step` parks in that code step
(after recording it) on its first attempt: it writes `{NOETIC_TEST_PARK_DIR}/{id}` (holding its pid) and
sleeps until it is killed. The next attempt finds the file and goes on.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import noetic as nt
import psycopg
from noetic.durable.store import CheckpointStore
from noetic.model import ModelRequest
from noetic.testing import ScriptedModel, text_reply

COSTS = {"plan": 0.125, "answer": 0.25}
MODEL_STEPS = tuple(COSTS)
CODE_STEPS = ("start", "middle", "end")
CLEAN_COST = sum(COSTS.values())


def record(execution_id: str, step: str, cost: float = 0.0) -> None:
    """One row in the side channel; retried while the server restarts, so no run goes uncounted."""
    deadline = time.monotonic() + 60
    run_id = uuid.uuid4().hex  # a retried insert whose first try committed is not counted twice
    while True:
        try:
            with psycopg.connect(os.environ["NOETIC_TEST_SIDE_CHANNEL"], autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO step_runs (run_id, execution_id, step, pid, cost) VALUES (%s, %s, %s, %s, %s)"
                    " ON CONFLICT (run_id) DO NOTHING",
                    (run_id, execution_id, step, os.getpid(), cost),
                )
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _park_here(execution_id: str, step: str) -> None:
    wanted = dict(entry.split("=", 1) for entry in os.environ.get("NOETIC_TEST_PARK", "").split(",") if entry)
    if wanted.get(execution_id) != step:
        return
    marker = Path(os.environ["NOETIC_TEST_PARK_DIR"]) / execution_id
    if marker.exists():
        return  # the attempt after the kill
    marker.write_text(str(os.getpid()))
    while True:  # until the test kills this process
        time.sleep(1)


def _code_step(step: str) -> Any:
    def run(value: Any, ctx: nt.Context) -> Any:
        record(ctx.id, step)
        _park_here(ctx.id, step)
        return value

    return nt.run_code(step, run)


def _reply(request: ModelRequest) -> Any:
    step = request.instructions or "?"
    record(request.execution_id, step, COSTS[step])
    return text_reply(f"{step} for {request.execution_id}", cost=COSTS[step])


def agent(storage: CheckpointStore) -> nt.AgentHarness:
    """The harness factory `noetic worker` is started with."""
    model = ScriptedModel(default=_reply)
    graph = nt.sequence(
        "agent",
        [
            _code_step("start"),
            nt.call_model("plan", model=model, instructions="plan"),
            _code_step("middle"),
            nt.call_model("answer", model=model, instructions="answer"),
            _code_step("end"),
        ],
    )
    return nt.AgentHarness("agent-under-test", agent_graph=graph, storage=storage, model=model)


def create_side_channel(url: str) -> None:
    """Create the `step_runs` table."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS step_runs (run_id TEXT PRIMARY KEY, execution_id TEXT NOT NULL, step TEXT NOT NULL,"
            " pid INTEGER NOT NULL, cost DOUBLE PRECISION NOT NULL, at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )


#: An agent given as a plain step: the worker builds its harness.
shout = nt.run_code("shout", lambda value: str(value).upper())
