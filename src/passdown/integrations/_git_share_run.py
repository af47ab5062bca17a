"""Automatic sharing at run time, in a repository that opted in (`passdown install git`).

- `hook_main` is `passdown hook git ...`, which the installed pre-push hook runs (and
  what it starts in the background). `pre-push` returns at once: it only starts a
  detached `passdown hook git push-now` (`_platform.spawn_detached`: no shell, no
  terminal, none of git's pipes), so the user's push waits for a Python start and two
  local git reads (0.35-0.45 s measured), never for the network; its exit code is 0.
- `push-now` takes the repository's share lock (two pushes never race), runs
  `share.push_handoffs` and records the outcome in the repository's state file
  (`<git common dir>/passdown-share.json`): a failure leaves the queue marked pending
  (since when, the last error), which the next push, started by the next `git push` or
  claim, sends; `passdown doctor` shows it (`share_status`).
- `push_claim_soon` starts the same background push after a session start's claim.
- `pull_at_start` runs before a session start's pickup: bounded by PULL_BUDGET_S, and
  after a failed pull (offline, a remote that hangs) skipped for OFFLINE_FOR_S, so an
  unreachable remote costs one start the budget, not every start.

Everything here is light (standard library, `passdown._git`, `passdown._platform`):
the pre-push hook and a session start wait for it. Nothing raises: a step that did not
happen is written to the state file (and the hook's own log) instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CONFIG_KEY = "passdown.share"  # `git config --local passdown.share true`: opted in
STATE_NAME = "passdown-share.json"
LOCK_NAME = "passdown-share.lock"
LOG_NAME = "passdown-share.log"
LOG_MAX_BYTES = 256 * 1024
BACKGROUND_ENV = "PASSDOWN_SHARE_BACKGROUND"  # set in passdown's own background push
REF_PREFIX = "refs/passdown/"
PULL_BUDGET_S = 2.0  # what a session start may spend pulling, all in
MIN_PULL_S = 0.2  # less left than this after loading: no pull (it could not finish)
OFFLINE_FOR_S = 600.0  # after a failed pull, starts skip the pull this long
PUSH_TIMEOUT_S = 60.0  # the background push's own bound
GIT_CONFIG_TIMEOUT_S = 2.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# -- the repository: opted in?, its git dir ------------------------------------------------


def opted_in(workspace: Path) -> bool:
    """Whether this repository opted in to automatic sharing (`passdown install git`
    set `passdown.share` in its own `.git/config`; never the user's or a committed one)."""
    from passdown._git import run_git

    result = run_git(
        workspace,
        "config",
        "--local",
        "--bool",
        "--get",
        CONFIG_KEY,
        timeout=GIT_CONFIG_TIMEOUT_S,
    )
    return result.ok and result.out.strip() == b"true"


def git_common_dir(workspace: Path) -> Path | None:
    """The repository's git dir shared by its worktrees (None: not a repository)."""
    from passdown._git import run_git

    result = run_git(
        workspace,
        "rev-parse",
        "--path-format=absolute",
        "--git-common-dir",
        timeout=GIT_CONFIG_TIMEOUT_S,
    )
    if not result.ok:
        return None
    text = result.out.decode("utf-8", "replace").strip()
    return Path(text) if text else None


# -- the state file: the queue, the last error, the negative cache of pulls -------------------


def load_state(git_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((git_dir / STATE_NAME).read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def save_state(git_dir: Path, state: dict[str, Any]) -> None:
    from passdown._fsio import write_atomic

    data = json.dumps(state, indent=2, sort_keys=True).encode() + b"\n"
    write_atomic(git_dir / STATE_NAME, data)


@contextlib.contextmanager
def share_lock(git_dir: Path) -> Iterator[None]:
    """One share push (or pull) of a repository at a time, across processes."""
    from passdown import _platform

    fd = os.open(git_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | _platform.O_BINARY, 0o600)
    try:
        with _platform.exclusive_lock(fd):
            yield
    finally:
        os.close(fd)


def _update_state(git_dir: Path, **changes: Any) -> dict[str, Any]:
    state = load_state(git_dir)
    for key, value in changes.items():
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    save_state(git_dir, state)
    return state


def _mark_pending(git_dir: Path, error: str | None) -> None:
    state = load_state(git_dir)
    state.setdefault("pending_since", _now())
    if error is not None:
        state["last_error"] = error
        state["last_error_at"] = _now()
    save_state(git_dir, state)


# -- the hook ------------------------------------------------------------------------------


def hook_main(args: list[str]) -> int:
    """`passdown hook git pre-push REMOTE URL` (ref lines on stdin) and `passdown hook
    git push-now`: always 0 for the pre-push (it never fails the user's push)."""
    what = args[0] if args else ""
    workspace = Path.cwd()
    if what == "pre-push":
        stdin_text = sys.stdin.read() if not sys.stdin.isatty() else ""
        pre_push(workspace, stdin_text)
        return 0
    if what == "push-now":
        return push_now(workspace)
    print(f"passdown hook git: unknown step {what!r} (pre-push, push-now)", file=sys.stderr)
    return 2


def pre_push(workspace: Path, stdin_text: str) -> str:
    """What the pre-push hook did: `own-push` (passdown's own refs, or its background
    push: nothing to add), `not-opted-in`, `started`, or `failed: ...` (queued)."""
    if os.environ.get(BACKGROUND_ENV):
        return "own-push"
    remote_refs = [line.split()[2] for line in stdin_text.splitlines() if len(line.split()) == 4]
    if remote_refs and all(ref.startswith(REF_PREFIX) for ref in remote_refs):
        return "own-push"
    if not opted_in(workspace):
        return "not-opted-in"
    return start_background_push(workspace)


def push_claim_soon(workspace: Path) -> str:
    """After a session start's claim in an opted-in repository: send it now, in the
    background (another clone that pulls then sees the handoff taken)."""
    return start_background_push(workspace)


def start_background_push(workspace: Path) -> str:
    """Start `passdown hook git push-now` detached; `started`, or why not (queued)."""
    from passdown import _platform
    from passdown._git import git_env

    git_dir = git_common_dir(workspace)
    if git_dir is None:
        return "failed: not a git repository"
    env = git_env()  # without GIT_DIR and the like, which git sets for its hooks
    env[BACKGROUND_ENV] = "1"
    log = git_dir / LOG_NAME
    _trim(log)
    argv = [sys.executable, "-m", "passdown", "hook", "git", "push-now"]
    try:
        _platform.spawn_detached(argv, cwd=str(workspace), env=env, log=str(log))
    except (OSError, _platform.UnsafeLaunch) as exc:
        error = f"cannot start the background push: {exc}"
        with contextlib.suppress(OSError):
            _mark_pending(git_dir, error)
        return f"failed: {error}"
    return "started"


def _trim(log: Path) -> None:
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_MAX_BYTES:
            log.unlink()


def push_now(workspace: Path) -> int:
    """The background push: under the share lock, push passdown's refs to the share
    remote; on failure the queue stays pending (0: pushed, 1: not)."""
    git_dir = git_common_dir(workspace)
    if git_dir is None:
        print("passdown: not a git repository", file=sys.stderr)
        return 1
    with share_lock(git_dir):
        _mark_pending(git_dir, None)  # a push killed half way still shows as pending
        error = _push(workspace)
        if error is None:
            _update_state(
                git_dir, pending_since=None, last_error=None, last_error_at=None, last_push=_now()
            )
            print(f"{_now()} pushed", file=sys.stderr)
            return 0
        _mark_pending(git_dir, error)
        print(f"{_now()} not pushed: {error}", file=sys.stderr)
        return 1


def _push(workspace: Path) -> str | None:
    """None when `share.push_handoffs` pushed; else why not, in one line."""
    try:
        from passdown.share import push_handoffs

        result = push_handoffs(workspace, timeout=PUSH_TIMEOUT_S)
    except Exception as exc:  # whatever it was, the queue must say it
        return _one_line(getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")
    return _result_error(result)


def _result_error(result: Any) -> str | None:
    """Why a push result says it failed (`share.PushReport`: handoffs the remote
    `refused`), or None."""
    if result is None:
        return None
    data = result.to_json() if hasattr(result, "to_json") else result
    if isinstance(data, dict):
        if data.get("ok") is False:
            return _one_line(str(data.get("error") or data.get("errors") or "push failed"))
        for key in ("errors", "rejected", "refused"):
            if data.get(key):
                return _one_line(f"{key}: {data[key]}")
    elif getattr(result, "ok", True) is False:
        return _one_line(str(getattr(result, "error", "push failed")))
    return None


def _one_line(text: str) -> str:
    from passdown._redact import redact

    return " ".join(redact(text).split())[:300]


# -- the pull at a session's start ----------------------------------------------------------


def pull_at_start(workspace: Path) -> str:
    """Pull the share remote's handoffs before pickup, in an opted-in repository only;
    what happened: `not-opted-in`, `pulled`, `skipped-offline`, `failed: ...`."""
    started = time.monotonic()
    if not opted_in(workspace):
        return "not-opted-in"
    git_dir = git_common_dir(workspace)
    if git_dir is None:
        return "not-opted-in"
    state = load_state(git_dir)
    offline_until = state.get("offline_until")
    if isinstance(offline_until, (int, float)) and time.time() < offline_until:
        return "skipped-offline"
    error = _pull(workspace, started + PULL_BUDGET_S)
    try:
        if error is None:
            if "offline_until" in state or "last_pull_error" in state:
                _update_state(git_dir, offline_until=None, last_pull_error=None, last_pull=_now())
            return "pulled"
        _update_state(git_dir, offline_until=time.time() + OFFLINE_FOR_S, last_pull_error=error)
    except OSError as exc:
        error = f"{error}; cannot record it: {exc}"
    return f"failed: {error}"


def _pull(workspace: Path, deadline: float) -> str | None:
    """None when the pull ran; why not otherwise. It gets what is left of the budget
    once its modules are loaded (`deadline`, on the monotonic clock)."""
    try:
        from passdown.share import pull_handoffs

        left = deadline - time.monotonic()
        if left < MIN_PULL_S:
            return f"no time left for the pull ({PULL_BUDGET_S:g} s)"
        pull_handoffs(workspace, timeout=left)
    except Exception as exc:  # a pull that did not happen; records it refused are no error
        return _one_line(getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")
    return None


# -- what doctor says ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareStatus:
    workspace: Path
    hook_problem: str | None  # why the pre-push hook would not share (None: it would)
    pending_since: str | None = None
    last_error: str | None = None
    last_push: str | None = None
    pull_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.hook_problem is None and self.pending_since is None

    def line(self) -> str:
        if self.hook_problem is not None:
            return f"{self.workspace}: {self.hook_problem} (run `passdown install git` there)"
        if self.pending_since is not None:
            why = f", last error: {self.last_error}" if self.last_error else ""
            return f"{self.workspace}: handoffs pending since {self.pending_since}{why}"
        pushed = f"last pushed {self.last_push}" if self.last_push else "nothing pushed yet"
        pull = f"; last pull failed: {self.pull_error}" if self.pull_error else ""
        return f"{self.workspace}: shared on push, {pushed}{pull}"

    def to_json(self) -> dict[str, Any]:
        return {
            "workspace": str(self.workspace),
            "hook": self.hook_problem is None,
            "hook_problem": self.hook_problem,
            "ok": self.ok,
            "pending_since": self.pending_since,
            "last_error": self.last_error,
            "last_push": self.last_push,
            "last_pull_error": self.pull_error,
        }


def share_status(workspace: Path, hook_problem: str | None) -> ShareStatus | None:
    """The repository's sharing as its state file tells it (None: not opted in)."""
    if not opted_in(workspace):
        return None
    git_dir = git_common_dir(workspace)
    state = load_state(git_dir) if git_dir else {}

    def text(key: str) -> str | None:
        value = state.get(key)
        return str(value) if value else None

    return ShareStatus(
        workspace,
        hook_problem,
        pending_since=text("pending_since"),
        last_error=text("last_error"),
        last_push=text("last_push"),
        pull_error=text("last_pull_error"),
    )
