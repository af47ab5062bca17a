"""Issue 22: every OS-specific call goes through `passdown._platform`."""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path

import pytest

from passdown import _platform, _platform_launch, _platform_os, _platform_paths

SRC = Path(__file__).resolve().parents[1] / "src" / "passdown"
SEAM = SRC / "_platform.py"

# names that exist on one system only, or mean a POSIX-only call
POSIX_ONLY = [
    r"\bimport fcntl\b",
    r"\bfcntl\.",
    r"\bimport resource\b",
    r"\bresource\.getrusage",
    r"\bimport msvcrt\b",
    r"\bimport pwd\b",
    r"\bpwd\.",
    r"\bos\.fchmod\b",
    r"\bos\.pread\b",
    r"(?<!_platform\.)\bO_NONBLOCK\b",
    r"(?<!_platform\.)\bO_DIRECTORY\b",
    r"(?<!_platform\.)\bO_NOCTTY\b",
    r"\bos\.fork\b",
    r"\bprctl\b",
    r"\bselect\.select\b",
    r"\bos\.getuid\b",
    r"\bos\.geteuid\b",
    r"\bos\.getppid\b",
    r"\bos\.setsid\b",
    r"\bos\.killpg\b",
    r"\bos\.waitpid\b",
    r"\bos\.sched_getaffinity\b",
    r"\bsignal\.SIGKILL\b",
    r"\bsignal\.SIGHUP\b",
    r"\bctypes\.CDLL\(None",
    r"\bos\.replace\(",
]


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """Lines of code, without comments and docstring-only lines (prose may name them)."""
    out = []
    in_doc = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        quotes = stripped.count('"""')
        if in_doc:
            in_doc = quotes % 2 == 0
            continue
        if stripped.startswith('"""'):
            in_doc = quotes == 1
            continue
        out.append((number, line.split("#", 1)[0]))
    return out


def offenders(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == SEAM:
            continue
        for number, code in _code_lines(path):
            for pattern in POSIX_ONLY:
                if re.search(pattern, code):
                    found.append(f"{path.relative_to(root)}:{number}: {code.strip()}")
    return found


def test_no_os_specific_call_outside_the_seam() -> None:
    assert offenders(SRC) == []


def test_the_grep_finds_a_planted_call(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        '"""Docs may say os.fchmod."""\nimport os\n\nos.fchmod(3, 0o600)  # fine\n'
        "import fcntl\nx = 1  # fcntl.flock in a comment is fine\n"
    )
    assert offenders(tmp_path) == ["bad.py:4: os.fchmod(3, 0o600)", "bad.py:5: import fcntl"]


@pytest.mark.parametrize("pattern", POSIX_ONLY)
def test_each_pattern_is_valid(pattern: str) -> None:
    re.compile(pattern)


def test_only_the_seam_imports_its_parts() -> None:
    """`_platform_os`, `_platform_paths` and `_platform_launch` are parts of the seam:
    everything else imports `_platform`, which re-exports them."""
    parts = re.compile(r"\b_platform_(?:os|paths|launch)\b")
    importers = [
        path.name
        for path in sorted(SRC.rglob("*.py"))
        if not path.name.startswith("_platform")
        and any(parts.search(code) for _n, code in _code_lines(path))
    ]
    assert importers == []
    assert _platform.path_key is _platform_paths.path_key
    assert _platform.spawn_argv is _platform_launch.spawn_argv
    assert _platform.is_windows is _platform_os.is_windows


def test_the_parts_follow_a_simulated_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    assert _platform.is_windows()
    assert _platform.same_name("Proj", "proj")  # Windows' file names ignore case
    assert _platform.join("/home/dev", "x") == "\\home\\dev\\x"
    with pytest.raises(_platform.UnsafeLaunch):
        _platform.spawn_argv("C:\\npm\\tool.cmd", ["tool.cmd", "&calc&"])
    monkeypatch.setattr(sys, "platform", "darwin")
    assert _platform.is_macos() and not _platform.is_windows()
    assert _platform.path_key("/private/tmp/X") == "/tmp/x"


# -- the seam's decisions, with the platform simulated ----------------------------------


def test_peak_rss_is_kb_on_every_system(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    usage = types.SimpleNamespace(ru_maxrss=300 * 1024 * 1024)
    monkeypatch.setattr(resource, "getrusage", lambda who: usage)
    monkeypatch.setattr(sys, "platform", "linux")
    assert _platform.peak_rss_kb() == 300 * 1024 * 1024  # Linux reports KB already
    monkeypatch.setattr(sys, "platform", "darwin")
    assert _platform.peak_rss_kb() == 300 * 1024  # macOS reports bytes
    monkeypatch.setitem(sys.modules, "resource", None)  # Windows: no such module
    assert _platform.peak_rss_kb() == 0


def test_pread_fallback_keeps_the_descriptor_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    try:
        os.lseek(fd, 2, os.SEEK_SET)
        native = _platform.pread(fd, 3, 5)
        monkeypatch.delattr(os, "pread")
        assert _platform.pread(fd, 3, 5) == native == b"567"
        assert os.lseek(fd, 0, os.SEEK_CUR) == 2  # a reader of the fd is not disturbed
        assert os.read(fd, 2) == b"23"
    finally:
        os.close(fd)


def test_windows_modes_and_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from passdown._fsio import ensure_private_dir, write_private

    monkeypatch.setattr(sys, "platform", "win32")
    assert _platform.open_folder(tmp_path) is None  # os.open on a folder: EACCES there
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(OSError):
        _platform.open_folder(link)  # a reparse point is refused
    calls: list[int] = []
    monkeypatch.setattr(os, "fchmod", lambda fd, mode: calls.append(mode), raising=False)
    folder = ensure_private_dir(tmp_path / "out" / ".agent-handoff")
    write_private(folder / "HANDOFF.md", "→ done\r\n")
    assert calls == []  # the profile's ACL applies: no modes set
    assert (folder / "HANDOFF.md").read_bytes() == "→ done\r\n".encode()


def test_replace_retries_a_windows_sharing_violation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dst = tmp_path / "new", tmp_path / "old"
    src.write_text("new")
    dst.write_text("old")
    real = os.replace
    attempts: list[int] = []

    def busy(a: Path, b: Path) -> None:
        attempts.append(1)
        if len(attempts) < 3:
            error = PermissionError(13, "The process cannot access the file")
            error.winerror = 32  # type: ignore[attr-defined]
            raise error
        real(a, b)

    monkeypatch.setattr(os, "replace", busy)
    monkeypatch.setattr(sys, "platform", "win32")
    _platform.replace(src, dst)
    assert len(attempts) == 3 and dst.read_text() == "new"
    monkeypatch.setattr(sys, "platform", "linux")  # POSIX: no retry, the error stands
    attempts.clear()
    src.write_text("again")
    with pytest.raises(PermissionError):
        _platform.replace(src, dst)
    assert len(attempts) == 1


def test_exclusive_lock_excludes_another_descriptor(tmp_path: Path) -> None:
    import fcntl

    fd = _platform.lock_file_descriptor(tmp_path, lambda: pytest.fail("POSIX locks the folder"))
    other = os.open(tmp_path, os.O_RDONLY)
    try:
        with _platform.exclusive_lock(fd), pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released with the descriptor
    finally:
        os.close(other)


def test_on_windows_the_lock_file_goes_where_the_caller_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows cannot open a folder to lock it: the lock is a file named after the path,
    in the folder the caller passes (the seam knows no passdown folder of its own)."""
    monkeypatch.setattr(sys, "platform", "win32")
    locks = tmp_path / "locks"
    locks.mkdir()
    fd = _platform.lock_file_descriptor(tmp_path / "ws", lambda: locks)
    os.close(fd)
    (lock,) = locks.iterdir()
    assert lock.name.startswith("workspace-") and lock.name.endswith(".lock")
    fd = _platform.lock_file_descriptor(tmp_path / "WS", lambda: str(locks))
    os.close(fd)
    assert list(locks.iterdir()) == [lock]  # Windows paths ignore case: the same lock
