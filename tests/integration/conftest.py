"""Test support for the integration tests: throwaway plugin distributions and a fresh interpreter.

- `plugin_dist(name, source, version="0.3.0")` writes an installed distribution with one
  `noetic` entry point (the module `source`, dedented) into the test's `tmp_path` and returns
  that directory, ready to go on `PYTHONPATH`.
- `run_python(code, path, **env)` runs `code` in a fresh interpreter with `path` on
  `PYTHONPATH` and `env` added to the environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def plugin_dist(tmp_path: Path) -> Callable[..., Path]:
    def write(name: str, source: str, version: str = "0.3.0") -> Path:
        module = name.replace("-", "_")
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
        info = tmp_path / f"{module}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[noetic]\n{name} = {module}\n")
        return tmp_path

    return write


@pytest.fixture
def run_python() -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(code: str, path: Path, **env: str) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "PYTHONPATH": str(path), **env}
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120
        )

    return run
