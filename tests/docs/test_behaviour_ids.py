"""Every behaviour-rule id cited in the project (`LY-5`, `RS-4..RS-9`, …) is defined in
docs/behaviour.md, each with its own anchor, so a citation always leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BEHAVIOUR = ROOT / "docs" / "behaviour.md"
#: A rule id: two to four capitals, a dash, a number; a range `RS-4..RS-9` (or `RS-4..9`).
RULE = re.compile(r"\b([A-Z]{2,4})-(\d+)(?:\.\.(?:\1-)?(\d+))?\b")
#: Prefixes that look like rule ids but are not (encodings, checksums, hashes, standards).
NOT_RULES = {"UTF", "CRC", "SHA", "ISO", "RFC", "PEP", "GPT", "HTTP"}
SCANNED = ("packages", "tests", "docs", "examples", "bench", "scripts", "README.md")
SUFFIXES = {".py", ".md", ".json", ".toml"}


def cited_ids(text: str) -> set[str]:
    """The rule ids a text cites, ranges expanded."""
    ids = set()
    for prefix, first, last in RULE.findall(text):
        if prefix in NOT_RULES:
            continue
        for n in range(int(first), int(last or first) + 1):
            ids.add(f"{prefix}-{n}")
    return ids


def _files() -> list[Path]:
    files: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        candidates = [path] if path.is_file() else path.rglob("*")
        files += [p for p in candidates if p.suffix in SUFFIXES and ".venv" not in p.parts]
    return files


def test_cited_ids_expand_ranges_and_skip_look_alikes() -> None:
    assert cited_ids("see RS-4..RS-6 and LY-2..3, UTF-8, CRC-32") == {
        "RS-4",
        "RS-5",
        "RS-6",
        "LY-2",
        "LY-3",
    }


def test_every_cited_rule_id_is_defined_with_an_anchor() -> None:
    defined = set(re.findall(r'<a id="([A-Z]{2,4}-\d+)"></a>\*\*\1\*\*', BEHAVIOUR.read_text("utf-8")))
    missing: dict[str, list[str]] = {}
    for path in _files():
        for rule in cited_ids(path.read_text("utf-8", errors="replace")) - defined:
            missing.setdefault(rule, []).append(str(path.relative_to(ROOT)))
    assert not missing, f"rule ids without a definition in docs/behaviour.md: {missing}"


def test_each_rule_is_defined_once() -> None:
    anchors = re.findall(r'<a id="([A-Z]{2,4}-\d+)"></a>', BEHAVIOUR.read_text("utf-8"))
    assert len(anchors) == len(set(anchors)) > 100
