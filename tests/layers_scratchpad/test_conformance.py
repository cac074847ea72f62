"""The scratchpad layer passes the shared context-layer conformance suite."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from noetic.testing.layer_conformance import LayerConformance
from noetic_layers_scratchpad.layer import Scratchpad, scratchpad


class TestThreadScratchpad(LayerConformance):
    @pytest.fixture
    def layer(self) -> Scratchpad:
        return scratchpad()

    @pytest.fixture
    def sample_inputs(self) -> Mapping[str, Any]:
        return {"update": {"goal": "ship", "steps": ["plan"]}}


class TestResourceScratchpadWithSchema(LayerConformance):
    @pytest.fixture
    def layer(self) -> Scratchpad:
        schema = {"type": "object", "properties": {"goal": {"type": "string"}}}
        return scratchpad(scope="resource", schema=schema)

    @pytest.fixture
    def sample_inputs(self) -> Mapping[str, Any]:
        return {"update": {"goal": "ship"}}
