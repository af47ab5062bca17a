"""Launching: the prompt reaches the agent as exactly one unmodified argument, oversized
arguments are refused before anything runs, and signals behave.

The "agent" is a tiny Python script on a temporary PATH that writes what it received
(argv, cwd, selected env, whether stdin is /dev/null) as JSON.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import stat
import sys
import threading
from pathlib import Path

import pytest

from passdown import _launch as launch
from passdown._launch import MAX_ARG_BYTES, check_argv, format_argv, resolve_program, run
from passdown.agents.base import LaunchSpec
from passdown.errors import AgentNotInstalled, LaunchError

FAKE_AGENT = """\
import json, os, signal, sys, time
out = os.environ["FAKE_AGENT_OUT"]
devnull = os.stat(os.devnull)
stdin = os.fstat(0)
with open(out, "w", encoding="utf-8") as f:
    json.dump({
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "extra": os.environ.get("FAKE_AGENT_EXTRA"),
        "inherited": os.environ.get("FAKE_AGENT_INHERITED"),
        "stdin_is_devnull": (stdin.st_dev, stdin.st_ino) == (devnull.st_dev, devnull.st_ino),
        "sigint_default": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
    }, f)
action = os.environ.get("FAKE_AGENT_ACTION", "")
if action == "ctrl-c":
    # what the terminal does on Ctrl-C: SIGINT to the whole foreground group
    os.kill(os.getppid(), signal.SIGINT)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(10)
elif action == "sigterm-parent":
    os.kill(os.getppid(), signal.SIGTERM)
    time.sleep(10)
    sys.exit(99)  # not reached when passdown forwards SIGTERM
sys.exit(int(os.environ.get("FAKE_AGENT_EXIT", "0")))
"""

NASTY_PROMPTS = [
    "-p --dangerously-skip-permissions",
    "--",
    "-",
    "it's \"quoted\" 'twice'",
    "$(touch pwned) and `touch pwned2` and ${HOME}",
    "line one\nline two\r\n\ttabbed",
    "a; rm -rf / ; echo done && false || true | cat > out &",
    "glob * ? [a-z] ~ ! #comment",
    "unicode: naïve 文件 🚀 \u202e",
    "",
    " leading and trailing spaces ",
    "back\\slash \\n not a newline",
]


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `fake-agent` program on PATH; returns where it writes its report."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "fake-agent"
    program.write_text(f"#!{sys.executable}\n{FAKE_AGENT}")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    out = tmp_path / "report.json"
    monkeypatch.setenv("FAKE_AGENT_OUT", str(out))
    return out


def report(out: Path) -> dict[str, object]:
    return json.loads(out.read_text(encoding="utf-8"))


def spec(tmp_path: Path, *args: str, **env: str) -> LaunchSpec:
    return LaunchSpec(argv=["fake-agent", *args], cwd=tmp_path, env=dict(env))


# -- the prompt is one argument ------------------------------------------------------------


@pytest.mark.parametrize("interactive", [True, False])
@pytest.mark.parametrize("prompt", NASTY_PROMPTS)
def test_prompt_reaches_agent_as_one_unmodified_argument(
    tmp_path: Path, agent: Path, prompt: str, interactive: bool
) -> None:
    assert run(spec(tmp_path, "--model", "x", prompt), interactive=interactive) == 0
    assert report(agent)["argv"] == ["--model", "x", prompt]
    assert not (tmp_path / "pwned").exists()
    assert not (tmp_path / "pwned2").exists()


def test_all_nasty_prompts_at_once(tmp_path: Path, agent: Path) -> None:
    assert run(spec(tmp_path, *NASTY_PROMPTS), interactive=False) == 0
    assert report(agent)["argv"] == NASTY_PROMPTS


def test_large_but_allowed_prompt_arrives_whole(tmp_path: Path, agent: Path) -> None:
    prompt = "-" + "x" * (MAX_ARG_BYTES - launch.ARG_HEADROOM - 2)  # exactly at the limit
    run(spec(tmp_path, prompt), interactive=False)
    assert report(agent)["argv"] == [prompt]


# -- refused before anything runs ----------------------------------------------------------


def test_oversized_argument_is_refused_before_running(tmp_path: Path, agent: Path) -> None:
    prompt = "x" * MAX_ARG_BYTES
    with pytest.raises(LaunchError, match="argument 1 is 131,073 bytes"):
        run(spec(tmp_path, prompt), interactive=False)
    assert not agent.exists()


def test_argument_near_the_limit_is_refused(tmp_path: Path, agent: Path) -> None:
    prompt = "x" * (MAX_ARG_BYTES - launch.ARG_HEADROOM)  # with its NUL: one byte over
    with pytest.raises(LaunchError) as info:
        run(spec(tmp_path, prompt), interactive=True)
    assert info.value.hint and "HANDOFF.md" in info.value.hint
    assert not agent.exists()


def test_multibyte_characters_count_as_bytes() -> None:
    chars = (MAX_ARG_BYTES - launch.ARG_HEADROOM) // 4 + 1
    with pytest.raises(LaunchError):
        check_argv(["agent", "🚀" * chars])  # few characters, many bytes
    check_argv(["agent", "x" * chars])


def test_total_past_arg_max_is_refused(tmp_path: Path, agent: Path) -> None:
    piece = "y" * (100 * 1024)
    count = launch.arg_max() // len(piece) + 1
    with pytest.raises(LaunchError, match="the command line is"):
        run(spec(tmp_path, *[piece] * count), interactive=False)
    assert not agent.exists()


def test_environment_counts_against_arg_max(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "arg_max", lambda: 256 * 1024)
    argv = ["agent", "z" * (100 * 1024)]
    check_argv(argv, env={})
    with pytest.raises(LaunchError, match="used by the environment"):
        check_argv(argv, env={"BIG": "e" * (150 * 1024)})


def test_nul_byte_is_refused(tmp_path: Path, agent: Path) -> None:
    with pytest.raises(LaunchError, match="NUL"):
        run(spec(tmp_path, "before\0after"), interactive=False)
    assert not agent.exists()


def test_empty_argv_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="empty"):
        run(LaunchSpec(argv=[], cwd=tmp_path), interactive=False)


def test_non_string_argument_is_refused() -> None:
    with pytest.raises(LaunchError, match="not a string"):
        check_argv(["agent", Path("x")])  # type: ignore[list-item]


# -- finding and starting the program --------------------------------------------------------


def test_missing_program(tmp_path: Path, agent: Path) -> None:
    missing = LaunchSpec(argv=["no-such-agent-xyz", "hi"], cwd=tmp_path)
    with pytest.raises(AgentNotInstalled) as info:
        run(missing, interactive=False)
    assert info.value.exit_code == 6
    assert "no-such-agent-xyz was not found on PATH" in info.value.message
    assert info.value.hint and "install no-such-agent-xyz" in info.value.hint


def test_resolve_program(agent: Path, tmp_path: Path) -> None:
    assert resolve_program("fake-agent") == str(tmp_path / "bin" / "fake-agent")
    with pytest.raises(AgentNotInstalled):
        resolve_program("")
    with pytest.raises(AgentNotInstalled, match="is not executable"):
        resolve_program(str(tmp_path / "report.json"))


def test_path_from_spec_env_is_used(tmp_path: Path, agent: Path) -> None:
    other = tmp_path / "other-bin"
    other.mkdir()
    (tmp_path / "bin" / "fake-agent").rename(other / "only-here")
    launch_spec = LaunchSpec(
        argv=["only-here", "hi"], cwd=tmp_path, env={"PATH": f"{other}{os.pathsep}{os.defpath}"}
    )
    assert run(launch_spec, interactive=False) == 0
    assert report(agent)["argv"] == ["hi"]


def test_non_executable_format_is_launch_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad-agent"
    bad.write_bytes(b"\x7fELF garbage, not a program")
    bad.chmod(bad.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(LaunchError, match="cannot start"):
        run(LaunchSpec(argv=[str(bad)], cwd=tmp_path), interactive=False)


def test_missing_cwd_is_launch_error(tmp_path: Path, agent: Path) -> None:
    with pytest.raises(LaunchError, match="folder not found"):
        run(LaunchSpec(argv=["fake-agent"], cwd=tmp_path / "gone"), interactive=False)
    assert not agent.exists()


# -- the running agent -------------------------------------------------------------------


def test_cwd_and_env_are_merged(
    tmp_path: Path, agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work space"
    work.mkdir()
    monkeypatch.setenv("FAKE_AGENT_INHERITED", "from parent")
    run(
        LaunchSpec(argv=["fake-agent"], cwd=work, env={"FAKE_AGENT_EXTRA": "from spec"}),
        interactive=True,
    )
    got = report(agent)
    assert got["cwd"] == str(work)
    assert (got["extra"], got["inherited"]) == ("from spec", "from parent")


def test_stdin_is_devnull_only_when_not_interactive(tmp_path: Path, agent: Path) -> None:
    run(spec(tmp_path), interactive=False)
    assert report(agent)["stdin_is_devnull"] is True
    # interactive: the agent gets passdown's own stdin, whatever that is
    run(spec(tmp_path), interactive=True)
    mine = os.fstat(0)
    devnull = os.stat(os.devnull)
    assert report(agent)["stdin_is_devnull"] is (
        (mine.st_dev, mine.st_ino) == (devnull.st_dev, devnull.st_ino)
    )


def test_exit_code_is_returned(tmp_path: Path, agent: Path) -> None:
    assert run(spec(tmp_path, FAKE_AGENT_EXIT="3"), interactive=False) == 3


def test_ctrl_c_reaches_the_agent_and_passdown_survives(tmp_path: Path, agent: Path) -> None:
    before = signal.getsignal(signal.SIGINT)
    code = run(spec(tmp_path, FAKE_AGENT_ACTION="ctrl-c"), interactive=True)
    assert code == 128 + signal.SIGINT
    assert report(agent)["sigint_default"] is True  # passdown's handler did not leak
    assert signal.getsignal(signal.SIGINT) is before


def test_sigterm_is_forwarded_to_the_agent(tmp_path: Path, agent: Path) -> None:
    before = signal.getsignal(signal.SIGTERM)
    code = run(spec(tmp_path, FAKE_AGENT_ACTION="sigterm-parent"), interactive=False)
    assert code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


def test_runs_from_a_worker_thread(tmp_path: Path, agent: Path) -> None:
    codes: list[int] = []
    worker = threading.Thread(
        target=lambda: codes.append(run(spec(tmp_path, FAKE_AGENT_EXIT="5"), interactive=False))
    )
    worker.start()
    worker.join(30)
    assert codes == [5]


# -- display ---------------------------------------------------------------------------------


def test_format_argv_round_trips() -> None:
    argv = ["claude", "--", *NASTY_PROMPTS]
    assert shlex.split(format_argv(argv)) == argv


def test_launch_does_not_import_pydantic() -> None:
    import subprocess

    code = "import sys, passdown._launch; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_own_output_comes_before_the_agents(tmp_path: Path) -> None:
    import subprocess

    code = (
        "import sys; from pathlib import Path; from passdown.agents.base import LaunchSpec\n"
        "from passdown._launch import run\n"
        "print('passdown says first')\n"  # buffered: stdout is a pipe here
        f"run(LaunchSpec([sys.executable, '-c', 'print(\"agent second\")'], Path({str(tmp_path)!r})),"
        " interactive=False)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.splitlines() == ["passdown says first", "agent second"]
