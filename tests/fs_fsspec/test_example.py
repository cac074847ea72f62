"""examples/fs_agent.py: the same agent on memory:// and on a local directory gives the same
tool results and files — only the fs= argument differs (issue 8, "Checked by")."""

from __future__ import annotations

import importlib.util
import uuid
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fs_agent.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fs_agent_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.anyio
async def test_example_behaves_the_same_on_both_filesystems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = _load()
    await example.run_agent(f"memory://example-{uuid.uuid4().hex}")
    on_memory = capsys.readouterr().out.splitlines()
    await example.run_agent(f"file://{tmp_path}")
    on_disk = capsys.readouterr().out.splitlines()
    assert on_memory[1:] == on_disk[1:]
    assert any("[PATH_ESCAPE]" in line for line in on_disk)
    assert (tmp_path / "reports" / "summary.md").read_text() == "# Summary\n- all checks passed\n"
    assert _names(tmp_path) == ["reports"]
