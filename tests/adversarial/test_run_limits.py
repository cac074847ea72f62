"""Document-wide bounds: nesting cannot multiply fan-out paths or loop iterations without end."""

from __future__ import annotations

NESTED_FAN_OUT = """
import noetic as nt
from noetic.testing import ScriptedModel
from noetic.workflows.limits import WorkflowLimits

def level(n):
    inner = {"kind": "compute", "id": f"leaf{n}", "expr": "$"} if n == 0 else level(n - 1)
    return {
        "kind": "sequence",
        "id": f"s{n}",
        "steps": [
            {"kind": "compute", "id": f"make{n}", "expr": "[1..100]"},
            {"kind": "inParallel", "id": f"fan{n}", "mode": "all", "each": inner, "merge": "concat"},
        ],
    }

async def main():
    doc = {"version": 1, "root": level(2)}
    flow = nt.workflow("w", doc, limits=WorkflowLimits(max_depth=10))
    async with nt.AgentHarness("t", agent_graph=flow, model=ScriptedModel.echo()) as h:
        return len((await h.run("")).output)
"""


def test_three_nested_fan_outs_fail_early_instead_of_making_a_million_paths(child):
    message = child.run(NESTED_FAN_OUT, wall_clock=60, memory_mb=512).raised("LIMIT_EXCEEDED")
    assert "max_paths" in message


def test_nested_loops_are_bounded_in_total(child):
    outcome = child.run(
        """
        import noetic as nt
        from noetic.testing import ScriptedModel
        from noetic.workflows.limits import WorkflowLimits

        def forever(body):
            return {"kind": "loop", "id": f"l{body['id']}", "body": body,
                    "until": {"kind": "never"}, "maxIterations": "infinity"}

        async def main():
            doc = {"version": 1, "root": forever({"kind": "compute", "id": "c", "expr": "$"})}
            flow = nt.workflow("w", doc, limits=WorkflowLimits(max_iterations=2000))
            async with nt.AgentHarness("t", agent_graph=flow, model=ScriptedModel.echo()) as h:
                return (await h.run("")).output
        """,
        wall_clock=60,
    )
    assert "max_iterations" in outcome.raised("LIMIT_EXCEEDED")
