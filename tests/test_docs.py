"""The docs site's promises that `mkdocs build --strict` (run by .ci/run) does not check:
a page for every agent, the pictures made by the script (which runs here, in headless
Chromium, over `passdown ui`), and the README pointing at pages that exist."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PICTURES = {"web-view-timeline.png", "web-view-handoff.png", "web-view-compare.png"}
PICTURES |= {"handoff-md.png"}


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is no PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_every_agent_has_a_page_in_the_nav() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    agents = pyproject["project"]["entry-points"]["passdown.agents"]
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    index = (DOCS / "agents" / "index.md").read_text(encoding="utf-8")
    for key, target in agents.items():
        page = DOCS / "agents" / f"{key}.md"
        assert page.is_file(), f"no page for agent {key}"
        text = page.read_text(encoding="utf-8")
        assert f"::: {target.split(':')[0]}\n" in text, f"{key}: the reader's docstring"
        assert "## Hooks" in text, key
        assert f"agents/{key}.md" in nav, f"{key} is not in mkdocs.yml's nav"
        assert f"]({key}.md)" in index, f"the agents index does not link {key}"


def test_the_pages_show_the_pictures_the_script_makes() -> None:
    shown = {
        name
        for page in DOCS.rglob("*.md")
        for name in re.findall(r"\]\(images/([^)]+\.png)\)", page.read_text(encoding="utf-8"))
    }
    assert shown == PICTURES
    for name in PICTURES:
        assert _png_size(DOCS / "images" / name)[0] == 1280, name


def test_screenshot_script_makes_every_picture(tmp_path: Path) -> None:
    if not shutil.which("chromium") and not Path("/usr/bin/chromium").exists():
        if os.environ.get("CI"):
            pytest.fail("no chromium in CI: bash .ci/setup installs it")
        pytest.skip("Debian's chromium is not installed (bash .ci/setup installs it)")
    out = tmp_path / "images"
    done = subprocess.run(
        [sys.executable, str(DOCS / "screenshots.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert {p.name for p in out.iterdir()} == PICTURES
    assert sorted(Path(line).name for line in done.stdout.splitlines()) == sorted(PICTURES)
    for name in PICTURES:
        width, height = _png_size(out / name)
        assert width == 1280 and height >= 400, (name, width, height)
        assert (out / name).stat().st_size > 20_000, f"{name} looks blank"


def test_screenshot_script_says_when_chromium_is_missing(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(DOCS / "screenshots.py"), "--out", str(tmp_path), "--chromium",
         str(tmp_path / "no-chromium")],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "no Chromium at" in done.stderr and not list(tmp_path.iterdir())


def test_readme_links_to_docs_pages_that_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links, "the README points at no docs page"
    for link in links:
        assert (ROOT / link).is_file(), link
