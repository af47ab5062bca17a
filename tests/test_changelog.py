"""CHANGELOG.md by release: the package's version has its dated section, newest first,
and the release workflow refuses a tag whose version has none."""

from __future__ import annotations

import re
from pathlib import Path

import passdown

ROOT = Path(__file__).resolve().parent.parent
HEADING = re.compile(r"^## (?P<name>\S+)(?: — (?P<date>\d{4}-\d{2}-\d{2}))?$", re.M)


def _sections() -> list[tuple[str, str | None]]:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return [(m["name"], m["date"]) for m in HEADING.finditer(text)]


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def test_the_version_has_a_dated_section_and_releases_go_newest_first() -> None:
    sections = _sections()
    releases = [(name, date) for name, date in sections if name != "Unreleased"]
    assert [name for name, _ in sections].count("Unreleased") <= 1
    if ("Unreleased", None) in sections:
        assert sections[0] == ("Unreleased", None), "Unreleased comes first"
    assert all(date for _, date in releases), releases
    assert releases[0][0] == passdown.__version__, (releases[0], passdown.__version__)
    versions = [_key(name) for name, _ in releases]
    assert versions == sorted(versions, reverse=True)
    dates = [date for _, date in releases]
    assert dates == sorted(dates, reverse=True)


def test_the_release_workflow_checks_the_tag_against_the_changelog() -> None:
    workflow = (ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8")
    assert "CHANGELOG.md" in workflow and "^## $version — " in workflow
