"""noetic as in `noetic_subject`, on a harness that never packs idle sessions (`hot_sessions=None`).

Beside `noetic` (the default: idle sessions past the 1,000 most recent are packed into bytes,
SE-5) it shows what packing changes in S3's time and memory at 1,000 and 10,000 threads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from subjects import noetic_subject

NAME = "noetic-unpacked"


@asynccontextmanager
async def session() -> AsyncIterator[Callable[[int], Awaitable[str]]]:
    """S3: one harness that keeps every idle session unpacked; each run is a turn on its own thread."""
    async with noetic_subject.session(hot_sessions=None) as run_once:
        yield run_once
