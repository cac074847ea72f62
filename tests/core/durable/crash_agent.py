"""A durable agent that test_crash.py runs in child processes and kills with SIGKILL.

    python crash_agent.py BACKEND DB LOG (run | resume) EXECUTION_ID

The agent is a sequence of model steps `m0..m3` (a `ScriptedModel` whose reply and cost depend
only on how many answers the conversation already holds, so a resumed process gets the same
reply a clean run would) with a code step `t0..t3` after each. Every model call and every code
step run appends a line to LOG, which survives the kill.

- `NOETIC_CRASH_POINT=after_commit:STEP` kills the process right after the write that records
  STEP's ledger entry has committed; `before_commit:STEP` right before it.
- `NOETIC_HOLD_DIR=DIR` makes each code step create `DIR/entered` and wait for `DIR/go`.
- `NOETIC_SYNCHRONOUS=normal` opens the SQLite store with `synchronous="normal"`;
  `NOETIC_DURABILITY=turn` runs the harness with `durability="turn"`.

On success it prints one JSON line with the response; a `NoeticError` prints `{"error": code}`
and exits with status 3.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import noetic as nt
from noetic.durable import SqliteCheckpointStore
from noetic.items import MessageItem
from noetic.model import ModelRequest
from noetic.testing import ScriptedModel, text_reply
from noetic.testing.scripted import ScriptedReply

#: The cost of the n-th answer (powers of two: any subset has its own sum).
COSTS = (0.001, 0.002, 0.004, 0.008)
STEPS = len(COSTS)


def log_line(path: str, line: str) -> None:
    with open(path, "a") as f:
        f.write(line + "\n")


class CrashingStore(SqliteCheckpointStore):
    """The SQLite store with a named crash point around the commit of one step's entry."""

    def __init__(self, path: str, point: str, synchronous: str):
        super().__init__(path, synchronous=synchronous)
        self.when, _, self.step = point.partition(":")

    async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
        steps = {json.loads(v)["step_id"] for k, v in sets.items() if ":ledger:" in k}
        crash_here = self.step in steps
        if crash_here and self.when == "before_commit":
            os.kill(os.getpid(), signal.SIGKILL)
        await super().write(sets, deletes)
        if crash_here and self.when == "after_commit":
            os.kill(os.getpid(), signal.SIGKILL)


def build(log: str) -> tuple[nt.Step, ScriptedModel]:
    def reply(request: ModelRequest) -> ScriptedReply:
        n = sum(1 for i in request.items if isinstance(i, MessageItem) and i.role == "assistant")
        log_line(log, f"model m{n}")
        return text_reply(f"answer-{n}", cost=COSTS[n], usage={"input_tokens": 10, "output_tokens": n})

    hold = os.environ.get("NOETIC_HOLD_DIR")

    def tag(i: int) -> nt.Step:
        async def body(text: str) -> str:
            log_line(log, f"run t{i}")
            if hold:
                await anyio.Path(hold, "entered").touch()
                with anyio.fail_after(60):  # hang guard
                    while not await anyio.Path(hold, "go").exists():  # noqa: ASYNC110 - polls a file another process writes
                        await anyio.sleep(0.01)
            return f"{text}!"

        return nt.run_code(f"t{i}", body)

    steps: list[nt.Step] = []
    for i in range(STEPS):
        steps += [nt.call_model(f"m{i}"), tag(i)]
    return nt.sequence("agent", steps), ScriptedModel(default=reply)


async def main(db: str, log: str, command: str, execution_id: str) -> int:
    graph, model = build(log)
    point = os.environ.get("NOETIC_CRASH_POINT")
    synchronous = os.environ.get("NOETIC_SYNCHRONOUS", "full")
    durability = os.environ.get("NOETIC_DURABILITY", "step")
    store = (
        CrashingStore(db, point, synchronous) if point else SqliteCheckpointStore(db, synchronous=synchronous)
    )
    try:
        async with nt.AgentHarness(
            "crash", agent_graph=graph, model=model, storage=store, durability=durability
        ) as h:
            if command == "run":
                resp = await h.run("start", execution_id=execution_id)
            else:
                resp = await h.resume(execution_id)
    except nt.NoeticError as exc:
        print(json.dumps({"error": exc.code, "message": exc.message}))
        return 3
    finally:
        await store.aclose()
    result: dict[str, Any] = {
        "output": resp.output,
        "cost": resp.cost,
        "billed_cost": resp.billed_cost,
        "execution_id": resp.execution_id,
        "model_calls": len(model.calls),
        "texts": [i.text for i in resp.items if isinstance(i, MessageItem)],
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    backend, db_path, log_path, cmd, eid = sys.argv[1:6]
    sys.exit(anyio.run(main, db_path, log_path, cmd, eid, backend=backend))
