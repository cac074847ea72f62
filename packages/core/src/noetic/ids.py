"""Identifier generation: time-ordered execution ids and short random item ids."""

from __future__ import annotations

import os
import time

__all__ = ["new_execution_id", "new_item_id"]


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
