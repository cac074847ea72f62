"""How large a document's JSON Schema is once its `$ref`s are followed.

A validator walks a schema with every `$ref` replaced by its target, so a 2 KB schema of six
levels of ten-way `anyOf` over `$defs` is a million subschemas to check, and one check of one
value takes minutes and gigabytes. `expanded_cost` measures that walk before anything is
validated: the number of schema objects it visits and how deeply they nest, each `$ref`
counted as a copy of what it points to. A `$ref` back into a schema that is already being
expanded (a recursive schema, such as a tree whose children are trees) counts once: a
recursive schema is walked only as deep as the value is, and the run's CPU budget bounds that.

A reference is resolved against its enclosing `$id` (or `id`) resource and against the whole
schema, and the larger target counts, so a misleading `$id` cannot make a schema look smaller
than it is. An `$id` of `"#name"` (drafts 04 to 07) names an anchor, as `$anchor` does. A
`$dynamicRef` counts as the largest schema carrying that `$dynamicAnchor`.

Written here because jsonschema offers no way to measure a schema without validating with it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

__all__ = ["SchemaCost", "expanded_cost"]

#: Keywords whose values are data, not schemas (the same list `document_schema` skips).
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
#: Keywords whose values map names to schemas: there a key such as `default` is a name, not a
#: keyword, and the schema under it is walked (the same list `document_schema` uses).
_NAME_MAP_KEYWORDS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
_RESOURCE_KEYWORDS = ("$id", "id")


@dataclass(frozen=True, slots=True)
class SchemaCost:
    """The expanded walk of a schema: schema objects visited and their deepest nesting
    (both stop growing once past the limits they were measured against)."""

    size: int
    depth: int


def _children(node: Any, names: bool) -> Iterator[tuple[Any, bool]]:
    """The objects and arrays directly inside `node` that may hold schemas, each with whether
    it maps names to schemas; `names` says that of `node` itself."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(value, Mapping | list) and (names or key not in _DATA_KEYWORDS):
                yield value, not names and key in _NAME_MAP_KEYWORDS
    elif isinstance(node, list):
        for value in node:
            if isinstance(value, Mapping | list):
                yield value, False


class _Index:
    """Where each object of the schema lives: its enclosing resource, and the anchors."""

    def __init__(self, root: Any):
        self.root = root
        self.resource: dict[int, Any] = {}
        self.anchors: dict[tuple[int, str], Any] = {}
        self.dynamic: dict[str, list[Any]] = {}
        stack: list[tuple[Any, bool, Any]] = [(root, False, root)]
        while stack:
            node, names, resource = stack.pop()
            if isinstance(node, Mapping) and not names:
                identifiers = [node.get(key) for key in _RESOURCE_KEYWORDS]
                if any(isinstance(name, str) and not name.startswith("#") for name in identifiers):
                    resource = node
                # Before 2019-09 an `$id` (draft-04: `id`) of "#name" is an anchor, not a resource.
                anchors = [
                    name[1:] for name in identifiers if isinstance(name, str) and name[1:2] and name[0] == "#"
                ]
                anchors += [
                    name
                    for name in (node.get("$anchor"), node.get("$dynamicAnchor"))
                    if isinstance(name, str)
                ]
                for name in anchors:
                    self.anchors.setdefault((id(resource), name), node)
                    self.anchors.setdefault((id(root), name), node)
                dynamic = node.get("$dynamicAnchor")
                if isinstance(dynamic, str):
                    self.dynamic.setdefault(dynamic, []).append(node)
            self.resource[id(node)] = resource
            stack.extend((child, child_names, resource) for child, child_names in _children(node, names))

    def targets(self, node: Mapping[str, Any]) -> list[Any]:
        """What the `$ref` and `$dynamicRef` of `node` may point to inside the schema."""
        found: list[Any] = []
        bases = [self.resource.get(id(node), self.root), self.root]
        for keyword in ("$ref", "$dynamicRef"):
            ref = node.get(keyword)
            if not isinstance(ref, str) or not ref.startswith("#"):
                continue  # a reference outside the schema is refused elsewhere
            fragment = unquote(ref[1:])
            if keyword == "$dynamicRef" and fragment and not fragment.startswith("/"):
                found.extend(self.dynamic.get(fragment, []))
            for base in bases:
                target = self._resolve(base, fragment)
                if target is not None:
                    found.append(target)
        return found

    def _resolve(self, base: Any, fragment: str) -> Any:
        if not fragment.startswith("/"):
            return base if not fragment else self.anchors.get((id(base), fragment))
        current = base
        for token in fragment[1:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(current, Mapping) and token in current:
                current = current[token]
            elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
                current = current[int(token)]
            else:
                return None
        return current if isinstance(current, Mapping | list) else None


def expanded_cost(schema: Any, max_size: int, max_depth: int) -> SchemaCost:
    """The size and depth of `schema` with its references expanded, measured without
    recursion; the walk stops as soon as either passes its limit, so it costs at most about
    `max_size` steps per schema object however the references multiply."""
    index = _Index(schema)
    done: dict[int, SchemaCost] = {}
    open_nodes: set[int] = set()
    # Each frame: the node, its remaining children (each with whether it maps names to schemas),
    # the size and depth gathered so far.
    frames: list[tuple[Any, Iterator[tuple[Any, bool]], list[int]]] = []

    def push(node: Any, names: bool) -> None:
        following = list(_children(node, names))
        if isinstance(node, Mapping) and not names:
            following.extend((target, False) for target in index.targets(node))
        open_nodes.add(id(node))
        frames.append((node, iter(following), [1, 1]))

    push(schema, False)
    while frames:
        node, remaining, gathered = frames[-1]
        child, child_names = next(remaining, (None, False))
        if child is not None:
            cost = done.get(id(child))
            if cost is None and id(child) in open_nodes:
                cost = SchemaCost(1, 1)  # a recursive reference
            if cost is None:
                if len(frames) > max_depth:
                    return SchemaCost(gathered[0], len(frames) + 1)
                push(child, child_names)
                continue
            gathered[0] += cost.size
            gathered[1] = max(gathered[1], cost.depth + 1)
            if gathered[0] > max_size or gathered[1] > max_depth:
                return SchemaCost(gathered[0], gathered[1])
            continue
        frames.pop()
        open_nodes.discard(id(node))
        finished = SchemaCost(gathered[0], gathered[1])
        done[id(node)] = finished
        if frames:
            parent = frames[-1][2]
            parent[0] += finished.size
            parent[1] = max(parent[1], finished.depth + 1)
            if parent[0] > max_size or parent[1] > max_depth:
                return SchemaCost(parent[0], parent[1])
        else:
            return finished
    return SchemaCost(0, 0)
