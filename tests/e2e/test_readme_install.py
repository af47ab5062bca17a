"""Issue 21, done means: the README's first block, run as a newcomer runs it, and then a
real Claude Code session whose SessionEnd hook writes the handoff.

1. The first ```sh block of the README's Set-up runs with `sh` in a copy of this
   checkout, in a fresh HOME, with no passdown anywhere on PATH and no PYTHONPATH: it
   makes the venv, installs passdown into it, links the command into ~/.local/bin and
   runs `passdown demo`, which writes a real handoff of the shipped example session.
   Offline (tests never leave 127.0.0.1): the venv is made `--system-site-packages`
   (passdown's dependencies come from the Python running the tests) and pip installs
   with `--no-deps --no-build-isolation --no-index`; everything else is the README's
   text. passdown itself is the venv's own copy (checked: `hook --check` names it).
2. `<venv>/bin/passdown install claude`, with a PATH that has neither the venv's bin
   nor ~/.local/bin: the hooks get the venv script's absolute path.
3. A real Claude Code session (the pinned CLI) on a scripted model server, with a PATH
   on which no passdown exists: its SessionEnd hook writes the handoff.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, npm_bin_dir, passdown_switches, run_claude
from e2e.checks import ok
from e2e.hooked import hook_log
from e2e.servers import AnthropicServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
VENV_MAKE = "python3 -m venv "
PIP_INSTALL = "/bin/pip install -q . "
OFFLINE_VENV = "python3 -m venv --system-site-packages "
OFFLINE_PIP = "/bin/pip install -q --no-deps --no-build-isolation --no-index . "
TASK = "Write usage notes for the calculator in NOTES.md"
NEXT = "Next step: document the add() edge cases in NOTES.md."


def readme_first_block() -> str:
    """The first ```sh block of the README's Set-up section, as written."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme[readme.index("\n## Set-up") :]
    match = re.search(r"\n```sh\n(.*?)\n```\n", setup, re.DOTALL)
    assert match, "the README's Set-up has no ```sh block"
    return match.group(1) + "\n"


def offline(block: str) -> str:
    """The block with the two offline switches (and nothing else) changed."""
    assert block.count(VENV_MAKE) == 1 and block.count(PIP_INSTALL) == 1, block
    return block.replace(VENV_MAKE, OFFLINE_VENV).replace(PIP_INSTALL, OFFLINE_PIP)


def copy_checkout(dest: Path) -> Path:
    """This checkout's files as a clone has them (tracked, and new ones not ignored),
    so the build's by-products never land in the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = REPO_ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def path_without_passdown(*first: Path) -> str:
    folders = [str(f) for f in first] + [
        d for d in SYSTEM_PATH if not (Path(d) / "passdown").exists() and Path(d).is_dir()
    ]
    path = os.pathsep.join(folders)
    assert shutil.which("passdown", path=path) is None, path
    return path


def test_readme_install_then_a_claude_session_end_writes_the_handoff(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    home = agent_env.home
    clone = copy_checkout(tmp_path / "clone")
    python_dir = tmp_path / "python"  # `python3` as the README calls it: the tests' Python
    python_dir.mkdir()
    (python_dir / "python3").symlink_to(sys.executable)
    user_env = {
        "HOME": str(home),
        "PATH": path_without_passdown(python_dir),
        "LANG": "C.UTF-8",
        "TMPDIR": str(tmp_path),
        "PASSDOWN_DATA_DIR": str(agent_env.passdown_data),
        **passdown_switches(),
    }

    # 1. the README's first block, in the clone
    setup = subprocess.run(
        ["/bin/sh", "-c", offline(readme_first_block())],
        cwd=clone,
        env=user_env,
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )
    text = ok(setup, "the README's first block")  # the demo prints the handoff
    assert "**Goal:** Add a shout() helper to greet.py" in text
    assert "- [ ] Add a test for shout() (pending)" in text
    assert not list(tmp_path.glob("passdown-demo-*")), "the demo's scratch folder is removed"
    assert not agent_env.passdown_data.exists(), "the demo wrote into the user's data folder"
    venv_script = home / ".local" / "share" / "passdown-venv" / "bin" / "passdown"
    assert (home / ".local" / "bin" / "passdown").resolve() == venv_script.resolve()
    alias = home / ".local" / "bin" / "agent-handoff"
    assert alias.resolve() == venv_script.with_name("agent-handoff").resolve()
    check = json.loads(
        ok(
            subprocess.run(
                [str(venv_script), "hook", "--check", "--json"],
                env=user_env,
                capture_output=True,
                text=True,
                check=False,
            ),
            "hook --check",
        )
    )
    venv = home / ".local" / "share" / "passdown-venv"
    assert Path(check["package"]).is_relative_to(venv), check  # the venv's own passdown

    # 2. install claude from the venv, neither its bin nor ~/.local/bin on PATH
    installed = subprocess.run(
        [str(venv_script), "install", "claude"],
        cwd=workspace,
        env={**user_env, "CLAUDE_CONFIG_DIR": str(agent_env.claude_dir)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert f"checked   {venv_script} hook --check" in ok(installed, "install claude")
    settings = json.loads((agent_env.claude_dir / "settings.json").read_text())
    line = f"{shlex.quote(str(venv_script))} hook claude"
    assert settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"] == line

    # 3. a real Claude Code session ends; no passdown on its PATH, no PYTHONPATH
    steps = [
        Step(
            text="Writing the notes file.",
            tool="Write",
            input={"file_path": str(workspace / "NOTES.md"), "content": "usage notes\n"},
        ),
        Step(text=f"NOTES.md is written. {NEXT}"),
    ]
    with AnthropicServer(steps) as anthropic:
        env = agent_env.environ(anthropic_url=anthropic.url)
        env.pop("PYTHONPATH")
        env["PATH"] = path_without_passdown(npm_bin_dir())
        proc = run_claude(env, workspace, TASK)
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert " ok claude session_end stored=handoff-" in hook_log(agent_env), hook_log(agent_env)
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    assert handoff["source"]["agent"] == "claude"
    assert handoff["task"]["original_request"] == TASK
    assert "document the add() edge cases" in json.dumps(handoff["state"]["next_steps"])
    touched = [f["path"] for f in handoff["state"]["files_touched"]]
    assert any(p.endswith("NOTES.md") for p in touched), touched
    markdown = (workspace / ".agent-handoff" / "HANDOFF.md").read_text()
    assert f"**Goal:** {TASK}" in markdown
