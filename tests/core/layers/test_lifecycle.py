"""The layer lifecycle: ordering, concurrency, error policy, timeouts, persistence (LY-1..LY-14)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.items import item_text
from noetic.layers import CLEAR, CallResult, ContextLayer, LayerContext
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio

Events = list[tuple[Any, ...]]


def harness(layers: list[Any], graph: nt.Step | None = None, **kwargs: Any) -> nt.AgentHarness:
    model = kwargs.pop("model", None) or ScriptedModel.echo()
    return nt.AgentHarness(
        "t", agent_graph=graph or nt.call_model("answer"), model=model, layers=layers, **kwargs
    )


def of(events: Events, hook: str) -> list[Any]:
    return [e[0] for e in events if e[1] == hook]


async def test_ly_1_3_11_recall_by_slot_init_in_array_order_dispose_reversed(
    events: Events, probe: Callable[..., Any]
) -> None:
    """Acceptance 29: slots [300, 100, 200] recall 100, 200, 300; init and on_complete in array
    order; dispose in reverse array order; the view carries the layers in slot order (AN-1)."""
    model = ScriptedModel.echo()
    layers = [probe("c", slot=300), probe("a", slot=100), probe("b", slot=200)]
    async with harness(layers, model=model) as h:
        await h.run("hi")
    assert of(events, "init") == ["c", "a", "b"]
    assert of(events, "recall") == ["a", "b", "c"]
    assert of(events, "on_complete") == ["c", "a", "b"]
    assert of(events, "dispose") == ["b", "a", "c"]
    texts = [item_text(i) for i in model.calls[0].items if getattr(i, "role", None) == "developer"]
    assert texts == ["a notes", "b notes", "c notes"]
    assert all(e[2] == "success" for e in events if e[1] == "on_complete")


async def test_ly_3_slot_ties_keep_array_order(events: Events, probe: Callable[..., Any]) -> None:
    """LY-3: equal slots recall in array order."""
    async with harness([probe("z", slot=150), probe("m", slot=150), probe("a", slot=150)]) as h:
        await h.run("hi")
    assert of(events, "recall") == ["z", "m", "a"]


async def test_ly_1_init_failure_with_disable_skips_every_hook_of_that_layer(
    events: Events, probe: Callable[..., Any]
) -> None:
    """LY-1: init raising with on_init_error='disable' → no hook of it runs, not even dispose,
    and the run succeeds; the other layers work normally."""
    broken = probe("broken", slot=50, fail=("init",), on_init_error="disable")
    async with harness([broken, probe("ok", slot=60)]) as h:
        response = await h.run("hi")
    assert response.text == "hi"
    assert [e[1] for e in events if e[0] == "broken"] == ["init"]
    assert [e[1] for e in events if e[0] == "ok"] == ["init", "recall", "store", "on_complete", "dispose"]
    assert response.last_layer_usage is not None
    assert [e.layer_id for e in response.last_layer_usage.layers] == ["ok"]


async def test_ly_1_init_failure_fails_the_run_and_tears_down_the_started_layers(
    events: Events, probe: Callable[..., Any]
) -> None:
    """LY-1: without on_init_error the run fails with layer_init_failed; the graph never runs;
    layers initialized before it are completed (failure) and disposed, the broken one is not."""
    model = ScriptedModel.echo()
    async with harness([probe("first"), probe("broken", fail=("init",)), probe("never")], model=model) as h:
        with pytest.raises(nt.NoeticError) as info:
            await h.run("hi")
    assert info.value.code == "layer_init_failed"
    assert info.value.layer_id == "broken"
    assert isinstance(info.value.cause, RuntimeError)
    assert model.calls == []
    assert of(events, "init") == ["first", "broken"]
    assert [(e[0], e[2]) for e in events if e[1] == "on_complete"] == [("first", "failure")]
    assert of(events, "dispose") == ["first"]


async def test_ly_7_a_failing_store_does_not_stop_the_others(
    events: Events, probe: Callable[..., Any]
) -> None:
    """LY-7: one store raises; the other layer's new state still applies."""
    seen: list[int] = []

    def capture(value: Any, ctx: nt.Context) -> Any:
        seen.append(ctx._layers.get("good").state)  # type: ignore[union-attr]
        seen.append(ctx._layers.get("bad").state)  # type: ignore[union-attr]
        return value

    graph = nt.sequence("g", [nt.call_model("a"), nt.run_code("c", capture)])
    async with harness([probe("bad", fail=("store",)), probe("good")], graph) as h:
        await h.run("hi")
    assert sorted(of(events, "store")) == ["bad", "good"]  # concurrent: any order
    assert seen == [1, 0]


async def test_ly_7_stores_run_concurrently() -> None:
    """LY-7: store hooks run at the same time (each waits for the other: sequential would hang)."""
    arrived = {"a": anyio.Event(), "b": anyio.Event()}

    class Waiting(ContextLayer):
        slot = 100

        def __init__(self, id: str, other: str):
            self.id, self.other = id, other

        async def store(self, ctx: LayerContext, response: CallResult) -> str:
            arrived[self.id].set()
            await arrived[self.other].wait()
            return "stored"

    with anyio.fail_after(5):  # hang guard only
        async with harness([Waiting("a", "b"), Waiting("b", "a")]) as h:
            await h.run("hi")
    assert all(e.is_set() for e in arrived.values())


async def test_ly_7_store_gets_a_snapshot_of_its_state() -> None:
    """LY-7: a store that mutates its state in place and then fails changes nothing."""

    class Mutating(ContextLayer):
        id = "m"
        slot = 100

        async def init(self, ctx: LayerContext) -> dict[str, int]:
            return {"n": 1}

        async def store(self, ctx: LayerContext, response: CallResult) -> None:
            ctx.state["n"] = 99
            raise RuntimeError("half way")

    captured: list[Any] = []
    export = nt.run_code("c", lambda v, ctx: captured.append(ctx._exec.layers.export_state()))
    async with harness([Mutating()], nt.sequence("g", [nt.call_model("a"), export])) as h:
        await h.run("hi")
    assert captured[0]["layers"]["m"]["state"] == {"n": 1}


async def test_ly_7_14_store_returning_clear_deletes_the_key_and_keeps_the_layer() -> None:
    """LY-7/14: `return CLEAR` deletes `layers/{id}/{scope}/state`; the layer stays enabled."""
    calls: list[Any] = []

    class Clearing(ContextLayer):
        id = "clearing"
        slot = 100
        scope = "thread"

        async def init(self, ctx: LayerContext) -> Any:
            saved = await ctx.storage.get("state")
            calls.append(("init", saved))
            return saved if saved is not None else "seed"

        async def recall(self, ctx: LayerContext, budget: float) -> str:
            calls.append(("recall", ctx.state))
            return "x"

        async def store(self, ctx: LayerContext, response: CallResult) -> Any:
            return CLEAR if ctx.state == "kept" else "kept"

    async with harness([Clearing()]) as h:
        await h.run("one")
        assert await h.layer_store.get("layers/clearing/default/state") == "kept"
        await h.run("two")
        assert "layers/clearing/default/state" not in h.layer_store  # type: ignore[operator]
        await h.run("three")
    assert calls == [
        ("init", None),
        ("recall", "seed"),
        ("init", "kept"),
        ("recall", "kept"),
        ("init", None),
        ("recall", "seed"),
    ]


async def test_ly_12_a_failing_recall_is_skipped_and_the_run_goes_on(
    events: Events, probe: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    """LY-12: recall raising → that layer contributes nothing this call, with a warning."""
    model = ScriptedModel.echo()
    async with harness([probe("bad", fail=("recall",)), probe("good", slot=200)], model=model) as h:
        response = await h.run("hi")
    assert response.last_layer_usage is not None
    assert [e.layer_id for e in response.last_layer_usage.layers] == ["good"]
    assert "bad" in caplog.text
    assert "recall failed" in caplog.text


async def test_ly_12_a_hook_past_its_timeout_is_cut_off() -> None:
    """LY-12: a recall that never returns is skipped once its (layer-set) timeout passes."""

    class Stuck(ContextLayer):
        id = "stuck"
        slot = 100
        timeouts = {"recall": 0.05}  # noqa: RUF012

        async def recall(self, ctx: LayerContext, budget: float) -> str:
            await anyio.sleep_forever()
            return "never"

    with anyio.fail_after(5):  # hang guard only
        async with harness([Stuck()]) as h:
            response = await h.run("hi")
    assert response.text == "hi"
    assert response.last_layer_usage is not None
    assert response.last_layer_usage.layers == ()


async def test_ly_11_a_failing_dispose_does_not_stop_the_others(
    events: Events, probe: Callable[..., Any]
) -> None:
    """LY-11: every dispose runs even when one raises; on_complete failures are logged too."""
    layers = [probe("a"), probe("b", fail=("dispose", "on_complete")), probe("c")]
    async with harness(layers) as h:
        await h.run("hi")
    assert of(events, "dispose") == ["c", "b", "a"]
    assert of(events, "on_complete") == ["a", "b", "c"]


async def test_ly_10_on_complete_reports_failure(events: Events, probe: Callable[..., Any]) -> None:
    """LY-10: a failed execution completes its layers with outcome 'failure'."""

    def boom(value: Any) -> Any:
        raise ValueError("no")

    async with harness([probe("a")], nt.run_code("boom", boom)) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("hi")
    assert [e[2] for e in events if e[1] == "on_complete"] == ["failure"]
    assert of(events, "dispose") == ["a"]


async def test_ly_14_state_is_written_through_per_scope() -> None:
    """LY-14: keys `layers/{id}/{scope_key}/state` — thread, resource (falls back to the
    thread), global; execution-scoped state is never written."""

    class Counter(ContextLayer):
        slot = 100

        def __init__(self, id: str, scope: str):
            self.id, self.scope = id, scope  # type: ignore[assignment]

        async def init(self, ctx: LayerContext) -> int:
            return int(await ctx.storage.get("state") or 0)

        async def store(self, ctx: LayerContext, response: CallResult) -> int:
            return int(ctx.state) + 1

    layers = [
        Counter("t", "thread"),
        Counter("r", "resource"),
        Counter("g", "global"),
        Counter("x", "execution"),
    ]
    async with harness(layers) as h:
        await h.run("one", thread_id="th")
        await h.run("two", thread_id="th", resource_id="res")
        keys = sorted(h.layer_store.keys())  # type: ignore[attr-defined]
        assert keys == [
            "layers/g/__global__/state",
            "layers/r/res/state",
            "layers/r/th/state",
            "layers/t/th/state",
        ]
        assert await h.layer_store.get("layers/t/th/state") == 2  # init reloaded turn one's state
        assert await h.layer_store.get("layers/g/__global__/state") == 2
        assert await h.layer_store.get("layers/r/res/state") == 1


async def test_ly_3_eventual_layers_recall_again_only_after_their_store(events: Events) -> None:
    """LY-3: an eventual layer is served from the cache until its own store changes state."""
    recalls: list[int] = []

    class Slow(ContextLayer):
        id = "slow"
        slot = 100
        scope = "thread"
        recall_mode = "eventual"

        async def recall(self, ctx: LayerContext, budget: float) -> str:
            recalls.append(1)
            return f"render {len(recalls)}"

        async def store(self, ctx: LayerContext, response: CallResult) -> Any:
            return "changed" if len(recalls) == 1 else None

    graph = nt.sequence("g", [nt.call_model("a"), nt.call_model("b"), nt.call_model("c"), nt.call_model("d")])
    async with harness([Slow()], graph) as h:
        response = await h.run("hi")
    # a: cold recall, its store changes state; b: recalls again; c, d: served from the cache
    assert len(recalls) == 2
    assert response.last_layer_usage is not None
    assert response.last_layer_usage.layers[0].changed  # render 2 still differs from the pin


async def test_ctx_14_plain_abort_runs_no_teardown(events: Events, probe: Callable[..., Any]) -> None:
    """CTX-14 / acceptance 5: a run ended by ctx.abort() runs neither on_complete nor dispose."""

    def stop(value: Any, ctx: nt.Context) -> Any:
        ctx.abort("user stop")
        return value

    async with harness([probe("a")], nt.sequence("g", [nt.run_code("s", stop), nt.call_model("x")])) as h:
        with pytest.raises(nt.NoeticError) as info:
            await h.run("hi")
    assert info.value.code == "cancelled"
    assert of(events, "init") == ["a"]
    assert of(events, "on_complete") == []
    assert of(events, "dispose") == []


async def test_ctx_14_cancel_tears_down_child_before_parent_once(
    events: Events, probe: Callable[..., Any]
) -> None:
    """CTX-14 / acceptance 5: harness.cancel → on_complete(aborted) then dispose, the spawn
    child before the parent, exactly once even when cancel is called again."""
    contexts: list[nt.Context] = []
    blocked = anyio.Event()

    async def hang(value: Any, ctx: nt.Context) -> Any:
        contexts.append(ctx)
        blocked.set()
        await ctx.wait_aborted()  # abort is cooperative (CTX-17)

    graph = nt.spawn("child", nt.run_code("hang", hang), layers=[probe("inner")])
    with anyio.fail_after(5):  # hang guard only
        async with harness([probe("outer")], graph) as h:
            await h.execute("go")
            await blocked.wait()
            child = contexts[0]
            assert child.parent is not None
            await h.cancel(child.parent, "stop")
            teardown = [(e[0], e[1], *e[2:]) for e in events if e[1] in ("on_complete", "dispose")]
            assert teardown == [
                ("inner", "on_complete", "aborted", 1),
                ("inner", "dispose", 1),
                ("outer", "on_complete", "aborted", 0),
                ("outer", "dispose", 0),
            ]
            await h.cancel(child.parent, "again")
            with pytest.raises(nt.NoeticError) as info:
                await h.get_agent_response()
            assert info.value.code == "cancelled"
    assert len([e for e in events if e[1] in ("on_complete", "dispose")]) == 4
    assert child.aborted
    assert child.abort_reason == "stop"


async def test_ctx_14_cancel_of_a_created_context_runs_initless_teardown() -> None:
    """CTX-14: a context from create_context has the harness layers; cancel tears down the
    ones that need no init, and plain abort of another context runs nothing."""
    seen: list[str] = []

    class Light(ContextLayer):
        id = "light"
        slot = 100

        async def on_complete(self, ctx: LayerContext, outcome: str) -> None:
            seen.append(f"{ctx.execution_id}:{outcome}")

        async def dispose(self) -> None:
            seen.append("dispose")

    async with harness([Light()]) as h:
        aborted = h.create_context()
        aborted.abort("just abort")
        cancelled = h.create_context()
        await h.cancel(cancelled, "cancel")
        assert seen == [f"{cancelled.id}:aborted", "dispose"]
        assert "light" in cancelled.context
