"""Every hook a Noetic plugin can implement — the only place hook specs live.

Hooks are synchronous registration hooks in the `llm` style: each receives a `register`
callable and calls it once per thing it provides. Registration is cheap: pass a
`"module:attr"` string instead of an object and the core imports it on first use. Per-call
behaviour (a model's `stream`, a layer's `recall`, a filesystem's `read_bytes`) lives on the
registered objects as async methods, because pluggy dispatch is synchronous.

A plugin is a module (or object) with `@noetic.hookimpl` functions, published in the
`noetic` entry-point group::

    # pyproject.toml
    [project.entry-points.noetic]
    my-plugin = "my_plugin.plugin"

    # my_plugin/plugin.py
    import noetic

    @noetic.hookimpl
    def register_filesystems(register):
        register("ftp", "my_plugin.fs:FtpFs")

Duplicate names follow one documented rule (see `noetic.registry`): a plugin may replace a
built-in; two plugins claiming one name is an error that skips the later plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from noetic.registry import Register

__all__ = [
    "HOOK_NAMES",
    "hookimpl",
    "hookspec",
    "register_checkpoint_stores",
    "register_commands",
    "register_context_layers",
    "register_custom_items",
    "register_filesystems",
    "register_model_adapters",
]

hookspec = pluggy.HookspecMarker("noetic")
hookimpl = pluggy.HookimplMarker("noetic")


@hookspec
def register_model_adapters(register: Register) -> None:
    """Register model adapters by provider prefix.

    :param register: ``register(prefix, factory)``. ``factory(model_id)`` returns a
        ``ModelAdapter`` for the part of a model string after ``prefix:`` — registering
        ``"openrouter"`` makes ``model="openrouter:anthropic/claude-sonnet-4"`` call
        ``factory("anthropic/claude-sonnet-4")``. A bare model id (no prefix) goes to the only
        non-built-in adapter registered.
    :return: Nothing; results are ignored.

    Called once per plugin manager, the first time a model string is resolved.
    """


@hookspec
def register_context_layers(register: Register) -> None:
    """Register context-layer factories by name.

    :param register: ``register(name, factory)``. ``factory(**config)`` returns a context
        layer; ``AgentHarness(layers=["scratchpad"])`` calls it with no arguments.
    :return: Nothing; results are ignored.

    Called once per plugin manager, the first time a layer name is resolved.
    """


@hookspec
def register_filesystems(register: Register) -> None:
    """Register filesystem adapters by URL scheme.

    :param register: ``register(scheme, factory)``. ``factory(url)`` returns a filesystem
        adapter rooted at ``url``; ``AgentHarness(fs="file:///srv/agent")`` calls the ``file``
        factory. The scheme ``"*"`` registers the fallback for schemes nobody else claims.
    :return: Nothing; results are ignored.

    Called once per plugin manager, the first time a filesystem URL is resolved.
    """


@hookspec
def register_custom_items(register: Register) -> None:
    """Register custom-item declarations by name, resolvable from JSON workflow documents.

    :param register: ``register(name, declaration)`` where ``declaration`` comes from
        ``noetic.custom_item(...)``.
    :return: Nothing; results are ignored.

    Called once per plugin manager, the first time a workflow resolves an item name.
    """


@hookspec
def register_checkpoint_stores(register: Register) -> None:
    """Register checkpoint-store backends by URL scheme.

    :param register: ``register(scheme, factory)``. ``factory(url)`` returns a
        ``CheckpointStore``; ``AgentHarness(storage="sqlite:///run.db")`` calls the ``sqlite``
        factory.
    :return: Nothing; results are ignored.

    Called once per plugin manager, the first time a storage URL is resolved.
    """


@hookspec
def register_commands(register: Register) -> None:
    """Register `noetic` subcommands by name.

    :param register: ``register(name, command)`` where ``command`` is a
        ``noetic.plugin_commands.PluginCommand`` (its ``help``, an ``add_arguments(parser)``
        that adds argparse arguments, and ``run(args)`` returning the exit status), or a
        ``"module:attr"`` string naming one. ``register("worker", ...)`` makes
        ``noetic worker ...`` call it. Names of core commands (``run``, ``plugins``, …) are refused.
    :return: Nothing; results are ignored.

    Called once per plugin manager, when the ``noetic`` command line starts.
    """


#: The registration hooks, in the order the registries are filled.
HOOK_NAMES = (
    "register_model_adapters",
    "register_context_layers",
    "register_filesystems",
    "register_custom_items",
    "register_checkpoint_stores",
    "register_commands",
)
