"""A one-turn agent on a SQLite file, run as its own process by test_restart.py.

`python pad_agent.py BACKEND DB write|read THREAD RESOURCE`: `write` puts notes in a
thread-scoped and a resource-scoped scratchpad, `read` prints what both hold as JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import noetic as nt
from noetic_layers_scratchpad.layer import scratchpad


async def main(db: str, command: str, thread: str, resource: str) -> None:
    seen: dict[str, Any] = {}

    async def step(value: Any, ctx: nt.Context) -> Any:
        thread_pad, resource_pad = ctx.context["scratchpad"], ctx.context["account"]
        if command == "write":
            await thread_pad.update({"todo": ["buy milk"]})
            await resource_pad.update({"plan": "pro"})
        seen.update(thread=thread_pad.snapshot, resource=resource_pad.snapshot)
        return value

    account = scratchpad(scope="resource", schema={"type": "object"})
    account.id = "account"
    harness = nt.AgentHarness(
        "pad",
        agent_graph=nt.run_code("pad", step),
        layers=[scratchpad(schema={"type": "object"}), account],
        storage=f"sqlite:///{db}",
    )
    async with harness:
        await harness.run("go", thread_id=thread, resource_id=resource)
    print(json.dumps(seen))


if __name__ == "__main__":
    backend, db, command, thread, resource = sys.argv[1:6]
    anyio.run(main, db, command, thread, resource, backend=backend)
