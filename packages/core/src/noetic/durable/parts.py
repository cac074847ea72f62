"""Records larger than one part: split on write, joined and checked on read.

A checkpoint record (a ledger entry, an execution's start record) is one JSON document. Up
to `PART_BYTES` it is stored as it is, under its key. A larger one is stored as a small head
document `{"parts": n, "length": L}` under its key and `n` parts under
`{key}:part:{i:06d}`, each a JSON string holding the next slice of the text. Nothing is ever
dropped for its size, and no single value a backend stores is much larger than a part.

Reading checks what a forged or half-deleted record could get wrong — a part missing, a part
that is not a string, a total length that differs from the head's — and reports it as
`CHECKPOINT_CORRUPT` naming the key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from noetic.durable.store import corrupt, decode_document, encode_document

__all__ = ["PART_BYTES", "is_part_key", "join_record", "join_text", "split_record"]

#: The largest record stored in one piece, and the size of each part of a larger one.
PART_BYTES = 128 * 1024
_PART = ":part:"


def split_record(key: str, text: str) -> dict[str, str]:
    """The rows storing the record `text` at `key` (one row, or a head and its parts)."""
    if len(text) <= PART_BYTES:
        return {key: text}
    slices = [text[i : i + PART_BYTES] for i in range(0, len(text), PART_BYTES)]
    rows = {key: encode_document({"parts": len(slices), "length": len(text)})}
    for i, piece in enumerate(slices):
        rows[f"{key}{_PART}{i:06d}"] = json.dumps(piece)  # a string: nothing to nest
    return rows


def is_part_key(key: str) -> bool:
    """True for the key of a part (not of a record)."""
    return _PART in key


def join_record(key: str, rows: Mapping[str, str], *, execution_id: str | None = None) -> Any:
    """The decoded record at `key`, its parts read from `rows` (which holds every key read)."""
    head = decode_document(key, rows[key], execution_id=execution_id)
    if not (isinstance(head, dict) and set(head) == {"parts", "length"}):
        return head
    return decode_document(key, _joined(key, head, rows, execution_id), execution_id=execution_id)


def join_text(key: str, rows: Mapping[str, str], *, execution_id: str | None = None) -> str:
    """The text of the record at `key` exactly as it was split (parts joined, not decoded)."""
    text = rows[key]
    head = decode_document(key, text, execution_id=execution_id) if text.startswith('{"parts":') else None
    if not (isinstance(head, dict) and set(head) == {"parts", "length"}):
        return text
    return _joined(key, head, rows, execution_id)


def _joined(key: str, head: dict[str, Any], rows: Mapping[str, str], execution_id: str | None) -> str:
    count, length = head["parts"], head["length"]
    if not (_whole(count) and _whole(length) and count <= length // PART_BYTES + 1):
        raise corrupt(key, "its part count or length is not a whole number", execution_id=execution_id)
    pieces: list[str] = []
    for i in range(count):
        part = f"{key}{_PART}{i:06d}"
        if part not in rows:
            raise corrupt(key, f"its part {i} of {count} is missing", execution_id=execution_id)
        piece = decode_document(part, rows[part], execution_id=execution_id)
        if not isinstance(piece, str):
            raise corrupt(part, "a part is not a string", execution_id=execution_id)
        pieces.append(piece)
    text = "".join(pieces)
    if len(text) != length:
        raise corrupt(key, f"its parts hold {len(text)} characters, not {length}", execution_id=execution_id)
    return text


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
