"""Idle-session eviction (SE-1..SE-4): bounded memory, and history back from storage."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.durable.memory import MemoryCheckpointStore
from noetic.errors import NoeticError
from noetic.items import item_text
from noetic.sessions import DEFAULT_MAX_IDLE_SESSIONS, history_key
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def _texts(model: ScriptedModel) -> list[str]:
    """The message texts the model saw in its last request."""
    return [item_text(item) for item in model.calls[-1].items if item_text(item)]


def _harness(model: ScriptedModel, **options: Any) -> nt.AgentHarness[str]:
    return nt.AgentHarness("t", agent_graph=nt.call_model("answer"), model=model, **options)


async def test_without_storage_nothing_is_evicted_by_default() -> None:
    model = ScriptedModel.echo()
    async with _harness(model) as h:
        for i in range(30):
            await h.run(f"hello {i}", thread_id=f"t{i}")
        assert len(h._sessions) == 30
        await h.run("again", thread_id="t0")
        assert _texts(model) == ["hello 0", "hello 0", "again"]


async def test_with_storage_the_default_is_a_count_bound() -> None:
    async with _harness(ScriptedModel.echo(), storage="memory://") as h:
        assert h._sessions.policy.max_idle == DEFAULT_MAX_IDLE_SESSIONS
        assert h._sessions.policy.idle_timeout is None


async def test_without_storage_an_evicted_thread_starts_over() -> None:
    model = ScriptedModel.echo()
    async with _harness(model, max_idle_sessions=2) as h:
        for i in range(5):
            await h.run(f"hello {i}", thread_id=f"t{i}")
        assert len(h._sessions) == 2
        assert h._sessions.evicted == 3
        await h.run("again", thread_id="t0")  # evicted: no history (SE-3)
        assert _texts(model) == ["again"]
        with pytest.raises(NoeticError) as err:
            await h.get_agent_response(thread_id="t1")
        assert err.value.code == "NO_STEP_CONFIGURED"
        assert "may have been evicted" in err.value.message  # not only "has not run a turn"
        await h.run("again", thread_id="t4")  # the most recently used one stayed
        assert _texts(model) == ["hello 4", "hello 4", "again"]


@pytest.mark.parametrize("options", [{"max_idle_sessions": 1}, {"session_idle_timeout": 0}])
async def test_with_storage_an_evicted_thread_comes_back_with_its_history(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    model = ScriptedModel.echo()
    async with _harness(model, storage=f"sqlite:///{tmp_path / 'run.db'}", **options) as h:
        await h.run("my name is Ada", thread_id="ada")
        await h.run("hello", thread_id="bob")
        await h.wait_background()  # the history is written out in the background
        assert "ada" not in h._sessions._live
        store = h._checkpoint_store()
        assert store is not None
        assert await store.get(history_key("ada")) is not None
        response = await h.run("what is my name?", thread_id="ada")
        assert _texts(model) == ["my name is Ada", "my name is Ada", "what is my name?"]
        assert [item_text(item) for item in response.items] == [
            "my name is Ada",
            "my name is Ada",
            "what is my name?",
            "what is my name?",
        ]
        await h.wait_background()
        record = await store.get(history_key("ada"))
        assert record is not None
        if "max_idle_sessions" in options:  # read back and kept: ada is in memory now
            assert record.count('"role":"user"') == 1
        else:  # idle for 0 s: evicted again, with the whole history
            assert record.count('"role":"user"') == 2


async def test_a_large_history_is_written_in_parts_and_comes_back_whole() -> None:
    store = MemoryCheckpointStore()
    model = ScriptedModel.echo()
    big = "x" * 300_000
    async with _harness(model, storage=store, max_idle_sessions=0) as h:
        await h.run(big, thread_id="big")
        await h.wait_background()
        assert any(":part:" in key for key in await store.list_prefix(history_key("big")))
        await h.run("and now?", thread_id="big")
        assert _texts(model) == [big, big, "and now?"]
        await h.wait_background()  # evicted again: the record now holds both turns, in parts
    record = await store.get_many(await store.list_prefix(history_key("big")))
    assert sum(text.count("and now?") for text in record.values()) == 2


async def test_a_thread_with_a_subscriber_or_a_running_turn_is_not_evicted() -> None:
    release = anyio.Event()

    async def slow(value: str, ctx: nt.Context) -> str:
        await release.wait()
        return value

    model = ScriptedModel.echo()
    slow_step, answer = nt.run_code("slow", slow), nt.call_model("answer")
    graph: Any = nt.conditional("route", lambda value, ctx: slow_step if ctx.thread_id == "busy" else answer)
    async with nt.AgentHarness("t", agent_graph=graph, model=model, max_idle_sessions=0) as h:
        seen: list[str] = []

        async def watch() -> None:
            async for event in h.get_full_stream(thread_id="watched"):
                seen.append(event.type)

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await anyio.wait_all_tasks_blocked()
            await h.execute("work", thread_id="busy")
            await anyio.wait_all_tasks_blocked()
            for i in range(5):
                await h.run(f"hello {i}", thread_id=f"t{i}")
            assert {"watched", "busy"} <= set(h._sessions._live)
            await h.run("now", thread_id="watched")
        assert seen[0] == "t:turn_started" and seen[-1] == "t:turn_completed"
        release.set()
        assert (await h.get_agent_response(thread_id="busy")).output == "work"


async def test_a_stream_iterator_of_an_evicted_thread_ends_instead_of_hanging() -> None:
    async with _harness(ScriptedModel.echo(), max_idle_sessions=0) as h:
        await h.run("hello", thread_id="a")
        events = h.get_full_stream(thread_id="a")  # made now, first read after an eviction
        await h.run("hello", thread_id="b")
        assert "a" not in h._sessions._live
        with anyio.fail_after(5):
            assert [event async for event in events] == []
        async with h.stream("again", thread_id="a") as turn:  # a streamed turn finds the live session
            types = [event.type async for event in turn]
        assert types[0] == "t:turn_started" and types[-1] == "t:turn_completed"


async def test_a_damaged_history_record_fails_the_turn_with_checkpoint_corrupt() -> None:
    store = MemoryCheckpointStore()
    await store.set(history_key("x"), '{"v": 1, "thread_id": "someone else", "items": {"items": []}}')
    async with _harness(ScriptedModel.echo(), storage=store) as h:
        with pytest.raises(NoeticError) as err:
            await h.run("hello", thread_id="x")
        assert err.value.code == "CHECKPOINT_CORRUPT"
        assert "someone else" in err.value.message
        await store.delete(history_key("x"))
        assert (await h.run("hello", thread_id="x")).text == "hello"


class _FailingWrites(MemoryCheckpointStore):
    """A store whose batch writes fail (a full disk, a lost server)."""

    async def write(self, sets: Any, deletes: Any = ()) -> None:
        if any(key.startswith("thread:") for key in sets):
            raise NoeticError("CHECKPOINT_STORE_FAILED", "the disk is full")
        await super().write(sets, deletes)


async def test_a_history_that_cannot_be_written_stays_in_memory() -> None:
    model = ScriptedModel.echo()
    async with _harness(model, storage=_FailingWrites(), max_idle_sessions=0) as h:
        await h.run("my name is Ada", thread_id="ada")
        await h.wait_background()
        assert "ada" in h._sessions._live
        await h.run("and?", thread_id="ada")
        assert _texts(model) == ["my name is Ada", "my name is Ada", "and?"]


@pytest.mark.parametrize(
    "options",
    [
        {"max_idle_sessions": -1},
        {"max_idle_sessions": True},
        {"max_idle_sessions": "many"},
        {"session_idle_timeout": -1},
        {"session_idle_timeout": float("nan")},
        {"session_idle_timeout": "soon"},
        {"session_idle_timeout": float("inf")},
    ],
)
def test_bad_options_are_config_errors(options: dict[str, Any]) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        _harness(ScriptedModel.echo(), **options)
    assert err.value.code == "SESSION_POLICY_INVALID"
    ((option, value),) = options.items()
    assert f"{option}={value!r} is not valid" in err.value.message
    assert err.value.details["option"] == option
    # the hint is about the option that was wrong, and says what it accepts
    assert option in err.value.hint
    other = ({"max_idle_sessions", "session_idle_timeout"} - {option}).pop()
    assert other not in err.value.hint
    accepted = {"max_idle_sessions": "None for no bound", "session_idle_timeout": "number of seconds"}
    assert accepted[option] in err.value.hint


SCRIPT = textwrap.dedent(
    """
    import sys
    import anyio
    import noetic as nt
    from noetic.items import item_text
    from noetic.testing import ScriptedModel

    async def main(db: str, text: str, max_idle: str) -> None:
        model = ScriptedModel.echo()
        graph = nt.call_model("answer")
        bound = "auto" if max_idle == "auto" else int(max_idle)
        async with nt.AgentHarness(
            "app", agent_graph=graph, model=model, storage=f"sqlite:///{db}", max_idle_sessions=bound
        ) as h:
            await h.run(text, thread_id="user-1")
            print([item_text(item) for item in model.calls[-1].items if getattr(item, "role", None) == "user"])

    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[4], backend=sys.argv[3])
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_thread_comes_back_in_every_next_process(tmp_path: Path, backend: str) -> None:
    """Each run is a new process on the same SQLite file: the thread's history is there whether
    the last run evicted it or simply exited, and reading it back does not use it up."""
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    db = str(tmp_path / "app.db")

    def run(text: str, max_idle: str) -> str:
        done = subprocess.run(
            [sys.executable, str(script), db, text, backend, max_idle],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run("my name is Ada", "0") == "['my name is Ada']"
    assert run("what is my name?", "0") == "['my name is Ada', 'what is my name?']"
    # a run that evicts nothing still leaves the history for the next one, read-back included
    assert run("and my age?", "auto") == "['my name is Ada', 'what is my name?', 'and my age?']"
    assert run("bye", "auto") == "['my name is Ada', 'what is my name?', 'and my age?', 'bye']"


async def test_an_idle_session_holds_no_stream_buffer_and_no_id_set() -> None:
    async with _harness(ScriptedModel.echo()) as h:
        events: list[str] = []

        async def watch() -> None:
            async for event in h.get_full_stream(thread_id="a"):
                events.append(event.type)

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await anyio.wait_all_tasks_blocked()
            await h.run("hello", thread_id="a")
        session = h._sessions.get("a")
        assert events[-1] == "t:turn_completed"  # the stream still delivered the whole turn
        assert session.stream._buffer is None  # only a running turn keeps its events
        assert session.log._ids is None  # the id set is built on first lookup
        first = session.log.items[0]
        assert first.id in session.log and "nope" not in session.log
        assert not session.log.append_quietly(first)


class _SlowWrites(MemoryCheckpointStore):
    """A store whose history writes wait until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = anyio.Event()
        self.writing = anyio.Event()

    async def write(self, sets: Any, deletes: Any = ()) -> None:
        if any(key.startswith("thread:") for key in sets):
            self.writing.set()
            await self.release.wait()
        await super().write(sets, deletes)


async def test_a_thread_used_again_while_its_history_is_written_stays_and_its_record_catches_up() -> None:
    store = _SlowWrites()
    model = ScriptedModel.echo()
    async with _harness(model, storage=store, max_idle_sessions=0) as h:
        await h.run("my name is Ada", thread_id="ada")
        with anyio.fail_after(5):
            await store.writing.wait()  # the eviction's write has started
        await h.run("still here?", thread_id="ada")  # the session is still in memory: used again
        store.release.set()
        await h.wait_background()
        await h.run("and now?", thread_id="ada")
        assert _texts(model)[:4] == ["my name is Ada", "my name is Ada", "still here?", "still here?"]
        assert _texts(model)[-1] == "and now?"
    record = await store.get(history_key("ada"))  # rewritten on exit: the whole history
    assert record is not None and record.count('"role":"user"') == 3
