"""Thread and execution ids no store can keep: a string holding a lone surrogate (what
`json.loads('"\\udfff"')` gives for a damaged request) is refused at the harness's entry with
`INVALID_ID` — never a raw `UnicodeEncodeError`, never a turn that runs unrecorded — and text
ids that are not ASCII still work. Runs on both embedded stores."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import noetic as nt
import pytest
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio

BAD_THREAD = json.loads('"user-\\udfff"')
BAD_EXECUTION = json.loads('"job-\\ud800"')


def harness(storage: Any, model: ScriptedModel) -> nt.AgentHarness[Any]:
    return nt.AgentHarness("svc", agent_graph=nt.call_model("a"), model=model, storage=storage.spec())


async def test_a_turn_with_a_lone_surrogate_in_an_id_is_refused_before_it_runs(storage: Any) -> None:
    model = ScriptedModel.echo()
    async with harness(storage, model) as h:
        with pytest.raises(nt.NoeticError) as thread:
            await h.run("hi", thread_id=BAD_THREAD)
        with pytest.raises(nt.NoeticError) as execution:
            await h.run("hi", execution_id=BAD_EXECUTION)
        with pytest.raises(nt.NoeticError) as streamed:
            async with h.stream("hi", execution_id=BAD_EXECUTION) as turn:
                async for _ in turn:
                    pass
        with pytest.raises(nt.NoeticError) as executed:
            await h.execute("hi", thread_id=BAD_THREAD)
        after = await h.run("still served", thread_id="t0")
    for caught, kind in ((thread, "thread_id"), (execution, "execution_id"), (streamed, "execution_id")):
        assert caught.value.code == "INVALID_ID" and caught.value.details["kind"] == kind
        assert "lone surrogate" in caught.value.message
    assert executed.value.code == "INVALID_ID"
    assert after.output == "still served"
    assert [call.items[-1].content[0].text for call in model.calls] == ["still served"]
    assert await storage.keys("execution:job-") == []  # nothing was recorded under the bad id


async def test_resume_clear_and_delete_refuse_a_lone_surrogate(storage: Any) -> None:
    async with harness(storage, ScriptedModel.echo()) as h:
        calls = (
            h.resume(BAD_EXECUTION),
            h.clear_checkpoint(BAD_EXECUTION),
            h.delete_thread_history(BAD_THREAD),
        )
        codes = []
        for call in calls:
            with pytest.raises(nt.NoeticError) as caught:
                await call
            codes.append(caught.value.code)
    assert codes == ["INVALID_ID"] * 3


async def test_ids_of_text_beyond_ascii_are_kept(storage: Any) -> None:
    async with harness(storage, ScriptedModel.echo()) as h:
        first = await h.run("one", thread_id="用户-ß", execution_id="作业-1")
    model = ScriptedModel.echo()
    async with harness(storage, model) as h:  # a new harness reads the thread back from the store
        await h.run("two", thread_id="用户-ß")
        await h.clear_checkpoint("作业-1")
    assert first.thread_id == "用户-ß" and first.execution_id == "作业-1"
    users = [item.content[0].text for item in model.calls[-1].items if getattr(item, "role", None) == "user"]
    assert users == ["one", "two"]
    assert await storage.keys(f"execution:{quote('作业-1', safe='')}:") == []
