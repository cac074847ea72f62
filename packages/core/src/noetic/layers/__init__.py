"""Context layers: plugins that decide what the model sees on every call (docs/layers.md).

- `contract` — the layer contract (`ContextLayer`, `Slot`, hook results, `provides`).
- `layer_set` — `context([...])` / `LayerSet`: validated layer sets, names resolved lazily.
- `storage`, `checkpoint_state` — the `LayerStateStore` contract, the in-memory default and
  the checkpoint-store backed one.
- `frame`, `runtime` — the lifecycle runner (init, teardown, spawn boundaries, cancel).
- `provides` — `ctx.context[layer_id]` handles and the `"{layer_id}/{fn}"` tools.
- `budgets`, `view`, `overflow`, `cache_config`, `anchoring`, `call` — budgets, view assembly,
  the overflow modes and prompt-cache anchoring (imported once a call has layers).
- `pipelines`, `steering` — `on_item_append` / `project_history`, and the model and tool
  guards `after_model_call` / `before_tool_call`.
- `usage`, `report`, `command` — the `LastLayerUsage` snapshot, its table and `noetic context`.
- `with_context` — the step that adds layers for its child.
"""

from typing import TYPE_CHECKING, Any

from noetic.layers.budgets import DEFAULT_PROJECTION, BudgetAllocation, Projection, allocate_budgets
from noetic.layers.contract import (
    CLEAR,
    BudgetRange,
    CallResult,
    ContextLayer,
    ItemAppendResult,
    LayerData,
    LayerFunction,
    LayerResult,
    ModelCallDecision,
    ParentUpdateResult,
    RecallResult,
    ReturnResult,
    Scope,
    Slot,
    SpawnResult,
    ToolCallDecision,
    ToolCallRequest,
    layer_data,
    layer_function,
    validate_layer,
)
from noetic.layers.frame import LayerContext
from noetic.layers.layer_set import LayerSet, context
from noetic.layers.storage import LayerStateStore, MemoryLayerStateStore, ScopedStorage
from noetic.layers.with_context import WithContext, with_context
from noetic.lazy import lazy_attribute, lazy_dir

if TYPE_CHECKING:
    from noetic.layers.cache_config import ContextCacheConfig
    from noetic.layers.checkpoint_state import CheckpointLayerStateStore
    from noetic.layers.provides import LayerHandle
    from noetic.layers.report import render_layer_usage
    from noetic.layers.view import View, assemble_view

__all__ = [
    "CLEAR",
    "DEFAULT_PROJECTION",
    "BudgetAllocation",
    "BudgetRange",
    "CallResult",
    "CheckpointLayerStateStore",
    "ContextCacheConfig",
    "ContextLayer",
    "ItemAppendResult",
    "LayerContext",
    "LayerData",
    "LayerFunction",
    "LayerHandle",
    "LayerResult",
    "LayerSet",
    "LayerStateStore",
    "MemoryLayerStateStore",
    "ModelCallDecision",
    "ParentUpdateResult",
    "Projection",
    "RecallResult",
    "ReturnResult",
    "Scope",
    "ScopedStorage",
    "Slot",
    "SpawnResult",
    "ToolCallDecision",
    "ToolCallRequest",
    "View",
    "WithContext",
    "allocate_budgets",
    "assemble_view",
    "context",
    "layer_data",
    "layer_function",
    "render_layer_usage",
    "validate_layer",
    "with_context",
]

# Imported on first use: the anchoring settings model (a harness given no `context_cache=` never
# builds it), the checkpoint-backed state store (only `storage=` needs the durable store), and
# what only a call with layers reaches: the handles behind `ctx.context[...]`, view assembly,
# and the usage table. (`with_context` stays eager: the function shares its name with its
# module, and importing that module first would leave the module bound in its place.)
_LAZY = {
    "ContextCacheConfig": "noetic.layers.cache_config",
    "CheckpointLayerStateStore": "noetic.layers.checkpoint_state",
    "LayerHandle": "noetic.layers.provides",
    "render_layer_usage": "noetic.layers.report",
    **dict.fromkeys(("View", "assemble_view"), "noetic.layers.view"),
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir(globals(), _LAZY)
