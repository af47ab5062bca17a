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
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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
    failed_out: bytes = b""  # what a failed command printed (`git push --porcelain` says why)


# Within `one_view`: the answers to read-only questions, by folder and argv, and the
# folders git said are in no repository.
_VIEW: ContextVar[_View | None] = ContextVar("passdown_git_view", default=None)
_READ_ONLY = frozenset({"rev-parse", "status", "log", "symbolic-ref"})
_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp"})
REMOTE_URLS = ("config", "--get-regexp", r"^remote\..*\.url$")
EXCLUDE_FILE = ("rev-parse", "--git-path", "info/exclude")


def _is_read_only(args: tuple[str, ...]) -> bool:
    if args[0] == "config":
        return len(args) > 1 and args[1] in _CONFIG_READS
    return args[0] in _READ_ONLY


_Key = tuple[str, tuple[str, ...]]  # (folder, argv after the options)
_Started = subprocess.Popen[bytes] | GitResult  # a running git, or why it did not start


@dataclass(slots=True)
class _View:
    answers: dict[_Key, GitResult]
    outside: dict[str, str]  # folder -> git's reason
    running: dict[_Key, _Started]  # asked ahead (`ask_ahead`), not collected yet

    def forget(self) -> None:
        self.answers.clear()
        self.outside.clear()
        for started in self.running.values():  # read-only questions: safe to stop
            if not isinstance(started, GitResult):
                started.kill()
                started.communicate()
        self.running.clear()


@contextmanager
def one_view() -> Iterator[None]:
    """One look at each workspace's git state for the span of an export: a read-only
    question (`status`, `log`, `rev-parse`, `symbolic-ref`) asked again about the same
    folder gets the first answer, and after git said a folder is in no repository, it is
    not asked about that folder again. Any other git command forgets what was seen. A
    thread started inside does not share the view."""
    if _VIEW.get() is not None:
        yield
        return
    view = _View({}, {}, {})
    token = _VIEW.set(view)
    try:
        yield
    finally:
        _VIEW.reset(token)
        view.forget()  # questions asked ahead and never asked: stopped


def ask_ahead(path: Path, *questions: tuple[str, ...]) -> None:
    """Start git on read-only questions about `path` that will be asked soon, without
    waiting: they run while the caller does other work (reading the session), and
    `run_git` takes each answer when the question comes. Only within `one_view`; else
    nothing happens and each question runs when it is asked."""
    view = _VIEW.get()
    folder = str(path)
    if view is None or folder in view.outside:
        return
    for args in questions:
        key = (folder, args)
        if _is_read_only(args) and key not in view.answers and key not in view.running:
            view.running[key] = start(path, args)


def answered(path: Path, *args: str) -> GitResult | None:
    """The answer `one_view` holds to the question `args` about `path`, if it was asked;
    nothing is run."""
    view = _VIEW.get()
    return None if view is None else view.answers.get((str(path), args))


def asked_ahead(path: Path, args: tuple[str, ...]) -> bool:
    """Whether `run_git` answers `args` about `path` from `one_view` (answered before,
    or running since `ask_ahead`)."""
    view = _VIEW.get()
    key = (str(path), args)
    return view is not None and (key in view.answers or key in view.running)


def is_not_repo(result: GitResult) -> bool:
    """Whether git said the folder is in no repository. Only the plain case: "not a git
    repository: /x" means a `.git` file that points nowhere."""
    return "not a git repository (or any" in result.error


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


def run_git(
    path: Path,
    *args: str,
    timeout: float = GIT_TIMEOUT,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
) -> GitResult:
    """Run one git command in `path`; never raises. `input`: its stdin (else none);
    `env`: variables set on top of `git_env()`. Inside `one_view`, a read-only question
    asked before is answered from then."""
    view = _VIEW.get()
    if view is None:
        return _run(path, args, timeout, input, env)
    if input is not None or env is not None or not _is_read_only(args):
        view.forget()
        return _run(path, args, timeout, input, env)
    folder = str(path)
    outside = view.outside.get(folder)
    if outside is not None:
        return GitResult(False, error=f"git {args[0]}: {outside}")
    key = (folder, args)
    result = view.answers.get(key)
    if result is None:
        started = view.running.pop(key, None)
        if started is None:
            result = _run(path, args, timeout, input, env)
        else:
            result = collect(args[0], started, timeout)
        view.answers[key] = result
        if is_not_repo(result):
            view.outside[folder] = result.error.partition(": ")[2]
    return result


def _run(
    path: Path,
    args: tuple[str, ...],
    timeout: float,
    input: bytes | None,
    env: dict[str, str] | None,
) -> GitResult:
    try:
        proc = subprocess.run(
            _git_argv(path, args),
            stdin=subprocess.DEVNULL if input is None else None,
            input=input,
            capture_output=True,
            env={**git_env(), **(env or {})},
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


def start(path: Path, args: tuple[str, ...]) -> _Started:
    """git started on `args` in `path`, its output piped (`collect` waits for it)."""
    try:
        return subprocess.Popen(
            _git_argv(path, args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=git_env(),
        )
    except FileNotFoundError:
        return GitResult(False, error="git is not installed", missing=True)
    except OSError as exc:
        return GitResult(False, error=f"cannot run git: {exc.strerror or exc}")


def collect(name: str, started: _Started, timeout: float = GIT_TIMEOUT) -> GitResult:
    """The answer of a git `start`ed on the command `name`; never raises."""
    if isinstance(started, GitResult):
        return started
    try:
        out, err = started.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        started.kill()
        started.communicate()
        return GitResult(False, error=f"git {name} timed out after {timeout:g} s")
    return _result(name, started.returncode, out, err)


def _result(name: str, returncode: int, out: bytes, err: bytes) -> GitResult:
    if returncode == 0:
        return GitResult(True, out=out)
    lines = [ln.strip() for ln in _text(err).splitlines() if ln.strip()]
    # "fatal:"/"error:" lines say why; hints and warnings come first and say less
    reason = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), None)
    reason = reason or (lines[0] if lines else f"exit status {returncode}")
    return GitResult(False, error=f"git {name}: {reason[:300]}", failed_out=out)


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
    """The project scope a folder belongs to when none is given: `<name>~<12 hex>`.

    The hex digits identify the repository, so two unrelated folders that happen to
    share a name (`app`, `api`, `ws-codex`) never share handoffs:
    - a repository that names its project in a committed `.passdown.toml` at its root
      (`project = "NAME"`, `scope_setting`) is identified by that name: every clone,
      a fork's too, shares the scope;
    - else a git repository with a remote is identified by the remote (`upstream`,
      else `origin`, else the first by name), normalised (no credentials, scheme, port
      or `.git`): a clone of the same remote elsewhere, a fork whose `upstream` is
      the original, or the folder moved, keeps the same scope;
    - a git repository without a remote, or a folder outside git, by its resolved
      root path (case-folded where the file system ignores case): moved, it is a new
      project.
    `<name>` is for people (`project_label`): the remote's repository name, else the
    root folder's name. The whole scope is redacted: a folder named after a token
    (`ws-ghp_...`) must not put the token in every record's scope; the same folder
    always gives the same scope.
    """
    import hashlib

    from passdown._redact import redact

    root, is_git = _project_root(cwd)
    named = _named_project(root) if is_git else None
    remote = _remote_url(root) if is_git and named is None else None
    if named is not None:
        key, name = "name:" + named, named
    elif remote:
        key = "git:" + _remote_key(remote, root)
        name = key.rstrip("/").rpartition("/")[2] or root.name
    else:
        key = "path:" + _path_key(root)
        name = root.name or str(root)
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return redact(f"{name}~{digest}")


def project_label(project: str) -> str:
    """The readable part of a project scope: `alpha` of `alpha~3f9c2a1b7d0e`; any other
    project (given with --project, or stored before) as it is."""
    name, at, digest = project.rpartition("~")
    if at and name and len(digest) == 12 and all(c in "0123456789abcdef" for c in digest):
        return name
    return project


def _project_root(cwd: Path) -> tuple[Path, bool]:
    """(the folder holding `.git` at or above `cwd`, True), else (cwd, False); resolved."""
    here = _absolute(cwd)
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder, True
    return here, False


SCOPE_FILE = ".passdown.toml"  # committed at the repository's root: `project = "NAME"`
_SCOPE_NAME_MAX = 100


def scope_setting(root: Path) -> str | None:
    """The project name `root`'s committed `.passdown.toml` gives (None: no file, or no
    `project` in it); ValueError naming the problem when the file cannot be used."""
    try:
        text = (root / SCOPE_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{root / SCOPE_FILE}: {exc}") from None
    import tomllib  # only for a repository that has the file

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{root / SCOPE_FILE}: {exc}") from None
    value = data.get("project")
    if value is None:
        return None
    if not valid_scope_name(value):
        raise ValueError(
            f"{root / SCOPE_FILE}: project must be a name of 1 to {_SCOPE_NAME_MAX} "
            "characters without ~, / or control characters"
        )
    assert isinstance(value, str)
    return value.strip()


def valid_scope_name(value: object) -> bool:
    if not isinstance(value, str) or not value.strip() or len(value) > _SCOPE_NAME_MAX:
        return False
    return not any(c in "~/\\" or ord(c) < 32 or ord(c) == 127 for c in value)


def _named_project(root: Path) -> str | None:
    """`scope_setting`, with an unusable file read as no setting (`passdown push` and
    `pull` check it first and say what is wrong with it)."""
    try:
        return scope_setting(root)
    except ValueError:
        return None


def _remote_url(root: Path) -> str | None:
    result = run_git(root, *REMOTE_URLS)
    urls: dict[str, str] = {}
    for line in _text(result.out).splitlines() if result.ok else ():
        key, _, url = line.partition(" ")
        if url.strip():
            urls.setdefault(key.removeprefix("remote.").removesuffix(".url"), url.strip())
    if not urls:
        return None
    return urls.get("upstream") or urls.get("origin") or urls[min(urls)]


def _remote_key(url: str, root: Path) -> str:
    """`host/owner/repo` for a network remote, whichever way it is spelled
    (https://user:token@Host:443/o/r.git, ssh://git@host/o/r, git@host:o/r.git);
    `file:` + the resolved path for a remote on this machine."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() != "file":
        authority, _, path = rest.partition("/")
    elif not sep and _scp_like(url):
        authority, _, path = url.partition(":")
    else:
        local = Path(rest if sep else url)
        return "file:" + _path_key(_absolute(root / local))
    host = authority.rpartition("@")[2]  # credentials are never part of the identity
    host = host if host.startswith("[") else host.partition(":")[0]  # no port
    path = path.strip("/").removesuffix(".git").strip("/")
    return f"{host.lower()}/{path}"


def _scp_like(url: str) -> bool:
    """`[user@]host:path`, git's short ssh form (not `C:\\...`, not a local path)."""
    head, colon, _ = url.partition(":")
    return bool(colon) and len(head) > 1 and "/" not in head and "\\" not in head


def _path_key(path: Path) -> str:
    text = os.path.normcase(str(path))
    return text.casefold() if _case_insensitive(path) else text


def _case_insensitive(path: Path) -> bool:
    """Whether the file system holding `path` ignores case (macOS and Windows by
    default): the nearest folder name with letters, case swapped, is the same folder."""
    for folder in (path, *path.parents):
        swapped = folder.name.swapcase()
        if swapped != folder.name:
            other = folder.with_name(swapped)
            try:
                return other.exists() and os.path.samefile(folder, other)
            except OSError:
                return False
    return False


def _absolute(path: Path) -> Path:
    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError):  # a symlink loop, or no home folder for "~"
        return Path(os.path.abspath(path))
