"""Model strings go to the provider they name, or fail with an error that says why
(issue 13, point 5). Broken plugins are real installed distributions in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import noetic as nt
import pytest
from noetic.plugins import make_plugin_manager


def test_a_misspelt_provider_names_the_installed_ones_closest_first() -> None:
    """Issue 13, point 5: `openruter:` is an unknown provider, not a bare id to prefix again."""
    harness = nt.AgentHarness("t", plugins=make_plugin_manager())
    with pytest.raises(nt.NoeticConfigError) as err:
        harness.resolve_model("openruter:anthropic/claude-sonnet-4")
    assert err.value.code == "UNKNOWN_MODEL_ADAPTER"
    assert err.value.installed[0] == "openrouter"
    assert "'openruter'" in err.value.message and "openrouter:openruter" not in str(err.value)
    assert "Did you mean 'openrouter:anthropic/claude-sonnet-4'?" in err.value.hint


def test_an_unknown_provider_is_never_routed_to_the_installed_adapter() -> None:
    """Issue 13, point 5: `nosuch:model` fails instead of going to OpenRouter."""
    harness = nt.AgentHarness("t", plugins=make_plugin_manager())
    with pytest.raises(nt.NoeticConfigError) as err:
        harness.resolve_model("nosuch:model")
    assert err.value.code == "UNKNOWN_MODEL_ADAPTER"
    assert set(err.value.installed) >= {"openrouter", "scripted"}


SHOUT_BROKEN = "import not_a_module_that_exists  # the plugin cannot import\n"


def test_a_provider_whose_plugin_failed_names_the_plugin_and_its_error(
    plugin_dist: Callable[..., Path], run_python: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    """Issue 13, point 5: `shout:bob` with a broken `noetic-adapters-shout` plugin names that
    plugin and its load error, and never reaches OpenRouter (a key is set)."""
    path = plugin_dist("noetic-adapters-shout", SHOUT_BROKEN)
    code = textwrap.dedent("""
        import json, warnings
        import noetic as nt
        warnings.simplefilter("ignore")
        h = nt.AgentHarness("t")
        for model in ("shout:bob", "anthropic/claude-sonnet-4"):
            try:
                h.resolve_model(model)
                print(json.dumps({"routed": model}))
            except nt.NoeticConfigError as exc:
                print(json.dumps({"code": exc.code, "message": exc.message}))
    """)
    result = run_python(code, path, OPENROUTER_API_KEY="sk-or-v1-placeholder-not-a-real-key-0000")
    assert result.returncode == 0, result.stderr
    prefixed, bare = (json.loads(line) for line in result.stdout.splitlines())
    assert prefixed["code"] == "PLUGIN_LOAD_FAILED"
    assert (
        "noetic-adapters-shout" in prefixed["message"] and "not_a_module_that_exists" in prefixed["message"]
    )
    assert bare["code"] == "PLUGIN_LOAD_FAILED"  # a bare id may have been meant for the broken one


def test_noetic_plugins_exits_non_zero_when_a_plugin_failed(plugin_dist: Callable[..., Path]) -> None:
    """Issue 13, point 5: `noetic plugins` lists the load error and exits 1 (0 otherwise)."""
    path = plugin_dist("noetic-adapters-shout", SHOUT_BROKEN)
    env = {**os.environ, "PYTHONPATH": str(path)}
    broken = subprocess.run(
        [sys.executable, "-m", "noetic.cli", "plugins"], capture_output=True, text=True, env=env, timeout=120
    )
    assert broken.returncode == 1
    assert "noetic-adapters-shout" in broken.stdout and "not_a_module_that_exists" in broken.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "noetic.cli", "plugins", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert as_json.returncode == 1
    assert any(p["error"] and "not_a_module_that_exists" in p["error"] for p in json.loads(as_json.stdout))
    healthy = subprocess.run(
        [sys.executable, "-m", "noetic.cli", "plugins"], capture_output=True, text=True, timeout=120
    )
    assert healthy.returncode == 0, healthy.stdout
