"""The web view's browser tests: real `passdown export` runs over the recorded sessions fill
a store; `passdown ui` (a subprocess) and `passdown serve`'s app (in a thread) serve it;
headless Chromium (Debian's package, driven by playwright) looks at the pages.

Screenshots go to `<pytest base temp>/screenshots/`."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from recorded import scenarios

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # a name of the attacker's that resolves to this machine: DNS rebinding, simulated
    "--host-resolver-rules=MAP rebind.test 127.0.0.1",
]
REBIND_HOST = "rebind.test"
SRC = Path(__file__).resolve().parents[2] / "src"
CLAUDE = next(r for r in scenarios("claude") if r.scenario == "full")
CODEX = next(r for r in scenarios("codex") if r.scenario == "full")
EARLY_PLAN_LINES = 24  # the Codex rollout up to its first plan update: 1 in progress, 2 pending


def _git(ws: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(ws), *args],
        check=True,
        capture_output=True,
        env=env,
    )


@dataclass
class Trail:
    """A project's handoffs, written by `passdown export` from the recorded sessions."""

    workspace: Path
    env: dict[str, str]  # for passdown subprocesses: this trail's data folder and agent homes
    root: Path
    ids: list[str] = field(default_factory=list)  # in export order, oldest first
    handoffs: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> handoff.json

    @property
    def project(self) -> str:
        from passdown.records import default_project

        return default_project(self.workspace)

    @property
    def store_url(self) -> str:
        return f"sqlite://{self.root / 'data' / 'store.db'}"

    @property
    def secrets(self) -> list[str]:
        return [*CLAUDE.expected["secrets"], *CODEX.expected["secrets"]]

    def export(self, agent: str, session: Path, home_var: str, home: Path) -> str:
        env = {**self.env, home_var: str(home)}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "passdown",
                "export",
                "--from",
                agent,
                "--session",
                str(session),
                "--workspace",
                ".",
                "--json",
            ],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        record_id = out["record_id"]
        assert record_id, f"export stored nothing: {proc.stdout}"
        self.ids.append(record_id)
        self.handoffs[record_id] = json.loads(Path(out["json"]).read_text())
        return str(record_id)

    def copy(self, root: Path) -> Trail:
        """This trail with a store of its own under `root` (the same workspace, so the
        same project, and agent homes): a test that adds to its store or changes a
        record's status leaves the shared trail as it found it."""
        # the store through SQLite's backup (its WAL folded in), the rest as it is
        shutil.copytree(
            self.root / "data", root / "data", ignore=shutil.ignore_patterns("store.db*")
        )
        with (
            closing(sqlite3.connect(self.root / "data" / "store.db")) as source,
            closing(sqlite3.connect(root / "data" / "store.db")) as target,
        ):
            source.backup(target)
        env = {**self.env, "PASSDOWN_DATA_DIR": str(root / "data")}
        return Trail(self.workspace, env, root, list(self.ids), dict(self.handoffs))


def _codex_early(root: Path) -> tuple[Path, Path]:
    """A Codex home whose rollout stops after the first plan update: the same session,
    exported earlier in its life."""
    home = root / "codex-early"
    shutil.copytree(CODEX.root, home, ignore=shutil.ignore_patterns("expected.json"))
    rollout = next(home.glob("sessions/*/*/*/rollout-*.jsonl"))
    lines = rollout.read_text().splitlines(keepends=True)
    rollout.write_text("".join(lines[:EARLY_PLAN_LINES]))
    return home, rollout


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Trail:
    """Three exports in one workspace: Codex early in its session, Claude, Codex at the end."""
    root = tmp_path_factory.mktemp("web-trail")
    ws = root / "webapp"
    ws.mkdir()
    _git(ws, "init", "-q", "-b", "main")
    (ws / "README.md").write_text("# calc\n")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "initial")
    home = root / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "PASSDOWN_DATA_DIR": str(root / "data"),
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        "PASSDOWN_AGENTS": "",
    }
    env.pop("PASSDOWN_STORE", None)
    t = Trail(workspace=ws, env=env, root=root)
    early_home, early_rollout = _codex_early(root)
    t.export("codex", early_rollout, "CODEX_HOME", early_home)
    claude_home = root / "claude"
    shutil.copytree(CLAUDE.root, claude_home, ignore=shutil.ignore_patterns("expected.json"))
    t.export("claude", claude_home / CLAUDE.session_files()[0], "CLAUDE_CONFIG_DIR", claude_home)
    codex_home = root / "codex"
    shutil.copytree(CODEX.root, codex_home, ignore=shutil.ignore_patterns("expected.json"))
    t.export("codex", codex_home / CODEX.session_files()[0], "CODEX_HOME", codex_home)
    return t


# -- servers ----------------------------------------------------------------------------------


def _wait_until_up(url: str, deadline_s: float = 60) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + deadline_s
    while True:
        try:
            urllib.request.urlopen(url + "static/app.css", timeout=5).close()
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            assert time.monotonic() < deadline, f"{url} did not come up"
            time.sleep(0.1)


@dataclass
class UiServer:
    url: str
    port: int
    process: subprocess.Popen[str]


@pytest.fixture
def own_trail(trail: Trail, tmp_path: Path) -> Trail:
    """The trail, its store copied for a test that changes it."""
    return trail.copy(tmp_path / "trail")


@pytest.fixture(scope="module")
def ui(trail: Trail) -> Iterator[UiServer]:
    """`passdown ui` as a user runs it, in the trail's workspace (for tests that only
    read the trail's store)."""
    with _ui_server(trail) as server:
        yield server


@pytest.fixture
def own_ui(own_trail: Trail) -> Iterator[UiServer]:
    """`passdown ui` over `own_trail`'s store."""
    with _ui_server(own_trail) as server:
        yield server


@contextmanager
def _ui_server(trail: Trail) -> Iterator[UiServer]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "passdown", "ui"],
        cwd=trail.workspace,
        env=trail.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/"), url
        _wait_until_up(url)
        yield UiServer(url, int(url.rsplit(":", 1)[1].strip("/")), proc)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()


class TeamServer:
    """`passdown serve`'s app (MCP, API and pages) in a thread, on a free loopback port."""

    def __init__(self, store_url: str) -> None:
        import uvicorn

        from passdown.mcp._http import build_app
        from passdown.store import open_store

        self.store = open_store(store_url)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        config = uvicorn.Config(
            build_app(self.store), log_level="warning", lifespan="on", timeout_graceful_shutdown=2
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self.thread.start()
        _wait_until_up(self.url)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(20)
        self.store.close()


# -- the browser ---------------------------------------------------------------------------------


# Per module, not per session: playwright's sync API keeps an asyncio loop running in this
# thread while it is open, and under pytest-xdist the next test file on the same worker
# (tests/test_mcp.py's anyio.run, for one) must not find a running loop.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists() and not os.environ.get("CI"):
        pytest.skip("Debian's chromium is not installed (bash .ci/setup installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=120_000
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.getbasetemp() / "screenshots"
    folder.mkdir(exist_ok=True)
    return folder
