"""The `CheckpointStore` contract: where durable executions keep their records.

A checkpoint store is an async key-value store of **JSON text**: every value is one JSON
document, written and read back verbatim (never pickle, never class tags), and every document
the runtime writes carries its own schema version. Keys are plain strings; the runtime owns
the layout under `execution:{id}:` — the start record at `execution:{id}:start` (identity,
input, base item log; written once), the snapshot at `execution:{id}:snapshot` (state,
completion, layer states) and the step ledger's shards at `execution:{id}:ledger:{seq:08d}`.
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
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable
from urllib.parse import quote

from noetic.errors import NoeticError

__all__ = [
    "MAX_DEPTH",
    "CheckpointStore",
    "Claim",
    "corrupt",
    "decode_document",
    "describe_error",
    "encode_document",
    "execution_locked",
    "execution_prefix",
    "within_depth",
]


def execution_prefix(execution_id: str) -> str:
    """The key prefix owning every record of one execution.

    The id is percent-encoded, so no id's prefix can cover another's (`a` and `a:b`).
    """
    return f"execution:{quote(execution_id, safe='')}:"


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


#: The deepest nesting of arrays and objects a checkpoint document may have. What is recorded
#: is held to it (a deeper output is not recorded), so a deeper stored row is damaged or forged.
MAX_DEPTH = 200


def encode_document(value: Any) -> str:
    """`value` as compact ASCII JSON (so its length is its size in bytes).

    Raises `ValueError` or `TypeError` for values JSON cannot carry (NaN, objects, nesting
    deeper than `MAX_DEPTH`, …).
    """
    try:
        text = json.dumps(value, allow_nan=False, separators=(",", ":"))
    except RecursionError:
        raise ValueError(f"it is nested deeper than {MAX_DEPTH} levels") from None
    if _may_be_deep(text) and not within_depth(value):
        raise ValueError(f"it is nested deeper than {MAX_DEPTH} levels")
    return text


def _may_be_deep(text: str) -> bool:
    """False when `text` has too few brackets to nest `MAX_DEPTH` deep (counted in C, so the
    walk runs only for documents that could fail it)."""
    return text.count("[") + text.count("{") > MAX_DEPTH


def decode_document(key: str, text: str, *, execution_id: str | None = None) -> Any:
    """Parse a stored document; damaged text, or nesting deeper than `MAX_DEPTH`, raises
    `CHECKPOINT_CORRUPT` naming the key (and the execution)."""
    try:
        value = json.loads(text)
    except (ValueError, TypeError) as exc:
        raise corrupt(key, f"it is not valid JSON ({exc})", execution_id=execution_id) from None
    except RecursionError:  # the C scanner's own guard: raised before any Python frame is deep
        value = None
        deep = True
    else:
        deep = _may_be_deep(text) and not within_depth(value)
    if deep:
        raise corrupt(key, f"it is nested deeper than {MAX_DEPTH} levels", execution_id=execution_id)
    return value


def within_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when `value`'s lists and dicts nest at most `limit` deep (walked without recursion)."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth >= limit:
            return False
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))
    return True


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
