"""`ctx.context[layer_id]`: what layers provide to code, and the tools they offer the model.

`ctx.context` maps each active layer's id to a `LayerHandle` (CTX-5). A data entry reads the
layer's current state on every access (`ctx.context["scratchpad"].snapshot`); a function entry
is an async callable (`await ctx.context["scratchpad"].update({...})`) that validates its input
against the declared schema, runs under the entry's lock, may replace the layer state, and
writes it through to storage. A layer without `provides` has an empty handle (`== {}`).

Every function entry is also a model tool named `"{layer_id}/{name}"` (LY-15); a bad argument
or a failing function becomes an error output the model can read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from noetic.errors import NoeticError
from noetic.layers.contract import UNSET, LayerData, LayerFunction, LayerResult
from noetic.layers.frame import LayerContext, LayerEntry
from noetic.schema import SchemaError
from noetic.tools import Tool

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.layers.frame import LayerFrame

__all__ = ["LayerHandle", "LayerHandles", "call_function", "layer_tools"]


def _provides(entry: LayerEntry) -> Mapping[str, LayerData | LayerFunction]:
    provides: Mapping[str, LayerData | LayerFunction] = getattr(entry.layer, "provides", None) or {}
    return provides


async def call_function(
    entry: LayerEntry, name: str, decl: LayerFunction, args: Any, ctx: Context, *, validated: bool = False
) -> Any:
    """Run a provided function on `entry`; returns its result (CTX-5)."""
    if not validated:
        try:
            args = decl.validate(args)
        except SchemaError as exc:
            raise NoeticError(
                "INVALID_LAYER_INPUT",
                f"{entry.id}/{name}: invalid input: {exc}",
                layer_id=entry.id,
                function=name,
                problems=exc.problems,
            ) from None
    async with entry.lock:
        outcome = await decl.execute(args, LayerContext(entry, ctx))
        if isinstance(outcome, LayerResult):
            if outcome.state is not UNSET:
                entry.set_state(outcome.state)
                await entry.flush()
            return outcome.result
        return outcome


class _Function:
    """A provided function bound to one entry: `await handle.fn(args)` or `fn(**fields)`."""

    __slots__ = ("_ctx", "_decl", "_entry", "_name")

    def __init__(self, entry: LayerEntry, name: str, decl: LayerFunction, ctx: Context):
        self._entry = entry
        self._name = name
        self._decl = decl
        self._ctx = ctx

    async def __call__(self, args: Any = None, /, **fields: Any) -> Any:
        value = fields if args is None else args
        return await call_function(self._entry, self._name, self._decl, value, self._ctx)

    def __repr__(self) -> str:
        return f"<layer function {self._entry.id}/{self._name}>"


class LayerHandle(Mapping[str, Any]):
    """One layer's `provides`, by attribute or key: data read live, functions async."""

    __slots__ = ("_ctx", "_entry")

    def __init__(self, entry: LayerEntry, ctx: Context):
        self._entry = entry
        self._ctx = ctx

    def __getitem__(self, name: str) -> Any:
        decl = _provides(self._entry)[name]
        if isinstance(decl, LayerData):
            return decl.read(self._entry.state)
        return _Function(self._entry, name, decl, self._ctx)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"context layer {self._entry.id!r} provides no {name!r} "
                f"(it provides: {', '.join(_provides(self._entry)) or 'nothing'})"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(_provides(self._entry))

    def __len__(self) -> int:
        return len(_provides(self._entry))

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *_provides(self._entry)})

    def __repr__(self) -> str:
        return f"<LayerHandle {self._entry.id!r}: {', '.join(self) or 'nothing provided'}>"


class LayerHandles(Mapping[str, LayerHandle]):
    """`ctx.context`: a `LayerHandle` per active layer of a frame, by layer id.

    A handle is built on each lookup rather than cached here: it holds its context, which holds
    these handles, so a cache would make a reference cycle of every turn that reads one (GC-1).
    """

    __slots__ = ("__weakref__", "_frame")

    def __init__(self, frame: LayerFrame):
        self._frame = frame

    def __getitem__(self, layer_id: str) -> LayerHandle:
        entry = self._frame.get(layer_id)
        if entry is None:
            raise KeyError(layer_id)
        return LayerHandle(entry, self._frame.ctx)

    def __iter__(self) -> Iterator[str]:
        return iter([e.id for e in self._frame.active()])

    def __len__(self) -> int:
        return len(self._frame.active())

    def __repr__(self) -> str:
        return f"<ctx.context {list(self)}>"


def layer_tools(frame: LayerFrame) -> dict[str, Tool]:
    """The tools of every function the frame's active layers provide (LY-15)."""
    tools: dict[str, Tool] = {}
    for entry in frame.active():
        provides = getattr(entry.layer, "provides", None)  # `_provides`, inline: most have none
        if not provides:
            continue
        for name, decl in provides.items():
            if isinstance(decl, LayerFunction):
                tool = _tool(entry.id, name, decl)
                tools[tool.name] = tool
    return tools


def _tool(layer_id: str, name: str, decl: LayerFunction) -> Tool:
    """The tool of one provided function, built once per layer id and reused by every frame:
    it runs against the layer entry active on the calling context."""
    tool = decl.tools.get(layer_id)
    if tool is not None:
        return tool

    async def execute(args: Any, ctx: Context) -> Any:
        frame = ctx._layers
        entry = frame.get(layer_id) if frame is not None else None
        if entry is None:
            raise NoeticError(
                "tool_not_found",
                f"context layer {layer_id!r} is not active here, so {layer_id}/{name} cannot run",
                layer_id=layer_id,
            )
        return await call_function(entry, name, decl, args, ctx, validated=True)

    description = decl.description or f"{name} (provided by the {layer_id!r} context layer)"
    tool = decl.tools[layer_id] = Tool(
        f"{layer_id}/{name}", description=description, input=decl.input, execute=execute
    )
    return tool
