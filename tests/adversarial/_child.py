"""The program every adversarial case runs in its child process (see conftest.py).

argv: the anyio backend and the path of the case's snippet. The snippet is a Python module
that defines `async def main()`; it runs under `anyio.run(main, backend=...)`. The outcome is
written as one JSON line after `MARKER` on stdout, so the parent can tell a value returned, a
`NoeticError` raised and anything else (a crash) apart even when the snippet prints.

`cli` mode runs `noetic.cli.main(argv)` instead, with `anyio.run` defaulting to the backend, and
exits with its status: the parent compares exit code, stdout and stderr.
"""

from __future__ import annotations

import functools
import json
import sys
import traceback
from typing import Any

MARKER = "@@adversarial-outcome@@"


def die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (an interrupted run leaves no
    orphaned case behind); elsewhere the wall clock and the CPU cap still end it."""
    import signal

    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _report(outcome: dict[str, Any]) -> None:
    sys.stdout.write("\n" + MARKER + json.dumps(outcome, default=repr, ensure_ascii=True) + "\n")
    sys.stdout.flush()


def _run_snippet(backend: str, path: str) -> int:
    import anyio
    from noetic.errors import NoeticError

    namespace: dict[str, Any] = {"__name__": "adversarial_case", "BACKEND": backend}
    with open(path, encoding="utf-8") as handle:
        exec(compile(handle.read(), path, "exec"), namespace)
    try:
        value = anyio.run(namespace["main"], backend=backend)
    except NoeticError as exc:
        _report({"raised": {"code": exc.code, "message": exc.message, "type": type(exc).__name__}})
    except BaseException as exc:
        _report({"crashed": {"type": type(exc).__name__, "traceback": traceback.format_exc()}})
    else:
        _report({"returned": value})
    return 0


def _run_cli(backend: str, argv: list[str]) -> int:
    import anyio

    anyio.run = functools.partial(anyio.run, backend=backend)  # type: ignore[assignment]
    from noetic.cli import main

    return main(argv)


def main(argv: list[str]) -> int:
    """Run one case: `snippet BACKEND PATH` or `cli BACKEND ARGS...`; returns the exit status."""
    mode, backend, *rest = argv
    return _run_snippet(backend, rest[0]) if mode == "snippet" else _run_cli(backend, rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
