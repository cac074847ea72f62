"""The per-step layer work done once, not per round or per layer: hook runs sharing one cancel
scope (`noetic.layers.frame.run_hooks`), string renders reused while their text is unchanged,
pins hashed only when compared, a quiet teardown, the layered usage measured on first read.
Each test would fail with a stale cache or a scope shared wrongly."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.items import Item, item_text
from noetic.layers import ContextLayer, LayerContext
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio


class Told(ContextLayer):
    """Recalls whatever `text` is now; `pause` sleeps first, `guarded` inside its own cancel
    scope entered before the first suspension (as `anyio.fail_after` in a hook does)."""

    def __init__(
        self,
        id: str,
        text: str | None,
        *,
        slot: float = 100,
        placement: str = "live",
        pause: float = 0.0,
        guarded: bool = False,
        timeout: float | None = None,
    ):
        self.id = id
        self.text = text
        self.slot = slot
        self.placement = placement  # type: ignore[assignment]
        self.pause = pause
        self.guarded = guarded
        if timeout is not None:
            self.timeouts = {"recall": timeout}

    async def recall(self, ctx: LayerContext, budget: float) -> str | None:
        if self.guarded:
            with anyio.move_on_after(30):
                await anyio.sleep(self.pause)
        elif self.pause:
            await anyio.sleep(self.pause)
        return self.text


def _harness(layers: list[Any], model: ScriptedModel | None = None) -> tuple[nt.AgentHarness, ScriptedModel]:
    model = model or ScriptedModel(default=lambda request: text_reply("ok"))
    graph = nt.call_model("a", instructions="be brief")
    return nt.AgentHarness("h", agent_graph=graph, model=model, layers=layers), model


def _texts(items: tuple[Item, ...] | list[Item]) -> list[str]:
    return [item_text(i) for i in items if getattr(i, "role", None) == "developer"]


async def test_an_overrunning_hook_is_cut_and_the_rest_still_run(caplog: pytest.LogCaptureFixture) -> None:
    """One recall overruns its timeout inside its own cancel scope; the recalls before and
    after it (one of them suspending) still render, in slot order."""
    layers = [
        Told("first", "one", slot=10),
        Told("slow", "never", slot=20, pause=10, guarded=True, timeout=0.05),
        Told("later", "three", slot=30, pause=0.001),
        Told("last", "four", slot=40),
    ]
    h, model = _harness(layers)
    with caplog.at_level(logging.WARNING, logger="noetic.layers"), anyio.fail_after(5):
        async with h:
            response = await h.run("hi")
    assert response.text == "ok"
    assert _texts(model.calls[0].items) == ["one", "three", "four"]
    assert any("'slow': recall failed: TimeoutError" in r.getMessage() for r in caplog.records)


async def test_a_suspending_hook_finishes_within_its_timeout() -> None:
    """A recall that sleeps (inside its own scope, or not) well within its timeout renders."""
    layers = [
        Told("a", "guarded", slot=10, pause=0.01, guarded=True, timeout=2),
        Told("b", "plain", slot=20, pause=0.01, timeout=2),
    ]
    h, model = _harness(layers)
    with anyio.fail_after(5):
        async with h:
            await h.run("hi")
    assert _texts(model.calls[0].items) == ["guarded", "plain"]


class Stubborn(ContextLayer):
    """Swallows the cancellation of its own timeout and answers anyway."""

    id = "stubborn"
    slot = 10
    placement = "live"
    timeouts = {"recall": 0.02}  # noqa: RUF012 - a read-only class-level setting

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        try:
            await anyio.sleep(10)
        except anyio.get_cancelled_exc_class():
            return "late but here"
        return "never"


async def test_a_hook_that_outlives_its_deadline_does_not_cut_the_next() -> None:
    """After a hook swallowed its timeout, the next hook's suspension is not cancelled (it
    runs in a fresh scope), and the swallowing hook's answer counts, as under `fail_after`."""
    h, model = _harness([Stubborn(), Told("next", "after", slot=20, pause=0.05, timeout=2)])
    with anyio.fail_after(5):
        async with h:
            await h.run("hi")
    assert _texts(model.calls[0].items) == ["late but here", "after"]


class Starting(ContextLayer):
    """`init` sleeps `pause`, then returns `state` (or raises when `state` is an exception)."""

    slot = 100

    def __init__(self, id: str, state: Any, *, pause: float = 0.0, on_init_error: str = "throw"):
        self.id = id
        self.state = state
        self.pause = pause
        self.on_init_error = on_init_error  # type: ignore[assignment]
        self.scope = "execution"  # type: ignore[assignment]

    async def init(self, ctx: LayerContext) -> Any:
        if self.pause:
            await anyio.sleep(self.pause)
        if isinstance(self.state, Exception):
            raise self.state
        return self.state

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"{self.id}={ctx.state}"


async def test_init_runs_in_order_and_a_failing_one_is_disabled() -> None:
    """LY-1 through the shared scope: array order, a suspending init, a disabled failure."""
    layers = [
        Starting("a", 1, pause=0.01),
        Starting("b", ValueError("no"), on_init_error="disable"),
        Starting("c", 3),
    ]
    h, model = _harness(layers)
    with anyio.fail_after(5):
        async with h:
            await h.run("hi")
    assert _texts(model.calls[0].items) == ["a=1", "c=3"]


async def test_a_failing_init_still_fails_the_run() -> None:
    """Without `on_init_error="disable"` a failing init fails the execution (layer_init_failed)."""
    h, _ = _harness([Starting("a", ValueError("broken"))])
    async with h:
        with pytest.raises(nt.NoeticError) as caught:
            await h.run("hi")
    assert caught.value.code == "layer_init_failed"


async def test_a_changed_recall_text_is_never_served_from_the_render_cache() -> None:
    """The reused render follows the text: A, B, then A again on one thread, live and anchored."""
    live = Told("live", "A", slot=10, placement="live")
    pinned = Told("pinned", "A", slot=20, placement="anchor")
    h, model = _harness([live, pinned])
    seen = []
    async with h:
        for text in ("A", "B", "A"):
            live.text = pinned.text = text
            response = await h.run("hi", thread_id="one")
            usage = response.last_layer_usage
            assert usage is not None
            seen.append({e.layer_id: (e.served, e.changed, _texts(list(e.items))) for e in usage.layers})
    assert seen[0] == {"live": ("fresh", False, ["A"]), "pinned": ("fresh", False, ["A"])}
    # the pin stays "A" within the epoch; "B" is published as an update after the history
    assert seen[1] == {"live": ("fresh", False, ["B"]), "pinned": ("pinned", True, ["A"])}
    assert seen[2] == {"live": ("fresh", False, ["A"]), "pinned": ("pinned", False, ["A"])}
    second = _texts(model.calls[1].items)
    assert second[0] == "A" and "B" in second[1] and any("<context_updates" in t for t in second)
    assert not any("<context_updates" in t for t in _texts(model.calls[2].items))


async def test_an_unchanged_string_render_is_the_same_message() -> None:
    """An unchanged recall string is sent as the very same message (not rebuilt); a changed
    one as a new message."""
    layer = Told("plan", "same", placement="live")
    h, model = _harness([layer])
    async with h:
        await h.run("hi", thread_id="x")
        await h.run("hi", thread_id="y")
        layer.text = "other"
        await h.run("hi", thread_id="z")
    first, second, third = (
        [i for i in call.items if getattr(i, "role", None) == "developer"] for call in model.calls
    )
    assert first[0] is second[0]
    assert third[0] is not first[0] and _texts(third) == ["other"]


class Counter(ContextLayer):
    """Thread-scoped count of steps: no teardown hooks, state written through by `store`."""

    id = "counter"
    slot = 100
    placement = "live"

    async def init(self, ctx: LayerContext) -> int:
        saved = await ctx.storage.get("state")
        return 0 if saved is None else int(saved)

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"steps so far: {ctx.state}"

    async def store(self, ctx: LayerContext, response: Any) -> int:
        return int(ctx.state) + 1


async def test_state_changes_survive_a_quiet_teardown_and_reach_the_next_turn() -> None:
    """A layer with no teardown hooks still has its state written and read back next turn."""
    h, model = _harness([Counter()])
    async with h:
        for _ in range(3):
            await h.run("hi", thread_id="one")
        assert await h.layer_store.get("layers/counter/one/state") == 3
    assert [_texts(c.items) for c in model.calls] == [
        ["steps so far: 0"],
        ["steps so far: 1"],
        ["steps so far: 2"],
    ]


async def test_the_layered_usage_is_measured_when_read() -> None:
    """`last_layer_usage` of a layered step is the same snapshot when read after the turn."""
    h, _ = _harness([Told("plan", "some words here", placement="anchor")])
    async with h:
        response = await h.run("hi")
    usage = response.last_layer_usage
    assert usage is not None and usage.epoch is not None
    assert [e.layer_id for e in usage.layers] == ["plan"]
    assert usage.total_used_tokens == (
        usage.system_prompt_tokens + usage.tools_tokens + usage.history_tokens + usage.layers[0].token_count
    )
    assert usage.history_tokens > 0


class Budgeted(ContextLayer):
    """Records the budget each recall receives."""

    id = "budgeted"
    slot = 100
    placement = "live"

    def __init__(self, budget: Any):
        self.budget = budget
        self.seen: list[float] = []

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        self.seen.append(budget)
        return "x"


async def test_a_changed_budget_spec_is_split_again() -> None:
    """The remembered budget split follows the layer's spec: replaced, or changed in place."""
    layer = Budgeted({"min": 100, "max": 100})
    h, _ = _harness([layer])
    async with h:
        await h.run("hi", thread_id="a")
        await h.run("hi", thread_id="b")
        layer.budget = {"min": 300, "max": 300}
        await h.run("hi", thread_id="c")
        layer.budget["max"] = layer.budget["min"] = 700
        await h.run("hi", thread_id="d")
    assert layer.seen == [100, 100, 300, 700]


class EveryPass(ContextLayer):
    """Defines the three hooks a turn runs through `run_hooks`: `init`, `recall`, `store`;
    its recall overruns `timeout` inside its own scope when `pause` is set."""

    id = "every-pass"
    slot = 10
    placement = "live"
    scope = "execution"

    def __init__(self, pause: float = 0.0):
        self.pause = pause
        self.timeouts = {"recall": 0.05}
        self.stored = 0

    async def init(self, ctx: LayerContext) -> str:
        return "started"

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        if self.pause:
            with anyio.move_on_after(30):
                await anyio.sleep(self.pause)
        return f"state={ctx.state}"

    async def store(self, ctx: LayerContext, response: Any) -> None:
        self.stored += 1


@pytest.mark.parametrize("pause", [0.0, 10.0])
async def test_hook_runs_take_the_harness_scope_class(pause: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """`init`, `recall` and `store` run in a scope of the class the harness remembered when it
    started, never one made by `anyio.CancelScope()` (which looks the backend up on every
    call); an overrunning recall is still cut by it and the turn goes on."""
    layer = EveryPass(pause)
    h, model = _harness([layer])
    with anyio.fail_after(5):
        async with h:
            made: list[str] = []

            def no_lookup(*args: Any, **kwargs: Any) -> anyio.CancelScope:
                made.append("anyio.CancelScope()")
                raise AssertionError("a hook run asked anyio for its scope class")

            monkeypatch.setattr(anyio, "CancelScope", no_lookup)
            try:
                response = await h.run("hi")
            finally:
                monkeypatch.undo()
    assert made == []
    assert response.text == "ok"
    assert layer.stored == 1
    assert _texts(model.calls[0].items) == ([] if pause else ["state=started"])


class PlainNotes(ContextLayer):
    """A layer whose `recall` and `store` are plain functions: they never wait."""

    id = "plain-notes"
    slot = 20
    placement = "live"
    scope = "execution"

    def __init__(self) -> None:
        self.stored = 0

    def recall(self, ctx: LayerContext, budget: float) -> str:
        return "a plain note"

    def store(self, ctx: LayerContext, response: Any) -> None:
        self.stored += 1


class AwaitedNotes(PlainNotes):
    """`PlainNotes` with the same hooks as `async def`."""

    async def recall(self, ctx: LayerContext, budget: float) -> str:  # type: ignore[override]
        return "a plain note"

    async def store(self, ctx: LayerContext, response: Any) -> None:  # type: ignore[override]
        self.stored += 1


async def _scopes_per_turn(layers: list[Any]) -> tuple[int, ScriptedModel]:
    """How many cancel scopes of the harness's class one turn made, and the model it ran."""
    h, model = _harness(layers)
    with anyio.fail_after(5):
        async with h:
            base = h._scope_type
            assert base is not None

            class Counting(base):  # type: ignore[misc, valid-type]
                made = 0

                def __init__(self, *args: Any, **kwargs: Any) -> None:
                    Counting.made += 1
                    super().__init__(*args, **kwargs)

            h._scope_type = Counting
            await h.run("hi")
    return Counting.made, model


async def test_a_pass_of_plain_hooks_opens_no_cancel_scope() -> None:
    """The recall pass and the store pass of a layer whose hooks are plain functions enter no
    cancel scope (the async twin needs one each), and the plain hooks still run."""
    plain = PlainNotes()
    plain_scopes, model = await _scopes_per_turn([plain])
    awaited_scopes, _ = await _scopes_per_turn([AwaitedNotes()])
    assert plain_scopes + 2 <= awaited_scopes
    assert _texts(model.calls[0].items) == ["a plain note"]
    assert plain.stored == 1


async def test_a_plain_hook_before_an_async_one_shares_the_pass() -> None:
    """A plain recall first, then one that suspends inside its own scope and one that
    overruns: the scope opens at the first awaitable, the overrun is cut, all in slot order."""
    layers = [
        PlainNotes(),
        Told("guarded", "guarded", slot=30, pause=0.01, guarded=True, timeout=2),
        Told("slow", "never", slot=40, pause=10, guarded=True, timeout=0.05),
        Told("last", "last", slot=50),
    ]
    h, model = _harness(layers)
    with anyio.fail_after(5):
        async with h:
            await h.run("hi")
    assert _texts(model.calls[0].items) == ["a plain note", "guarded", "last"]
