"""A thread's stored history: an append-only chain of item pieces (HS-1..HS-4).

Every execution starts from its thread's item log. Rather than copy that log into each start
record (which made a turn's start cost O(history) and a long thread's store grow with the
square of its turns), the log is stored once per thread as a chain of **pieces**, and a start
record (or a thread's history head, `noetic.sessions`) only names the point it stands on:

- a piece at `thread:{thread_id}:items:{digest}` holds the items from position `start` on,
  and names the piece before it (`parent`, the digest of the piece ending at `start`; none
  for the first piece). `digest` is the SHA-256 of the piece's exact text (first 32 hex
  digits), so a piece cannot be changed without changing its key, and a chain cannot loop.
  A large piece is split into parts (`noetic.durable.parts`).
- a `StoredPoint` (`count`, `tip`) is "the first `count` items of the thread, ending with
  piece `tip`". Appending writes only the items past the point: one new piece.

Reading a point walks the chain back from its tip and checks each link: the piece is there,
its text matches its digest, it belongs to the thread, and its items end exactly where the next
piece starts (and the last one at `count`). Anything else is `NoeticError("CHECKPOINT_CORRUPT")`
naming the record that referenced the chain and the piece that failed — never a shorter,
longer or mixed history.

Pieces are keyed by content, so two processes that continue one thread from the same point
(a fork) write two different pieces with the same parent: each execution reads back exactly
the log it started from.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, NonNegativeInt, ValidationError

from noetic.durable.items import Declarations, ItemsRecord, items_json, load_items
from noetic.durable.parts import join_text, split_record
from noetic.durable.store import CheckpointStore, corrupt, decode_document, describe_error, encode_document
from noetic.errors import NoeticError
from noetic.ids import checked_id
from noetic.items import Item

__all__ = [
    "EMPTY",
    "PIECE_VERSION",
    "StoredPoint",
    "append_rows",
    "load_point",
    "piece_key",
    "point_json",
    "point_of",
    "thread_prefix",
]

#: The layout of a history piece this code writes and reads.
PIECE_VERSION = 1
_DIGEST = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True)
class StoredPoint:
    """The first `count` items of a thread's stored history, ending with piece `tip` (None
    only for the empty history)."""

    count: int
    tip: str | None


#: The empty history: stored everywhere, nothing to read.
EMPTY = StoredPoint(0, None)


def thread_prefix(thread_id: str) -> str:
    """The key prefix owning every stored record of one thread (the id percent-encoded, so
    no thread's prefix covers another's); an id that is not text (a lone surrogate) is
    `INVALID_ID`."""
    return f"thread:{quote(checked_id('thread_id', thread_id), safe='')}:"


def piece_key(thread_id: str, digest: str) -> str:
    """Where the thread's history piece with `digest` lives."""
    return f"{thread_prefix(thread_id)}items:{digest}"


class _Piece(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1]
    thread_id: str
    start: NonNegativeInt
    parent: str | None
    items: ItemsRecord


def append_rows(
    thread_id: str, items: Sequence[Item], point: StoredPoint
) -> tuple[dict[str, str], StoredPoint]:
    """The rows storing `items[point.count:]` as one piece after `point`, and the point they
    make (no rows, and `point` itself, when nothing is new). Raises `TypeError`/`ValueError`
    for an item that is not JSON."""
    if len(items) <= point.count:
        return {}, point
    head = encode_document(
        {"v": PIECE_VERSION, "thread_id": thread_id, "start": point.count, "parent": point.tip}
    )
    text = f'{head[:-1]},"items":{items_json(items[point.count :])}}}'
    digest = _digest(text)
    return split_record(piece_key(thread_id, digest), text), StoredPoint(len(items), digest)


def point_of(raw: Any) -> StoredPoint | None:
    """The point a stored `{"count": n, "tip": digest}` names, or None when it is not one."""
    if not (isinstance(raw, dict) and set(raw) == {"count", "tip"}):
        return None
    count, tip = raw["count"], raw["tip"]
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return None
    if tip is None:
        return EMPTY if count == 0 else None
    if not (isinstance(tip, str) and _DIGEST.fullmatch(tip) and count > 0):
        return None
    return StoredPoint(count, tip)


def point_json(point: StoredPoint) -> dict[str, Any]:
    """`point` as it is stored in a record that references it."""
    return {"count": point.count, "tip": point.tip}


async def load_point(
    store: CheckpointStore,
    thread_id: str,
    point: StoredPoint,
    declarations: Declarations,
    *,
    owner: str,
    execution_id: str | None = None,
) -> list[Item]:
    """The first `point.count` items of the thread, read back and checked (see the module
    docstring); `owner` is the key of the record that named the point, for the error."""
    if point.tip is None:
        return []
    rows = await store.get_many(await store.list_prefix(f"{thread_prefix(thread_id)}items:"))
    pieces: list[list[Item]] = []
    end: int = point.count
    tip: str | None = point.tip
    while tip is not None:
        key = piece_key(thread_id, tip)
        if key not in rows:
            raise _broken(owner, key, "the piece is missing", execution_id, thread_id)
        text = join_text(key, rows, execution_id=execution_id)
        if _digest(text) != tip:
            raise _broken(owner, key, "its text does not match its digest", execution_id, thread_id)
        try:
            piece = _Piece.model_validate(decode_document(key, text, execution_id=execution_id))
            items = load_items(piece.items, declarations)
        except (ValidationError, NoeticError, ValueError, TypeError) as exc:
            raise _broken(
                owner, key, f"it is not a history piece ({describe_error(exc)})", execution_id, thread_id
            ) from None
        if piece.thread_id != thread_id:
            raise _broken(owner, key, f"it belongs to thread {piece.thread_id!r}", execution_id, thread_id)
        if not items or piece.start + len(items) != end:
            raise _broken(owner, key, f"its items do not end at position {end}", execution_id, thread_id)
        if (piece.parent is None) != (piece.start == 0) or (
            piece.parent is not None and not _DIGEST.fullmatch(piece.parent)
        ):
            raise _broken(owner, key, "its parent does not match its start", execution_id, thread_id)
        pieces.append(items)
        end, tip = piece.start, piece.parent
    return [item for items in reversed(pieces) for item in items]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _broken(owner: str, key: str, why: str, execution_id: str | None, thread_id: str) -> NoeticError:
    """A damaged piece of the thread's history: named by an execution's start record (resume:
    the execution cannot be trusted), or by the thread's own record (a turn: the thread's
    history must be deleted, there is no execution to clear)."""
    if execution_id is not None:
        error = corrupt(
            owner, f"its stored history piece {key!r} is damaged: {why}", execution_id=execution_id
        )
    else:
        error = NoeticError(
            "CHECKPOINT_CORRUPT",
            f"the stored history of thread {thread_id!r} is damaged: its piece {key!r} (named by "
            f"{owner!r}): {why}. The turn was stopped rather than run "
            f"without its history; delete_thread_history({thread_id!r}) removes the thread's "
            "stored history and starts the thread over",
            key=owner,
            thread_id=thread_id,
        )
    error.details["piece"] = key
    return error
