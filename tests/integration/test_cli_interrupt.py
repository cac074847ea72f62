"""Ctrl-C while `noetic` is still starting (a plugin's import is slow, as psycopg's is, or the
package itself is still being imported) prints one line and exits with 130, like Ctrl-C
during a run: no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SLOW_PLUGIN = """
    import pathlib, time

    pathlib.Path({marker!r}).write_text("importing")
    time.sleep(60)
"""


#: A `sitecustomize` that holds up the import of one of noetic's own modules, so the test can
#: press Ctrl-C while the console script is still importing the package.
SLOW_PACKAGE = """
import pathlib, sys, time

class Slow:
    def find_spec(self, name, path=None, target=None):
        if name == "noetic.channels":
            pathlib.Path({marker!r}).write_text("importing")
            time.sleep(60)
        return None

sys.meta_path.insert(0, Slow())
"""


def interrupt_once(marker: Path, tmp_path: Path, pythonpath: Path) -> tuple[int, str, str]:
    """Run `noetic run` (the installed console script), press Ctrl-C once `marker` exists."""
    document = tmp_path / "doc.json"
    document.write_text('{"version": 1, "root": {"kind": "compute", "id": "c", "expr": "1"}}')
    command = Path(sys.executable).with_name("noetic")
    proc = subprocess.Popen(
        [str(command), "run", str(document)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(pythonpath)},
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the plugin was never imported"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, stdout, stderr


def assert_interrupted(status: int, stdout: str, stderr: str) -> None:
    assert status == 130, (status, stderr)
    assert "Traceback" not in stderr, stderr
    assert stderr.strip() == "noetic: interrupted", stderr
    assert stdout == ""


def test_ctrl_c_while_a_plugin_is_imported_is_one_line_and_status_130(
    plugin_dist: Callable[..., Path], tmp_path: Path
) -> None:
    marker = tmp_path / "importing"
    path = plugin_dist("noetic-slow-import-test", SLOW_PLUGIN.format(marker=str(marker)))
    assert_interrupted(*interrupt_once(marker, tmp_path, path))


def test_ctrl_c_while_the_package_is_imported_is_one_line_and_status_130(tmp_path: Path) -> None:
    marker = tmp_path / "importing"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_PACKAGE.format(marker=str(marker)))
    assert_interrupted(*interrupt_once(marker, tmp_path, site))
