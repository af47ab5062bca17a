"""Private, atomic handoff output: modes, symlink attacks, failures mid-write, history,
and the git exclude line (in plain repos, linked worktrees and submodules)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from passdown import _fsio as fsio
from passdown._fsio import ensure_private_dir, write_private
from passdown._handoff_files import add_git_exclude, backup_existing
from passdown.errors import OutputError


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """umask 0: whatever we create is exactly the mode we ask for."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture(autouse=True)
def clean_git_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.invalid")


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hi\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "init")
    return path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# -- ensure_private_dir -------------------------------------------------------------------


def test_creates_folder_0700(tmp_path: Path, loose_umask: None) -> None:
    target = tmp_path / "a" / "b" / ".agent-handoff"
    assert ensure_private_dir(target) == target
    assert target.is_dir()
    assert mode(target) == 0o700


def test_tightens_existing_folder(tmp_path: Path) -> None:
    target = tmp_path / ".agent-handoff"
    target.mkdir()
    target.chmod(0o777)
    ensure_private_dir(target)
    assert mode(target) == 0o700


def test_refuses_symlinked_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    elsewhere.chmod(0o755)
    link = tmp_path / ".agent-handoff"
    link.symlink_to(elsewhere)
    with pytest.raises(OutputError, match="it is a symlink"):
        ensure_private_dir(link)
    assert mode(elsewhere) == 0o755  # the target was not touched


def test_refuses_dangling_symlink(tmp_path: Path) -> None:
    link = tmp_path / ".agent-handoff"
    link.symlink_to(tmp_path / "not-yet")
    with pytest.raises(OutputError, match="symlink"):
        ensure_private_dir(link)
    assert not (tmp_path / "not-yet").exists()


def test_refuses_a_file(tmp_path: Path) -> None:
    target = tmp_path / ".agent-handoff"
    target.write_text("x")
    with pytest.raises(OutputError, match="not a folder"):
        ensure_private_dir(target)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_refuses_folder_of_another_user(tmp_path: Path) -> None:
    target = tmp_path / ".agent-handoff"
    target.mkdir(mode=0o755)
    os.chown(target, 65534, 65534)
    with pytest.raises(OutputError, match="belongs to another user"):
        ensure_private_dir(target)


def test_unwritable_parent_is_output_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path: object, mode: int = 0o777) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(fsio.os, "mkdir", denied)
    with pytest.raises(OutputError) as info:
        ensure_private_dir(tmp_path / "new")
    assert "Permission denied" in info.value.message
    assert info.value.hint and "permissions" in info.value.hint


# -- write_private ------------------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077, 0o277])
def test_writes_0600_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        write_private(tmp_path / "HANDOFF.md", "# Handoff\n")
    finally:
        os.umask(old)
    assert mode(tmp_path / "HANDOFF.md") == 0o600
    assert (tmp_path / "HANDOFF.md").read_text() == "# Handoff\n"


def test_replaces_existing_file_and_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "handoff.json"
    target.write_text("old")
    target.chmod(0o644)
    write_private(target, b'{"new": true}')
    assert target.read_bytes() == b'{"new": true}'
    assert mode(target) == 0o600
    assert leftovers(tmp_path) == []


def test_str_is_utf8_and_survives_lone_surrogates(tmp_path: Path) -> None:
    target = tmp_path / "HANDOFF.md"
    write_private(target, "naïve 文件 \ud800 end")
    assert target.read_text(encoding="utf-8") == "naïve 文件 ? end"


def test_large_content(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024)
    write_private(tmp_path / "big", data)
    assert (tmp_path / "big").read_bytes() == data


def test_symlink_at_destination_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    victim.chmod(0o644)
    target = tmp_path / "HANDOFF.md"
    target.symlink_to(victim)
    write_private(target, "handoff")
    assert victim.read_text() == "precious"
    assert mode(victim) == 0o644
    assert not target.is_symlink()
    assert target.read_text() == "handoff"
    assert mode(target) == 0o600


def test_dangling_symlink_at_destination_creates_nothing_elsewhere(tmp_path: Path) -> None:
    planted = tmp_path / "planted-target"
    target = tmp_path / "handoff.json"
    target.symlink_to(planted)
    write_private(target, "{}")
    assert not planted.exists()
    assert target.read_text() == "{}" and not target.is_symlink()


def test_failure_mid_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "HANDOFF.md"
    target.write_text("old handoff")
    real_write = os.write

    def write_half_then_fail(fd: int, data: bytes) -> int:
        if len(data) > 10:
            return real_write(fd, bytes(data[:10]))  # a short write, then the disk fills
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsio.os, "write", write_half_then_fail)
    with pytest.raises(OutputError) as info:
        write_private(target, "new handoff that is longer than ten bytes")
    assert "No space left on device" in info.value.message
    assert info.value.hint and "disk is full" in info.value.hint
    assert target.read_text() == "old handoff"
    assert leftovers(tmp_path) == []


def test_failure_at_fsync_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "HANDOFF.md"
    target.write_text("old handoff")

    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(fsio.os, "fsync", broken_fsync)
    with pytest.raises(OutputError, match="Input/output error"):
        write_private(target, "new")
    assert target.read_text() == "old handoff"
    assert leftovers(tmp_path) == []


def test_failure_at_rename_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "HANDOFF.md"
    target.write_text("old handoff")

    def read_only(src: object, dst: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(fsio.os, "replace", read_only)
    with pytest.raises(OutputError) as info:
        write_private(target, "new")
    assert info.value.hint and "read-only" in info.value.hint
    assert target.read_text() == "old handoff"
    assert leftovers(tmp_path) == []


def test_interrupt_mid_write_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(fd: int, data: bytes) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(fsio.os, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_private(tmp_path / "HANDOFF.md", "new")
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_is_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="No such file or directory"):
        write_private(tmp_path / "missing" / "HANDOFF.md", "x")


def test_folder_at_destination_is_output_error(tmp_path: Path) -> None:
    (tmp_path / "HANDOFF.md").mkdir()
    with pytest.raises(OutputError, match=r"cannot write .*HANDOFF\.md"):
        write_private(tmp_path / "HANDOFF.md", "x")
    assert leftovers(tmp_path) == []


def test_permission_denied_is_output_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def denied(path: object, flags: int, mode: int = 0o777, **kw: object) -> int:
        if str(path).endswith(".tmp"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, mode, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(fsio.os, "open", denied)
    with pytest.raises(OutputError, match="Permission denied"):
        write_private(tmp_path / "HANDOFF.md", "x")


# -- backup_existing -------------------------------------------------------------------------


def test_backup_of_nothing(tmp_path: Path) -> None:
    assert backup_existing(tmp_path / "HANDOFF.md") is None
    assert not (tmp_path / "history").exists()


def test_backup_keeps_the_previous_handoff(tmp_path: Path) -> None:
    folder = ensure_private_dir(tmp_path / ".agent-handoff")
    target = folder / "HANDOFF.md"
    write_private(target, "first")
    os.utime(target, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    copy = backup_existing(target)
    assert copy == folder / "history" / "20231114T221320.123456Z-HANDOFF.md"
    assert copy.read_text() == "first"
    assert mode(copy) == 0o600
    assert mode(folder / "history") == 0o700
    write_private(target, "second")
    assert target.read_text() == "second"
    assert copy.read_text() == "first"


def test_backup_skips_unchanged_content(tmp_path: Path) -> None:
    target = tmp_path / "HANDOFF.md"
    write_private(target, "same")
    assert backup_existing(target) is not None
    os.utime(target, (1_800_000_000, 1_800_000_000))
    assert backup_existing(target) is None
    assert len(list((tmp_path / "history").iterdir())) == 1


def test_backup_same_timestamp_does_not_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "handoff.json"
    copies = []
    for text in ("one", "two", "three"):
        write_private(target, text)
        os.utime(target, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
        copies.append(backup_existing(target))
    assert len(set(copies)) == 3
    assert [c.read_text() for c in copies if c] == ["one", "two", "three"]


def test_backup_history_is_bounded(tmp_path: Path) -> None:
    target = tmp_path / "HANDOFF.md"
    other = tmp_path / "history" / "notes.txt"
    for i in range(6):
        write_private(target, f"version {i}")
        os.utime(target, (1_700_000_000 + i, 1_700_000_000 + i))
        backup_existing(target, keep=3)
        if i == 0:
            other.write_text("not ours")
    kept = sorted(p.read_text() for p in (tmp_path / "history").glob("*-HANDOFF.md"))
    assert kept == ["version 3", "version 4", "version 5"]
    assert other.read_text() == "not ours"


def test_backup_separates_file_names(tmp_path: Path) -> None:
    for name in ("HANDOFF.md", "handoff.json"):
        write_private(tmp_path / name, name)
        backup_existing(tmp_path / name, keep=1)
    names = sorted(p.name.split("-", 1)[1] for p in (tmp_path / "history").iterdir())
    assert names == ["HANDOFF.md", "handoff.json"]


def test_backup_does_not_follow_a_symlink(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not copy me")
    (tmp_path / "HANDOFF.md").symlink_to(secret)
    assert backup_existing(tmp_path / "HANDOFF.md") is None
    assert not (tmp_path / "history").exists()


def test_backup_into_symlinked_history_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "history").symlink_to(elsewhere)
    write_private(tmp_path / "HANDOFF.md", "x")
    with pytest.raises(OutputError, match="symlink"):
        backup_existing(tmp_path / "HANDOFF.md")
    assert list(elsewhere.iterdir()) == []


# -- add_git_exclude ---------------------------------------------------------------------------


def is_ignored(repo: Path, path: str) -> bool:
    result = subprocess.run(["git", "-C", str(repo), "check-ignore", "-q", "--", path], check=False)
    return result.returncode == 0


def test_exclude_added_once(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    assert add_git_exclude(repo, ".agent-handoff/") is True
    assert add_git_exclude(repo, ".agent-handoff/") is False
    lines = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert lines.count(".agent-handoff/") == 1
    (repo / ".agent-handoff").mkdir()
    (repo / ".agent-handoff" / "HANDOFF.md").write_text("x")
    assert is_ignored(repo, ".agent-handoff/HANDOFF.md")
    assert git(repo, "status", "--porcelain") == ""


def test_exclude_keeps_existing_lines(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text("# mine\n*.log")  # no final newline
    assert add_git_exclude(repo, ".agent-handoff/")
    assert exclude.read_text() == "# mine\n*.log\n.agent-handoff/\n"


def test_exclude_creates_missing_info_folder(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    exclude = repo / ".git" / "info" / "exclude"
    exclude.unlink()
    exclude.parent.rmdir()
    assert add_git_exclude(repo, ".agent-handoff/")
    assert exclude.read_text() == ".agent-handoff/\n"


def test_exclude_from_a_subfolder(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    assert add_git_exclude(repo / "sub", ".agent-handoff/")
    assert ".agent-handoff/" in (repo / ".git" / "info" / "exclude").read_text()


def test_exclude_in_linked_worktree(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tree))
    assert (tree / ".git").is_file()
    assert add_git_exclude(tree, ".agent-handoff/")
    (tree / ".agent-handoff").mkdir()
    (tree / ".agent-handoff" / "x").write_text("x")
    assert is_ignored(tree, ".agent-handoff/x")
    assert add_git_exclude(tree, ".agent-handoff/") is False


def test_exclude_in_submodule(tmp_path: Path) -> None:
    lib = init_repo(tmp_path / "lib")
    app = init_repo(tmp_path / "app")
    # local file transport only; nothing leaves the machine
    git(app, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    sub = app / "lib"
    assert (sub / ".git").is_file()
    assert add_git_exclude(sub, ".agent-handoff/")
    (sub / ".agent-handoff").mkdir()
    (sub / ".agent-handoff" / "x").write_text("x")
    assert is_ignored(sub, ".agent-handoff/x")
    assert ".agent-handoff/" not in (app / ".git" / "info" / "exclude").read_text()


def test_exclude_outside_git(tmp_path: Path) -> None:
    assert add_git_exclude(tmp_path, ".agent-handoff/") is False
    assert list(tmp_path.iterdir()) == []


def test_exclude_without_git_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert add_git_exclude(repo, ".agent-handoff/") is False


def test_exclude_rejects_multi_line_pattern(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        add_git_exclude(tmp_path, ".agent-handoff/\n!important")


def test_fsio_does_not_import_pydantic() -> None:
    code = "import sys, passdown._fsio; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
