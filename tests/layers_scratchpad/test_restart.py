"""LY-16: with storage="sqlite:///...", scratchpad state written by one process is read by the next."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

pytestmark = pytest.mark.anyio

AGENT = Path(__file__).with_name("pad_agent.py")


async def run_agent(backend: str, db: Path, command: str, thread: str, resource: str) -> dict[str, object]:
    argv = [sys.executable, str(AGENT), backend, str(db), command, thread, resource]
    with anyio.fail_after(120):  # hang guard
        done = await anyio.run_process(argv, check=False)
    assert done.returncode == 0, done.stderr.decode()
    result: dict[str, object] = json.loads(done.stdout)
    return result


async def test_scratchpad_survives_a_process_restart(tmp_path: Path, anyio_backend: str) -> None:
    """A thread- and a resource-scoped scratchpad written in one process are there in the
    next; another thread sees only the resource's, another resource sees neither."""
    db = tmp_path / "agent.db"
    written = await run_agent(anyio_backend, db, "write", "t1", "acme")
    assert written == {"thread": {"todo": ["buy milk"]}, "resource": {"plan": "pro"}}

    assert await run_agent(anyio_backend, db, "read", "t1", "acme") == written
    assert await run_agent(anyio_backend, db, "read", "t2", "acme") == {
        "thread": {},
        "resource": {"plan": "pro"},
    }
    assert await run_agent(anyio_backend, db, "read", "t1", "other") == {
        "thread": {"todo": ["buy milk"]},
        "resource": {},
    }
