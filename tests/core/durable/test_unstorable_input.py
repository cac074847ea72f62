"""An input that cannot be stored: the turn still runs (checkpointed without its input, RS-25),
and the warning saying so stays short."""

from __future__ import annotations

import logging
from typing import Any

import noetic as nt
import pytest

pytestmark = pytest.mark.anyio

NOT_CHECKPOINTED = "input not stored (resume needs input=)"


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


async def test_an_input_nested_thousands_deep_runs_checkpointed_without_it(
    storage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # found by a fresh-eyes run: h.run raised a raw RecursionError (from the warning's repr)
    caplog.set_level(logging.WARNING, logger="noetic")
    graph = nt.run_code("seven", lambda _: 7)
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        assert (await h.run(nested(5000), execution_id=f"deep-{storage.kind}")).output == 7
    warnings = [r.getMessage() for r in caplog.records if NOT_CHECKPOINTED in r.getMessage()]
    assert len(warnings) == 1 and f"deep-{storage.kind}" in warnings[0]


async def test_the_warning_shows_only_the_start_of_a_large_input(
    storage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="noetic")
    graph = nt.run_code("seven", lambda _: 7)
    large = {"rows": [(i, "x" * 100) for i in range(200_000)]}  # tuples: not plain JSON
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        assert (await h.run(large)).output == 7
    warnings = [r.getMessage() for r in caplog.records if NOT_CHECKPOINTED in r.getMessage()]
    assert len(warnings) == 1
    assert "rows" in warnings[0] and len(warnings[0]) < 400, warnings[0][:500]
