"""`passdown demo`: the main job, on a fresh machine, in a scratch folder.

passdown ships one real Claude Code session (`examples/claude-session.jsonl`: recorded
from Claude Code 2.1.197 against a scripted model, its workspace renamed to a made-up
`/home/dev/greeter`). The demo lays it out in a scratch folder as Claude Code would
(a config folder with `projects/<workspace>/<id>.jsonl`, and the workspace), then hands
it off through the one export path every door takes: HANDOFF.md and handoff.json in the
scratch workspace, and the record in a scratch store. Nothing of the user's is read or
written: the agents' folders, the data folder and the store all live in the scratch
folder for the length of the export. A scratch folder in the temporary directory is
removed once HANDOFF.md is read back (the command prints it), unless `--keep` (which
also stores the record in the user's own store); one named with `--out` stays.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from passdown.errors import UsageError

EXAMPLE = Path(__file__).resolve().parent / "examples" / "claude-session.jsonl"
EXAMPLE_WORKSPACE = "/home/dev/greeter"  # the made-up folder the example session ran in
EXAMPLE_SESSION = "5e551011-0000-4000-8000-00000000c1a1"
_ISOLATED = ("CLAUDE_CONFIG_DIR", "PASSDOWN_DATA_DIR", "PASSDOWN_STORE", "PASSDOWN_AGENTS")


@dataclass(frozen=True, slots=True)
class DemoResult:
    folder: Path  # the scratch folder: everything the demo made is in it (or was: `kept`)
    workspace: Path
    session_file: Path
    markdown: Path
    json_path: Path
    record_id: str | None
    store: str  # where the record is: the scratch store, or the user's (`keep`)
    goal: str
    next_step: str | None
    markdown_text: str = ""  # HANDOFF.md as written
    kept: bool = True  # False: the scratch folder was removed after the handoff was read
    warning: str | None = None  # why a scratch folder meant to go is still there


def run_demo(out: Path | None = None, *, keep: bool = False) -> DemoResult:
    """Hand the example session off inside `out` (a new private temp folder when None;
    else a folder that does not exist yet or is empty). `keep`: the record goes into the
    user's own store (where `passdown find` and the web view look), not a scratch one,
    and the scratch folder stays. A temp folder without `keep` is removed once
    HANDOFF.md is read (`markdown_text`), also when the handoff fails."""
    import shutil

    folder = _scratch(out)
    remove = out is None and not keep
    try:
        result = _hand_off(folder, keep)
    except BaseException:
        if remove:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    if not remove:
        return result
    try:
        shutil.rmtree(folder)
    except OSError as exc:  # said, never silent: the files are still there to read
        return replace(result, warning=f"could not remove {folder}: {exc.strerror or exc}")
    return replace(result, kept=False)


def _hand_off(folder: Path, keep: bool) -> DemoResult:
    from passdown.coordinator import _doors as doors
    from passdown.store._open import default_store_url

    store = default_store_url() if keep else None  # resolved before the scratch settings
    workspace = folder / "greeter"
    workspace.mkdir(mode=0o700)
    claude_home = folder / "claude"
    session_file = _lay_out_session(claude_home, workspace)
    isolated = {
        "CLAUDE_CONFIG_DIR": str(claude_home),
        "PASSDOWN_DATA_DIR": str(folder / "data"),
        "PASSDOWN_STORE": None,  # the scratch data folder's own SQLite store
        "PASSDOWN_AGENTS": "claude",
    }
    with _environment(isolated):
        request = doors.HandoffRequest(
            source="claude", session=str(session_file), workspace=workspace
        )
        written = doors.export(request, workspace, store=store)
    handoff = written.handoff
    return DemoResult(
        folder=folder,
        workspace=workspace,
        session_file=session_file,
        markdown=Path(written.markdown_path),
        json_path=Path(written.json_path),
        record_id=written.record_id,
        store=store or str(folder / "data" / "store.db"),
        goal=handoff.task.original_request or "",
        next_step=handoff.state.next_steps[0] if handoff.state.next_steps else None,
        markdown_text=Path(written.markdown_path).read_text(encoding="utf-8"),
    )


def _scratch(out: Path | None) -> Path:
    if out is None:
        return Path(tempfile.mkdtemp(prefix="passdown-demo-")).resolve()  # 0700
    out = out.expanduser().absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(
            f"{out} is not an empty folder", hint="name a new folder, or leave --out out"
        )
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    return out.resolve()


def _lay_out_session(claude_home: Path, workspace: Path) -> Path:
    """The example session where Claude Code keeps sessions of `workspace`, its
    made-up folder replaced by `workspace` (JSON-escaped, as it sits in the records)."""
    from passdown._fsio import ensure_private_dir, write_private

    text = EXAMPLE.read_text(encoding="utf-8")
    escaped = json.dumps(str(workspace))[1:-1]
    text = text.replace(json.dumps(EXAMPLE_WORKSPACE)[1:-1], escaped)
    project = re.sub(r"[^A-Za-z0-9]", "-", str(workspace))  # Claude Code's folder name
    folder = ensure_private_dir(claude_home / "projects" / project)
    path = folder / f"{EXAMPLE_SESSION}.jsonl"
    write_private(path, text)
    return path


@contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    """`values` in the environment (None: unset), restored afterwards."""
    saved = {name: os.environ.get(name) for name in _ISOLATED}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
