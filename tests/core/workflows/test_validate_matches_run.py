"""`noetic validate` reports what `noetic run` would, node paths on runtime errors, hints for
the command line, and `noetic run` offline by default (issue 13, point 6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from noetic.cli import main


def write(tmp_path: Path, name: str, root: dict[str, Any], **extra: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "root": root, **extra}))
    return str(path)


UNKNOWN_LAYER = {
    "kind": "withContext",
    "id": "w",
    "layers": ["no-such-layer"],
    "child": {"kind": "compute", "id": "c", "expr": "1"},
}
UNKNOWN_TOOL = {
    "kind": "callModel",
    "id": "m",
    "instructions": "Answer.",
    "tools": [{"type": "no_such_tool"}],
}
UNKNOWN_ITEM = {"kind": "compute", "id": "c", "expr": "1", "emitItems": {"item": "nope", "onDone": "$"}}
ALL_THREE = {"kind": "sequence", "id": "s", "steps": [UNKNOWN_LAYER, UNKNOWN_TOOL, UNKNOWN_ITEM]}


def problem_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if ": [" in line]


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        (UNKNOWN_LAYER, "$.root.layers[0]: [UNKNOWN_LAYER_REFERENCE]"),
        (UNKNOWN_TOOL, "$.root.tools[0].type: [UNKNOWN_TOOL_REFERENCE]"),
        (UNKNOWN_ITEM, "$.root.emitItems.item: [UNKNOWN_CUSTOM_ITEM]"),
    ],
)
def test_validate_reports_what_run_reports_with_the_json_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], root: dict[str, Any], expected: str
) -> None:
    """Issue 13, point 6: an unknown layer, tool or custom item fails both commands alike."""
    doc = write(tmp_path, "doc.json", root)
    assert main(["validate", doc]) == 2
    validate_err = capsys.readouterr().err
    assert main(["run", doc]) == 2  # reported before running, with the same lines
    run_err = capsys.readouterr().err
    assert expected in validate_err
    assert problem_lines(validate_err) == problem_lines(run_err)


def test_validate_reports_every_problem_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 13, point 6: all three kinds in one document are listed together."""
    doc = write(tmp_path, "doc.json", ALL_THREE)
    assert main(["validate", doc]) == 2
    err = capsys.readouterr().err
    assert "$.root.steps[0].layers[0]: [UNKNOWN_LAYER_REFERENCE]" in err
    assert "$.root.steps[1].tools[0].type: [UNKNOWN_TOOL_REFERENCE]" in err
    assert "$.root.steps[2].emitItems.item: [UNKNOWN_CUSTOM_ITEM]" in err
    assert "3 problems" in err


def test_cli_hints_name_the_command_line_not_python(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 13, point 6: hints speak of plugins, files and flags, never `nt.workflow(...)`."""
    doc = write(tmp_path, "doc.json", ALL_THREE)
    main(["validate", doc])
    err = capsys.readouterr().err
    hints = [line for line in err.splitlines() if line.startswith("hint: ")]
    assert len(hints) == 3
    assert all("nt.workflow" not in hint and "=" not in hint for hint in hints), hints
    assert any("noetic plugins" in hint for hint in hints)


def test_a_runtime_error_names_the_node_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 13, point 6: `EXPRESSION_FAILED` says which node of the document failed."""
    root = {
        "kind": "sequence",
        "id": "s",
        "steps": [
            {"kind": "compute", "id": "fine", "expr": "1"},
            {"kind": "compute", "id": "broken", "expr": "$error('the data is bad')"},
        ],
    }
    doc = write(tmp_path, "doc.json", root)
    assert main(["run", doc]) == 1
    err = capsys.readouterr().err
    assert "error at $.root.steps[1]: [EXPRESSION_FAILED]" in err


def test_noetic_run_is_offline_for_nodes_that_name_a_model(tmp_path: Path) -> None:
    """Issue 13, point 6: a document naming real models runs offline without `--model` (no
    key, no network): every model node answers with the echo model."""
    root = {
        "kind": "sequence",
        "id": "s",
        "steps": [
            {"kind": "callModel", "id": "a", "model": "anthropic/claude-sonnet-4", "instructions": "Answer."},
            {"kind": "callModel", "id": "b", "model": "openrouter:openai/gpt-4o", "instructions": "Answer."},
        ],
    }
    doc = write(tmp_path, "doc.json", root)
    env = {k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
    result = subprocess.run(
        [sys.executable, "-m", "noetic.cli", "run", doc, "--input", "hello there"],
        capture_output=True,
        text=True,
        env={**env, "OPENROUTER_BASE_URL": "http://127.0.0.1:9/unreachable"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hello there"
    assert "offline: 2 model node(s)" in result.stderr and "--model" in result.stderr


def test_noetic_run_with_model_uses_the_providers_the_document_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 13, point 6: `--model` goes online; a node naming a provider no adapter serves
    fails before the turn (never a silent fallback)."""
    root = {"kind": "callModel", "id": "a", "model": "nosuch:model-x", "instructions": "Answer."}
    doc = write(tmp_path, "doc.json", root)
    assert main(["run", doc, "--model", "scripted:echo"]) == 1
    err = capsys.readouterr().err
    assert "[UNKNOWN_MODEL_ADAPTER]" in err and "error at $.root" in err


def test_errors_and_problems_cannot_drive_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 13, point 10: escape sequences quoted in a problem or an error are shown escaped."""
    doc = write(
        tmp_path, "doc.json", {"kind": "compute", "id": "c", "expr": "$error('\u001b]0;pwned\u0007')"}
    )
    assert main(["run", doc]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned" in err
    bad = write(
        tmp_path,
        "bad.json",
        {"kind": "withContext", "id": "w", "layers": ["\u001b[2J"], "child": UNKNOWN_ITEM},
    )
    assert main(["validate", bad]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b[2J" in err
