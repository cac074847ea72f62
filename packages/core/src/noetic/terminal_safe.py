"""Untrusted text made safe to write to a terminal.

Model text, step outputs, tool arguments, error messages quoting a document: any of it may
hold escape sequences that clear the screen, move the cursor, retitle the window or write the
clipboard (OSC 52), or bidirectional overrides that make text read differently than it is.
`terminal_safe` shows every such character as a visible escape instead (`\\x1b`, `\\u202e`), so
what reaches the terminal is only printable text. It works one character at a time, so a
sequence split across streamed chunks is neutralised too.
"""

from __future__ import annotations

import re

__all__ = ["terminal_safe"]

#: C0 controls but tab and newline, DEL, C1 controls (CSI, OSC, … as single code points),
#: bidirectional embeddings, overrides and isolates, and lone surrogates (which cannot be
#: encoded, so writing them would fail).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_IN_A_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str, *, multiline: bool = True) -> str:
    """`text` with every control character, escape sequence introducer, bidirectional
    override and lone surrogate shown as a visible escape; tabs and newlines are kept unless
    `multiline` is false (for one-line renderings), and `\\r\\n` becomes `\\n`."""
    if multiline:
        text = text.replace("\r\n", "\n")
        pattern = _UNSAFE
    else:
        pattern = _UNSAFE_IN_A_LINE
    return pattern.sub(_visible, text) if pattern.search(text) else text
