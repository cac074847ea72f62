"""The usage reports a run makes only when someone reads them (TU-1, TU-3, LU-1..LU-3).

Execution totals (`ctx.tokens`), step metadata (`ctx.last_step_meta`) and the layer-usage
snapshot (`last_layer_usage`) are built on first read, and a plain tool round trip reads none
of them, so their classes are defined here, imported the first time `noetic.usage` is asked
for one: pydantic's class creation of these six models is about 9 M instructions, which
`import noetic` would otherwise pay for every program.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import Field

from noetic.items import FunctionCallItem, Item
from noetic.usage import RoundUsage, _Frozen

__all__ = [
    "DecisionMeta",
    "EpochUsage",
    "LastLayerUsage",
    "LayerUsageEntry",
    "ReanchorReason",
    "StepMeta",
    "TokenUsage",
]

ReanchorReason: TypeAlias = Literal[
    "cold-start", "instructions-changed", "cache-miss", "delta-pressure", "delta-overflow", "max-age"
]


class TokenUsage(_Frozen):
    """Tokens accumulated over an execution (TU-1).

    `cached` sums the prompt tokens providers served from cache; it stays `None` until some
    round reports a cache figure.
    """

    input: int = 0
    output: int = 0
    total: int = 0
    cached: int | None = None


class DecisionMeta(_Frozen):
    """Set by `decide` steps: the answering model, its path, and refused question ids (TU-3)."""

    model_id: str
    source: Literal["native", "estimated"]
    refused: tuple[str, ...] = ()


class StepMeta(_Frozen):
    """Metadata of the last executed step (`ctx.last_step_meta`, TU-3)."""

    step_id: str | None = None
    kind: str | None = None
    tool_calls: tuple[FunctionCallItem, ...] | None = None
    #: The tool calls of the step's last model response (a `call_model` step ends when the
    #: model answers without tools, so this is empty unless a step sets it otherwise).
    last_response_tool_calls: tuple[FunctionCallItem, ...] | None = None
    usage: RoundUsage | None = None
    cost: float | None = None
    billed_cost: float | None = None
    response_items: tuple[Item, ...] | None = None
    decision: DecisionMeta | None = None


class LayerUsageEntry(_Frozen):
    """One context layer's share of the last assembled view (LU-2)."""

    layer_id: str
    token_count: int
    items: tuple[Item, ...] = ()
    placement: Literal["anchor", "live"] = "live"
    served: Literal["fresh", "pinned"] = "fresh"
    changed: bool = False
    churn_rate: float = 0.0
    rebill_tokens: int = 0


class EpochUsage(_Frozen):
    """Prompt-cache anchoring state behind the most recent assembly (LU-3)."""

    id: str
    age: int
    anchor_tokens: int = 0
    live_tokens: int = 0
    delta_tokens: int = 0
    reanchor_reason: ReanchorReason | None = None


class LastLayerUsage(_Frozen):
    """How the most recent model call decomposed the context window (LU-1)."""

    execution_id: str
    model_id: str
    layers: tuple[LayerUsageEntry, ...] = ()
    system_prompt_tokens: int = 0
    tools_tokens: int = 0
    history_tokens: int = 0
    total_used_tokens: int = Field(default=0)
    epoch: EpochUsage | None = None
