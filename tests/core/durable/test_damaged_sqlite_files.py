"""SQLite files damaged on disk: a file cut short, schema text, a row's text or a key that is not
UTF-8. Each is `CHECKPOINT_CORRUPT` naming what is damaged — never a raw `UnicodeDecodeError`,
never a store that reads as empty (a thread's next turn starting over, a resume saying there is
no such execution) — and a healthy file in WAL mode, however it was left, is never taken for one
cut short. The damage is done to real files the way a full disk, a bad copy or a bad sector does."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import noetic as nt
import pytest
from noetic.durable import SqliteCheckpointStore
from noetic.items import item_text
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio

FAILED = "failed"


class Counter(nt.ContextLayer):
    """A thread-scoped layer counting the thread's model calls (its state is checkpointed)."""

    id = "counter"
    slot = nt.Slot.REMINDER
    scope = "thread"

    async def init(self, ctx: Any) -> int:
        return int(await ctx.storage.get("state") or 0)

    async def recall(self, ctx: Any, budget: Any) -> str:
        return f"Earlier model calls in this thread: {ctx.state}."

    async def store(self, ctx: Any, response: Any) -> int:
        return int(ctx.state) + 1


def harness(path: Path, model: ScriptedModel, *, fail: bool = False) -> nt.AgentHarness[Any]:
    def post(value: Any) -> Any:
        if fail:
            raise ConnectionError("the report service is down")
        return value

    graph = nt.sequence("c", [nt.call_model("answer"), nt.run_code("post", post)])
    return nt.AgentHarness(
        "svc", agent_graph=graph, model=model, storage=f"sqlite:///{path}", layers=[Counter()]
    )


async def build(path: Path) -> None:
    """Two threads of two turns each and one failed execution, then the store closed (its WAL
    checkpointed into the file and removed, as after a clean shutdown)."""
    async with harness(path, ScriptedModel.echo()) as h:
        for thread in ("t0", "t1"):
            for turn in range(2):
                await h.run(f"{thread}-turn{turn}", thread_id=thread)
    async with harness(path, ScriptedModel.echo(), fail=True) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("fx", thread_id="tf", execution_id=FAILED)
    assert f"{path.name}-wal" not in {entry.name for entry in path.parent.iterdir()}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("cut", ["mid-page", "page-boundary"])
async def test_a_file_cut_short_is_corrupt_not_an_empty_store(tmp_path: Path, cut: str) -> None:
    path = tmp_path / "runs.db"
    await build(path)
    size = path.stat().st_size
    keep = int(size * 0.9) if cut == "mid-page" else size - 4096
    with path.open("r+b") as file:
        file.truncate(keep)
    before = digest(path)
    model = ScriptedModel.echo()
    async with harness(path, model) as h:
        with pytest.raises(nt.NoeticError) as turn:
            await h.run("probe", thread_id="t0")
        with pytest.raises(nt.NoeticError) as resume:
            await h.resume(FAILED)
    assert turn.value.code == resume.value.code == "CHECKPOINT_CORRUPT"
    assert "cut short" in turn.value.message and str(keep) in turn.value.message
    assert model.calls == []  # no turn ran on an empty history
    assert digest(path) == before  # and nothing was written into the damaged file


async def test_a_healthy_file_is_never_taken_for_one_cut_short(tmp_path: Path) -> None:
    """In WAL mode the file's header is its last checkpoint's and newer pages live in the -wal
    file; an open store, a copy taken while it runs, a checkpoint cut off after its first page,
    and a reopened file all read every row."""
    path = tmp_path / "runs.db"
    # Both writes together stay below the store's own checkpoint interval (CHECKPOINT_PAGES).
    rows = {f"k:{n:04d}": "[" + ",".join(['"' + "x" * 60 + '"'] * 20) + "]" for n in range(200)}
    first, later = dict(list(rows.items())[:100]), dict(list(rows.items())[100:])
    store = SqliteCheckpointStore(str(path))
    await store.write(first)
    side = sqlite3.connect(path)
    side.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    await store.write(later)  # the database grows in the WAL only: the file is shorter than it
    (pages,) = side.execute("PRAGMA page_count").fetchone()
    assert path.stat().st_size < pages * 4096
    copies = tmp_path / "copy"
    copies.mkdir()
    for suffix in ("", "-wal"):
        shutil.copy(f"{path}{suffix}", copies / f"runs.db{suffix}")
    side.execute("PRAGMA wal_checkpoint(PASSIVE)")  # copies every page; the WAL keeps its frames
    side.close()
    # A checkpoint interrupted after its first page: the new header, the old pages, the frames.
    cut_off = tmp_path / "cut-off"
    cut_off.mkdir()
    old = (copies / "runs.db").read_bytes()
    (cut_off / "runs.db").write_bytes(path.read_bytes()[:4096] + old[4096:])
    shutil.copy(copies / "runs.db-wal", cut_off / "runs.db-wal")
    opened = [
        SqliteCheckpointStore(str(path)),
        *(SqliteCheckpointStore(str(d / "runs.db")) for d in (copies, cut_off)),
    ]
    try:
        for other in opened:
            assert await other.get_many(list(rows)) == rows
    finally:
        for other in opened:
            await other.aclose()
        await store.aclose()
    reopened = SqliteCheckpointStore(str(path))
    try:
        assert await reopened.get_many(list(rows)) == rows
    finally:
        await reopened.aclose()


async def test_schema_text_that_is_not_utf8_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await build(path)
    data = bytearray(path.read_bytes())
    at = data.find(b"CREATE TABLE noetic_rows")
    data[at + 7 : at + 10] = b"\xff\xfe\xfd"
    path.write_bytes(bytes(data))
    async with harness(path, ScriptedModel.echo()) as h:
        with pytest.raises(nt.NoeticError) as caught:
            await h.run("hi", thread_id="t0")
    assert caught.value.code == "CHECKPOINT_CORRUPT"
    assert "not UTF-8" in caught.value.message


def damage(path: Path, sql: str, *params: Any) -> None:
    """Change the file behind the store's back, as a bad sector or a hand edit does."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


async def test_a_row_whose_text_is_not_utf8_is_corrupt_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await build(path)
    key = f"execution:{FAILED}:snapshot"
    damage(path, "UPDATE noetic_rows SET value = CAST(x'7b22ff227d' AS TEXT) WHERE key = ?", key)
    model = ScriptedModel.echo()
    async with harness(path, model) as h:
        with pytest.raises(nt.NoeticError) as caught:
            await h.resume(FAILED)
        other = await h.run("probe", thread_id="t0")  # the other threads are still served
    assert caught.value.code == "CHECKPOINT_CORRUPT"
    assert caught.value.details["key"] == key and "not UTF-8" in caught.value.message
    assert other.output == "probe"
    seen = [item_text(item) for item in model.calls[-1].items if getattr(item, "role", None) == "user"]
    assert seen == ["t0-turn0", "t0-turn1", "probe"]


async def test_a_key_that_is_not_utf8_is_named_and_cleared_with_its_execution(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await build(path)
    conn = sqlite3.connect(path)
    (key,) = conn.execute(
        "SELECT key FROM noetic_rows WHERE key LIKE ? LIMIT 1", (f"execution:{FAILED}:trace:%",)
    ).fetchone()
    conn.close()
    damage(
        path, "UPDATE noetic_rows SET key = CAST(? AS TEXT) WHERE key = ?", key.encode()[:-1] + b"\xff", key
    )
    damaged = key[:-1] + "\udcff"  # the byte that is not UTF-8, as `surrogateescape` reads it
    store = SqliteCheckpointStore(str(path))
    try:
        assert damaged in await store.list_prefix(f"execution:{FAILED}:")
        with pytest.raises(nt.NoeticError) as caught:
            await store.get_many([damaged])
        with pytest.raises(nt.NoeticError) as refused:
            await store.set(damaged, "{}")
    finally:
        await store.aclose()
    assert caught.value.code == "CHECKPOINT_CORRUPT" and caught.value.details["key"] == damaged
    assert refused.value.code == "CHECKPOINT_STORE_FAILED"
    async with harness(path, ScriptedModel.echo()) as h:
        await h.clear_checkpoint(FAILED)  # the documented fix for a damaged execution
    conn = sqlite3.connect(path)
    try:
        left = conn.execute(
            "SELECT count(*) FROM noetic_rows WHERE CAST(key AS BLOB) >= ? AND CAST(key AS BLOB) < ?",
            (f"execution:{FAILED}:".encode(), f"execution:{FAILED};".encode()),
        ).fetchone()
        (integrity,) = conn.execute("PRAGMA integrity_check").fetchone()
    finally:
        conn.close()
    assert left == (0,) and integrity == "ok"


async def test_a_file_shorter_than_a_header_or_not_sqlite_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x10\x00")
    store = SqliteCheckpointStore(str(path))
    try:
        with pytest.raises(nt.NoeticError) as caught:
            await store.list_prefix("")
    finally:
        await store.aclose()
    assert caught.value.code == "CHECKPOINT_CORRUPT"
    assert path.stat().st_size == 18  # nothing was written into it


async def test_a_path_that_is_a_directory_is_a_store_failure(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(str(tmp_path))
    try:
        with pytest.raises(nt.NoeticError) as caught:
            await store.list_prefix("")
    finally:
        await store.aclose()
    assert caught.value.code == "CHECKPOINT_STORE_FAILED"


@pytest.mark.parametrize("table", ["key TEXT, value BLOB", "id INTEGER PRIMARY KEY, key TEXT, value TEXT"])
async def test_a_table_of_the_wrong_shape_is_corrupt_and_left_alone(tmp_path: Path, table: str) -> None:
    """A `noetic_rows` table Noetic did not make (other columns): refused when the store opens
    the file, naming the file and saying to restore it — not a run that quietly checkpoints
    nothing and a resume that fails later with CHECKPOINT_STORE_FAILED."""
    path = tmp_path / "runs.db"
    damage(path, f"CREATE TABLE noetic_rows ({table})")
    before = digest(path)
    model = ScriptedModel.echo()
    async with harness(path, model) as h:
        with pytest.raises(nt.NoeticError) as turn:
            await h.run("probe", thread_id="t0", execution_id="e1")
        with pytest.raises(nt.NoeticError) as resume:
            await h.resume("e1")
    for error in (turn.value, resume.value):
        assert error.code == "CHECKPOINT_CORRUPT"
        assert str(path) in error.message and "noetic_rows table has the columns" in error.message
        assert "restore it from a backup" in error.message and "clear_checkpoint" not in error.message
    assert model.calls == []
    assert digest(path) == before


async def test_a_damaged_page_is_never_a_quietly_checkpointed_turn(tmp_path: Path) -> None:
    """A page of the table overwritten with garbage: the turn raises CHECKPOINT_CORRUPT, or
    comes back carrying it as `checkpoint_error` — it never reads as checkpointed."""
    path = tmp_path / "runs.db"
    await build(path)
    (pages,) = sqlite3.connect(path).execute("PRAGMA page_count").fetchone()
    with path.open("r+b") as file:  # every page but the schema's: whatever the turn touches is bad
        for page in range(1, pages):
            file.seek(page * 4096)
            file.write(b"\xa5" * 4096)
    async with harness(path, ScriptedModel.echo()) as h:
        outcome: Any
        try:
            outcome = await h.run("probe", thread_id="t9", execution_id="e9")
        except nt.NoeticError as raised:
            outcome = raised
    error = outcome if isinstance(outcome, nt.NoeticError) else outcome.checkpoint_error
    assert error is not None and error.code == "CHECKPOINT_CORRUPT"
    assert "restore it from a backup" in error.message


async def test_a_damaged_history_piece_says_to_delete_the_threads_history(tmp_path: Path) -> None:
    """A plain turn on a thread whose stored history piece was changed: the error names the
    thread and says to delete its history (there is no execution to clear); doing so lets
    the thread start over."""
    path = tmp_path / "runs.db"
    await build(path)
    conn = sqlite3.connect(path)
    try:
        key, value = conn.execute(
            "SELECT key, value FROM noetic_rows WHERE key LIKE 'thread:t0:items:%' LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    forged = value + " "  # valid JSON, valid checksum, but not the text its digest names
    damage(
        path,
        "UPDATE noetic_rows SET value = ?, crc = ? WHERE key = ?",
        forged,
        zlib.crc32(forged.encode()),
        key,
    )
    model = ScriptedModel.echo()
    async with harness(path, model) as h:
        with pytest.raises(nt.NoeticError) as caught:
            await h.run("probe", thread_id="t0")
        error = caught.value
        assert error.code == "CHECKPOINT_CORRUPT" and error.details["piece"] == key
        assert "thread 't0'" in error.message and "delete_thread_history('t0')" in error.message
        assert "clear_checkpoint" not in error.message and "Resume" not in error.message
        assert model.calls == []
        await h.delete_thread_history("t0")
        assert (await h.run("again", thread_id="t0")).text == "again"
