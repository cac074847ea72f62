"""The durability options only mean something with a checkpoint store: given without `storage=`
they are refused when the harness is built, with a hint, instead of silently doing nothing."""

from __future__ import annotations

import noetic as nt
import pytest


def test_turn_durability_without_storage_is_refused() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda _: 1), durability="turn")
    assert err.value.code == "DURABILITY_INVALID"
    assert "durability='turn'" in err.value.message and "storage=" in err.value.message
    assert "storage='sqlite:///runs.db'" in err.value.hint


def test_an_unknown_durability_without_storage_is_still_named_as_unknown() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.AgentHarness("t", durability="sometimes")  # type: ignore[arg-type]
    assert err.value.code == "DURABILITY_INVALID"
    assert "must be one of" in err.value.message


def test_retention_without_storage_is_refused() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.AgentHarness("t", step_ledger_retention={"max_entries": 10})
    assert err.value.code == "STEP_LEDGER_RETENTION_INVALID"
    assert "without storage=" in err.value.message
    assert "step_ledger_retention=" in err.value.hint


@pytest.mark.anyio
async def test_the_defaults_and_the_options_with_storage_still_work() -> None:
    graph = nt.run_code("a", lambda _: 1)
    async with nt.AgentHarness("t", agent_graph=graph, durability="step") as plain:
        assert (await plain.run("")).output == 1
    async with nt.AgentHarness(
        "t",
        agent_graph=graph,
        storage="memory://",
        durability="turn",
        step_ledger_retention={"max_entries": 10},
    ) as durable:
        assert (await durable.run("")).output == 1
