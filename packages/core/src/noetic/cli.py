"""The `noetic` command line: `noetic --version` and `noetic plugins`.

Each subcommand lives in its own function taking the parsed arguments and returning an exit
status; `main` only parses and dispatches.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

__all__ = ["main"]


def _plugins(args: argparse.Namespace) -> int:
    """List every plugin: name, version, hooks, what it registered, load errors."""
    from noetic.plugins import make_plugin_manager, plugin_report

    report = plugin_report(make_plugin_manager())
    if args.json:
        print(json.dumps([info.__dict__ for info in report], indent=2))
        return 0
    for info in report:
        version = f" {info.distribution} {info.version}" if info.distribution else ""
        print(f"{info.name}{version}")
        if info.error:
            print(f"  error: {info.error}")
            continue
        print(f"  hooks: {', '.join(info.hooks) or '-'}")
        print(f"  registered: {', '.join(info.registered) or '-'}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="noetic", description="Noetic for Python.")
    parser.add_argument("--version", action="store_true", help="print the noetic-core version")
    commands = parser.add_subparsers(dest="command")
    plugins = commands.add_parser("plugins", help="list installed plugins and what they registered")
    plugins.add_argument("--json", action="store_true", help="print JSON")
    plugins.set_defaults(handler=_plugins)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        import noetic

        print(f"noetic {noetic.__version__}")
        return 0
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
