"""JSON workflow documents: step trees as data, with JSONata expressions (docs/workflows.md).

`nt.workflow(id, document, ...)` (here `workflow`) hydrates a document into a step. The
document model is in `noetic.workflows.document`, loading in `.load`, limits in `.limits`,
expressions in `.expressions`, hydration in `.hydrate`, and the published JSON Schema in
`.schema` (`noetic schema` prints it). Importing this package stays cheap: JSONata is imported
the first time a document is hydrated.
"""

from __future__ import annotations

from noetic.workflows.workflow import WorkflowStep, workflow

__all__ = ["WorkflowStep", "workflow"]
