"""Terminal output that fits the terminal (issue 13, point 10): `noetic run` on a real
pseudo-terminal at 40 and 120 columns, read back through a terminal emulator; rich stays out
of `import noetic`; untrusted text cannot drive the terminal."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pyte
import pytest
import wcwidth

ROOT = Path(__file__).resolve().parents[2]
ROWS = 60


def run_on_a_terminal(args: list[str], columns: int, raw: bytearray | None = None) -> pyte.Screen:
    """Run `args` with stdout/stderr on a pty of `columns` x ROWS; the final screen (and the
    bytes written, into `raw`)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    proc = subprocess.Popen(
        args, stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env={**env, "TERM": "xterm-256color"}
    )
    os.close(slave)
    screen = pyte.Screen(columns, ROWS)
    stream = pyte.ByteStream(screen)
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            stream.feed(chunk)
            if raw is not None:
                raw += chunk
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == 0
    return screen


@pytest.mark.parametrize("columns", [40, 120])
def test_noetic_run_fits_the_terminal(columns: int) -> None:
    """Issue 13, point 10: the progress bar ends as one whole line and the streamed answer
    appears once, wrapped — no stacks of partial lines — at 40 and at 120 columns."""
    screen = run_on_a_terminal([sys.executable, "-m", "noetic.cli", "run", "examples/batch.json"], columns)
    lines = [line.rstrip() for line in screen.display]
    bars = [line for line in lines if "batch:progress" in line]
    assert len(bars) == 1, "\n".join(lines)
    assert bars[0].endswith("100% 4/4"), "\n".join(lines)
    text = " ".join(line.strip() for line in lines if line.strip())
    assert text.count("stock.csv.") == 2, "\n".join(lines)  # the answer line and the JSON summary
    assert text.count("assistant Processed") == 1, "\n".join(lines)


def test_import_noetic_does_not_import_rich() -> None:
    """Issue 13, point 10: only the command line loads rich."""
    code = (
        "import sys, anyio, noetic as nt\n"
        "async def main():\n"
        "    async with nt.AgentHarness('h', agent_graph=nt.run_code('c', lambda x: x)) as h:\n"
        "        await h.run(1)\n"
        "anyio.run(main)\n"
        "assert 'rich' not in sys.modules, sorted(m for m in sys.modules if m.startswith('rich'))\n"
        "import noetic.cli\n"
        "assert 'rich' not in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_untrusted_text_cannot_drive_the_terminal() -> None:
    """Issue 13, point 10: escape sequences in model text and item fields are shown, not obeyed."""
    from noetic.items import MessageItem, OutputText
    from noetic.model import TextDelta
    from noetic.streams import StreamEvent
    from noetic.terminal_safe import terminal_safe
    from noetic.workflows.terminal import TerminalRenderer

    hostile = "ok\x1b]0;pwned\x07\x1b[2J\u202egnp.exe"
    assert terminal_safe(hostile) == "ok\\x1b]0;pwned\\x07\\x1b[2J\\u202egnp.exe"
    for live in (False, True):
        out = io.StringIO()
        renderer = TerminalRenderer(out, live=live, color=False, width=60)
        renderer.handle(StreamEvent("sdk", "response.output_text.delta", TextDelta(hostile, "m1")))
        item = MessageItem(id="m1", role="assistant", content=[OutputText(text=hostile)])
        renderer.handle(StreamEvent("framework", "h:item_appended", {"item": item}))
        renderer.close()
        shown = out.getvalue()
        assert "\x1b]0;" not in shown and "\x07" not in shown and "\u202e" not in shown
        assert "\\x1b]0;pwned" in shown


def test_the_demo_typing_line_is_redrawn_in_place_at_40_columns() -> None:
    """Issue 13, point 10: the demo's typing line leaves no stack of partial copies behind."""
    screen = run_on_a_terminal([sys.executable, "examples/demo.py"], 40)
    lines = [line.rstrip() for line in screen.display]
    assert not any("is typing" in line for line in lines), "\n".join(lines)
    text = " ".join(line.strip() for line in lines if line.strip())
    assert text.count("assistant: I saved your to-do list to notes/todo.md.") == 1, "\n".join(lines)


_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.mark.parametrize("columns", [40, 120])
@pytest.mark.parametrize("command", [["plugins"], ["context", "tests/core/layers/test_usage.py:agent"]])
def test_tables_are_drawn_for_the_terminal_width(command: list[str], columns: int) -> None:
    """Issue 13, point 10: `noetic plugins` and `noetic context` tables never write a line
    wider than the terminal (so the terminal never wraps them into broken rows)."""
    args = (
        command
        if command[0] == "plugins"
        else [*command[:1], command[1].replace("/", ".").replace(".py", "")]
    )
    raw = bytearray()
    screen = run_on_a_terminal([sys.executable, "-m", "noetic.cli", *args], columns, raw)
    lines = _CSI.sub("", raw.decode()).replace("\r", "").split("\n")
    widths = [wcwidth.wcswidth(line) for line in lines]
    assert max(widths) <= columns, "\n".join(lines)
    shown = [line.split() for line in screen.display]
    first_words = {words[0] for words in shown if words}
    assert (
        ("noetic.builtins" in first_words)
        if command[0] == "plugins"
        else ({"system", "total"} <= first_words)
    )
