"""`--json` on every command that prints something (issue 14): the list of commands in
`passdown --help` is checked against the options each one takes; `config`, `retrieve`,
`ui` and `serve` print JSON, redacted, and their errors as JSON on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import click
import pytest

from passdown.cli import cli, main
from passdown.cli._group import COMMANDS
from test_cli_shape import record, run

GITHUB_TOKEN = "ghp_" + "Js0nAud1tT0ken0123456789abcdefghijklm"
# commands whose stdout belongs to someone else: the protocol or the agent
WITHOUT_JSON = {
    "mcp": "stdout is the MCP protocol",
    "hook": "stdout is the agent's hook protocol (context it injects)",
    "run": "the terminal belongs to the agent it runs",
    "completion": "stdout is a script the shell sources",
}


def leaf_commands() -> dict[str, click.Command]:
    """Every command `passdown --help` lists, a group's subcommands by their full name."""
    ctx = click.Context(cli)
    found: dict[str, click.Command] = {}
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            for sub in command.commands.values():
                found[f"{name} {sub.name}"] = sub
        else:
            found[name] = command
    return found


def test_every_command_that_prints_takes_json() -> None:
    commands = leaf_commands()
    assert {"token create", "token revoke", "install", "uninstall", "config"} <= set(commands)
    missing = sorted(
        name
        for name, command in commands.items()
        if name not in WITHOUT_JSON and not any("--json" in param.opts for param in command.params)  # type: ignore[attr-defined]
    )
    assert missing == []
    assert set(WITHOUT_JSON) <= set(commands), "the exemptions name real commands"


def json_out(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    capsys.readouterr()
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_config_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert json_out(capsys, "config", "set", "fallback", "claude,codex") == {
        "fallback": ["claude", "codex"]
    }
    assert json_out(capsys, "config", "set", "pickup", "off") == {"pickup": False}
    assert json_out(capsys, "config", "get", "pickup") == {"pickup": False}
    assert json_out(capsys, "config", "list") == {
        "fallback": ["claude", "codex"],
        "pickup": False,
        "pickup_max_age_days": None,
        "share_remote": None,
    }
    assert json_out(capsys, "config", "unset", "pickup") == {"pickup": None}
    assert main(["config", "get", "pickup"]) == 0
    assert capsys.readouterr().out == "\n"  # unset: an empty value, as before
    assert main(["config", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("fallback = claude,codex    # ")
    assert main(["config", "get", "colour", "--json"]) == 2
    error = json.loads(capsys.readouterr().err)
    assert error["code"] == 2 and "unknown setting 'colour'" in error["error"]


def test_config_text_is_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    config = Path(os.environ["PASSDOWN_DATA_DIR"]) / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"fallback": [f"claude\n{GITHUB_TOKEN}"]}))
    assert main(["config", "get", "fallback"]) == 0
    out = capsys.readouterr().out
    assert GITHUB_TOKEN not in out and out.count("\n") == 1
    assert GITHUB_TOKEN not in json.dumps(json_out(capsys, "config", "list"))


def test_retrieve_takes_json_and_says_not_found_in_json(tmp_path: Path) -> None:
    assert run(["store", "-"], tmp_path, stdin=json.dumps(record("r1"))).returncode == 0
    plain = run(["retrieve", "r1", "--project", "p"], tmp_path)
    as_json = run(["retrieve", "r1", "--project", "p", "--json"], tmp_path)
    assert as_json.returncode == 0 and as_json.stdout == plain.stdout
    assert json.loads(as_json.stdout)["id"] == "r1"
    missing = run(["retrieve", "nope", "--project", "p", "--json"], tmp_path)
    assert missing.returncode == 10 and missing.stdout == ""
    assert json.loads(missing.stderr)["code"] == 10


def first_line_of(args: list[str], cwd: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=os.environ.copy(),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        pytest.fail(f"no output: {proc.communicate(timeout=30)}")
    return proc, json.loads(line)


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    _out, err = proc.communicate(timeout=60)
    return err


@pytest.mark.timeout(180)
def test_ui_json_is_one_redacted_line_and_the_url_answers(tmp_path: Path) -> None:
    store = tmp_path / GITHUB_TOKEN / "store.db"
    store.parent.mkdir()
    proc, served = first_line_of(
        ["ui", "--port", "0", "--project", "p", "--store", f"sqlite:///{store}", "--json"], tmp_path
    )
    try:
        assert set(served) == {"url", "project", "store"} and served["project"] == "p"
        assert GITHUB_TOKEN not in served["store"] and "[REDACTED" in served["store"]
        with urllib.request.urlopen(served["url"], timeout=60) as page:
            assert page.status == 200
    finally:
        err = stop(proc)
    assert "serving" not in err, "--json: no human note on stderr"


@pytest.mark.timeout(180)
def test_serve_json_names_its_endpoints(tmp_path: Path) -> None:
    proc, served = first_line_of(["serve", "--port", "0", "--json"], tmp_path)
    try:
        url = served["url"]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        assert served == {"url": url, "mcp": url + "mcp", "api": url + "api/records"}
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(served["api"], timeout=60)
        assert refused.value.code == 401  # the endpoint is there, and wants a token
    finally:
        err = stop(proc)
    assert "serving" not in err
