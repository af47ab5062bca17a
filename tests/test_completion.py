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


def _bash_complete(tmp_path: Path, *words: str) -> list[str]:
    """COMPREPLY after the script's completion function ran on `words` (the last one is
    the word being completed), in a bash with no start-up files, where `passdown` on PATH
    is this checkout's (a shim running this Python)."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash on this system")
    proc = run(["completion", "bash"])
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / "passdown.bash"
    script.write_text(proc.stdout, encoding="utf-8")
    shim_dir = tmp_path / "bin"
    shim_dir.mkdir()
    shim = shim_dir / "passdown"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m passdown "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"source '{script}'\n"
        f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
        f"_passdown_completion passdown '{words[-1]}' '{words[-2]}'\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{shim_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [bash, "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_exp_to_export(tmp_path: Path) -> None:
    assert _bash_complete(tmp_path, "passdown", "exp") == ["export"]


def test_bash_completes_the_shell_names(tmp_path: Path) -> None:
    options = _bash_complete(tmp_path, "passdown", "completion", "")
    assert options == ["bash", "zsh", "fish"]
