"""The step trace: one small row per completed step, kept for people looking at a run (IN-1).

The step ledger keeps only what a resume can replay, so the entries of a completed
composite's children are deleted (RS-20). The trace keeps what a person wants to see
afterwards — which step ran where, for how long, what it cost and, for a model round, how the
context window was composed (`LastLayerUsage`) — as rows `execution:{id}:trace:{seq:08d}`
written in the same atomic batch as the step's ledger entry, under the same sequence number.
Trace rows are never read by resume and never compacted; `clear_checkpoint()` removes them
with the rest of the execution. `noetic inspect` reads them through `load_trace`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, NonNegativeFloat, NonNegativeInt, ValidationError

from noetic.durable.store import (
    CheckpointStore,
    corrupt,
    decode_document,
    describe_error,
    encode_document,
    execution_prefix,
)

__all__ = ["TRACE_VERSION", "StepTrace", "load_trace", "trace_prefix", "trace_row"]

#: Version of the trace rows this code writes and reads.
TRACE_VERSION = 1


def trace_prefix(execution_id: str) -> str:
    """The key prefix of an execution's trace rows."""
    return f"{execution_prefix(execution_id)}trace:"


class StepTrace(BaseModel):
    """One completed step as a person sees it.

    `usage` is [input, output, cached] tokens; `cost`, `billed_cost` (what this attempt paid)
    and `held_cost` are decimal strings in USD; `layer_usage` is the model round's
    `LastLayerUsage` as JSON, for a model step that ran with context layers.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1]
    seq: NonNegativeInt
    attempt: NonNegativeInt
    path: str
    step_id: str
    kind: str
    completed_at: str
    duration_ms: NonNegativeFloat
    cost: str
    billed_cost: str
    held_cost: str
    usage: tuple[NonNegativeInt, NonNegativeInt, NonNegativeInt | None]
    layer_usage: dict[str, Any] | None = None


def trace_row(prefix: str, trace: dict[str, Any]) -> tuple[str, str]:
    """`(key, text)` of a trace row under `prefix` (`trace_prefix` of the execution, which a
    ledger works out once) where `trace` holds the `StepTrace` fields but `v`; raises
    `TypeError`/`ValueError` for values that are not JSON."""
    text = encode_document({"v": TRACE_VERSION, **trace})
    return f"{prefix}{int(trace['seq']):08d}", text


async def load_trace(store: CheckpointStore, execution_id: str) -> list[StepTrace]:
    """Every trace row of an execution, in the order the steps completed; a row that is not
    one this code writes raises `CHECKPOINT_CORRUPT` naming it."""
    keys = await store.list_prefix(trace_prefix(execution_id))
    rows = await store.get_many(keys)
    found: list[StepTrace] = []
    for key in keys:
        text = rows.get(key)
        if text is None:
            continue  # deleted between the listing and the read
        raw = decode_document(key, text, execution_id=execution_id)
        try:
            found.append(StepTrace.model_validate(raw))
        except ValidationError as exc:
            raise corrupt(
                key, f"it is not a trace row ({describe_error(exc)})", execution_id=execution_id
            ) from None
    return found
