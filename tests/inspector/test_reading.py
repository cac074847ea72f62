"""How the inspector orders an execution's steps (unit level; the pages are in test_browser.py)."""

from __future__ import annotations

from collections.abc import Sequence

import noetic as nt
import pytest
from noetic.durable import MemoryCheckpointStore
from noetic.durable.trace import StepTrace
from noetic.testing import ScriptedModel
from noetic_inspector.reading import _in_start_order, list_executions, load_execution


def _row(path: str, completed_at: str, duration_ms: float) -> StepTrace:
    return StepTrace(
        v=1,
        seq=0,
        attempt=0,
        path=path,
        step_id=path.rsplit("/", 1)[-1].split("#")[0],
        kind="code",
        completed_at=completed_at,
        duration_ms=duration_ms,
        cost="0",
        billed_cost="0",
        held_cost="0",
        usage=(0, 0, None),
    )


def test_a_parent_comes_before_a_child_whose_clock_reading_puts_it_first() -> None:
    """A start is completion minus duration, from two clocks: a child that started within
    microseconds of its parent can read as earlier. The parent still comes first."""
    parent = _row("/agent#0", "2026-12-01T12:00:00.010000+00:00", 10.0)  # started at .000000
    child = _row("/agent#0/research#0", "2026-12-01T12:00:00.004000+00:00", 4.001)  # at -.000001
    grandchild = _row("/agent#0/research#0/look#0", "2026-12-01T12:00:00.003000+00:00", 2.5)
    sibling = _row("/agent#0/answer#0", "2026-12-01T12:00:00.009000+00:00", 4.0)
    later = _row("/done#0", "2026-12-01T12:00:00.020000+00:00", 1.0)
    ordered = _in_start_order([later, sibling, grandchild, child, parent])
    assert [row.path for row in ordered] == [
        "/agent#0",
        "/agent#0/research#0",
        "/agent#0/research#0/look#0",
        "/agent#0/answer#0",
        "/done#0",
    ]


class _CountingStore(MemoryCheckpointStore):
    """A memory store that counts the history pieces it hands out."""

    def __init__(self) -> None:
        super().__init__()
        self.pieces_read = 0

    async def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        self.pieces_read += sum(":items:" in key for key in keys)
        return await super().get_many(keys)


@pytest.mark.anyio
async def test_the_execution_list_of_a_long_thread_reads_no_history_piece() -> None:
    """Each execution names a point of its thread's stored history (HS-1); a list of 30 turns
    of one thread reading that history once per execution would grow with the square."""
    store = _CountingStore()
    async with nt.AgentHarness(
        "t", agent_graph=nt.call_model("m"), model=ScriptedModel.echo(), storage=store
    ) as h:
        for turn in range(30):
            await h.run(f"turn {turn}", thread_id="th", execution_id=f"e{turn:02d}")
    store.pieces_read = 0
    listed = await list_executions(store)
    assert sorted(summary.execution_id for summary in listed) == [f"e{turn:02d}" for turn in range(30)]
    assert {summary.status for summary in listed} != {"damaged"}
    assert store.pieces_read == 0
    detail = await load_execution(store, "e29")  # one execution's page still reads it, checked
    assert detail is not None and store.pieces_read > 0
