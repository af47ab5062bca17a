"""Workspace paths compared as paths, whatever system wrote them (`_platform`
re-exports these: import them from there).

Windows paths (drive letters, case, `\\` and `/`, UNC, `\\\\?\\`) get Windows semantics
on any system (a session recorded there, read here); on macOS `/private/tmp` = `/tmp`,
`/private/var` = `/var`, and its default volumes ignore case.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import PurePosixPath, PureWindowsPath

from passdown import _platform_os

_DRIVE = re.compile(r"^[A-Za-z]:([\\/]|$)")
_MACOS_ALIASES = (("/private/tmp", "/tmp"), ("/private/var", "/var"), ("/private/etc", "/etc"))


def is_windows_path(text: str) -> bool:
    """A drive-letter path, a UNC path or a `\\\\?\\` path: read with Windows semantics
    whatever system passdown runs on (a session recorded there, read here)."""
    return bool(_DRIVE.match(text)) or text.startswith(("\\\\", "//?/"))


def _normal(text: str) -> tuple[str, bool]:
    """(`text` normalised with `/` separators, whether its file system ignores case)."""
    return _normal_on(text, _platform_os.is_windows(), _platform_os.is_macos())


# a session names the same few folders and files over and over
@functools.lru_cache(maxsize=4096)
def _normal_on(text: str, windows: bool, macos: bool) -> tuple[str, bool]:
    if is_windows_path(text) or windows:
        if text.startswith(("\\\\?\\UNC\\", "//?/UNC/")):
            text = "\\\\" + text[8:]
        elif text.startswith(("\\\\?\\", "//?/")):
            text = text[4:]
        return PureWindowsPath(text).as_posix().rstrip("/") or "/", True
    posix = str(PurePosixPath(os.path.normpath(text))) if text else text
    if not macos:
        return posix, False
    for alias, short in _MACOS_ALIASES:
        if posix == alias or posix.startswith(alias + "/"):
            posix = short + posix[len(alias) :]
    return posix, True


def path_key(text: str) -> str:
    """A comparable form of an absolute path: Windows paths with `/`, lowercased, no
    `\\\\?\\` prefix, no trailing separator; POSIX paths normalised, macOS's `/private`
    aliases folded (and lowercased on macOS, whose default volumes ignore case)."""
    normal, fold = _normal(text)
    return normal.lower() if fold else normal


def relative_inside(path: str, root: str) -> str | None:
    """`path` relative to `root` (`/` separators, "" for the root itself) when it is the
    root or below it, compared as paths (`path_key`); else None. The relative part keeps
    the case `path` was written in."""
    normal, fold = _normal(path)
    base, fold_root = _normal(root)
    if fold or fold_root:
        normal_cmp, base_cmp = normal.lower(), base.lower()
    else:
        normal_cmp, base_cmp = normal, base
    if normal_cmp == base_cmp:
        return ""
    prefix = base_cmp if base_cmp.endswith("/") else base_cmp + "/"
    if not normal_cmp.startswith(prefix):
        return None
    return normal[len(prefix) :]


def join(base: str, path: str) -> str:
    """`path` (absolute, or relative to `base`) as one normalised path, joined with the
    rules of the system that wrote `base` (a Windows cwd read on Linux too)."""
    if is_windows_path(base) or is_windows_path(path) or _platform_os.is_windows():
        return str(PureWindowsPath(base, path))
    return os.path.normpath(os.path.join(base, path))


def case_insensitive_fs() -> bool:
    """Whether this machine's file names ignore case (Windows; macOS's default APFS)."""
    return _platform_os.is_windows() or _platform_os.is_macos()


def path_spellings(path: str) -> list[str]:
    """`path` and, on macOS, its other spelling through the `/private` symlinks
    (`/private/tmp/x` and `/tmp/x`): agents record whichever their process saw."""
    spellings = [path]
    if _platform_os.is_macos():
        for alias, short in _MACOS_ALIASES:
            if path == alias or path.startswith(alias + "/"):
                spellings.append(short + path[len(alias) :])
            elif path == short or path.startswith(short + "/"):
                spellings.append(alias + path[len(short) :])
    return spellings


def same_name(a: str, b: str) -> bool:
    """Folder names compared as this machine's file system does."""
    return a.lower() == b.lower() if case_insensitive_fs() else a == b


def inside(path: str, root: str) -> bool:
    """Whether `path` is `root` or below it, compared as paths."""
    return relative_inside(path, root) is not None
