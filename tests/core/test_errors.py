"""The error model (semantics §2.9)."""

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
