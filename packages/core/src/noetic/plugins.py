"""Plugin loading: the plugin manager, entry-point discovery and the registries it fills.

`make_plugin_manager()` builds a manager with the hook specs and the built-ins
(`noetic.builtins`) registered, then loads the `noetic` entry points. Each entry point is loaded
on its own: one that fails to import or to register is skipped with a `NoeticPluginWarning`
naming it and its distribution version, and the host keeps working. Environment switches:

- `NOETIC_STRICT_PLUGINS=1` — re-raise load and registration errors instead of skipping;
- `NOETIC_LOAD_PLUGINS=a,b` — load only these entry points (or distributions); empty = none;
- `NOETIC_DISABLE_PLUGINS=a,b` — never load these.

There is no module-global manager: pass one to `AgentHarness(plugins=...)`; the harness builds
its own lazily, only when it has a name or URL to resolve.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import pluggy

from noetic import hookspecs
from noetic.errors import NoeticConfigError
from noetic.registry import Register, Registries, Registry

__all__ = [
    "ENTRY_POINT_GROUP",
    "NoeticPluginManager",
    "NoeticPluginWarning",
    "PluginInfo",
    "load_plugins",
    "make_plugin_manager",
    "plugin_report",
]

ENTRY_POINT_GROUP = "noetic"
BUILTIN_PLUGIN = "noetic.builtins"


class NoeticPluginWarning(UserWarning):
    """A plugin failed to load or register and was skipped."""


@dataclass
class PluginInfo:
    """What `noetic plugins` prints for one plugin."""

    name: str
    distribution: str | None = None
    version: str | None = None
    hooks: list[str] = field(default_factory=list)
    registered: list[str] = field(default_factory=list)
    error: str | None = None


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _strict() -> bool:
    return os.environ.get("NOETIC_STRICT_PLUGINS", "").strip().lower() in ("1", "true", "yes", "on")


class NoeticPluginManager(pluggy.PluginManager):
    """A pluggy manager for the `noetic` project that also owns the registries."""

    def __init__(self) -> None:
        super().__init__("noetic")
        self.add_hookspecs(hookspecs)
        #: name → (distribution name, version) for plugins loaded from entry points.
        self.distributions: dict[str, tuple[str, str]] = {}
        #: name → error text for plugins that were skipped.
        self.load_errors: dict[str, str] = {}
        #: name → "kind name" strings of what each plugin registered.
        self.contributions: dict[str, list[str]] = {}
        self._registries: Registries | None = None

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Register a plugin object or module (invalidates the registries)."""
        self._registries = None
        return super().register(plugin, name)

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        """Unregister a plugin (invalidates the registries)."""
        self._registries = None
        return super().unregister(plugin, name)

    @property
    def registries(self) -> Registries:
        """The registries, filled from every registered plugin on first access."""
        if self._registries is None:
            self._registries = self._fill_registries()
        return self._registries

    def _fill_registries(self) -> Registries:
        registries = Registries()
        self.contributions = {}
        targets = registries.by_hook()
        impls: dict[str, list[tuple[str, Any]]] = {}
        for hook_name in targets:
            for impl in getattr(self.hook, hook_name).get_hookimpls():
                impls.setdefault(impl.plugin_name, []).append((hook_name, impl))
        for name in sorted(impls, key=lambda n: (n != BUILTIN_PLUGIN, n)):
            builtin = name == BUILTIN_PLUGIN
            staged: dict[tuple[str, str], Any] = {}
            try:
                for hook_name, impl in impls[name]:
                    register = _stager(targets[hook_name], hook_name, name, builtin, staged)
                    impl.function(**({"register": register} if "register" in impl.argnames else {}))
            except Exception as exc:  # noqa: BLE001 - a plugin's failure must not take the host down
                self._skip(name, f"registration failed: {exc}", exc)
                continue
            for (hook_name, item_name), target in staged.items():
                targets[hook_name].add(item_name, target, source=name, builtin=builtin)
                self.contributions.setdefault(name, []).append(f"{targets[hook_name].kind} {item_name}")
        return registries

    def _skip(self, name: str, reason: str, exc: BaseException) -> None:
        dist, version = self.distributions.get(name, ("?", "?"))
        message = f"noetic plugin {name!r} (distribution {dist} {version}) was skipped: {reason}"
        self.load_errors[name] = reason
        if _strict():
            raise NoeticConfigError(
                "PLUGIN_LOAD_FAILED",
                message,
                hint="Fix or uninstall the plugin, or unset NOETIC_STRICT_PLUGINS to skip broken plugins.",
                plugin=name,
            ) from exc
        warnings.warn(message, NoeticPluginWarning, stacklevel=3)


def _stager(
    registry: Registry[Any], hook_name: str, plugin: str, builtin: bool, staged: dict[tuple[str, str], Any]
) -> Register:
    """A `register` callable that checks each name and stages it until the plugin is done."""

    def register(name: str, target: Any) -> None:
        item_name = name
        registry.check(item_name, plugin, builtin)
        if (hook_name, item_name) in staged:
            raise NoeticConfigError(
                "DUPLICATE_REGISTRATION",
                f"plugin {plugin!r} registered {registry.kind} {item_name!r} twice",
                hint="Register each name once per plugin.",
            )
        staged[(hook_name, item_name)] = target

    return register


def _wanted(ep: EntryPoint) -> bool:
    dist_name = ep.dist.name if ep.dist is not None else None
    only = _env_list("NOETIC_LOAD_PLUGINS")
    if only is not None and ep.name not in only and dist_name not in only:
        return False
    blocked = _env_list("NOETIC_DISABLE_PLUGINS") or set()
    return ep.name not in blocked and dist_name not in blocked


def load_plugins(pm: NoeticPluginManager | None = None) -> NoeticPluginManager:
    """Load every `noetic` entry point into `pm` (a new manager when None), one at a time.

    A plugin that fails to import or register is skipped with a warning (or raises under
    `NOETIC_STRICT_PLUGINS=1`); see the module docstring for the environment switches.
    """
    if pm is None:
        pm = NoeticPluginManager()
        pm.register(_builtins(), name=BUILTIN_PLUGIN)
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if not _wanted(ep):
            pm.set_blocked(ep.name)
            continue
        if pm.has_plugin(ep.name) or pm.is_blocked(ep.name):
            continue
        if ep.dist is not None:
            pm.distributions[ep.name] = (ep.dist.name, ep.dist.version)
        try:
            plugin = ep.load()
            pm.register(plugin, name=ep.name)
        except Exception as exc:  # noqa: BLE001 - isolate broken plugins
            pm._skip(ep.name, f"{type(exc).__name__}: {exc}", exc)
    return pm


def _builtins() -> object:
    from noetic import builtins

    return builtins


def make_plugin_manager(
    *, plugins: Iterable[object] = (), load_entry_points: bool = True
) -> NoeticPluginManager:
    """A new plugin manager: hook specs, built-ins, entry points, then `plugins` in order."""
    pm = NoeticPluginManager()
    pm.register(_builtins(), name=BUILTIN_PLUGIN)
    if load_entry_points:
        load_plugins(pm)
    for plugin in plugins:
        pm.register(plugin)
    return pm


def plugin_report(pm: NoeticPluginManager) -> list[PluginInfo]:
    """One `PluginInfo` per plugin (loaded or skipped), built-ins first."""
    registries = pm.registries  # fills contributions
    del registries
    infos: list[PluginInfo] = []
    names = {name for name, plugin in pm.list_name_plugin() if plugin is not None} | set(pm.load_errors)
    for name in sorted(names, key=lambda n: (n != BUILTIN_PLUGIN, n)):
        plugin = pm.get_plugin(name)
        dist, version = pm.distributions.get(name, (None, None))
        if name == BUILTIN_PLUGIN:
            from noetic import __version__

            dist, version = "noetic-core", __version__
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or ()) if plugin is not None else []
        infos.append(
            PluginInfo(
                name=name,
                distribution=dist,
                version=version,
                hooks=hooks,
                registered=pm.contributions.get(name, []),
                error=pm.load_errors.get(name),
            )
        )
    return infos
