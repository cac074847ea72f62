"""S5, LangGraph: the S1 ReAct graph compiled with its SQLite checkpointer (`AsyncSqliteSaver`).

The documented durable setup: `langgraph-checkpoint-sqlite`'s `AsyncSqliteSaver` on an
`aiosqlite` connection (WAL, set by the saver; `synchronous` set on the connection), one
`thread_id` per round trip, and `durability="sync"`: each super-step's checkpoint is written
before the next step starts, the guarantee noetic's `durability="step"` gives (LangGraph's
default `"async"` writes it while the next step already runs).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from subjects.common import QUESTION
from subjects.langgraph_subject import FakeChatModel, _graph

NAME = "langgraph"


@asynccontextmanager
async def durable_session(path: Path, synchronous: str) -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """One graph compiled with an `AsyncSqliteSaver` on `path`; one thread per round trip."""
    async with aiosqlite.connect(str(path)) as conn:
        await conn.execute("PRAGMA journal_mode = WAL")
        await conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        graph = _graph(FakeChatModel(), with_tools=True).builder.compile(checkpointer=saver)

        async def run_once(i: int) -> str:
            config = {"configurable": {"thread_id": f"t{i}"}}
            state = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, config, durability="sync")
            return str(state["messages"][-1].content)

        yield run_once
