"""The `CheckpointStore` contract: where durable executions keep their records.

A checkpoint store is an async key-value store of **JSON text**: every value is one JSON
document, written and read back verbatim (never pickle, never class tags), and every document
the runtime writes carries its own schema version. Keys are plain strings; the runtime owns
the layout under `execution:{id}:` — the snapshot at `execution:{id}:snapshot` and the step
ledger's shards at `execution:{id}:ledger:{seq:08d}`.

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
    "CheckpointStore",
    "Claim",
    "corrupt",
    "decode_document",
    "encode_document",
    "execution_locked",
    "execution_prefix",
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


def encode_document(value: Any) -> str:
    """`value` as compact ASCII JSON (so its length is its size in bytes).

    Raises `ValueError` or `TypeError` for values JSON cannot carry (NaN, objects, …).
    """
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def decode_document(key: str, text: str) -> Any:
    """Parse a stored document; damaged text raises `CHECKPOINT_CORRUPT` naming the key."""
    try:
        return json.loads(text)
    except (ValueError, TypeError) as exc:
        raise corrupt(key, f"it is not valid JSON ({exc})") from None


def corrupt(key: str, why: str) -> NoeticError:
    """The error for a damaged record: resume stops instead of continuing on bad data."""
    return NoeticError(
        "CHECKPOINT_CORRUPT",
        f"the checkpoint record {key!r} is damaged: {why}. Resume was stopped rather than "
        "continue from bad data; clear_checkpoint() the execution and run it again",
        key=key,
    )


def execution_locked(execution_id: str) -> NoeticError:
    """The error for a second claimant of a running or resuming execution."""
    return NoeticError(
        "EXECUTION_LOCKED",
        f"execution {execution_id!r} is being run or resumed elsewhere (another harness or process "
        "holds it); wait for that attempt to finish, then resume it if it did not complete",
        execution_id=execution_id,
    )
