"""The README's main job and the CLI entry points run end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_demo_streams_a_tool_call_and_an_answer() -> None:
    """Issue 13, point 2: the demo streams through `harness.stream`, not a test helper."""
    assert "wait_all_tasks_blocked" not in (ROOT / "examples" / "demo.py").read_text()
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert 'tool call: save_note({"path": "notes/todo.md"' in out
    assert "is typing: I save" in out  # an in-progress snapshot was rendered
    assert "answer: I saved your to-do list to notes/todo.md." in out
    assert "file notes/todo.md: '- ship noetic'" in out


def test_noetic_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "noetic.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert result.stdout.startswith("noetic 0.1.0")
