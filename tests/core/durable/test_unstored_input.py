"""A turn whose input is not plain JSON is checkpointed all the same: its steps are recorded,
its start record says the input is not stored, and `resume` must be given the input again
(`RESUME_INPUT_REQUIRED` without it); given it, the steps recorded for it replay. Before, such
an execution had no checkpoint at all, and its resume was UNKNOWN_EXECUTION. Real SQLite."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import noetic as nt
import pytest
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class Order(BaseModel):
    id: int


@pytest.mark.parametrize(
    "value",
    [Order(id=1), (1, 2), {1: "a"}, math.nan, {"deep": [[[]]]}],
    ids=["pydantic", "tuple", "int-keys", "nan", "plain"],
)
async def test_an_unstorable_input_is_checkpointed_and_resumed_with_the_input(
    tmp_path: Path, value: Any
) -> None:
    runs: list[str] = []
    failing = {"on": True}

    def first(x: Any) -> str:
        runs.append("first")
        return "one"

    def second(x: Any) -> str:
        if failing["on"]:
            raise ConnectionError("down")
        return "done"

    graph = nt.sequence("s", [nt.run_code("first", first), nt.run_code("second", second)])
    storage = f"sqlite:///{tmp_path / 'c.db'}"
    async with nt.AgentHarness("h", agent_graph=graph, storage=storage) as h:
        with pytest.raises(nt.NoeticError):
            await h.run(value, execution_id="x")
    failing["on"] = False
    plain = isinstance(value, dict) and "deep" in value
    async with nt.AgentHarness("h", agent_graph=graph, storage=storage) as h:
        if plain:
            with pytest.raises(nt.NoeticConfigError) as wrong:
                await h.resume("x", input=value)
            assert wrong.value.code == "RESUME_INPUT_STORED"
            response = await h.resume("x")
        else:
            with pytest.raises(nt.NoeticError) as missing:
                await h.resume("x")
            assert missing.value.code == "RESUME_INPUT_REQUIRED" and "input=" in missing.value.message
            response = await h.resume("x", input=value)  # the claim was released by the refusal
    assert response.output == "done"
    assert runs == ["first"]  # recorded in the first attempt, replayed in the second
