"""`import noetic` stays light: optional features are imported the first time they are used.

Each check runs a fresh interpreter, so modules another test imported do not hide a regression.
Putting a top-level import of a deferred feature back into the core makes the matching
`test_import_noetic_defers` case fail with the module's name.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Modules (or package prefixes) a bare `import noetic` must not load.
DEFERRED = (
    "noetic.workflows",  # workflow documents: the JSON Schema validator and JSONata
    "jsonata",
    "re2",
    "jsonschema",
    "noetic.durable",  # durability: only a harness with storage= needs any of it
    "noetic.layers.checkpoint_state",  # (layer state kept in the checkpoint store)
    "sqlite3",
    "noetic.layers.cache_config",  # anchoring settings: built when given or when anchoring reads them
    "anyio.lowlevel",  # the event loop's backend imports it; steps reach it only inside the loop
    "noetic.layers.anchoring",  # prompt-cache anchoring: only a call with layers needs it
    "noetic.layers.call",  # the rest of a layered step: view assembly per round, overflow modes,
    "noetic.layers.overflow",  # steering and the item pipelines, imported by the first step
    "noetic.layers.steering",  # with layers
    "noetic.layers.pipelines",
    "noetic.layers.provides",  # `ctx.context[...]` handles and layer tools: only layers give them
    "noetic.layers.view",  # view assembly: only a call with layers assembles one
    "noetic.layers.report",  # the layer-usage table, rendered when asked for
    "noetic.inspect_sink",  # the live inspector sink: only `inspect=` (or NOETIC_INSPECT) opens one
    "noetic.streamed_turn",  # `h.stream(...)`: only a streaming caller needs it
    "noetic.hookspecs",  # the plugin hook specifications, for `nt.hookimpl` and the plugin manager
    "noetic.custom_items",  # custom items: only a program that declares one needs them
    "pydantic.functional_serializers",  # (their wire form is a pydantic model serializer)
    "noetic.snapshots",  # in-progress message snapshots: only item streams make them
    "noetic.usage_reports",  # totals, step metadata, the layer-usage snapshot: defined when read
    "pydantic.type_adapter",  # validators of plain types and of the item union, made when used
    "anyio.to_thread",  # worker threads, for tools and code steps declared to run in one
    "noetic.steps.loop",  # the steps besides call_model, imported when a program names one
    "noetic.steps.decide",
    "noetic.steps.parallel",
    "noetic.steps.spawn",
    "noetic.steps.code",
    "noetic.steps.flow",
    "noetic.predicates",
    "logging",  # the core logs only on unusual paths (noetic.logs)
    "json",  # its import compiles regular expressions; the first tool call or JSON text needs it
    "noetic.cli",  # the command line and its terminal rendering
    "noetic.plugin_commands",
    "rich",
    "noetic.fs",  # file systems are plugged in by name
    "noetic.testing",
    "noetic.tracing",  # OpenTelemetry is optional
    "opentelemetry",
    "httpx",
)


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def loaded() -> set[str]:
    """The modules loaded by a bare `import noetic` in a fresh interpreter."""
    out = _run("import sys\nimport noetic\nprint(*sorted(sys.modules))")  # no json: it is checked
    return set(out.split())


def test_import_noetic_loads_the_core(loaded: set[str]) -> None:
    # The harness and the steps are the core: a regression the other way (everything lazy,
    # so the cost moves to the first attribute lookup) would not make programs start faster.
    assert {"noetic.harness", "noetic.steps.model_call", "noetic.tools", "noetic.items"} <= loaded


@pytest.mark.parametrize("module", DEFERRED)
def test_import_noetic_defers(loaded: set[str], module: str) -> None:
    pulled = sorted(name for name in loaded if name == module or name.startswith(module + "."))
    assert not pulled, f"`import noetic` imports {pulled}; import them where they are used"


def test_import_noetic_generates_no_dataclass() -> None:
    # A dataclass compiles its generated methods while its module is imported (about 3 M
    # instructions a frozen one); the core's value classes are `noetic.records` records instead.
    out = _run(
        """
        import dataclasses
        made = []
        process = dataclasses._process_class
        def counting(cls, *args):
            if cls.__module__.startswith("noetic"):
                made.append(f"{cls.__module__}.{cls.__qualname__}")
            return process(cls, *args)
        dataclasses._process_class = counting
        import noetic
        print(made)
        """
    )
    assert out.strip() == "[]"


def test_models_a_plain_round_trip_never_makes_are_built_on_first_use() -> None:
    # Their validators are built on first use, not at `import noetic`, and a tool round trip
    # builds none of them; the first validation of each still works and still checks its input.
    out = _run(
        """
        import anyio
        import noetic as nt
        from noetic import items, usage
        from noetic.testing import ScriptedModel, text_reply, tool_call_reply

        DEFERRED = (items.Refusal, items.OtherPart, items.ReasoningItem, items.ExtensionItem,
                    usage.TokenUsage, usage.DecisionMeta, usage.StepMeta)
        add = nt.tool("add", description="Add.", input={"type": "object"}, execute=lambda a: 3)
        agent = nt.call_model("answer", tools=[add])
        model = ScriptedModel([tool_call_reply("add", {}), text_reply("3")])

        async def main() -> None:
            async with nt.AgentHarness("plain", agent_graph=agent, model=model) as h:
                assert (await h.run("1 + 2?")).text == "3"

        anyio.run(main)
        print([model.__name__ for model in DEFERRED if model.__pydantic_complete__])
        import sys
        assert "noetic.layers.cache_config" not in sys.modules  # anchoring on, settings unread
        print(items.parse_item({"type": "reasoning", "id": "rs_1"}).type, usage.TokenUsage(input=2).input)
        try:
            items.parse_item({"type": "nonamespace", "id": "x"})
        except Exception as exc:
            print(getattr(exc, "code", exc))
        """
    )
    assert out.strip().splitlines() == ["[]", "reasoning 2", "INVALID_ITEM"]


def test_a_plain_round_trip_defines_no_usage_report_and_no_type_adapter() -> None:
    # A tool round trip reads no usage report and validates no plain type; each of those, and
    # a tool declared to run in a worker thread, asked for afterwards, imports what it needs.
    out = _run(
        """
        import sys
        import anyio
        import pydantic
        import noetic as nt
        from noetic import items, usage
        from noetic.testing import ScriptedModel, text_reply, tool_call_reply

        class Args(pydantic.BaseModel):
            a: int

        add = nt.tool("add", description="Add.", input=Args, execute=lambda a: a.a + 1)
        slow = nt.tool("slow", description="Slow.", input={"type": "object"}, execute=lambda a: 7, in_thread=True)
        later = ("noetic.usage_reports", "pydantic.type_adapter")

        async def main() -> None:
            replies = [tool_call_reply("add", {"a": 2}), text_reply("3")]
            agent = nt.call_model("answer", tools=[add])
            async with nt.AgentHarness("plain", agent_graph=agent, model=ScriptedModel(replies)) as h:
                first = await h.run("1 + 2?")
            print(first.text, [name for name in later if name in sys.modules])
            print(first.last_layer_usage.history_tokens > 0, type(first.last_layer_usage).__name__)
            replies = [tool_call_reply("slow", {}), text_reply("done")]
            agent = nt.call_model("answer", tools=[slow])
            async with nt.AgentHarness("thread", agent_graph=agent, model=ScriptedModel(replies)) as h:
                second = await h.run("go")
            print([i.output for i in second.items if i.type == "function_call_output"])

        anyio.run(main)
        print(usage.StepMeta(step_id="s").step_id, "StepMeta" in dir(usage), usage.StepMeta is usage.StepMeta)
        print(items.parse_item({"type": "message", "role": "user", "content": "hi"}).type)
        print([name for name in later if name not in sys.modules])
        try:
            usage.NoSuchReport
        except AttributeError as exc:
            print("NoSuchReport" in str(exc))
        """
    )
    assert out.strip().splitlines() == [
        "3 []",
        "True LastLayerUsage",
        "['7']",
        "s True True",
        "message",
        "[]",
        "True",
    ]


def test_custom_items_and_the_other_steps_work_on_first_use_after_a_bare_import() -> None:
    out = _run(
        """
        import sys
        import anyio
        import noetic as nt
        from noetic.testing import ScriptedModel
        assert "noetic.custom_items" not in sys.modules and "noetic.steps.loop" not in sys.modules
        assert {"CustomItem", "custom_item", "is_custom_item", "loop", "sequence", "until"} <= set(dir(nt))
        from noetic.custom_items import CustomItem
        from noetic.steps.loop import loop
        assert nt.CustomItem is CustomItem and nt.loop is loop
        print(nt.custom_item.__module__)
        graph = nt.sequence("both", [nt.run_code("one", lambda x: x + 1), nt.run_code("two", lambda x: x * 2)])

        async def main() -> None:
            async with nt.AgentHarness("steps", agent_graph=graph, model=ScriptedModel([])) as h:
                print((await h.run(1)).output)

        anyio.run(main)
        """
    )
    assert out.strip().splitlines() == ["noetic.custom_items", "4"]


def test_import_noetic_runs_no_collection_and_restores_the_collector() -> None:
    # The core's modules load with cyclic GC paused (nothing they make is garbage); the
    # collector comes back exactly as it was: on, or off when the program had turned it off,
    # also when the import fails half-way.
    out = _run(
        """
        import gc, sys
        runs = []

        def importing_noetic() -> bool:  # its module object exists; its body has not ended yet
            return "noetic" in sys.modules and not hasattr(sys.modules["noetic"], "__all__")

        gc.callbacks.append(lambda phase, info: importing_noetic() and runs.append(phase))
        sys.modules["noetic.harness"] = None  # makes `import noetic` fail half-way
        try:
            import noetic
        except ImportError:
            pass
        print(gc.isenabled(), "noetic" in sys.modules)
        del sys.modules["noetic.harness"]
        gc.disable()
        import noetic
        print(gc.isenabled(), [m for m in sys.modules if m.startswith("noetic.steps.model")])
        gc.enable()
        for name in [m for m in sys.modules if m == "noetic" or m.startswith("noetic.")]:
            del sys.modules[name]
        gc.collect()
        runs.clear()
        import noetic
        print(gc.isenabled(), runs)
        """
    )
    assert out.strip().splitlines() == ["True False", "False ['noetic.steps.model_call']", "True []"]


def test_import_noetic_leaves_its_objects_to_the_full_collections() -> None:
    # Un-pausing the collector used to leave every object the import made counted as young, so
    # the first allocation after the core's body set off one young collection walking all of
    # them (10 ms and more of a 0.1 s import). They go to the oldest generation instead: no
    # collection runs during the whole `import noetic` statement, the young count starts from
    # zero, and the next full collection still reaches what they hold (a cycle made before the
    # import is freed by it). A program's own frozen objects stay frozen.
    # (Collections before the first of the core's modules loads are the program's own.)
    out = _run(
        """
        import gc, sys, weakref
        runs = []
        class Cycle:
            pass
        before = Cycle()
        before.me = before
        cycle = weakref.ref(before)
        del before

        def loading_the_core() -> bool:
            return any(name.startswith("noetic.") for name in sys.modules)

        gc.callbacks.append(lambda phase, info: phase == "start" and loading_the_core() and runs.append(phase))
        import noetic
        del gc.callbacks[:]
        oldest = {id(o) for o in gc.get_objects(generation=2)}
        print(runs, gc.get_count()[0] < 50, id(noetic.AgentHarness) in oldest, gc.get_freeze_count())
        gc.collect()
        print(cycle() is None)
        """
    )
    assert out.strip().splitlines() == ["[] True True 0", "True"]
    frozen = _run(
        """
        import gc
        kept = [[]]
        gc.freeze()
        import noetic
        print(gc.is_tracked(kept) and not any(o is kept for o in gc.get_objects()), gc.isenabled())
        """
    )
    assert frozen.strip() == "True True"


def test_the_inspector_streaming_hooks_and_layer_helpers_load_on_first_use() -> None:
    # Each deferred piece is imported by its first use and behaves as before: a bad `inspect=`
    # is still refused at construction, `h.stream` still streams, `nt.hookimpl` is the plugin
    # marker, and the layer names resolve to their modules (`with_context` stays the function).
    out = _run(
        """
        import sys
        import anyio
        import noetic as nt
        from noetic.errors import NoeticConfigError
        from noetic.testing import ScriptedModel, text_reply
        deferred = ("noetic.inspect_sink", "noetic.streamed_turn", "noetic.hookspecs", "noetic.layers.view")
        assert not [m for m in deferred if m in sys.modules]
        agent = nt.call_model("answer")
        try:
            nt.AgentHarness("bad", agent_graph=agent, model=ScriptedModel([]), inspect="ftp://example.com")
        except NoeticConfigError as exc:
            print(exc.code)
        print("noetic.inspect_sink" in sys.modules)

        async def main() -> None:
            model = ScriptedModel([text_reply("hi")])
            async with nt.AgentHarness("stream", agent_graph=agent, model=model, inspect="") as h:
                assert h.inspect_sink is None and "noetic.streamed_turn" not in sys.modules
                async with h.stream("hello") as turn:
                    async for _ in turn:
                        pass
                print(turn.response.text)

        anyio.run(main)
        from noetic.hookspecs import hookimpl
        assert nt.hookimpl is hookimpl
        import noetic.layers as layers
        from noetic.layers.provides import LayerHandle
        from noetic.layers.report import render_layer_usage
        from noetic.layers.view import View, assemble_view
        from noetic.layers.with_context import with_context
        assert (layers.LayerHandle, layers.render_layer_usage) == (LayerHandle, render_layer_usage)
        assert (layers.View, layers.assemble_view) == (View, assemble_view)
        assert layers.with_context is with_context is nt.with_context
        print("ok")
        """
    )
    assert out.strip().splitlines() == ["INSPECT_URL_INVALID", "True", "hi", "ok"]


def test_deferred_names_are_listed_and_typed_like_the_rest() -> None:
    out = _run(
        """
        import sys
        import noetic, noetic.durable
        assert "noetic.workflows" not in sys.modules and "sqlite3" not in sys.modules
        assert "workflow" in dir(noetic) and "workflow" in noetic.__all__
        assert {"SqliteCheckpointStore", "StepLedger"} <= set(dir(noetic.durable))
        assert set(noetic.durable.__all__) <= set(dir(noetic.durable))
        from noetic import workflow
        from noetic.workflows import workflow as defined
        from noetic.durable import SqliteCheckpointStore, StepLedger
        from noetic.durable.sqlite import SqliteCheckpointStore as sqlite_store
        assert workflow is defined is noetic.workflow and SqliteCheckpointStore is sqlite_store
        assert "workflow" in vars(noetic)  # cached: looked up once
        try:
            noetic.no_such_name
        except AttributeError as exc:
            assert "no_such_name" in str(exc)
        else:
            raise AssertionError("an unknown name must raise AttributeError")
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_deferred_features_work_on_first_use(tmp_path: object) -> None:
    # A fresh interpreter, a bare `import noetic`, then a workflow document run under SQLite storage:
    # the first use imports the workflow machinery, JSONata and the store, and they work.
    out = _run(
        f"""
        import sys
        import anyio
        import noetic as nt
        assert "noetic.workflows" not in sys.modules and "noetic.durable.sqlite" not in sys.modules
        from noetic.testing import ScriptedModel

        document = {{
            "version": 1,
            "root": {{"kind": "compute", "id": "double", "expr": "{{ 'n': n * 2 }}"}},
        }}
        flow = nt.workflow("double", document)
        url = "sqlite:///{tmp_path}/first-use.db"

        async def main() -> None:
            async with nt.AgentHarness("first-use", agent_graph=flow, model=ScriptedModel([]), storage=url) as h:
                first = await h.run({{"n": 21}}, thread_id="t")
            print(first.output)
            assert "sqlite3" in sys.modules and "jsonata" in sys.modules

        anyio.run(main)
        """
    )
    assert out.strip() == "{'n': 42}"


def test_anchoring_is_imported_when_a_call_has_layers() -> None:
    # A harness without layers never builds its anchoring store; the first call with a layer
    # imports it, pins the layer's render and reports the epoch in the call's usage (whose
    # models are built on that first use).
    out = _run(
        """
        import sys
        import anyio
        import noetic
        import noetic as nt
        from noetic.testing import ScriptedModel, text_reply

        class Notes:
            id = "notes"
            slot = 100

            async def recall(self, ctx, budget):
                return "Remember the notes."

        async def main() -> None:
            bare = nt.call_model("bare")
            async with nt.AgentHarness("plain", agent_graph=bare, model=ScriptedModel([text_reply("a")])) as h:
                await h.run("hi")
            layered_machinery = ("noetic.layers.anchoring", "noetic.layers.call", "noetic.layers.steering")
            assert not [name for name in layered_machinery if name in sys.modules]
            # nor were the validators of the layer-usage snapshot built (nobody read one)
            assert not noetic.usage.LastLayerUsage.__pydantic_complete__
            layered = nt.call_model("layered", layers=[Notes()])
            async with nt.AgentHarness("layered", agent_graph=layered, model=ScriptedModel([text_reply("b")])) as h:
                usage = (await h.run("hi")).last_layer_usage
            assert all(name in sys.modules for name in layered_machinery)
            print([entry.layer_id for entry in usage.layers], usage.epoch is not None)

        anyio.run(main)
        """
    )
    assert out.strip() == "['notes'] True"


def test_context_cache_is_checked_at_construction_and_its_defaults_are_built_when_read() -> None:
    out = _run(
        """
        import sys
        import noetic as nt
        from noetic.errors import NoeticConfigError
        from noetic.testing import ScriptedModel

        agent = nt.call_model("answer")
        plain = nt.AgentHarness("plain", agent_graph=agent, model=ScriptedModel([]))
        assert plain.cache_control and "noetic.layers.cache_config" not in sys.modules
        assert plain.layer_memory.config.max_epoch_assemblies == 50  # the defaults, built on reading
        off = nt.AgentHarness("off", agent_graph=agent, model=ScriptedModel([]), context_cache={"enabled": False})
        assert not off.cache_control
        try:
            nt.AgentHarness("bad", agent_graph=agent, model=ScriptedModel([]), context_cache={"nope": 1})
        except NoeticConfigError as exc:
            print(exc.code)
        """
    )
    assert out.strip() == "INVALID_CONTEXT_CACHE"
