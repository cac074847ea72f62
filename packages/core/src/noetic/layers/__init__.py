"""Context layers: plugins that decide what the model sees on every call (docs/layers.md).

- `contract` — the layer contract (`ContextLayer`, `Slot`, hook results, `provides`).
- `layer_set` — `context([...])` / `LayerSet`: validated layer sets, names resolved lazily.
- `storage` — the `LayerStateStore` contract and the in-memory default.
- `frame`, `runtime` — the lifecycle runner (init, teardown, spawn boundaries, cancel).
- `provides` — `ctx.context[layer_id]` handles and the `"{layer_id}/{fn}"` tools.
- `budgets`, `view`, `anchoring`, `call` — budgets, view assembly and prompt-cache anchoring.
- `usage`, `report`, `command` — the `LastLayerUsage` snapshot, its table and `noetic context`.
- `with_context` — the step that adds layers for its child.
"""

from noetic.layers.anchoring import ContextCacheConfig
from noetic.layers.budgets import DEFAULT_PROJECTION, BudgetAllocation, Projection, allocate_budgets
from noetic.layers.contract import (
    CLEAR,
    BudgetRange,
    CallResult,
    ContextLayer,
    LayerData,
    LayerFunction,
    LayerResult,
    RecallResult,
    ReturnResult,
    Scope,
    Slot,
    SpawnResult,
    layer_data,
    layer_function,
    validate_layer,
)
from noetic.layers.frame import LayerContext
from noetic.layers.layer_set import LayerSet, context
from noetic.layers.provides import LayerHandle
from noetic.layers.report import render_layer_usage
from noetic.layers.storage import LayerStateStore, MemoryLayerStateStore, ScopedStorage
from noetic.layers.view import View, assemble_view
from noetic.layers.with_context import WithContext, with_context

__all__ = [
    "CLEAR",
    "DEFAULT_PROJECTION",
    "BudgetAllocation",
    "BudgetRange",
    "CallResult",
    "ContextCacheConfig",
    "ContextLayer",
    "LayerContext",
    "LayerData",
    "LayerFunction",
    "LayerHandle",
    "LayerResult",
    "LayerSet",
    "LayerStateStore",
    "MemoryLayerStateStore",
    "Projection",
    "RecallResult",
    "ReturnResult",
    "Scope",
    "ScopedStorage",
    "Slot",
    "SpawnResult",
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
