"""OpenTelemetry traces (noetic.tracing): the span tree mirrors the execution tree, model rounds
carry the GenAI conventions and Noetic's costs, content only when opted in, replayed steps are
marked, cancelled ones end in error; nothing is built when nothing records.

Spans are collected by the SDK's in-memory exporter (a test dependency only)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.durable import MemoryCheckpointStore
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from noetic.usage import RoundUsage
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class Traces:
    """A tracer provider whose finished spans are kept in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> Sequence[ReadableSpan]:
        return self.exporter.get_finished_spans()

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        (span,) = self.named(name)
        return span

    def parent_of(self, span: ReadableSpan) -> ReadableSpan | None:
        if span.parent is None:
            return None
        return next(s for s in self.spans if s.context.span_id == span.parent.span_id)

    def tree(self) -> list[str]:
        """Every span as an indented line, children in start order."""
        by_parent: dict[int | None, list[ReadableSpan]] = {}
        for s in self.spans:
            by_parent.setdefault(s.parent.span_id if s.parent else None, []).append(s)

        def walk(parent: int | None, depth: int) -> Iterator[str]:
            for s in sorted(by_parent.get(parent, []), key=lambda s: s.start_time or 0):
                yield "  " * depth + s.name
                yield from walk(s.context.span_id, depth + 1)

        return list(walk(None, 0))


@pytest.fixture
def traces() -> Iterator[Traces]:
    t = Traces()
    yield t
    t.provider.shutdown()


class Sum(BaseModel):
    a: int
    b: int


def add(args: Sum) -> int:
    return args.a + args.b


ADD = nt.tool("add", description="Add two numbers.", input=Sum, execute=add)


def tool_model() -> ScriptedModel:
    return ScriptedModel(
        [
            tool_call_reply(
                "add",
                {"a": 2, "b": 3},
                usage=RoundUsage(input_tokens=10, output_tokens=4, cached_tokens=6),
                cost=0.002,
            ),
            text_reply(
                "It is 5.",
                usage=RoundUsage(input_tokens=20, output_tokens=3, cache_write_tokens=2),
                cost=0.001,
            ),
        ]
    )


async def test_a_tool_calling_run_is_one_tree_with_genai_attributes(traces: Traces) -> None:
    graph = nt.sequence("turn", [nt.run_code("prepare", lambda v: v), nt.call_model("answer", tools=[ADD])])
    async with nt.AgentHarness(
        "calc", agent_graph=graph, model=tool_model(), tracer_provider=traces.provider
    ) as h:
        response = await h.run("What is 2 + 3?")
    assert response.text == "It is 5."
    assert traces.tree() == [
        "invoke_agent calc",
        "  sequence turn",
        "    run_code prepare",
        "    call_model answer",
        "      chat scripted",
        "      execute_tool add",
        "      chat scripted",
    ]
    assert len({s.context.trace_id for s in traces.spans}) == 1
    first, second = traces.named("chat scripted")
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "noetic.scripted",
        "gen_ai.provider.name": "noetic.scripted",
        "gen_ai.request.model": "scripted",
        "gen_ai.response.model": "scripted",
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 4,
        "gen_ai.usage.cache_read.input_tokens": 6,
        "noetic.cost": 0.002,
        "noetic.billed_cost": 0.002,
        "noetic.held_cost": 0.0,
        "noetic.round": 0,
        "noetic.step.id": "answer",
    }
    assert (second.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    assert (second.attributes or {})["gen_ai.usage.cache_creation.input_tokens"] == 2
    assert (second.attributes or {})["noetic.round"] == 1
    tool = traces.one("execute_tool add")
    assert (tool.attributes or {})["gen_ai.tool.name"] == "add"
    assert (tool.attributes or {})["gen_ai.operation.name"] == "execute_tool"
    root = traces.one("invoke_agent calc")
    attributes = dict(root.attributes or {})
    assert attributes["gen_ai.agent.name"] == "calc"
    assert attributes["noetic.execution.id"] == response.execution_id
    assert attributes["noetic.cost"] == pytest.approx(0.003)
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (30, 7)
    step = traces.one("call_model answer")
    assert (step.attributes or {})["noetic.step.path"] == "/turn#0/answer#0"
    assert all(s.status.status_code is StatusCode.UNSET for s in traces.spans)


async def test_content_is_recorded_only_when_opted_in(traces: Traces) -> None:
    graph = nt.call_model("answer", tools=[ADD], instructions="Be exact.")
    async with nt.AgentHarness(
        "calc", agent_graph=graph, model=tool_model(), tracer_provider=traces.provider
    ) as h:
        await h.run("What is 2 + 3?")
    content_keys = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
    content_keys |= {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
    assert not any(content_keys & set(s.attributes or {}) for s in traces.spans)
    traces.exporter.clear()
    async with nt.AgentHarness(
        "calc", agent_graph=graph, model=tool_model(), tracer_provider=traces.provider, trace_content=True
    ) as h:
        await h.run("What is 2 + 3?")
    first = traces.named("chat scripted")[0].attributes or {}
    assert json.loads(str(first["gen_ai.input.messages"]))[-1]["content"][0]["text"] == "What is 2 + 3?"
    assert json.loads(str(first["gen_ai.output.messages"]))[0]["name"] == "add"
    assert first["gen_ai.system_instructions"] == "Be exact."
    tool = traces.one("execute_tool add").attributes or {}
    assert json.loads(str(tool["gen_ai.tool.call.arguments"])) == {"a": 2, "b": 3}
    assert tool["gen_ai.tool.call.result"] == "5"


async def test_spawn_and_parallel_paths_get_their_own_context_spans(traces: Traces) -> None:
    seen: dict[str, Any] = {}

    def grab(name: str) -> Any:
        def code(value: Any, ctx: nt.Context) -> Any:
            seen[name] = ctx.span.get_span_context().span_id
            return value

        return code

    graph = nt.sequence(
        "turn",
        [
            nt.spawn("helper", nt.run_code("inside", grab("spawned"))),
            nt.in_parallel("fan", [nt.run_code("left", grab("left")), nt.run_code("right", grab("right"))]),
        ],
    )
    async with nt.AgentHarness("h", agent_graph=graph, tracer_provider=traces.provider) as h:
        await h.run("x")
    tree = traces.tree()
    assert tree[:5] == [
        "invoke_agent h",
        "  sequence turn",
        "    spawn helper",
        "      context spawn helper",
        "        run_code inside",
    ]
    assert tree[5] == "    in_parallel fan"
    assert sorted(tree[6:]) == sorted(
        [
            "      context path 0 left",
            "        run_code left",
            "      context path 1 right",
            "        run_code right",
        ]
    )
    spawned = traces.one("context spawn helper")
    assert seen["spawned"] == spawned.context.span_id  # `ctx.span` is the child's own span
    assert seen["left"] == traces.one("context path 0 left").context.span_id
    assert traces.parent_of(traces.one("run_code right")) == traces.one("context path 1 right")
    assert (spawned.attributes or {})["noetic.context.depth"] == 1


async def test_workflow_nodes_nest_under_the_workflow_step(traces: Traces) -> None:
    document = {
        "version": 1,
        "root": {
            "kind": "inParallel",
            "id": "panel",
            "mode": "all",
            "paths": [
                {"kind": "callModel", "id": "first", "instructions": "One."},
                {"kind": "callModel", "id": "second", "instructions": "Two."},
            ],
        },
    }
    flow = nt.workflow("panel-flow", document)
    model = ScriptedModel([text_reply("a"), text_reply("b")])
    async with nt.AgentHarness("wf", agent_graph=flow, model=model, tracer_provider=traces.provider) as h:
        await h.run("go")
    workflow = traces.one(f"{flow.kind} panel-flow")
    panel = traces.one("in_parallel panel")
    assert traces.parent_of(panel) == workflow
    for model_step in ("call_model first", "call_model second"):
        step = traces.one(model_step)
        path = traces.parent_of(step)
        assert path is not None and path.name.startswith("context path")
        assert traces.parent_of(path) == panel
        (chat,) = [s for s in traces.named("chat scripted") if traces.parent_of(s) == step]
        assert chat.context.trace_id == workflow.context.trace_id


async def test_loop_iterations_are_spans_with_their_verdicts(traces: Traces) -> None:
    graph = nt.loop("review", [nt.call_model("draft")], until=nt.until.max_steps(2))
    model = ScriptedModel([text_reply("one"), text_reply("two")])
    async with nt.AgentHarness("h", agent_graph=graph, model=model, tracer_provider=traces.provider) as h:
        await h.run("go")
    assert traces.tree() == [
        "invoke_agent h",
        "  loop review",
        "    iteration 1",
        "      call_model draft",
        "        chat scripted",
        "    iteration 2",
        "      call_model draft",
        "        chat scripted",
    ]
    verdicts = [
        dict(e.attributes or {}) for name in ("iteration 1", "iteration 2") for e in traces.one(name).events
    ]
    assert verdicts == [
        {"noetic.loop.stop": False},
        {"noetic.loop.stop": True, "noetic.loop.reason": "Reached max steps (2)"},
    ]


async def test_a_cancelled_step_ends_in_error_with_the_reason(traces: Traces) -> None:
    started = anyio.Event()

    async def wait_forever(value: Any, ctx: nt.Context) -> Any:
        started.set()
        await ctx.wait_aborted()  # abort is cooperative: user code ends on its own (CTX-17)
        return value

    graph = nt.sequence("turn", [nt.run_code("slow", wait_forever)])
    h = nt.AgentHarness("h", agent_graph=graph, tracer_provider=traces.provider)

    async def stop() -> None:
        await started.wait()
        h.abort(reason="the user pressed stop")

    async with h, anyio.create_task_group() as tg:
        tg.start_soon(stop)
        with pytest.raises(nt.NoeticError) as err:
            await h.run("x")
    assert err.value.code == "cancelled"
    for name in ("run_code slow", "sequence turn", "invoke_agent h"):
        status = traces.one(name).status
        assert status.status_code is StatusCode.ERROR, name
        assert status.description == "cancelled: the user pressed stop", name


async def test_a_failed_step_carries_its_error_code(traces: Traces) -> None:
    def broken(value: Any) -> Any:
        raise ValueError("no")

    async with nt.AgentHarness(
        "h", agent_graph=nt.run_code("broken", broken), tracer_provider=traces.provider
    ) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("x")
    span = traces.one("run_code broken")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.status.description or "").startswith(
        "step_failed: step 'broken' (run_code) raised ValueError"
    )
    assert (span.attributes or {})["error.type"] == "step_failed"


async def test_replayed_steps_are_marked_and_add_no_billed_cost(traces: Traces) -> None:
    crash = {"fail": True}

    def flaky(value: Any) -> Any:
        if crash["fail"]:
            raise RuntimeError("crash")
        return value

    model = ScriptedModel([text_reply("A", cost=0.01), text_reply("B", cost=0.02)])
    graph = nt.sequence("g", [nt.call_model("a"), nt.run_code("crash", flaky), nt.call_model("b")])
    async with nt.AgentHarness(
        "t", agent_graph=graph, model=model, storage=MemoryCheckpointStore(), tracer_provider=traces.provider
    ) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("hi", execution_id="e1")
        traces.exporter.clear()
        crash["fail"] = False
        await h.resume("e1")
    assert traces.tree() == [
        "invoke_agent t",
        "  sequence g",
        "    call_model a",
        "    run_code crash",
        "    call_model b",
        "      chat scripted",
    ]
    replayed = traces.one("call_model a")
    assert (replayed.attributes or {})["noetic.replayed"] is True
    assert "noetic.replayed" not in (traces.one("call_model b").attributes or {})
    root = traces.one("invoke_agent t").attributes or {}
    assert root["noetic.resumed"] is True
    assert root["noetic.billed_cost"] == pytest.approx(0.02)
    assert root["noetic.cost"] == pytest.approx(0.03)


async def test_tracing_off_or_unconfigured_builds_no_tracer(traces: Traces) -> None:
    tracers: list[Any] = []

    def grab(value: Any, ctx: nt.Context) -> Any:
        tracers.append(ctx._exec.tracer)
        assert not ctx.span.is_recording()
        ctx.span.set_attribute("ignored", 1)  # a non-recording span takes attributes silently
        return value

    async with nt.AgentHarness(
        "off", agent_graph=nt.run_code("g", grab), tracer_provider=traces.provider, tracing=False
    ) as h:
        await h.run("x")
    async with nt.AgentHarness("global", agent_graph=nt.run_code("g", grab)) as h:
        await h.run("x")  # no global provider was set in this process: the API's proxy
    assert tracers == [None, None]
    assert traces.spans == ()


def test_two_lines_send_spans_to_the_global_provider() -> None:
    """The user's path: `set_tracer_provider` once, no harness argument (a fresh process,
    since the global provider can be set only once)."""
    script = textwrap.dedent(
        """
        import anyio
        import noetic as nt
        from noetic.testing import ScriptedModel, text_reply
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

        async def main():
            model = ScriptedModel([text_reply("hello")])
            async with nt.AgentHarness("bot", agent_graph=nt.call_model("answer"), model=model) as h:
                await h.run("hi")

        anyio.run(main)
        print(sorted(s.name for s in exporter.get_finished_spans()))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(sorted(["invoke_agent bot", "call_model answer", "chat scripted"]))


async def test_a_sampled_out_execution_opens_no_further_spans() -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    tracers: list[Any] = []

    def grab(value: Any, ctx: nt.Context) -> Any:
        tracers.append(ctx._exec.tracer)
        return value

    provider = TracerProvider(sampler=ALWAYS_OFF)
    async with nt.AgentHarness("h", agent_graph=nt.run_code("g", grab), tracer_provider=provider) as h:
        await h.run("x")
    assert tracers == [None]


async def test_a_layered_round_records_how_its_window_was_composed(traces: Traces) -> None:
    from noetic.layers import ContextLayer, LayerContext

    class Notes(ContextLayer):
        id = "notes"
        slot = 100

        async def recall(self, ctx: LayerContext, budget: float) -> str:
            return "Remember: the user prefers metric units."

    model = ScriptedModel([text_reply("ok")])
    async with nt.AgentHarness(
        "h", agent_graph=nt.call_model("a"), model=model, layers=[Notes()], tracer_provider=traces.provider
    ) as h:
        response = await h.run("question")
    usage = response.last_layer_usage
    assert usage is not None
    attributes = traces.one("chat scripted").attributes or {}
    assert attributes["noetic.layers.ids"] == ("notes",)
    assert attributes["noetic.layers.tokens"] == tuple(e.token_count for e in usage.layers)
    assert attributes["noetic.layers.placement"] == tuple(e.placement for e in usage.layers)
    assert attributes["noetic.layers.total_tokens"] == usage.total_used_tokens


async def test_a_turn_is_a_child_of_the_callers_span(traces: Traces) -> None:
    """The harness runs turns in its own task; the caller's current span still parents them."""
    tracer = traces.provider.get_tracer("app")
    async with nt.AgentHarness(
        "h", agent_graph=nt.run_code("echo", lambda v: v), tracer_provider=traces.provider
    ) as h:
        with tracer.start_as_current_span("handle request"):
            await h.run("x")
        await h.run("y")  # no caller span: a trace of its own
    request = traces.one("handle request")
    first, second = traces.named("invoke_agent h")
    assert traces.parent_of(first) == request
    assert first.context.trace_id == request.context.trace_id
    assert second.parent is None


def test_importing_noetic_does_not_import_opentelemetry() -> None:
    """OpenTelemetry (whose import scans every installed distribution's entry points) loads
    with the first harness, so `import noetic` and CLI commands that run no agent stay fast."""
    code = "import sys, noetic, noetic.cli; print(any(m.startswith('opentelemetry') for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_provider_set_after_a_turn_traces_the_next_turn() -> None:
    """Executions ask for the global provider each time: one set after an untraced turn (the
    API's proxy then) is used by the next turn (a fresh process: it can be set only once)."""
    script = textwrap.dedent(
        """
        import anyio
        import noetic as nt
        from noetic.testing import ScriptedModel, text_reply
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()

        async def main():
            model = ScriptedModel([text_reply("one"), text_reply("two"), text_reply("three")])
            async with nt.AgentHarness("bot", agent_graph=nt.call_model("answer"), model=model) as h:
                await h.run("hi", thread_id="a")
                await h.run("hi", thread_id="b")
                provider = TracerProvider()
                provider.add_span_processor(SimpleSpanProcessor(exporter))
                trace.set_tracer_provider(provider)
                await h.run("hi", thread_id="c")

        anyio.run(main)
        print(sorted(s.name for s in exporter.get_finished_spans()))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(sorted(["invoke_agent bot", "call_model answer", "chat scripted"]))
