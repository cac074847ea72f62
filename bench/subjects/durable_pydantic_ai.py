"""S5, pydantic-ai: the S1 agent made durable by its DBOS integration, on a SQLite system database.

The documented setup of `pydantic_ai.durable_exec.dbos`: the agent carries the
`DBOSDurability()` capability and each run is `agent.run(...)` inside a `@DBOS.workflow()`, so
DBOS records the workflow, its input and result and every model request as a step in its system
database — here `system_database_url="sqlite:///…"`, DBOS's embedded option, put in WAL mode
with the same `synchronous` setting as the other subjects (DBOS opens its SQLite connections
through SQLAlchemy; a connect listener sets the pragmas). The tool is a plain function: DBOS
runs it inside the workflow without a step of its own, as the integration does by default.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from dbos import DBOS
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.models.function import FunctionModel

from subjects.common import INSTRUCTIONS, QUESTION, TOOL_NAME, add
from subjects.pydantic_ai_subject import _model

NAME = "pydantic-ai"


@asynccontextmanager
async def durable_session(path: Path, synchronous: str) -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """DBOS launched on the SQLite file `path`; each round trip is one workflow."""

    @sa.event.listens_for(sa.engine.Engine, "connect")
    def pragmas(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.execute("PRAGMA journal_mode = WAL")
        dbapi_conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")

    agent: Agent[None, str] = Agent(
        FunctionModel(_model), name="bench", instructions=INSTRUCTIONS, capabilities=[DBOSDurability()]
    )
    agent.tool_plain(name=TOOL_NAME)(add)

    @DBOS.workflow()
    async def round_trip(question: str) -> str:
        result = await agent.run(question)
        return result.output

    DBOS(config={"name": "bench", "system_database_url": f"sqlite:///{path}", "log_level": "WARNING"})
    DBOS.launch()
    try:

        async def run_once(i: int) -> str:
            return await round_trip(QUESTION)

        yield run_once
    finally:
        DBOS.destroy()
