"""Noetic for Python: agents as compositions of a few steps, run by an `AgentHarness`.

    import noetic as nt
    from noetic.testing import ScriptedModel, text_reply

    agent = nt.call_model("answer", instructions="Be brief.")
    async with nt.AgentHarness("demo", agent_graph=agent, model=ScriptedModel([text_reply("hi")])) as h:
        print((await h.run("hello")).text)

Everything public is importable from here; plugins implement the hooks in `noetic.hookspecs`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from noetic.channels import Channel, ChannelHandle, channel
from noetic.errors import NoeticConfigError, NoeticError
from noetic.execution_context import Context
from noetic.harness import AgentHarness, HarnessConfig, HarnessResponse
from noetic.hookspecs import hookimpl
from noetic.layers import (
    CLEAR,
    CallResult,
    ContextLayer,
    LayerContext,
    LayerResult,
    LayerSet,
    LayerStateStore,
    Projection,
    RecallResult,
    ReturnResult,
    Slot,
    SpawnResult,
    allocate_budgets,
    context,
    layer_data,
    layer_function,
    with_context,
)
from noetic.lazy import lazy_attribute, lazy_dir
from noetic.predicates import LoopSnapshot, Verdict, all_, any_, until
from noetic.steps.base import Step
from noetic.steps.code import run_code
from noetic.steps.decide import Question, decide, question
from noetic.steps.flow import conditional, sequence
from noetic.steps.loop import loop
from noetic.steps.model_call import call_model
from noetic.steps.parallel import SettleResult, in_parallel
from noetic.steps.spawn import spawn
from noetic.streams import StreamEvent
from noetic.tools import Tool, invoke_tool, tool

if TYPE_CHECKING:
    from noetic.custom_items import (
        CustomItem,
        CustomItemDecl,
        CustomItemEvent,
        Return,
        custom_item,
        is_custom_item,
        is_custom_item_event,
    )
    from noetic.layers.cache_config import ContextCacheConfig
    from noetic.workflows.workflow import workflow

__all__ = [
    "CLEAR",
    "AgentHarness",
    "CallResult",
    "Channel",
    "ChannelHandle",
    "Context",
    "ContextCacheConfig",
    "ContextLayer",
    "CustomItem",
    "CustomItemDecl",
    "CustomItemEvent",
    "HarnessConfig",
    "HarnessResponse",
    "LayerContext",
    "LayerResult",
    "LayerSet",
    "LayerStateStore",
    "LoopSnapshot",
    "NoeticConfigError",
    "NoeticError",
    "Projection",
    "Question",
    "RecallResult",
    "Return",
    "ReturnResult",
    "SettleResult",
    "Slot",
    "SpawnResult",
    "Step",
    "StreamEvent",
    "Tool",
    "Verdict",
    "__version__",
    "all_",
    "allocate_budgets",
    "any_",
    "call_model",
    "channel",
    "conditional",
    "context",
    "custom_item",
    "decide",
    "hookimpl",
    "in_parallel",
    "invoke_tool",
    "is_custom_item",
    "is_custom_item_event",
    "layer_data",
    "layer_function",
    "loop",
    "question",
    "run_code",
    "sequence",
    "spawn",
    "tool",
    "until",
    "with_context",
    "workflow",
]


# Imported on first use, so `import noetic` loads neither the workflow machinery nor JSONata,
# nor the custom-item models and their dispatch (a program that declares none never needs them).
_LAZY = {
    "workflow": "noetic.workflows",
    "ContextCacheConfig": "noetic.layers.cache_config",  # the anchoring settings model
    **dict.fromkeys(
        (
            "CustomItem",
            "CustomItemDecl",
            "CustomItemEvent",
            "Return",
            "custom_item",
            "is_custom_item",
            "is_custom_item_event",
        ),
        "noetic.custom_items",
    ),
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("noetic-core")
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir([*globals(), "__version__"], _LAZY)
