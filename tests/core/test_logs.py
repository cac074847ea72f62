"""`noetic.logs.logger` behaves as `logging.getLogger` once used, and imports `logging` only then."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest
from noetic.logs import logger


def test_messages_reach_the_named_logger(caplog: pytest.LogCaptureFixture) -> None:
    log = logger("noetic.test_logs")
    with caplog.at_level(logging.WARNING, logger="noetic.test_logs"):
        log.warning("a %s warning", "formatted")
        log.info("below the level")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("noetic.test_logs", "WARNING", "a formatted warning")
    ]
    assert log.name == "noetic.test_logs"


def test_the_application_configures_the_real_logger() -> None:
    log = logger("noetic.test_logs.levels")
    real = logging.getLogger("noetic.test_logs.levels")
    real.setLevel(logging.ERROR)
    try:
        assert not log.isEnabledFor(logging.WARNING)
        assert log.isEnabledFor(logging.ERROR)
    finally:
        real.setLevel(logging.NOTSET)


def test_logging_is_imported_at_the_first_message() -> None:
    code = """
        import sys
        from noetic.logs import logger
        log = logger("noetic.first")
        assert "logging" not in sys.modules
        log.warning("first message")
        assert "logging" in sys.modules
        print("ok")
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert "first message" in done.stderr  # logging's last-resort handler prints warnings
