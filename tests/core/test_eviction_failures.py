"""A failed eviction write (a store raising its own error, not a NoeticError) keeps the
thread in memory and logs one line naming the thread and the cause — no traceback at
WARNING (it is at DEBUG) — and nothing of the thread is lost once the store recovers."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import noetic as nt
import pytest
from noetic.durable import MemoryCheckpointStore
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Flaky(MemoryCheckpointStore):
    """Refuses every history write while `fail` is set."""

    fail = True

    async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
        if self.fail and any(key.endswith(":history") for key in sets):
            raise OSError("disk full")
        await super().write(sets, deletes)


async def test_a_failed_eviction_write_is_one_line_per_thread(caplog: pytest.LogCaptureFixture) -> None:
    store = Flaky()
    model = ScriptedModel.echo()
    graph = nt.call_model("a")
    with caplog.at_level(logging.DEBUG, logger="noetic"):
        async with nt.AgentHarness(
            "f", agent_graph=graph, model=model, storage=store, max_idle_sessions=1
        ) as h:
            for thread in ("a", "b", "c"):
                await h.run(f"{thread}0", thread_id=thread)
            await h.wait_background()
            warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
            assert warnings, "the failed write was not logged"
            for record in warnings:
                assert record.exc_info is None
                text = record.getMessage()
                assert "stays in memory" in text and "OSError: disk full" in text
                assert "thread 'a'" in text or "thread 'b'" in text
            assert not any("background job" in r.getMessage() for r in caplog.records)
            assert any(r.exc_info for r in caplog.records if r.levelno == logging.DEBUG)
            store.fail = False
    async with nt.AgentHarness("f", agent_graph=graph, model=model, storage=store) as h:
        for thread in ("a", "b", "c"):
            await h.run("again", thread_id=thread)
            assert len(model.calls[-1].items) >= 3  # its first turn came back: nothing was lost
