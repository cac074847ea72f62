"""MkDocs hooks of the documentation site (`mkdocs.yml` names this file).

- The nav lists pages that are added later (tracing, scale-out, the inspector). A nav entry
  whose page does not exist yet is dropped, so `mkdocs build --strict` neither fails nor
  renders a dead link; the entry appears as soon as its page lands. A page in docs/ that the
  nav does not list is added under "More", so no page is left unreachable.
- On the behaviour page every rule definition (a line starting with the bold id, `**LY-5**`)
  gets the anchor `#LY-5` when it was written without one, so `behaviour.md#LY-5` always works.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

#: A definition line written without its anchor: optional bullet, then the bold rule id.
_BARE_DEFINITION = re.compile(r"^([ \t]*(?:[-*][ \t]+)?)\*\*([A-Z]{2,4}-\d+)\b", re.M)


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


def _listed(entry: Any) -> set[str]:
    if isinstance(entry, str):
        return {entry}
    if isinstance(entry, dict):
        return set().union(*(_listed(value) for value in entry.values()))
    if isinstance(entry, list):
        return set().union(*(_listed(item) for item in entry))
    return set()


def on_config(config: Any) -> Any:
    """Drop nav entries whose page is not in docs/ yet; list pages the nav forgot under More."""
    docs_dir = Path(config["docs_dir"])
    nav = _present(config["nav"], docs_dir) or []
    listed = _listed(nav)
    extra = sorted(p.relative_to(docs_dir).as_posix() for p in docs_dir.rglob("*.md"))
    extra = [page for page in extra if page not in listed]
    config["nav"] = [*nav, {"More": extra}] if extra else nav
    return config


def anchor_definitions(markdown: str) -> str:
    """Put `<a id="ID"></a>` before each bold rule id that starts a line and has no anchor."""
    return _BARE_DEFINITION.sub(lambda m: f'{m.group(1)}<a id="{m.group(2)}"></a>**{m.group(2)}', markdown)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Anchor every rule definition of the behaviour page."""
    return anchor_definitions(markdown) if page.file.src_uri == "behaviour.md" else markdown
