"""Hostile documents through the command line: each ends in a clear error, in bounded time
and memory, under the default limits.

The bounds checked here are generous on purpose: they catch a document going from bounded to
unbounded (a run that never ends, memory that grows with the iterations), not a slowdown.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HOSTILE = Path(__file__).resolve().parent / "hostile"
LAUNCHER = Path(__file__).resolve().parent / "peak_rss.py"
#: A run that is still going after this long is taken as one that would never end.
HANG_SECONDS = 300
#: Far above what a bounded run peaks at (about 80 MB), far below an unbounded one.
RSS_CEILING_MB = 400


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_mb: float


def noetic(*args: str, tmp_path: Path) -> Finished:
    """Run `noetic ARGS` in a subprocess, through `peak_rss.py`, which measures its peak
    resident memory (a child of this test process could not measure its own)."""
    peak = tmp_path / "peak"
    done = subprocess.run(
        [sys.executable, str(LAUNCHER), str(peak), str(HANG_SECONDS), "-m", "noetic.cli", *args],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=HANG_SECONDS + 60,
        check=False,
    )
    measured = peak.read_text()
    assert measured != "timeout", f"noetic {' '.join(args)} was still running after {HANG_SECONDS} s"
    return Finished(done.returncode, done.stdout, done.stderr, int(measured) / 1024)


def test_parallel_loops_that_never_stop_end_in_a_run_budget_error_in_bounded_memory(tmp_path: Path) -> None:
    # 8 paths, each a loop with no ceiling and no stop, each iteration a 1 MB string: before
    # the run-wide budget it ran 100,000 iterations; before loops kept only what their
    # predicate reads, it peaked at 840 MB
    done = noetic("run", str(HOSTILE / "parallel_loops.json"), tmp_path=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "[LIMIT_EXCEEDED]" in done.stderr
    assert "WorkflowLimits.max_run_memory_bytes" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.peak_rss_mb < RSS_CEILING_MB


def test_a_key_written_twice_is_a_problem_at_its_path(tmp_path: Path) -> None:
    # {"expr": "1", "expr": "2"}: a reviewer reads one expression, JSON would run the other
    for command in ("validate", "run"):
        done = noetic(command, str(HOSTILE / "repeated_key.json"), tmp_path=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "$.root.expr: [WORKFLOW_VALIDATION_FAILED] this key is given more than once" in done.stderr
        assert "Traceback" not in done.stderr


def test_two_sibling_steps_with_one_id_are_a_problem_at_the_second(tmp_path: Path) -> None:
    done = noetic("validate", str(HOSTILE / "repeated_id.json"), tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert (
        "$.root.steps[1].id: [WORKFLOW_VALIDATION_FAILED] step id 'a' is already the id of $.root.steps[0]"
        in (done.stderr)
    )


def test_an_integer_too_long_to_convert_is_a_problem_at_its_path(tmp_path: Path) -> None:
    done = noetic("validate", str(HOSTILE / "long_integer.json"), tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "$.root['x-note']: [WORKFLOW_VALIDATION_FAILED] an integer of 5000 digits" in done.stderr
    assert "UNEXPECTED_ERROR" not in done.stderr


def test_a_failing_expression_reports_the_jsonata_error_not_a_python_one(tmp_path: Path) -> None:
    done = noetic("run", str(HOSTILE / "divide_by_zero.json"), tmp_path=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "error at $.root: [EXPRESSION_FAILED]" in done.stderr  # the failing node, as the docs show
    assert "Number out of range: division by zero (D1001)" in done.stderr
    assert "ZeroDivisionError" not in done.stderr
