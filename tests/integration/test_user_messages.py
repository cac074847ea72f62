"""Options checked when they are given, and messages that say what is wrong, as a user meets
them: harness options at construction, `clear_checkpoint` on a turn of the same harness, and
the command line (`noetic context --snapshot`, `noetic run --model`) run as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
import pytest

ROOT = Path(__file__).resolve().parents[2]


def noetic(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NOETIC_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "noetic.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    "option",
    [
        {"background_grace": -1},
        {"background_grace": float("nan")},
        {"background_grace": "10"},
        {"background_grace": True},
        {"tracing": "no"},
        {"tracing": 0},
        {"trace_content": "yes"},
    ],
)
def test_a_bad_harness_option_is_refused_when_the_harness_is_built(option: dict[str, Any]) -> None:
    with pytest.raises(nt.NoeticConfigError) as caught:
        nt.AgentHarness("o", agent_graph=nt.run_code("s", lambda x: x), **option)
    assert caught.value.code == "INVALID_HARNESS_OPTION"
    assert next(iter(option)) in caught.value.message


def test_good_harness_options_are_kept() -> None:
    harness = nt.AgentHarness(
        "o", agent_graph=nt.run_code("s", lambda x: x), background_grace=0, tracing=False, trace_content=True
    )
    assert harness.background_grace == 0.0


@pytest.mark.anyio
async def test_clear_checkpoint_of_a_turn_running_in_this_harness_says_so(tmp_path: Path) -> None:
    started, release = anyio.Event(), anyio.Event()

    async def slow(x: int) -> int:
        started.set()
        await release.wait()
        return x

    graph = nt.sequence("s", [nt.run_code("a", lambda x: x + 1), nt.run_code("slow", slow)])
    async with nt.AgentHarness("c", agent_graph=graph, storage=f"sqlite:///{tmp_path / 'c.db'}") as h:
        async with anyio.create_task_group() as tg:
            result: list[Any] = []

            async def run() -> None:
                result.append((await h.run(1, execution_id="e1")).output)

            tg.start_soon(run)
            await started.wait()
            with pytest.raises(nt.NoeticError) as caught:
                await h.clear_checkpoint("e1")
            release.set()
        assert result == [2]
        await h.clear_checkpoint("e1")  # once the turn has ended, clearing works
    assert caught.value.code == "EXECUTION_LOCKED"
    assert "running in this harness" in caught.value.message
    assert "another harness or process" not in caught.value.message


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot be read"),  # a missing file
        ("root:x:0:0:root:/root:/bin/bash\n", "is not JSON"),  # the user's /etc/passwd case
        ('{"a": 1}', "is not a layer-usage snapshot"),
        ("[" * 100_000, "is not JSON"),  # nested too deep for the parser
    ],
)
def test_context_with_a_bad_snapshot_file_names_the_file_and_the_problem(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "snap.json"
    if content is not None:
        path.write_text(content)
    result = noetic("context", "--snapshot", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("noetic context: [INVALID_SNAPSHOT] snapshot file ")
    assert str(path) in result.stderr and problem in result.stderr


def test_context_refuses_an_oversized_snapshot_without_reading_it_all(tmp_path: Path) -> None:
    result = noetic("context", "--snapshot", "/dev/zero", cwd=tmp_path)
    assert result.returncode == 2
    assert "[INVALID_SNAPSHOT]" in result.stderr and "is larger than" in result.stderr


def test_run_with_an_unknown_scripted_model_fails_instead_of_echoing(tmp_path: Path) -> None:
    chat = str(ROOT / "examples" / "chat.json")
    result = noetic("run", chat, "--model", "scripted:nosuch", "--input", "hi", cwd=tmp_path)
    assert result.returncode == 1, result.stdout  # as for an unknown provider
    assert result.stderr.startswith("error: [UNKNOWN_MODEL] model 'scripted:nosuch'")
    assert "Traceback" not in result.stderr
    echo = noetic("run", chat, "--model", "scripted:echo", "--input", "hi", cwd=tmp_path)
    assert echo.returncode == 0, echo.stderr


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("storage", "suggestion"),
    [
        ("sqlite:o6.db", "sqlite:///o6.db"),
        ("sqlite:/srv/o6.db", "sqlite:////srv/o6.db"),
        ("o6.db", "sqlite:///o6.db"),
    ],
)
async def test_a_storage_string_without_scheme_slashes_says_what_url_was_meant(
    storage: str, suggestion: str
) -> None:
    with pytest.raises(nt.NoeticConfigError) as caught:
        async with nt.AgentHarness("o", agent_graph=nt.run_code("s", lambda x: x), storage=storage) as h:
            await h.run(1)
    assert caught.value.code == "UNKNOWN_CHECKPOINT_STORE"
    assert "registered under ''" not in caught.value.message
    assert f"storage={storage!r} is not a storage URL" in caught.value.message
    assert repr(suggestion) in caught.value.hint
