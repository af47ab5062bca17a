"""Which passdown the agents run: a command that works where the agent runs it.

Agents run their hooks (and the MCP server) with their own PATH, which need not hold
the folder passdown was installed into (a virtual environment's `bin`, say). So
`passdown install` writes the absolute path of the running install's `passdown`, or
the `--command` (`PASSDOWN_COMMAND`) the user gives, and runs it once as the agent
will (`COMMAND hook --check AGENT`, through the shell where the agent uses one) before
any file changes: a command that does not run is refused, never written.

`hook --check` answers with the version and the folder of the passdown it runs, so an
automatic choice is only taken when it runs this very passdown (not another install
that happens to be on PATH).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from passdown.errors import UsageError

CHECK_TIMEOUT_S = 60  # a cold start on a busy machine; the check itself is instant
COMMAND_ENV = "PASSDOWN_COMMAND"
SCRIPT_NAMES = ("passdown", "agent-handoff")


@dataclass(frozen=True, slots=True)
class CheckedCommand:
    """A command that ran `hook --check`, and what it said about itself."""

    command: str  # what the agents' configs get
    version: str
    package: str  # the folder of the passdown package it runs

    @property
    def by_name(self) -> bool:
        """Looked up on PATH when the hook runs (the user asked for a bare name)."""
        return os.sep not in self.command and not (os.altsep and os.altsep in self.command)


def this_package() -> str:
    import passdown

    return str(Path(passdown.__file__).resolve().parent)


# -- hook command lines, quoted for the shell that runs them -----------------------------
#
# On Linux and macOS every agent runs a hook's command with `sh -c`. On native Windows
# each has its own: Claude Code wraps it in Git Bash (`bash -c`), and so does Droid, which
# takes Claude's hook protocol; Codex runs it with `%COMSPEC% /C` (cmd.exe), as does
# Kimi (Python's `shell=True`); Gemini CLI and Qwen Code with `powershell.exe -Command`
# (their `getShellConfiguration`); Copilot CLI picks a handler's `powershell` key there
# and `bash` elsewhere, so it gets both. An agent not named here gets cmd.exe's quoting,
# which is what `shell: true` means to Node and Python on Windows.
POSIX, CMD, POWERSHELL = "posix", "cmd", "powershell"
WINDOWS_HOOK_SHELLS = {
    "claude": POSIX,
    "droid": POSIX,
    "cline": POSIX,  # its hooks are `#!/bin/sh` scripts passdown writes
    "codex": CMD,
    "kimi": CMD,
    "gemini": POWERSHELL,
    "qwen": POWERSHELL,
    "copilot": POWERSHELL,
}
_CMD_UNQUOTABLE = re.compile(r'["%!\x00-\x1f]')
_CMD_PLAIN = re.compile(r"[A-Za-z0-9_.:+/\\-]+")  # not `,;=`: cmd.exe splits words there
_PS_QUOTES = re.compile("['\u2018\u2019\u201a\u201b]")
_PS_PLAIN = re.compile(r"[A-Za-z0-9_.:+/\\-]+")  # not `,`: PowerShell makes an array


def hook_shell(agent: str) -> str:
    """The shell `agent` runs its hooks' command lines with on this machine."""
    from passdown import _platform

    return WINDOWS_HOOK_SHELLS.get(agent, CMD) if _platform.is_windows() else POSIX


def quote_posix(word: str, *, windows: bool = False) -> str:
    """A word for `sh -c`/`bash -c`. For Git Bash on Windows a path's backslashes become
    `/` (bash would read them as escapes when a later hop unquotes the word)."""
    if windows:
        word = word.replace("\\", "/")
    return shlex.quote(word)


def quote_cmd(word: str) -> str:
    """A word for cmd.exe: inside double quotes `&|<>^()` are literal, but `%VAR%` is
    expanded even there, `!` too under delayed expansion, and a `"` cannot be escaped:
    such a word (or one with a control character) is refused, never written."""
    if _CMD_UNQUOTABLE.search(word):
        raise UsageError(
            f"{word!r} cannot be written for cmd.exe (it would expand `%`/`!` or end the "
            'quoting at `"`)',
            hint='install passdown in a folder whose path has no % ! or " '
            "(or give one with --command)",
        )
    return word if _CMD_PLAIN.fullmatch(word) else f'"{word}"'


def quote_powershell(word: str) -> str:
    """A word for PowerShell: single quotes keep everything literal (`$()`, `` ` ``,
    `%`, `&`); a single quote inside is doubled, and PowerShell takes the typographic
    single quotes for one too."""
    if _PS_PLAIN.fullmatch(word):
        return word
    return "'" + _PS_QUOTES.sub(lambda m: m.group() * 2, word) + "'"


def shell_line(shell: str, program: str, args: list[str]) -> str:
    """`program args...` as a command line for `shell` (POSIX, CMD or POWERSHELL)."""
    from passdown import _platform

    if shell == POWERSHELL:
        words = [quote_powershell(w) for w in (program, *args)]
        # a quoted program is a string to PowerShell: `&` calls it
        return " ".join(["&", *words]) if words[0].startswith("'") else " ".join(words)
    if shell == CMD:
        return " ".join(quote_cmd(w) for w in (program, *args))
    windows = _platform.is_windows()
    return " ".join(quote_posix(w, windows=windows) for w in (program, *args))


def hook_line(command: str, agent: str, *args: str, shell: str | None = None) -> str:
    """The command line an agent's hook runs (`InstallTarget.hook_command`), quoted for
    the shell the agent runs it with here (`hook_shell`) unless `shell` is given."""
    return shell_line(shell or hook_shell(agent), command, ["hook", agent, *args])


def program_of(command_line: str) -> str:
    """The executable a hook's command line starts, read back from any of the three
    quotings: `& 'C:\\x y\\passdown.exe' ...`, `"C:\\x y\\passdown.exe" ...`, POSIX."""
    line = command_line.strip()
    if line.startswith("& '"):
        q = "'\u2018\u2019\u201a\u201b"
        match = re.match(rf"& '((?:[^{q}]|[{q}]{{2}})*)[{q}]", line)
        if match:
            return re.sub(rf"[{q}]([{q}])", r"\1", match.group(1))
    if line.startswith('"'):
        end = line.find('"', 1)
        if end > 0:
            return line[1:end]
    if "'" not in line and '"' not in line:
        words = line.split()  # a plain Windows path keeps its backslashes
    else:
        try:
            words = shlex.split(line)
        except ValueError:
            words = line.split()
    return words[0] if words else ""


def check_report(agent: str | None) -> dict[str, str]:
    """What `passdown hook --check` prints (as JSON): this passdown, and the agent's
    integration loaded as the hook loads it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("passdown")
    except PackageNotFoundError:  # a source checkout on PYTHONPATH
        installed = "unknown"
    report = {"passdown": installed, "package": this_package(), "python": sys.executable}
    if agent:
        from passdown.integrations import integration_for

        report["agent"] = integration_for(agent).agent
    return report


def check_command(command: str, agent: str = "claude") -> CheckedCommand:
    """Run `command hook --check AGENT` as the agent would (a shell line on POSIX, so
    the quoting the configs get is checked too); `UsageError` when it does not run."""
    argv = [command, "hook", "--check", agent, "--json"]
    if os.name == "posix":
        line = f"{shlex.quote(command)} hook --check {agent} --json"
        run: list[str] = ["/bin/sh", "-c", line]
        executable = None
    else:  # found as a shell would (PATHEXT: `passdown.exe`), never through cmd.exe
        from passdown import _platform

        found = shutil.which(command) or command
        try:
            executable, run = _platform.spawn_argv(found, [found, *argv[1:]])
        except _platform.UnsafeLaunch as exc:
            raise UsageError(f"`{command}` cannot be run: {exc}") from None
    try:
        proc = subprocess.run(
            run,
            executable=executable,
            capture_output=True,
            text=True,
            encoding="utf-8",  # what passdown writes whatever the code page (cli.utf8_stdio)
            errors="replace",
            timeout=CHECK_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"`{command}` cannot be run: {exc}") from None
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        detail = f": {said[-1]}" if said else ""
        raise UsageError(f"`{command} hook --check` exited {proc.returncode}{detail}")
    try:
        report = json.loads(proc.stdout)
        return CheckedCommand(command, str(report["passdown"]), str(report["package"]))
    except (ValueError, KeyError, TypeError):
        raise UsageError(
            f"`{command} hook --check` did not answer as passdown does: {proc.stdout[:200]!r}"
        ) from None


def resolve_command(given: str | None, agent: str = "claude") -> CheckedCommand:
    """The checked command install writes: `given` (a path, made absolute, or a name on
    PATH), else this install's own `passdown` script."""
    if given is None:
        given = os.environ.get(COMMAND_ENV) or None
    if given is not None:
        return check_command(_given_command(given), agent)
    tried: list[str] = []
    for candidate in _own_scripts():
        try:
            checked = check_command(candidate, agent)
        except UsageError as exc:
            tried.append(exc.message)
            continue
        if checked.package == this_package():
            return checked
        tried.append(f"{candidate} runs the passdown in {checked.package}")
    raise UsageError(
        "cannot find the `passdown` command of this install for the agents to run"
        + (f" ({'; '.join(tried)})" if tried else ""),
        hint="name it: `passdown install AGENT --command /path/to/passdown`",
    )


def _given_command(given: str) -> str:
    """A path is made absolute and must be an executable file; a bare name must be
    found on PATH (it stays a name: the user chose lookup at hook time)."""
    given = os.path.expanduser(given.strip())
    if not given:
        raise UsageError("--command is empty")
    if os.sep not in given and not (os.altsep and os.altsep in given):
        if shutil.which(given) is None:
            raise UsageError(f"--command {given!r} is not on PATH", hint="give its absolute path")
        return given
    path = os.path.abspath(given)
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise UsageError(f"--command {path}: not an executable file")
    return path


def _own_scripts() -> list[str]:
    """Where this install's console script can be, most certain first: the script that
    runs now (a path, kept as invoked: a link on PATH survives an upgrade), then the
    scripts folder of this interpreter (`python -m passdown`), then PATH."""
    found: list[str] = []
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).stem.lower() in SCRIPT_NAMES:
        found += [os.path.abspath(argv0), os.path.abspath(argv0) + ".exe"]
    suffix = ".exe" if os.name == "nt" else ""
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        found.append(os.path.join(folder, "passdown" + suffix))
    on_path = shutil.which("passdown")
    if on_path:
        found.append(os.path.abspath(on_path))
    unique = list(dict.fromkeys(found))
    return [p for p in unique if os.path.isfile(p) and os.access(p, os.X_OK)]
