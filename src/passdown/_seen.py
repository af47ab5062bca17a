"""What went by on the way to extraction: how many events, and the distinct command lines
that could have changed a file (git's changes are attributed to this session's commands).
Kept apart from the pipeline so a checkpoint keeps them the same way."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import msgspec

from passdown._memo import for_short_strings
from passdown.transcript import Event, ToolCall

# Commands kept for attributing git's changes: the most recently used distinct ones that
# could write a file, within these bounds (a session of thousands of `rg`, `cat` and
# `git diff` lines kept every one of them before).
MAX_KEPT_COMMANDS = 2000
MAX_KEPT_COMMAND_CHARS = 2_000_000


class SeenEvents(msgspec.Struct):
    """Counts the events on their way to extraction and keeps the distinct command lines
    that could have changed a file (the handoff keeps only the recent commands; the
    attribution of git's changes needs every one that could explain a change, and none
    of those that only read: `ls`, `cat`, `rg`, `sed -n`, `git diff`...)."""

    count: int = 0
    _kept: dict[str, None] = msgspec.field(default_factory=dict)  # insertion order = last use
    _chars: int = 0

    @property
    def commands(self) -> list[str]:
        return list(self._kept)

    @commands.setter
    def commands(self, commands: Iterable[str]) -> None:
        """Restored from a checkpoint: kept as if seen again, in their order."""
        self._kept.clear()
        self._chars = 0
        self.keep_commands(commands)

    def keep_commands(self, commands: Iterable[str]) -> None:
        """Commands seen elsewhere, after those seen here."""
        for command in commands:
            self.keep(command)

    def watch(self, events: Iterator[Event]) -> Iterator[Event]:
        for event in events:
            self.count += 1
            if isinstance(event, ToolCall) and event.command:  # a sub-agent's too: same session
                self.keep(event.command)
            yield event

    def keep(self, command: str) -> None:
        """A command seen (the most recent now), kept when it could write a file."""
        if command in self._kept:
            del self._kept[command]  # used again: the most recent now
        elif could_write_files(command):
            self._chars += len(command)
        else:
            return
        self._kept[command] = None
        while len(self._kept) > 1 and (
            len(self._kept) > MAX_KEPT_COMMANDS or self._chars > MAX_KEPT_COMMAND_CHARS
        ):
            oldest = next(iter(self._kept))
            del self._kept[oldest]
            self._chars -= len(oldest)


# Programs that never write a file of the workspace by themselves (their output can still
# be redirected into one: see `could_write_files`). Anything else might.
_READ_ONLY_PROGRAMS = frozenset(
    {
        "ls", "ll", "la", "cat", "bat", "head", "tail", "less", "more", "grep", "egrep",
        "fgrep", "rg", "ag", "ack", "wc", "pwd", "echo", "printf", "which", "type", "file",
        "stat", "du", "df", "tree", "nl", "diff", "cmp", "uniq", "cut", "tr", "jq", "yq",
        "basename", "dirname", "realpath", "readlink", "date", "whoami", "id", "uname",
        "true", "false", "test", "[", "sleep", "ps", "cd", "pushd", "popd", "column", "fold",
        "od", "hexdump", "xxd", "md5sum", "sha1sum", "sha256sum", "sha512sum", "strings",
        "fd", "exa", "eza", "lsof", "hostname", "history", "man", "help",
    }
)  # fmt: skip
_READ_ONLY_GIT = frozenset(
    {
        "status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "grep", "blame",
        "describe", "shortlog", "reflog", "cat-file", "show-ref", "rev-list", "merge-base",
        "for-each-ref", "count-objects",
    }
)  # fmt: skip
_GIT_OPTIONS_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_FIND_WRITES = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprintf"})
_SEGMENTS = re.compile(r"\|\||&&|[|;&\n]")
_HARMLESS_REDIRECTS = re.compile(r"\d?>&\d|&?\d?>{1,2}\s*/dev/null")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


# sessions run the same commands again and again
@for_short_strings(maxsize=1024, longest=4096)
def could_write_files(command: str) -> bool:
    """False only for a command line every part of which only reads (a known read-only
    program, `git status`-like subcommands, `sed` without `-i`, `find` without `-delete`
    or `-exec`) and that redirects no output into a file. Subshells, `xargs`, scripts and
    interpreters could write anything, so they count."""
    if "$(" in command or "`" in command or "<(" in command or ">(" in command:
        return True
    rest = _HARMLESS_REDIRECTS.sub(" ", command)  # `2>&1`, `>/dev/null`
    if ">" in rest:
        return True  # output redirected into a file (`> out`, `>> log`, `cat <<EOF > f`)
    return not all(_reads_only(part.split()) for part in _SEGMENTS.split(rest))


def _reads_only(words: list[str]) -> bool:
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in ("(", "{", "!")):
        words = words[1:]  # `LC_ALL=C grep ...`, a group
    if not words:
        return True
    program, args = words[0].lstrip("({").rsplit("/", 1)[-1], words[1:]
    if program == "git":
        return _git_subcommand(args) in _READ_ONLY_GIT and not any(
            a.startswith("--output") for a in args
        )
    if program == "sed":
        return not any(a.startswith(("-i", "--in-place")) for a in args)
    if program == "find":
        return not _FIND_WRITES.intersection(args)
    return program in _READ_ONLY_PROGRAMS


def _git_subcommand(args: list[str]) -> str:
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _GIT_OPTIONS_WITH_VALUE:
            skip = True  # `git -C repo log`: `repo` is no subcommand
        elif not arg.startswith("-"):
            return arg
    return ""
