"""`nt.workflow`: a JSON workflow document as one step.

    flow = nt.workflow("drain", "examples/drain.json")
    async with nt.AgentHarness("jobs", agent_graph=flow) as h:
        print((await h.run({"n": 3})).output)        # {'n': 0}

The document (a dict, JSON text, a path, or a `WorkflowDocument`) is validated, checked against
its limits and hydrated into ordinary steps when the step is built, so every problem — schema,
limits, expressions, unknown tools, named workflows and custom items, ref cycles — is raised
then, as one `NoeticConfigError` listing each problem's path. Names left to the harness's plugin
registries (layers not passed in `layers=`, custom items declared nowhere in the document or in
`custom_items=`) are checked when the step first runs under a harness, before any node runs.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from noetic.steps.base import Step, execute
from noetic.workflows.problems import Problem, raise_problems

if TYPE_CHECKING:
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context
    from noetic.registry import Registries
    from noetic.tools import Tool
    from noetic.workflows.document import WorkflowDocument
    from noetic.workflows.hydrate import Deferred
    from noetic.workflows.limits import WorkflowLimits
    from noetic.workflows.load import DocumentSource

__all__ = ["WorkflowStep", "unregistered", "workflow"]


class WorkflowStep(Step):
    """A hydrated workflow document: runs `root` on the step input."""

    kind = "workflow"
    __slots__ = ("_checked", "deferred", "document", "limits", "root")

    def __init__(
        self,
        id: str,
        document: WorkflowDocument,
        root: Step,
        *,
        deferred: Sequence[Deferred] = (),
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        limits: WorkflowLimits | None = None,
    ):
        from noetic.workflows.limits import WorkflowLimits

        super().__init__(id, custom_items=custom_items)
        self.document = document
        self.root = root
        self.limits = limits or WorkflowLimits()
        self.deferred = tuple(deferred)
        self._checked: weakref.ref[Registries] | None = None

    def children(self) -> tuple[Step, ...]:
        return (self.root,)

    async def run(self, input: Any, ctx: Context) -> Any:
        from noetic.workflows.run_budget import run_budget

        if self.deferred:
            self._check_registered(ctx._exec.harness.plugin_manager.registries)
        with run_budget(self.limits) as budget:
            output = await execute(self.root, input, ctx)
            if budget.breach is not None:
                raise budget.breach  # a node that settles or retries swallowed it
            return output

    def _check_registered(self, registries: Registries) -> None:
        """Raise `UNKNOWN_CUSTOM_ITEM` / `UNKNOWN_LAYER_REFERENCE` for deferred names the
        harness's registries do not have (once per registries object)."""
        if self._checked is not None and self._checked() is registries:
            return
        raise_problems(unregistered(self.deferred, registries), what=f"workflow {self.id!r}")
        self._checked = weakref.ref(registries)


def unregistered(deferred: Sequence[Deferred], registries: Registries) -> list[Problem]:
    """A problem for each deferred name (custom item, layer) that `registries` lacks."""
    problems = []
    for name in deferred:
        if name.kind == "custom item" and name.name not in registries.custom_items:
            problems.append(
                Problem(
                    name.path,
                    "UNKNOWN_CUSTOM_ITEM",
                    f"custom item {name.name!r} is declared nowhere in the document, in "
                    "custom_items= or by a plugin",
                )
            )
        elif name.kind == "layer" and name.name not in registries.context_layers:
            known = ", ".join(registries.context_layers.names()) or "none"
            problems.append(
                Problem(
                    name.path,
                    "UNKNOWN_LAYER_REFERENCE",
                    f"layer {name.name!r} was not passed in layers= and no plugin registers "
                    f"it (registered: {known}). Pass it in layers=, have a plugin register it, or "
                    "leave the name out; a document that names a layer is portable only to hosts "
                    "that all supply it",
                )
            )
    return problems


def workflow(
    id: str,
    document: DocumentSource,
    *,
    tools: Sequence[Tool] = (),
    layers: Mapping[str, Any] | Sequence[Any] = (),
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    workflows: Mapping[str, DocumentSource] | None = None,
    limits: WorkflowLimits | None = None,
) -> WorkflowStep:
    """A step that runs a JSON workflow document; see the module docstring.

    `tools` are the tools `callModel` and `invokeTool` nodes name; `layers` the context layers
    `spawn` and `withContext` nodes name (a `{name: layer}` mapping, or layer objects keyed by
    their `id`; names not given here are looked up in the plugin registry); `custom_items` code-side item declarations (they win over a document
    declaration of the same name and type); `workflows` the documents `subflow` nodes `ref`.
    """
    # Hydration compiles JSONata; importing it here keeps `import noetic` fast.
    from noetic.workflows.hydrate import Bindings, Hydrator
    from noetic.workflows.limits import WorkflowLimits
    from noetic.workflows.load import load_document

    limits = limits or WorkflowLimits()
    doc = load_document(document, limits, what=f"workflow {id!r}")
    layer_map = dict(layers) if isinstance(layers, Mapping) else {str(getattr(x, "id", x)): x for x in layers}
    bindings = Bindings(
        tools={t.name: t for t in tools},
        layers=layer_map,
        custom_items=dict(custom_items or {}),
        workflows=dict(workflows or {}),
        limits=limits,
    )
    hydrator = Hydrator(bindings)
    root = hydrator.document(doc)
    raise_problems(hydrator.problems, what=f"workflow {id!r}")
    assert root is not None
    return WorkflowStep(
        id, doc, root, deferred=hydrator.deferred, custom_items=bindings.custom_items, limits=limits
    )
