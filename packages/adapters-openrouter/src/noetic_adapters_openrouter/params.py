"""`call_model(params=...)` as OpenRouter request fields, shared by both endpoints.

Recognised names (snake_case, as in OpenRouter's API):

- `max_output_tokens` (alias `max_tokens`) — sent as `max_output_tokens` on Responses and
  `max_completion_tokens` on Chat Completions; also the output bound of the held-cost ceiling;
- `tool_choice` — `"auto"`, `"none"`, `"required"`, a tool name (Noetic's name; rewritten for
  the wire), or an endpoint-shaped dict sent as given;
- `extra_tools` — tool declarations sent exactly as given after the function tools: server
  tools such as `{"type": "openrouter:web_search", "parameters": {"max_uses": 1}}`, or a
  hand-written declaration carrying provider fields (e.g. `cache_control` on a tool).

Every other key (`temperature`, `top_p`, `reasoning`, `provider`, `include`, `models`,
`session_id`, `prompt_cache_options`, …) is copied into the request body unchanged, so new
OpenRouter options work without an adapter release; OpenRouter rejects what it does not know
with a 400 that names the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from noetic.errors import NoeticConfigError

__all__ = ["CallParams", "split_params"]

_TOOL_CHOICE_WORDS = frozenset({"auto", "none", "required"})


@dataclass(frozen=True, slots=True)
class CallParams:
    """The params of one call, split into the fields the adapter maps and the rest."""

    max_output_tokens: int | None = None
    tool_choice: str | Mapping[str, Any] | None = None
    extra_tools: tuple[Mapping[str, Any], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def tool_choice_name(self) -> str | None:
        """The tool name when `tool_choice` names one tool, else None."""
        choice = self.tool_choice
        return choice if isinstance(choice, str) and choice not in _TOOL_CHOICE_WORDS else None


def split_params(params: Mapping[str, Any]) -> CallParams:
    """Split `params` (see the module docstring); bad values of mapped names raise."""
    rest = dict(params)
    limit = rest.pop("max_output_tokens", None)
    alias = rest.pop("max_tokens", None)
    limit = limit if limit is not None else alias
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise _bad("max_output_tokens", limit, "a positive integer")
    choice = rest.pop("tool_choice", None)
    if choice is not None and not isinstance(choice, str | Mapping):
        raise _bad("tool_choice", choice, "'auto', 'none', 'required', a tool name or a dict")
    tools = rest.pop("extra_tools", ())
    if (
        not isinstance(tools, Sequence)
        or isinstance(tools, str)
        or not all(isinstance(t, Mapping) for t in tools)
    ):
        raise _bad("extra_tools", tools, "a list of dicts such as {'type': 'openrouter:web_search'}")
    return CallParams(max_output_tokens=limit, tool_choice=choice, extra_tools=tuple(tools), extra=rest)


def _bad(name: str, value: Any, expected: str) -> NoeticConfigError:
    return NoeticConfigError(
        "INVALID_STEP",
        f"call_model params[{name!r}] is {value!r}, which the OpenRouter adapter cannot send",
        hint=f"Give {name} as {expected}.",
    )
