"""Every behaviour-rule id cited in the project (`LY-5`, `RS-4..RS-9`, …) is defined in
docs/behaviour.md, so a citation always leads somewhere; the built page has an anchor per id
(tests/docs/test_site.py)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BEHAVIOUR = ROOT / "docs" / "behaviour.md"
#: A rule id: two to four capitals, a dash, a number; a range `RS-4..RS-9` (or `RS-4..9`).
RULE = re.compile(r"\b([A-Z]{2,4})-(\d+)(?:\.\.(?:\1-)?(\d+))?\b")
#: Prefixes that look like rule ids but are not (encodings, checksums, hashes, standards).
NOT_RULES = {"UTF", "CRC", "SHA", "ISO", "RFC", "PEP", "GPT", "HTTP", "ECMA"}
SCANNED = ("packages", "tests", "docs", "examples", "bench", "scripts", "README.md")
SUFFIXES = {".py", ".md", ".json", ".toml"}
#: A definition: at the start of a line (after an optional bullet and anchor), the bold id.
DEFINITION = re.compile(r'^[ \t]*(?:[-*][ \t]+)?(?:<a id="[A-Z]{2,4}-\d+"></a>)?\*\*([A-Z]{2,4}-\d+)\b', re.M)


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


def defined_ids(text: str) -> list[str]:
    """The ids a behaviour page defines: a bullet or paragraph that starts with the bold id
    (an explicit `<a id="..."></a>` before it is optional: the site build adds missing ones)."""
    return DEFINITION.findall(text)


def test_definitions_are_found_in_either_written_form() -> None:
    text = '- <a id="RS-4"></a>**RS-4** — a\n- **TU-2** — b\n\n**CTX-9 — c.** d\nsee **LY-5** here\n'
    assert defined_ids(text) == ["RS-4", "TU-2", "CTX-9"]


def test_every_cited_rule_id_is_defined() -> None:
    defined = set(defined_ids(BEHAVIOUR.read_text("utf-8")))
    missing: dict[str, list[str]] = {}
    for path in _files():
        for rule in cited_ids(path.read_text("utf-8", errors="replace")) - defined:
            missing.setdefault(rule, []).append(str(path.relative_to(ROOT)))
    assert not missing, f"rule ids without a definition in docs/behaviour.md: {missing}"


def test_each_rule_is_defined_once() -> None:
    ids = defined_ids(BEHAVIOUR.read_text("utf-8"))
    duplicates = sorted({rule for rule in ids if ids.count(rule) > 1})
    assert not duplicates, f"defined more than once in docs/behaviour.md: {duplicates}"
    assert len(ids) > 100
