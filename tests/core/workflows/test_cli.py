"""`noetic schema`, `noetic validate` and `noetic run` (issue 6 deliverables 4 and 5)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import noetic as nt
import pytest
from noetic.cli import main
from noetic.workflows.schema import published_schema
from noetic.workflows.terminal import TerminalRenderer, progress_of

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"


def test_noetic_schema_prints_the_published_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == published_schema()


def test_noetic_validate_accepts_the_examples(capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("drain.json", "batch.json"):
        assert main(["validate", str(EXAMPLES / name)]) == 0
    assert "valid workflow document" in capsys.readouterr().out


def test_noetic_validate_prints_the_path_of_each_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(
        json.dumps(
            {
                "version": 1,
                "root": {
                    "kind": "sequence",
                    "id": "s",
                    "steps": [
                        {"kind": "compute", "id": "a"},
                        {"kind": "runCode", "id": "b", "execute": "x"},
                        {
                            "kind": "loop",
                            "id": "c",
                            "body": {"kind": "compute", "id": "d", "expr": "1"},
                            "until": {"kind": "soon"},
                        },
                    ],
                },
            }
        )
    )
    assert main(["validate", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "$.root.steps[0].expr: [WORKFLOW_VALIDATION_FAILED]" in err
    assert "$.root.steps[1]: [UNSUPPORTED_NODE_KIND]" in err
    assert "$.root.steps[2].until: [UNKNOWN_UNTIL_PREDICATE]" in err
    assert "3 problems" in err


def test_noetic_validate_checks_expressions_and_item_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "names.json"
    broken.write_text(
        json.dumps(
            {
                "version": 1,
                "root": {
                    "kind": "compute",
                    "id": "c",
                    "expr": "n =",
                    "emitItems": {"item": "nope", "onDone": "$"},
                },
            }
        )
    )
    assert main(["validate", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "$.root.emitItems.item: [UNKNOWN_CUSTOM_ITEM]" in err
    assert "$.root.expr: [INVALID_EXPRESSION]" in err


def test_noetic_run_drain_prints_the_final_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLES / "drain.json"), "--input", '{"n": 3}']) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"n": 0}
    assert captured.err.splitlines()[-1].endswith("0 left")  # progress, line by line (not a TTY)


def test_noetic_run_batch_shows_progress_model_text_and_the_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", str(EXAMPLES / "batch.json")]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["status"] == "needs attention"
    assert "batch:progress" in captured.err
    assert "4/4" in captured.err
    assert "assistant Processed orders.csv" in captured.err
    assert 'batch:verdict outcome="needs attention" failed=1' in captured.err


def test_noetic_run_with_input_takes_the_other_route(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLES / "batch.json"), "--input", '{"files": ["a.csv"]}']) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "ok"


def test_noetic_run_reports_an_invalid_document_and_a_failed_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    invalid = tmp_path / "invalid.json"
    invalid.write_text('{"version": 1, "root": {"kind": "schedule", "id": "s"}}')
    assert main(["run", str(invalid)]) == 2
    assert "[UNSUPPORTED_NODE_KIND]" in capsys.readouterr().err
    failing = tmp_path / "failing.json"
    failing.write_text('{"version": 1, "root": {"kind": "compute", "id": "c", "expr": "$error(\'stop\')"}}')
    assert main(["run", str(failing)]) == 1
    assert "EXPRESSION_FAILED" in capsys.readouterr().err


def test_noetic_run_works_as_a_fresh_process() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "noetic.cli", "run", "examples/batch.json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["failed"] == 1


# --- the renderer -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "fraction", "label"),
    [
        ({"done": 1, "of": 4}, 0.25, "1/4"),
        ({"completed": 3, "total": 3}, 1.0, "3/3"),
        ({"progress": 0.5}, 0.5, "50%"),
        ({"percent": 20}, 0.2, "20%"),
    ],
)
def test_progress_fields_become_a_fraction(fields: dict[str, float], fraction: float, label: str) -> None:
    found = progress_of(fields)
    assert found is not None
    assert found[:2] == (fraction, label)


def test_a_remaining_count_uses_the_largest_seen_as_its_total() -> None:
    first = progress_of({"left": 4})
    assert first == (0.0, "4 left", 4.0)
    assert progress_of({"left": 1}, first[2]) == (0.75, "1 left", 4.0)
    assert progress_of({"name": "x"}) is None


def test_on_a_terminal_bars_redraw_in_place() -> None:
    from noetic.custom_items import CustomItemEvent, custom_item
    from noetic.streams import StreamEvent

    decl = custom_item("job:progress", event={"type": "object"}, output={"type": "object"})
    out = io.StringIO()
    renderer = TerminalRenderer(out, live=True, color=False)
    for done in (1, 2):
        renderer.handle(
            StreamEvent(
                "framework",
                "h:custom_item_event",
                CustomItemEvent("ci_1", decl.type, "progress", {"done": done, "of": 4}, decl),
            )
        )
    renderer.close()
    text = out.getvalue()
    assert "\x1b[2K" in text  # the live area is erased and redrawn in place
    assert text.rstrip().endswith("2/4")


def test_noetic_run_refuses_a_provider_no_adapter_registers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLES / "drain.json"), "--input", '{"n": 1}', "--model", "nosuch:model"]) == 1
    assert "[UNKNOWN_MODEL_ADAPTER]" in capsys.readouterr().err


def test_run_warns_and_fails_when_a_loop_predicate_raises(tmp_path) -> None:
    import io
    import json

    from noetic.workflows.commands import run_document

    doc = tmp_path / "doc.json"
    doc.write_text(
        json.dumps(
            {
                "version": 1,
                "root": {
                    "kind": "loop",
                    "id": "l",
                    "body": {"kind": "compute", "id": "c", "expr": "$"},
                    "until": {"kind": "expr", "expr": "$error('boom')"},
                },
            }
        )
    )
    out, err = io.StringIO(), io.StringIO()
    assert run_document(doc, input="x", out=out, err=err, live=False) == 1
    assert out.getvalue() == "x\n"
    assert "warning: loop 'l' stopped because its until predicate failed" in err.getvalue()
    assert "boom" in err.getvalue()


def test_an_unexpected_exception_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from noetic import cli
    from noetic.workflows import commands

    def crash(*args: object, **kwargs: object) -> int:
        raise RuntimeError("boom \x1b[2J")

    monkeypatch.setattr(commands, "print_schema", crash)
    monkeypatch.delenv("NOETIC_DEBUG", raising=False)
    assert cli.main(["schema"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "error: [UNEXPECTED_ERROR] RuntimeError: boom \\x1b[2J (set NOETIC_DEBUG=1 for the traceback)\n"
    )
    monkeypatch.setenv("NOETIC_DEBUG", "1")
    with pytest.raises(RuntimeError):
        cli.main(["schema"])


def test_input_that_is_not_strict_json_is_text() -> None:
    from noetic.workflows.commands import parse_input

    assert parse_input("NaN") == "NaN"
    assert parse_input('{"a": Infinity}') == '{"a": Infinity}'
    assert parse_input('{"a": 1.5}') == {"a": 1.5}


def test_input_nesting_is_bounded_whatever_the_recursion_limit() -> None:
    from noetic.workflows.commands import MAX_INPUT_DEPTH, parse_input

    assert parse_input("[" * MAX_INPUT_DEPTH + "]" * MAX_INPUT_DEPTH) is not None
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(nt.NoeticConfigError, match="5000 levels deep") as info:
        parse_input(deep)  # the recursion limit is 10,000 here (jsonata raised it): json would parse it
    assert info.value.code == "INVALID_INPUT"
    assert parse_input('"[[[["') == "[[[["
