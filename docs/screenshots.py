"""Make the documentation's pictures: `passdown ui` over a demo store, in headless Chromium.

    python3 docs/screenshots.py [--out docs/images] [--chromium /usr/bin/chromium]

Everything happens in a scratch folder: a git workspace `greeter`, a Claude Code config
folder holding the example session shipped with passdown (`src/passdown/examples/`), a
data folder with its own SQLite store. The session is handed off three times as it grows
(after the plan is written, after the edit, at its end), so the timeline shows one task's
progress; then `passdown ui` serves that store on 127.0.0.1 and Chromium (Debian's
`chromium`, run with `--headless --screenshot`; no browser is downloaded) takes:

- `web-view-timeline.png`: the project's timeline;
- `web-view-handoff.png`: the newest handoff's page;
- `web-view-compare.png`: the first and the last handoff compared;
- `handoff-md.png`: the newest HANDOFF.md, rendered from Markdown to HTML with
  python-markdown (what a reader of the file on a forge sees).

passdown runs from this checkout's `src` (PYTHONPATH), so the pictures show the code
beside them. Exit 0 when every picture was written, 1 with a message otherwise.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
EXAMPLE = SRC / "passdown" / "examples" / "claude-session.jsonl"
EXAMPLE_WORKSPACE = "/home/dev/greeter"  # the made-up folder the example session ran in
SESSION_ID = "5e551011-0000-4000-8000-00000000c1a1"
# the session's lines at each handoff: the plan written, the edit made, the end
CUTS = (8, 12, len(EXAMPLE.read_text(encoding="utf-8").splitlines()))
GREET = 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n'
SHOUT = GREET + "\n\ndef shout(name: str) -> str:\n    return greet(name).upper()\n"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]
MARKDOWN_CSS = """
body { font: 15px/1.55 system-ui, sans-serif; max-width: 860px; margin: 24px auto;
       padding: 0 24px; color: #1f2328; }
h1, h2 { border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; }
code { background: #eff1f3; padding: .1em .3em; border-radius: 4px; font-size: 90%; }
pre { background: #f6f8fa; padding: 12px; border-radius: 6px; overflow: auto; }
pre code { background: none; padding: 0; }
blockquote { color: #59636e; border-left: .25em solid #d1d9e0; margin: 0; padding: 0 1em; }
table { border-collapse: collapse; } td, th { border: 1px solid #d1d9e0; padding: 4px 10px; }
"""


class Failed(Exception):
    """A step did not happen: the message says which."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--width", type=int, default=1280)
    args = parser.parse_args(argv)
    if not Path(args.chromium).is_file():
        print(f"screenshots: no Chromium at {args.chromium} (--chromium PATH)", file=sys.stderr)
        return 1
    try:
        with tempfile.TemporaryDirectory(prefix="passdown-shots-") as tmp:
            written = make(Path(tmp), args.out, args.chromium, args.width)
    except Failed as exc:
        print(f"screenshots: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


def make(tmp: Path, out: Path, chromium: str, width: int) -> list[Path]:
    env = _environment(tmp)
    workspace = tmp / "greeter"
    workspace.mkdir()
    (workspace / "greet.py").write_text(GREET, encoding="utf-8")
    _git(workspace, env, "init", "-q", "-b", "main")
    _git(workspace, env, "add", "greet.py")
    _git(workspace, env, "commit", "-q", "-m", "greet()")
    session = _session_path(Path(env["CLAUDE_CONFIG_DIR"]), workspace)
    lines = EXAMPLE.read_text(encoding="utf-8").replace(
        json.dumps(EXAMPLE_WORKSPACE)[1:-1], json.dumps(str(workspace))[1:-1]
    )
    ids = []
    for cut in CUTS:
        if cut >= CUTS[1]:  # the session's Edit has run: the workspace shows it
            (workspace / "greet.py").write_text(SHOUT, encoding="utf-8")
        session.write_text("".join(lines.splitlines(keepends=True)[:cut]), encoding="utf-8")
        exported = _passdown(
            env, workspace, "export", "--from", "claude", "--to", "codex",
            "--session", str(session), "--json",
        )  # fmt: skip
        ids.append(json.loads(exported)["record_id"])
        time.sleep(1.1)  # the timeline orders by creation time, to the second
    out.mkdir(parents=True, exist_ok=True)
    written = []
    server = subprocess.Popen(
        [sys.executable, "-m", "passdown", "ui", "--port", "0", "--json"],
        cwd=workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline() if server.stdout else ""
        if not line:
            raise Failed(
                f"passdown ui did not start: {server.stderr.read() if server.stderr else ''}"
            )
        served = json.loads(line)
        base, project = served["url"].rstrip("/"), served["project"]
        pages = {
            "web-view-timeline.png": (f"{base}/p/{project}/", 420),
            "web-view-handoff.png": (f"{base}/p/{project}/h/{ids[-1]}", 1400),
            "web-view-compare.png": (f"{base}/p/{project}/compare?a={ids[0]}&b={ids[-1]}", 900),
        }
        for name, (url, height) in pages.items():
            written.append(_shoot(chromium, tmp, url, out / name, width, height))
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    page = tmp / "handoff-md.html"
    page.write_text(_markdown_page(workspace / ".agent-handoff" / "HANDOFF.md"), encoding="utf-8")
    written.append(_shoot(chromium, tmp, page.as_uri(), out / "handoff-md.png", width, 1500))
    return written


def _environment(tmp: Path) -> dict[str, str]:
    """passdown from this checkout, with every folder it reads or writes in `tmp`."""
    home = tmp / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PASSDOWN_", "CLAUDE_"))}
    env.update(
        HOME=str(home),
        PASSDOWN_DATA_DIR=str(tmp / "data"),
        CLAUDE_CONFIG_DIR=str(tmp / "claude"),
        PASSDOWN_AGENTS="claude,codex",
        PYTHONPATH=os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="dev",
        GIT_AUTHOR_EMAIL="dev@example.invalid",
        GIT_COMMITTER_NAME="dev",
        GIT_COMMITTER_EMAIL="dev@example.invalid",
    )
    return env


def _session_path(claude_home: Path, workspace: Path) -> Path:
    folder = claude_home / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(workspace))
    folder.mkdir(parents=True)
    return folder / f"{SESSION_ID}.jsonl"


def _git(workspace: Path, env: dict[str, str], *args: str) -> None:
    done = subprocess.run(["git", *args], cwd=workspace, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise Failed(f"git {' '.join(args)}: {done.stderr.strip()}")


def _passdown(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "passdown", *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise Failed(f"passdown {args[0]} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def _shoot(chromium: str, tmp: Path, url: str, path: Path, width: int, height: int) -> Path:
    profile = Path(tempfile.mkdtemp(prefix="chromium-", dir=tmp))
    command = [
        chromium,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        f"--screenshot={path}",
        url,
    ]
    path.unlink(missing_ok=True)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        raise Failed(f"chromium took over 120 s on {url}") from exc
    if done.returncode != 0 or not path.is_file() or path.stat().st_size == 0:
        raise Failed(f"chromium made no {path.name} (exit {done.returncode}): {done.stderr[-500:]}")
    return path


def _markdown_page(markdown: Path) -> str:
    try:
        import markdown as python_markdown  # type: ignore[import-untyped]
    except ImportError as exc:
        raise Failed("python-markdown is not installed (pip install '.[docs]')") from exc
    body = python_markdown.markdown(
        markdown.read_text(encoding="utf-8"), extensions=["fenced_code", "tables"]
    )
    title = html.escape(markdown.name)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{MARKDOWN_CSS}</style></head><body>{body}</body></html>"
    )


if __name__ == "__main__":
    sys.exit(main())
