"""The Noetic run inspector: a local web page over a checkpoint store (`noetic inspect STORE`).

- `reading` — executions, step traces and item logs read through `noetic.durable`'s loaders,
  on a store opened read-only;
- `workflow_graph` — a JSON workflow document as nodes and edges;
- `live` — events pushed by a harness started with `inspect=` / `NOETIC_INSPECT`, relayed by SSE;
- `app` — the Starlette app (pages, JSON API, shipped assets, security headers);
- `command` — the `noetic inspect` command (registered through `register_commands`).
"""

from __future__ import annotations

from noetic_inspector.app import create_app
from noetic_inspector.reading import ReadOnlyStore, list_executions, load_execution, open_store
from noetic_inspector.workflow_graph import workflow_graph

__all__ = ["ReadOnlyStore", "create_app", "list_executions", "load_execution", "open_store", "workflow_graph"]
