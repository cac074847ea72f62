"""`noetic context` as a user runs it: a module in the current directory, a harness target
with `--model`, and `--layers scratchpad` (issue 13, point 7)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

AGENT = textwrap.dedent("""
    import noetic as nt

    agent = nt.call_model("a", instructions="Be brief.")


    def harness() -> nt.AgentHarness:
        return nt.AgentHarness("h", agent_graph=agent, model="openrouter:anthropic/claude-sonnet-4")
""")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "myagent.py").write_text(AGENT)
    return tmp_path


def noetic(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENROUTER_API_KEY", "PYTHONPATH")}
    # the console script, as a user calls it: it does not put the current directory on the path
    script = Path(sys.executable).parent / "noetic"
    return subprocess.run(
        [str(script), "context", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "100"},
        timeout=120,
    )


def test_a_module_in_the_current_directory_is_found(project: Path) -> None:
    """Issue 13, point 7: `myagent:agent` resolves from the current directory."""
    result = noetic(project, "myagent:agent", "--input", "hi")
    assert result.returncode == 0, result.stderr
    assert "(model scripted:echo)" in result.stdout


def test_a_missing_module_is_a_clear_error_that_blames_no_plugin(project: Path) -> None:
    """Issue 13, point 7: the message names the target and the current directory."""
    result = noetic(project, "nosuch:agent")
    assert result.returncode == 2
    assert "current directory" in result.stderr and "plugin" not in result.stderr


def test_model_replaces_a_harness_targets_model(project: Path) -> None:
    """Issue 13, point 7: `--model scripted:echo` runs a harness target offline (no key)."""
    result = noetic(project, "myagent:harness", "--model", "scripted:echo", "--input", "hi")
    assert result.returncode == 0, result.stderr
    assert "(model scripted:echo)" in result.stdout


def test_layers_scratchpad_has_its_row(project: Path) -> None:
    """Issue 13, point 7: an active layer that showed the model nothing still has a row."""
    result = noetic(project, "myagent:agent", "--layers", "scratchpad", "--input", "hi")
    assert result.returncode == 0, result.stderr
    assert "(no context layers)" not in result.stdout
    rows = [line.split() for line in result.stdout.splitlines()]
    assert any(row[:2] == ["scratchpad", "0"] for row in rows), result.stdout


def test_layers_naming_no_layer_is_refused(project: Path) -> None:
    """`--layers ',,'` would silently run without the layers the user meant to see."""
    result = noetic(project, "myagent:agent", "--layers", ",, ,", "--input", "hi")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "names no layer" in result.stderr and result.stdout == ""


def test_a_document_naming_a_model_runs_offline(tmp_path: Path) -> None:
    """Issue 13, points 6 and 7: without `--model` a document is shown offline, whatever its
    nodes name."""
    doc = tmp_path / "doc.json"
    doc.write_text(
        '{"version": 1, "root": {"kind": "callModel", "id": "a", "model": "openrouter:x/y", "instructions": "Hi."}}'
    )
    result = noetic(tmp_path, str(doc), "--input", "hi")
    assert result.returncode == 0, result.stderr
    assert "(model scripted:echo)" in result.stdout


def test_a_harness_target_without_a_key_gets_command_line_advice(project: Path) -> None:
    """Issue 13, points 6 and 7: the hint names a flag, not a Python call."""
    result = noetic(project, "myagent:harness", "--input", "hi")
    assert result.returncode == 1
    assert "[MISSING_API_KEY]" in result.stderr
    assert "--model scripted:echo" in result.stderr and "OpenRouterProvider(" not in result.stderr
