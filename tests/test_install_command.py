"""Issue 21: the hooks `passdown install` writes can run where the agent runs them.

Through the CLI in a subprocess, as a user runs it: install writes the absolute path of
the passdown that runs it (a virtual environment's script, never on the agent's PATH),
checked by running it once; the written hook line, run by a shell with a PATH that has
no passdown on it, writes the handoff. `--command` is checked before anything is
written; `--dry-run` shows diffs and writes nothing; unknown agents exit 13;
`passdown doctor` says per agent whether its hooks would fire."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from commands import SRC, passdown_script

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

BARE_PATH = "/usr/bin:/bin"  # what an agent started from a desktop may have: no passdown


def console_script(bin_dir: Path) -> Path:
    """`bin_dir/passdown` as pip writes a console script (the interpreter in the shebang),
    importing this checkout: a virtual environment whose bin is not on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "passdown"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(SRC)!r})\n"
        "from passdown.cli import run\nif __name__ == '__main__':\n    sys.exit(run())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def environ(home: Path, **extra: str) -> dict[str, str]:
    """A user's environment: a fresh HOME, and a PATH without passdown on it."""
    env = {
        "HOME": str(home),
        "PATH": BARE_PATH,
        "LANG": "C.UTF-8",
        "PASSDOWN_DATA_DIR": str(home / "passdown-data"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        "PASSDOWN_AGENTS": "",
    }
    env.update(extra)
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> Any:
    return subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    return home


def claude_settings(home: Path) -> dict[str, Any]:
    return dict(json.loads((home / ".claude" / "settings.json").read_text()))


# -- the command written is one that runs -------------------------------------------------------


def test_install_from_a_venv_off_path_writes_a_hook_that_fires(home: Path, tmp_path: Path) -> None:
    """The README's install: a venv whose bin is not on PATH. The hooks it writes run,
    through a shell with a PATH that has no passdown, and write the handoff."""
    script = console_script(tmp_path / "my venv" / "bin")  # a space: quoting matters
    env = environ(home)
    proc = run([str(script), "install", "claude"], env, home)
    assert proc.returncode == 0, proc.stderr
    line = f"{shlex.quote(str(script))} hook claude"
    hooks = claude_settings(home)["hooks"]
    assert {e: hooks[e][0]["hooks"][0]["command"] for e in hooks} == dict.fromkeys(
        ["PreCompact", "SessionEnd", "StopFailure", "SessionStart"], line
    )
    server = json.loads((home / ".claude" / ".claude.json").read_text())["mcpServers"]["passdown"]
    assert server["command"] == str(script) and server["args"] == ["mcp"]
    assert f"checked   {script} hook --check: runs passdown" in proc.stdout

    # a Claude Code session ends: Claude runs the hook line with a shell, payload on stdin
    from passdown._demo import _lay_out_session

    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = _lay_out_session(home / ".claude", workspace)
    payload = {
        "hook_event_name": "SessionEnd",
        "session_id": session.stem,
        "transcript_path": str(session),
        "cwd": str(workspace),
    }
    fired = run(["/bin/sh", "-c", line], env, workspace, json.dumps(payload))
    assert fired.returncode == 0, fired.stderr
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    assert handoff["source"]["session_id"] == session.stem
    assert handoff["task"]["original_request"].startswith("Add a shout() helper to greet.py")
    log = (home / "passdown-data" / "logs" / "hooks.log").read_text()
    assert " ok claude session_end stored=handoff-" in log


def test_python_m_passdown_writes_this_installs_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run as `python -m passdown`: the console script of this interpreter's install,
    by its absolute path (not a `passdown` of another install found on PATH)."""
    import sysconfig

    from passdown.integrations import _command

    scripts = tmp_path / "venv" / "bin"
    mine = passdown_script(scripts)
    other = tmp_path / "elsewhere" / "passdown"
    other.parent.mkdir()
    other.write_text('#!/bin/sh\necho \'{"passdown": "0.0.1", "package": "/old/passdown"}\'\n')
    other.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(SRC / "passdown" / "__main__.py"), "install"])
    monkeypatch.setattr(sysconfig, "get_path", lambda name: str(scripts))
    monkeypatch.setenv("PATH", f"{other.parent}{os.pathsep}{BARE_PATH}")
    monkeypatch.delenv("PASSDOWN_COMMAND", raising=False)
    checked = _command.resolve_command(None)
    assert checked.command == str(mine) and checked.package == _command.this_package()
    # only another install's passdown around: refused, with the way out
    monkeypatch.setattr(sysconfig, "get_path", lambda name: str(tmp_path / "none"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "none" / "python3"))
    from passdown.errors import UsageError

    with pytest.raises(UsageError) as refused:
        _command.resolve_command(None)
    assert "runs the passdown in /old/passdown" in refused.value.message
    assert "--command" in str(refused.value.hint)


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("/nonexistent/bin/passdown", "not an executable file"),
        ("/bin/true", "did not answer as passdown does"),
        ("/bin/false", "hook --check` exited 1"),
        ("no-such-passdown-name", "is not on PATH"),
    ],
)
def test_a_command_that_does_not_run_is_refused_before_anything_is_written(
    home: Path, tmp_path: Path, command: str, says: str
) -> None:
    script = console_script(tmp_path / "venv" / "bin")
    (home / ".claude" / "settings.json").write_text('{"theme": "dark"}\n')
    before = snapshot(home)
    proc = run([str(script), "install", "claude", "--command", command], environ(home), home)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and proc.stdout == ""
    assert snapshot(home) == before  # no config, no backup, no manifest


def test_a_given_command_is_written_absolute_and_by_name_only_when_asked(
    home: Path, tmp_path: Path
) -> None:
    script = console_script(tmp_path / "venv" / "bin")
    tools = passdown_script(tmp_path / "tools")
    env = environ(home, PATH=f"{tools.parent}:{BARE_PATH}")
    relative = os.path.relpath(tools, home)
    assert run([str(script), "install", "claude", "--command", relative], env, home).returncode == 0
    assert claude_settings(home)["hooks"]["SessionEnd"][0]["hooks"][0]["command"] == (
        f"{tools} hook claude"
    )
    named = run([str(script), "install", "claude", "--command", "passdown"], env, home)
    assert named.returncode == 0, named.stderr
    assert claude_settings(home)["hooks"]["SessionEnd"][0]["hooks"][0]["command"] == (
        "passdown hook claude"
    )
    assert "by name: the agent must find it on its own PATH" in named.stderr
    # PASSDOWN_COMMAND is the same choice, for scripts and packagers
    by_env = run([str(script), "install", "claude"], {**env, "PASSDOWN_COMMAND": str(tools)}, home)
    assert by_env.returncode == 0, by_env.stderr
    assert claude_settings(home)["hooks"]["SessionEnd"][0]["hooks"][0]["command"] == (
        f"{tools} hook claude"
    )


@pytest.mark.parametrize("agent", ["codex", "copilot", "gemini", "qwen", "opencode", "pi", "droid"])
def test_every_integration_gets_the_absolute_command(
    home: Path, tmp_path: Path, agent: str
) -> None:
    script = console_script(tmp_path / "my venv" / "bin")
    proc = run([str(script), "install", agent, "--json"], environ(home), home)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["check"]["command"] == str(script) and document["check"]["ok"] is True
    files = [Path(f["path"]) for f in document["agents"][0]["files"]]
    text = "\n".join(p.read_text() for p in files if p.suffix in (".json", ".toml", ".js", ".ts"))
    quoted = shlex.quote(str(script))
    if agent in ("opencode", "pi", "kilo"):  # an argv (execFile / pi.exec), no shell
        assert json.dumps(str(script)) in text
    elif agent == "codex":
        assert str(script) in text and "passdown hook" not in text
    else:
        assert f"{quoted} hook {agent}" in text.replace('\\"', '"') or (
            json.dumps(f"{quoted} hook {agent}")[1:-1] in text
        )
    assert '"passdown hook' not in text and '= "passdown"' not in text


# -- --dry-run -------------------------------------------------------------------------------


def test_dry_run_shows_every_change_as_a_diff_and_writes_nothing(
    home: Path, tmp_path: Path
) -> None:
    script = console_script(tmp_path / "venv" / "bin")
    (home / ".claude" / "settings.json").write_text('{"theme": "dark"}\n')
    env = environ(home)
    before = snapshot(home)
    proc = run([str(script), "install", "claude", "--dry-run"], env, home)
    assert proc.returncode == 0, proc.stderr
    assert snapshot(home) == before and not (home / "passdown-data").exists()
    out = proc.stdout
    settings = home / ".claude" / "settings.json"
    assert f"update    {settings}\n--- {settings}\n+++ {settings}\n" in out
    assert '-{"theme": "dark"}\n' in out and '+  "theme": "dark",\n' in out
    assert f'+            "command": "{script} hook claude",\n' in out
    skill = home / ".claude" / "skills" / "passdown-takeover" / "SKILL.md"
    assert f"create    {skill}\n--- /dev/null\n+++ {skill}\n" in out
    assert "dry run: nothing was written" in proc.stderr
    # the diffs are what the real install then does
    document = json.loads(
        run([str(script), "install", "claude", "--dry-run", "--json"], env, home).stdout
    )
    assert document["dry_run"] is True
    planned = {f["path"]: f for f in document["agents"][0]["files"]}
    assert planned[str(settings)]["action"] == "update"
    assert run([str(script), "install", "claude"], env, home).returncode == 0
    added = [line[1:] for line in planned[str(settings)]["diff"].splitlines()[3:]]
    assert (
        "\n".join(x for x in added if not x.startswith('{"theme"')) + "\n" == settings.read_text()
    )


def test_dry_run_of_a_codex_project_install_includes_the_trust_it_would_record(
    home: Path, tmp_path: Path
) -> None:
    """The trust of a project's hooks goes into the user's config, computed from the
    project config the same install writes: a dry run computes it from its plan."""
    script = console_script(tmp_path / "venv" / "bin")
    fake_codex = tmp_path / "codexbin" / "codex"
    fake_codex.parent.mkdir()
    fake_codex.write_text("#!/bin/sh\necho 'hooks  stable  true'\n")  # `codex features list`
    fake_codex.chmod(0o755)
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "gpt-5.5"\n')
    env = environ(home, PATH=f"{fake_codex.parent}:{BARE_PATH}")
    before = snapshot(home) | snapshot(project)
    proc = run(
        [str(script), "install", "codex", "--scope", "project", "--dry-run", "--json"], env, project
    )
    assert proc.returncode == 0, proc.stderr
    assert snapshot(home) | snapshot(project) == before
    files = {f["path"]: f for f in json.loads(proc.stdout)["agents"][0]["files"]}
    user = files[str(home / ".codex" / "config.toml")]["diff"]
    key = f"{project / '.codex' / 'config.toml'}:session_start:0:0"
    assert key in user and "trusted_hash" in user
    real = run([str(script), "install", "codex", "--scope", "project"], env, project)
    assert real.returncode == 0, real.stderr
    state = tomllib.loads((home / ".codex" / "config.toml").read_text())["hooks"]["state"]
    assert state[key]["trusted_hash"] in user


# -- unknown agents ---------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["install", "uninstall", "doctor"])
def test_an_unknown_agent_exits_13_like_everywhere(home: Path, tmp_path: Path, verb: str) -> None:
    script = console_script(tmp_path / "venv" / "bin")
    proc = run([str(script), verb, "nosuch"], environ(home), home)
    assert proc.returncode == 13, proc.stderr
    assert "unknown agent 'nosuch'" in proc.stderr
    aider = run([str(script), verb, "aider"], environ(home), home)  # known, no hooks
    assert aider.returncode == 2 and "cannot install into 'aider'" in aider.stderr


# -- hook --check ------------------------------------------------------------------------------


def test_hook_check_answers_and_does_nothing_else(home: Path, tmp_path: Path) -> None:
    script = console_script(tmp_path / "venv" / "bin")
    env = environ(home)
    proc = run([str(script), "hook", "--check", "claude", "--json"], env, home)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["package"] == str(SRC / "passdown") and report["agent"] == "claude"
    text = run([str(script), "hook", "--check"], env, home)
    assert text.returncode == 0 and text.stdout.startswith("ok: passdown ")
    after = run([str(script), "hook", "claude", "--check"], env, home)  # either order
    assert after.returncode == 0 and after.stdout.startswith("ok: passdown ")
    assert not (home / "passdown-data").exists()  # no log, no store, nothing
    assert run([str(script), "hook", "--check", "nosuch"], env, home).returncode == 13


# -- passdown doctor --------------------------------------------------------------------------


def doctor(script: Path, env: dict[str, str], cwd: Path, *args: str) -> tuple[int, Any]:
    proc = run([str(script), "doctor", *args, "--json"], env, cwd)
    return proc.returncode, {a["agent"]: a for a in json.loads(proc.stdout)["agents"]}


def test_doctor_says_per_agent_whether_the_hooks_fire_and_why_not(
    home: Path, tmp_path: Path
) -> None:
    script = console_script(tmp_path / "venv" / "bin")
    fake_claude = tmp_path / "agents" / "claude"
    fake_claude.parent.mkdir()
    fake_claude.write_text("#!/bin/sh\nexit 0\n")
    fake_claude.chmod(0o755)
    env = environ(home, PATH=f"{fake_claude.parent}:{BARE_PATH}")
    code, agents = doctor(script, env, home)
    assert code == 0 and set(agents) == {
        "auggie",
        "claude",
        "cline",
        "codex",
        "copilot",
        "droid",
        "gemini",
        "gptme",
        "hermes",
        "kilo",
        "kimi",
        "opencode",
        "openhands",
        "pi",
        "qwen",
        "vibe",
    }
    assert agents["claude"]["status"] == "not_installed" and not agents["claude"]["would_fire"]

    old = console_script(tmp_path / "old venv" / "bin")
    assert run([str(old), "install", "claude", "gemini"], env, home).returncode == 0
    code, agents = doctor(script, env, home, "claude", "gemini")
    assert code == 0, agents
    claude = agents["claude"]
    assert claude["status"] == "ok" and claude["would_fire"] is True
    assert [p["program"] for p in claude["programs"]] == [str(old)]
    assert {u["what"] for u in claude["programs"][0]["used_by"]} == {
        "hook SessionEnd",
        "hook PreCompact",
        "hook StopFailure",
        "hook SessionStart",
        "MCP server",
    }
    assert agents["gemini"]["status"] == "agent_missing"  # fine hooks, no gemini here
    assert agents["gemini"]["why_not"] == ["gemini is not on PATH"]

    old.unlink()  # the venv install wrote into is gone
    proc = run([str(script), "doctor", "claude"], env, home)
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"claude    broken         {old}: does not exist")
    assert "the hooks of claude cannot fire" in proc.stderr
    code, agents = doctor(script, env, home, "claude")
    assert code == 1 and agents["claude"]["status"] == "broken"
    assert agents["claude"]["programs"][0]["runs"] is False

    # reinstalled from the venv that is here: fixed
    assert run([str(script), "install", "claude"], env, home).returncode == 0
    assert doctor(script, env, home, "claude")[0] == 0


def test_doctor_finds_a_command_that_no_longer_runs_in_every_integration(
    home: Path, tmp_path: Path
) -> None:
    script = console_script(tmp_path / "venv" / "bin")
    broken = passdown_script(tmp_path / "gone")
    env = environ(home)
    agents = ["codex", "copilot", "opencode", "pi", "qwen"]
    proc = run([str(script), "install", *agents, "--command", str(broken)], env, home)
    assert proc.returncode == 0, proc.stderr
    broken.write_text("#!/bin/sh\nexit 3\n")  # still there, no longer passdown
    code, found = doctor(script, env, home, *agents)
    assert code == 1
    for agent in agents:
        assert found[agent]["status"] == "broken", found[agent]
        assert found[agent]["programs"][0]["program"] == str(broken)
        assert "hook --check` exited 3" in found[agent]["programs"][0]["problem"]


def fake_codex_with_hooks(folder: Path) -> Path:
    """A `codex` whose `features list` says lifecycle hooks are on (as 0.171's does)."""
    folder.mkdir(parents=True, exist_ok=True)
    codex = folder / "codex"
    codex.write_text("#!/bin/sh\necho 'hooks  stable  true'\n")
    codex.chmod(0o755)
    return codex


def fake_codex_without_hooks(folder: Path) -> Path:
    """A `codex` that answers, and whose `features list` has no lifecycle hooks."""
    folder.mkdir(parents=True, exist_ok=True)
    codex = folder / "codex"
    codex.write_text("#!/bin/sh\necho 'apps  stable  true'\n")
    codex.chmod(0o755)
    return codex


def test_doctor_says_codex_skips_hooks_it_does_not_trust(home: Path, tmp_path: Path) -> None:
    import tomlkit

    script = console_script(tmp_path / "venv" / "bin")
    codex = fake_codex_with_hooks(tmp_path / "codexbin")
    env = environ(home, PATH=f"{codex.parent}:{BARE_PATH}")
    assert run([str(script), "install", "codex"], env, home).returncode == 0
    code, found = doctor(script, env, home, "codex")
    assert code == 0 and found["codex"]["status"] == "ok", found
    config = home / ".codex" / "config.toml"
    doc = tomlkit.parse(config.read_text())
    del doc["hooks"]["state"]  # type: ignore[union-attr]
    config.write_text(tomlkit.dumps(doc))
    code, found = doctor(script, env, home, "codex")
    assert code == 1 and found["codex"]["status"] == "broken"
    (why,) = found["codex"]["why_not"]
    assert why.startswith("Codex does not trust passdown's session_start, pre_compact, stop")
    assert "run `passdown install codex` again" in why


def test_doctor_says_when_only_the_mcp_server_runs_passdown(home: Path, tmp_path: Path) -> None:
    """A Codex without lifecycle hooks whose `notify` is the user's own program: the
    install keeps it, so no hook of Codex writes a handoff; doctor says so."""
    script = console_script(tmp_path / "venv" / "bin")
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('notify = ["my-notifier"]\n')
    codex = fake_codex_without_hooks(tmp_path / "codexbin")
    env = environ(home, PATH=f"{codex.parent}:{BARE_PATH}")
    assert run([str(script), "install", "codex"], env, home).returncode == 0
    code, found = doctor(script, env, home, "codex")
    assert code == 1 and found["codex"]["status"] == "broken"
    assert found["codex"]["why_not"][0].startswith("no hook runs passdown (only its MCP server")


def test_the_skills_command_lines_run_the_same_command(home: Path, tmp_path: Path) -> None:
    script = console_script(tmp_path / "my venv" / "bin")
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    env = environ(home)
    assert run([str(script), "install", "claude", "codex"], env, home).returncode == 0
    assert (
        run([str(script), "install", "codex", "--scope", "project"], env, project).returncode == 0
    )
    quoted = shlex.quote(str(script))
    for text in (
        (home / ".claude" / "skills" / "passdown-takeover" / "SKILL.md").read_text(),
        (home / ".codex" / "skills" / "passdown-takeover" / "SKILL.md").read_text(),
        (project / "AGENTS.md").read_text(),
    ):
        assert f"{quoted} find --type handoff --limit 1 --json" in text
        assert f"{quoted} export --quiet" in text
        assert "`passdown find" not in text and "\npassdown find" not in text


def test_doctor_on_an_install_that_runs_passdown_by_name(home: Path, tmp_path: Path) -> None:
    """An install made before absolute paths (`passdown hook claude`): it fires only where
    the agent's PATH has passdown. Doctor checks it on its own PATH and says so."""
    script = console_script(tmp_path / "venv" / "bin")
    settings = home / ".claude" / "settings.json"
    line = {"hooks": [{"type": "command", "command": "passdown hook claude"}]}
    settings.write_text(json.dumps({"hooks": {"SessionEnd": [line]}}))
    proc = run([str(script), "doctor", "claude"], environ(home), home)  # none on PATH
    assert proc.returncode == 1
    assert "passdown: not found on PATH (the agent looks it up by name)" in proc.stdout
    tools = passdown_script(tmp_path / "tools")
    on_path = environ(home, PATH=f"{tools.parent}:{BARE_PATH}")
    code, found = doctor(script, on_path, home, "claude")
    assert code == 0 and found["claude"]["status"] == "agent_missing"
    assert found["claude"]["notes"][0].startswith("runs `passdown` by name")


def test_dry_run_reports_what_the_install_would_report(home: Path, tmp_path: Path) -> None:
    """A Codex without lifecycle hooks: the dry run names the events the real install
    registers (its notify) and no note about a notify program the user does not have."""
    script = console_script(tmp_path / "venv" / "bin")
    codex = fake_codex_without_hooks(tmp_path / "codexbin")
    env = environ(home, PATH=f"{codex.parent}:{BARE_PATH}")
    dry = json.loads(
        run([str(script), "install", "codex", "--dry-run", "--json"], env, home).stdout
    )
    real = json.loads(run([str(script), "install", "codex", "--json"], env, home).stdout)
    for key in ("events", "notes", "command"):
        assert dry["agents"][0][key] == real["agents"][0][key], key
    assert real["agents"][0]["events"] == ["agent-turn-complete"]
    assert [f["action"] for f in dry["agents"][0]["files"]] == ["create", "create"]
    assert [f["action"] for f in real["agents"][0]["files"]] == ["created", "created"]


def test_install_run_through_the_readme_link_writes_the_link(home: Path, tmp_path: Path) -> None:
    """The README links the venv's script into ~/.local/bin: `passdown install claude`
    typed in a shell writes that link's absolute path (it outlives a rebuilt venv)."""
    script = console_script(tmp_path / "venv" / "bin")
    link = home / ".local" / "bin" / "passdown"
    link.parent.mkdir(parents=True)
    link.symlink_to(script)
    env = environ(home, PATH=f"{link.parent}:{BARE_PATH}")
    proc = run(["/bin/sh", "-c", "passdown install claude"], env, home)
    assert proc.returncode == 0, proc.stderr
    line = claude_settings(home)["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    assert line == f"{link} hook claude"
    checked = run(
        ["/bin/sh", "-c", line.replace(" hook claude", " hook --check claude")], environ(home), home
    )  # the agent's PATH need not have ~/.local/bin
    assert checked.returncode == 0 and checked.stdout.startswith("ok: passdown")


def test_doctor_runs_nothing_a_projects_config_brings(home: Path, tmp_path: Path) -> None:
    """A cloned repository's `.claude/settings.json` names what its hooks run: doctor
    --scope project reports those commands but runs none of them (only a passdown
    outside the project would be run)."""
    script = console_script(tmp_path / "venv" / "bin")
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / ".claude").mkdir()
    marker = tmp_path / "ran"
    for name in ("hook", "passdown"):
        planted = project / name
        planted.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\n")
        planted.chmod(0o755)
    lines = ["sh hook claude", "./passdown hook claude", f"{project / 'passdown'} hook claude"]
    groups = [{"hooks": [{"type": "command", "command": line}]} for line in lines]
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"SessionEnd": groups}})
    )
    code, found = doctor(script, environ(home), project, "claude", "--scope", "project")
    assert not marker.exists(), "doctor ran a program the repository named"
    assert code == 1 and found["claude"]["status"] == "broken"
    problems = {p["program"]: p["problem"] for p in found["claude"]["programs"]}
    assert problems == {
        "sh": "is not a passdown command (not run: a project's config)",
        "./passdown": "not an absolute path or a name on PATH (not run: a project's config)",
        str(project / "passdown"): "lies inside the project (not run: a project's config)",
    }
    # passdown's own project install is checked as usual
    (project / ".claude" / "settings.json").unlink()
    assert (
        run(
            [str(script), "install", "claude", "--scope", "project"], environ(home), project
        ).returncode
        == 0
    )
    code, found = doctor(script, environ(home), project, "claude", "--scope", "project")
    assert found["claude"]["programs"][0]["runs"] is True, found
