"""RS-21: a key under `execution:{id}:` that is not of a form this version writes — one byte of
`ledger` or `snapshot` that is not UTF-8 — is CHECKPOINT_CORRUPT naming it, on a real SQLite
file. Before, a damaged ledger key went unread (the completed step ran again, with its model
call) and a damaged snapshot key made the execution UNKNOWN, so `run(execution_id=...)`
overwrote what was left of it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import noetic as nt
import pytest
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio

GRAPH = nt.sequence("s", [nt.call_model("answer"), nt.run_code("wrap", lambda x: {"v": x})])


def damage_key(path: Path, word: str) -> str:
    """Replace one byte of `word` in the execution's newest `word` key by 0xff; the key."""
    conn = sqlite3.connect(path)
    try:
        (key,) = conn.execute(
            "SELECT key FROM noetic_rows WHERE key LIKE ? ORDER BY key DESC LIMIT 1",
            (f"execution:x:{word}%",),
        ).fetchone()
        at = key.index(word) + 3
        bad = key.encode()[:at] + b"\xff" + key.encode()[at + 1 :]
        conn.execute("UPDATE noetic_rows SET key = CAST(? AS TEXT) WHERE key = ?", (bad, key))
        conn.commit()
        return key
    finally:
        conn.close()


def rows(path: Path) -> list[tuple[bytes, bytes]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT CAST(key AS BLOB), CAST(value AS BLOB) FROM noetic_rows ORDER BY 1"
        ).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("word", ["ledger", "snapshot", "start"])
async def test_a_damaged_key_word_is_corrupt_not_run_again(tmp_path: Path, word: str) -> None:
    path = tmp_path / "c.db"
    model = ScriptedModel([text_reply("first"), text_reply("again")])
    async with nt.AgentHarness("h", agent_graph=GRAPH, model=model, storage=f"sqlite:///{path}") as h:
        assert (await h.run("go", execution_id="x")).output == {"v": "first"}
    key = damage_key(path, word)
    before = rows(path)
    async with nt.AgentHarness("h", agent_graph=GRAPH, model=model, storage=f"sqlite:///{path}") as h:
        with pytest.raises(nt.NoeticError) as resumed:
            await h.resume("x")
        assert resumed.value.code == "CHECKPOINT_CORRUPT"
        assert resumed.value.details["execution_id"] == "x"
        assert resumed.value.details["key"].startswith(key[: key.index(word) + 3])
        assert "not UTF-8" in resumed.value.message
        with pytest.raises(nt.NoeticError) as rerun:
            await h.run("new input", execution_id="x")
        assert rerun.value.code == ("EXECUTION_EXISTS" if word != "snapshot" else "CHECKPOINT_CORRUPT")
        assert len(model.calls) == 1  # nothing ran again
        assert rows(path) == before  # nothing was overwritten
        await h.clear_checkpoint("x")  # removes the damaged key with the rest
        assert (await h.run("new input", execution_id="x")).output == {"v": "again"}
