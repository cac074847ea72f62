"""Plugin subcommands through the `register_commands` hook: `noetic NAME` runs them, `noetic
plugins` lists them, and a command whose plugin failed to load says so instead of argparse's
"invalid choice"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from noetic.plugin_commands import PluginCommand
from noetic.plugins import make_plugin_manager

HELLO = """
    import noetic
    from noetic.plugin_commands import PluginCommand

    def _arguments(parser):
        parser.add_argument("--name", default="world")

    def _run(args):
        print(f"hello {args.name}")
        return 3

    hello = PluginCommand(help="say hello", add_arguments=_arguments, run=_run)

    @noetic.hookimpl
    def register_commands(register):
        register("hello", hello)
        register("lazy-broken", "no_such_module_anywhere:command")
        register("run", hello)
"""


def distribution(tmp: Path, name: str, source: str) -> Path:
    module = name.replace("-", "_")
    (tmp / f"{module}.py").write_text(textwrap.dedent(source))
    info = tmp / f"{module}-0.4.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.4.2\n")
    (info / "entry_points.txt").write_text(f"[noetic]\n{name} = {module}\n")
    return tmp


def noetic(path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(path)}
    return subprocess.run(
        [sys.executable, "-m", "noetic.cli", *argv], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_plugin_command_parses_its_arguments_and_returns_its_status(tmp_path: Path) -> None:
    path = distribution(tmp_path, "noetic-hello-test", HELLO)
    done = noetic(path, "hello", "--name", "noetic")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "hello noetic\n"
    helped = noetic(path, "--help")
    assert "hello" in helped.stdout and "say hello [noetic-hello-test]" in helped.stdout


def test_noetic_plugins_lists_the_commands_a_plugin_added(tmp_path: Path) -> None:
    path = distribution(tmp_path, "noetic-hello-test", HELLO)
    report = {p["name"]: p for p in json.loads(noetic(path, "plugins", "--json").stdout)}
    entry = report["noetic-hello-test"]
    assert "register_commands" in entry["hooks"]
    assert {"command hello", "command lazy-broken"} <= set(entry["registered"])
    text = noetic(path, "plugins").stdout
    assert "command hello" in text


def test_a_core_command_cannot_be_replaced_by_a_plugin(tmp_path: Path) -> None:
    path = distribution(tmp_path, "noetic-hello-test", HELLO)
    done = noetic(path, "run", "--help")
    assert done.returncode == 0
    assert "workflow document" in done.stdout  # still the core's `run`
    assert "registered the command 'run', which is a core command" in done.stderr


def test_a_command_whose_target_cannot_be_imported_says_why(tmp_path: Path) -> None:
    path = distribution(tmp_path, "noetic-hello-test", HELLO)
    done = noetic(path, "lazy-broken", "--anything", "x")
    assert done.returncode == 2
    assert "command 'lazy-broken' from plugin 'noetic-hello-test' cannot run" in done.stderr
    assert "no_such_module_anywhere" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_command_of_a_plugin_that_failed_to_load_names_the_plugin(tmp_path: Path) -> None:
    path = distribution(tmp_path, "noetic-frob-test", "raise ImportError('needs a missing driver')\n")
    done = noetic(path, "frobnicate", "--storage", "postgresql://x/y")
    assert done.returncode == 2
    assert "invalid choice" not in done.stderr
    assert "'frobnicate' is not a command" in done.stderr
    assert "noetic-frob-test" in done.stderr and "needs a missing driver" in done.stderr


def test_an_unknown_command_without_broken_plugins_is_argparses_usual_error(tmp_path: Path) -> None:
    done = noetic(tmp_path, "no-such-command")
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


def test_plugin_commands_register_through_the_hook_in_process() -> None:
    import noetic

    class Plugin:
        @noetic.hookimpl
        def register_commands(self, register: object) -> None:
            register("ping", PluginCommand(help="ping", run=lambda args: 0))  # type: ignore[operator]

    pm = make_plugin_manager(plugins=[Plugin()], load_entry_points=False)
    entry = pm.registries.commands.get("ping")
    assert entry is not None and isinstance(entry.resolve(), PluginCommand)
