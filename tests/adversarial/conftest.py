"""The adversarial suite's harness: each case runs in a child process with a wall clock and a
memory cap, once per anyio backend, so a case that hangs, allocates without bound or crashes
the interpreter fails that case only, with a report saying which of those happened.

Cases take the `child` fixture (see README.md):

    def test_bound_holds(child):
        outcome = child.run('''
            import noetic as nt
            async def main():
                ...
        ''')
        outcome.raised("EXPRESSION_LIMIT_EXCEEDED")

`child.run(snippet)` runs a snippet defining `async def main()` under `anyio.run(main,
backend=...)`; `child.cli(*argv)` runs `noetic.cli.main(argv)` on the same backend. Limits are
the defaults below or `child.run(..., wall_clock=..., memory_mb=...)`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: Seconds a case may run before it counts as a hang (generous: CI machines are shared).
WALL_CLOCK_S = 60.0
#: Address-space cap of the child process, in MiB (an interpreter with noetic loaded uses ~60).
MEMORY_MB = 512
#: CPU-seconds cap of the child: a busy loop is killed even when the wall clock is slow.
CPU_S = 60

_ZYGOTE = Path(__file__).with_name("_zygote.py")
_MARKER = "@@adversarial-outcome@@"


class _ForkServer:
    """One `_zygote.py` process per backend for the session: it has imported noetic once and
    forks a child per case (see that module), so a case costs a fork, not an interpreter start."""

    def __init__(self) -> None:
        env = {**os.environ, "MALLOC_ARENA_MAX": "2", "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"}
        env.pop("OPENROUTER_API_KEY", None)
        self.proc = subprocess.Popen(
            [sys.executable, str(_ZYGOTE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        self._buffer = b""

    def _message(self, timeout: float) -> dict[str, Any] | None:
        """The next reply, or None when `timeout` seconds pass first."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if select.select([fd], [], [], remaining)[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError("the adversarial fork server exited")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def run(self, request: dict[str, Any], wall_clock: float) -> tuple[int | None, bool]:
        """Run one case; returns its exit status (None when killed at the wall clock) and
        whether the wall clock ran out."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        started = self._message(60)
        assert started is not None, "the adversarial fork server did not answer"
        done = self._message(wall_clock)
        if done is not None:
            return int(done["status"]), False
        with contextlib.suppress(ProcessLookupError):
            os.killpg(started["pid"], signal.SIGKILL)
        self._message(60)
        return None, True

    def close(self) -> None:
        """End the server (it waits for nothing: every case has ended)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Finished:
    """What a child process did: its exit status, output, and how it ended."""

    backend: str
    what: str
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool

    def describe(self) -> str:
        """A report for a failed assertion: how the child ended, and its output's tail."""
        if self.timed_out:
            how = "HUNG: killed after the wall clock ran out"
        elif self.returncode is not None and self.returncode < 0:
            name = signal.Signals(-self.returncode).name
            how = f"KILLED by {name}" + (" (CPU cap)" if name in ("SIGXCPU", "SIGKILL") else "")
        else:
            how = f"exited with status {self.returncode}"
        if "MemoryError" in self.stderr or "MemoryError" in self.stdout:
            how += " — MemoryError: the memory cap was reached"
        return (
            f"[{self.backend}] {self.what}: {how}\n"
            f"--- stdout (tail) ---\n{self.stdout[-3000:]}\n--- stderr (tail) ---\n{self.stderr[-3000:]}"
        )


class Outcome:
    """The outcome of `child.run`: exactly one of returned, raised (a `NoeticError`) or
    crashed (anything else, including a hang or the memory cap)."""

    def __init__(self, finished: Finished):
        self.finished = finished
        self.data: dict[str, Any] = {}
        for line in finished.stdout.splitlines():
            if line.startswith(_MARKER):
                self.data = json.loads(line[len(_MARKER) :])

    @property
    def printed(self) -> str:
        """What the snippet printed on stdout (without the outcome line)."""
        return self.finished.stdout.split("\n" + _MARKER)[0]

    def _fail(self, expected: str) -> None:
        pytest.fail(f"expected {expected}, got {self.summary()}\n{self.finished.describe()}", pytrace=False)

    def summary(self) -> str:
        """One line: what the case did."""
        if "returned" in self.data:
            return f"a return value {self.data['returned']!r:.300}"
        if "raised" in self.data:
            raised = self.data["raised"]
            return f"{raised['type']} {raised['code']}: {raised['message']:.300}"
        if "crashed" in self.data:
            return f"a crash ({self.data['crashed']['type']})"
        return "no outcome (the child died or hung)"

    def returned(self) -> Any:
        """The value `main()` returned; fails the test on anything else."""
        if "returned" not in self.data:
            self._fail("a return value")
        return self.data["returned"]

    def raised(self, code: str) -> str:
        """The message of the `NoeticError` with `code` that `main()` raised; fails otherwise."""
        raised = self.data.get("raised")
        if raised is None or raised["code"] != code:
            self._fail(f"NoeticError {code}")
        message: str = raised["message"]
        return message


class Child:
    """Runs snippets and CLI commands in a capped child process on one anyio backend."""

    def __init__(self, backend: str, tmp_path: Path, server: _ForkServer):
        self.backend = backend
        self.tmp_path = tmp_path
        self.server = server
        self._count = 0

    def _spawn(
        self, args: Sequence[str], what: str, wall_clock: float, memory_mb: int, cpu_s: int, stdin: str | None
    ) -> Finished:
        self._count += 1
        stem = self.tmp_path / f"run_{self._count}"
        stdin_path = None
        if stdin is not None:
            stdin_path = stem.with_suffix(".stdin")
            stdin_path.write_text(stdin, encoding="utf-8")
        out_path, err_path = stem.with_suffix(".stdout"), stem.with_suffix(".stderr")
        request = {
            "args": list(args),
            "cwd": str(self.tmp_path),
            "stdin": None if stdin_path is None else str(stdin_path),
            "stdout": str(out_path),
            "stderr": str(err_path),
            "memory_mb": memory_mb,
            "cpu_s": cpu_s,
        }
        status, timed_out = self.server.run(request, wall_clock)
        return Finished(
            self.backend,
            what,
            status,
            out_path.read_bytes().decode("utf-8", "backslashreplace"),
            err_path.read_bytes().decode("utf-8", "backslashreplace"),
            timed_out,
        )

    def write(self, name: str, text: str) -> Path:
        """Write a file (a document, an input) into the case's directory; returns its path."""
        path = self.tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    def run(
        self,
        snippet: str,
        *,
        wall_clock: float = WALL_CLOCK_S,
        memory_mb: int = MEMORY_MB,
        cpu_s: int = CPU_S,
    ) -> Outcome:
        """Run `snippet` (defines `async def main()`) in a capped child; see `Outcome`."""
        self._count += 1
        path = self.write(f"case_{self._count}.py", textwrap.dedent(snippet))
        return Outcome(
            self._spawn(["snippet", self.backend, str(path)], "snippet", wall_clock, memory_mb, cpu_s, None)
        )

    def cli(
        self,
        *argv: str,
        stdin: str | None = None,
        wall_clock: float = WALL_CLOCK_S,
        memory_mb: int = MEMORY_MB,
        cpu_s: int = CPU_S,
    ) -> Finished:
        """Run `noetic *argv` in a capped child; returns its status and output. A hang or a
        kill fails the test here."""
        finished = self._spawn(
            ["cli", self.backend, *argv],
            "noetic " + ascii(" ".join(argv))[1:-1][:200],
            wall_clock,
            memory_mb,
            cpu_s,
            stdin,
        )
        if finished.timed_out or finished.returncode is None or finished.returncode < 0:
            pytest.fail(finished.describe(), pytrace=False)
        return finished


@pytest.fixture(scope="session")
def _fork_server() -> Iterator[_ForkServer]:
    """The session's fork server (cases of both backends share it)."""
    server = _ForkServer()
    yield server
    server.close()


@pytest.fixture(params=["asyncio", "trio"])
def child(request: pytest.FixtureRequest, tmp_path: Path, _fork_server: _ForkServer) -> Child:
    """A capped child-process runner on each anyio backend."""
    return Child(str(request.param), tmp_path, _fork_server)
