"""Running git, and which workspace and project a folder belongs to.

Light on purpose (no pydantic, nothing but the standard library and the redactor): the
session-start hook (`integrations.continuity.pickup`) runs on it while a new session
waits. `passdown._workspace` builds the handoff's git snapshot on top of it.

Every git call is an argv list run with `-C path`, a timeout, `LC_ALL=C` (parseable,
English messages), `GIT_OPTIONAL_LOCKS=0` (never take the index lock the agent or the
user may need) and no pager or prompt.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT = 10.0  # seconds per git call: a snapshot must never hang an export
# Variables that point git at another repo or index; passdown always means `-C path`
# (they are set, for example, when passdown runs from inside a git hook).
_REPO_ENV_VARS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_IMPLICIT_WORK_TREE",
    }
)
# core.fsmonitor would run a program named by the repo's config; a snapshot never needs it.
# --literal-pathspecs: a file named "*.py" or ":(glob)x" is just that file.
_GIT_OPTIONS = (
    "-c", "core.fsmonitor=false", "-c", "core.quotepath=false", "--no-pager",
    "--literal-pathspecs",
)  # fmt: skip


@dataclass(slots=True)
class GitResult:
    ok: bool
    out: bytes = b""
    error: str = ""  # a one-line reason when not ok
    missing: bool = False  # git itself is not installed


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV_VARS}
    env.update(
        LC_ALL="C",
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        PAGER="cat",
    )
    return env


def _git_argv(path: Path, args: tuple[str, ...] | list[str]) -> list[str]:
    return ["git", "-C", str(path), *_GIT_OPTIONS, *args]


def run_git(path: Path, *args: str, timeout: float = GIT_TIMEOUT) -> GitResult:
    """Run one git command in `path`; never raises."""
    try:
        proc = subprocess.run(
            _git_argv(path, args),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=git_env(),
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        return GitResult(False, error="git is not installed", missing=True)
    except subprocess.TimeoutExpired:
        return GitResult(False, error=f"git {args[0]} timed out after {timeout:g} s")
    except OSError as exc:
        return GitResult(False, error=f"cannot run git: {exc.strerror or exc}")
    return _result(args[0], proc.returncode, proc.stdout, proc.stderr)


def _result(name: str, returncode: int, out: bytes, err: bytes) -> GitResult:
    if returncode == 0:
        return GitResult(True, out=out)
    lines = [ln.strip() for ln in _text(err).splitlines() if ln.strip()]
    # "fatal:"/"error:" lines say why; hints and warnings come first and say less
    reason = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), None)
    reason = reason or (lines[0] if lines else f"exit status {returncode}")
    return GitResult(False, error=f"git {name}: {reason[:300]}")


def _text(raw: bytes) -> str:
    # paths need not be UTF-8; a replacement character beats a failed handoff
    return raw.decode("utf-8", "replace")


# -- the workspace and its project ------------------------------------------------------


def workspace_root(cwd: Path) -> Path:
    """The git top-level folder of `cwd`, or `cwd` itself outside git (absolute, resolved)."""
    here = _absolute(cwd)
    result = run_git(here, "rev-parse", "--show-toplevel")
    top = _text(result.out).strip()
    if result.ok and top:
        return Path(top).resolve()
    return here


def is_ancestor(path: Path, commit: str, head: str = "HEAD") -> bool:
    return run_git(path, "merge-base", "--is-ancestor", commit, head).ok


def project_name(cwd: Path) -> str:
    """The project a folder belongs to when none is given: the git root's folder name,
    else the folder's own name."""
    from passdown._redact import redact

    # redacted: a folder named after a token (`ws-ghp_...`) must not put the token in
    # every record's scope; the same folder always gives the same (redacted) name
    here = cwd.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return redact(folder.name or str(folder))
    return redact(here.name or str(here))


def _absolute(path: Path) -> Path:
    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError):  # a symlink loop, or no home folder for "~"
        return Path(os.path.abspath(path))
