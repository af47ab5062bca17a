"""Issue 21, a newcomer's first minutes: `passdown demo` hands off the example session
shipped with passdown into a scratch folder, and the README's first block ends in it.

Through the CLI in a subprocess, in a fresh HOME with no agent and no session at all."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from commands import SRC

ROOT = SRC.parent


def demo(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(SRC),
        "LANG": "C.UTF-8",
        "TMPDIR": str(home / "tmp"),
        "PASSDOWN_DATA_DIR": str(home / "passdown-data"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
    }
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "passdown", "demo", *args],
        cwd=cwd or home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_demo_on_a_fresh_machine_prints_the_handoff_and_leaves_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for _ in range(2):
        proc = demo(home)
        assert proc.returncode == 0, proc.stderr
        assert list((home / "tmp").iterdir()) == [], "the scratch folder is removed"
    text = proc.stdout
    assert "- **Goal:** Add a shout() helper to greet.py that upper-cases the greeting" in text
    assert "- [x] Add shout() to greet.py (completed)" in text
    assert "- [ ] Add a test for shout() (pending)" in text
    assert "`greet.py` — edit [tool]" in text
    assert "/home/dev/greeter" not in text  # the made-up folder became the scratch one
    assert "  next step: Add a test for shout()" in text
    assert "passdown demo --keep keeps the files" in text
    assert "passdown export --from auto" in text
    assert "cat " not in text, "no file to cat: it was removed"
    as_json = json.loads(demo(home, "--json").stdout)
    assert as_json["kept"] is False and "- **Goal:** Add a shout()" in as_json["handoff"]
    assert not Path(as_json["folder"]).exists()
    # nothing of the user's: no data folder, no agent folder
    assert sorted(p.name for p in home.iterdir()) == ["tmp"]


def test_demo_out_writes_a_real_handoff_in_a_private_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = demo(home, "--out", str(tmp_path / "scratch"))
    assert proc.returncode == 0, proc.stderr
    wrote = re.findall(r"^wrote (\S+)$", proc.stdout, re.MULTILINE)
    markdown, handoff_json = (Path(p) for p in wrote)
    assert markdown.name == "HANDOFF.md" and handoff_json.name == "handoff.json"
    scratch = markdown.parents[2]
    assert scratch == tmp_path / "scratch"
    assert stat.S_IMODE(scratch.stat().st_mode) == 0o700
    for written in (markdown, handoff_json):
        assert stat.S_IMODE(written.stat().st_mode) == 0o600
    text = markdown.read_text()
    assert "- **Goal:** Add a shout() helper to greet.py that upper-cases the greeting" in text
    assert "/home/dev/greeter" not in text
    handoff = json.loads(handoff_json.read_text())
    assert handoff["source"]["agent"] == "claude" and handoff["workspace"]["path"] == str(
        markdown.parents[1]
    )
    assert f"cat {markdown}" in proc.stdout
    stored = re.search(r"^stored record (handoff-\S+) in a scratch store", proc.stdout, re.M)
    assert stored and (scratch / "data" / "store.db").is_file()
    assert sorted(p.name for p in home.iterdir()) == ["tmp"]


def test_demo_json_and_out_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "my demo"
    proc = demo(home, "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    assert result["folder"] == str(out.resolve())
    assert Path(result["markdown"]).is_file() and Path(result["json"]).is_file()
    assert result["goal"].startswith("Add a shout() helper") and result["record_id"]
    assert result["next_step"] == "Add a test for shout()"
    again = demo(home, "--out", str(out))  # not empty now: refused, nothing changed
    assert again.returncode == 2 and "is not an empty folder" in again.stderr


def test_demo_keep_stores_the_record_in_the_users_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = demo(home, "--keep", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    store = home / "passdown-data" / "store.db"
    assert result["store"] == f"sqlite://{store}" and store.is_file()
    assert result["kept"] and Path(result["markdown"]).is_file(), "--keep keeps the folder"
    assert Path(result["folder"]).parent == home / "tmp"
    found = subprocess.run(
        [sys.executable, "-m", "passdown", "find", "--type", "handoff", "--json"],
        cwd=result["workspace"],
        env={
            **os.environ,
            "PYTHONPATH": str(SRC),
            "PASSDOWN_DATA_DIR": str(home / "passdown-data"),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert found.returncode == 0, found.stderr
    records = json.loads(found.stdout)["records"]
    assert [r["id"] for r in records] == [result["record_id"]]
    assert not (Path(result["folder"]) / "data" / "store.db").exists()


def test_demo_leaves_the_environment_as_it_was_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown._demo import run_demo

    monkeypatch.setenv("PASSDOWN_STORE", "sqlite:////nonexistent/never.db")
    before = dict(os.environ)
    result = run_demo(tmp_path / "d")
    assert dict(os.environ) == before
    assert result.record_id and result.markdown.is_file()


def test_the_example_session_ships_in_the_package() -> None:
    import tomllib

    from passdown._demo import EXAMPLE, EXAMPLE_WORKSPACE

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = pyproject["tool"]["setuptools"]["package-data"]["passdown"]
    assert "examples/*.jsonl" in data
    assert EXAMPLE.is_file() and EXAMPLE.stat().st_size < 32_000
    records = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    assert {r["cwd"] for r in records if "cwd" in r} == {EXAMPLE_WORKSPACE}
    assert "passdown-rec" not in EXAMPLE.read_text()  # no trace of where it was recorded


# -- the README's first block -------------------------------------------------------------


def readme_blocks() -> list[tuple[str, str]]:
    readme = (ROOT / "README.md").read_text()
    setup = readme[readme.index("\n## Set-up") : readme.index("\n## Usage")]
    return re.findall(r"\n```(\w+)\n(.*?)\n```\n", setup, re.DOTALL)


def test_readme_first_block_installs_puts_on_path_and_runs_the_demo() -> None:
    blocks = readme_blocks()
    kind, first = blocks[0]
    command = first.splitlines()[0]
    assert kind == "sh"
    assert command.startswith("python3 -m venv ~/.local/share/passdown-venv && ")
    assert "~/.local/share/passdown-venv/bin/pip install -q . && " in command
    venv_bin = "~/.local/share/passdown-venv/bin"
    links = f"ln -sf {venv_bin}/passdown {venv_bin}/agent-handoff ~/.local/bin/ && "
    assert links in command, "both console scripts, the alias too, are linked onto PATH"
    assert command.endswith("passdown demo") and "export --from auto" not in command
    assert 'export PATH="$HOME/.local/bin:$PATH"' in first  # how, in the same block
    powershell = dict(blocks)["powershell"]
    assert "Scripts;$env:Path" in powershell and "SetEnvironmentVariable" in powershell
    assert powershell.rstrip().endswith("passdown demo")
    # then how to run it where an agent worked
    later = "\n".join(body for _kind, body in blocks[2:])
    assert "passdown export --from auto" in later and "passdown install claude" in later


def test_readme_second_command_is_kept_as_ci_calls_it() -> None:
    bodies = [body for _kind, body in readme_blocks()]
    assert "bash .ci/setup && python3 -m pytest" in bodies
    assert "bash .ci/setup && python3 -m pytest\n" in (ROOT / ".ci" / "run").read_text()
