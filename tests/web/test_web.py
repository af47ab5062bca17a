"""The web view in headless Chromium, over handoffs written by real `passdown export` runs.

Each test saves a screenshot of the page it checks under `<pytest base temp>/screenshots/`.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2 as httpx
import pytest

from passdown._redact import redact
from passdown.records import record_to_dict
from passdown.store import open_store
from passdown.store._tokens import create_token
from recorded import scenarios

from .conftest import REBIND_HOST, TeamServer, Trail, UiServer

pytestmark = pytest.mark.timeout(300)

OTHER_PROJECT = "other-project"


def rows(page: Any) -> list[str]:
    return page.eval_on_selector_all("#timeline .row", "els => els.map(e => e.dataset.id)")


def row_text(page: Any, handoff_id: str) -> str:
    return str(page.inner_text(f'.row[data-id="{handoff_id}"]'))


def project_url(base: str, project: str) -> str:
    return f"{base}p/{quote(project, safe='')}/"


# -- timeline, handoff, keyboard ---------------------------------------------------------------


def test_timeline_lists_the_exported_handoffs_newest_first(
    ui: UiServer, trail: Trail, page: Any, shots: Path
) -> None:
    response = page.goto(ui.url)
    assert response.status == 200
    assert page.url == project_url(ui.url, trail.project), "the current workspace's project first"
    assert rows(page) == trail.ids[::-1]
    early, claude, codex = trail.ids
    newest = row_text(page, codex)
    assert "codex" in newest and "finished" in newest and "2/3" in newest
    assert "published" in newest
    assert "Add a Usage section to README.md" in newest  # its first next step
    middle = row_text(page, claude)
    assert "claude" in middle and "compacted ×1" in middle and "2/3" in middle
    assert "superseded" in middle, "publishing the next handoff superseded this one"
    assert "0/3" in row_text(page, early)
    assert page.get_attribute("#project-switch option[selected]", "value") == trail.project
    bottom = page.evaluate("document.querySelector('footer').getBoundingClientRect().bottom")
    page.screenshot(
        path=str(shots / "timeline.png"), clip={"x": 0, "y": 0, "width": 1280, "height": bottom}
    )

    phone = page.context.browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    small = phone.new_page()
    base = project_url(ui.url, trail.project)
    widths = {}
    for name, url in (
        ("timeline", base),
        ("handoff", base + f"h/{claude}"),
        ("compare", base + f"compare?a={early}&b={codex}"),
        ("plan", base + "plan"),
    ):
        small.goto(url)
        widths[name] = small.evaluate("document.documentElement.scrollWidth")
        small.screenshot(path=str(shots / f"{name}-phone.png"), full_page=True)
    phone.close()
    assert all(width <= 390 for width in widths.values()), (
        f"no sideways scrolling on a phone: {widths}"
    )


def test_keyboard_opens_a_handoff_with_its_history_and_trail(
    ui: UiServer, trail: Trail, page: Any, shots: Path
) -> None:
    early, claude, codex = trail.ids
    page.goto(ui.url)
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.get_attribute(".row.selected", "data-id") == claude
    page.keyboard.press("k")
    page.keyboard.press("j")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith(f"/h/{claude}")
    handoff = trail.handoffs[claude]
    assert page.inner_text("h1").startswith("Handoff from claude")
    facts = page.inner_text(".facts")
    assert (
        handoff["source"]["session_id"] in facts and "finished" in facts and "superseded" in facts
    )
    assert page.get_attribute("a[rel=prev]", "href").endswith(f"/h/{early}")
    assert page.get_attribute("a[rel=next]", "href").endswith(f"/h/{codex}")
    lifecycle = page.inner_text(".lifecycle")
    assert re.search(r"prepared.*published.*superseded", lifecycle, re.S), lifecycle
    transcript = page.eval_on_selector_all(
        ".transcript pre.data", "els => els.map(e => e.textContent)"
    )
    assert len(transcript) == len(handoff["task"]["transcript"])
    assert transcript[0] == handoff["task"]["transcript"][0]["text"]
    steps = page.eval_on_selector_all(".next-steps li", "els => els.map(e => e.textContent)")
    assert steps == handoff["state"]["next_steps"]
    page.screenshot(path=str(shots / "handoff.png"), full_page=True)
    page.click("a[rel=next]")
    assert page.url.endswith(f"/h/{codex}")
    assert page.locator("a[rel=next]").count() == 0, "the newest handoff of the task has no next"


def test_search_finds_a_handoff_by_a_word_of_its_next_step(
    ui: UiServer, trail: Trail, page: Any, shots: Path
) -> None:
    claude = trail.ids[1]
    word = "example"
    assert any(word in step for step in trail.handoffs[claude]["state"]["next_steps"])
    page.goto(ui.url)
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "search"
    page.keyboard.type(word)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert rows(page) == [claude]
    assert word in row_text(page, claude), "the row shows the next step that matched"
    page.screenshot(path=str(shots / "search.png"), full_page=True)
    page.goto(project_url(ui.url, trail.project) + "?q=nosuchwordanywhere")
    assert rows(page) == []
    assert "No handoff matches" in page.inner_text("#empty")


def test_filters_by_agent_and_status(ui: UiServer, trail: Trail, page: Any) -> None:
    early, claude, codex = trail.ids
    base = project_url(ui.url, trail.project)
    page.goto(base + "?agent=codex")
    assert rows(page) == [codex, early]
    page.goto(base + "?status=superseded")
    assert rows(page) == [claude, early]
    page.goto(base + "?since_day=2000-01-01&until_day=2000-01-02")
    assert rows(page) == []


# -- compare and plan over time ---------------------------------------------------------------------


def test_compare_shows_plan_status_changes(
    ui: UiServer, trail: Trail, page: Any, shots: Path
) -> None:
    early, claude, codex = trail.ids
    page.goto(project_url(ui.url, trail.project))
    page.check(f'.row[data-id="{codex}"] input[name=pick]')
    assert page.is_disabled("#compare-picked"), "two picks are needed"
    page.check(f'.row[data-id="{early}"] input[name=pick]')
    with page.expect_navigation():
        page.click("#compare-picked")
    changes = page.eval_on_selector_all(
        "tr.plan-change", "els => els.map(e => [...e.cells].map(c => c.textContent.trim()))"
    )
    assert ["Write calc.py with add() and its test", "in progress", "→", "completed"] in changes
    assert ["Make greet() say Hi", "pending", "→", "completed"] in changes
    assert ["Add a Usage section to README.md", "pending", "→", "in progress"] in changes
    cards = page.eval_on_selector_all(
        ".side-by-side .card h2", "els => els.map(e => e.textContent)"
    )
    assert cards[:2] == ["Older", "Newer"]
    steps_new = page.eval_on_selector_all("ul.new li", "els => els.map(e => e.textContent)")
    early_steps = trail.handoffs[early]["state"]["next_steps"]
    assert steps_new == [
        s for s in trail.handoffs[codex]["state"]["next_steps"] if s not in early_steps
    ]
    page.screenshot(path=str(shots / "compare.png"), full_page=True)

    # the pickers: the early Codex handoff against Claude's, which also edited greet.py
    page.select_option("select[name=a]", early)
    page.select_option("select[name=b]", claude)
    with page.expect_navigation():
        page.click("form.filters button")
    files = lambda h: [f["path"] for f in trail.handoffs[h]["state"]["files_touched"]]  # noqa: E731
    added = page.eval_on_selector_all("ul.added li", "els => els.map(e => e.textContent)")
    assert added == [f for f in files(claude) if f not in files(early)]
    assert "greet.py" in added


def test_plan_over_time_colours_each_status(
    ui: UiServer, trail: Trail, page: Any, shots: Path
) -> None:
    early, claude, codex = trail.ids
    page.goto(project_url(ui.url, trail.project) + "plan")
    headers = page.eval_on_selector_all(
        ".plan-grid thead a", "els => els.map(e => e.getAttribute('href'))"
    )
    assert [h.rsplit("/", 1)[1] for h in headers] == [early, claude, codex], "oldest first"
    grid = page.eval_on_selector_all(
        ".plan-grid tbody tr",
        "els => els.map(e => [e.cells[0].textContent.trim(), ...[...e.cells].slice(1).map(c => c.className)])",
    )
    by_subject = {row[0]: row[1:] for row in grid}
    codex_first = by_subject["Write calc.py with add() and its test"]
    assert codex_first == ["cell plan-in_progress", "cell plan-completed", "cell plan-completed"]
    assert by_subject["Add a Usage section to README.md"] == [
        "cell plan-pending",
        "cell plan-in_progress",
        "cell plan-in_progress",
    ]
    colours = page.eval_on_selector_all(
        ".plan-grid td.plan-completed, .plan-grid td.plan-in_progress",
        "els => [...new Set(els.map(e => getComputedStyle(e).backgroundColor))]",
    )
    assert len(colours) == 2, f"completed and in progress look different: {colours}"
    page.screenshot(path=str(shots / "plan.png"), full_page=True)


# -- live updates ---------------------------------------------------------------------------------------


def test_a_new_handoff_appears_live(
    own_ui: UiServer, own_trail: Trail, page: Any, shots: Path, tmp_path: Path
) -> None:
    ui, trail = own_ui, own_trail  # the export and the status it supersedes stay in this copy
    page.goto(project_url(ui.url, trail.project))
    page.wait_for_selector("#live:not([hidden])")
    page.evaluate("window.__noReload = true")
    before = rows(page)
    sub = next(r for r in scenarios("claude") if r.scenario == "subagent")
    home = tmp_path / "claude-sub"
    shutil.copytree(sub.root, home, ignore=shutil.ignore_patterns("expected.json"))
    new_id = trail.export("claude", home / sub.session_files()[0], "CLAUDE_CONFIG_DIR", home)
    page.wait_for_selector(f'#timeline .row[data-id="{new_id}"]', timeout=30_000)
    assert page.evaluate("window.__noReload") is True, "the row came without a reload"
    assert rows(page) == [new_id, *before]
    assert "claude" in row_text(page, new_id)
    # publishing it superseded the handoff that was active: that row changes in place
    page.wait_for_selector(f'.row[data-id="{before[0]}"] .status-superseded', timeout=30_000)
    assert rows(page) == [new_id, *before]
    assert "published" in page.inner_text(f'.row[data-id="{new_id}"] .status')
    page.screenshot(path=str(shots / "live.png"), full_page=True)


# -- the team server: tokens, scopes, hosts ------------------------------------------------------------


@pytest.fixture
def team(own_trail: Trail) -> Iterator[TeamServer]:
    """`passdown serve` over a copy of the trail's store: the tokens and records a test
    adds stay in it."""
    server = TeamServer(own_trail.store_url)
    yield server
    server.stop()


def _copy_to_other_project(store: Any, project: str, record_id: str, other: str) -> str:
    data = record_to_dict(store.retrieve(project, record_id))
    data["id"] = f"{record_id}-b"
    data["scope"] = {"project": other}
    data["title"] = "Project B: the other team's handoff"
    store.store(data)
    return str(data["id"])


def login(page: Any, base: str, token: str) -> None:
    page.goto(base + "login")
    page.fill("#token", token)
    with page.expect_navigation():
        page.click("form.login button")


def test_a_token_of_project_a_never_sees_project_b(
    team: TeamServer, trail: Trail, page: Any, shots: Path
) -> None:
    b_id = _copy_to_other_project(team.store, trail.project, trail.ids[-1], OTHER_PROJECT)
    token_a = create_token(team.store, trail.project, "web test A")
    token_b = create_token(team.store, OTHER_PROJECT, "web test B")

    response = page.goto(project_url(team.url, OTHER_PROJECT))
    assert page.url == team.url + "login", "no page before login"
    page.screenshot(path=str(shots / "login.png"), full_page=True)
    login(page, team.url, token_a)
    assert page.url == project_url(team.url, trail.project), page.content()
    assert rows(page) == trail.ids[::-1]
    assert [
        o
        for o in page.eval_on_selector_all("#project-switch option", "els => els.map(e => e.value)")
    ] == [trail.project]
    cookie = next(c for c in page.context.cookies() if c["name"] == "passdown_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert page.evaluate("document.cookie") == "", "scripts see no cookie"

    other = project_url(team.url, OTHER_PROJECT)
    for url in (
        other,
        other + f"h/{b_id}",
        other + "compare",
        other + f"compare?a={b_id}&b={b_id}",
        other + "plan",
        other + "events",
        team.url + f"switch?project={OTHER_PROJECT}",
        project_url(team.url, trail.project) + f"h/{b_id}",
    ):
        response = page.goto(url)
        assert response.status == 404, url
        assert "Project B" not in page.content()
    page.screenshot(path=str(shots / "not-found.png"), full_page=True)

    # the same browser, signed in as B, sees B and only B
    page.goto(project_url(team.url, trail.project))
    with page.expect_navigation():
        page.click("form.logout button")
    assert page.url == team.url + "login"
    login(page, team.url, token_b)
    assert rows(page) == [b_id]
    assert page.goto(project_url(team.url, trail.project)).status == 404


def test_a_wrong_host_is_refused(
    team: TeamServer, ui: UiServer, trail: Trail, page: Any, shots: Path
) -> None:
    token = create_token(team.store, trail.project)
    bearer = {"Authorization": f"Bearer {token}"}
    for base, port in ((team.url, team.port), (ui.url, ui.port)):
        for path in (
            "",
            f"p/{trail.project}/",
            "login",
            "static/app.js",
            "api/records",
            "api/records?type=handoff",
        ):
            answer = httpx.get(base + path, headers={**bearer, "Host": f"evil.example:{port}"})
            assert answer.status_code == 421, (base, path, answer.status_code)
            answer = httpx.get(base + path, headers={**bearer, "Host": f"{REBIND_HOST}:{port}"})
            assert answer.status_code == 421, (base, path)
    # the right Host still works for the API (the guard is in front of it, not instead of it)
    assert httpx.get(team.url + "api/records?type=handoff", headers=bearer).status_code == 200
    # a browser led to the attacker's name (resolving to this machine) gets nothing
    response = page.goto(f"http://{REBIND_HOST}:{ui.port}/p/{trail.project}/")
    assert response.status == 421
    assert trail.ids[0] not in page.content()
    page.screenshot(path=str(shots / "wrong-host.png"), full_page=True)


def test_state_changes_need_csrf_and_same_origin(team: TeamServer, trail: Trail) -> None:
    token = create_token(team.store, trail.project)
    with httpx.Client(base_url=team.url) as client:
        form = client.get("login")
        assert form.status_code == 200
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf is not None and client.cookies.get("passdown_csrf") == csrf.group(1)
        posted = {"token": token}
        assert client.post("login", data=posted).status_code == 403, "no CSRF field"
        assert client.post("login", data={**posted, "csrf": "forged"}).status_code == 403
        cross = client.post(
            "login",
            data={**posted, "csrf": csrf.group(1)},
            headers={"Origin": "http://evil.example"},
        )
        assert cross.status_code == 403
        site = client.post(
            "login",
            data={**posted, "csrf": csrf.group(1)},
            headers={"Sec-Fetch-Site": "cross-site"},
        )
        assert site.status_code == 403
        ok = client.post(
            "login",
            data={**posted, "csrf": csrf.group(1)},
            headers={"Origin": team.url.rstrip("/")},
        )
        assert ok.status_code == 303 and ok.headers["location"] == f"/p/{trail.project}/"
        page = client.get(ok.headers["location"])
        assert page.status_code == 200
        policy = page.headers["content-security-policy"]
        assert (
            "script-src 'self'" in policy
            and "default-src 'none'" in policy
            and "unsafe" not in policy
        )
        assert page.headers["x-frame-options"] == "DENY"
        scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", page.text, re.S)
        assert scripts == [""], "one script, from a file, none inline"
        assert not re.search(r"\son[a-z]+=", page.text), "no inline event handlers"
        assert client.post("logout", data={}).status_code == 403, "logout needs CSRF too"
        record = {
            "id": "from-another-site",
            "type": "task",
            "created_at": "2026-01-01T00:00:00Z",
            "provenance": {"agent": "x", "session": "s"},
            "scope": {"project": trail.project},
        }
        api = client.post(
            "api/records",
            json=record,
            headers={"Authorization": f"Bearer {token}", "Origin": "http://evil.example"},
        )
        assert api.status_code == 403, "a page of another site cannot write through the API"
        api = client.post("api/records", json=record, headers={"Authorization": f"Bearer {token}"})
        assert api.status_code == 201, api.text


# -- secrets --------------------------------------------------------------------------------------------

PLANTED = (
    "AKIAWEBVIEWPLANTED12",
    "ghp_webviewPlanted0123456789abcdefghijkl",
    "sk-ant-api03-WebviewPlantedKey0WebviewPlantedKey0WebviewPlantedKey0WebviewPlantedKey0Webv",
)
INJECTED = '<img src=x id=injected onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def _plant(trail: Trail) -> str:
    """A record stored directly (no redaction on the way in), secrets and markup in every
    field the pages print."""
    for secret in PLANTED:
        assert redact(secret) != secret, f"the redactor must know {secret[:8]}…"
    with open_store(trail.store_url) as store:
        data = record_to_dict(store.retrieve(trail.project, trail.ids[2]))  # Codex, with a plan
        data["id"] = "handoff-planted-secrets"
        data["created_at"] = "2000-01-01T00:00:00Z"  # oldest: live updates do not pick it up
        data["title"] = f"Deploy with {PLANTED[0]} {INJECTED}"
        data["annotations"] = [{"kind": "next", "value": f"rotate {PLANTED[1]}"}]
        h = data["passdown_handoff"]
        h["state"]["next_steps"] = [f"export ANTHROPIC_API_KEY={PLANTED[2]}", INJECTED]
        h["state"]["blockers"] = [f"token {PLANTED[1]} expired"]
        h["task"]["transcript"][0]["text"] = f"my key is {PLANTED[0]} {INJECTED}"
        h["task"]["original_request"] = f"use {PLANTED[2]}"
        h["state"]["plan"][0]["subject"] = f"Store {PLANTED[1]} {INJECTED}"
        store.store(data)
    return "handoff-planted-secrets"


def test_no_secret_reaches_any_page(
    own_ui: UiServer, own_trail: Trail, page: Any, shots: Path
) -> None:
    ui, trail = own_ui, own_trail  # the planted record stays in this copy
    planted = _plant(trail)
    base = project_url(ui.url, trail.project)
    seen: dict[str, str] = {}
    for url in (
        base,
        base + "?q=Deploy",
        base + f"h/{planted}",
        base + f"compare?a={planted}&b={trail.ids[-1]}",
        base + f"plan?h={planted}",
        *(base + f"h/{i}" for i in trail.ids),
    ):
        response = page.goto(url)
        assert response.status == 200, url
        seen[url] = page.content()
        assert page.evaluate("window.__pwned") is None, f"markup from a record ran: {url}"
    page.goto(base + f"h/{planted}")
    assert page.locator("#injected").count() == 0, "record text is never markup"
    assert "<img src=x id=injected" in page.inner_text("main"), "shown as text"
    page.screenshot(path=str(shots / "planted-secrets.png"), full_page=True)
    with httpx.stream("GET", base + "events?since=1999-01-01T00:00:00Z", timeout=30) as events:
        stream = ""
        deadline = time.monotonic() + 20
        for chunk in events.iter_text():
            stream += chunk
            if planted in stream or time.monotonic() > deadline:
                break
    assert planted in stream, "the event stream sent the planted record's row"
    seen["events"] = stream
    for where, html in seen.items():
        for secret in (*PLANTED, *trail.secrets):
            assert secret not in html, f"{secret[:10]}… in {where}"
            assert json.dumps(secret)[1:-1] not in html
    assert "[REDACTED:" in seen[base + f"h/{planted}"]
