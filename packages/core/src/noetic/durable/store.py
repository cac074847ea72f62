"""The `CheckpointStore` contract: where durable executions keep their records.

A checkpoint store is an async key-value store of **JSON text**: every value is one JSON
document, written and read back verbatim (never pickle, never class tags), and every document
the runtime writes carries its own schema version. Keys are plain strings; the runtime owns
the layout under `execution:{id}:` — the start record at `execution:{id}:start` (identity,
input, the point of the thread's stored history it started from; written once), the snapshot at `execution:{id}:snapshot` (state,
completion, layer states) and the step ledger's shards at `execution:{id}:ledger:{seq:08d}` —
and under `thread:{id}:`: the thread's history pieces and the record naming its history
(`noetic.durable.history`, `noetic.sessions`).
A record larger than 128 KiB is split into parts under `{key}:part:{n:06d}`
(`noetic.durable.parts`), so no value a backend holds is ever larger than about that.

What a backend provides:

- `get`, `get_many`, `set`, `delete` and `list_prefix` (keys in ascending order);
- `write(sets, deletes)`: one **atomic** batch — after a crash either all of it is there or
  none of it. A completed step's ledger row and the snapshot that follows it are one batch,
  so a resumed run never sees one without the other;
- `claim(execution_id)`: exclusive ownership of an execution while it runs or resumes; a
  second claimant gets `NoeticError("EXECUTION_LOCKED")`. A claim held by a process that died
  must not block anyone (the SQLite store uses OS file locks, released by the kernel);
- `aclose()`: release connections.

Damaged data is reported as `NoeticError("CHECKPOINT_CORRUPT")`, any other backend failure as
`NoeticError("CHECKPOINT_STORE_FAILED")`. A backend for an existing durable-execution engine
(DBOS on Postgres is the intended first) implements this same contract in a plugin and
registers it under a URL scheme through the `register_checkpoint_stores` hook.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable
from urllib.parse import quote

from noetic.errors import NoeticError
from noetic.ids import checked_id
from noetic.plain_json import MAX_DEPTH, is_plain_json

__all__ = [
    "MAX_DEPTH",
    "CheckpointStore",
    "Claim",
    "corrupt",
    "corrupt_file",
    "decode_document",
    "describe_error",
    "encode_document",
    "execution_locked",
    "execution_prefix",
    "is_plain_json",
    "nesting_exceeds",
    "row_checksum",
    "verified_row",
]


def execution_prefix(execution_id: str) -> str:
    """The key prefix owning every record of one execution.

    The id is percent-encoded, so no id's prefix can cover another's (`a` and `a:b`); an id
    that is not text (a lone surrogate) is `INVALID_ID`.
    """
    return f"execution:{quote(checked_id('execution_id', execution_id), safe='')}:"


@runtime_checkable
class Claim(Protocol):
    """Exclusive ownership of one execution, held until `release`."""

    async def release(self) -> None:
        """Give the execution up (idempotent)."""
        ...


@runtime_checkable
class CheckpointStore(Protocol):
    """An async store of JSON documents with atomic batches and execution claims."""

    async def get(self, key: str) -> str | None:
        """The document at `key`, or None."""
        ...

    async def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The documents at `keys` that exist, in one round trip."""
        ...

    async def set(self, key: str, value: str) -> None:
        """Write one document."""
        ...

    async def delete(self, key: str) -> None:
        """Remove one document (a missing key is fine)."""
        ...

    async def list_prefix(self, prefix: str) -> list[str]:
        """Every key starting with `prefix`, ascending."""
        ...

    async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
        """Apply `sets` and `deletes` atomically."""
        ...

    async def claim(self, execution_id: str) -> Claim:
        """Take exclusive ownership of an execution, or raise `EXECUTION_LOCKED`."""
        ...

    async def aclose(self) -> None:
        """Release the store's resources."""
        ...


#: Built once: `json.dumps` with options builds a new encoder per call, a cost on every step.
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))


def encode_document(value: Any, *, max_depth: int = MAX_DEPTH) -> str:
    """`value` as compact ASCII JSON (so its length is its size in bytes).

    Raises `ValueError` or `TypeError` for values JSON cannot carry (NaN, objects, nesting
    deeper than `max_depth` — less than `MAX_DEPTH` for a value that is spliced into a record).
    """
    try:
        text = _ENCODER.encode(value)
    except RecursionError:
        raise ValueError(f"it is nested deeper than {max_depth} levels") from None
    if nesting_exceeds(text, max_depth):
        raise ValueError(f"it is nested deeper than {max_depth} levels")
    return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: too large for a float, read as infinity
        raise ValueError(f"{text[:40]} is not a finite number")
    return value


#: Built once: this code never writes NaN or Infinity (`allow_nan=False`), so a row holding
#: one — or a number too large to be finite — is damaged or forged, and refused as it is read.
#: The constant hook costs nothing on ordinary rows; the float hook runs only for the few
#: floats a row holds (costs are decimal strings, token counts integers).
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


def decode_document(key: str, text: str, *, execution_id: str | None = None) -> Any:
    """Parse a stored document; damaged text, NaN, Infinity or a number too large to be finite,
    or nesting deeper than `MAX_DEPTH`, raises `CHECKPOINT_CORRUPT` naming the key (and the
    execution)."""
    try:
        value = _DECODER.decode(text)
    except (ValueError, TypeError) as exc:
        raise corrupt(key, f"it is not valid JSON ({exc})", execution_id=execution_id) from None
    except RecursionError:  # the C scanner's own guard: raised before any Python frame is deep
        deep = True
    else:
        deep = nesting_exceeds(text)
    if deep:
        raise corrupt(key, f"it is nested deeper than {MAX_DEPTH} levels", execution_id=execution_id)
    return value


#: A JSON string literal (the unrolled form matches in linear time), and what is not a bracket.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]]+")
_ONE_KIND = str.maketrans("{}", "[]")


def nesting_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when the valid JSON `text` nests arrays and objects more than `limit` deep.

    Measured on the text, without parsing or walking it (so nothing deep ever reaches a
    recursive reader): string literals are cut out, the brackets left are made one kind, and
    each `replace("[]", "")` peels exactly one level off — at most `limit` passes, each in C.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text).translate(_ONE_KIND))
    for _ in range(limit):
        if not brackets:
            return False
        brackets = brackets.replace("[]", "")
    return bool(brackets)


def corrupt(key: str, why: str, *, execution_id: str | None = None) -> NoeticError:
    """The error for a damaged record: resume stops instead of continuing on bad data."""
    owner = f" of execution {execution_id!r}" if execution_id is not None else ""
    details: dict[str, Any] = {"key": key}
    if execution_id is not None:
        details["execution_id"] = execution_id
    return NoeticError(
        "CHECKPOINT_CORRUPT",
        f"the checkpoint record {key!r}{owner} is damaged: {why}. Resume was stopped rather than "
        "continue from bad data; clear_checkpoint() the execution and run it again",
        **details,
    )


def corrupt_file(path: str, why: str) -> NoeticError:
    """The error for a whole store file that is damaged: nothing in it is used or written, and
    no execution's `clear_checkpoint` can repair it."""
    return NoeticError(
        "CHECKPOINT_CORRUPT",
        f"the checkpoint store file {path!r} is damaged: {why}. Nothing was read from it or "
        "written into it; restore it from a backup, or point storage= at a new file",
        key=path,
        path=path,
    )


def row_checksum(value: str) -> int:
    """The checksum a store keeps beside each row (CRC-32 of its UTF-8 text)."""
    return zlib.crc32(value.encode())


def verified_row(key: str, value: Any, checksum: int) -> str:
    """A row's text as read back, checked against its checksum (`CHECKPOINT_CORRUPT` if not,
    or if the text holds a lone surrogate: bytes a store read back that were not UTF-8)."""
    if not isinstance(value, str):
        raise corrupt(key, "its text does not match its checksum")
    try:
        matches = row_checksum(value) == checksum
    except UnicodeEncodeError:
        raise corrupt(key, "its text is not UTF-8") from None
    if not matches:
        raise corrupt(key, "its text does not match its checksum")
    return value


def describe_error(exc: BaseException) -> str:
    """What went wrong reading a record, in one bounded line (a forged row may make it huge)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):  # a pydantic ValidationError: the first failing field and why
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ())) or "the record"
            return f"{where}: {first.get('msg', '')}"[:300]
        except (TypeError, IndexError, AttributeError):
            pass
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:300]


def execution_locked(execution_id: str) -> NoeticError:
    """The error for a second claimant of a running or resuming execution."""
    return NoeticError(
        "EXECUTION_LOCKED",
        f"execution {execution_id!r} is being run or resumed elsewhere (another harness or process "
        "holds it); wait for that attempt to finish, then resume it if it did not complete",
        execution_id=execution_id,
    )
