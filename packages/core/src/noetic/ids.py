"""Identifiers: time-ordered execution ids, short random item ids, and the check of the
thread and execution ids callers choose before they name stored records."""

from __future__ import annotations

import os
import time

from noetic.errors import NoeticError

__all__ = ["checked_id", "is_text", "new_execution_id", "new_item_id"]


def new_execution_id() -> str:
    """A UUIDv7 string: 48 bits of Unix milliseconds, then random bits (RFC 9562)."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    hexa = f"{value:032x}"  # what str(uuid.UUID(int=value)) gives, without building the object
    return f"{hexa[:8]}-{hexa[8:12]}-{hexa[12:16]}-{hexa[16:20]}-{hexa[20:]}"


def new_item_id(prefix: str = "item") -> str:
    """A random id such as `msg_3f9c0d5e1a7b2c48e0f1d2a3` (96 random bits)."""
    return f"{prefix}_{os.urandom(12).hex()}"


def is_text(value: str) -> bool:
    """Whether `value` is Unicode text UTF-8 encodes: False when it holds a lone surrogate
    (`json.loads('"\\udfff"')` makes one; bytes decoded with `surrogateescape` read back so).
    Checked without encoding when it is ASCII, as every generated id and key is."""
    if value.isascii():
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def checked_id(kind: str, value: object) -> str:
    """`value` if it can name stored records: a string of Unicode text (`is_text`).

    A string holding a lone surrogate is no text a store can keep, so it is refused here,
    before any record is named by it, with `INVALID_ID` naming `kind` (`"thread_id"`,
    `"execution_id"`).
    """
    if not isinstance(value, str):
        raise NoeticError("INVALID_ID", f"{kind} must be a string, not {type(value).__name__}", kind=kind)
    if not is_text(value):
        position = next(i for i, char in enumerate(value) if "\ud800" <= char <= "\udfff")
        raise NoeticError(
            "INVALID_ID",
            f"{kind} {value!r} holds a lone surrogate at position {position}: it is not Unicode "
            "text, and no checkpoint store can keep it (decode the id's bytes as UTF-8 before "
            "passing it)",
            kind=kind,
        )
    return value
