"""The reference pages keep up with the code: every plugin hook has its section in
docs/plugins.md, every layer hook its row in docs/layers.md, every CLI command its row in
docs/cli.md."""

from __future__ import annotations

import re
from pathlib import Path

from noetic import hookspecs
from noetic.cli import _parser
from noetic.layers.contract import HOOK_NAMES as LAYER_HOOKS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_plugin_hook_has_a_section() -> None:
    page = (DOCS / "plugins.md").read_text("utf-8")
    missing = [name for name in hookspecs.HOOK_NAMES if f"### `{name}`" not in page]
    assert not missing, f"docs/plugins.md has no section for {missing}"


def test_every_layer_hook_is_in_the_hook_table() -> None:
    page = (DOCS / "layers.md").read_text("utf-8")
    missing = [name for name in LAYER_HOOKS if f"| `{name}` |" not in page]
    assert not missing, f"docs/layers.md's hook table lacks {missing}"


def test_every_cli_command_is_in_the_command_table() -> None:
    page = (DOCS / "cli.md").read_text("utf-8")
    built = _parser()  # the core commands only (no plugin manager given)
    parser = built[0] if isinstance(built, tuple) else built
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert commands
    missing = [name for name in commands if f"| `noetic {name}" not in page]
    assert not missing, f"docs/cli.md's command table lacks {missing}"


def test_the_readme_links_only_to_files_in_the_repository() -> None:
    readme = DOCS.parent / "README.md"
    targets = re.findall(r"\]\(([^)]+)\)", readme.read_text("utf-8"))
    assert targets
    outside = [t for t in targets if "://" in t or t.startswith(("/", "..", "mailto:"))]
    assert not outside, f"README.md links outside the repository: {outside}"
    missing = [t for t in targets if not (readme.parent / t.split("#", 1)[0]).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
