"""Issue 22: hook command lines quoted for the shell each agent runs them with, and the
agents' programs found as a shell finds them (`codex.cmd` on Windows).

POSIX lines are run by this machine's `sh`; cmd.exe and PowerShell are not here, so
their lines are checked against those shells' documented quoting rules (cmd.exe: `%`
expands even inside double quotes, `"` cannot be escaped, `&|<>^()` are literal only
inside quotes; PowerShell: single-quoted text is literal, `''` is one quote, and the
typographic single quotes count as quotes). Install runs with Windows simulated
(tests/simwin) through the CLI, as a user runs it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest

from passdown.errors import UsageError
from passdown.integrations import _codex, _command
from passdown.integrations._command import (
    CMD,
    POSIX,
    POWERSHELL,
    hook_line,
    program_of,
    quote_cmd,
    quote_powershell,
)

TESTS = Path(__file__).resolve().parent
SIMULATION = TESTS / "simwin"

POSIX_ONLY = pytest.mark.skipif(
    sys.platform == "win32",
    reason="runs a line with /bin/sh or a `#!/bin/sh` wrapper, which native Windows lacks; "
    "the cmd.exe and PowerShell lines are checked by their quoting rules",
)
SIMULATED = pytest.mark.skipif(
    sys.platform == "win32", reason="simulates Windows on a POSIX machine (tests/simwin)"
)

HOSTILE = [
    "plain",
    "with space",
    "it's",
    'say "hi"',
    "Tom & Jerry",
    "%PATH%",
    "$(touch PWNED)",
    "`touch PWNED`",
    "a;touch PWNED",
    "a|b",
    "caret^and(parens)",
    "curly\u2019quote",
    "bang!",
    "comma,semi;eq=",
]


def _windows_path(folder: str) -> str:
    return f"C:\\Users\\dev\\{folder}\\Scripts\\passdown.exe"


# -- the three quotings, one table -----------------------------------------------------


@POSIX_ONLY
@pytest.mark.parametrize("folder", HOSTILE)
def test_posix_lines_run_the_program_with_its_words_whatever_the_path(
    tmp_path: Path, folder: str
) -> None:
    """sh runs the line: the program at the hostile path gets exactly `hook claude`,
    and nothing in the path runs as a command."""
    program = tmp_path / folder / "passdown"
    program.parent.mkdir(parents=True)
    out = tmp_path / "argv.json"
    program.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(out)!r}, 'w').write(json.dumps(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    line = hook_line(str(program), "claude", "SessionEnd", shell=POSIX)
    subprocess.run(["/bin/sh", "-c", line], cwd=tmp_path, check=True, timeout=60)
    assert json.loads(out.read_text()) == ["hook", "claude", "SessionEnd"]
    assert not (tmp_path / "PWNED").exists()
    assert program_of(line) == str(program)


def _powershell_words(line: str) -> list[str]:
    """PowerShell's reading of a line passdown writes: `& 'quoted' plain plain`, or all
    plain words; anything else fails the test."""
    quote = "'\u2018\u2019\u201a\u201b"
    quoted = rf"[{quote}]((?:[^{quote}]|[{quote}]{{2}})*)[{quote}]"
    match = re.fullmatch(rf"& {quoted}((?: [A-Za-z0-9_.:+/\\-]+)*)", line)
    if match:
        body = re.sub(rf"[{quote}]([{quote}])", r"\1", match.group(1))
        return [body, *match.group(2).split()]
    assert re.fullmatch(r"[A-Za-z0-9_.:+/\\ -]+", line), line
    return line.split()


@pytest.mark.parametrize("folder", HOSTILE)
def test_powershell_lines_keep_the_path_literal(folder: str) -> None:
    path = _windows_path(folder)
    line = hook_line(path, "gemini", shell=POWERSHELL)
    assert _powershell_words(line) == [path, "hook", "gemini"]
    assert program_of(line) == path
    if any(c in folder for c in " '\"&%$`;|^(),!\u2019"):
        assert line.startswith("& '")  # a string: called with `&`, never evaluated


def _cmd_outside_quotes(line: str) -> str:
    """The characters of a cmd.exe line that are outside double quotes."""
    return "".join(part for i, part in enumerate(line.split('"')) if i % 2 == 0)


@pytest.mark.parametrize("folder", HOSTILE)
def test_cmd_lines_quote_what_cmd_can_keep_and_refuse_the_rest(folder: str) -> None:
    path = _windows_path(folder)
    if any(c in path for c in '%"!'):
        with pytest.raises(UsageError, match=r"cmd\.exe"):
            hook_line(path, "codex", shell=CMD)
        return
    line = hook_line(path, "codex", shell=CMD)
    outside = _cmd_outside_quotes(line)
    assert not set(outside) & set("&|<>^()%!,;="), line  # no operator cmd.exe would act on
    assert outside.endswith(" hook codex")
    assert program_of(line) == path


def test_quoting_is_plain_for_plain_words() -> None:
    assert quote_cmd(r"C:\tools\passdown.exe") == r"C:\tools\passdown.exe"
    assert quote_powershell(r"C:\tools\passdown.exe") == r"C:\tools\passdown.exe"
    assert quote_powershell("a,b") == "'a,b'"  # PowerShell would make an array of it
    assert quote_cmd("a=b") == '"a=b"'  # cmd.exe splits words at `=`


def test_git_bash_gets_forward_slashes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    line = hook_line(r"C:\Users\dev\my venv\Scripts\passdown.exe", "claude")
    assert line == "'C:/Users/dev/my venv/Scripts/passdown.exe' hook claude"


@pytest.mark.parametrize(
    ("agent", "shell"),
    [
        ("claude", POSIX),
        ("droid", POSIX),
        ("cline", POSIX),
        ("codex", CMD),
        ("kimi", CMD),
        ("gemini", POWERSHELL),
        ("qwen", POWERSHELL),
        ("copilot", POWERSHELL),
        ("someplugin", CMD),
    ],
)
def test_each_agent_gets_the_shell_it_runs_hooks_with(
    monkeypatch: pytest.MonkeyPatch, agent: str, shell: str
) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    assert _command.hook_shell(agent) == POSIX
    monkeypatch.setattr(sys, "platform", "win32")
    assert _command.hook_shell(agent) == shell


# -- through the CLI, Windows simulated ------------------------------------------------


def _simulated(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SIMULATION), os.environ.get("PYTHONPATH", "")]),
        "PASSDOWN_SIMULATE_WINDOWS": "1",
        "HOME": str(home),
        "COPILOT_HOME": str(home / ".copilot"),
        "GEMINI_CLI_HOME": str(home),
        "PASSDOWN_DATA_DIR": str(tmp_path / "data"),
        "PASSDOWN_AGENTS": "",
    }
    env.pop("PASSDOWN_COMMAND", None)
    return env


def _passdown_at(folder: Path) -> Path:
    folder.mkdir(parents=True)
    script = folder / "passdown"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m passdown "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return script


@SIMULATED
def test_copilot_install_on_windows_writes_a_powershell_line_beside_bash(tmp_path: Path) -> None:
    command = _passdown_at(tmp_path / "Tom & Jerry's $(x)")
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "install", "copilot", "--command", str(command)],
        env=_simulated(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((tmp_path / "home" / ".copilot" / "settings.json").read_text())
    handler = settings["hooks"]["sessionEnd"][0]
    assert _powershell_words(handler["powershell"]) == [
        str(command),
        "hook",
        "copilot",
        "sessionEnd",
    ]
    assert handler["bash"].endswith(" hook copilot sessionEnd")
    assert program_of(handler["bash"]) == str(command)


def _installed_line(agent: str, home: Path) -> str:
    """The SessionEnd hook's command line `install` wrote for `agent`."""
    if agent == "codex":
        config = tomllib.loads((home / ".codex" / "config.toml").read_text(encoding="utf-8"))
        return str(config["hooks"]["SessionEnd"][0]["hooks"][0]["command"])
    folder = {"claude": ".claude", "gemini": ".gemini"}[agent]
    settings = json.loads((home / folder / "settings.json").read_text(encoding="utf-8"))
    return str(settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"])


@SIMULATED
@pytest.mark.parametrize("agent", ["claude", "gemini", "codex"])
def test_install_on_windows_writes_each_agents_shell_line(tmp_path: Path, agent: str) -> None:
    """Through `passdown install`, Windows simulated, a path with a space, `&` and `'`:
    Claude Code's line for Git Bash, Gemini's for PowerShell, Codex's for cmd.exe, each
    reading back as the one program with its words."""
    command = _passdown_at(tmp_path / "Tom & Jerry's")
    env = _simulated(tmp_path)
    home = tmp_path / "home"
    env.update(CLAUDE_CONFIG_DIR=str(home / ".claude"), CODEX_HOME=str(home / ".codex"))
    env["PATH"] = str(_fake_codex(tmp_path / "npm", hooks=True)) + os.pathsep + env["PATH"]
    env["PATHEXT"] = PATHEXT
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "install", agent, "--command", str(command)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = _installed_line(agent, home)
    assert program_of(line) == str(command)
    assert line.endswith(f" hook {agent}")
    if agent == "gemini":
        assert _powershell_words(line) == [str(command), "hook", agent]
    elif agent == "codex":
        assert not set(_cmd_outside_quotes(line)) & set("&|<>^()%!,;=")
    else:
        assert line == shlex.quote(str(command)) + " hook claude"  # sh -c, as Git Bash


@SIMULATED
def test_codex_install_on_windows_refuses_a_path_cmd_would_expand(tmp_path: Path) -> None:
    """Codex runs hooks through cmd.exe there: a `%` in the path would expand, so the
    install says so (exit 2) and writes nothing."""
    command = _passdown_at(tmp_path / "100%PATH%")
    env = _simulated(tmp_path)
    env["CODEX_HOME"] = str(tmp_path / "home" / ".codex")
    env["PATH"] = str(_fake_codex(tmp_path / "npm", hooks=True)) + os.pathsep + env["PATH"]
    env["PATHEXT"] = PATHEXT
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "install", "codex", "--command", str(command)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cmd.exe" in proc.stderr
    assert not (tmp_path / "home" / ".codex" / "config.toml").exists()


# -- codex.cmd found through shutil.which ----------------------------------------------


# Windows' PATHEXT as this machine's `which` reads it (`os.pathsep` is ":" here, and the
# file system minds case, which Windows' does not)
PATHEXT = os.pathsep.join([".com", ".exe", ".bat", ".cmd"])


def _windows_which(monkeypatch: pytest.MonkeyPatch) -> None:
    """`shutil.which` taking its Windows branch here: Python 3.12+ asks the Windows API
    (`_winapi.NeedCurrentDirectoryForExePath`) there, absent on Linux."""
    monkeypatch.setattr(sys, "platform", "win32")
    stub = types.SimpleNamespace(NeedCurrentDirectoryForExePath=lambda name: False)
    monkeypatch.setattr(shutil, "_winapi", stub, raising=False)
    monkeypatch.setenv("PATHEXT", PATHEXT)


def _fake_codex(npm: Path, *, hooks: bool) -> Path:
    """An npm global folder as Windows has it: `codex.cmd` (npm's cmd-shim) beside the
    package's script, and a `node.exe` that runs it (here: a shell script)."""
    script = npm / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"
    script.parent.mkdir(parents=True)
    state = "true" if hooks else "false"
    script.write_text(f"hooks                 stable            {state}\n", encoding="utf-8")
    shim = npm / "codex.cmd"
    shim.write_text(
        "@ECHO off\r\nSETLOCAL\r\n"
        'IF EXIST "%dp0%\\node.exe" (\r\n  SET "_prog=%dp0%\\node.exe"\r\n) ELSE (\r\n'
        '  SET "_prog=node"\r\n)\r\n'
        'endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  '
        '"%dp0%\\node_modules\\@openai\\codex\\bin\\codex.js" %*\r\n',
        encoding="utf-8",
    )
    shim.chmod(0o755)
    node = npm / "node.exe"  # `node SCRIPT ARGS`: prints the script (the features list)
    node.write_text('#!/bin/sh\nexec /bin/cat "$1"\n', encoding="utf-8")
    node.chmod(0o755)
    return npm


@POSIX_ONLY
def test_the_codex_probe_finds_codex_cmd_on_a_windows_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """npm installs Codex on Windows as `codex.cmd`: the probe finds it as a shell does
    (PATHEXT) and asks it, so install writes lifecycle hooks, not the `notify` fallback."""
    npm = _fake_codex(tmp_path / "npm", hooks=True)
    _windows_which(monkeypatch)
    monkeypatch.setenv("PATH", str(npm))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    _codex.has_lifecycle_hooks.cache_clear()
    try:
        assert _codex.has_lifecycle_hooks("codex") is True
    finally:
        _codex.has_lifecycle_hooks.cache_clear()


@POSIX_ONLY
def test_the_codex_probe_says_no_hooks_when_codex_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    npm = _fake_codex(tmp_path / "npm", hooks=False)
    _windows_which(monkeypatch)
    monkeypatch.setenv("PATH", str(npm))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    _codex.has_lifecycle_hooks.cache_clear()
    try:
        assert _codex.has_lifecycle_hooks("codex") is False
    finally:
        _codex.has_lifecycle_hooks.cache_clear()
