"""The `noetic` console script: `noetic.cli.main`, with Ctrl-C handled from the first line.

Importing the `noetic` package (pydantic, jsonschema, anyio) takes most of a second on a busy
machine, and a console script importing `noetic.cli` directly would show a KeyboardInterrupt
traceback for a Ctrl-C in that time. This module sits outside the package, so nothing is
imported before its `try`; from then on `noetic.cli.main` handles Ctrl-C itself.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

#: The exit status after Ctrl-C, as `noetic.cli.EXIT_INTERRUPTED` (not imported: see above).
_EXIT_INTERRUPTED = 130


def main() -> int:
    """Import and run the command line; Ctrl-C during the import is one line and status 130."""
    try:
        from noetic.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("\nnoetic: interrupted\n")
        return _EXIT_INTERRUPTED
    return run()
