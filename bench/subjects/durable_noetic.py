"""S5, noetic: the S1 agent on an `AgentHarness(storage="sqlite:///…?synchronous=…")`.

Each round trip is `h.run(question, thread_id=...)` on a fresh thread, checkpointed as it goes
with the default `durability="step"`: the execution's start record, each completed step's
ledger entry (the `call_model` step records its whole tool loop) and the closing snapshot,
each committed before the run goes on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import noetic as nt

from subjects.common import QUESTION
from subjects.noetic_subject import FakeModel, _agent

NAME = "noetic"


@asynccontextmanager
async def durable_session(path: Path, synchronous: str) -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """One durable harness on the SQLite file `path`; each run is a turn on its own thread."""
    storage = f"sqlite:///{path}?synchronous={synchronous}"
    async with nt.AgentHarness("bench", agent_graph=_agent(), model=FakeModel(), storage=storage) as h:

        async def run_once(i: int) -> str:
            response = await h.run(QUESTION, thread_id=f"t{i}")
            return response.text

        yield run_once
