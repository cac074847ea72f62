"""A thread's stored history as a chain of pieces (HS-1..HS-4): a turn's start writes only the
items new since the thread's last stored point, every execution still resumes from exactly the
log it started from, and damage is `CHECKPOINT_CORRUPT`, never a wrong history."""

from __future__ import annotations

import hashlib
import json
from functools import partial
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.durable import MemoryCheckpointStore, SqliteCheckpointStore
from noetic.durable.history import load_point, piece_key, point_of, thread_prefix
from noetic.durable.items import dump_items
from noetic.durable.snapshot import start_key
from noetic.items import MessageItem, user_message
from noetic.model import ModelRequest
from noetic.sessions import history_key
from noetic.testing import ScriptedModel, text_reply
from noetic.testing.scripted import ScriptedReply

from .conftest import Storage

pytestmark = pytest.mark.anyio


def _texts(items: Any) -> list[str]:
    return [part.text for item in items if isinstance(item, MessageItem) for part in item.content]


def _counting_model() -> ScriptedModel:
    """Answers `reply-n`, n the number of user messages it saw (so a replay is recognisable)."""

    def reply(request: ModelRequest) -> ScriptedReply:
        users = sum(1 for item in request.items if isinstance(item, MessageItem) and item.role == "user")
        return text_reply(f"reply-{users}")

    return ScriptedModel(default=reply)


def _harness(storage: Any, **options: Any) -> nt.AgentHarness[Any]:
    return nt.AgentHarness(
        "t", agent_graph=nt.call_model("m"), model=_counting_model(), storage=storage, **options
    )


async def _stored_characters(store: Any) -> int:
    rows = await store.get_many(await store.list_prefix(""))
    return sum(len(key) + len(value) for key, value in rows.items())


async def test_hs_1_stored_size_grows_linearly_with_the_turns_of_one_thread(storage: Storage) -> None:
    message = "m" * 10_000
    async with _harness(storage.spec(synchronous="normal")) as h:
        for i in range(40):
            await h.run(f"{i}:{message}", thread_id="long", execution_id=f"turn-{i}")
    store = storage.open()
    try:
        total = await _stored_characters(store)
    finally:
        await store.aclose()
    content = 40 * len(message)
    # Each message is stored three times, whatever the number of turns: as its turn's graph input,
    # in the ledger entry of the step that appended it and in one history piece. (Copying the log
    # into every start record stored turn k's whole history again: 9 MB here, growing as k².)
    assert content < total < 4 * content


async def test_hs_1_a_turn_start_writes_only_the_new_items(storage: Storage) -> None:
    async with _harness(storage.spec(synchronous="normal")) as h:
        for i in range(20):
            await h.run(f"{i}" + "x" * 5_000, thread_id="th", execution_id=f"e{i}")
    store = storage.open()
    try:
        rows = await store.get_many(await store.list_prefix(start_key("e19")))
        start = json.loads(rows[start_key("e19")])
        assert "items" not in start and start["history"]["count"] == 38  # 19 turns of 2 items
        pieces = await store.list_prefix(f"{thread_prefix('th')}items:")
        assert len(pieces) == 20  # one per turn start after the first, one on exit, and no more
    finally:
        await store.aclose()


async def test_hs_2_each_execution_of_a_long_thread_resumes_from_its_own_start(storage: Storage) -> None:
    responses = {}
    async with _harness(storage.spec(synchronous="normal")) as h:
        for i in range(12):
            responses[i] = await h.run(f"q{i}", thread_id="th", execution_id=f"e{i}")
    async with _harness(storage.spec()) as h:  # another harness: nothing of the thread in memory
        for k in (0, 5, 11):
            again = await h.resume(f"e{k}")
            assert _texts(again.items) == _texts(responses[k].items)
            assert again.text == f"reply-{k + 1}"


async def test_hs_4_clearing_old_executions_keeps_the_history_a_later_one_needs(storage: Storage) -> None:
    async with _harness(storage.spec()) as h:
        for i in range(6):
            await h.run(f"q{i}", thread_id="th", execution_id=f"e{i}")
        for i in range(5):
            await h.clear_checkpoint(f"e{i}")
        again = await h.resume("e5")
        assert _texts(again.items) == [t for i in range(6) for t in (f"q{i}", f"reply-{i + 1}")]
    async with _harness(storage.spec()) as h:  # and the thread goes on from its stored history
        response = await h.run("q6", thread_id="th")
        assert response.text == "reply-7"
        assert len(response.items) == 14


async def test_hs_4_delete_thread_history_starts_the_thread_over(storage: Storage) -> None:
    async with _harness(storage.spec(), max_idle_sessions=0) as h:
        await h.run("my name is Ada", thread_id="ada")
        await h.run("hello", thread_id="bob")
        await h.wait_background()
        await h.delete_thread_history("ada")
        assert await storage.keys(thread_prefix("ada")) == []
        assert await storage.keys(thread_prefix("bob")) != []  # another thread's history stays
        response = await h.run("who am I?", thread_id="ada")
        assert _texts(response.items) == ["who am I?", "reply-1"]
    async with _harness(storage.spec()) as h:  # in the next process too
        await h.delete_thread_history("ada")
        response = await h.run("and now?", thread_id="ada")
        assert _texts(response.items) == ["and now?", "reply-1"]


async def test_hs_4_delete_thread_history_drops_the_last_response_kept_in_memory(storage: Storage) -> None:
    async with _harness(storage.spec()) as h:
        await h.run("my name is Ada", thread_id="ada")
        await h.delete_thread_history("ada")
        with pytest.raises(nt.NoeticConfigError):  # its last response went with its history
            await h.get_agent_response(thread_id="ada")


async def test_hs_4_delete_thread_history_refuses_while_a_turn_runs() -> None:
    store = MemoryCheckpointStore()
    started, release = anyio.Event(), anyio.Event()

    async def slow(text: str) -> str:
        started.set()
        await release.wait()
        return text

    async with nt.AgentHarness("t", agent_graph=nt.run_code("slow", slow), storage=store) as h:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(h.run, "x", thread_id="busy"))
            with anyio.fail_after(5):
                await started.wait()
            with pytest.raises(nt.NoeticError) as err:
                await h.delete_thread_history("busy")
            assert err.value.code == "THREAD_BUSY"
            release.set()
        await h.run("y", thread_id="busy")
        await h.delete_thread_history("busy")
    assert await store.list_prefix(thread_prefix("busy")) == []  # and leaving wrote nothing back


async def test_delete_thread_history_needs_a_store() -> None:
    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda x: x)) as h:
        with pytest.raises(nt.NoeticConfigError) as err:
            await h.delete_thread_history("th")
    assert err.value.code == "NO_CHECKPOINT_STORE"


# --- damage ---------------------------------------------------------------------------------


async def _two_turns(storage: Storage) -> list[str]:
    async with _harness(storage.spec()) as h:
        await h.run("first", thread_id="th", execution_id="e0")
        await h.run("second", thread_id="th", execution_id="e1")
    return [key for key in await storage.keys(f"{thread_prefix('th')}items:") if ":part:" not in key]


async def test_hs_2_a_missing_piece_stops_the_resume_naming_it(storage: Storage) -> None:
    pieces = await _two_turns(storage)
    store = storage.open()
    try:
        for key in pieces:
            if '"start":0' in (await store.get(key) or ""):
                await store.delete(key)
    finally:
        await store.aclose()
    async with _harness(storage.spec()) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.resume("e1")
        assert err.value.code == "CHECKPOINT_CORRUPT"
        assert err.value.key == start_key("e1")
        assert "missing" in err.value.message and err.value.piece in pieces
        with pytest.raises(nt.NoeticError) as err:  # the thread's own read-back as well
            await h.run("third", thread_id="th")
        assert err.value.code == "CHECKPOINT_CORRUPT" and err.value.key == history_key("th")
        await h.resume("e0")  # it started from an empty history: it needs no piece


@pytest.mark.parametrize(
    "change",
    [
        lambda text: text.replace("first", "FIRST"),  # the text no longer matches its digest
        lambda text: text[:-5],
        lambda text: "[" * 500 + "]" * 500,
    ],
)
async def test_hs_2_a_changed_piece_stops_the_resume(storage: Storage, change: Any) -> None:
    pieces = await _two_turns(storage)
    for key in pieces:
        await storage.edit(key, change)
    async with _harness(storage.spec()) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.resume("e1")
    assert err.value.code == "CHECKPOINT_CORRUPT"
    assert err.value.key == start_key("e1")


@pytest.mark.parametrize(
    "history",
    [
        {"count": 3, "tip": None},  # a non-empty history with no piece
        {"count": 99, "tip": "0" * 32},  # no such piece
        {"count": 3, "tip": "../../x"},
        {"count": -1, "tip": None},
        "everything",
    ],
)
async def test_hs_2_a_forged_reference_stops_the_resume(storage: Storage, history: Any) -> None:
    await _two_turns(storage)

    def forge(text: str) -> str:
        record = json.loads(text)
        record["history"] = history
        return json.dumps(record)

    await storage.edit(start_key("e1"), forge)
    async with _harness(storage.spec()) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.resume("e1")
    assert err.value.code == "CHECKPOINT_CORRUPT"
    assert err.value.key == start_key("e1")


async def test_hs_2_the_real_count_must_match_the_reference(storage: Storage) -> None:
    await _two_turns(storage)

    def shorter(text: str) -> str:
        record = json.loads(text)
        record["history"]["count"] -= 1  # the pieces hold one more item than the record says
        return json.dumps(record)

    await storage.edit(start_key("e1"), shorter)
    async with _harness(storage.spec()) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.resume("e1")
    assert err.value.code == "CHECKPOINT_CORRUPT"


async def test_hs_2_a_large_piece_is_split_and_comes_back_whole(storage: Storage) -> None:
    big = "b" * 400_000
    async with _harness(storage.spec()) as h:
        first = await h.run(big, thread_id="th", execution_id="e0")
        await h.run("small", thread_id="th", execution_id="e1")
    assert any(":part:" in key for key in await storage.keys(f"{thread_prefix('th')}items:"))
    async with _harness(storage.spec()) as h:
        again = await h.resume("e1")
        assert _texts(again.items)[:2] == _texts(first.items)


# --- HS-3: start records of version 2 -------------------------------------------------------


async def test_hs_3_a_version_2_start_record_with_its_history_inline_still_resumes(storage: Storage) -> None:
    async with _harness(storage.spec()) as h:
        await h.run("first", thread_id="th", execution_id="e0")
        await h.run("second", thread_id="th", execution_id="old")
    store = storage.open()
    try:  # rewrite "old" as the previous version wrote it: the item log inline, no pieces
        rows = await store.get_many(await store.list_prefix(""))
        start = json.loads(rows[start_key("old")])
        point = point_of(start.pop("history"))
        assert point is not None
        items = await load_point(store, "th", point, {}, owner=start_key("old"))
        start.update(v=2, items=dump_items(items))
        await store.write({start_key("old"): json.dumps(start)}, [k for k in rows if k.startswith("thread:")])
    finally:
        await store.aclose()
    async with _harness(storage.spec()) as h:
        again = await h.resume("old")
        assert _texts(again.items) == ["first", "reply-1", "second", "reply-2"]
        response = await h.run("third", thread_id="th")  # the thread goes on from that log
        assert response.text == "reply-3"


async def test_hs_3_a_version_2_start_record_naming_a_point_as_well_is_refused(storage: Storage) -> None:
    async with _harness(storage.spec()) as h:
        await h.run("first", thread_id="th", execution_id="e0")

    store = storage.open()
    try:  # inline items beside the point: which one is the history?
        start = json.loads((await store.get_many([start_key("e0")]))[start_key("e0")])
        point = point_of(start["history"])
        assert point is not None
        start.update(v=2, items=dump_items(await load_point(store, "th", point, {}, owner=start_key("e0"))))
        await store.write({start_key("e0"): json.dumps(start)})
    finally:
        await store.aclose()
    async with _harness(storage.spec()) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.resume("e0")
    assert err.value.code == "CHECKPOINT_CORRUPT"


# --- forks ----------------------------------------------------------------------------------


async def test_hs_4_two_harnesses_continuing_one_thread_fork_it_without_mixing(storage: Storage) -> None:
    async with _harness(storage.spec()) as h:
        await h.run("shared", thread_id="th", execution_id="root")
    async with _harness(storage.spec()) as a, _harness(storage.spec()) as b:
        await a.run("from a", thread_id="th", execution_id="a1")  # both read the same stored point
        await b.run("from b", thread_id="th", execution_id="b1")
        await a.run("a again", thread_id="th", execution_id="a2")
    async with _harness(storage.spec()) as h:
        # `b` left first, then `a` (in reverse order of entering): the thread's record names a's
        # history, whole; b's turn stays in its own execution, never mixed into it
        response = await h.run("next", thread_id="th")
    assert _texts(response.items) == [
        "shared",
        "reply-1",
        "from a",
        "reply-2",
        "a again",
        "reply-3",
        "next",
        "reply-4",
    ]
    async with _harness(storage.spec()) as h:  # and each execution resumes its own branch
        a2 = await h.resume("a2")
        b1 = await h.resume("b1")
    assert _texts(a2.items) == ["shared", "reply-1", "from a", "reply-2", "a again", "reply-3"]
    assert _texts(b1.items) == ["shared", "reply-1", "from b", "reply-2"]


async def test_hs_4_a_harness_overwriting_another_harness_record_warns(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    async with _harness(storage.spec()) as h:
        await h.run("shared", thread_id="th")
    with caplog.at_level("WARNING", logger="noetic.sessions"):
        async with _harness(storage.spec()) as a:
            async with _harness(storage.spec()) as b:
                await a.run("from a", thread_id="th")
                await b.run("from b", thread_id="th")
            assert not caplog.records  # b wrote over the record both read: no fork seen yet
            await a.run("a again", thread_id="th")
    forks = [
        record.getMessage()
        for record in caplog.records
        if "continued by another harness" in record.getMessage()
    ]
    assert len(forks) == 1 and "'th'" in forks[0] and "names 4 items" in forks[0]


async def test_a_thread_continued_by_one_harness_after_another_warns_of_no_fork(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="noetic.sessions"):
        for turn in range(3):  # one harness after another, as successive runs of a program
            async with _harness(storage.spec()) as h:
                await h.run(f"turn {turn}", thread_id="th")
    assert not caplog.records


async def test_sqlite_store_holds_the_pieces_across_processes(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'run.db'}"
    async with _harness(url) as h:
        await h.run("hello", thread_id="th", execution_id="e0")
    store = SqliteCheckpointStore(str(tmp_path / "run.db"))
    try:
        keys = await store.list_prefix(thread_prefix("th"))
    finally:
        await store.aclose()
    assert history_key("th") in keys and any(":items:" in key for key in keys)


class _SlowRecords(MemoryCheckpointStore):
    """A store whose writes of a thread's record wait until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release, self.writing = anyio.Event(), anyio.Event()

    async def write(self, sets: Any, deletes: Any = ()) -> None:
        if any(key.endswith(":history") for key in sets):
            self.writing.set()
            await self.release.wait()
        await super().write(sets, deletes)


async def test_hs_1_an_eviction_that_lands_after_a_turn_start_does_not_set_the_thread_back() -> None:
    store = _SlowRecords()
    async with _harness(store, max_idle_sessions=0) as h:
        await h.run("a", thread_id="th")  # evicted: its record (2 items) is written, slowly
        with anyio.fail_after(5):
            await store.writing.wait()
        await h.run([user_message("b")], thread_id="th")  # its start stores 3 items meanwhile
        store.release.set()
        await h.wait_background()
        await h.run("c", thread_id="th", execution_id="c")
    start = json.loads(await store.get(start_key("c")) or "")
    piece = json.loads(await store.get(piece_key("th", start["history"]["tip"])) or "")
    assert piece["start"] == 3  # c's piece follows b's start, not the eviction's shorter point


async def test_hs_2_a_well_formed_piece_of_another_thread_is_refused(storage: Storage) -> None:
    await _two_turns(storage)
    store = storage.open()
    try:  # a piece whose digest is right but which says it belongs to another thread
        start = json.loads(await store.get(start_key("e1")) or "")
        real = json.loads(await store.get(piece_key("th", start["history"]["tip"])) or "")
        text = json.dumps({**real, "thread_id": "other"}, separators=(",", ":"))
        digest = hashlib.sha256(text.encode()).hexdigest()[:32]
        start["history"]["tip"] = digest
        await store.write({piece_key("th", digest): text, start_key("e1"): json.dumps(start)})
    finally:
        await store.aclose()
    async with _harness(storage.spec()) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.resume("e1")
    assert err.value.code == "CHECKPOINT_CORRUPT"
    assert "belongs to thread 'other'" in err.value.message


async def test_hs_3_a_version_1_thread_record_with_its_items_inline_is_read_back(storage: Storage) -> None:
    items = dump_items([user_message("my name is Ada")])
    store = storage.open()
    try:
        await store.set(history_key("ada"), json.dumps({"v": 1, "thread_id": "ada", "items": items}))
    finally:
        await store.aclose()
    async with _harness(storage.spec()) as h:
        response = await h.run("who am I?", thread_id="ada", execution_id="e")
        assert _texts(response.items) == ["my name is Ada", "who am I?", "reply-2"]
    async with _harness(storage.spec()) as h:  # continued: its whole log is now stored as pieces
        again = await h.resume("e")
        assert _texts(again.items) == _texts(response.items)
