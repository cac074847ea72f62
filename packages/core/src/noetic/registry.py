"""Name → object registries filled by the registration hooks.

Duplicate policy (one rule, independent of hook order):

- a plugin may **replace a built-in** (the core's scripted model, in-memory filesystem, …);
  the replacement is recorded and logged;
- two plugins registering **the same name** is a `DUPLICATE_REGISTRATION` error; the plugin
  that registered second is skipped as a whole (or the error is raised under
  `NOETIC_STRICT_PLUGINS=1`), so an installation never depends on which loaded first.

A target may be the object itself or a lazy `"package.module:attr"` string, imported the
first time the name is resolved.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from noetic.errors import NoeticConfigError
from noetic.logs import logger

__all__ = ["Register", "Registration", "Registries", "Registry", "import_target"]

T = TypeVar("T")
log = logger("noetic.plugins")


class Register(Protocol):
    """The callable a registration hook receives."""

    def __call__(self, name: str, target: Any) -> None:
        """Register `target` (an object or a `"module:attr"` string) under `name`."""
        ...


def import_target(spec: str) -> Any:
    """Import a `"package.module:attr.sub"` target, with a config error naming it on failure."""
    module_name, _, attr_path = spec.partition(":")
    try:
        value: Any = importlib.import_module(module_name)
        for part in filter(None, attr_path.split(".")):
            value = getattr(value, part)
    except (ImportError, AttributeError) as exc:
        raise NoeticConfigError(
            "UNKNOWN_PLUGIN_TARGET",
            f"cannot import the registered target {spec!r}: {exc}",
            hint="Check that the plugin that registered it is installed completely and up to date.",
        ) from exc
    return value


@dataclass(slots=True)
class Registration(Generic[T]):
    """One registered name: where it came from and what it points at."""

    name: str
    target: T | str
    source: str
    builtin: bool
    replaced: str | None = None
    _resolved: Any = field(default=None, repr=False)

    def resolve(self) -> T:
        """The registered object, importing a lazy target on first use."""
        if self._resolved is None:
            target = self.target
            self._resolved = import_target(target) if isinstance(target, str) else target
        resolved: T = self._resolved
        return resolved


class Registry(Generic[T]):
    """Registrations of one kind (model adapters, filesystems, …) keyed by name."""

    def __init__(self, kind: str, *, missing_hint: str):
        self.kind = kind
        self._missing_hint = missing_hint
        self._entries: dict[str, Registration[T]] = {}

    def check(self, name: str, source: str, builtin: bool) -> None:
        """Raise `DUPLICATE_REGISTRATION` if `source` may not register `name`."""
        if not name or not isinstance(name, str):
            raise NoeticConfigError(
                "DUPLICATE_REGISTRATION",
                f"plugin {source!r} registered a {self.kind} with an empty or non-string name {name!r}",
                hint="Register every object under a non-empty string name.",
            )
        existing = self._entries.get(name)
        if existing is None or (existing.builtin and not builtin):
            return
        raise NoeticConfigError(
            "DUPLICATE_REGISTRATION",
            f"{self.kind} {name!r} is registered by both {existing.source!r} and {source!r}",
            hint=f"Uninstall one of the two, or block one with NOETIC_DISABLE_PLUGINS={source}.",
        )

    def add(self, name: str, target: T | str, *, source: str, builtin: bool = False) -> None:
        """Register `target` under `name` following the module's duplicate policy."""
        self.check(name, source, builtin)
        existing = self._entries.get(name)
        replaced = existing.source if existing is not None else None
        if replaced is not None:
            log.info("%s %r from %r replaces the built-in from %r", self.kind, name, source, replaced)
        self._entries[name] = Registration(name, target, source, builtin, replaced)

    def resolve(self, name: str) -> T:
        """The object registered under `name`; an unknown name is a config error with a hint."""
        entry = self._entries.get(name)
        if entry is None:
            known = ", ".join(sorted(self._entries)) or "none"
            raise NoeticConfigError(
                f"UNKNOWN_{self.kind.upper().replace(' ', '_').replace('-', '_')}",
                f"no {self.kind} is registered under {name!r} (registered: {known})",
                hint=self._missing_hint,
            )
        return entry.resolve()

    def get(self, name: str) -> Registration[T] | None:
        """The registration for `name`, or None."""
        return self._entries.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Registration[T]]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)


@dataclass
class Registries:
    """The registries the core fills from the registration hooks."""

    model_adapters: Registry[Any] = field(
        default_factory=lambda: Registry(
            "model adapter",
            missing_hint="Install the adapter package for that provider (e.g. noetic-adapters-openrouter) "
            "or pass an adapter instance as model=.",
        )
    )
    context_layers: Registry[Any] = field(
        default_factory=lambda: Registry(
            "context layer",
            missing_hint="Install the layer's package (e.g. noetic-layers-scratchpad) or pass the layer object.",
        )
    )
    filesystems: Registry[Any] = field(
        default_factory=lambda: Registry(
            "filesystem",
            missing_hint="Install noetic-fs-fsspec for file://, memory:// and other fsspec URLs, "
            "or pass a filesystem adapter instance as fs=.",
        )
    )
    custom_items: Registry[Any] = field(
        default_factory=lambda: Registry(
            "custom item",
            missing_hint="Declare the item in the document's customItems or pass it in custom_items=.",
        )
    )
    checkpoint_stores: Registry[Any] = field(
        default_factory=lambda: Registry(
            "checkpoint store",
            missing_hint="Use storage='sqlite:///path.db', storage='memory://', or pass a CheckpointStore.",
        )
    )

    commands: Registry[Any] = field(
        default_factory=lambda: Registry(
            "command",
            missing_hint="Install the plugin that provides the command; `noetic plugins` lists what is installed.",
        )
    )

    def by_hook(self) -> dict[str, Registry[Any]]:
        """The registry each registration hook fills, keyed by hook name."""
        return {
            "register_model_adapters": self.model_adapters,
            "register_context_layers": self.context_layers,
            "register_filesystems": self.filesystems,
            "register_custom_items": self.custom_items,
            "register_checkpoint_stores": self.checkpoint_stores,
            "register_commands": self.commands,
        }
