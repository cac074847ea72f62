"""`noetic` subcommands contributed by plugins through the `register_commands` hook.

A plugin registers a `PluginCommand` (or a `"module:attr"` string naming one) under the
subcommand's name; the CLI adds an argparse subparser for it, lets the command add its
arguments, and calls its `run` with the parsed namespace:

    @noetic.hookimpl
    def register_commands(register):
        register("worker", "my_plugin.cli:worker_command")

    # my_plugin/cli.py
    worker_command = PluginCommand(
        help="run a worker", add_arguments=lambda p: p.add_argument("--queue"), run=run_worker
    )

A command named like a core command (`run`, `plugins`, …) is refused. When a name the user
typed is no command, the CLI says which plugins failed to load (one of them may have provided
it) instead of argparse's bare "invalid choice".
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from noetic.errors import NoeticConfigError

if TYPE_CHECKING:
    from noetic.plugins import NoeticPluginManager

__all__ = ["PluginCommand", "add_plugin_commands", "explain_unknown_command"]


@dataclass(frozen=True, slots=True)
class PluginCommand:
    """A `noetic` subcommand: its one-line `help`, how it adds its arguments, and what it runs.

    `run(args)` returns the process exit status.
    """

    help: str
    run: Callable[[argparse.Namespace], int]
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None


def _unavailable(name: str, source: str, error: NoeticConfigError) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        print(f"noetic: command {name!r} from plugin {source!r} cannot run: {error.message}", file=sys.stderr)
        if error.hint:
            print(f"  hint: {error.hint}", file=sys.stderr)
        return 2

    return run


def add_plugin_commands(
    subparsers: Any, pm: NoeticPluginManager, *, reserved: Collection[str], err: TextIO
) -> list[str]:
    """Add a subparser per registered plugin command; returns the names added.

    A command whose target cannot be imported still gets a subparser that explains the
    failure when it is run, whatever arguments follow (it sets `takes_any_arguments`).
    """
    added: list[str] = []
    for registration in pm.registries.commands:
        name = registration.name
        if name in reserved:
            print(
                f"noetic: plugin {registration.source!r} registered the command {name!r}, which is a core "
                "command; it was ignored",
                file=err,
            )
            continue
        try:
            command = registration.resolve()
        except NoeticConfigError as exc:
            parser = subparsers.add_parser(name, help=f"(unavailable: plugin {registration.source!r})")
            parser.set_defaults(
                handler=_unavailable(name, registration.source, exc), takes_any_arguments=True
            )
            added.append(name)
            continue
        if not isinstance(command, PluginCommand):
            print(
                f"noetic: plugin {registration.source!r} registered the command {name!r} as "
                f"{type(command).__name__}, not a noetic.plugin_commands.PluginCommand; it was ignored",
                file=err,
            )
            continue
        parser = subparsers.add_parser(name, help=f"{command.help} [{registration.source}]")
        if command.add_arguments is not None:
            command.add_arguments(parser)
        parser.set_defaults(handler=command.run)
        added.append(name)
    return added


def explain_unknown_command(name: str, known: Collection[str], pm: NoeticPluginManager) -> str | None:
    """The message for a subcommand nobody provides when some plugin failed to load, else None."""
    if name in known or not pm.load_errors:
        return None
    failed = "; ".join(f"{plugin} ({reason})" for plugin, reason in sorted(pm.load_errors.items()))
    return (
        f"noetic: {name!r} is not a command, and these plugins failed to load (one may provide it): "
        f"{failed}. Run `noetic plugins` for details, and reinstall or fix the plugin."
    )
