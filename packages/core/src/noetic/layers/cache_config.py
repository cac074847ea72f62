"""`ContextCacheConfig`: the settings of prompt-cache anchoring (`AgentHarness(context_cache=...)`).

Every harness reads them, so they live apart from the anchoring machinery
(`noetic.layers.anchoring`), which is imported only once a call has layers to band.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from noetic.errors import NoeticConfigError

__all__ = ["ContextCacheConfig"]


class ContextCacheConfig(BaseModel):
    """Anchoring settings (`AgentHarness(context_cache=...)`, a dict or an instance; AN-9).

    `min_pressure_tokens` keeps small contexts from re-anchoring on the fixed cost of the
    update wrapper: updates count as pressure only above both it and the fraction.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)

    enabled: bool = True
    min_cached_tokens: int = 100
    min_epoch_assemblies: int = 2
    max_epoch_assemblies: int = 50
    delta_budget_fraction: float = 0.15
    auto_demote_churn: float = 0.5
    auto_promote_churn: float = 0.2
    min_churn_samples: int = 3
    churn_decay: float = 0.5
    min_pressure_tokens: int = 256

    @classmethod
    def of(cls, value: ContextCacheConfig | Mapping[str, Any] | None) -> ContextCacheConfig:
        """The config for a harness `context_cache=` value (None: the defaults)."""
        if value is None:
            return cls()
        if isinstance(value, ContextCacheConfig):
            return value
        try:
            return cls.model_validate(
                dict(value) if isinstance(value, Mapping) else value, from_attributes=True
            )
        except ValidationError as exc:
            raise NoeticConfigError(
                "INVALID_CONTEXT_CACHE",
                f"context_cache is not valid: {exc.errors(include_url=False)}",
                hint="Use e.g. context_cache={'enabled': False} or ContextCacheConfig(max_epoch_assemblies=20).",
            ) from None
