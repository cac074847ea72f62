"""`LayerConformance`: the pytest suite every context layer package runs against its layer.

Adopt it in a few lines — subclass it and override the `layer` fixture with one that returns a
fresh layer; optionally override `sample_inputs` with an input for each provided function:

    from noetic.testing.layer_conformance import LayerConformance

    class TestMyLayer(LayerConformance):
        @pytest.fixture
        def layer(self): return my_layer()

        @pytest.fixture
        def sample_inputs(self): return {"remember": {"fact": "the sky is blue"}}

The tests are `@pytest.mark.anyio` coroutines, so they run on whatever `anyio_backend` your
conftest selects. They check the contract (LY-13: id, slot, scope, budget, placement; hooks that
are functions, async or plain; `provides` well formed) and run the layer for real in an
`AgentHarness` on a scripted model — two turns on one thread, a spawn, parallel paths, its
provided functions called from code and by the model, a tool round (so `on_item_append`,
`project_history`, `after_model_call` and `before_tool_call` run), a spawn child running while
its parent stores (`on_parent_update`), two harnesses sharing a checkpoint store, and
`harness.cancel` — failing on any hook error the runtime had to recover from (the runtime logs
those on the `noetic.layers` logger, including a hook returning the wrong type) and on state
that is not plain JSON data (state must survive a checkpoint). A guard that blocks the tool or
denies the response is behaving, not failing.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

import noetic as nt
from noetic.durable.memory import MemoryCheckpointStore
from noetic.items import FunctionCallOutputItem
from noetic.layers.checkpoint_state import LAYER_STATE_PREFIX
from noetic.layers.contract import HOOK_NAMES, LayerFunction, validate_layer
from noetic.layers.layer_set import LayerSet
from noetic.layers.storage import scope_key
from noetic.steps.base import execute
from noetic.testing.scripted import ScriptedModel, text_reply, tool_call_reply

__all__ = ["LayerConformance"]


def _hook_failures(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "noetic.layers" and r.levelno >= logging.WARNING
    ]


async def _echo(args: dict[str, Any]) -> Any:
    return args


#: A harmless tool the model calls in the tool-round check.
ECHO_TOOL = nt.tool(
    "conformance_echo",
    description="Echo the arguments.",
    input={"type": "object", "properties": {"text": {"type": "string"}}},
    execute=_echo,
)


async def _run_allowing_a_deny(harness: nt.AgentHarness, text: str) -> None:
    """Run one turn; a layer denying the response (`steering_denied`) is a valid outcome."""
    try:
        await harness.run(text)
    except nt.NoeticError as exc:
        if exc.code != "steering_denied":
            raise


def _export(ctx: nt.Context) -> dict[str, Any]:
    """The execution's layer states, proven to be plain JSON."""
    state = ctx._exec.layers.export_state()
    json.dumps(state)  # raises TypeError for anything a checkpoint could not hold
    return state


class LayerConformance:
    """The shared context-layer checks; subclass and override `layer` (module docstring)."""

    @pytest.fixture
    def layer(self) -> Any:
        """A fresh layer; subclasses must override this fixture."""
        raise NotImplementedError("override the `layer` fixture to return the layer under test")

    @pytest.fixture
    def sample_inputs(self) -> Mapping[str, Any]:
        """A valid input for each provided function, by name (override to exercise them)."""
        return {}

    # --- the contract ---------------------------------------------------------------------

    def test_contract_is_valid(self, layer: Any) -> None:
        """LY-13: a non-empty id, a finite slot, a known scope, a sane budget and placement."""
        validate_layer(layer)
        assert LayerSet([layer]).specs == (layer,)

    def test_hooks_are_functions(self, layer: Any) -> None:
        """Every lifecycle hook the layer defines is an `async def` or a plain `def` (dispose
        may take no ctx) — not a generator function, whose generator the runtime would take for
        the hook's result."""
        defined = [name for name in HOOK_NAMES if callable(getattr(layer, name, None))]
        assert defined, "a layer without hooks contributes nothing"
        for name in defined:
            hook = getattr(layer, name)
            generator = inspect.isgeneratorfunction(hook) or inspect.isasyncgenfunction(hook)
            assert not generator, f"{name} must be an async def or a plain def, not a generator"

    def test_provides_are_well_formed(self, layer: Any, sample_inputs: Mapping[str, Any]) -> None:
        """Function entries have an object input schema; sample inputs validate against them."""
        provides = getattr(layer, "provides", None) or {}
        for name, decl in provides.items():
            if isinstance(decl, LayerFunction):
                assert decl.input_schema.get("type") == "object", f"{name}: tools take a JSON object"
                assert inspect.iscoroutinefunction(decl.execute), f"{name} must be async"
                if name in sample_inputs:
                    decl.validate(sample_inputs[name])
        unknown = set(sample_inputs) - set(provides)
        assert not unknown, f"sample_inputs names functions the layer does not provide: {unknown}"

    # --- running it -----------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_two_turns_on_one_thread(self, layer: Any, caplog: pytest.LogCaptureFixture) -> None:
        """Init, recall, store, on_complete and dispose run twice without a recovered error; the
        usage snapshot lists the layer's contribution, sorted by id, and adds up (LU-1)."""
        caplog.set_level(logging.WARNING, logger="noetic.layers")
        states: list[dict[str, Any]] = []

        def capture(value: Any, ctx: nt.Context) -> Any:
            states.append(_export(ctx))
            return value

        graph = nt.sequence("g", [nt.call_model("answer"), nt.run_code("capture", capture)])
        async with nt.AgentHarness(
            "conformance", agent_graph=graph, model=ScriptedModel.echo(), layers=[layer]
        ) as h:
            for text in ("first turn", "second turn"):
                response = await h.run(text)
                usage = response.last_layer_usage
                assert usage is not None
                ids = [e.layer_id for e in usage.layers]
                assert ids == sorted(ids)
                assert usage.total_used_tokens == (
                    sum(e.token_count for e in usage.layers)
                    + usage.system_prompt_tokens
                    + usage.tools_tokens
                    + usage.history_tokens
                )
        assert len(states) == 2
        assert not _hook_failures(caplog)

    @pytest.mark.anyio
    async def test_children_spawn_and_parallel(self, layer: Any, caplog: pytest.LogCaptureFixture) -> None:
        """on_spawn / on_return across a spawn and two parallel paths run without errors."""
        caplog.set_level(logging.WARNING, logger="noetic.layers")
        graph = nt.sequence(
            "g",
            [
                nt.spawn("child", nt.call_model("inner")),
                nt.in_parallel("fan", [nt.call_model("p1"), nt.call_model("p2")]),
            ],
        )
        async with nt.AgentHarness(
            "conformance", agent_graph=graph, model=ScriptedModel.echo(), layers=[layer]
        ) as h:
            await h.run("go")
        assert not _hook_failures(caplog)

    @pytest.mark.anyio
    async def test_provided_functions(
        self, layer: Any, sample_inputs: Mapping[str, Any], caplog: pytest.LogCaptureFixture
    ) -> None:
        """Each sampled function works from code (`ctx.context[id].fn(args)`) and as the model
        tool `"{id}/{fn}"`; the state stays plain JSON afterwards (CTX-5, LY-15)."""
        functions = {
            name
            for name, decl in (getattr(layer, "provides", None) or {}).items()
            if isinstance(decl, LayerFunction)
        }
        missing = functions - set(sample_inputs)
        assert not missing, f"override `sample_inputs` with an input for each provided function: {missing}"
        caplog.set_level(logging.WARNING, logger="noetic.layers")

        async def call_all(value: Any, ctx: nt.Context) -> Any:
            handle = ctx.context[layer.id]
            for name, args in sample_inputs.items():
                await getattr(handle, name)(args)
            _export(ctx)
            return value

        script = [tool_call_reply(f"{layer.id}/{name}", args) for name, args in sample_inputs.items()]
        model = ScriptedModel([*script, text_reply("done")])
        graph = nt.sequence("g", [nt.run_code("code", call_all), nt.call_model("model")])
        async with nt.AgentHarness("conformance", agent_graph=graph, model=model, layers=[layer]) as h:
            response = await h.run("go")
        outputs = [i for i in response.items if isinstance(i, FunctionCallOutputItem)]
        assert len(outputs) == len(sample_inputs)
        assert all('"error"' not in i.output for i in outputs), [i.output for i in outputs]
        assert not _hook_failures(caplog)

    @pytest.mark.anyio
    async def test_cancel_tears_down(self, layer: Any, caplog: pytest.LogCaptureFixture) -> None:
        """`harness.cancel` mid-run tears the layer down without a recovered error (CTX-14)."""
        caplog.set_level(logging.WARNING, logger="noetic.layers")
        running = anyio.Event()
        contexts: list[nt.Context] = []

        async def hang(value: Any, ctx: nt.Context) -> Any:
            contexts.append(ctx)
            running.set()
            await ctx.wait_aborted()  # abort is cooperative: it never cuts user code (CTX-17)

        graph = nt.run_code("hang", hang)
        async with nt.AgentHarness(
            "conformance", agent_graph=graph, model=ScriptedModel.echo(), layers=[layer]
        ) as h:
            await h.execute("go")
            await running.wait()
            await h.cancel(contexts[0], "conformance")
            with pytest.raises(nt.NoeticError):
                await h.get_agent_response()
        assert not _hook_failures(caplog)

    @pytest.mark.anyio
    async def test_a_tool_round(self, layer: Any, caplog: pytest.LogCaptureFixture) -> None:
        """A model step with one tool round: the append, projection and guard hooks run (LY-2,
        LY-4..LY-6) without a recovered error; a block or a deny is a valid answer."""
        caplog.set_level(logging.WARNING, logger="noetic.layers")
        model = ScriptedModel(
            [tool_call_reply("conformance_echo", {"text": "hi"})], default=ScriptedModel.echo().default
        )
        graph = nt.call_model("answer", tools=[ECHO_TOOL])
        async with nt.AgentHarness("conformance", agent_graph=graph, model=model, layers=[layer]) as h:
            await _run_allowing_a_deny(h, "use the tool")
        assert not _hook_failures(caplog)

    @pytest.mark.anyio
    async def test_a_spawn_child_running_while_the_parent_stores(
        self, layer: Any, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The parent stores while a spawn child runs, so the child's `on_parent_update` runs
        (LY-9) without a recovered error and the states stay plain JSON."""
        caplog.set_level(logging.WARNING, logger="noetic.layers")
        release, running = anyio.Event(), anyio.Event()

        async def child(value: Any, ctx: nt.Context) -> Any:
            running.set()
            with anyio.fail_after(10):
                await release.wait()
            return value

        async def body(value: Any, ctx: nt.Context) -> Any:
            async with anyio.create_task_group() as tg:
                tg.start_soon(execute, nt.spawn("child", nt.run_code("wait", child)), None, ctx)
                with anyio.fail_after(10):
                    await running.wait()
                try:
                    await execute(nt.call_model("parent"), "hello", ctx)
                finally:
                    release.set()
            _export(ctx)
            return value

        graph = nt.run_code("main", body)
        async with nt.AgentHarness(
            "conformance", agent_graph=graph, model=ScriptedModel.echo(), layers=[layer]
        ) as h:
            await _run_allowing_a_deny(h, "go")
        assert not _hook_failures(caplog)

    @pytest.mark.anyio
    async def test_state_in_a_checkpoint_store(self, layer: Any, caplog: pytest.LogCaptureFixture) -> None:
        """With `storage=`, durable state is written to the checkpoint store as JSON, and a
        second harness on the same store (a restart) runs the layer without errors (LY-16)."""
        caplog.set_level(logging.WARNING, logger="noetic.layers")
        store = MemoryCheckpointStore()
        keys: list[str] = []

        def capture(value: Any, ctx: nt.Context) -> Any:
            keys.append(scope_key(getattr(layer, "scope", "thread"), ctx))
            return value

        graph = nt.sequence("g", [nt.call_model("answer"), nt.run_code("capture", capture)])
        for _ in range(2):
            async with nt.AgentHarness(
                "conformance", agent_graph=graph, model=ScriptedModel.echo(), layers=[layer], storage=store
            ) as h:
                await h.run("remember this", thread_id="conformance-thread", resource_id="conformance-res")
        assert not _hook_failures(caplog)
        for key in await store.list_prefix(LAYER_STATE_PREFIX):
            assert key.startswith(f"{LAYER_STATE_PREFIX}layers/{layer.id}/{keys[-1]}/"), key
            text = await store.get(key)
            assert text is not None
            json.loads(text)
