"""The documentation site builds with `mkdocs build --strict` (broken links and missing pages
fail), offline: the pages load no font, script or stylesheet from another host."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).with_name("mkdocs")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.slow
def test_every_docs_page_is_built_and_in_the_nav(site: Path) -> None:
    home = (site / "index.html").read_text("utf-8")
    for page in (ROOT / "docs").glob("*.md"):
        built = site / "index.html" if page.stem == "index" else site / page.stem / "index.html"
        assert built.is_file(), page.name
        assert page.stem == "index" or f'href="{page.stem}/"' in home, f"{page.name} is not in the nav"


@pytest.mark.slow
def test_pages_load_nothing_from_another_host(site: Path) -> None:
    remote = re.compile(r'<(?:script|img|link)\b[^>]*\b(?:src|href)="(?:https?:)?//[^"]*"', re.I)
    for html in site.rglob("*.html"):
        found = [
            m.group(0)
            for m in remote.finditer(html.read_text("utf-8"))
            if 'rel="canonical"' not in m.group(0)
        ]
        assert not found, (html.relative_to(site), found)


@pytest.mark.slow
def test_the_behaviour_page_has_an_anchor_per_rule(site: Path) -> None:
    text = (ROOT / "docs" / "behaviour.md").read_text("utf-8")
    ids = re.findall(r'^[ \t]*(?:[-*][ \t]+)?(?:<a id="[^"]+"></a>)?\*\*([A-Z]{2,4}-\d+)\b', text, re.M)
    html = (site / "behaviour" / "index.html").read_text("utf-8")
    missing = [rule for rule in ids if f'id="{rule}"' not in html]
    assert ids and not missing, missing
