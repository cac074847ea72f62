"""How the inspector orders an execution's steps (unit level; the pages are in test_browser.py)."""

from __future__ import annotations

from noetic.durable.trace import StepTrace
from noetic_inspector.reading import _in_start_order


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
