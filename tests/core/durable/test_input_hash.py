"""Replay checks what a step saw (RS-19): a step replays only for the input and item-log position
it was recorded for; when a step before it ran again with another result, it and everything
depending on it run again, so a resume never mixes old and new results."""

from __future__ import annotations

import json
from hashlib import blake2b
from types import SimpleNamespace
from typing import Any

import noetic as nt
import pytest
from noetic.durable import fingerprint
from noetic.items import ItemLog, MessageItem
from noetic.model import ModelRequest
from noetic.testing import ScriptedModel, text_reply
from noetic.testing.scripted import ScriptedReply

pytestmark = pytest.mark.anyio


def gate(crash: dict[str, bool]) -> nt.Step:
    def body(value: Any) -> Any:
        if crash["fail"]:
            raise RuntimeError("simulated crash")
        return value

    return nt.run_code("gate", body)


async def test_rs_19_a_downstream_step_reruns_when_its_unrecorded_upstream_changed(storage: Any) -> None:
    crash = {"fail": True}
    upstream = iter([(1,), (2,)])  # a tuple is not recorded (it comes back as a list): it re-runs
    seen: list[Any] = []

    def double(value: tuple[int]) -> int:
        seen.append(value)
        return value[0] * 2

    graph = nt.sequence(
        "g", [nt.run_code("up", lambda _: next(upstream)), nt.run_code("double", double), gate(crash)]
    )
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e")
        crash["fail"] = False
        resp = await h.resume("e")
    assert seen == [(1,), (2,)]  # `double` ran again on the new value
    assert resp.output == 4  # not 2, computed from the old one


async def test_rs_19_an_upstream_rerun_with_the_same_result_still_lets_downstream_replay(
    storage: Any,
) -> None:
    crash = {"fail": True}
    runs: list[str] = []

    def double(value: tuple[int]) -> int:
        runs.append("double")
        return value[0] * 2

    graph = nt.sequence("g", [nt.run_code("up", lambda _: (1,)), nt.run_code("double", double), gate(crash)])
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e")
        crash["fail"] = False
        assert (await h.resume("e")).output == 2
    assert runs == ["double"]


async def test_rs_19_a_model_step_reruns_when_an_earlier_step_appended_new_items(storage: Any) -> None:
    crash = {"fail": True}
    calls = {"n": 0}

    def reply(request: ModelRequest) -> ScriptedReply:
        calls["n"] += 1
        said = [i.text for i in request.items if isinstance(i, MessageItem) and i.role == "assistant"]
        if not said:  # the first step: a large answer, another one on each call
            return text_reply(f"draft-{calls['n']}" + " " * 6000)
        return text_reply(f"review of {said[-1].strip()}")

    model = ScriptedModel(default=reply)
    graph = nt.sequence("g", [nt.call_model("first"), nt.call_model("second"), gate(crash)])
    async with nt.AgentHarness(
        "t",
        agent_graph=graph,
        model=model,
        storage=storage.spec(),
        step_ledger_retention={"max_entry_bytes": 5000},  # `first` is not recorded: it re-runs
    ) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go", execution_id="e")
        crash["fail"] = False
        resp = await h.resume("e")
    assistant = [i.text.strip() for i in resp.items if isinstance(i, MessageItem) and i.role == "assistant"]
    # `second` had reviewed the first attempt's draft; the re-run made a new draft, so `second`
    # runs again instead of replaying a review of a draft that is no longer in the log.
    assert assistant == ["draft-3", "review of draft-3"]
    assert len(model.calls) == 4


async def test_rs_19_a_changed_input_discards_the_subtree_and_later_steps(storage: Any) -> None:
    crash = {"fail": True}
    values = iter([(1,), (5,)])  # not recorded: `up` re-runs with another result
    runs: list[str] = []

    def step(name: str, fn: Any) -> nt.Step:
        def body(value: Any) -> Any:
            runs.append(name)
            return fn(value)

        return nt.run_code(name, body)

    inner = nt.sequence("inner", [step("a", lambda v: v[0]), step("b", lambda v: v + 1)])
    graph = nt.sequence(
        "g", [nt.run_code("up", lambda _: next(values)), inner, step("c", lambda v: v * 10), gate(crash)]
    )
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e")
        crash["fail"] = False
        assert (await h.resume("e")).output == 60
    assert runs == ["a", "b", "c", "a", "b", "c"]


async def test_rs_19_an_input_nobody_can_hash_always_reruns(storage: Any) -> None:
    crash = {"fail": True}
    runs: list[str] = []

    class Opaque:
        pass

    def use(value: Any) -> str:
        runs.append("use")
        return "used"

    graph = nt.sequence("g", [nt.run_code("up", lambda _: Opaque()), nt.run_code("use", use), gate(crash)])
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e")
        crash["fail"] = False
        assert (await h.resume("e")).output == "used"
    assert runs == ["use", "use"]


@pytest.mark.parametrize(
    "value",
    [
        None,
        "é",
        1.5,
        [1, {"b": 2, "a": [True]}],
        {"model": MessageItem.model_validate({"role": "user", "content": []})},
        {3, 1},
    ],
)
def test_rs_19_the_input_is_hashed_as_the_text_earlier_releases_hashed(value: Any) -> None:
    """The hash is over `json.dumps(input, separators=(",", ":"), default=...)`, whichever way
    the text is made, so entries recorded by an earlier release replay after an upgrade."""
    ctx: Any = SimpleNamespace(item_log=ItemLog([]))  # all the hash reads of a context
    expected = blake2b(b"0:\n", digest_size=16)
    expected.update(json.dumps(value, separators=(",", ":"), default=fingerprint._plain).encode())
    assert fingerprint.input_hash(value, ctx) == expected.hexdigest()
