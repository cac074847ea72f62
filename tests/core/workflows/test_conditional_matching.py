"""The `conditional` rule as docs/workflows.md states it: a route's `match` is a plain,
case-insensitive substring of the input's trimmed text — not equality, not a regular
expression — and an empty `match` is refused by validation."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest

pytestmark = pytest.mark.anyio


def _route(match: str) -> nt.Step:
    document = {
        "version": 1,
        "root": {
            "kind": "conditional",
            "id": "c",
            "routes": [{"match": match, "target": {"kind": "compute", "id": "hit", "expr": "'hit'"}}],
            "default": {"kind": "compute", "id": "miss", "expr": "'miss'"},
        },
    }
    return nt.workflow("w", document)


@pytest.mark.parametrize(
    ("match", "text", "output"),
    [
        ("rain", "Ukraine", "hit"),  # a substring, not a word or an equality
        ("RAIN", "  light rain  ", "hit"),  # both sides lower-cased, the input trimmed
        ("a.c", "abc", "miss"),  # not a regular expression: `.` is a dot
        ("a.c", "xa.cx", "hit"),
        ("^rain$", "rain", "miss"),
        (" rain", "rain", "miss"),  # the match is not trimmed
        (" rain", "light rain", "hit"),
    ],
)
async def test_a_match_is_a_literal_case_insensitive_substring(
    run_graph: Any, match: str, text: str, output: str
) -> None:
    assert await run_graph(_route(match), text) == output


def test_an_empty_match_is_refused() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        _route("")
    assert err.value.code == "WORKFLOW_VALIDATION_FAILED"
    assert "routes[0].match" in err.value.message
