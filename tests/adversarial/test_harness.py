"""The harness itself: each way a child can end is told apart and reported."""

from __future__ import annotations

import pytest


def test_a_return_value_and_a_noetic_error_are_read_back(child):
    assert child.run("async def main():\n    print('noise')\n    return {'backend': BACKEND}").returned() == {
        "backend": child.backend
    }
    message = child.run(
        """
        from noetic.errors import NoeticError
        async def main():
            raise NoeticError("LIMIT_EXCEEDED", "too many")
        """
    ).raised("LIMIT_EXCEEDED")
    assert message == "too many"


def test_a_hang_is_killed_at_the_wall_clock_and_reported(child):
    outcome = child.run("import time\nasync def main():\n    time.sleep(60)", wall_clock=2)
    assert outcome.finished.timed_out
    with pytest.raises(pytest.fail.Exception, match="HUNG"):
        outcome.returned()


def test_the_memory_cap_stops_an_allocation(child):
    outcome = child.run("async def main():\n    return len('x' * 2_000_000_000)", memory_mb=256)
    assert outcome.data["crashed"]["type"] == "MemoryError"
    with pytest.raises(pytest.fail.Exception, match="memory cap"):
        outcome.raised("EXPRESSION_LIMIT_EXCEEDED")


def test_the_cli_runs_on_the_backend_and_reports_its_status(child):
    finished = child.cli("--version")
    assert (finished.returncode, finished.stdout.startswith("noetic ")) == (0, True)
