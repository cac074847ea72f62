"""noetic-only scenarios that grow the work, to show how cost scales with it.

Each function runs one size and returns `(seconds, units)`; the report divides the two
(µs per unit) so that a flat line across sizes means linear cost. Sizes are in `SIZES`.

- `history`: one S1 round trip on a thread whose history already holds `size` items.
- `spawn_tree`: a binary tree `size` levels deep of `in_parallel` over two `spawn`s, with an S1
  round trip at each of the 2**size leaves (unit: a leaf).
- `loop`: `nt.loop` over a tool-using `call_model` for `size` iterations (unit: an iteration).
  Each iteration adds four items that the next model call sees, as in a real agent loop.
- `layers`: an S1 round trip through `size` context layers with anchoring on (unit: a round trip).
- `workflow`: the count-down JSON document (examples/drain.json), a `compute` loop counting `n` down from `size` with a
  custom item per iteration (unit: an iteration).

`layers` and `workflow` need APIs that are being built; until they work the scenario raises
`Pending` and the report says so.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import noetic as nt
from noetic.items import assistant_message, user_message
from subjects.common import ANSWER, QUESTION
from subjects.noetic_subject import FakeModel, _agent

SIZES: dict[str, tuple[int, ...]] = {
    "history": (10, 100, 1000),
    "spawn_tree": (1, 3, 5),
    "loop": (10, 30, 100),
    "layers": (1, 3, 10),
    "workflow": (10, 30, 100),
}
UNITS = {
    "history": "round trip",
    "spawn_tree": "leaf",
    "loop": "iteration",
    "layers": "round trip",
    "workflow": "iteration",
}


class Pending(Exception):
    """The scenario's API is not available (yet) in this tree."""


async def history(size: int, repeats: int = 40) -> tuple[float, int]:
    """Round trips on threads pre-filled with `size` items (filling is not timed)."""
    seed = []
    for i in range(size // 2):
        seed += [user_message(f"question {i}"), assistant_message(f"answer {i}")]
    total = 0.0
    async with nt.AgentHarness("bench", agent_graph=_agent(), model=FakeModel()) as h:
        for r in range(repeats + 1):
            await h.run(list(seed), thread_id=f"h{r}")
            started = time.perf_counter()
            response = await h.run(QUESTION, thread_id=f"h{r}")
            if r:  # the first repeat warms up
                total += time.perf_counter() - started
            _check(response.text)
    return total, repeats


def _tree(depth: int, leaf: nt.Step) -> nt.Step:
    if depth == 0:
        return leaf
    child = _tree(depth - 1, leaf)
    return nt.in_parallel(f"fork{depth}", [nt.spawn(f"left{depth}", child), nt.spawn(f"right{depth}", child)])


async def spawn_tree(size: int, repeats: int = 10) -> tuple[float, int]:
    """A binary tree of spawns `size` deep; every leaf is an S1 round trip."""
    graph = _tree(size, _agent())
    total = 0.0
    async with nt.AgentHarness("bench", agent_graph=graph, model=FakeModel()) as h:
        for r in range(repeats + 1):
            started = time.perf_counter()
            response = await h.run(QUESTION, thread_id=f"s{r}")
            if r:
                total += time.perf_counter() - started
            leaves = response.output
            for _ in range(size - 1):
                leaves = [x for pair in leaves for x in pair]
            if len(leaves) != 2**size or any(x != ANSWER for x in leaves):
                raise AssertionError(f"unexpected tree output {response.output!r}")
    return total, repeats * 2**size


async def loop(size: int, repeats: int = 5) -> tuple[float, int]:
    """`size` loop iterations, each a tool round trip on the growing history."""
    graph = nt.loop("agent-loop", _agent(), until=nt.until.max_steps(size))
    total = 0.0
    async with nt.AgentHarness("bench", agent_graph=graph, model=FakeModel()) as h:
        for r in range(repeats + 1):
            started = time.perf_counter()
            response = await h.run(QUESTION, thread_id=f"l{r}")
            if r:
                total += time.perf_counter() - started
            _check(response.text)
            if len(response.items) != 4 * size:
                raise AssertionError(f"expected {4 * size} items, got {len(response.items)}")
    return total, repeats * size


def _layer_classes() -> Any:
    try:
        from noetic.layers.contract import ContextLayer
    except ImportError as exc:
        raise Pending(f"noetic.layers.contract.ContextLayer is not importable: {exc}") from exc
    return ContextLayer


async def layers(size: int, repeats: int = 200) -> tuple[float, int]:
    """S1 round trips with `size` anchored layers that each recall a fixed paragraph."""
    base = _layer_classes()
    made = []
    for n in range(size):

        async def recall(self: Any, ctx: Any, budget: Any, _n: int = n) -> str:
            return f"Layer {_n}: " + "background fact. " * 20

        cls = type(
            f"Layer{n}",
            (base,),
            {"id": f"layer{n}", "slot": 100 + n, "placement": "anchor", "recall": recall},
        )
        made.append(cls())
    try:
        harness = nt.AgentHarness("bench", agent_graph=_agent(), model=FakeModel(), layers=made)
    except Exception as exc:
        raise Pending(f"AgentHarness(layers=...) failed: {type(exc).__name__}: {exc}") from exc
    total = 0.0
    async with harness as h:
        for r in range(repeats + 1):
            started = time.perf_counter()
            response = await h.run(QUESTION, thread_id=f"c{r}")
            if r:
                total += time.perf_counter() - started
            _check(response.text)
            if r == 0:  # the warm-up checks the layers ran (reading the usage measures it)
                usage = response.last_layer_usage
                if usage is None or len(usage.layers) != size:
                    raise Pending(f"layers did not run: last_layer_usage={usage!r}")
    return total, repeats


def _document(size: int) -> dict[str, Any]:
    return {
        "version": 1,
        "customItems": {
            "progress": {
                "type": "bench:progress",
                "event": {"type": "object", "properties": {"left": {"type": "number"}}, "required": ["left"]},
                "output": {
                    "type": "object",
                    "properties": {"left": {"type": "number"}},
                    "required": ["left"],
                },
            }
        },
        "root": {
            "kind": "loop",
            "id": "drain",
            "maxIterations": size + 1,
            "body": {
                "kind": "compute",
                "id": "step",
                "expr": "{ 'n': n - 1 }",
                "emitItems": {"item": "progress", "onStart": "{ 'left': n }", "onDone": "{ 'left': n }"},
            },
            "until": {"kind": "expr", "expr": "n = 0"},
        },
    }


async def workflow(size: int, repeats: int = 5) -> tuple[float, int]:
    """Seed 002's counting-down document with `n = size`."""
    build: Callable[..., Any] | None = getattr(nt, "workflow", None)
    if build is None:
        raise Pending("nt.workflow is not available yet")
    graph = build("drain", _document(size))
    total = 0.0
    async with nt.AgentHarness("bench", agent_graph=graph) as h:
        for r in range(repeats + 1):
            started = time.perf_counter()
            response = await h.run({"n": size}, thread_id=f"w{r}")
            if r:
                total += time.perf_counter() - started
            if response.output != {"n": 0}:
                raise AssertionError(f"unexpected workflow output {response.output!r}")
    return total, repeats * size


def _check(text: str) -> None:
    if text != ANSWER:
        raise AssertionError(f"unexpected answer {text!r}")


SCENARIOS: dict[str, Callable[[int], Awaitable[tuple[float, int]]]] = {
    "history": history,
    "spawn_tree": spawn_tree,
    "loop": loop,
    "layers": layers,
    "workflow": workflow,
}
