"""A step whose output is not recorded is warned about once per execution, not once per attempt:
a resume that drops the same step again does not repeat its first attempt's warning."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import noetic as nt
import pytest

ROOT = Path(__file__).resolve().parents[3]
WARNING = "not recording"


def _graph(crash: dict[str, bool]) -> nt.Step:
    draws = iter([(1,), (2,), (3,)])  # a tuple is not plain JSON: `draw` is never recorded

    def stop(value: int) -> int:
        if crash["on"]:
            raise ConnectionError("the process went away")
        return value

    draw = nt.run_code("draw", lambda _: next(draws))
    return nt.sequence("job", [draw, nt.run_code("double", lambda d: d[0] * 2), nt.run_code("stop", stop)])


def _drop_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]


@pytest.mark.anyio
async def test_a_resume_does_not_repeat_the_drop_warning(
    storage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="noetic")
    crash = {"on": True}
    execution_id = f"drop-once-{storage.kind}-{id(crash)}"
    async with nt.AgentHarness("t", agent_graph=_graph(crash), storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run(None, execution_id=execution_id)
        with pytest.raises(nt.NoeticError):
            await h.resume(execution_id)  # still crashing: a second attempt drops `draw` again
        crash["on"] = False
        assert (await h.resume(execution_id)).output == 6
    warnings = _drop_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "/job#0/draw#0" in warnings[0] and execution_id in warnings[0]


@pytest.mark.anyio
async def test_each_execution_still_gets_its_own_warning(
    storage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="noetic")
    crash = {"on": False}
    ids = [f"drop-each-{storage.kind}-{id(crash)}-{n}" for n in range(2)]
    async with nt.AgentHarness("t", agent_graph=_graph(crash), storage=storage.spec()) as h:
        for execution_id in ids:
            await h.run(None, execution_id=execution_id)
    warnings = _drop_warnings(caplog)
    assert [next(i for i in ids if i in w) for w in warnings] == ids


def test_the_input_hashing_example_warns_once() -> None:
    """The docs/durable.md example, run as a reader runs it, prints its result and one warning."""
    page = (ROOT / "docs" / "durable.md").read_text(encoding="utf-8")
    section = page.split("### Input hashing", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    result = subprocess.run(
        [sys.executable, "-c", block.group(1)], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout == "4\n"
    assert result.stderr.count(WARNING) == 1, result.stderr
