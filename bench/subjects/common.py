"""What every subject shares: the scripted conversation and the tool it calls.

Every framework's fake model plays the same two rounds: the first answers the user's question
with one call `add(a=1, b=2)`; once a tool result is in the conversation it answers
`ANSWER`. Each round reports the same usage (`INPUT_TOKENS` in, `OUTPUT_TOKENS` out), so no
framework has to estimate tokens on its own.
"""

from __future__ import annotations

QUESTION = "What is 1 + 2?"
ANSWER = "The answer is 3."
INSTRUCTIONS = "Answer with the help of the add tool."
TOOL_NAME = "add"
TOOL_DESCRIPTION = "Add two integers."
TOOL_ARGS = '{"a": 1, "b": 2}'
INPUT_TOKENS = 12
OUTPUT_TOKENS = 6


def add(a: int, b: int) -> int:
    """The tool every subject offers its model."""
    return a + b


def delta_chunks(count: int, size: int = 4) -> list[str]:
    """`count` text deltas of `size` characters each (S2)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    return [(alphabet[i % 26] * size) for i in range(count)]
