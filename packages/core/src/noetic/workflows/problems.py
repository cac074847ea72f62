"""How a workflow document's problems are reported: each one with its JSON path and a code.

Loading and checking a document collect every problem they find instead of stopping at the
first, so `noetic validate` can print them all and `nt.workflow` can raise them together. A
path is written JSONPath-style from the document root (`$.root.steps[1].body.expr`); a node
reached through a named sub-workflow is written `$.root.steps[0] > workflows['b'] $.root`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from noetic.errors import NoeticConfigError

__all__ = ["ROOT", "Problem", "child_path", "index_path", "raise_problems"]

#: The path of the document itself.
ROOT = "$"
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def child_path(path: str, key: str) -> str:
    """The path of member `key` under `path` (`$.root`, `$.customItems['my-item']`)."""
    if _IDENTIFIER.match(key):
        return f"{path}.{key}"
    return f"{path}[{key!r}]"


def index_path(path: str, index: int) -> str:
    """The path of element `index` of the array at `path`."""
    return f"{path}[{index}]"


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: where it is, its error code, and what to change."""

    path: str
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: [{self.code}] {self.message}"


_HINTS = {
    "WORKFLOW_VALIDATION_FAILED": "Fix the document so it matches the published schema "
    "(`noetic schema`) and stays within the workflow limits; `noetic validate DOC` lists every problem.",
    "UNSUPPORTED_NODE_KIND": "Replace the node with a supported kind: compute (JSONata) instead of a "
    "code-string runCode, a loop instead of schedule; acp-agent steps are not available in Python.",
    "UNKNOWN_NODE_KIND": "Use one of the node kinds in the published schema (`noetic schema`).",
    "UNKNOWN_UNTIL_PREDICATE": "Use one of the until kinds in the published schema (`noetic schema`).",
    "UNKNOWN_TOOL_REFERENCE": "Pass the tool to nt.workflow(tools=[...]) under the name the document uses.",
    "UNKNOWN_LAYER_REFERENCE": "Pass the layer to nt.workflow(layers={name: layer}) or install the plugin "
    "that registers it.",
    "UNKNOWN_WORKFLOW_REFERENCE": "Pass the named document to nt.workflow(workflows={name: document}).",
    "WORKFLOW_CYCLE": "A named sub-workflow may not reference itself, directly or through others; "
    "break the cycle or inline the document.",
    "UNKNOWN_CUSTOM_ITEM": "Declare the item in the node's or the document's customItems, pass it in "
    "nt.workflow(custom_items=...), or register it through register_custom_items.",
    "CUSTOM_ITEM_MISMATCH": "Give the document's declaration the same type as the custom_items= "
    "declaration of that name, or rename one of them.",
    "UNKNOWN_UI_LIBRARY_REFERENCE": "Remove the callModel node's output codec; OpenUI codecs are not "
    "available in Noetic for Python.",
    "INVALID_WORKFLOW_SOURCE": "Pass a dict, JSON text, or the path of a readable JSON file.",
    "INVALID_EXPRESSION": "Fix the JSONata expression; regular expressions and $eval are not available "
    "in workflow expressions.",
}


def raise_problems(problems: Sequence[Problem], *, what: str) -> None:
    """Raise one `NoeticConfigError` carrying every problem (nothing when there are none).

    The error's code is the problems' code when they share one, else
    `WORKFLOW_VALIDATION_FAILED`; `details["problems"]` lists them all.
    """
    if not problems:
        return
    codes = {p.code for p in problems}
    code = codes.pop() if len(codes) == 1 else "WORKFLOW_VALIDATION_FAILED"
    listed = "; ".join(str(p) for p in problems[:20])
    more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
    raise NoeticConfigError(
        code,
        f"{what} has {len(problems)} problem{'s' if len(problems) != 1 else ''}: {listed}{more}",
        hint=_HINTS.get(code, _HINTS["WORKFLOW_VALIDATION_FAILED"]),
        problems=list(problems),
        path=problems[0].path,
    )
