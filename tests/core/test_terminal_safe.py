"""`terminal_safe`: untrusted text reaches a terminal without escape sequences of its own."""

from __future__ import annotations

import pytest
from noetic.terminal_safe import terminal_safe


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[2Jcleared", "\\x1b[2Jcleared"),
        ("\x1b]52;c;ZXZpbA==\x07", "\\x1b]52;c;ZXZpbA==\\x07"),
        ("\x9b31m", "\\x9b31m"),
        ("over\rwrite", "over\\x0dwrite"),
        ("\u202eevil\u2066", "\\u202eevil\\u2066"),
        ("a\ud800b", "a\\ud800b"),
        ("del\x7f", "del\\x7f"),
    ],
)
def test_control_characters_are_shown_as_visible_escapes(raw: str, shown: str) -> None:
    assert terminal_safe(raw) == shown
    shown.encode("utf-8")  # always encodable


def test_ordinary_text_is_unchanged_and_newlines_kept_unless_one_line() -> None:
    text = "Grüße, 世界 — tabs\tand\nlines 🙂"
    assert terminal_safe(text) is text
    assert terminal_safe("a\r\nb") == "a\nb"
    assert terminal_safe("a\nb\tc", multiline=False) == "a\\x0ab\\x09c"


def test_a_sequence_split_across_chunks_is_neutralised_chunk_by_chunk() -> None:
    assert "".join(terminal_safe(chunk) for chunk in ("abc\x1b", "[2J")) == "abc\\x1b[2J"
