"""One pass of the event loop for a turn that waits to start, at the least cost in objects (GC-2).

`AgentHarness.run` yields once (asyncio) or twice (trio) before it queues its input, so that
a task started just before it (a watcher of `get_item_stream()`) subscribes first (HA-5).
In a burst of concurrent runs (10,000 `run()` calls gathered at once) every one of those
turns sits in that yield at the same time, and each object its wait holds is one more for the
cyclic garbage collector to walk on every full collection while the burst lasts.

`anyio.lowlevel.checkpoint()` is right but nested: on asyncio it waits in four objects
(anyio's `checkpoint`, the backend's `checkpoint`, `asyncio.sleep` and its `sleep(0)`
generator), on trio in five. `pass_for(scope_type)` picks, once per harness, the shortest
equivalent for the event loop the harness runs on:

- asyncio: one generator with a bare `yield`. That is exactly what `asyncio.sleep(0)` (and
  so anyio's checkpoint on asyncio) waits in: the task is scheduled again for the next loop
  iteration, and a cancellation (`Task.cancel`, which anyio's cancel scopes use) is thrown in
  at the yield. Written by hand because no public asyncio or anyio call waits in fewer
  objects, and the core imports no asyncio.
- trio: `trio.lowlevel.checkpoint` itself (a schedule point and a cancellation point, what
  anyio calls on trio), without anyio's two wrappers.
- anything else (and before the harness has started): `anyio.lowlevel.checkpoint`.

Importing this module imports neither `anyio.lowlevel` nor trio (`import noetic` stays
light); they are looked up when a harness starts, on an event loop that has loaded them.
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any

__all__ = ["SchedulerPass", "pass_for"]

#: Awaiting what it returns lets every other ready task run once, then goes on (it may raise
#: the event loop's cancellation).
SchedulerPass = Callable[[], Awaitable[None]]


@types.coroutine
def _asyncio_pass() -> Generator[None, None, None]:
    """Give the event loop one iteration: a bare yield, what `asyncio.sleep(0)` waits in."""
    yield


async def _anyio_checkpoint() -> None:
    """anyio's checkpoint, for an event loop this module does not know."""
    import anyio.lowlevel

    await anyio.lowlevel.checkpoint()


def pass_for(scope_type: type[Any] | None) -> SchedulerPass:
    """The cheapest scheduler pass for the event loop whose cancel-scope class is
    `scope_type` (anyio's, per backend), or anyio's own checkpoint when it is not known."""
    module = "" if scope_type is None else scope_type.__module__
    if module.endswith("._asyncio"):
        return _asyncio_pass
    if module.endswith("._trio"):
        import trio.lowlevel

        return trio.lowlevel.checkpoint
    return _anyio_checkpoint
