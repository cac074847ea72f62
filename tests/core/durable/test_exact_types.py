"""RS-14: a step's output is replayed only when JSON gives back the very same types.

An `Enum` member, a `str` subclass, an `OrderedDict` or a named tuple survives `json.dumps`
but comes back as a plain `str`, `int`, `dict` or `list`: such a step is not recorded and runs
again on resume, so the step after it sees the same type in both attempts.
"""

from __future__ import annotations

import collections
import enum
from pathlib import Path
from typing import Any

import noetic as nt
import pytest
from noetic.durable.snapshot import is_plain_json

pytestmark = pytest.mark.anyio


class Status(str, enum.Enum):  # noqa: UP042 - the (str, Enum) form users write
    OK = "ok"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


Point = collections.namedtuple("Point", "x y")


@pytest.mark.parametrize(
    "value",
    [Status.OK, Level.HIGH, Name("a"), collections.OrderedDict(a=1), Point(1, 2), {"k": Status.OK}],
    ids=["str-enum", "int-enum", "str-subclass", "ordered-dict", "namedtuple", "nested-enum"],
)
async def test_a_resumed_step_sees_the_type_it_saw_first(tmp_path: Path, value: Any) -> None:
    seen: list[str] = []
    failing = {"on": True}

    def stop(x: Any) -> Any:
        if failing["on"]:
            raise ConnectionError("down")
        return "done"

    graph = nt.sequence(
        "j",
        [
            nt.run_code("make", lambda _: value),
            # a tuple is never recorded either: this step runs in both attempts and looks
            nt.run_code("use", lambda v: seen.append(type(v).__name__) or ("used",)),
            nt.run_code("stop", stop),
        ],
    )
    storage = f"sqlite:///{tmp_path / 'c.db'}"
    async with nt.AgentHarness("e", agent_graph=graph, storage=storage) as h:
        with pytest.raises(nt.NoeticError):
            await h.run(None, execution_id="x")
    failing["on"] = False
    async with nt.AgentHarness("e", agent_graph=graph, storage=storage) as h:
        assert (await h.resume("x")).output == "done"
    assert seen == [type(value).__name__] * 2


def test_plain_json_is_type_exact() -> None:
    assert is_plain_json({"a": [1, 2.5, "s", True, None]})
    for value in (float("nan"), (1,), {1: "a"}, Status.OK, [Level.HIGH], collections.OrderedDict()):
        assert not is_plain_json(value)
    deep: list[Any] = []
    for _ in range(5):
        deep = [deep]
    assert is_plain_json(deep, max_depth=6)
    assert not is_plain_json(deep, max_depth=5)
    cycle: list[Any] = []
    cycle.append(cycle)
    assert not is_plain_json(cycle)  # the depth bound ends the walk
