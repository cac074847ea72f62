"""`noetic inspect STORE [--host 127.0.0.1] [--port N] [--workflow DOC]`: serve the inspector.

Also runnable as `python -m noetic_inspector ...`. Binds to a loopback address only (another
`--host` is refused with exit status 2); a store or workflow that cannot be opened, a port out of
range or one already in use is a one-line error with exit status 2, never a traceback. The port
is bound before the address is printed, so the printed address is the one served (`--port 0`
prints the free port the system picked). The server runs until interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import socket
import sys

from noetic.errors import NoeticError
from noetic.plugin_commands import PluginCommand

__all__ = ["HELP", "LOOPBACK", "add_arguments", "inspect_command", "main", "run"]

HELP = "browse checkpointed executions (and live runs) in a local web page"
#: The only addresses the inspector binds to.
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's arguments."""
    parser.add_argument("store", nargs="?", help="checkpoint store URL, e.g. sqlite:///runs.db")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8765, help="port (default 8765; 0 picks a free one)")
    parser.add_argument("--workflow", help="a JSON workflow document to draw as a graph on /workflow")


def _port(text: str) -> int:
    """A TCP port number, 0 to 65535 (argparse turns the error into a one-line usage message)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: give a number from 0 to 65535")
    return port


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host`:`port` (raises `OSError`, e.g. when the port is in use)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


def run(args: argparse.Namespace) -> int:
    """Open the store and workflow, then serve until interrupted; returns the exit status."""
    import uvicorn

    from noetic_inspector.app import create_app
    from noetic_inspector.reading import open_store
    from noetic_inspector.workflow_graph import workflow_graph_of_file

    if args.host not in LOOPBACK:
        print(f"noetic inspect: refusing to bind {args.host!r}: only {', '.join(LOOPBACK)}", file=sys.stderr)
        return 2
    if args.store is None and args.workflow is None:
        print("noetic inspect: give a store URL, --workflow DOC, or both", file=sys.stderr)
        return 2
    try:
        store = open_store(args.store) if args.store is not None else None
        graph = workflow_graph_of_file(args.workflow) if args.workflow is not None else None
    except NoeticError as exc:
        print(f"noetic inspect: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"noetic inspect: cannot read {args.workflow!r}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        print(f"noetic inspect: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    with sock:
        port = sock.getsockname()[1]
        shown = f"[{args.host}]" if ":" in args.host else args.host
        config = uvicorn.Config(create_app(store, workflow=graph), log_level="warning")
        print(f"noetic inspect: serving on http://{shown}:{port}/ (Ctrl-C stops)", flush=True)
        uvicorn.Server(config).run(sockets=[sock])
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m noetic_inspector`: the same command outside the `noetic` CLI."""
    parser = argparse.ArgumentParser(prog="noetic inspect", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))


#: The command the plugin registers as `noetic inspect`.
inspect_command = PluginCommand(help=HELP, add_arguments=add_arguments, run=run)
