"""`noetic run` and `noetic validate` with hostile input: one line with a code instead of a
traceback, control sequences neutralised, and a failing `until` said out loud."""

from __future__ import annotations

import json

ESCAPES = "\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b31m\u202eevil"


def compute_document(expr: str) -> str:
    return json.dumps({"version": 1, "root": {"kind": "compute", "id": "c", "expr": expr}})


def assert_one_error_line(finished, code: str) -> None:
    assert "Traceback" not in finished.stderr, finished.describe()
    lines = [line for line in finished.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, finished.describe()
    assert code in lines[0], finished.describe()


def test_deeply_nested_input_json_is_one_line_and_exit_2(child):
    doc = child.write("doc.json", compute_document("$"))
    finished = child.cli("run", str(doc), "--input", "[" * 5000 + "]" * 5000)
    assert finished.returncode == 2, finished.describe()
    assert_one_error_line(finished, "INVALID_INPUT")


def test_a_lone_surrogate_in_the_output_is_shown_escaped(child):
    doc = child.write("doc.json", compute_document('"a\\ud800b"'))
    finished = child.cli("run", str(doc))
    assert finished.returncode == 0, finished.describe()
    assert "Traceback" not in finished.stderr
    assert finished.stdout.strip() == "a\\ud800b"


def test_escape_sequences_in_model_text_and_outputs_are_neutralised(child):
    doc = child.write(
        "doc.json",
        json.dumps(
            {
                "version": 1,
                "root": {
                    "kind": "sequence",
                    "id": "s",
                    "steps": [
                        {"kind": "callModel", "id": "m", "instructions": "Echo."},
                        {"kind": "compute", "id": "c", "expr": "{'echo': $}"},
                    ],
                },
            }
        ),
    )
    finished = child.cli("run", str(doc), "--input", ESCAPES)
    assert finished.returncode == 0, finished.describe()
    for text in (finished.stdout, finished.stderr):
        for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert raw not in text, (raw, finished.describe())
    assert "\\x1b[2J" in finished.stderr  # the model text, shown escaped
    assert "\\u001b[2J" in finished.stdout  # the output (JSON), shown escaped


def test_escape_sequences_in_a_document_error_are_neutralised(child):
    doc = child.write("doc.json", compute_document("\x1b[2J("))
    for command in ("validate", "run"):
        finished = child.cli(command, str(doc))
        assert finished.returncode == 2, finished.describe()
        assert "\x1b" not in finished.stderr
        assert "INVALID_EXPRESSION" in finished.stderr


def test_a_failing_until_expression_is_warned_about_and_fails_the_run(child):
    doc = child.write(
        "doc.json",
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
        ),
    )
    finished = child.cli("run", str(doc), "--input", '"x"')
    assert finished.returncode == 1, finished.describe()
    assert "Traceback" not in finished.stderr
    warning = [line for line in finished.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1, finished.describe()
    assert "until predicate failed" in warning[0]
    assert "boom" in warning[0]


def test_a_fifo_as_the_document_is_refused_instead_of_blocking(child):
    # found attacking the fixes: opening a FIFO waited for a writer forever
    import os

    fifo = child.tmp_path / "doc.json"
    os.mkfifo(fifo)
    finished = child.cli("validate", str(fifo), wall_clock=20)
    assert finished.returncode == 2, finished.describe()
    assert "not a regular file" in finished.stderr
