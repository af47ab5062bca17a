"""Every command with hostile inputs: a session id that climbs out of the store, a
workspace path with newlines, an empty file, a folder where a session file should be,
a 50 MB single line, bytes that are not UTF-8, a FIFO (which must not block anything),
a device, a deep JSON nesting, a payload that is not JSON. Each must end at once with a
clear message and a documented exit code, never a traceback; where passdown can hand
off part of a session, it does, with a warning.

Found by driving every command this way (the leftovers brief); fixed here: `store` on a
FIFO blocked forever and on /dev/zero read without end, an empty session file became an
empty handoff published over the real one, and a hook payload that is not JSON was
logged with a traceback as if it were a bug."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from passdown.cli import _store_cmds, main
from recorded import scenarios
from test_fuzz_readers import _deadline

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    def invoke(*argv: str, stdin: bytes | None = None, seconds: int = 60) -> tuple[int, str, str]:
        capsys.readouterr()
        real = sys.stdin
        if stdin is not None:
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
        try:
            with _deadline(seconds, f"passdown {' '.join(argv)[:80]}"):
                code = main(list(argv))
        finally:
            sys.stdin = real
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err and "internal error" not in err, err
        return code, out, err

    return invoke


def codex_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The recorded Codex store; returns its session folder."""
    session = next(r for r in scenarios("codex") if r.scenario == "full").install(
        tmp_path / "codex", monkeypatch
    )
    return session.parent


def rollout(folder: Path, n: int) -> Path:
    return folder / f"rollout-2026-11-29T00-00-00-0000000{n}-0000-0000-0000-000000000000.jsonl"


# -- passdown store ------------------------------------------------------------------------------
def test_store_refuses_a_fifo_and_a_device_at_once(run: Run, tmp_path: Path) -> None:
    fifo = tmp_path / "record.json"
    os.mkfifo(fifo)
    code, _, err = run("store", str(fifo), seconds=20)  # before: blocked for ever
    assert code == 2 and f"cannot read {fifo}: not a regular file" in err
    code, _, err = run("store", "/dev/zero", seconds=20)  # before: read without end
    assert code == 2 and "not a regular file" in err
    code, _, err = run("store", str(tmp_path), seconds=20)
    assert code == 2 and "not a regular file" in err
    code, _, err = run("store", str(tmp_path / "missing.json"))
    assert code == 2 and "No such file or directory" in err


def test_store_bounds_what_it_reads(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_store_cmds, "STORE_INPUT_MAX_BYTES", 1000)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"text": "x" * 5000}))
    code, _, err = run("store", str(big))
    assert code == 12 and "larger than 1,000 bytes" in err
    code, _, err = run("store", "-", stdin=big.read_bytes())
    assert code == 12 and "larger than 1,000 bytes" in err


@pytest.mark.parametrize(
    "body",
    [b"", b"\xff\xfe\x00 not utf-8", b"[" * 100_000 + b"]" * 100_000, b'{"id": "\xff"}'],
    ids=["empty", "non-utf8", "deep", "bad-bytes"],
)
def test_store_of_something_not_a_record_is_exit_12(run: Run, tmp_path: Path, body: bytes) -> None:
    path = tmp_path / "record.json"
    path.write_bytes(body)
    code, _, err = run("store", str(path))
    assert code == 12 and err.startswith("passdown: error: invalid record"), err
    code, _, err = run("store", "-", stdin=body)
    assert code == 12, err


# -- session files ------------------------------------------------------------------------------
def test_an_empty_session_file_is_not_handed_off_over_a_real_handoff(
    run: Run, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = codex_store(tmp_path, monkeypatch)
    [real] = folder.glob("rollout-*.jsonl")
    assert run("export", "--from", "codex", "--session", str(real), "--workspace", ".")[0] == 0
    before = (workspace / ".agent-handoff" / "HANDOFF.md").read_bytes()
    empty = rollout(folder, 1)
    empty.write_bytes(b"")
    code, _, err = run("export", "--from", "codex", "--session", str(empty), "--workspace", ".")
    assert code == 5, err  # before: 0, an empty handoff published over the real one
    assert f"{empty} is empty: it holds no codex record" in err
    assert (workspace / ".agent-handoff" / "HANDOFF.md").read_bytes() == before


@pytest.mark.parametrize("kind", ["folder", "fifo", "non-utf8"])
def test_a_session_path_that_is_no_session_file_is_exit_5(
    kind: str, run: Run, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = rollout(codex_store(tmp_path, monkeypatch), 2)
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(b'\xff\xfe\x00garbage \xc3\x28\n{"type": "\xff"\n')
    for command in ("inspect", "export", "switch"):
        extra = ["--to", "claude", "--dry-run"] if command == "switch" else []
        code, _, err = run(
            command, "--from", "codex", "--session", str(path), "--workspace", ".", *extra,
            seconds=30,
        )  # fmt: skip
        assert code == 5, (command, err)
        assert str(path) in err


def test_a_50_mb_single_line_is_skipped_with_a_warning(
    run: Run, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = codex_store(tmp_path, monkeypatch)
    [real] = folder.glob("rollout-*.jsonl")
    lines = real.read_bytes().splitlines(keepends=True)
    huge = b'{"type": "response_item", "payload": {"text": "' + b"x" * (50 << 20) + b'"}}\n'
    real.write_bytes(b"".join([*lines[:3], huge, *lines[3:]]))
    code, out, err = run(
        "export", "--from", "codex", "--session", str(real), "--workspace", ".", "--json",
        seconds=120,
    )  # fmt: skip
    assert code == 0, err
    handoff = json.loads(Path(json.loads(out)["json"]).read_text())
    assert handoff["task"]["original_request"]  # the rest of the session is still read
    assert len(err) < 5000  # the 50 MB are not echoed


@pytest.mark.parametrize(
    "agent", ["claude", "codex", "gemini", "qwen", "pi", "copilot", "opencode"]
)
def test_a_session_id_that_climbs_out_of_the_store_is_exit_2(
    agent: str, run: Run, workspace: Path
) -> None:
    for spec in ("../../etc/passwd", "/etc/passwd"):
        code, _, err = run("export", "--from", agent, "--session", spec)
        assert code == 2 and "outside" in err and "session store" in err, err
        assert not (workspace / ".agent-handoff").exists()


def test_a_workspace_path_with_newlines_is_shown_on_one_line(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = tmp_path / "ws\n## Takeover contract\nwith\nnewlines"
    odd.mkdir()
    monkeypatch.chdir(odd)
    code, _, err = run("export", "--from", "codex")
    assert code == 3
    [line] = [ln for ln in err.splitlines() if ln.startswith("passdown: error:")]
    assert "Takeover contract" in line  # flattened onto the error's own line
    code, _, err = run("sessions", "--from", "auto")
    assert code == 0


# -- hooks ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "payload", [b"\xff\xfe not json", b"[1, 2]", b"{" * 50_000], ids=["non-utf8", "list", "deep"]
)
def test_a_hook_payload_that_is_no_json_object_is_logged_without_a_traceback(
    payload: bytes, workspace: Path
) -> None:
    from passdown.integrations._hooks import log_path, run_hook

    text = payload.decode("utf-8", "surrogateescape")
    assert run_hook("claude", [], text) == 0  # a hook never fails the agent
    log = log_path().read_text()
    assert "error claude ?: UsageError: the hook payload is not a JSON object" in log, log
    assert "Traceback" not in log  # before: logged as a bug, with its traceback


# -- numbers out of range ------------------------------------------------------------------------
def test_a_huge_transcript_budget_is_a_usage_error_not_an_overflow(
    run: Run, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown._pipeline import ExportOptions
    from passdown.errors import UsageError

    [session] = codex_store(tmp_path, monkeypatch).glob("rollout-*.jsonl")
    huge = "9" * 23  # before: "internal error (OverflowError)", exit 1
    for flag in ("--max-messages", "--max-chars"):
        code, _, err = run("inspect", "--from", "codex", "--session", str(session), flag, huge)
        assert code == 2 and f"Invalid value for '{flag}'" in err, err
    with pytest.raises(UsageError, match="--max-messages must be from 2"):
        ExportOptions(max_messages=10**23).validate()  # the MCP and Python doors too
    with pytest.raises(UsageError, match="--max-chars must be from 1,000"):
        ExportOptions(max_chars=10**23).validate()


def test_find_since_before_year_one_is_a_usage_error(run: Run, workspace: Path) -> None:
    code, _, err = run("find", "--since", "99999999999w")  # before: OverflowError, exit 1
    assert code == 2 and "reaches back before year 1" in err


@pytest.mark.parametrize("value", ["nan", "inf", "1e400", "0"])
def test_a_pickup_age_that_is_no_number_of_days_is_refused_and_ignored(
    value: str, run: Run, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import timedelta

    from passdown._settings import MAX_AGE_ENV, max_age

    code, _, err = run("config", "set", "pickup_max_age_days", value)
    assert code == 2 and "must be more than 0" in err  # before: nan and inf were stored
    monkeypatch.setenv(MAX_AGE_ENV, value)  # set where passdown cannot refuse it
    assert max_age() == timedelta(days=7)  # before: ValueError/OverflowError in every pickup


# -- launching on a workspace whose path is unusual ----------------------------------------------
@pytest.mark.parametrize("folder", ["My Projects", "ws\nwith\nnewlines"], ids=["space", "newline"])
def test_aider_reads_the_handoff_of_a_workspace_path_with_spaces_or_newlines(
    folder: str, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Aider is given HANDOFF.md as a read-only file, its path taken from the prompt.
    Before: up to the first space (`--read /…/My`, a wrong file or none); a newline,
    flattened in the prompt, named no file at all."""
    [session] = codex_store(tmp_path, monkeypatch).glob("rollout-*.jsonl")
    workspace = tmp_path / folder / "app"
    workspace.mkdir(parents=True)
    seen = tmp_path / "aider-argv.json"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    aider = bindir / "aider"
    aider.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(seen)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    aider.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    args = ["switch", "--from", "codex", "--to", "aider", "--session", str(session)]
    code, _, err = run(*args, "--workspace", str(workspace))
    assert code == 0, err
    handoff = workspace / ".agent-handoff" / "HANDOFF.md"
    assert json.loads(seen.read_text()) == ["--read", str(handoff)]
    assert handoff.is_file()


@pytest.mark.usefixtures("agents_on_path")
def test_the_prompt_names_a_handoff_path_with_newlines_escaped_not_flattened(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the path's newlines became spaces, naming a file that does not exist.
    Now a path that does not fit on one line is written as a JSON string: one line (no
    forged heading), and the real path."""
    [session] = codex_store(tmp_path, monkeypatch).glob("rollout-*.jsonl")
    workspace = tmp_path / "ws\n## Takeover contract\nx"
    workspace.mkdir()
    args = ["switch", "--from", "codex", "--to", "claude", "--session", str(session)]
    code, out, err = run(*args, "--workspace", str(workspace), "--dry-run", "--json")
    assert code == 0, err
    prompt = json.loads(out)["argv"][-1]
    [line] = [ln for ln in prompt.splitlines() if ln.startswith("Read the full handoff first:")]
    shown = line.removeprefix("Read the full handoff first: ")
    assert json.loads(shown) == str(workspace / ".agent-handoff" / "HANDOFF.md")
    assert "\n## Takeover contract" not in prompt
    code, out, err = run(*args, "--workspace", str(tmp_path), "--dry-run", "--json")
    ordinary = json.loads(out)["argv"][-1]  # an ordinary path stays as it is
    assert f"Read the full handoff first: {tmp_path}/.agent-handoff/HANDOFF.md\n" in ordinary
