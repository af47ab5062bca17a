"""`passdown completion SHELL` (issue 31): click's completion script for bash, zsh and
fish, naming the program; the bash one, sourced in a real bash, completes a command."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        capture_output=True,
        text=True,
        env=env or dict(os.environ),
        timeout=120,
        check=False,
    )


# what each shell's script must hold to register itself for `passdown`
REGISTERS = {
    "bash": "complete -o nosort -F _passdown_completion passdown",
    "zsh": "compdef _passdown_completion passdown",
    "fish": "complete --no-files --command passdown",
}


@pytest.mark.parametrize("shell", sorted(REGISTERS))
def test_each_shell_gets_a_script_that_names_the_program(shell: str) -> None:
    proc = run(["completion", shell])
    assert proc.returncode == 0, proc.stderr
    script = proc.stdout
    assert REGISTERS[shell] in script
    assert f"_PASSDOWN_COMPLETE={shell}_complete" in script  # calls passdown back
    if shell == "zsh":
        assert script.startswith("#compdef passdown")  # works from a file on $fpath


def test_an_unknown_shell_is_a_usage_error() -> None:
    proc = run(["completion", "tcsh"])
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "'tcsh' is not one of 'bash', 'zsh', 'fish'" in proc.stderr


def test_help_lists_the_completion_command() -> None:
    proc = run(["--help"])
    assert proc.returncode == 0, proc.stderr
    assert "completion" in proc.stdout.split("Commands:")[1]


def _shell(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"no {name} on this system (.ci/setup installs bash, zsh and fish)")
    if name == "bash":
        version = subprocess.run(
            [found, "--norc", "-c", 'echo "${BASH_VERSINFO[0]} ${BASH_VERSINFO[1]}"'],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.split()
        if tuple(map(int, version)) < (4, 4):  # macOS ships bash 3.2
            pytest.skip(f"bash {'.'.join(version)}: click's completion needs bash 4.4 or later")
    return found


def _complete(tmp_path: Path, shell: str, program: str) -> list[str]:
    """What `program` prints, run by `shell` after `passdown completion SHELL`'s script
    was saved to `$SCRIPT`, with `passdown` on PATH being this checkout's (a shim running
    this Python) and no start-up file of the user's read."""
    executable = _shell(shell)
    proc = run(["completion", shell])
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / f"passdown.{shell}"
    script.write_text(proc.stdout, encoding="utf-8")
    shim_dir = tmp_path / "bin"
    shim_dir.mkdir()
    shim = shim_dir / "passdown"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m passdown "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shim_dir}{os.pathsep}{os.environ['PATH']}",
        "SCRIPT": str(script),
        "HOME": str(tmp_path),  # fish writes its history and variables there
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    options = {"bash": ["--norc", "--noprofile"], "zsh": ["-f"], "fish": ["--no-config"]}
    done = subprocess.run(
        [executable, *options[shell], "-c", program],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == "", done.stderr  # a script the shell cannot parse says so here
    return done.stdout.splitlines()


def _bash_complete(tmp_path: Path, *words: str) -> list[str]:
    """COMPREPLY after the script's completion function ran on `words` (the last one is
    the word being completed), as bash runs it on Tab."""
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        'source "$SCRIPT"\n'
        f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
        f"_passdown_completion passdown '{words[-1]}' '{words[-2]}'\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    return _complete(tmp_path, "bash", program)


def test_bash_completes_exp_to_export(tmp_path: Path) -> None:
    assert _bash_complete(tmp_path, "passdown", "exp") == ["export"]


def test_bash_completes_the_shell_names(tmp_path: Path) -> None:
    options = _bash_complete(tmp_path, "passdown", "completion", "")
    assert options == ["bash", "zsh", "fish"]


def test_fish_completes_exp_to_export(tmp_path: Path) -> None:
    """fish's own `complete -C` runs the script as a Tab would (click 8.4.0 and 8.4.1
    print a fish script that fish cannot parse: pyproject.toml excludes them)."""
    found = _complete(tmp_path, "fish", 'source "$SCRIPT"; complete -C "passdown exp"')
    assert [line.split("\t")[0] for line in found] == ["export"]
    assert found[0].startswith("export\tWrite")  # with the command's short help


def test_zsh_completes_exp_to_export(tmp_path: Path) -> None:
    """The script's completion function in a real zsh, with `words` and `CURRENT` set as
    zsh's completion system sets them; `compdef`, `_describe` and `compadd` (builtins of
    that system, which runs only on a terminal) are stand-ins that print what they get."""
    program = (
        "compdef() { : }\n"
        '_describe() { print -rl -- "${(@P)3}" }\n'
        'compadd() { print -rl -- "${(@P)${@[-1]}}" }\n'
        'source "$SCRIPT"\n'
        "words=(passdown exp); CURRENT=2\n"
        "_passdown_completion\n"
    )
    found = _complete(tmp_path, "zsh", program)
    assert [line.split(":")[0] for line in found] == ["export"]


def test_the_docs_say_how_to_install_each_script() -> None:
    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    text = "\n".join(p.read_text(encoding="utf-8") for p in pages if p.is_file())
    for shell in ("bash", "zsh", "fish"):
        assert f"passdown completion {shell} > " in text, shell
