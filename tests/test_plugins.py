"""A third-party agent added through the `passdown.agents` entry-point group: listed,
read from, and switched to and from, like the built-ins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recorded import scenarios

PLUGIN_SRC = Path(__file__).parent / "plugins"


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    """Install the example plugin the way pip would: its code on the path plus a
    dist-info folder declaring the entry point."""
    site = tmp_path / "site"
    dist = site / "passdown_example_agent-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: passdown-example-agent\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[passdown.agents]\nexample = passdown_example_agent:ExampleAgent\n"
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "example-agent"
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "open(os.environ['EXAMPLE_ARGV_LOG'], 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    fake.chmod(0o755)
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(PLUGIN_SRC), env.get("PYTHONPATH", "")])
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["EXAMPLE_AGENT_HOME"] = str(tmp_path / "example-home")
    env["EXAMPLE_ARGV_LOG"] = str(tmp_path / "argv.json")
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_plugin_is_listed_with_its_install_state(
    plugin_env: dict[str, str], tmp_path: Path
) -> None:
    proc = _run(["agents", "--json"], tmp_path, plugin_env)
    assert proc.returncode == 0, proc.stderr
    agents = {a["name"]: a for a in json.loads(proc.stdout)}
    assert agents["example"]["installed"] is True
    assert agents["example"]["path"].endswith("example-agent")
    assert {"claude", "codex"} <= set(agents)


def test_switch_from_claude_to_the_plugin(
    plugin_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = next(r for r in scenarios("claude") if r.scenario == "full")
    session = rec.install(tmp_path / "claude", monkeypatch)
    plugin_env["CLAUDE_CONFIG_DIR"] = os.environ["CLAUDE_CONFIG_DIR"]
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = _run(
        [
            "switch",
            "--from",
            "claude",
            "--to",
            "example",
            "--session",
            str(session),
            "--workspace",
            ".",
            "--non-interactive",
        ],
        ws,
        plugin_env,
    )
    assert proc.returncode == 0, proc.stderr
    argv = json.loads(Path(plugin_env["EXAMPLE_ARGV_LOG"]).read_text())
    assert argv[0] == "--prompt" and len(argv) == 2
    assert str(ws / ".agent-handoff" / "HANDOFF.md") in argv[1]
    for secret in rec.expected["secrets"]:
        assert secret not in argv[1]


@pytest.mark.usefixtures("agents_on_path")
def test_switch_from_the_plugin_to_codex(plugin_env: dict[str, str], tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    sessions = Path(plugin_env["EXAMPLE_AGENT_HOME"]) / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "ex-1.jsonl").write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"session": "ex-1", "cwd": str(ws)},
                {"role": "user", "text": "Port the parser to Rust"},
                {"tool": "write", "path": str(ws / "src" / "lib.rs")},
                {"role": "assistant", "text": "lib.rs is started. Next step: port the tokenizer."},
            ]
        )
        + "\n"
    )
    proc = _run(
        ["switch", "--from", "auto", "--to", "codex", "--dry-run", "--json"], ws, plugin_env
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["source"] == {"agent": "example", "session_id": "ex-1"}
    assert out["argv"][:2] == ["codex", "--"]  # interactive: the prompt after the end of options
    assert not Path(out["json"]).exists(), "a dry run writes nothing"
    handoff = json.loads(_run(["inspect", "--from", "auto", "--json"], ws, plugin_env).stdout)
    assert handoff["task"]["original_request"] == "Port the parser to Rust"
    assert handoff["state"]["files_touched"][0]["path"] == "src/lib.rs"
    assert "port the tokenizer." in handoff["state"]["next_steps"]
