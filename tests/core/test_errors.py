"""The error model: runtime kinds and configuration codes."""

from __future__ import annotations

import pickle

import noetic as nt
from noetic.errors import cancelled, is_noetic_config_error, is_noetic_error


def test_noetic_error_carries_code_message_and_fields() -> None:
    err = nt.NoeticError("channel_timeout", "nothing arrived", channel_name="q", timeout=1.0)
    assert err.code == err.kind == "channel_timeout"
    assert err.channel_name == "q" and err.details == {"channel_name": "q", "timeout": 1.0}
    assert str(err) == "[channel_timeout] nothing arrived"
    assert is_noetic_error(err) and not is_noetic_config_error(err)


def test_config_error_has_a_full_sentence_hint() -> None:
    err = nt.NoeticConfigError("MISSING_API_KEY", "no key", hint="Set OPENROUTER_API_KEY.")
    assert isinstance(err, nt.NoeticError) and err.hint == "Set OPENROUTER_API_KEY."
    assert "Hint: Set OPENROUTER_API_KEY." in str(err) and is_noetic_config_error(err)


def test_errors_pickle_with_their_fields() -> None:
    err = pickle.loads(pickle.dumps(nt.NoeticConfigError("X", "m", hint="h", a=1)))
    assert (err.code, err.hint, err.a) == ("X", "h", 1)
    assert pickle.loads(pickle.dumps(cancelled("stop"))).reason == "stop"


def test_step_failed_keeps_the_cause() -> None:
    cause = ValueError("boom")
    err = nt.NoeticError("step_failed", "step 'x' failed", cause=cause, step_id="x")
    assert err.cause is cause and err.__cause__ is cause


def test_every_code_the_packages_raise_is_in_the_documented_lists() -> None:
    """RUNTIME_CODES and CONFIG_CODES name every code raised by a literal."""
    import re
    from pathlib import Path

    from noetic.errors import CONFIG_CODES, RUNTIME_CODES

    packages = Path(__file__).resolve().parents[2] / "packages"
    runtime, config = set(), set()
    for source in packages.rglob("*.py"):
        text = source.read_text()
        runtime |= set(re.findall(r'NoeticError\(\s*"([A-Za-z_]+)"', text))
        config |= set(re.findall(r'NoeticConfigError\(\s*"([A-Za-z_]+)"', text))
    assert len(runtime) > 10 and len(config) > 20  # the scan found the raise sites
    assert runtime - RUNTIME_CODES - CONFIG_CODES == set()
    assert config - CONFIG_CODES == set()
