"""S5, the limit: the hand-written loop of `limit_subject` making every step durable itself.

One SQLite table of steps and one commit per step of the loop: the run's input, then each
model round — its reply together with the results of the tools it called, committed once they
ran — so three commits a round trip, as many as noetic makes. On the event loop's own thread (no
framework, no worker thread), in WAL mode with the given `synchronous` setting. Nothing can
persist the same steps with less work.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from subjects.common import INSTRUCTIONS, QUESTION, add
from subjects.limit_subject import AddArgs, _model

NAME = "limit"


async def _durable_agent(conn: sqlite3.Connection, run: str, question: str) -> str:
    def commit(seq: int, *step: dict[str, Any]) -> None:
        conn.execute("INSERT INTO steps (run, seq, body) VALUES (?, ?, ?)", (run, seq, json.dumps(step)))

    messages: list[dict[str, Any]] = [
        {"type": "message", "role": "system", "content": INSTRUCTIONS},
        {"type": "message", "role": "user", "content": question},
    ]
    commit(0, messages[-1])
    while True:
        final: dict[str, Any] = {}
        async for event in _model(messages, ()):
            final = event
        messages.append(final)
        if final["type"] == "message":
            commit(len(messages), final)
            return str(final["content"])
        args = AddArgs.model_validate_json(final["arguments"])
        result = json.dumps(add(args.a, args.b))
        output = {"type": "function_call_output", "call_id": final["call_id"], "output": result}
        messages.append(output)
        commit(len(messages), final, output)


@asynccontextmanager
async def durable_session(path: Path, synchronous: str) -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """One connection in autocommit mode: every INSERT is its own commit."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
    conn.execute(
        "CREATE TABLE steps (run TEXT, seq INTEGER, body TEXT NOT NULL, PRIMARY KEY (run, seq)) WITHOUT ROWID"
    )
    try:

        async def run_once(i: int) -> str:
            return await _durable_agent(conn, f"r{i}", QUESTION)

        yield run_once
    finally:
        conn.close()
