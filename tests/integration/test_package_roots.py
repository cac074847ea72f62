"""Each package root exports its main names, the same objects its modules define, and every
name in its `__all__` resolves (imports are lazy, so the plugin entry points stay cheap)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest


def test_the_main_names_import_from_the_package_roots() -> None:
    from noetic_adapters_openrouter import OpenRouterModel, OpenRouterProvider, adapter, provider
    from noetic_fs_fsspec import FsspecFs, fsspec_fs_from_url
    from noetic_fs_fsspec import adapter as fs_adapter
    from noetic_layers_scratchpad import Scratchpad, layer, scratchpad

    assert OpenRouterProvider is provider.OpenRouterProvider
    assert OpenRouterModel is adapter.OpenRouterModel
    assert FsspecFs is fs_adapter.FsspecFs
    assert fsspec_fs_from_url is fs_adapter.fsspec_fs_from_url
    assert scratchpad is layer.scratchpad
    assert isinstance(scratchpad(), Scratchpad)


@pytest.mark.parametrize(
    "package",
    ["noetic_adapters_openrouter", "noetic_fs_fsspec", "noetic_layers_scratchpad", "noetic_durable_dbos"],
)
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__
    for name in module.__all__:
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        module.nope  # noqa: B018


def test_importing_a_package_root_pulls_in_no_heavy_dependency() -> None:
    code = (
        "import sys, noetic_adapters_openrouter, noetic_fs_fsspec, noetic_layers_scratchpad;"
        "print(sorted(m for m in ('httpx', 'fsspec') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
