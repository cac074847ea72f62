"""The lexical sandbox `safe_path` (reliability.md §3.1: validate names ourselves).

Hand-picked cases pin each rule; hypothesis then checks the invariants on arbitrary text and
on hostile fragments hidden among ordinary names.
"""

from __future__ import annotations

import posixpath
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from noetic.errors import NoeticError
from noetic.fs.paths import ancestors, parent, safe_path
from noetic.testing.fs_conformance import HOSTILE_PATHS

ACCEPTED = {
    "": "",
    ".": "",
    "./": "",
    "notes.md": "notes.md",
    "a/b/c.txt": "a/b/c.txt",
    "./a//b/./c/": "a/b/c",
    "with space.txt": "with space.txt",
    "100%.txt": "100%.txt",
    "50%off": "50%off",
    "backup.txt~": "backup.txt~",
    ".hidden": ".hidden",
    "..hidden": "..hidden",
    "a..b": "a..b",
    "résumé/日本語.md": "résumé/日本語.md",
    "glob[1]*?.py": "glob[1]*?.py",
    "\ufb01le.txt": "\ufb01le.txt",  # the "fi" ligature: NFKC differs but is harmless
}


@pytest.mark.parametrize(("raw", "expected"), ACCEPTED.items())
def test_ordinary_paths_are_normalised(raw: str, expected: str) -> None:
    """Plain relative names pass; `.`, empty and trailing segments disappear."""
    assert safe_path(raw) == expected


@pytest.mark.parametrize("hostile", HOSTILE_PATHS)
def test_hostile_paths_raise_path_escape_naming_the_path(hostile: str) -> None:
    """Every hostile path is PATH_ESCAPE; the message quotes the path and says which rule."""
    with pytest.raises(NoeticError) as info:
        safe_path(hostile)
    error = info.value
    assert error.code == "PATH_ESCAPE"
    assert repr(hostile)[:40].rstrip("'") in error.message
    assert error.details["path"] == hostile
    assert error.details["reason"]


@pytest.mark.parametrize(
    ("hostile", "reason"),
    [
        ("../x", "'..'"),
        ("/etc", "absolute"),
        ("a\\b", "backslash"),
        ("C:/x", "':'"),
        ("~/x", "'~'"),
        ("a\x00b", "U+0000"),
        ("%2e%2e/x", "percent-encoded"),
        ("a\u2215b", "DIVISION SLASH"),
        ("\uff0e\uff0e", "FULLWIDTH FULL STOP"),
        ("...", "only of dots"),
    ],
)
def test_reason_names_the_rule(hostile: str, reason: str) -> None:
    """The `reason` detail says which rule the path broke."""
    with pytest.raises(NoeticError) as info:
        safe_path(hostile)
    assert reason in info.value.details["reason"]


def test_normal_form_checks_catch_unlisted_look_alikes() -> None:
    """Characters missing from the look-alike list are still refused when their NFKC form is
    dangerous (vertical two-dot leader -> '..', ACCOUNT OF -> 'a/c', vertical colon -> ':'),
    while harmless compatibility characters ('⑴', '½', '№') pass."""
    for harmless in ("\u2474.txt", "\u00bd.txt", "\u2116 5"):
        assert safe_path(harmless) == harmless
    for hostile in ("\ufe30", "x/\ufe30/y", "\u2100", "a\ufe13b", "\ufe19"):
        with pytest.raises(NoeticError) as info:
            safe_path(hostile)
        assert "normal form" in info.value.details["reason"]


def test_non_strings_are_refused() -> None:
    """Bytes and other objects are PATH_ESCAPE, not a TypeError from deep inside a backend."""
    for value in (b"a.txt", None, 3):
        with pytest.raises(NoeticError) as info:
            safe_path(value)  # type: ignore[arg-type]
        assert info.value.code == "PATH_ESCAPE"


def test_parent_and_ancestors() -> None:
    """Helpers over normalised paths."""
    assert parent("a/b/c") == "a/b"
    assert parent("a") == ""
    assert ancestors("a/b/c") == ["a", "a/b"]
    assert ancestors("a") == []
    assert ancestors("") == []


def _check_invariants(result: str) -> None:
    assert not result.startswith("/")
    assert "\\" not in result
    assert ":" not in result
    assert "\x00" not in result
    for segment in result.split("/") if result else ():
        assert segment not in ("", ".", "..")
        assert not segment.startswith("~")
        normal = unicodedata.normalize("NFKC", segment)
        assert "/" not in normal
        assert "\\" not in normal
        assert ":" not in normal
        assert normal.strip(". ") != ""
    joined = posixpath.normpath(posixpath.join("/sandbox/root", result))
    assert joined == "/sandbox/root" or joined.startswith("/sandbox/root/")
    assert safe_path(result) == result


@settings(max_examples=500)
@given(st.text(max_size=40))
def test_any_text_is_refused_or_safe(raw: str) -> None:
    """Whatever the input, the result is a clean relative path that stays below any root
    (lexically), and normalising again changes nothing."""
    try:
        result = safe_path(raw)
    except NoeticError as exc:
        refused: NoeticError | None = exc
    else:
        refused = None
        _check_invariants(result)
    assert refused is None or refused.code == "PATH_ESCAPE"


_NAMES = st.sampled_from(["a", "notes", "x.txt", "dir", "日本", "v1.2", "%zz", "50%"])
_HOSTILE_SEGMENTS = st.sampled_from(
    [
        "..",
        "...",
        " .. ",
        "~",
        "~user",
        "%2e%2e",
        "%2F",
        "%5c",
        "%00",
        "\uff0e\uff0e",
        "\u2025",
        "\u2024\u2024",
        "\ufe52\ufe52",
        "a\u2215b",
        "a\u2044b",
        "a\uff0fb",
        "a\uff3cb",
        "a\u29f8b",
        "..\u200b",
        "\u202e..",
        "a\x00",
        "a\nb",
        "C:",
        "a:b",
        "file:",
        "a\\b",
    ]
)


@settings(max_examples=500)
@given(st.lists(_NAMES, max_size=3), _HOSTILE_SEGMENTS, st.lists(_NAMES, max_size=3))
def test_a_hostile_segment_anywhere_is_refused(before: list[str], hostile: str, after: list[str]) -> None:
    """A hostile segment is refused wherever it sits among ordinary names."""
    raw = "/".join([*before, hostile, *after])
    with pytest.raises(NoeticError) as info:
        safe_path(raw)
    assert info.value.code == "PATH_ESCAPE"


@settings(max_examples=300)
@given(st.lists(_NAMES, min_size=1, max_size=4), st.booleans(), st.booleans())
def test_leading_slash_is_refused_whatever_follows(names: list[str], double: bool, trailing: bool) -> None:
    """Absolute paths are refused, never re-rooted (unlike fsspec's DirFileSystem)."""
    raw = ("//" if double else "/") + "/".join(names) + ("/" if trailing else "")
    with pytest.raises(NoeticError):
        safe_path(raw)
