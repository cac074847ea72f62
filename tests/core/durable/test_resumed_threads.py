"""No turn of a thread is silently lost: resuming an older execution keeps the turns the thread
ran since (TH-1), and a thread history deleted by another harness is not written back (TH-2)."""

from __future__ import annotations

import logging
from typing import Any

import noetic as nt
import pytest
from noetic.durable import MemoryCheckpointStore
from noetic.durable.history import thread_prefix
from noetic.items import MessageItem
from noetic.model import ModelRequest
from noetic.sessions import history_key
from noetic.testing import ScriptedModel, text_reply
from noetic.testing.scripted import ScriptedReply

from .conftest import Storage

pytestmark = pytest.mark.anyio


def _texts(items: Any) -> list[str]:
    return [part.text for item in items if isinstance(item, MessageItem) for part in item.content]


class _Agent:
    """A model answering `re:<last user text>` and, after it, a step that fails while
    `failing` is set (a crash stand-in, in process)."""

    def __init__(self) -> None:
        self.failing = False
        self.model = ScriptedModel(default=self._reply)
        self.graph = nt.sequence("g", [nt.call_model("m"), nt.run_code("after", self._after)])

    @staticmethod
    def _reply(request: ModelRequest) -> ScriptedReply:
        users = [item for item in request.items if isinstance(item, MessageItem) and item.role == "user"]
        return text_reply(f"re:{_texts(users[-1:])[0]}")

    def _after(self, value: Any) -> Any:
        if self.failing:
            raise ConnectionError("down")
        return value

    def harness(self, storage: Any, **options: Any) -> nt.AgentHarness[Any]:
        return nt.AgentHarness("t", agent_graph=self.graph, model=self.model, storage=storage, **options)

    def last_seen(self) -> list[str]:
        """What the model saw on its last call."""
        return _texts(self.model.calls[-1].items)

    async def fail_once(self, h: nt.AgentHarness[Any], text: str, execution_id: str) -> None:
        self.failing = True
        with pytest.raises(nt.NoeticError) as err:
            await h.run(text, thread_id="th", execution_id=execution_id)
        assert err.value.code == "step_failed"
        self.failing = False


# --- TH-1: a resumed execution and a thread that moved on -------------------------------------


async def test_th_1_resuming_an_older_execution_keeps_the_later_turns(storage: Storage) -> None:
    agent = _Agent()
    async with agent.harness(storage.spec()) as h:
        await agent.fail_once(h, "first", "ex")
        await h.run("second", thread_id="th")
        resumed = await h.resume("ex")
        # the execution itself still runs on its own log (RS-14) ...
        assert _texts(resumed.items) == ["first", "re:first"] and resumed.output == "re:first"
        await h.run("third", thread_id="th")
        # ... and the thread's history lost nothing: "second" is still there, nothing repeated
        assert agent.last_seen() == ["first", "re:first", "second", "re:second", "third"]
    async with agent.harness(storage.spec()) as later:  # the stored record says the same
        await later.run("fourth", thread_id="th")
    assert agent.last_seen() == ["first", "re:first", "second", "re:second", "third", "re:third", "fourth"]


async def test_th_1_what_the_resume_adds_is_appended_after_the_later_turns(storage: Storage) -> None:
    failing = {"on": True}

    def before(value: Any) -> Any:
        if failing["on"]:
            raise ConnectionError("down")
        return value

    agent = _Agent()
    graph = nt.sequence("g", [nt.run_code("before", before), nt.call_model("m")])
    async with nt.AgentHarness("t", agent_graph=graph, model=agent.model, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("x", thread_id="th", execution_id="ex")  # fails before the model runs
        failing["on"] = False
        await h.run("y", thread_id="th")
        resumed = await h.resume("ex")  # its model call runs now, on the execution's own log
        assert agent.last_seen() == ["x"] and _texts(resumed.items) == ["x", "re:x"]
        await h.run("z", thread_id="th")
        # "x" entered the log only when the resume ran its model step: it comes after "y"
        assert agent.last_seen() == ["y", "re:y", "x", "re:x", "z"]


async def test_th_1_a_resume_that_fails_again_and_then_succeeds_repeats_nothing(storage: Storage) -> None:
    agent = _Agent()
    async with agent.harness(storage.spec()) as h:
        await agent.fail_once(h, "first", "ex")
        await h.run("second", thread_id="th")
        agent.failing = True
        with pytest.raises(nt.NoeticError):
            await h.resume("ex")
        agent.failing = False
        await h.resume("ex")
        await h.run("third", thread_id="th")
        assert agent.last_seen() == ["first", "re:first", "second", "re:second", "third"]


async def test_th_1_an_evicted_thread_is_read_back_before_the_resume(storage: Storage) -> None:
    agent = _Agent()
    async with agent.harness(storage.spec(), max_idle_sessions=0) as h:  # every turn's end evicts
        await agent.fail_once(h, "first", "ex")
        await h.run("second", thread_id="th")
        await h.wait_background()
        await h.resume("ex")
        await h.wait_background()
        await h.run("third", thread_id="th")
        assert agent.last_seen() == ["first", "re:first", "second", "re:second", "third"]


async def test_th_1_a_resume_in_a_new_harness_keeps_the_turns_stored_since(storage: Storage) -> None:
    agent = _Agent()
    async with agent.harness(storage.spec()) as h:
        await agent.fail_once(h, "first", "ex")
    async with agent.harness(storage.spec()) as h:
        await h.run("second", thread_id="th")
    async with agent.harness(storage.spec()) as h:
        await h.resume("ex")
    async with agent.harness(storage.spec()) as h:
        await h.run("third", thread_id="th")
    assert agent.last_seen() == ["first", "re:first", "second", "re:second", "third"]


async def test_th_1_a_resume_of_the_last_turn_still_continues_the_thread(storage: Storage) -> None:
    agent = _Agent()
    async with agent.harness(storage.spec()) as h:
        await agent.fail_once(h, "first", "ex")
    async with agent.harness(storage.spec()) as h:  # the thread has not moved on
        await h.resume("ex")
        await h.run("second", thread_id="th")
    assert agent.last_seen() == ["first", "re:first", "second"]


async def test_th_1_a_damaged_thread_record_does_not_stop_a_resume_but_is_named(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    agent = _Agent()
    async with agent.harness(storage.spec()) as h:
        await agent.fail_once(h, "first", "ex")
    await storage.edit(history_key("th"), lambda text: text.replace('"thread_id":"th"', '"thread_id":"zz"'))
    with caplog.at_level(logging.WARNING, logger="noetic.harness"):
        async with agent.harness(storage.spec()) as h:
            resumed = await h.resume("ex")
            await h.run("second", thread_id="th")
    assert resumed.output == "re:first"
    assert agent.last_seen() == ["first", "re:first", "second"]
    assert any("'th'" in r.getMessage() and "'ex'" in r.getMessage() for r in caplog.records)


# --- TH-2: a thread history deleted by another harness ----------------------------------------


def _deleted_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "was deleted" in r.getMessage()]


@pytest.mark.parametrize("read_back", [False, True], ids=["new-thread", "read-back"])
async def test_th_2_a_history_deleted_by_another_harness_is_not_written_back(
    storage: Storage, caplog: pytest.LogCaptureFixture, read_back: bool
) -> None:
    agent = _Agent()
    if read_back:  # harness A then reads the thread's record back instead of starting it
        async with agent.harness(storage.spec()) as h:
            await h.run("old secret", thread_id="th")
    with caplog.at_level(logging.WARNING, logger="noetic.sessions"):
        async with agent.harness(storage.spec()) as a:
            await a.run("my secret is 42", thread_id="th")
            await a.run("more secrets", thread_id="th")
            async with agent.harness(storage.spec()) as admin:
                await admin.delete_thread_history("th")
            await a.run("another user", thread_id="other")
    assert await storage.keys(thread_prefix("th")) == []  # nothing came back
    assert len(_deleted_warnings(caplog)) == 1 and "'th'" in _deleted_warnings(caplog)[0]
    async with agent.harness(storage.spec()) as later:
        await later.run("what do you know?", thread_id="th")
    assert agent.last_seen() == ["what do you know?"]


async def test_th_2_an_evicted_session_of_a_deleted_history_leaves_without_writing(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    agent = _Agent()
    with caplog.at_level(logging.WARNING, logger="noetic.sessions"):
        async with agent.harness(storage.spec(), max_idle_sessions=1) as a:
            await a.run("my secret is 42", thread_id="th")
            await a.run("more secrets", thread_id="th")  # its start stored the first turn
            async with agent.harness(storage.spec()) as admin:
                await admin.delete_thread_history("th")
            await a.run("another user", thread_id="other")  # "th" is evicted now
            await a.wait_background()
            assert await storage.keys(thread_prefix("th")) == []
            assert len(_deleted_warnings(caplog)) == 1
            await a.run("again", thread_id="th")  # read back: there is nothing to read
            assert agent.last_seen() == ["again"]


async def test_th_2_a_thread_started_over_elsewhere_is_not_overwritten(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    agent = _Agent()
    with caplog.at_level(logging.WARNING, logger="noetic.sessions"):
        async with agent.harness(storage.spec()) as a:
            await a.run("my secret is 42", thread_id="th")
            await a.run("more secrets", thread_id="th")
            async with agent.harness(storage.spec()) as admin:
                await admin.delete_thread_history("th")
                await admin.run("a fresh start", thread_id="th")
    assert len(_deleted_warnings(caplog)) == 1
    async with agent.harness(storage.spec()) as later:
        await later.run("next", thread_id="th")
    assert agent.last_seen() == ["a fresh start", "re:a fresh start", "next"]


class _HistoryReadFails(MemoryCheckpointStore):
    """A store whose listing of one thread's history record fails while `failing` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = False

    async def list_prefix(self, prefix: str) -> list[str]:
        if self.failing and prefix == history_key("th"):
            raise nt.NoeticError("CHECKPOINT_STORE_FAILED", "the store is unreachable")
        return await super().list_prefix(prefix)


async def test_th_1_a_resume_stopped_by_an_unreadable_thread_history_can_be_retried() -> None:
    agent, store = _Agent(), _HistoryReadFails()
    async with agent.harness(store) as h:
        await agent.fail_once(h, "first", "ex")
    async with agent.harness(store) as h:  # a new harness: the thread's history is read back first
        store.failing = True
        with pytest.raises(nt.NoeticError) as err:
            await h.resume("ex")
        assert err.value.code == "CHECKPOINT_STORE_FAILED"
        store.failing = False
        resumed = await h.resume("ex")  # the failed attempt let go of the execution's claim
    assert resumed.output == "re:first"


def _rate_limited(request: ModelRequest) -> ScriptedReply:
    raise nt.NoeticError("rate_limited", "429")


async def test_th_1_a_model_call_that_failed_mid_step_is_not_repeated_after_its_resume(
    storage: Storage,
) -> None:
    """The failed attempt left its input in the thread's log, past the execution's last
    checkpoint; no other turn ran, so the execution's log becomes the thread's (nothing twice)."""
    model = ScriptedModel([_rate_limited, text_reply("done")], default=lambda r: text_reply("next"))
    async with nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("q1", thread_id="th", execution_id="ex")
        await h.resume("ex")
        await h.run("q2", thread_id="th")
        assert _texts(model.calls[-1].items) == ["q1", "done", "q2"]
    async with nt.AgentHarness(
        "t", agent_graph=nt.call_model("m"), model=model, storage=storage.spec()
    ) as later:
        await later.run("q3", thread_id="th")  # the stored record names the last execution too
    assert _texts(model.calls[-1].items) == ["q1", "done", "q2", "next", "q3"]


async def test_th_1_the_record_names_the_execution_whose_turn_ended_last(storage: Storage) -> None:
    """A harness that only read the thread's record back still tells a resume of the thread's
    last turn (no duplicate) from one of an older execution (the later turns kept)."""
    model = ScriptedModel([_rate_limited, text_reply("done")], default=lambda r: text_reply("next"))
    async with nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("q1", thread_id="th", execution_id="ex")
    async with nt.AgentHarness(
        "t", agent_graph=nt.call_model("m"), model=model, storage=storage.spec()
    ) as later:
        await later.resume("ex")
        await later.run("q2", thread_id="th")
    assert _texts(model.calls[-1].items) == ["q1", "done", "q2"]


async def test_th_1_a_packed_thread_that_cannot_be_read_back_fails_only_its_resume(storage: Storage) -> None:
    from noetic.packed_sessions import PackedSession

    agent = _Agent()
    async with agent.harness(storage.spec(), hot_sessions=0) as h:
        await agent.fail_once(h, "first", "ex")
        await h.run("other", thread_id="elsewhere")  # "th" is packed now
        session = h._sessions._live["th"]
        assert isinstance(session.packed, PackedSession)
        session.packed._data = b"not a pickle"  # what a value that fails to read back leaves
        with pytest.raises(nt.NoeticError) as caught:
            await h.resume("ex")
        assert caught.value.code == "SESSION_UNPACK_FAILED"
        assert (await h.run("still served", thread_id="elsewhere")).text == "re:still served"
