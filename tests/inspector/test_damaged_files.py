"""`noetic inspect` over SQLite files damaged on disk, through real HTTP on 127.0.0.1: a key or a
row's text that is not UTF-8 lists its execution as damaged (naming the record) without hiding
the others; a file cut short or with garbled schema text is a JSON `CHECKPOINT_CORRUPT` error.
Never an HTTP 500 with a traceback, never an empty list."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest


def copy_of(written: Any, tmp_path: Path) -> Path:
    """The written store, checkpointed into one file, copied for one test to damage."""
    source = Path(written.url.removeprefix("sqlite:///"))
    path = tmp_path / "runs.db"
    shutil.copy(source, path)
    assert not Path(f"{source}-wal").exists() or Path(f"{source}-wal").stat().st_size <= 32
    return path


def damage(path: Path, sql: str, *params: Any) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def serve(server_type: Any, path: Path) -> Any:
    noetic = shutil.which("noetic", path=str(Path(sys.executable).parent))
    assert noetic is not None
    return server_type([f"sqlite:///{path}"], command=(noetic, "inspect"))


def fetch(server_type: Any, path: Path, *urls: str) -> tuple[list[httpx.Response], str]:
    """GET each of `urls` from `noetic inspect` serving `path`; the responses and its stderr."""
    served = serve(server_type, path)
    try:
        responses = [httpx.get(served.url + url, timeout=10) for url in urls]
    finally:
        served.stop()
    return responses, served.errors


@pytest.fixture
def server_with_stderr(server_type: Any) -> Any:
    """The `Server` class keeping what the server wrote to stderr as `errors` once stopped."""

    class Kept(server_type):  # type: ignore[misc,valid-type]
        errors = ""

        def stop(self) -> None:
            self.process.terminate()
            _, err = self.process.communicate(timeout=10)
            self.errors = err.decode(errors="replace")

    return Kept


@pytest.mark.parametrize("where", ["key", "text"])
def test_a_row_not_utf8_lists_its_execution_as_damaged(
    written: Any, tmp_path: Path, server_with_stderr: Any, where: str
) -> None:
    path = copy_of(written, tmp_path)
    conn = sqlite3.connect(path)
    (key,) = conn.execute(
        "SELECT key FROM noetic_rows WHERE key LIKE ? LIMIT 1", (f"execution:{written.failed_id}:trace:%",)
    ).fetchone()
    conn.close()
    if where == "key":
        bad = key.encode()[:-1] + b"\xff"
        damage(path, "UPDATE noetic_rows SET key = CAST(? AS TEXT) WHERE key = ?", bad, key)
    else:
        damage(path, "UPDATE noetic_rows SET value = CAST(x'7b22ff227d' AS TEXT) WHERE key = ?", key)
    (listed, detail), errors = fetch(
        server_with_stderr, path, "/api/executions", f"/api/executions/{written.failed_id}"
    )
    assert listed.status_code == 200, listed.text
    rows = {row["execution_id"]: row for row in listed.json()["executions"]}
    assert set(rows) == {written.ok_id, written.failed_id, written.resumed_id}
    assert rows[written.ok_id]["status"] == "completed"  # the others are not hidden
    damaged = rows[written.failed_id]
    assert damaged["status"] == "damaged" and damaged["reason"].startswith("CHECKPOINT_CORRUPT")
    assert "not UTF-8" in damaged["reason"] and key[:-1] in damaged["reason"]
    assert detail.status_code == 500 and detail.json()["error"]["code"] == "CHECKPOINT_CORRUPT"
    assert "Traceback" not in errors


@pytest.mark.parametrize("damage_kind", ["cut short", "schema text"])
def test_a_damaged_file_is_a_json_error_not_an_empty_list(
    written: Any, tmp_path: Path, server_with_stderr: Any, damage_kind: str
) -> None:
    path = copy_of(written, tmp_path)
    data = bytearray(path.read_bytes())
    if damage_kind == "cut short":
        del data[int(len(data) * 0.9) :]
    else:
        at = data.find(b"CREATE TABLE noetic_rows")
        data[at + 7 : at + 10] = b"\xff\xfe\xfd"
    path.write_bytes(bytes(data))
    (listed, detail), errors = fetch(
        server_with_stderr, path, "/api/executions", f"/api/executions/{written.ok_id}"
    )
    for response in (listed, detail):
        assert response.status_code == 500, response.text
        error = response.json()["error"]
        assert error["code"] == "CHECKPOINT_CORRUPT"
        assert ("cut short" if damage_kind == "cut short" else "not UTF-8") in error["message"]
        assert "restore it from a backup" in error["message"] and "clear_checkpoint" not in error["message"]
    assert "Traceback" not in errors
    assert path.read_bytes() == bytes(data)  # the inspector wrote nothing


def test_a_snapshot_key_whose_id_is_not_utf8_hides_no_other_execution(
    written: Any, tmp_path: Path, server_with_stderr: Any
) -> None:
    path = copy_of(written, tmp_path)
    key = f"execution:{written.failed_id}:snapshot"
    bad = key.replace(written.failed_id, written.failed_id[:-1] + "\udcff").encode(errors="surrogateescape")
    damage(path, "UPDATE noetic_rows SET key = CAST(? AS TEXT) WHERE key = ?", bad, key)
    (listed,), errors = fetch(server_with_stderr, path, "/api/executions")
    assert listed.status_code == 200, listed.text
    rows = {row["execution_id"]: row for row in listed.json()["executions"]}
    assert set(rows) == {written.ok_id, written.failed_id, written.resumed_id}
    assert rows[written.ok_id]["status"] == "completed"
    # its other records are still under its own id: listed as damaged, its snapshot missing
    assert rows[written.failed_id]["status"] == "damaged"
    assert "snapshot" in rows[written.failed_id]["reason"] and "missing" in rows[written.failed_id]["reason"]
    assert "Traceback" not in errors


@pytest.mark.parametrize("word", ["ledger", "snapshot"])
def test_a_damaged_key_word_lists_its_execution_as_damaged(
    written: Any, tmp_path: Path, server_with_stderr: Any, word: str
) -> None:
    """One byte that is not UTF-8 in `ledger` or `snapshot` of a key: the execution is listed
    as damaged, naming the key, instead of read without the row or left out."""
    path = copy_of(written, tmp_path)
    conn = sqlite3.connect(path)
    (key,) = conn.execute(
        "SELECT key FROM noetic_rows WHERE key LIKE ? ORDER BY key DESC LIMIT 1",
        (f"execution:{written.ok_id}:{word}%",),
    ).fetchone()
    conn.close()
    at = key.index(word) + 3
    bad = key.encode()[:at] + b"\xff" + key.encode()[at + 1 :]
    damage(path, "UPDATE noetic_rows SET key = CAST(? AS TEXT) WHERE key = ?", bad, key)
    (listed, detail), errors = fetch(
        server_with_stderr, path, "/api/executions", f"/api/executions/{written.ok_id}"
    )
    assert listed.status_code == 200, listed.text
    rows = {row["execution_id"]: row for row in listed.json()["executions"]}
    assert set(rows) == {written.ok_id, written.failed_id, written.resumed_id}
    damaged = rows[written.ok_id]
    assert damaged["status"] == "damaged" and damaged["reason"].startswith("CHECKPOINT_CORRUPT")
    assert "not a key this version writes" in damaged["reason"]
    assert detail.status_code == 500 and detail.json()["error"]["code"] == "CHECKPOINT_CORRUPT"
    assert "Traceback" not in errors


@pytest.mark.parametrize("user_version", [0, 1, 2, 5])
def test_inspect_only_reads_a_file_without_noetics_table(
    tmp_path: Path, server_with_stderr: Any, user_version: int
) -> None:
    """Another program's SQLite file, whatever its user_version: a clear JSON error, and the
    file's bytes, tables and journal mode are as they were (no noetic_rows made, no switch to WAL)."""
    path = tmp_path / "users.db"
    damage(path, "CREATE TABLE users (id INTEGER)")
    damage(path, f"PRAGMA user_version = {user_version}")
    before = path.read_bytes()
    (listed,), errors = fetch(server_with_stderr, path, "/api/executions")
    assert listed.status_code == 500 and listed.json()["error"]["code"] == "NOT_A_CHECKPOINT_STORE"
    assert "Traceback" not in errors
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users.db"]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        conn.close()


def test_inspect_leaves_a_store_file_byte_for_byte(
    written: Any, tmp_path: Path, server_with_stderr: Any
) -> None:
    path = copy_of(written, tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    (listed, detail), errors = fetch(
        server_with_stderr, path, "/api/executions", f"/api/executions/{written.ok_id}"
    )
    assert listed.status_code == 200 and detail.status_code == 200
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert "Traceback" not in errors
