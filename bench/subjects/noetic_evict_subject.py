"""noetic as in `noetic_subject`, on a harness that evicts idle sessions beyond 1,000.

Every S3 run is a one-turn thread nobody comes back to; a service serving such threads sets
`max_idle_sessions` (without `storage=`, an evicted thread's history is dropped), so the
harness does not keep a session per run the way the default (`noetic`) does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from subjects import noetic_subject

NAME = "noetic-evict"
MAX_IDLE_SESSIONS = 1000


@asynccontextmanager
async def session() -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """S3: one evicting harness; each run is a turn on its own thread."""
    async with noetic_subject.session(max_idle_sessions=MAX_IDLE_SESSIONS) as run_once:
        yield run_once
