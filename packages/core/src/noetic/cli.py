"""The `noetic` command line: `noetic --version`, `noetic plugins`, and for workflow documents
`noetic schema`, `noetic validate DOC` and `noetic run DOC`; `noetic context` shows how a model
call spent its context window, per layer. Plugins add subcommands of their own through the
`register_commands` hook (see `noetic.plugin_commands`).

Each subcommand lives in its own function taking the parsed arguments and returning an exit
status; `main` only parses and dispatches.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from noetic.plugins import NoeticPluginManager

__all__ = ["EXIT_INTERRUPTED", "main"]

#: The exit status after Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


def _plugins(args: argparse.Namespace) -> int:
    """List every plugin: name, version, hooks, what it registered, load errors.

    Exits with 1 when a plugin failed to load (its error is listed), else 0.
    """
    import warnings

    from noetic.plugins import NoeticPluginWarning, make_plugin_manager, plugin_report

    with warnings.catch_warnings():  # the report lists each load error itself
        warnings.simplefilter("ignore", NoeticPluginWarning)
        report = plugin_report(make_plugin_manager())
    status = 1 if any(info.error for info in report) else 0
    if args.json:
        print(json.dumps([info.__dict__ for info in report], indent=2))
        return status
    from noetic.console import console_for, natural_width, plugins_table, plugins_view

    console = console_for(sys.stdout)
    if not console.is_terminal:  # a pipe or a file: rows as long as they need, no word folded
        console = console_for(sys.stdout, width=max(console.width, natural_width(plugins_table(report))))
    console.print(plugins_view(report, console.width))
    return status


def _schema(args: argparse.Namespace) -> int:
    """Print the published JSON Schema of workflow documents."""
    from noetic.workflows.commands import print_schema

    return print_schema(sys.stdout)


def _validate(args: argparse.Namespace) -> int:
    """Check a workflow document and print every problem with its JSON path."""
    from noetic.workflows.commands import validate_document

    return validate_document(args.document, sys.stdout, sys.stderr)


def _run(args: argparse.Namespace) -> int:
    """Run a workflow document, rendering its stream live and printing the final output."""
    from noetic.workflows.commands import parse_input, run_document

    return run_document(
        args.document, input=parse_input(args.input), model=args.model, out=sys.stdout, err=sys.stderr
    )


def _context(args: argparse.Namespace) -> int:
    """Show how a model call spent its context window, per layer (run a target or read a snapshot)."""
    from noetic.layers.command import context_command

    names = [name.strip() for name in (args.layers or "").split(",") if name.strip()]
    if args.layers is not None and not names:
        print(
            f"noetic context: --layers {args.layers!r} names no layer (e.g. --layers scratchpad)",
            file=sys.stderr,
        )
        return 2
    return context_command(
        target=args.target,
        snapshot=args.snapshot,
        input=args.input or "",
        model=args.model,
        layers=names,
        thread=args.thread,
        as_json=args.json,
        out=sys.stdout,
        err=sys.stderr,
    )


def _parser(pm: NoeticPluginManager | None = None) -> tuple[argparse.ArgumentParser, set[str]]:
    """The argument parser and the names of its subcommands (core ones, then `pm`'s plugins')."""
    parser = argparse.ArgumentParser(prog="noetic", description="Noetic for Python.")
    parser.add_argument("--version", action="store_true", help="print the noetic-core version")
    commands = parser.add_subparsers(dest="command")
    plugins = commands.add_parser("plugins", help="list installed plugins and what they registered")
    plugins.add_argument("--json", action="store_true", help="print JSON")
    plugins.set_defaults(handler=_plugins)
    schema = commands.add_parser("schema", help="print the JSON Schema of workflow documents")
    schema.set_defaults(handler=_schema)
    validate = commands.add_parser("validate", help="check a workflow document; print each problem's path")
    validate.add_argument("document", help="path of the JSON workflow document")
    validate.set_defaults(handler=_validate)
    run = commands.add_parser("run", help="run a workflow document and show its progress live")
    run.add_argument("document", help="path of the JSON workflow document")
    run.add_argument("--input", help="the turn input: JSON (e.g. '{\"n\": 3}'), else plain text")
    run.add_argument(
        "--model", help="model id, e.g. 'openrouter:openai/gpt-4o-mini' (default: offline echo model)"
    )
    run.set_defaults(handler=_run)
    context = commands.add_parser("context", help="show per-layer context usage of a run or a saved snapshot")
    context.add_argument(
        "target", nargs="?", help="workflow document path, or module:attr of a step or harness"
    )
    context.add_argument("--snapshot", help="read a saved LastLayerUsage (JSON) instead of running")
    context.add_argument("--input", help="the turn input (default: empty)")
    context.add_argument("--model", help="model id (default: the offline echo model)")
    context.add_argument("--layers", help="registered layer names, comma separated (e.g. scratchpad)")
    context.add_argument("--thread", help="thread id of the turn")
    context.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    context.set_defaults(handler=_context)
    names = set(commands.choices)
    if pm is not None:
        from noetic.plugin_commands import add_plugin_commands

        names.update(add_plugin_commands(commands, pm, reserved=set(names), err=sys.stderr))
    return parser, names


def _one_line(exc: BaseException) -> str:
    """An error as one terminal-safe line: `[CODE] message` for a `NoeticError`."""
    from noetic.errors import NoeticError
    from noetic.terminal_safe import terminal_safe

    if isinstance(exc, NoeticError):
        text = str(exc)
    else:
        text = f"[UNEXPECTED_ERROR] {type(exc).__name__}: {exc} (set NOETIC_DEBUG=1 for the traceback)"
    return terminal_safe(text, multiline=False)


def _print_version() -> int:
    """`noetic --version`: print the installed noetic-core version."""
    from importlib.metadata import version

    print(f"noetic {version('noetic-core')}")
    return 0


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Print a warning as one `noetic: warning: ...` line: a user of the command needs the
    message (which plugin was skipped and why), not the file and line that raised it."""
    from noetic.terminal_safe import terminal_safe

    text = terminal_safe(str(message), multiline=False)
    print(f"noetic: warning: {text}", file=sys.stderr if file is None else file)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status.

    Bad input never shows a traceback: a `NoeticError` escaping a subcommand is one line with
    its code and status 2 (1 for a run-time failure); anything else is one line too, and
    `NOETIC_DEBUG=1` shows its traceback. Ctrl-C, whenever it comes (while plugins load, or
    mid-run), is one line and status 130.
    """
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # A running turn was cancelled at its next step boundary and cleaned up; at startup,
        # the plugin being imported is simply abandoned.
        sys.stderr.write("\nnoetic: interrupted\n")
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    """`main` without its Ctrl-C handling."""
    import os
    import warnings

    from noetic.errors import NoeticError
    from noetic.plugins import make_plugin_manager

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:  # text a terminal cannot encode is escaped, not an error
            reconfigure(errors="backslashreplace")
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments == ["--version"]:  # answered before loading any plugin: it needs none of them
        return _print_version()
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:  # a broken plugin under NOETIC_STRICT_PLUGINS=1 is an error line, not a traceback
            pm = make_plugin_manager()
            parser, names = _parser(pm)
        except NoeticError as exc:
            if os.environ.get("NOETIC_DEBUG"):
                raise
            print(f"error: {_one_line(exc)}", file=sys.stderr)
            return 2
        return _dispatch(arguments, pm, parser, names)


def _dispatch(
    arguments: list[str], pm: NoeticPluginManager, parser: argparse.ArgumentParser, names: set[str]
) -> int:
    """Parse `arguments` and run the chosen subcommand under the CLI's error handling."""
    import os

    from noetic.errors import NoeticConfigError, NoeticError

    typed = next((arg for arg in arguments if not arg.startswith("-")), None)
    if typed is not None:
        from noetic.plugin_commands import explain_unknown_command

        message = explain_unknown_command(typed, names, pm)
        if message is not None:
            print(message, file=sys.stderr)
            return 2
    args, unknown = parser.parse_known_args(arguments)
    if unknown and not getattr(args, "takes_any_arguments", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.version:
        return _print_version()
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except Exception as exc:
        if os.environ.get("NOETIC_DEBUG"):
            raise
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 1 if isinstance(exc, NoeticError) and not isinstance(exc, NoeticConfigError) else 2


if __name__ == "__main__":
    sys.exit(main())
