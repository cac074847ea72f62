"""Every code block in README.md, docs/ and the package READMEs runs here, so an example cannot
silently go wrong.

Python blocks are found and run by `pytest-examples` (each block is written to its own file and
run as `__main__` in a fresh module, in-process): the working directory is a fresh temporary
folder, `OPENROUTER_API_KEY` is unset and no host but this machine resolves. In a block that shows output, every `print(...)` must
be followed by its exact output as `#> ...` comment lines (`pytest tests/docs --update-examples`
writes them); a block with no `#>` line is only run (its own `assert`s still hold). The one
opt-out is the fence tag `{.python .requires-network}`, for blocks that talk to a real provider:
those are only compiled. Shell blocks (```bash) whose every line is an offline `noetic` command
(`--version`, `plugins`, `schema`, `validate`, `run`, `context`; no `openrouter` model) run as
subprocesses from the repository root and must exit 0; other shell blocks are shown, not run.
The conventions are described for contributors in docs/architecture.md.
"""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_examples.run_code
from pytest_examples import CodeExample, EvalExample, find_examples

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("**/*.md")),
    *sorted((ROOT / "packages").glob("*/README.md")),
]
#: The fence tag for the only blocks that may skip running: they need a real provider.
NETWORK_TAG = "requires-network"
#: Where a `noetic` CLI block finds its command: the console script next to this interpreter.
NOETIC = Path(sys.executable).with_name("noetic")


def _python_blocks() -> list[CodeExample]:
    return [example for path in DOC_FILES for example in find_examples(path)]


def _block_id(example: CodeExample) -> str:
    return f"{example.path.relative_to(ROOT)}:{example.start_line}"


#: The subcommands a shell block may run: offline, finite, and harmless to the checkout.
SAFE_COMMANDS = ("--version", "plugins", "schema", "validate", "run", "context")


def _runnable(command: str) -> bool:
    words = command.split()
    return (
        len(words) > 1 and words[0] == "noetic" and words[1] in SAFE_COMMANDS and "openrouter" not in command
    )


def _bash_blocks() -> Iterator[tuple[str, list[str]]]:
    """Yield `(id, commands)` for each ```bash block made only of safe `noetic` commands."""
    fence = re.compile(r"^```(?:bash|sh|shell)[ \t]*\n(.*?)^```", re.M | re.S)
    for path in DOC_FILES:
        text = path.read_text(encoding="utf-8")
        for match in fence.finditer(text):
            body = match.group(1)
            lines = [line.split(" #", 1)[0].strip() for line in body.splitlines()]
            commands = [line for line in lines if line and not line.startswith("#")]
            if commands and "\\\n" not in body and all(_runnable(command) for command in commands):
                line_no = text.count("\n", 0, match.start()) + 1
                yield f"{path.relative_to(ROOT)}:{line_no}", commands


#: The only hosts a docs block may resolve: this machine.
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", None}


def _offline_getaddrinfo(real: Any) -> Any:
    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in LOCAL_HOSTS:
            raise OSError(f"docs blocks run offline: {name!r} is not reachable from an example")
        return real(host, *args, **kwargs)

    return getaddrinfo


@pytest.fixture
def isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working directory, no API key and no network, as an offline reader would have."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", _offline_getaddrinfo(socket.getaddrinfo))
    # pytest-examples installs each block as `__main__`; give pytest's own module back after.
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    # Its synthetic traceback for a failing block breaks traceback formatting on Python 3.11
    # (an INTERNALERROR instead of a failed test); keep the real traceback, which points at the
    # block's file in the temporary folder with the block's own line numbers.
    monkeypatch.setattr(pytest_examples.run_code, "create_example_traceback", lambda *args: None)
    return cwd


@pytest.mark.parametrize("example", _python_blocks(), ids=_block_id)
def test_python_block_runs_and_prints_what_it_shows(
    example: CodeExample, eval_example: EvalExample, isolated_cwd: Path
) -> None:
    eval_example.set_config(line_length=110, target_version="py311")
    if NETWORK_TAG in example.prefix_tags():
        compile(example.source, str(example.path), "exec")
        return
    if eval_example.update_examples:
        eval_example.run_print_update(example)
    elif "#>" in example.source:
        eval_example.run_print_check(example)
    else:  # a block that shows no output still has to run (and its asserts to hold)
        eval_example.run(example)


def test_only_offline_cli_commands_are_run() -> None:
    assert _runnable("noetic validate examples/drain.json")
    assert not _runnable("noetic worker --storage postgresql://db/agents my:agent")
    assert not _runnable("noetic run doc.json --model openrouter:openai/gpt-4o-mini")
    assert not _runnable("make docs")


def test_a_block_cannot_reach_the_network(isolated_cwd: Path) -> None:
    with pytest.raises(OSError, match="docs blocks run offline"):
        socket.getaddrinfo("openrouter.ai", 443)
    assert socket.getaddrinfo("127.0.0.1", 80)


def test_the_opt_out_tag_is_only_on_provider_blocks() -> None:
    """`.requires-network` is for real-provider calls only: each such block names OpenRouter."""
    tagged = [e for e in _python_blocks() if NETWORK_TAG in e.prefix_tags()]
    for example in tagged:
        assert "openrouter" in example.source.lower(), _block_id(example)


def test_docs_have_python_blocks_from_every_page() -> None:
    """The collector sees the README and each docs page that has code (a silent zero would pass)."""
    pages = {str(e.path.relative_to(ROOT)) for e in _python_blocks()}
    expected = {"README.md", *(f"docs/{name}.md" for name in ("index", "steps", "layers", "custom-items"))}
    expected |= {"docs/workflows.md", "docs/durable.md", "docs/plugins.md"}
    packages = ("core", "adapters-openrouter", "layers-scratchpad", "fs-fsspec")
    assert expected | {f"packages/{name}/README.md" for name in packages} <= pages


@pytest.mark.parametrize(
    ("block", "commands"), [pytest.param(block, commands, id=block) for block, commands in _bash_blocks()]
)
def test_cli_block_runs(block: str, commands: list[str]) -> None:
    for command in commands:
        argv = shlex.split(command)
        result = subprocess.run(
            [str(NOETIC), *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, f"{block}: `{command}` exited {result.returncode}\n{result.stderr}"
