"""What the adapter needs from an endpoint (Responses or Chat Completions), and what it gets.

An endpoint knows one wire format: it builds the request body from a `ModelRequest`, turns
stream events into deltas while accumulating the round (`RoundStream`), and reads a whole JSON
body (non-streamed calls) into the same `RoundResult`. It knows nothing about HTTP, retries,
errors or billing: a failure the provider reports is raised as `ProviderFailure` (with any
usage that came with it), a stream without its terminal event as `IncompleteStream`, and the
adapter turns both into `NoeticError`s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from noetic.items import Item
from noetic.model import ModelRequest, ReasoningDelta, TextDelta

from noetic_adapters_openrouter.params import CallParams
from noetic_adapters_openrouter.tool_names import ToolNames
from noetic_adapters_openrouter.usage import ProviderUsage

__all__ = ["Endpoint", "IncompleteStream", "ProviderFailure", "RoundResult", "RoundStream"]


@dataclass(frozen=True, slots=True)
class RoundResult:
    """A finished round: its items, reported usage (`None` if none came) and generation id."""

    items: tuple[Item, ...]
    usage: ProviderUsage | None
    generation_id: str | None
    served_model: str | None = None


class ProviderFailure(Exception):
    """The provider reported a failure; `payload` is its error object, `usage` any usage sent."""

    def __init__(self, payload: Mapping[str, Any], usage: ProviderUsage | None = None):
        super().__init__("the provider reported a failure")
        self.payload = payload
        self.usage = usage


class IncompleteStream(Exception):
    """The stream ended cleanly but without the event that completes a round."""


class RoundStream(Protocol):
    """Accumulates one streamed round."""

    @property
    def generation_id(self) -> str | None:
        """The generation id, once an event carried it."""
        ...

    def feed(self, event: Mapping[str, Any]) -> list[TextDelta | ReasoningDelta]:
        """Take one event; return the deltas to show. Raises `ProviderFailure`."""
        ...

    def finish(self) -> RoundResult:
        """The round after the stream's end. Raises `IncompleteStream` or `ProviderFailure`."""
        ...


class Endpoint(Protocol):
    """One OpenRouter API surface."""

    #: Path under the base URL, such as `/responses`.
    path: str

    def body(
        self, request: ModelRequest, names: ToolNames, params: CallParams, *, stream: bool
    ) -> dict[str, Any]:
        """The JSON request body."""
        ...

    def round_stream(self, names: ToolNames) -> RoundStream:
        """A fresh accumulator for a streamed round."""
        ...

    def parse(self, payload: Mapping[str, Any], names: ToolNames) -> RoundResult:
        """A whole (non-streamed) response body. Raises `ProviderFailure`."""
        ...
