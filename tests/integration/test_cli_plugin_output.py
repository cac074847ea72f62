"""What the `noetic` command prints about plugins, run as the user runs it (a subprocess).

A broken plugin under `NOETIC_STRICT_PLUGINS=1` is one `error: [PLUGIN_LOAD_FAILED]` line (no
traceback) for every command; without strict mode its warning is one `noetic: warning:` line,
not Python's `file:line` warning format. `noetic plugins` in a pipe keeps every name whole, and
`noetic --version` answers without loading plugins.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAT = str(ROOT / "examples" / "chat.json")


def noetic(*args: str, path: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **env}
    full_env.pop("NOETIC_DEBUG", None)
    if path is not None:
        full_env["PYTHONPATH"] = str(path)
    return subprocess.run(
        [sys.executable, "-m", "noetic.cli", *args], capture_output=True, text=True, env=full_env, timeout=120
    )


@pytest.fixture
def broken(plugin_dist: Callable[..., Path]) -> Path:
    return plugin_dist("noetic-broken-test", version="1.2.3", source="raise RuntimeError('boom')\n")


@pytest.mark.parametrize(
    "args", [("validate", CHAT), ("run", CHAT, "--input", "hi"), ("schema",), ("plugins",)]
)
def test_strict_mode_with_a_broken_plugin_prints_one_error_line_not_a_traceback(
    broken: Path, args: tuple[str, ...]
) -> None:
    result = noetic(*args, path=broken, NOETIC_STRICT_PLUGINS="1")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: [PLUGIN_LOAD_FAILED]"), result.stderr
    assert "noetic-broken-test" in lines[0] and "boom" in lines[0]


def test_a_skipped_plugin_is_one_warning_line_without_python_source_locations(broken: Path) -> None:
    result = noetic("validate", CHAT, path=broken)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("noetic: warning: noetic plugin 'noetic-broken-test'")
    assert "RuntimeError: boom" in lines[0]
    assert "plugins.py" not in result.stderr and "load_plugins(pm)" not in result.stderr


def test_plugins_listing_in_a_pipe_keeps_names_and_versions_whole() -> None:
    result = noetic("plugins", COLUMNS="80")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert "noetic-adapters-openrouter 0.1.0" in rows["adapters-openrouter"]
    assert "noetic-layers-scratchpad 0.1.0" in rows["layers-scratchpad"]


def test_version_answers_without_loading_plugins(broken: Path) -> None:
    # a broken plugin under strict mode fails every command that loads plugins; --version loads none
    result = noetic("--version", path=broken, NOETIC_STRICT_PLUGINS="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("noetic ") and result.stderr == ""
