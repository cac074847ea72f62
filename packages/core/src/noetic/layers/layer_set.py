"""`LayerSet` and `context([...])`: an ordered, validated set of context layers.

A set holds layer objects and registered names (`"scratchpad"`), in array order — the order
of `init`, `on_complete` and (reversed) `dispose`. Objects are validated when the set is built
(LY-13: bad slot, scope, budget, …; duplicate ids raise `DUPLICATE_LAYER_ID`); names are
resolved through the plugin registry the first time the set is used, and the result is
validated the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from noetic.errors import NoeticConfigError
from noetic.layers.contract import validate_layer

if TYPE_CHECKING:
    from noetic.registry import Registry

__all__ = ["LayerSet", "context"]


class LayerSet:
    """Context layers (objects or registered names) in array order; see the module docstring."""

    __slots__ = ("_registry", "_resolved", "names", "specs")

    def __init__(self, layers: Iterable[Any] = ()):
        specs: list[Any] = []
        for spec in layers:
            if isinstance(spec, LayerSet):
                specs.extend(spec.specs)
            elif isinstance(spec, str):
                if not spec.strip():
                    raise NoeticConfigError(
                        "UNKNOWN_LAYER_REFERENCE",
                        "a layer name is empty",
                        hint="Name a registered layer such as 'scratchpad', or pass the layer object.",
                    )
                specs.append(spec)
            elif isinstance(spec, type):
                raise NoeticConfigError(
                    "INVALID_LAYER",
                    f"{spec.__name__} is a layer class, not a layer",
                    hint=f"Pass an instance: {spec.__name__}().",
                )
            else:
                validate_layer(spec)
                specs.append(spec)
        _check_unique([s for s in specs if not isinstance(s, str)])
        self.specs: tuple[Any, ...] = tuple(specs)
        #: The registered names this set refers to (every frame of the set asks).
        self.names: tuple[str, ...] = tuple(s for s in specs if isinstance(s, str))
        self._registry: object | None = None
        self._resolved: tuple[Any, ...] | None = None
        if not self.names:
            self._resolved = self.specs

    @classmethod
    def of(cls, layers: LayerSet | Iterable[Any] | None) -> LayerSet | None:
        """`layers` as a set (None stays None: "no layers given")."""
        if layers is None or isinstance(layers, LayerSet):
            return layers
        return cls(layers)

    def resolve(self, registry: Registry[Any] | None) -> tuple[Any, ...]:
        """The layer objects, creating named ones with their registered factory."""
        resolved = self._resolved
        if resolved is not None and (self._registry is None or self._registry is registry):
            return resolved
        if registry is None:
            raise NoeticConfigError(
                "UNKNOWN_LAYER_REFERENCE",
                f"layers {', '.join(map(repr, self.names))} are names but no plugin registry is available",
                hint="Run the step inside an AgentHarness, or pass layer objects instead of names.",
            )
        layers: list[Any] = []
        for spec in self.specs:
            if isinstance(spec, str):
                layer = registry.resolve(spec)()
                validate_layer(layer)
                layers.append(layer)
            else:
                layers.append(spec)
        _check_unique(layers)
        self._registry, self._resolved = registry, tuple(layers)
        return self._resolved

    def __iter__(self) -> Iterator[Any]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def __bool__(self) -> bool:
        return bool(self.specs)

    def __repr__(self) -> str:
        shown = ", ".join(s if isinstance(s, str) else repr(getattr(s, "id", s)) for s in self.specs)
        return f"context([{shown}])"


def _check_unique(layers: list[Any]) -> None:
    seen: set[str] = set()
    for layer in layers:
        if layer.id in seen:
            raise NoeticConfigError(
                "DUPLICATE_LAYER_ID",
                f"two context layers share the id {layer.id!r}",
                hint="Give every layer in a set its own id (ids also name their tools and ctx.context keys).",
                layer_id=layer.id,
            )
        seen.add(layer.id)


def context(layers: Iterable[Any]) -> LayerSet:
    """Build a layer set: `nt.context([scratchpad(), "rag", MyLayer()])`."""
    return LayerSet(layers)
