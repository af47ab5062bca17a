"""Issue 22: the hook lines of Auggie, Mistral Vibe, OpenHands, gptme and Hermes Agent on
native Windows, each quoted for the way that agent runs a hook there (read from its
source: `_command.WINDOWS_HOOK_SHELLS` names the file and function).

None of those shells is here, so each line is read back by a re-implementation of what
the agent does with it on Windows: Python's `shell=True` (`cmd.exe /c "LINE"`, then the
program's C-runtime argv), Hermes's `shlex.split(os.path.expanduser(LINE))`, Auggie's
word regex and its routing to cmd.exe, Vibe's Git Bash (`bash -c`, POSIX words) or
PowerShell (`& '...'`). `passdown install AGENT` runs with Windows simulated (tests/simwin)
through the CLI, as a user runs it, with a passdown whose path has spaces, `&` and `'`.
"""

from __future__ import annotations

import json
import ntpath
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from passdown.errors import UsageError
from passdown.integrations import _command
from passdown.integrations._command import (
    AUGGIE,
    BASH_OR_POWERSHELL,
    CMD,
    POSIX,
    SHLEX,
    hook_line,
    program_of,
)
from test_platform_hooks import (
    HOSTILE,
    SIMULATED,
    _passdown_at,
    _powershell_words,
    _simulated,
    _windows_path,
)

# -- what each agent does with the line on Windows ----------------------------------------


def _c_runtime_argv(command_line: str) -> list[str]:
    """How a Windows program's C runtime cuts its command line into argv (no `"` ever
    reaches here inside a word: passdown refuses those paths)."""
    words: list[str] = []
    current, quoted, started = "", False, False
    for char in command_line:
        if char == '"':
            quoted, started = not quoted, True
        elif char in " \t" and not quoted:
            if started:
                words.append(current)
            current, started = "", False
        else:
            current, started = current + char, True
    if started:
        words.append(current)
    return words


def _python_shell_true(line: str) -> list[str]:
    """`subprocess.run(LINE, shell=True)` on Windows: `cmd.exe /c "LINE"`. cmd.exe drops
    the outer quotes (more than two quotes, or a special character), runs what is left
    after expanding `%VAR%` and acting on `& | < > ^ ( )` outside quotes; the program
    gets the rest as its command line."""
    wrapped = f'"{line}"'
    inner = wrapped[1:-1]  # `cmd /c` without `/s`: the first and the last quote go
    assert "%" not in inner and "!" not in inner, inner  # cmd.exe would expand them
    outside = "".join(part for i, part in enumerate(inner.split('"')) if i % 2 == 0)
    assert not set(outside) & set("&|<>^()"), inner  # no operator cmd.exe would act on
    assert inner.count('"') % 2 == 0, inner
    return _c_runtime_argv(inner)


def _hermes_argv(line: str) -> list[str]:
    """Hermes's `_spawn` on Windows: `shlex.split(os.path.expanduser(command))`."""
    return shlex.split(ntpath.expanduser(line))


# Auggie 0.36's hook executor on Windows (augment.mjs): `cao`, `QIt`, `b7n`, `uao`
_AUGGIE_TO_CMD = re.compile(r"[|&;><$`]")
_AUGGIE_WORD = re.compile(r'"([^"]*(?:\\.[^"]*)*)"|\'([^\']*(?:\\.[^\']*)*)\'|(\S+)')


def _auggie_argv(line: str) -> list[str]:
    """What Auggie spawns (with `shell: false`) for a hook `command` and no `args`:
    asserting it takes neither its cmd.exe nor its script-extension branches."""
    first = re.match(r'"([^"]*)"|\'([^\']*)\'|(\S+)', line)
    assert first is not None
    program = next(g for g in first.groups() if g is not None)
    assert not program.lower().endswith((".ps1", ".sh", ".bat", ".cmd")), line
    assert not line.startswith("~") and not _AUGGIE_TO_CMD.search(line), line  # cmd.exe
    assert " " in line  # else Auggie spawns the whole line as one program name
    return [next(g for g in m.groups() if g is not None) for m in _AUGGIE_WORD.finditer(line)]


def _git_bash_argv(line: str) -> list[str]:
    """`bash -c LINE`, as sh splits words (this machine's `sh` runs POSIX lines in
    test_platform_hooks; here the words are compared, the program being a Windows path)."""
    return shlex.split(line)


def _vibe_argv(line: str, *, git_bash: bool) -> list[str]:
    return _git_bash_argv(line) if git_bash else _powershell_words(line)


# -- the table ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "shell", "posix"),
    [
        ("auggie", AUGGIE, AUGGIE),  # its own splitter on every system
        ("vibe", BASH_OR_POWERSHELL, POSIX),
        ("openhands", CMD, POSIX),
        ("gptme", CMD, POSIX),
        ("hermes", SHLEX, POSIX),  # shlex.split = sh's words there
    ],
)
def test_each_new_agent_has_its_windows_row(
    monkeypatch: pytest.MonkeyPatch, agent: str, shell: str, posix: str
) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    assert _command.hook_shell(agent) == posix
    monkeypatch.setattr(sys, "platform", "win32")
    assert _command.hook_shell(agent) == shell


def _expected(agent: str, path: str) -> list[str]:
    return [path, "hook", agent]


@pytest.mark.parametrize("folder", HOSTILE)
@pytest.mark.parametrize("agent", ["openhands", "gptme"])
def test_shell_true_agents_get_words_cmd_gives_back(
    monkeypatch: pytest.MonkeyPatch, agent: str, folder: str
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    path = _windows_path(folder)
    if any(c in path for c in '%"!'):
        with pytest.raises(UsageError, match=r"cmd\.exe"):
            hook_line(path, agent)
        return
    line = hook_line(path, agent)
    assert _python_shell_true(line) == _expected(agent, path)
    assert program_of(line) == path


@pytest.mark.parametrize("folder", [*HOSTILE, "back\\slash", "~tilde", "dollar $HOME"])
def test_hermes_lines_split_back_with_shlex(monkeypatch: pytest.MonkeyPatch, folder: str) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    path = _windows_path(folder)
    line = hook_line(path, "hermes")
    assert _hermes_argv(line) == _expected("hermes", path)  # backslashes kept, not `/`
    assert program_of(line) == path


@pytest.mark.parametrize("folder", HOSTILE)
def test_auggie_lines_stay_out_of_cmd_or_are_refused(
    monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    path = _windows_path(folder)
    if any(c in path for c in '|&;><$`"'):
        with pytest.raises(UsageError, match="Auggie"):
            hook_line(path, "auggie")
        return
    line = hook_line(path, "auggie")
    assert _auggie_argv(line) == _expected("auggie", path)
    assert program_of(line) == path


@pytest.mark.parametrize("program", [r"C:\tools\passdown.cmd", r"C:\my tools\passdown.cmd"])
def test_auggie_refuses_a_quoted_batch_file_it_would_hand_to_cmd(
    monkeypatch: pytest.MonkeyPatch, program: str
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    if " " not in program:  # plain: `cmd.exe /c "C:\tools\passdown.cmd hook auggie"` works
        assert hook_line(program, "auggie") == rf"{program} hook auggie"
        return
    with pytest.raises(UsageError, match="Auggie"):
        hook_line(program, "auggie")


@pytest.mark.parametrize("folder", HOSTILE)
@pytest.mark.parametrize("git_bash", [True, False])
def test_vibe_lines_fit_the_shell_vibe_picks(
    monkeypatch: pytest.MonkeyPatch, folder: str, git_bash: bool
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(_command, "git_bash_found", lambda: git_bash)
    path = _windows_path(folder)
    line = hook_line(path, "vibe")
    plain = folder == "plain"  # written with `/` whichever shell runs it (next test)
    expected = path.replace("\\", "/") if git_bash or plain else path
    assert _vibe_argv(line, git_bash=git_bash) == _expected("vibe", expected)


def test_a_plain_vibe_line_reads_the_same_in_bash_and_powershell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Vibe picks its shell when it runs (Git Bash installed later changes it): a path
    that needs no quoting is written with `/`, which both read as the same words."""
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(_command, "git_bash_found", lambda: pytest.fail("not asked"))
    line = hook_line(r"C:\Users\dev\venv\Scripts\passdown.exe", "vibe")
    assert line == "C:/Users/dev/venv/Scripts/passdown.exe hook vibe"
    words = ["C:/Users/dev/venv/Scripts/passdown.exe", "hook", "vibe"]
    assert _git_bash_argv(line) == _powershell_words(line) == words


def test_git_bash_is_found_as_vibe_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vibe's `get_windows_bash_path`: PATH (not WSL's System32 launcher), beside git,
    then the usual install folders; none of them: PowerShell."""
    for name in ("ProgramFiles", "ProgramFiles(x86)", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    system = tmp_path / "Windows"
    (system / "System32").mkdir(parents=True)
    wsl = system / "System32" / "bash.exe"
    wsl.write_text("")
    monkeypatch.setenv("SYSTEMROOT", str(system))
    monkeypatch.setattr(_command.shutil, "which", _which_in(wsl))
    monkeypatch.setenv("PATH", str(wsl.parent))
    assert _command.git_bash_found() is False  # only WSL's launcher on PATH
    program_files = tmp_path / "Program Files"
    bash = program_files / "Git" / "bin" / "bash.exe"
    bash.parent.mkdir(parents=True)
    bash.write_text("")
    monkeypatch.setenv("ProgramFiles", str(program_files))
    assert _command.git_bash_found() is True
    monkeypatch.delenv("ProgramFiles")
    git = program_files / "Git" / "cmd" / "git.exe"
    git.parent.mkdir()
    git.write_text("")
    monkeypatch.setattr(_command.shutil, "which", _which_in(wsl, git=git))
    assert _command.git_bash_found() is True  # <Git>\cmd\git.exe -> <Git>\bin\bash.exe


def _which_in(bash: Path, git: Path | None = None) -> object:
    def which(name: str, path: str | None = None) -> str | None:
        if name == "bash":
            return str(bash) if path is None or Path(path) == bash.parent else None
        return str(git) if name == "git" and git else None

    return which


# -- through `passdown install`, Windows simulated ---------------------------------------


def _install(
    tmp_path: Path, agent: str, command: Path, verb: str = "install", **env: str
) -> subprocess.CompletedProcess[str]:
    environment = _simulated(tmp_path)
    home = tmp_path / "home"
    environment.update(
        PASSDOWN_AUGGIE_DIR=str(home / ".augment"),
        VIBE_HOME=str(home / ".vibe"),
        HERMES_HOME=str(home / ".hermes"),
        XDG_CONFIG_HOME=str(home / ".config"),
    )
    for name in ("ProgramFiles", "ProgramFiles(x86)", "LOCALAPPDATA"):
        environment.pop(name, None)
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "passdown", verb, agent]
        + (["--command", str(command)] if verb == "install" else []),
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _installed_lines(agent: str, home: Path) -> list[str]:
    """Every hook command line `install` wrote for `agent`, from the agent's own file."""
    if agent in ("auggie", "openhands"):
        path = home / (".augment/settings.json" if agent == "auggie" else ".openhands/hooks.json")
        hooks = json.loads(path.read_text(encoding="utf-8"))["hooks"]
        return [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]
    if agent == "vibe":
        doc = tomllib.loads((home / ".vibe" / "hooks.toml").read_text(encoding="utf-8"))
        return [str(h["command"]) for h in doc["hooks"]]
    if agent == "gptme":
        config = home / ".config" / "gptme" / "config.toml"
        doc = tomllib.loads(config.read_text(encoding="utf-8"))
        return [str(h["command"]) for h in doc["hooks"]["scripts"]]
    text = (home / ".hermes" / "config.yaml").read_text(encoding="utf-8")
    return [json.loads(m) for m in re.findall(r"^\s*- command: (.+)$", text, re.MULTILINE)]


# how each agent hands the line over on Windows, as above
READ_BACK = {
    "openhands": _python_shell_true,
    "gptme": _python_shell_true,
    "hermes": _hermes_argv,
    "auggie": _auggie_argv,
}


@SIMULATED
@pytest.mark.parametrize("agent", ["openhands", "gptme", "hermes"])
def test_install_on_windows_writes_lines_the_agent_splits_back(tmp_path: Path, agent: str) -> None:
    """A passdown in `Tom & Jerry's tools`: each line goes back to that program and
    `hook AGENT`, through the agent's own way of running it on Windows."""
    command = _passdown_at(tmp_path / "Tom & Jerry's tools")
    proc = _install(tmp_path, agent, command)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = _installed_lines(agent, tmp_path / "home")
    assert lines, "no hook written"
    for line in lines:
        assert READ_BACK[agent](line) == [str(command), "hook", agent], line
        assert program_of(line) == str(command)
    written = [p for p in (tmp_path / "home").rglob("*") if p.is_file()]
    proc = _install(tmp_path, agent, command, verb="uninstall")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for path in written:  # the Windows lines are found again and taken out
        assert not path.exists() or f" hook {agent}" not in path.read_text(encoding="utf-8")


@SIMULATED
def test_auggie_install_on_windows_keeps_the_line_out_of_cmd(tmp_path: Path) -> None:
    command = _passdown_at(tmp_path / "Jerry's tools 100%!")
    proc = _install(tmp_path, "auggie", command)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = _installed_lines("auggie", tmp_path / "home")
    assert len(lines) == 2  # Stop and SessionEnd
    for line in lines:
        assert _auggie_argv(line) == [str(command), "hook", "auggie"], line


@SIMULATED
def test_auggie_install_on_windows_refuses_a_path_that_sends_it_to_cmd(tmp_path: Path) -> None:
    """`&` in the path makes Auggie run the line with `cmd.exe /c`, whose quoting Node
    does not write: exit 2, saying why, and nothing written."""
    command = _passdown_at(tmp_path / "Tom & Jerry")
    proc = _install(tmp_path, "auggie", command)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Auggie" in proc.stderr and "cmd.exe" in proc.stderr
    assert not (tmp_path / "home" / ".augment" / "settings.json").exists()


@SIMULATED
@pytest.mark.parametrize("git_bash", [True, False])
def test_vibe_install_on_windows_writes_for_git_bash_or_powershell(
    tmp_path: Path, git_bash: bool
) -> None:
    """With a `bash` on PATH Vibe runs hooks with Git Bash (POSIX words, `/`); with none
    (no Git anywhere) with PowerShell (`& '...'`)."""
    command = _passdown_at(tmp_path / "Tom & Jerry's tools")
    bare = tmp_path / "empty"
    bare.mkdir()
    path = os.environ["PATH"] if git_bash else str(bare)
    proc = _install(tmp_path, "vibe", command, PATH=path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = _installed_lines("vibe", tmp_path / "home")
    assert lines
    for line in lines:
        assert _vibe_argv(line, git_bash=git_bash) == [str(command), "hook", "vibe"], line
        assert line.startswith("& '") is not git_bash
        assert program_of(line) == str(command)


# -- Auggie on Linux and macOS: `bash -c`, or its own splitter --------------------------


def _run_as_auggie_on_posix(line: str, cwd: Path) -> None:
    """Auggie's POSIX branch (`dao`): `bash -c LINE` when the line holds one of |&;><$`
    (or starts with ~), else its word regex, spawned without a shell."""
    if line.startswith("~") or _AUGGIE_TO_CMD.search(line):
        argv = ["bash", "-c", line]
    else:
        argv = [next(g for g in m.groups() if g is not None) for m in _AUGGIE_WORD.finditer(line)]
    subprocess.run(argv, cwd=cwd, check=True, timeout=60)


def _recording_program(folder: Path, out: Path) -> Path:
    program = folder / "passdown"
    program.parent.mkdir(parents=True)
    program.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(out)!r}, 'w').write(json.dumps(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    program.chmod(0o755)
    return program


@pytest.mark.skipif(sys.platform == "win32", reason="runs the line as Auggie does on POSIX")
@pytest.mark.parametrize("folder", [f for f in HOSTILE if not ("'" in f and '"' in f)])
def test_auggie_posix_lines_reach_the_program_whatever_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    """`it's` was cut apart on main: shlex's `'"'"'` is no quoting to Auggie's regex."""
    monkeypatch.setattr(sys, "platform", "linux")
    out = tmp_path / "argv.json"
    program = _recording_program(tmp_path / folder, out)
    line = hook_line(str(program), "auggie")
    _run_as_auggie_on_posix(line, tmp_path)
    assert json.loads(out.read_text()) == ["hook", "auggie"]
    assert not (tmp_path / "PWNED").exists()
    assert program_of(line) == str(program)


def test_auggie_posix_refuses_a_path_with_both_quotes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    with pytest.raises(UsageError, match="Auggie"):
        hook_line('/home/dev/say "it\'s"/passdown', "auggie")


@pytest.mark.skipif(sys.platform == "win32", reason="runs the line as Auggie does on POSIX")
def test_auggie_install_on_linux_writes_lines_auggie_runs(tmp_path: Path) -> None:
    out = tmp_path / "argv.json"
    home = tmp_path / "home"
    folder = tmp_path / "o'brien tools"
    script = _passdown_at(folder)
    env = {**os.environ, "HOME": str(home), "PASSDOWN_AUGGIE_DIR": str(home / ".augment")}
    env.update(PASSDOWN_DATA_DIR=str(tmp_path / "data"), PASSDOWN_AGENTS="")
    env.pop("PASSDOWN_COMMAND", None)
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "install", "auggie", "--command", str(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = _installed_lines("auggie", home)
    assert len(lines) == 2
    script.unlink()  # now the recording program at the same hostile path
    folder.rmdir()
    _recording_program(folder, out)
    for line in lines:
        out.unlink(missing_ok=True)
        _run_as_auggie_on_posix(line, tmp_path)
        assert json.loads(out.read_text()) == ["hook", "auggie"], line
