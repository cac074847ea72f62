"""A SQLite storage URL with a wrong option is refused with `UNKNOWN_CHECKPOINT_STORE`, a message
naming the option and value, and a hint saying what the option accepts — never silently read
as the default, never an `OverflowError` from SQLite."""

from __future__ import annotations

import math
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import noetic as nt
import pytest
from noetic.durable import SqliteCheckpointStore
from noetic.durable.sqlite import MAX_BUSY_TIMEOUT, sqlite_store_from_url

#: (URL query, what the message must name, what the hint must name)
BAD_OPTIONS = [
    ("synchronous=", "'synchronous' has no value", "full"),
    ("busy_timeout=", "'busy_timeout' has no value", "> 0"),
    ("busy_timeout", "'busy_timeout' has no value", "> 0"),
    ("synchronous=full&synchronous=normal", "twice, as 'full' and 'normal'", "Give each option once"),
    ("busy_timeout=1&busy_timeout=2", "twice, as '1' and '2'", "Give each option once"),
    ("busy_timeout=-1", "busy_timeout='-1'", "not negative, nan or inf"),
    ("busy_timeout=nan", "busy_timeout='nan'", "not negative, nan or inf"),
    ("busy_timeout=inf", "busy_timeout='inf'", "not negative, nan or inf"),
    ("busy_timeout=1e400", "busy_timeout='1e400'", "decimal number"),
    ("busy_timeout=ten", "busy_timeout='ten'", "decimal number"),
    ("busy_timeout=1_0", "busy_timeout='1_0'", "decimal number"),
    ("busy_timeout=99999999", "busy_timeout='99999999'", f"at most {MAX_BUSY_TIMEOUT}"),
    ("synchronous=off", "synchronous='off'", "normal"),
]


@pytest.mark.parametrize(("query", "message", "hint"), BAD_OPTIONS)
def test_a_bad_option_names_itself_and_what_it_accepts(query: str, message: str, hint: str) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        sqlite_store_from_url(f"sqlite:///run.db?{query}")
    assert err.value.code == "UNKNOWN_CHECKPOINT_STORE"
    assert message in err.value.message
    assert hint in err.value.hint


@pytest.mark.parametrize(
    ("query", "timeout", "synchronous"),
    [
        ("busy_timeout=.5", 0.5, "full"),
        ("busy_timeout=30&synchronous=NORMAL", 30.0, "normal"),
        ("synchronous=normal&synchronous=normal", 10.0, "normal"),  # repeated, but the same value
        (f"busy_timeout={MAX_BUSY_TIMEOUT}", float(MAX_BUSY_TIMEOUT), "full"),
    ],
)
def test_good_options_are_read(query: str, timeout: float, synchronous: str) -> None:
    store = sqlite_store_from_url(f"sqlite:///run.db?{query}")
    assert (store.busy_timeout, store.synchronous) == (timeout, synchronous)


@pytest.mark.parametrize("timeout", [0, -1.0, math.nan, math.inf, 1e300, True, "10"])
def test_the_constructor_checks_its_busy_timeout_too(timeout: object) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        SqliteCheckpointStore("run.db", busy_timeout=timeout)  # type: ignore[arg-type]
    assert err.value.code == "UNKNOWN_CHECKPOINT_STORE"
    assert "busy_timeout" in err.value.message


@pytest.mark.anyio
async def test_a_harness_given_a_bad_url_stops_its_first_turn(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'run.db'}?busy_timeout=inf"
    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda _: 1), storage=url) as h:
        with pytest.raises(nt.NoeticConfigError) as err:
            await h.run("")
    assert err.value.code == "UNKNOWN_CHECKPOINT_STORE"
    assert "busy_timeout='inf'" in err.value.message


def test_noetic_inspect_refuses_a_bad_url_in_one_line(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "runs.db").close()  # the inspector opens existing files only
    noetic = shutil.which("noetic", path=str(Path(sys.executable).parent))
    assert noetic is not None
    result = subprocess.run(
        [noetic, "inspect", "sqlite:///runs.db?synchronous="],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "UNKNOWN_CHECKPOINT_STORE" in result.stderr and "'synchronous' has no value" in result.stderr
    assert "Traceback" not in result.stderr
