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
# On Linux and macOS every agent runs a hook's command with `sh -c` (or splits it as sh
# would). On native Windows each has its own way, read from its source (the row's
# comment names where); an agent not named here gets cmd.exe's quoting, which is what
# `shell: true` means to Node and Python there.
POSIX, CMD, POWERSHELL = "posix", "cmd", "powershell"
SHLEX = "shlex"  # split by Python's `shlex.split` and run as argv, no shell
AUGGIE = "auggie"  # split by Auggie's own word regex and run as argv, no shell
BASH_OR_POWERSHELL = "bash-or-powershell"  # Git Bash where found, else PowerShell
WINDOWS_HOOK_SHELLS = {
    # Claude Code wraps a hook in Git Bash (`bash -c`), and so does Droid, which takes
    # Claude's hook protocol
    "claude": POSIX,
    "droid": POSIX,
    "cline": POSIX,  # its hooks are `#!/bin/sh` scripts passdown writes
    # Codex runs it with `%COMSPEC% /C`; Kimi with Python's `shell=True`
    "codex": CMD,
    "kimi": CMD,
    # Gemini CLI and Qwen Code: `powershell.exe -Command` (their `getShellConfiguration`)
    "gemini": POWERSHELL,
    "qwen": POWERSHELL,
    "copilot": POWERSHELL,  # a handler's `powershell` key there (`bash` elsewhere)
    # Auggie 0.36 (augment.mjs, the hook executor's Windows branch): a line with none of
    # |&;><$` and no leading ~ is cut into words by its regex ("..." or '...' taken
    # whole, no escapes) and spawned with `shell: false`; a line with one of them goes
    # to `cmd.exe /c` as one argument, which Node quotes for the C runtime (`\"`), not
    # for cmd.exe: passdown writes the first kind and refuses paths that make the second
    "auggie": AUGGIE,
    # Mistral Vibe 3.0 (mistralai_vibe_local_harness/vibe/_foreign_hooks.py,
    # `_spawn_hook_command`): the session's command environment, Git Bash (`bash -c`)
    # when `vibe.utils.platform.get_windows_bash_path` finds one, else PowerShell
    # (`pwsh`/`powershell -Command`, `WindowsTerminalBackend.command_argv`)
    "vibe": BASH_OR_POWERSHELL,
    # OpenHands (openhands/sdk/hooks/executor.py, `HookExecutor.execute`) and gptme
    # (gptme/hooks/script.py, `_run_script_hook`): `subprocess` with `shell=True`, which
    # on Windows is `%COMSPEC% /c "LINE"` (cmd.exe drops the outer quotes again)
    "openhands": CMD,
    "gptme": CMD,
    # Hermes Agent (agent/shell_hooks.py, `_spawn`): `shlex.split(os.path.expanduser(
    # command))` run with `shell=False` on every system, POSIX shlex rules on Windows too
    "hermes": SHLEX,
}
_CMD_UNQUOTABLE = re.compile(r'["%!\x00-\x1f]')
_CMD_PLAIN = re.compile(r"[A-Za-z0-9_.:+/\\-]+")  # not `,;=`: cmd.exe splits words there
_PS_QUOTES = re.compile("['\u2018\u2019\u201a\u201b]")
_PS_PLAIN = re.compile(r"[A-Za-z0-9_.:+/\\-]+")  # not `,`: PowerShell makes an array
# On Linux and macOS Auggie (the executor's other branch, `dao`) runs a line with one of
# |&;><$` (or a leading ~) with `bash -c`, and splits any other with the same regex
POSIX_HOOK_SHELLS = {"auggie": AUGGIE}
_AUGGIE_TO_SHELL = re.compile(r"[|&;><$`]")
# what sends Auggie's line to cmd.exe (its `cao`), and what its word regex cannot hold
_AUGGIE_UNQUOTABLE = re.compile(r'[|&;><$`"\x00-\x1f]')
_AUGGIE_SCRIPTS = (".ps1", ".sh", ".bat", ".cmd")  # a first word it hands to another shell


# The skill's example lines (`passdown find ...`) are run by the model with its own shell
# tool, which on Windows need not be the shell its hooks run in.
WINDOWS_TOOL_SHELLS = {
    "claude": POSIX,  # Claude Code's Bash tool runs Git Bash on Windows
    # codex-rs core/src/shell.rs, `default_user_shell`: PowerShell on Windows (`pwsh`,
    # else `powershell`; cmd.exe only where neither exists)
    "codex": POWERSHELL,
}


def tool_shell(agent: str) -> str:
    """The shell `agent`'s model runs a command line with on this machine."""
    from passdown import _platform

    return WINDOWS_TOOL_SHELLS.get(agent, POWERSHELL) if _platform.is_windows() else POSIX


def hook_shell(agent: str) -> str:
    """The shell `agent` runs its hooks' command lines with on this machine (on Windows
    Vibe's is BASH_OR_POWERSHELL, settled by `shell_line`)."""
    from passdown import _platform

    if _platform.is_windows():
        return WINDOWS_HOOK_SHELLS.get(agent, CMD)
    return POSIX_HOOK_SHELLS.get(agent, POSIX)


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


def quote_auggie(word: str, *, first: bool = False) -> str:
    """A word for Auggie's splitter on Windows: plain, or in double quotes (taken whole,
    `'`, `%`, `!`, spaces and all). A word with one of |&;><$` would send the whole line
    to cmd.exe through Node's quoting, which cmd.exe misreads; it is refused, as is a
    first word Auggie hands to PowerShell, bash or cmd.exe by its extension."""
    if _PS_PLAIN.fullmatch(word) and not (first and word.startswith("~")):
        return word
    if _AUGGIE_UNQUOTABLE.search(word) or (first and word.lower().endswith(_AUGGIE_SCRIPTS)):
        raise UsageError(
            f"{word!r} cannot be written for Auggie on Windows (a path with one of "
            '| & ; > < $ ` " makes Auggie run the hook through cmd.exe, which would cut it '
            "there)",
            hint="install passdown in a folder whose path has none of them "
            "(or give one with --command)",
        )
    return f'"{word}"'


def shell_line(shell: str, program: str, args: list[str]) -> str:
    """`program args...` as a command line for `shell` (one of the styles above)."""
    from passdown import _platform

    words = [program, *args]
    if shell == BASH_OR_POWERSHELL:
        if all(_PS_PLAIN.fullmatch(w.replace("\\", "/")) for w in words):
            # plain words with `/`: bash and PowerShell read them alike, whichever runs
            return shell_line(POSIX, program, args)
        return shell_line(POSIX if git_bash_found() else POWERSHELL, program, args)
    if shell == POWERSHELL:
        quoted = [quote_powershell(w) for w in words]
        # a quoted program is a string to PowerShell: `&` calls it
        return " ".join(["&", *quoted]) if quoted[0].startswith("'") else " ".join(quoted)
    if shell == CMD:
        return " ".join(quote_cmd(w) for w in words)
    if shell == AUGGIE:
        if not _platform.is_windows():
            return _auggie_posix_line(words)
        return " ".join(quote_auggie(w, first=i == 0) for i, w in enumerate(words))
    if shell == SHLEX:
        return " ".join(shlex.quote(w) for w in words)  # Windows paths keep their `\`
    windows = _platform.is_windows()
    return " ".join(quote_posix(w, windows=windows) for w in words)


def _auggie_posix_line(words: list[str]) -> str:
    """Auggie's line on Linux and macOS: `sh` quoting where it runs `bash -c`; where it
    splits the line itself, its regex would cut shlex's `'"'"'` apart, so a word with a
    `'` goes in double quotes (taken whole); one with both quotes is refused."""
    line = " ".join(shlex.quote(w) for w in words)
    if _AUGGIE_TO_SHELL.search(line) or line.startswith("~"):
        return line
    for word in words:
        if "'" in word and '"' in word:
            raise UsageError(
                f"{word!r} cannot be written for Auggie (its hook splitter takes no "
                "escapes, and the path has both kinds of quote)",
                hint="install passdown in a folder whose path has no quotes "
                "(or give one with --command)",
            )
    return " ".join(f'"{w}"' if "'" in w else shlex.quote(w) for w in words)


def git_bash_found() -> bool:
    """Whether Vibe would find a Git Bash here (`get_windows_bash_path`: a `bash` on PATH
    other than WSL's launcher in System32, the one beside `git.exe`, or one in the usual
    install folders), so that it runs hooks with `bash -c`, not PowerShell."""
    system = os.environ.get("SYSTEMROOT", r"C:\Windows")  # names ignore case there
    wsl = os.path.normcase(os.path.join(system, "System32", "bash.exe"))
    for entry in os.get_exec_path():
        found = shutil.which("bash", path=entry)
        if found and os.path.normcase(found) != wsl:
            return True
    candidates: list[Path] = []
    git = shutil.which("git")
    if git:
        root = Path(git).resolve().parent.parent  # <Git>\cmd\git.exe
        candidates += [root / "bin" / "bash.exe", root / "usr" / "bin" / "bash.exe"]
    for name in ("ProgramFiles", "ProgramFiles(x86)", "LOCALAPPDATA"):
        base = os.environ.get(name)
        if base:
            candidates += [Path(base, "Git", "bin", "bash.exe")]
            candidates += [Path(base, "Programs", "Git", "bin", "bash.exe")]
    return any(path.is_file() for path in candidates)


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
