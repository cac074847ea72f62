"""A fork server for the adversarial suite: it imports what the cases use once, then forks one
child per case, so a case costs a fork instead of an interpreter start (about a second each).

The parent writes one JSON request per line on stdin: `args` (for `_child.main`), `cwd`,
`stdin`, `stdout` and `stderr` (file paths), `memory_mb` and `cpu_s`. For each request this
process forks; the child starts its own session, asks to die with this process, sets its
address-space and CPU caps, redirects its standard streams to the files and runs the case.
This process answers `{"pid": ...}` at once and `{"status": ...}` (the child's exit status, or
minus the signal that killed it) when the child ends; the parent owns the wall clock and kills
the child's session when it runs out.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import traceback
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _child
import anyio  # noqa: F401 - imported once here, shared by every forked case
import noetic
import noetic.cli
import noetic.testing
import noetic.workflows.hydrate  # noqa: F401
import trio  # noqa: F401
from _child import die_with_parent


def _run_case(request: dict[str, Any]) -> int:
    os.setsid()
    die_with_parent()
    cap = request["memory_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    resource.setrlimit(resource.RLIMIT_CPU, (request["cpu_s"], request["cpu_s"] + 5))
    os.chdir(request["cwd"])
    for fd, path, flags in (
        (0, request["stdin"] or os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    return _child.main(request["args"])


def _fork(request: dict[str, Any]) -> int:
    sys.stdout.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        code = _run_case(request)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _reply(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    die_with_parent()
    for line in sys.stdin:
        pid = _fork(json.loads(line))
        _reply({"pid": pid})
        _, status = os.waitpid(pid, 0)
        _reply({"status": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    main()
