"""MkDocs hooks of the documentation site (`mkdocs.yml` names this file).

The nav lists pages that other work streams add later (tracing, scale-out, the inspector). A nav
entry whose page does not exist yet is dropped here, so `mkdocs build --strict` neither fails nor
renders a dead link; the entry appears as soon as its page lands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _present(entry: Any, docs_dir: Path) -> Any:
    """The nav entry with pages missing from `docs_dir` removed, or None when nothing is left."""
    if isinstance(entry, str):
        return entry if entry.startswith(("http:", "https:")) or (docs_dir / entry).is_file() else None
    if isinstance(entry, dict):
        kept = {}
        for title, value in entry.items():
            value = _present(value, docs_dir)
            if value not in (None, []):
                kept[title] = value
        return kept or None
    if isinstance(entry, list):
        return [kept for item in entry if (kept := _present(item, docs_dir)) is not None]
    return entry


def on_config(config: Any) -> Any:
    """Drop nav entries whose page is not in docs/ yet."""
    config["nav"] = _present(config["nav"], Path(config["docs_dir"]))
    return config
