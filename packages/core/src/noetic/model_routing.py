"""Which model adapter a model string goes to.

`"provider:model-id"` goes to the adapter registered as `provider`, and nowhere else:

- an unknown provider is `UNKNOWN_MODEL_ADAPTER`, naming the installed providers, closest
  spelling first (`openruter` suggests `openrouter`);
- a provider whose plugin failed to load is `PLUGIN_LOAD_FAILED`, naming that plugin and its
  load error (a plugin is taken to be the one when its entry-point or distribution name
  contains the provider name).

A bare id (no provider prefix; the part before a colon containing `/` counts as bare, as in
`google/gemini-2.0-flash-exp:free`) goes to the only installed adapter. It is an error when
several are installed, when none is (only the built-in `scripted`), or when a plugin failed to
load — that plugin might be the one the id was meant for.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

from noetic.errors import NoeticConfigError

if TYPE_CHECKING:
    from noetic.model import ModelAdapter
    from noetic.plugins import NoeticPluginManager

__all__ = ["adapter_for", "provider_prefix"]

_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")


def provider_prefix(model: str) -> tuple[str | None, str]:
    """Split `model` into its provider prefix (None for a bare id) and the rest."""
    prefix, colon, rest = model.partition(":")
    if colon and _PREFIX.fullmatch(prefix):
        return prefix, rest
    return None, model


def adapter_for(pm: NoeticPluginManager, model: str) -> ModelAdapter:
    """The adapter `model` names; see the module docstring for the rules and errors."""
    registry = pm.registries.model_adapters
    prefix, rest = provider_prefix(model)
    if prefix is not None:
        if prefix not in registry:
            raise _unknown_provider(pm, model, prefix)
        adapter: ModelAdapter = registry.resolve(prefix)(rest)
        return adapter
    failed = _failed(pm)
    if failed:
        raise NoeticConfigError(
            "PLUGIN_LOAD_FAILED",
            f"model {model!r} names no provider, and plugins failed to load: {failed}",
            hint="Fix the plugin (`noetic plugins` shows its error), or prefix the model id with its "
            "provider, e.g. 'openrouter:" + model + "'.",
        )
    installed = sorted(r.name for r in registry if not r.builtin)
    if len(installed) == 1:
        adapter = registry.resolve(installed[0])(model)
        return adapter
    if not installed:
        raise NoeticConfigError(
            "UNKNOWN_MODEL_ADAPTER",
            f"model {model!r} names no provider and no model adapter is installed",
            hint="Install an adapter package (e.g. noetic-adapters-openrouter) and use "
            f"'openrouter:{model}', or use 'scripted:echo' for the offline echo model.",
        )
    raise NoeticConfigError(
        "UNKNOWN_MODEL_ADAPTER",
        f"model {model!r} names no provider and several adapters are installed ({', '.join(installed)})",
        hint=f"Prefix the model id with its provider, e.g. '{installed[0]}:{model}'.",
    )


def _unknown_provider(pm: NoeticPluginManager, model: str, prefix: str) -> NoeticConfigError:
    for plugin, error in pm.load_errors.items():
        dist = pm.distributions.get(plugin, ("", ""))[0]
        if prefix.lower() in plugin.lower() or prefix.lower() in dist.lower():
            return NoeticConfigError(
                "PLUGIN_LOAD_FAILED",
                f"model {model!r}: provider {prefix!r} belongs to plugin {plugin!r}, which failed to load: {error}",
                hint=f"Fix or reinstall the plugin {plugin!r} (`noetic plugins` shows its error).",
                plugin=plugin,
            )
    names = pm.registries.model_adapters.names()
    close = difflib.get_close_matches(prefix, names, n=len(names), cutoff=0.5)
    ordered = close + [n for n in names if n not in close]
    failed = _failed(pm)
    also = f"; plugins that failed to load: {failed}" if failed else ""
    suggestion = f"Did you mean '{close[0]}:{model.partition(':')[2]}'? " if close else ""
    return NoeticConfigError(
        "UNKNOWN_MODEL_ADAPTER",
        f"model {model!r}: no model adapter is installed for provider {prefix!r} "
        f"(installed: {', '.join(ordered)}){also}",
        hint=f"{suggestion}Use one of the installed providers, or install the adapter package for {prefix!r}.",
        installed=ordered,
    )


def _failed(pm: NoeticPluginManager) -> str:
    return "; ".join(f"{name} ({error})" for name, error in sorted(pm.load_errors.items()))
