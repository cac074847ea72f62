"""Noetic for Python: agents as compositions of a few steps, run by an `AgentHarness`.

    import noetic as nt
    from noetic.testing import ScriptedModel, text_reply

    agent = nt.call_model("answer", instructions="Be brief.")
    async with nt.AgentHarness("demo", agent_graph=agent, model=ScriptedModel([text_reply("hi")])) as h:
        print((await h.run("hello")).text)

Everything public is importable from here; plugins implement the hooks in `noetic.hookspecs`.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

# Cyclic garbage collection is paused while the core's modules load. Importing them makes tens
# of thousands of objects that live as long as the program (classes, functions, pydantic's field
# records) and no garbage, so the collections the allocations would set off (about 10 M
# instructions, measured with bench/import_instructions.py) find nothing to free. The
# collector's state is restored exactly, also when an import fails.
_collecting = gc.isenabled()
gc.disable()


def _promote_to_oldest_generation() -> None:
    # Un-pausing alone leaves the ~38,000 objects made meanwhile counted as young: the next
    # allocation then sets off one young collection that walks all of them, several megabytes of
    # cold memory (about 14 M instructions, but 11 ms of a 0.1 s import: it waits on the memory,
    # which an instruction count does not see). `freeze` moves every tracked object into
    # the permanent generation and zeroes the young count without walking anything; `unfreeze`
    # hands them all to the oldest generation, where the next full collection still looks at
    # them, as it would have. A program that froze objects itself keeps them frozen: the young
    # collection runs then, as it did before.
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


try:
    from noetic.channels import Channel, ChannelHandle, channel
    from noetic.errors import NoeticConfigError, NoeticError
    from noetic.execution_context import Context
    from noetic.harness import AgentHarness, HarnessConfig, HarnessResponse
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
    from noetic.steps.base import Step
    from noetic.steps.model_call import call_model
    from noetic.streams import StreamEvent
    from noetic.tools import Tool, invoke_tool, tool
finally:
    _promote_to_oldest_generation()
    if _collecting:
        gc.enable()
    del _collecting, _promote_to_oldest_generation

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
    from noetic.hookspecs import hookimpl
    from noetic.layers.cache_config import ContextCacheConfig
    from noetic.predicates import LoopSnapshot, Verdict, all_, any_, until
    from noetic.steps.code import run_code
    from noetic.steps.decide import Question, decide, question
    from noetic.steps.flow import conditional, sequence
    from noetic.steps.loop import loop
    from noetic.steps.parallel import SettleResult, in_parallel
    from noetic.steps.spawn import spawn
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
# nor the custom-item models and their dispatch (a program that declares none never needs them),
# nor the plugin hook specifications.
_LAZY = {
    "workflow": "noetic.workflows",
    "hookimpl": "noetic.hookspecs",  # the hook specifications: a program with no plugin needs none
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
    # The steps besides `call_model` (which the harness itself runs) and their helpers.
    **dict.fromkeys(("LoopSnapshot", "Verdict", "all_", "any_", "until"), "noetic.predicates"),
    "run_code": "noetic.steps.code",
    **dict.fromkeys(("Question", "decide", "question"), "noetic.steps.decide"),
    **dict.fromkeys(("conditional", "sequence"), "noetic.steps.flow"),
    "loop": "noetic.steps.loop",
    **dict.fromkeys(("SettleResult", "in_parallel"), "noetic.steps.parallel"),
    "spawn": "noetic.steps.spawn",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("noetic-core")
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir([*globals(), "__version__"], _LAZY)
