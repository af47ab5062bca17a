"""Crash recovery for exports: a write-ahead journal of what an export is about to change.

An export publishes (stores records, moves pointers by compare-and-swap) and then
renames its staged files into place. A process killed in between (SIGKILL, the machine
going down) would leave the store naming a handoff whose files were never, or half,
written. So before each change the export appends its intent to a journal in the data
folder (`journal/`, a 0600 file in a 0700 folder, one JSON line per intent, synced to
disk before the change is made; a line cut short by the kill is an intent never acted on):

- a header: the store and scope, and the files the export will place (each destination,
  the hidden name its previous file is kept under meanwhile, a hard link, and the
  identity of the staged file that replaces it: device, inode, size, mtime), the folders
  it creates and the files it removes once all are in;
- each record it creates (one that did not exist), and each pointer change (name,
  before, after, when `before` was set) with the status records that go with it.

handoff.json is placed last (`FileBatch.place_last`), so "the last destination holds the
staged file" proves the commit finished. A finished export removes its journal.

A journal whose process is gone (`Owner.alive`) is recovered before that store is used
again (`recover_interrupted`: when passdown opens the store, and before every export):

- not committed: its intents are taken back, newest first. A pointer is swapped from
  `after` back to `before` (an intent that never happened finds another value and
  changes nothing), with the stamp it had; its status records are deleted once it holds
  `before`; a created record is deleted. Each placed file (the destination holds the
  staged inode) is replaced by its kept previous file, or removed when there was none;
  the folders the commit created are removed when empty. The checkpoint is written
  after the commit, so it was never moved on. Store, active pointer, files and
  checkpoint are as before the export.
- committed: the commit's leftovers (kept links, pruned history copies) are removed.

A journal is claimed by renaming it to the recovering process's name: two processes
never recover the same one, and one whose recoverer died is recovered again (each step
can run twice). A live exporter's journal (this host, its pid alive with the same start
time, or in flight in this process) is never touched, nor one written on another host.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passdown import _platform
from passdown.errors import OutputError, PassdownError, RecordNotFound

JOURNAL_DIR = "journal"  # under the data folder
SUFFIX = ".wal"
CRASH_ENV = "PASSDOWN_TEST_CRASH_AT"
# The only place the test hook is read: a named step at which the export SIGKILLs
# itself, for the crash-recovery tests. Unset (always, outside tests), it does nothing.
_CRASH_AT = os.environ.get(CRASH_ENV) or None
_IN_FLIGHT: set[str] = set()  # journals of this process's exports that are still running


def crash_point(step: str) -> None:
    """Test hook: die here, as a power cut would, when `PASSDOWN_TEST_CRASH_AT=step`."""
    if step == _CRASH_AT:
        _platform.kill_hard(os.getpid())


# -- who wrote a journal -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Owner:
    """A process, as a journal's name records it: host, pid and start time (so a pid
    the system reused for another process is not taken for the exporter)."""

    host: str
    pid: int
    start: str  # "0" where the start time cannot be read

    @classmethod
    def me(cls) -> Owner:
        pid = os.getpid()  # asked each time: a forked child is another owner
        if pid not in _ME:
            _ME[pid] = cls(_host(), pid, _platform.process_start(pid) or "0")
        return _ME[pid]

    @classmethod
    def parse(cls, name: str) -> Owner | None:
        parts = name.removesuffix(SUFFIX).split(".")
        if len(parts) != 4 or not parts[1].isdigit():
            return None
        return cls(parts[0], int(parts[1]), parts[2])

    def file_name(self, nonce: str) -> str:
        return f"{self.host}.{self.pid}.{self.start}.{nonce}{SUFFIX}"

    def alive(self) -> bool:
        """Whether the process may still be exporting. This process counts as gone: its
        journals that are not in flight belong to exports that ended (`abandon`)."""
        if self.host != _host():
            return True  # another machine's export (a shared data folder): never ours to judge
        if self == Owner.me():
            return False
        if _platform.has_process_table():
            started = _platform.process_start(self.pid)
            return started is not None and self.start in ("0", started)
        return _platform.process_exists(self.pid)


_ME: dict[int, Owner] = {}


@functools.cache
def _host() -> str:
    uname = getattr(os, "uname", None)
    if uname is not None:
        node = uname().nodename
    else:  # pragma: no cover - Windows
        import socket

        node = socket.gethostname()
    return hashlib.sha256(node.encode()).hexdigest()[:12]


# -- writing a journal -------------------------------------------------------------------------


def store_identity(store: Any) -> str | None:
    """The store a journal's changes were made in, the same in every process: a SQLite
    file's real path, another store's (password-free) URL. None for a store that dies
    with its process (SQLite in memory): there is nothing to take back in it later."""
    path = getattr(store, "path", None)
    if isinstance(path, str):
        return None if path == ":memory:" else "sqlite:" + os.path.realpath(path)
    return str(getattr(store, "url", type(store).__name__))


class WriteAhead:
    """One export's journal file: created with its first intent, removed when the
    export is done (finished, or failed and taken back in-process)."""

    def __init__(self, header: dict[str, Any]) -> None:
        self._header: dict[str, Any] | None = {"kind": "header", "version": 1, **header}
        self._fd = -1
        self.path: Path | None = None

    def note(self, *entries: dict[str, Any]) -> None:
        """Append `entries` (and the header, first) and sync them to disk, before the
        changes they announce are made: one sync, however many. Raises `OutputError`."""
        lines = [self._header, *entries] if self._header is not None else list(entries)
        if not lines:
            return
        data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
        from passdown import _fsio as fsio

        try:
            if self._fd < 0:
                self._open()
            fsio._write_all(self._fd, data.encode("utf-8", "surrogatepass"))
            os.fsync(self._fd)
        except OSError as exc:
            if self.path is not None and self._fd < 0:
                _IN_FLIGHT.discard(str(self.path))
            raise OutputError(
                f"cannot write the export's journal {self.path}: {exc.strerror or exc}",
                hint="the data folder must be writable (PASSDOWN_DATA_DIR); nothing was changed",
            ) from exc
        self._header = None

    def _open(self) -> None:
        from passdown import _fsio as fsio
        from passdown._paths import private_data_dir

        folder = private_data_dir(JOURNAL_DIR)
        self.path = folder / Owner.me().file_name(os.urandom(6).hex())
        _IN_FLIGHT.add(str(self.path))  # before it exists: another thread must not take it
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | fsio._NOFOLLOW
        self._fd = os.open(self.path, flags | fsio._CLOEXEC, fsio.FILE_MODE)
        fsio._fsync_dir(folder)  # the journal's name must outlive a crash too

    def finish(self) -> None:
        """The export is done (or taken back): the journal goes."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            _IN_FLIGHT.discard(str(self.path))
            self.path = None
        self._header = None

    def abandon(self) -> None:
        """Stop writing but keep the journal: what it announces could not be taken back
        here, so the next process that opens the store does it."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        if self.path is not None:
            _IN_FLIGHT.discard(str(self.path))


# -- taking back ------------------------------------------------------------------------------


def undo_store(store: Any, scope: Any, entries: list[dict[str, Any]]) -> None:
    """Take back the store changes `entries` announce, newest first. Each pointer by
    compare-and-swap from its `after` (a change that never happened, or that another
    writer has moved on from, is left alone), with its old stamp; its status records
    once it holds `before` again. Raises `StoreError`."""
    for entry in reversed(entries):
        if entry.get("kind") == "record":
            _delete(store, scope, str(entry["id"]))
        elif entry.get("kind") == "pointer":
            name, before = str(entry["name"]), entry.get("before")
            store.restore_pointer(scope, name, entry.get("after"), before, entry.get("stamp"))
            if store.get_pointer(scope, name) == before:
                for record_id in entry.get("records") or []:
                    _delete(store, scope, str(record_id))


def _delete(store: Any, scope: Any, record_id: str) -> None:
    with contextlib.suppress(RecordNotFound):
        store.delete(scope, record_id)


def _identity(path: str) -> list[int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def committed(files: dict[str, Any]) -> bool:
    """The last destination holds its staged file: every file was placed."""
    placed = files.get("place") or []
    return bool(placed) and _identity(placed[-1]["path"]) == placed[-1]["staged"]


def restore_files(files: dict[str, Any]) -> None:
    """Put back every file the commit placed: the kept previous file, or nothing where
    there was none; remove the folders it created, when empty; drop the kept links."""
    for item in reversed(files.get("place") or []):
        path, aside = item["path"], item.get("aside")
        if _identity(path) == item["staged"]:
            if aside and os.path.isfile(aside):
                with contextlib.suppress(OSError):
                    _platform.replace(aside, path)
            else:
                _unlink(path)
        if aside:
            _unlink(aside)
    for folder in reversed(files.get("folders") or []):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def finish_files(files: dict[str, Any]) -> None:
    """What a commit does after its last rename: drop the kept links, remove the files
    it meant to remove (pruned history copies)."""
    for item in files.get("place") or []:
        if item.get("aside"):
            _unlink(item["aside"])
    for path in files.get("remove") or []:
        _unlink(path)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


# -- recovery ---------------------------------------------------------------------------------


def journal_folder() -> Path:
    from passdown._paths import data_dir

    return data_dir() / JOURNAL_DIR


def pending() -> bool:
    """Whether an interrupted export's journal is there (cheap: one listdir, and a look
    at its process): the session-start pickup opens the store itself only then."""
    folder = journal_folder()
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    for name in names:
        owner = Owner.parse(name) if name.endswith(SUFFIX) else None
        if owner is not None and str(folder / name) not in _IN_FLIGHT and not owner.alive():
            return True
    return False


def writing() -> bool:
    """Whether any export's journal is there, live or interrupted (one listdir): an
    export in flight, or one that is still to be (or being) taken back."""
    try:
        return any(name.endswith(SUFFIX) for name in os.listdir(journal_folder()))
    except OSError:
        return False


def recover_interrupted(store: Any | None) -> list[str]:
    """Take back (or finish) every export of `store` (None: exports that wrote no store,
    only files) that was interrupted: its journal is there, its process is gone. Never
    raises: a journal that cannot be recovered now is kept for the next try, and said.
    Returns one line per journal recovered, for the caller to show."""
    folder = journal_folder()
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(SUFFIX))
    except OSError:
        return []
    identity = store_identity(store) if store is not None else None
    done: list[str] = []
    for name in names:
        path = folder / name
        owner = Owner.parse(name)
        if str(path) in _IN_FLIGHT or owner is None or owner.alive():
            continue
        entries = _read(path)
        header = entries[0] if entries and entries[0].get("kind") == "header" else None
        if header is not None and header.get("store") not in (None, identity):
            continue  # another store's: recovered where that store is opened
        try:
            done.append(_recover(path, header, entries[1:], store))
        except (PassdownError, OSError) as exc:
            done.append(f"could not take back the interrupted export {name} yet: {exc}")
    return done


def recover_and_say(store: Any | None) -> None:
    """`recover_interrupted`, each line said on stderr (nothing is repaired silently)."""
    import sys

    for line in recover_interrupted(store):
        print(f"passdown: {line}", file=sys.stderr)


def _read(path: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    try:
        with open(path, "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            break  # cut short by the kill: never acted on
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def _recover(
    path: Path, header: dict[str, Any] | None, entries: list[dict[str, Any]], store: Any
) -> str:
    claimed = path.with_name(Owner.me().file_name(os.urandom(6).hex()))
    try:
        os.rename(path, claimed)  # claim it: whoever renames first recovers it
    except FileNotFoundError:
        return f"interrupted export {path.name}: recovered by another process"
    if header is None:  # killed while writing its first line: it changed nothing
        _unlink(str(claimed))
        return f"removed the empty journal of an interrupted export ({path.name})"
    files = header.get("files") or {}
    what = f"handoff {header.get('handoff') or '?'}"
    if committed(files):
        finish_files(files)
        _unlink(str(claimed))
        return f"finished the interrupted export of {what}: its files were all in place"
    if header.get("store") is not None and entries:
        undo_store(store, header.get("scope"), entries)
    restore_files(files)
    _unlink(str(claimed))
    return f"took back the interrupted export of {what}: the store and files are as before it"
