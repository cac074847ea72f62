"""Plugin discovery through entry points, isolation of broken plugins, registries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import noetic as nt
import pytest
from noetic import hookspecs
from noetic.plugins import NoeticPluginWarning, make_plugin_manager, plugin_report

ROOT = Path(__file__).resolve().parents[2]


def test_the_three_plugin_packages_are_discovered_and_register_their_names() -> None:
    pm = make_plugin_manager()
    names = {info.name for info in plugin_report(pm)}
    assert {"adapters-openrouter", "layers-scratchpad", "fs-fsspec", "noetic.builtins"} <= names
    registries = pm.registries
    assert "openrouter" in registries.model_adapters and "scratchpad" in registries.context_layers
    assert {"file", "memory", "*"} <= set(registries.filesystems.names())
    memory = registries.filesystems.get("memory")
    assert memory is not None and memory.source == "fs-fsspec" and memory.replaced == "noetic.builtins"


def test_noetic_plugins_cli_lists_plugins_with_versions_hooks_and_registrations() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "noetic.cli", "plugins", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = {p["name"]: p for p in json.loads(result.stdout)}
    assert report["adapters-openrouter"]["version"] == "0.1.0"
    assert report["adapters-openrouter"]["hooks"] == ["register_model_adapters"]
    assert "model adapter openrouter" in report["adapters-openrouter"]["registered"]
    assert report["noetic.builtins"]["distribution"] == "noetic-core"


def test_a_broken_plugin_is_skipped_with_a_warning_naming_it_and_its_version(
    plugin_dist: Callable[..., Path], run_python: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    path = plugin_dist("noetic-broken-test", version="1.2.3", source="raise RuntimeError('cannot start')\n")
    code = textwrap.dedent("""
        import warnings, noetic
        from noetic.plugins import make_plugin_manager
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pm = make_plugin_manager()
        print([str(w.message) for w in caught])
        print("openrouter" in pm.registries.model_adapters)
    """)
    result = run_python(code, path)
    assert result.returncode == 0, result.stderr
    assert (
        "noetic-broken-test" in result.stdout and "1.2.3" in result.stdout and "cannot start" in result.stdout
    )
    assert result.stdout.strip().endswith("True")  # the host keeps working
    cli = subprocess.run(
        [sys.executable, "-m", "noetic.cli", "plugins"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(path)},
        timeout=120,
    )
    # the listing shows the error; the status says something is wrong (issue 13, point 5)
    assert cli.returncode == 1 and "error: RuntimeError: cannot start" in cli.stdout


def test_strict_mode_raises_for_a_broken_plugin(
    plugin_dist: Callable[..., Path], run_python: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    path = plugin_dist("noetic-broken-test", version="1.2.3", source="raise RuntimeError('cannot start')\n")
    result = run_python(
        "from noetic.plugins import make_plugin_manager; make_plugin_manager()",
        path,
        NOETIC_STRICT_PLUGINS="1",
    )
    assert result.returncode != 0 and "PLUGIN_LOAD_FAILED" in result.stderr


def test_load_and_disable_switches(
    tmp_path: Path, run_python: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    code = "from noetic.plugins import make_plugin_manager; print(sorted(n for n, p in make_plugin_manager().list_name_plugin() if p is not None))"
    only = run_python(code, tmp_path, NOETIC_LOAD_PLUGINS="fs-fsspec")
    assert "'fs-fsspec'" in only.stdout and "adapters-openrouter" not in only.stdout
    none = run_python(code, tmp_path, NOETIC_LOAD_PLUGINS="")
    assert none.stdout.strip() == "['noetic.builtins']"
    blocked = run_python(code, tmp_path, NOETIC_DISABLE_PLUGINS="layers-scratchpad")
    assert "layers-scratchpad" not in blocked.stdout and "fs-fsspec" in blocked.stdout


def test_a_working_test_distribution_registers_a_model_adapter(
    plugin_dist: Callable[..., Path], run_python: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    source = """
        import noetic

        @noetic.hookimpl
        def register_model_adapters(register):
            register("fake", "noetic.testing.scripted:scripted_model_factory")
    """
    path = plugin_dist("noetic-fake-test", version="0.0.1", source=source)
    code = "from noetic.plugins import make_plugin_manager; print(make_plugin_manager().registries.model_adapters.resolve('fake')('echo').model_id)"
    result = run_python(code, path)
    assert result.stdout.strip() == "scripted:echo", result.stderr


class _Plugin:
    def __init__(self, name: str, target: Any):
        self.name, self.target = name, target

    @nt.hookimpl
    def register_filesystems(self, register: Any) -> None:
        register(self.name, self.target)


def test_duplicate_names_between_plugins_skip_the_later_plugin_loudly() -> None:
    pm = make_plugin_manager(load_entry_points=False)
    pm.register(_Plugin("ftp", "a:A"), name="first")
    pm.register(_Plugin("ftp", "b:B"), name="second")
    with pytest.warns(NoeticPluginWarning, match="registered by both 'first' and 'second'"):
        registries = pm.registries
    entry = registries.filesystems.get("ftp")
    assert entry is not None and entry.source == "first" and "second" in pm.load_errors


def test_a_plugin_may_replace_a_built_in() -> None:
    pm = make_plugin_manager(load_entry_points=False, plugins=[_Plugin("memory", "x:Y")])
    entry = pm.registries.filesystems.get("memory")
    assert entry is not None and entry.replaced == "noetic.builtins" and not entry.builtin


def test_lazy_targets_are_imported_on_first_use_with_a_clear_error_when_missing() -> None:
    pm = make_plugin_manager(load_entry_points=False, plugins=[_Plugin("gone", "no_such_module_xyz:Fs")])
    with pytest.raises(nt.NoeticConfigError) as err:
        pm.registries.filesystems.resolve("gone")
    assert err.value.code == "UNKNOWN_PLUGIN_TARGET" and "no_such_module_xyz" in err.value.message
    with pytest.raises(nt.NoeticConfigError) as err:
        pm.registries.filesystems.resolve("nothing")
    assert err.value.code == "UNKNOWN_FILESYSTEM" and err.value.hint


def test_every_hook_spec_is_documented_in_its_docstring_and_the_plugin_guide() -> None:
    guide = (ROOT / "packages" / "core" / "README.md").read_text()
    pm = make_plugin_manager(load_entry_points=False)
    for name in hookspecs.HOOK_NAMES:
        caller = getattr(pm.hook, name)
        spec = caller.spec
        assert spec is not None
        doc = spec.function.__doc__ or ""
        assert ":param register:" in doc and "Called" in doc, name
        signature = f"{name}({', '.join(spec.argnames)})"
        assert f"### `{signature}`" in guide, f"{signature} is missing from packages/core/README.md"


def test_import_noetic_imports_no_plugin_httpx_or_fsspec() -> None:
    code = "import sys, noetic; print(sorted(m for m in sys.modules if m.split('.')[0] in {'httpx', 'fsspec', 'noetic_adapters_openrouter', 'noetic_fs_fsspec', 'noetic_layers_scratchpad', 'jsonschema', 'jsonata'}))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]"
