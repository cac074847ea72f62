"""Developing your own plugin in the workspace environment (issue 13, point 8).

As a user would: a copy of the project, a throw-away plugin package installed into its .venv
with `scripts/bootstrap.sh uv pip install -e …`, then the command `make test`/`make demo` run
first (`scripts/bootstrap.sh …`) — the plugin must still be installed and registered.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PLUGIN_PYPROJECT = textwrap.dedent("""
    [project]
    name = "noetic-shout"
    version = "0.0.1"
    dependencies = ["noetic-core"]

    [project.entry-points.noetic]
    shout = "noetic_shout"

    [build-system]
    requires = ["hatchling"]
    build-backend = "hatchling.build"

    [tool.hatch.build.targets.wheel]
    packages = ["noetic_shout"]
""")
PLUGIN_MODULE = textwrap.dedent('''
    """A model adapter that answers in capitals."""
    from noetic.hookspecs import hookimpl


    @hookimpl
    def register_model_adapters(register):
        register("shout", "noetic.testing.scripted:scripted_model_factory")
''')


def copy_project(target: Path) -> Path:
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in files:
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def uv_binary() -> str:
    """The uv that runs this suite: `uv run` names itself in $UV (bootstrap.sh may have
    installed it into .tools/, off PATH)."""
    found = os.environ.get("UV") or shutil.which("uv")
    assert found, "these tests run under scripts/bootstrap.sh, which always has a uv"
    return found


def bootstrap(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    env["PATH"] = f"{Path(uv_binary()).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        ["scripts/bootstrap.sh", *args], cwd=project, capture_output=True, text=True, env=env, timeout=600
    )


def test_an_installed_plugin_survives_the_bootstrap_sync(tmp_path: Path) -> None:
    """Issue 13, point 8: `scripts/bootstrap.sh uv pip install -e` works, and the next
    `scripts/bootstrap.sh …` (what `make test` and `make demo` run) keeps the plugin."""
    project = copy_project(tmp_path / "project")
    plugin = tmp_path / "noetic-shout"
    (plugin / "noetic_shout").mkdir(parents=True)
    (plugin / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    (plugin / "noetic_shout" / "__init__.py").write_text(PLUGIN_MODULE)

    first = bootstrap(project, "python", "-c", "import noetic")
    assert first.returncode == 0, first.stderr
    installed = bootstrap(project, "uv", "pip", "install", "--no-deps", "-e", str(plugin))
    assert installed.returncode == 0, installed.stderr
    for _ in range(2):  # e.g. `make test`, then `make demo`: each syncs first
        listed = bootstrap(project, "noetic", "plugins", "--json")
        assert listed.returncode == 0, listed.stderr
        assert '"shout"' in listed.stdout and "model adapter shout" in listed.stdout
