"""A JSON workflow document as its control-flow graph: nodes and edges for the page to draw.

The document is validated by the workflow module's own loader (`load_document`, with its
size and depth limits), then walked with `iter_nodes` / `node_children`. Each node gets a
`row` (depth-first order) and a `column` (nesting depth) so the page lays it out without a
layout engine. Edges: `child` from a composite to what it contains, `next` between the steps
of a sequence, `repeat` from a loop's body back to the loop, `route` to a conditional's targets.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from noetic.workflows.document import (
    ConditionalNode,
    LoopNode,
    Node,
    SequenceNode,
    iter_nodes,
    node_children,
)
from noetic.workflows.load import load_document

__all__ = ["workflow_graph", "workflow_graph_of_file"]

#: What each node shows under its kind (a model, a tool, an expression, ...), shortened.
_DETAIL_FIELDS = ("model", "tool", "expr", "mode", "ref")
_DETAIL_CHARS = 30


def _detail(node: Node) -> str:
    for name in _DETAIL_FIELDS:
        value = getattr(node, name, None)
        if isinstance(value, str) and value:
            return value if len(value) <= _DETAIL_CHARS else value[: _DETAIL_CHARS - 1] + "…"
    return ""


def workflow_graph(source: Any) -> dict[str, Any]:
    """`{"nodes": [...], "edges": [...]}` of a workflow document (text, bytes or a mapping);
    an invalid document raises the loader's `NoeticConfigError`."""
    document = load_document(source)
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, str]] = []
    depth = {"$.root": 0}
    for row, (path, node) in enumerate(iter_nodes(document.root, "$.root")):
        nodes.append(
            {
                "path": path,
                "id": node.id or "",
                "kind": node.kind,
                "detail": _detail(node),
                "row": row,
                "column": depth[path],
            }
        )
        children = list(node_children(node, path))
        for child, _ in children:
            depth[child] = depth[path] + 1
        if isinstance(node, SequenceNode):
            if children:
                edges.append({"from": path, "to": children[0][0], "kind": "child"})
            edges.extend({"from": a[0], "to": b[0], "kind": "next"} for a, b in itertools.pairwise(children))
            continue
        kind = "route" if isinstance(node, ConditionalNode) else "child"
        edges.extend({"from": path, "to": child, "kind": kind} for child, _ in children)
        if isinstance(node, LoopNode):
            edges.append({"from": children[0][0], "to": path, "kind": "repeat"})
    return {"nodes": nodes, "edges": edges}


def workflow_graph_of_file(path: str | Path) -> dict[str, Any]:
    """The graph of the workflow document in file `path`."""
    return workflow_graph(Path(path).read_text(encoding="utf-8"))
