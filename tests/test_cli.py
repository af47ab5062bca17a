"""The CLI as a user runs it, on sessions recorded from the real clients."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recorded import Recorded, scenarios

CLAUDE = next(r for r in scenarios("claude") if r.scenario == "full")
CODEX = next(r for r in scenarios("codex") if r.scenario == "full")


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )


@pytest.fixture
def both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Both recorded sessions installed; returns their session files."""
    return {
        "claude": CLAUDE.install(tmp_path / "claude", monkeypatch),
        "codex": CODEX.install(tmp_path / "codex", monkeypatch),
    }


def _secrets_absent(text: str, *recs: Recorded) -> None:
    for rec in recs:
        for secret in rec.expected["secrets"]:
            assert secret not in text


@pytest.mark.parametrize(
    ("source", "target", "program"), [("claude", "codex", "codex"), ("codex", "claude", "claude")]
)
@pytest.mark.usefixtures("agents_on_path")
def test_switch_dry_run_prints_a_safe_argv(
    source: str, target: str, program: str, both: dict[str, Path], tmp_path: Path
) -> None:
    rec = CLAUDE if source == "claude" else CODEX
    proc = run(
        [
            "switch",
            "--from",
            source,
            "--to",
            target,
            "--session",
            str(both[source]),
            "--workspace",
            str(tmp_path),
            "--dry-run",
            "--non-interactive",
            "--json",
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    argv = out["argv"]
    assert argv[0] == program
    assert argv[1] == ("exec" if program == "codex" else "-p")
    prompt = argv[-1]
    assert argv[-2] == "--", "the prompt is one argument after the end of options"
    assert out["markdown"] in prompt
    assert "reconcil" in prompt.lower()
    assert len(prompt.encode()) < 64 * 1024
    _secrets_absent(proc.stdout + proc.stderr, rec)
    assert Path(out["json"]) == tmp_path / ".agent-handoff" / "handoff.json"
    assert not (tmp_path / ".agent-handoff").exists(), "a dry run writes nothing"
    assert out["record_id"] is None, "a dry run stores nothing"


@pytest.mark.usefixtures("agents_on_path")
def test_switch_interactive_dry_run_has_no_print_mode(
    both: dict[str, Path], tmp_path: Path
) -> None:
    proc = run(
        [
            "switch",
            "--from",
            "codex",
            "--to",
            "claude",
            "--session",
            str(both["codex"]),
            "--workspace",
            ".",
            "--dry-run",
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("claude -- ")


def test_switch_to_a_missing_agent_fails_with_its_exit_code(
    both: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "passdown",
            "switch",
            "--from",
            "claude",
            "--to",
            "codex",
            "--session",
            str(both["claude"]),
            "--workspace",
            ".",
            "--non-interactive",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )
    assert proc.returncode == 6, proc.stderr
    assert "not installed" in proc.stderr or "not found" in proc.stderr


def test_from_auto_picks_the_newest_session(both: dict[str, Path], tmp_path: Path) -> None:
    os.utime(both["claude"], (2_000_000_000, 2_000_000_000))
    os.utime(both["codex"], (1_000_000_000, 1_000_000_000))
    proc = run(["sessions", "--all", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert [s["agent"] for s in listed] == ["claude", "codex"]
    os.utime(both["codex"], (2_100_000_000, 2_100_000_000))
    listed = json.loads(run(["sessions", "--all", "--json"], tmp_path).stdout)
    assert [s["agent"] for s in listed] == ["codex", "claude"]


def test_inspect_writes_nothing_and_hides_secrets(both: dict[str, Path], tmp_path: Path) -> None:
    proc = run(
        [
            "inspect",
            "--from",
            "claude",
            "--session",
            str(both["claude"]),
            "--workspace",
            ".",
            "--json",
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["task"]["original_request"].startswith("Create calc.py")
    assert not (tmp_path / ".agent-handoff").exists()
    _secrets_absent(proc.stdout, CLAUDE)
    text = run(
        ["inspect", "--from", "claude", "--session", str(both["claude"]), "--workspace", "."],
        tmp_path,
    )
    assert "## Plan" in text.stdout
    _secrets_absent(text.stdout + text.stderr, CLAUDE)


def test_export_quiet_prints_nothing(both: dict[str, Path], tmp_path: Path) -> None:
    proc = run(
        [
            "export",
            "--from",
            "codex",
            "--session",
            str(both["codex"]),
            "--workspace",
            ".",
            "--quiet",
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    assert (tmp_path / ".agent-handoff" / "HANDOFF.md").exists()


def test_export_budget_options(both: dict[str, Path], tmp_path: Path) -> None:
    proc = run(
        [
            "export",
            "--from",
            "claude",
            "--session",
            str(both["claude"]),
            "--workspace",
            ".",
            "--max-messages",
            "3",
            "--out",
            str(tmp_path / "o"),
            "--no-store",
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "o" / "handoff.json").read_text())
    real = [e for e in data["task"]["transcript"] if e["role"] != "cut"]
    assert len(real) == 3
    assert real[0]["text"].startswith("Create calc.py")
    assert real[-1]["role"] == "assistant" and real[-2]["text"] == "Continue with the README task."


def test_agents_lists_the_builtins(tmp_path: Path) -> None:
    proc = run(["agents", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert {a["name"] for a in json.loads(proc.stdout)} >= {"claude", "codex"}


def test_agent_handoff_alias_and_help(tmp_path: Path) -> None:
    proc = run(["--help"], tmp_path)
    assert proc.returncode == 0
    for command in ("inspect", "export", "switch", "sessions", "store", "find"):
        assert command in proc.stdout
    assert run(["export", "--help"], tmp_path).returncode == 0
