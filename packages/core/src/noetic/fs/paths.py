"""The sandbox's first line: turning whatever path a user or a model wrote into a safe one.

`safe_path(path)` returns a normalised path relative to the adapter's root — segments joined by
`/`, no `.` or empty segments, `""` for the root itself — or raises `NoeticError` code
`PATH_ESCAPE` naming the path and the rule it broke. It is purely lexical and the same for every
backend; backends with symlinks add their own check on top (see `noetic_fs_fsspec`).

Rejected, anywhere in the path:

- absolute paths (`/etc`), drive letters and every other `:` (`C:`, `file://`, `s3://`,
  `simplecache::`, NTFS streams `a.txt:x`), backslashes, and home references (`~`, `~root`:
  any segment starting with `~`);
- `..` segments, and segments made only of dots and spaces (`...`, `. .`), which some systems
  read as `..`;
- control, format and separator characters (NUL, newlines, zero-width and bidi marks, lone
  surrogates), and percent-encoded octets (`%2e%2e`, `%2f`, `%00`): any `%` followed by two hex
  digits;
- Unicode look-alikes: characters that render as a slash, backslash, dot, colon, percent or
  tilde (division slash, big solidus, one-dot leader, …), and any segment whose NFKC normal
  form breaks one of the rules above (fullwidth full stops, solidus or colon: U+FF0E, U+FF0F,
  U+FF1A).

Everything else is a literal name: spaces, `%` not followed by hex digits, glob characters,
and ordinary non-ASCII letters are all allowed.
"""

from __future__ import annotations

import re
import unicodedata

from noetic.fs.errors import path_escape

__all__ = ["ancestors", "parent", "safe_path"]

#: Unicode categories never allowed in a name: controls, format marks (zero-width, bidi),
#: surrogates, line and paragraph separators.
_BANNED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

#: Characters that look like `/`, `\`, `.`, `:`, `%` or `~` (whether or not NFKC maps them).
_LOOKALIKES = frozenset(
    "\u2215\u2044\u29f8\u29f9\u2216\u2571\u2572\u27cb\u27cd\u1735\u0337\u0338"  # slashes
    "\ufe68\uff0f\uff3c"  # small / fullwidth solidus and reverse solidus
    "\u2024\u2025\u2026\ufe52\uff0e\u3002\uff61"  # dot leaders, small / fullwidth / ideographic stops
    "\uff1a\ufe55\ua789\u2236"  # colons
    "\uff05\ufe6a\u2052"  # percent signs
    "\uff5e\u223c\u02dc"  # tildes
)

_PERCENT_OCTET = re.compile(r"%[0-9A-Fa-f]{2}")
_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def safe_path(path: str) -> str:
    """The normalised root-relative form of `path`, or `PATH_ESCAPE`; see the module docstring."""
    if not isinstance(path, str):
        raise path_escape(repr(path), f"a path must be a string, not {type(path).__name__}")
    reason = _whole_path_problem(path)
    if reason is not None:
        raise path_escape(path, reason)
    segments: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        reason = _segment_problem(segment)
        if reason is None and not segment.isascii():  # ASCII is its own NFKC form
            normal = unicodedata.normalize("NFKC", segment)
            if normal != segment:
                reason = _normal_form_problem(normal)
        if reason is not None:
            raise path_escape(path, reason)
        segments.append(segment)
    return "/".join(segments)


def parent(rel: str) -> str:
    """The parent of a normalised relative path (`""` for a top-level name and the root)."""
    return rel.rpartition("/")[0]


def ancestors(rel: str) -> list[str]:
    """The proper ancestors of a normalised relative path, outermost first, root excluded."""
    parts = rel.split("/")[:-1] if rel else []
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _whole_path_problem(path: str) -> str | None:
    if path.startswith("/"):
        return "absolute paths are not allowed"
    if "\\" in path:
        return "backslashes are not allowed"
    if ":" in path:
        return "':' is not allowed (no drive letters, URLs or protocol prefixes)"
    return None


def _segment_problem(segment: str, *, lookalikes: bool = True) -> str | None:
    if segment == "..":
        return "'..' segments are not allowed"
    if not segment.strip(". "):
        return "names made only of dots and spaces are not allowed"
    if segment.startswith("~"):
        return "names starting with '~' are not allowed (no home-directory references)"
    if _PERCENT_OCTET.search(segment):
        return "percent-encoded characters such as '%2e' are not allowed"
    if segment.isascii():
        control = _ASCII_CONTROL.search(segment)
        if control is not None:
            return f"control character U+{ord(control.group()):04X} is not allowed"
        return None
    for char in segment:
        if unicodedata.category(char) in _BANNED_CATEGORIES:
            return f"control or invisible character U+{ord(char):04X} is not allowed"
        if lookalikes and char in _LOOKALIKES:
            return f"look-alike character U+{ord(char):04X} ({unicodedata.name(char, '?')}) is not allowed"
    return None


def _normal_form_problem(normal: str) -> str | None:
    """A problem with a segment's NFKC form, which may carry separators the original did not.

    Only real ASCII dangers count here: a look-alike produced by normalisation (the fraction
    slash U+2044 inside the normal form of U+00BD, one half) is harmless once the original passed.
    """
    problem = _whole_path_problem(normal)
    if problem is None and "/" in normal:
        problem = "a character that normalises to '/' is not allowed"
    if problem is None:
        problem = _segment_problem(normal, lookalikes=False)
    if problem is None:
        return None
    return f"its Unicode normal form {normal!r} breaks a rule: {problem}"
